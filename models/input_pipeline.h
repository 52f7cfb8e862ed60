// An experiment's input pipelines as graph nodes (whitepaper §4.5-4.6):
// file-name queue -> reader -> decode -> (shuffle) queue -> batch, built with
// the inputs/ builders. The batch tensors become the model's features
// ("image" [batch, H, W, C] float, "label" [batch] int64 for IDX sources;
// "tokens" and "targets" [batch, seq_len] int64 for text sources, targets
// being tokens shifted by one; the configured features for TFRecord sources).
// Thread safety: one builder per graph.
#ifndef SLUICE_MODELS_INPUT_PIPELINE_H_
#define SLUICE_MODELS_INPUT_PIPELINE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "configs/experiment.pb.h"
#include "engine/framework/graph.pb.h"
#include "engine/framework/shape_inference.h"
#include "inputs/file_order.h"
#include "inputs/queue_runner.h"
#include "inputs/text.h"

namespace sluice {
namespace models {

struct PipelineFeature {
  std::string tensor;   // name of the batched tensor in the GraphDef
  DataType dtype = DT_FLOAT;
  PartialShape shape;   // [batch, ...] with the batch dim unknown
  // Integer ids known to lie in [0, id_limit) (a text input's word ids: the
  // vocabulary's size); 0 when unknown.
  int64_t id_limit = 0;
};

// A reader whose position a checkpoint restores: feed a serialized
// ReaderState (inputs/reader_state.proto) to `state_feed` and run `restore_op`
// before the queue runners start.
struct RestorableReader {
  std::string reader_type;   // "IdxRecordReader", "TextWindowReader", ...
  std::string file;          // the one file (work unit) it reads, once per epoch
  std::string state_feed;    // string scalar placeholder
  std::string restore_op;    // ReaderRestoreState
};

// A TFRecord or CSV training source, whose position a resumed run restores
// (models/training/input_hook.cc): it finds example k's epoch, file and
// record from the files' record counts and each epoch's file order
// (inputs/file_order.h), opens the reader at that record with the rest of
// that epoch's files pending, and sets the producer's epoch counter to the
// epochs begun, before the queue runners start.
struct RestorableFileSource {
  std::vector<std::string> files;  // this shard's, in the producer's list order
  RecordFormat format;
  bool shuffle = false;            // epoch e's order: SeededPermutation(seed, e)
  // The reader reads each file's records in a seeded permutation (deterministic
  // mode): its position is the index in it, not a byte offset.
  bool reader_shuffle = false;
  int64_t seed = 1;
  int64_t num_epochs = 0;          // 0: forever
  RestorableReader reader;         // its `file` is unused
  std::string epochs_feed;         // int64 scalar placeholder
  std::string set_epochs_op;       // assigns it to the producer's epoch counter
};

struct InputPipeline {
  std::map<std::string, PipelineFeature> features;
  // Readers that advance one record per example, in lockstep; restoring them
  // to the number of examples consumed resumes the input where it stopped.
  std::vector<RestorableReader> readers;
  // Or a TFRecord or CSV source, restored by file and record.
  std::optional<RestorableFileSource> file_source;
  // A TFRecord or CSV source's files of every shard (its patterns' matches),
  // which the chief's record of the training files lists (input_files.h);
  // file_source->files holds this shard's only.
  std::vector<std::string> all_files;
  // True when the examples' order is a function of (seed, examples consumed)
  // alone: deterministic mode (reader-level shuffle, FIFO batching), or a
  // TFRecord or CSV source without a shuffle queue, read by one thread.
  bool exact_order = false;
  std::vector<QueueRunnerDef> runners;
  std::vector<std::string> init_ops;
  // With PipelineOptions::stage_batches: the target that stages the next
  // batch (the features read the batch staged before). "" otherwise.
  std::string stage_op;
  std::string queue_size;     // scalar int32 tensor: elements in the batch queue
  int64_t queue_capacity = 0;
  int64_t queue_bytes_per_example = 0;  // one element of the batch queue, for the memory estimate
  int64_t examples_per_epoch = 0;  // 0: unknown (this shard's, when sharded)
  std::string description;         // one line for the plan
  // Text sources: the words in id order (inputs/text.h; "<unk>" and "<eos>"
  // included), so vocabulary.size() is the number of ids.
  std::vector<std::string> vocabulary;
  // The readers' positions count every record of the file; this pipeline
  // reads every num_shards-th (PipelineOptions), so example k of its shard
  // lies at about position k * num_shards.
  int num_shards = 1;
};

struct PipelineOptions {
  std::string scope;       // "input/train", "input/eval"
  int64_t seed = 1;
  bool training = true;    // shuffling, and reader threads
  // Deterministic mode: shuffle by a seeded permutation of each epoch in the
  // reader instead of a RandomShuffleQueue (whose order depends on timing),
  // and batch through a FIFO queue.
  bool deterministic = false;
  // Replicated training: this pipeline reads only records i with
  // i % num_shards == shard_index (of each epoch's order).
  int num_shards = 1;
  int shard_index = 0;
  // The batch passes through a staging area (inputs/input_builders.h,
  // BatchOptions::stage): InputPipeline::stage_op must run once before each
  // step's Run, which models/training/batch_stager.h does one step ahead.
  bool stage_batches = false;
  // Text sources: map words with these (the train pipeline's
  // InputPipeline::vocabulary) instead of building a vocabulary.
  std::vector<std::string> vocabulary;
};

// Appends the pipeline's nodes to `graph`.
absl::Status BuildInputPipeline(const config::Input::Pipeline& pipeline, const PipelineOptions& options,
                                GraphDef* graph, InputPipeline* out);

// A `text` input's corpus, the split it reads (SPLIT_DEFAULT: train for the
// training input, test otherwise) and its vocabulary (read from the file, or
// built from the train split as inputs/FORMATS.md says); `vocabulary`, when
// not empty, is used instead (the eval input takes the train input's).
// BuildInputPipeline reads a text input through this; so does
// tests/bench/text_ids, so a peer trains on the same ids.
struct TextSource {
  text::Corpus corpus;
  text::Split split = text::Split::kTrain;
  text::Vocabulary vocabulary;
};
absl::StatusOr<TextSource> ResolveTextSource(const config::Input::Text& t, bool training,
                                             const std::vector<std::string>& vocabulary = {});

}  // namespace models
}  // namespace sluice

#endif  // SLUICE_MODELS_INPUT_PIPELINE_H_
