// Reader ops, TensorFlow's V1 names and signatures (Ref(string) handles):
// TFRecordReader, TextLineReader, IdxRecordReader (Sluice's: one IDX item
// per record), TextWindowReader (Sluice's: windows of token ids), ReaderRead, ReaderReadUpTo, ReaderNumRecordsProduced,
// ReaderNumWorkUnitsCompleted, ReaderSerializeState, ReaderRestoreState,
// ReaderReset. Kernels: reader_kernels.cc.
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {
namespace {

absl::Status HandleShape(InferenceContext* c) {
  c->set_output(0, PartialShape{2});
  return absl::OkStatus();
}

absl::Status TwoScalars(InferenceContext* c) {
  c->set_output(0, PartialShape::Scalar());
  c->set_output(1, PartialShape::Scalar());
  return absl::OkStatus();
}

absl::Status TwoVectors(InferenceContext* c) {
  c->set_output(0, PartialShape::UnknownOfRank(1));
  c->set_output(1, PartialShape::UnknownOfRank(1));
  return absl::OkStatus();
}

}  // namespace

// Sluice's attrs (TensorFlow's readers lack them): shuffle_seed 0 reads the
// records of each file in file order, otherwise in a seeded permutation per
// work unit (readers.h), for deterministic shuffling; empty_work_limit > 0
// fails a read after that many files in a row without a record (a pipeline
// whose every file is empty would otherwise take file after file for ever).
REGISTER_OP("TFRecordReader")
    .Output("reader_handle: Ref(string)")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("compression_type: string = ''")
    .Attr("shuffle_seed: int = 0")
    .Attr("empty_work_limit: int = 0")
    .SetIsStateful()
    .SetShapeFn(HandleShape);

REGISTER_OP("TextLineReader")
    .Output("reader_handle: Ref(string)")
    .Attr("skip_header_lines: int = 0")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("shuffle_seed: int = 0")
    .Attr("empty_work_limit: int = 0")
    .SetIsStateful()
    .SetShapeFn(HandleShape);

// shuffle_seed: 0 reads items in file order; otherwise in a seeded
// permutation per work unit (readers.h).
REGISTER_OP("IdxRecordReader")
    .SetSluiceOnly()
    .Output("reader_handle: Ref(string)")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("shuffle_seed: int = 0")
    .Attr("num_shards: int = 1")
    .Attr("shard_index: int = 0")
    .SetIsStateful()
    .SetShapeFn(HandleShape);

// One window of seq_len + 1 token ids (int64 little-endian) per record from
// `split` ("train", "test" or "all") of the corpus `files` in `format` ("lines" or
// "fortunes"), words mapped through `vocabulary` (id = position; "<unk>" and
// "<eos>" appended when missing). See readers.h and text.h.
REGISTER_OP("TextWindowReader")
    .SetSluiceOnly()
    .Output("reader_handle: Ref(string)")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("files: list(string)")
    .Attr("format: string = 'lines'")
    .Attr("split: string = 'train'")
    .Attr("lowercase: bool = true")
    .Attr("seq_len: int")
    .Attr("vocabulary: list(string)")
    .Attr("shuffle_seed: int = 0")
    .Attr("num_shards: int = 1")
    .Attr("shard_index: int = 0")
    .SetIsStateful()
    .SetShapeFn(HandleShape);

REGISTER_OP("ReaderRead")
    .Input("reader_handle: Ref(string)")
    .Input("queue_handle: Ref(string)")
    .Output("key: string")
    .Output("value: string")
    .SetIsStateful()
    .SetShapeFn(TwoScalars);

// Up to num_records records, from one file (fewer at the end of a file).
REGISTER_OP("ReaderReadUpTo")
    .Input("reader_handle: Ref(string)")
    .Input("queue_handle: Ref(string)")
    .Input("num_records: int64")
    .Output("keys: string")
    .Output("values: string")
    .SetIsStateful()
    .SetShapeFn(TwoVectors);

REGISTER_OP("ReaderNumRecordsProduced")
    .Input("reader_handle: Ref(string)")
    .Output("records_produced: int64")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Scalar);

REGISTER_OP("ReaderNumWorkUnitsCompleted")
    .Input("reader_handle: Ref(string)")
    .Output("units_completed: int64")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Scalar);

REGISTER_OP("ReaderSerializeState")
    .Input("reader_handle: Ref(string)")
    .Output("state: string")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Scalar);

REGISTER_OP("ReaderRestoreState")
    .Input("reader_handle: Ref(string)")
    .Input("state: string")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("ReaderReset")
    .Input("reader_handle: Ref(string)")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

}  // namespace sluice
