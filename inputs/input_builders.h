// Builders of input-pipeline subgraphs as GraphDef nodes (the C++ form of
// tf.train.string_input_producer, batch and shuffle_batch): file names ->
// file-name queue -> reader -> parse/decode -> (shuffle) queue -> batch. Each
// builder appends nodes named "<scope>/..." and records the QueueRunnerDefs
// and initializer ops the caller must run:
//
//   InputGraph in(&graph_def);
//   auto files = AddStringInputProducer(&in, paths, {.num_epochs = 1});
//   auto kv = AddReaderRead(&in, "TFRecordReader", *files, "reader");
//   ...
//   session->Run(in.init_ops) once; start a QueueRunner per in.runners.
//
// Stateful nodes (queues, readers, the epoch counter) live in the default
// container unless `container` is set, under their node names; use distinct
// scopes for distinct pipelines in one process.
// Thread safety: builders are not thread-safe (one InputGraph per thread).
#ifndef SLUICE_INPUTS_INPUT_BUILDERS_H_
#define SLUICE_INPUTS_INPUT_BUILDERS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/framework/graph.pb.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/shape_inference.h"
#include "inputs/queue_runner.h"

namespace sluice {

struct InputGraph {
  explicit InputGraph(GraphDef* g, std::string container = "") : graph(g), container(std::move(container)) {}
  GraphDef* graph;
  std::string container;
  std::vector<QueueRunnerDef> runners;
  std::vector<std::string> init_ops;  // run once before starting the runners
  // Stage ops of staged batches (BatchOptions::stage): a Run of each puts the
  // next batch in its staging area, which the batch's Unstage takes from.
  std::vector<std::string> stage_ops;

  // Appends a node; returns its name.
  std::string AddNode(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                      const std::map<std::string, AttrValue>& attrs = {});
  std::string AddConst(const std::string& name, const Tensor& value);
};

struct ProducerOptions {
  std::string scope = "input_producer";
  int64_t num_epochs = 0;  // 0: forever
  // A new permutation of the files every epoch: epoch e's is keyed by
  // (seed, e) alone (ShuffleForEpoch), so a resumed run knows it.
  bool shuffle = true;
  int64_t seed = 1;
  int32_t capacity = 32;
};

// A FIFOQueue of file names refilled every epoch; returns the queue's handle.
// Its epoch counter is the int64 scalar variable `scope`/epochs: the epochs
// enqueued so far (the init op sets it to 0); the producer stops at
// num_epochs. A resumed run sets it to the epochs it has begun, after the
// init ops and before the queue runners start.
absl::StatusOr<std::string> AddStringInputProducer(InputGraph* in, const std::vector<std::string>& files,
                                                   const ProducerOptions& options);

// A reader of `reader_op` type ("TFRecordReader", "TextLineReader",
// "IdxRecordReader") reading from `filename_queue`; returns {key, value}.
// `reader_attrs` go on the reader node (e.g. IdxRecordReader's shuffle_seed);
// the reader is node `scope`/reader.
std::pair<std::string, std::string> AddReaderRead(InputGraph* in, const std::string& reader_op,
                                                  const std::string& filename_queue, const std::string& scope,
                                                  const std::map<std::string, AttrValue>& reader_attrs = {});

struct FeatureSpec {
  std::string key;
  DataType dtype = DT_FLOAT;  // float, int64 or string
  TensorShape shape;
};
// A ReaderReadUpTo of up to `num_records` records per run (one file at a
// time): returns {keys, values}, string vectors. With AddParseExample and
// BatchOptions::enqueue_many it moves a batch of records per step instead
// of one.
std::pair<std::string, std::string> AddReaderReadUpTo(InputGraph* in, const std::string& reader_op,
                                                      const std::string& filename_queue, int64_t num_records,
                                                      const std::string& scope,
                                                      const std::map<std::string, AttrValue>& reader_attrs = {});

// ParseExample of one serialized Example (scalar); returns one tensor per spec.
std::vector<std::string> AddParseSingleExample(InputGraph* in, const std::string& serialized,
                                               const std::vector<FeatureSpec>& features, const std::string& scope);
// ParseExample of a vector of serialized Examples: each tensor gets a leading
// batch dimension.
inline std::vector<std::string> AddParseExample(InputGraph* in, const std::string& serialized,
                                                const std::vector<FeatureSpec>& features, const std::string& scope) {
  return AddParseSingleExample(in, serialized, features, scope);  // the kernel follows the input's rank
}

struct TensorSpec {
  std::string tensor;
  DataType dtype = DT_FLOAT;
  TensorShape shape;  // of one element
};

struct BatchOptions {
  std::string scope = "batch";
  int32_t batch_size = 32;
  int32_t capacity = 1000;
  int num_threads = 1;  // enqueue threads of the runner
  bool shuffle = false;
  int32_t min_after_dequeue = 0;  // shuffle only
  int64_t seed = 0;               // shuffle only; nonzero: reproducible
  bool allow_smaller_final_batch = false;
  // The tensors hold many elements along a leading dimension (QueueEnqueueMany),
  // e.g. from AddReaderReadUpTo; TensorSpec::shape is still one element's.
  bool enqueue_many = false;
  // The batch goes through a staging area (inputs/staging_ops.cc): a Stage
  // of the dequeued tensors, whose node name is added to InputGraph::stage_ops,
  // and an Unstage colocated with it, whose outputs are returned. A Run of
  // the Stage must precede each Run that needs the batch: the caller runs it
  // once ahead (models/training/batch_stager.h), so the next batch's dequeue
  // (and its copy to a GPU, where the Unstage is placed on one) overlaps the
  // step that uses the current batch.
  bool stage = false;
};

// Enqueues one element of `tensors` per step (the runner's threads) into a
// FIFOQueue or RandomShuffleQueue and dequeues batch_size of them; returns
// the batched tensor names (the Unstage's outputs when `stage`).
absl::StatusOr<std::vector<std::string>> AddBatch(InputGraph* in, const std::vector<TensorSpec>& tensors,
                                                  const BatchOptions& options);

}  // namespace sluice

#endif  // SLUICE_INPUTS_INPUT_BUILDERS_H_
