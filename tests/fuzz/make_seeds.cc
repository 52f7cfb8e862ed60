// Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) with our own
// writers, so the seeds are what the product writes: TFRecord files (RecordWriter), an event
// file (EventWriter), IDX files (EncodeIdx) and CSV text, checkpoint shard stores
// (WriteCheckpointDir, dumped as the checkpoint_reader target's key/value pieces) and
// serialized tf.Examples, worker-service bodies (encoded by grpc_tensor_coding) and requests. The experiment configs are copied by make_seeds.sh. Each seed starts
// with its target's option byte (see each *_fuzzer.cc).
// Usage: make_seeds OUT_DIR (tests/fuzz/make_seeds.sh runs it).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/rocksdb_util.h"
#include "checkpoint/store_format.h"
#include "engine/distributed/grpc_tensor_coding.h"
#include "engine/distributed/worker.pb.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/tensor.h"
#include "engine/platform/env.h"
#include "engine/platform/logging.h"
#include "engine/platform/record_writer.h"
#include "inputs/example.pb.h"
#include "inputs/idx.h"
#include "monitoring/event_writer.h"
#include "rocksdb/db.h"

namespace sluice {
namespace {

std::string out_root;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string dir = JoinPath(out_root, target);
  CHECK(Env::Default()->CreateDirs(dir).ok());
  std::ofstream out(JoinPath(dir, name), std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  CHECK(out.good());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string Records(const std::vector<std::string>& records) {
  const std::string path = JoinPath(out_root, "tmp.tfrecord");
  {
    auto file = Env::Default()->NewWritableFile(path);
    CHECK(file.ok());
    RecordWriter writer(file->get());
    for (const std::string& r : records) CHECK(writer.WriteRecord(r).ok());
    CHECK(writer.Close().ok());
  }
  std::string bytes = ReadFile(path);
  CHECK(Env::Default()->DeleteFile(path).ok());
  return bytes;
}

std::string Opt(uint8_t b) { return std::string(1, static_cast<char>(b)); }

void RecordReaderSeeds() {
  const std::string file = Records({"", "a", "hello, world", std::string(100, 'x'), "\0\1\2\3"});
  Write("record_reader", "five_records", Opt(0) + file);
  Write("record_reader", "five_records_small_buffer", Opt(2 | 16) + file);
  Write("record_reader", "five_records_follow_truncated", Opt(1 | 4) + file.substr(0, file.size() - 7));
  Write("record_reader", "capped", Opt(8) + file);
  Write("record_reader", "fixed_checksums", Opt(32) + file);
  Write("record_reader", "empty", Opt(0));
}

void EventFileSeeds() {
  EventWriterOptions options;
  options.run_dir = JoinPath(out_root, "tmp_events");
  options.hostname = "seed";
  options.clock = [] { return absl::FromUnixSeconds(1763720000); };
  {
    auto writer = EventWriter::Create(options);
    CHECK(writer.ok());
    for (int step = 1; step <= 3; ++step) CHECK((*writer)->WriteScalar(step, "loss", 2.5f / step).ok());
    CHECK((*writer)->WriteSessionStart(2).ok());
    Summary histogram;
    HistogramProto* h = histogram.add_value()->mutable_histo();
    histogram.mutable_value(0)->set_tag("w");
    h->set_min(-1);
    h->set_max(1);
    h->add_bucket_limit(0);
    h->add_bucket(3);
    CHECK((*writer)->WriteSummary(3, histogram).ok());
    CHECK((*writer)->Close().ok());
  }
  auto children = Env::Default()->GetChildren(options.run_dir);
  CHECK(children.ok() && children->size() == 1);
  const std::string bytes = ReadFile(JoinPath(options.run_dir, (*children)[0]));
  CHECK(Env::Default()->DeleteRecursively(options.run_dir).ok());
  Write("event_file", "events", Opt(0) + bytes);
  Write("event_file", "events_fixed_checksums", Opt(1) + bytes);
  Write("event_file", "truncated", Opt(0) + bytes.substr(0, bytes.size() / 2));
}

void IdxCsvSeeds() {
  for (DataType dtype : {DT_UINT8, DT_INT32, DT_FLOAT}) {
    IdxFile f;
    f.dtype = dtype;
    f.dims = {3, 2, 2};
    f.data.resize(12 * DataTypeSize(dtype));
    for (size_t i = 0; i < f.data.size(); ++i) f.data[i] = static_cast<char>(i * 7 + 1);
    for (bool gzip : {false, true}) {
      auto bytes = EncodeIdx(f, gzip);
      CHECK(bytes.ok());
      Write("idx_csv", absl::StrCat("idx_", DataTypeString(dtype), gzip ? "_gz" : ""), Opt(gzip ? 4 : 0) + *bytes);
    }
  }
  Write("idx_csv", "csv_plain", Opt(1) + "1,2,3\n4,5,6\r\n,,\nlast");
  Write("idx_csv", "csv_quoted", Opt(1 | 8) + "a,\"b,c\",\"d\"\"e\"\n\"open\n\"x\"y,z\n");
  Write("idx_csv", "csv_tabs_short_lines", Opt(1 | 2 | 16) + "a\tb\n" + std::string(100, 'z') + "\nc\td\n");
}

std::string Piece(absl::string_view bytes) {
  CHECK(bytes.size() < 65536);
  return std::string(1, static_cast<char>(bytes.size() & 0xff)) + std::string(1, static_cast<char>(bytes.size() >> 8)) +
         std::string(bytes);
}

void CheckpointSeeds() {
  Env* env = Env::Default();
  const std::string dir = JoinPath(out_root, "tmp_ckpt");
  std::vector<checkpoint::SaveEntry> entries;
  entries.push_back({"bias", Tensor::FromVector<float>({0.5f, -1.0f, 2.0f}), "", TensorShape()});
  Tensor names(DT_STRING, TensorShape({2}));
  names.data<tstring>()[0] = "first";
  names.data<tstring>()[1] = "";
  entries.push_back({"names", names, "", TensorShape()});
  entries.push_back({"step", Tensor::Scalar<int64_t>(7), "", TensorShape()});
  entries.push_back({"w", Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})), "0,2:-", TensorShape({4, 2})});
  entries.push_back({"w", Tensor::FromVector<float>({5, 6, 7, 8}, TensorShape({2, 2})), "2,2:-", TensorShape({4, 2})});
  checkpoint::WriteOptions options;
  options.step = 1;
  options.chunk_bytes = 8;  // several chunks per tensor
  options.parallel_shards = false;
  (void)env->DeleteRecursively(dir);
  const absl::Status written = checkpoint::WriteCheckpointDir(env, dir, entries, options);
  if (!written.ok()) {
    std::fprintf(stderr, "%s\n", written.ToString().c_str());
    std::abort();
  }
  rocksdb::DB* raw = nullptr;
  CHECK(rocksdb::DB::OpenForReadOnly(checkpoint::StoreOptions(false), JoinPath(dir, checkpoint::ShardDirName(0, 1)),
                                     &raw)
            .ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string pairs;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    pairs += Piece(absl::string_view(it->key().data(), it->key().size()));
    pairs += Piece(absl::string_view(it->value().data(), it->value().size()));
  }
  CHECK(it->status().ok());
  it.reset();
  db.reset();
  CHECK(env->DeleteRecursively(dir).ok());
  Write("checkpoint_reader", "saved_store", Piece("") + pairs);
  Write("checkpoint_reader", "saved_store_no_files_match", Piece("not an inventory\n") + pairs);
}

