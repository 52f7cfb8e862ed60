// The whole input pipeline across modules: TFRecord files of Examples ->
// file-name producer (epochs, seeded shuffle) -> TFRecordReader -> ParseExample
// -> DecodeRaw -> shuffle batch, driven by QueueRunners under a Coordinator.
// Checks every example arrives once per epoch, that a corrupt file stops the
// runners with DataLoss naming it, and that stopping early never hangs.
#include <cstdlib>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"
#include "inputs/example.pb.h"
#include "inputs/input_builders.h"
#include "engine/platform/record_writer.h"

namespace sluice {
namespace {

std::string TmpDir() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d != nullptr ? d : "/tmp";
}

// Writes ids [first, first + n) as Examples {image: 4 bytes, label: id}.
std::string WriteShard(const std::string& name, int first, int n) {
  std::string path = TmpDir() + "/" + name;
  auto file = Env::Default()->NewWritableFile(path);
  EXPECT_TRUE(file.ok());
  RecordWriter w(file->get());
  for (int id = first; id < first + n; ++id) {
    Example e;
    auto* f = e.mutable_features()->mutable_feature();
    std::string image(4, static_cast<char>(id % 251));
    (*f)["image"].mutable_bytes_list()->add_value(image);
    (*f)["label"].mutable_int64_list()->add_value(id);
    EXPECT_TRUE(w.WriteRecord(e.SerializeAsString()).ok());
  }
  EXPECT_TRUE(w.Close().ok());
  return path;
}

struct Pipeline {
  GraphDef graph;
  InputGraph in{&graph, ""};
  std::vector<std::string> batch;  // image, label
  std::unique_ptr<Session> session;
  std::vector<std::unique_ptr<QueueRunner>> runners;
  Coordinator coord;

  Pipeline(const std::string& container, const std::vector<std::string>& files, int64_t epochs, int batch_size) {
    in.container = container;
    ProducerOptions p;
    p.num_epochs = epochs;
    p.seed = 5;
    auto queue = AddStringInputProducer(&in, files, p);
    EXPECT_TRUE(queue.ok());
    auto kv = AddReaderRead(&in, "TFRecordReader", *queue, "reader");
    auto parsed = AddParseSingleExample(
        &in, kv.second, {{"image", DT_STRING, TensorShape({})}, {"label", DT_INT64, TensorShape({})}}, "parse");
    std::string pixels = in.AddNode("decode", "DecodeRaw", {parsed[0]}, {{"out_type", MakeAttr(DT_UINT8)}});
    BatchOptions b;
    b.batch_size = batch_size;
    b.capacity = 200;
    b.num_threads = 2;
    b.shuffle = true;
    b.min_after_dequeue = 50;
    b.seed = 9;
    b.allow_smaller_final_batch = true;
    auto out = AddBatch(&in, {{pixels, DT_UINT8, TensorShape({4})}, {parsed[1], DT_INT64, TensorShape({})}}, b);
    EXPECT_TRUE(out.ok()) << out.status();
    batch = *out;
    auto s = NewSession();
    EXPECT_TRUE(s.ok());
    session = std::move(s).value();
    absl::Status created = session->Create(graph);
    EXPECT_TRUE(created.ok()) << created;
    std::vector<Tensor> ignored;
    if (!in.init_ops.empty()) {
      EXPECT_TRUE(session->Run({}, {}, in.init_ops, &ignored).ok());
    }
    for (const QueueRunnerDef& def : in.runners) {
      auto r = QueueRunner::New(def);
      EXPECT_TRUE(r.ok());
      EXPECT_TRUE((*r)->Start(session.get(), &coord).ok());
      runners.push_back(std::move(r).value());
    }
  }
  ~Pipeline() {
    coord.RequestStop();
    coord.Join().IgnoreError();
    runners.clear();
    Session::Reset({in.container});
  }
};

TEST(InputPipeline, EveryExampleArrivesOncePerEpoch) {
  std::vector<std::string> files = {WriteShard("p0.tfrecord", 0, 300), WriteShard("p1.tfrecord", 300, 300),
                                    WriteShard("p2.tfrecord", 600, 150)};
  Pipeline p("epochs", files, 2, 32);
  std::map<int64_t, int> seen;
  int batches = 0;
  std::vector<int64_t> first_labels;
  while (true) {
    std::vector<Tensor> out;
    absl::Status s = p.session->Run({}, p.batch, {}, &out);
    if (absl::IsOutOfRange(s)) break;
    ASSERT_TRUE(s.ok()) << s;
    ++batches;
    ASSERT_EQ(out[0].dim_size(0), out[1].dim_size(0));
    for (int64_t i = 0; i < out[1].NumElements(); ++i) {
      const int64_t id = out[1].data<int64_t>()[i];
      seen[id]++;
      if (first_labels.size() < 32) first_labels.push_back(id);
      EXPECT_EQ(out[0].data<uint8_t>()[i * 4], id % 251) << "image and label stay together";
    }
  }
  EXPECT_TRUE(p.coord.Join().ok()) << p.coord.status();
  EXPECT_EQ(seen.size(), 750u);
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 2) << "id " << id;
  EXPECT_EQ(batches, (1500 + 31) / 32);
  std::vector<int64_t> sorted = first_labels;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(first_labels, sorted) << "the batch is shuffled";
}

TEST(InputPipeline, ACorruptFileStopsTheRunnersWithDataLoss) {
  std::string good = WriteShard("c0.tfrecord", 0, 100);
  std::string bad = WriteShard("c1.tfrecord", 100, 100);
  auto contents = ReadFileToString(Env::Default(), bad);
  ASSERT_TRUE(contents.ok());
  std::string broken = *contents;
  broken[broken.size() / 2] ^= 0x10;
  ASSERT_TRUE(WriteStringToFile(Env::Default(), bad, broken).ok());
  Pipeline p("corrupt", {good, bad}, 1, 16);
  absl::Status s;
  while (true) {
    std::vector<Tensor> out;
    s = p.session->Run({}, p.batch, {}, &out);
    if (!s.ok()) break;
  }
  EXPECT_TRUE(absl::IsOutOfRange(s)) << "the consumer sees the end of input: " << s;
  absl::Status joined = p.coord.Join();
  EXPECT_TRUE(absl::IsDataLoss(joined)) << joined;
  EXPECT_TRUE(absl::StrContains(joined.message(), bad)) << joined;
}

TEST(InputPipeline, StoppingEarlyDoesNotHang) {
  std::vector<std::string> files = {WriteShard("s0.tfrecord", 0, 500)};
  Pipeline p("stop", files, 0, 8);  // endless epochs: only a stop ends it
  for (int i = 0; i < 5; ++i) {
    std::vector<Tensor> out;
    ASSERT_TRUE(p.session->Run({}, p.batch, {}, &out).ok());
  }
  p.coord.RequestStop();
  EXPECT_TRUE(p.coord.Join().ok()) << p.coord.status();
  EXPECT_TRUE(p.coord.ShouldStop());
}

}  // namespace
}  // namespace sluice