// example_parse: option byte 1 = one example (the rest), 0 = a batch of pieces.
void ExampleSeeds() {
  Example e;
  auto* f = e.mutable_features()->mutable_feature();
  (*f)["image"].mutable_bytes_list()->add_value(std::string(4, '\x7f'));
  (*f)["label"].mutable_int64_list()->add_value(3);
  (*f)["weights"].mutable_float_list()->add_value(0.25f);
  (*f)["weights"].mutable_float_list()->add_value(-2.0f);
  const std::string good = e.SerializeAsString();
  Write("example_parse", "image_label_weights", Opt(1) + good);
  Write("example_parse", "empty_example", Opt(1) + Example().SerializeAsString());
  f->erase("label");  // takes its default
  const std::string no_label = e.SerializeAsString();
  Write("example_parse", "batch_of_two", Opt(0) + Piece(good) + Piece(no_label));
  (*f)["label"].mutable_float_list()->add_value(1.0f);  // the wrong kind
  Write("example_parse", "label_wrong_kind", Opt(1) + e.SerializeAsString());
}

// worker_request: option byte 0/2 = a response body to decode (then two chunk offsets);
// 1/3 = request pieces (RegisterGraph, RunGraph, RecvTensor, CleanupGraph).
std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::vector<absl::string_view> chunks;
  CHECK(distributed::ByteBufferChunks(buffer, &slices, &chunks).ok());
  std::string out;
  for (absl::string_view c : chunks) out += std::string(c);
  return out;
}

void WorkerRequestSeeds() {
  using namespace distributed;
  RecvTensorResult floats;
  floats.value = Tensor::FromVector<float>({1, 2, 3}, TensorShape({3}));
  Write("worker_request", "recv_float", Opt(0) + "\x05\x09" + Flatten(EncodeRecvTensorResponse(absl::OkStatus(), floats)));
  RecvTensorResult strings;
  strings.value = Tensor::Scalar<tstring>("abc");
  Write("worker_request", "recv_string", Opt(0) + "\x40\x00" + Flatten(EncodeRecvTensorResponse(absl::OkStatus(), strings)));
  Write("worker_request", "recv_error",
        Opt(0) + "\x00\x00" + Flatten(EncodeRecvTensorResponse(absl::AbortedError("step aborted"), RecvTensorResult())));
  RunGraphResponse run;
  NamedTensor* recv = run.add_recv();
  recv->set_key("k");
  Tensor::FromVector<int32_t>({4, 5}, TensorShape({2})).AsProtoTensorContent(recv->mutable_tensor());
  Write("worker_request", "run_graph_response", Opt(2) + "\x03\x03" + Flatten(EncodeOkResponse(run)));
  Write("worker_request", "error_envelope", Opt(2) + "\x01\x00" + Flatten(EncodeErrorResponse(absl::NotFoundError("no graph"))));

  const std::string cpu = "/job:worker/replica:0/task:0/device:CPU:0";
  RegisterGraphRequest reg;
  reg.set_session_handle("s");
  NodeDef* c = reg.mutable_graph()->add_node();
  c->set_name("c");
  c->set_op("Const");
  c->set_device(cpu);
  (*c->mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
  Tensor::FromVector<float>({1, 2}, TensorShape({2})).AsProtoTensorContent((*c->mutable_attr())["value"].mutable_tensor());
  NodeDef* n = reg.mutable_graph()->add_node();
  n->set_name("neg");
  n->set_op("Neg");
  n->set_device(cpu);
  n->add_input("c");
  (*n->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  RunGraphRequest run_request;
  run_request.set_session_handle("s");
  run_request.set_step_id(7);
  RecvTensorRequest recv_request;
  recv_request.set_step_id(7);
  recv_request.set_rendezvous_key("nothing;0;nothing;x;0:0");
  CleanupGraphRequest cleanup;
  cleanup.set_step_id(7);
  const std::string tail = Piece(run_request.SerializeAsString()) + Piece(recv_request.SerializeAsString()) +
                           Piece(cleanup.SerializeAsString());
  Write("worker_request", "const_neg", Opt(3) + Piece(reg.SerializeAsString()) + tail);
  // A _Recv of a tensor the caller should feed but does not: RunGraph waits until CleanupGraph
  // aborts the step.
  NodeDef* r = reg.mutable_graph()->add_node();
  r->set_name("r");
  r->set_op("_Recv");
  r->set_device(cpu);
  (*r->mutable_attr())["tensor_type"] = MakeAttr(DT_FLOAT);
  (*r->mutable_attr())["tensor_name"] = MakeAttr("x:0");
  (*r->mutable_attr())["send_device"] = MakeAttr(cpu);
  (*r->mutable_attr())["client_terminated"] = MakeAttr(true);
  (*r->mutable_attr())["send_device_incarnation"] = MakeAttr(int64_t{1});
  (*r->mutable_attr())["recv_device"] = MakeAttr(cpu);
  Write("worker_request", "recv_from_nobody", Opt(3) + Piece(reg.SerializeAsString()) + tail);
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  sluice::out_root = argv[1];
  sluice::RecordReaderSeeds();
  sluice::EventFileSeeds();
  sluice::IdxCsvSeeds();
  sluice::CheckpointSeeds();
  sluice::ExampleSeeds();
  sluice::WorkerRequestSeeds();
  return 0;
}
