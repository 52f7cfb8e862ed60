// The input ops through a Session: queue ops (including a blocked dequeue
// cancelled by its step's failure), readers over real files with state
// save/restore, TextWindowReader (windows, epochs, seeded shuffle, shards,
// restore, bad attrs), ReaderReadUpTo, ParseExample, DecodeRaw, DecodeCSV,
// ShuffleForEpoch, the image ops (AugmentImages's draws included), and
// Stage/Unstage (alone and in a staged batch).
#include <algorithm>
#include <array>
#include <optional>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/shape_refiner.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"
#include "inputs/example.pb.h"
#include "inputs/file_order.h"
#include "inputs/idx.h"
#include "inputs/input_builders.h"
#include "inputs/staging_kernels.h"
#include "inputs/text.h"
#include "engine/platform/record_writer.h"

namespace sluice {
namespace {

std::string TmpDir() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d != nullptr ? d : "/tmp";
}

class OpsTest : public ::testing::Test {
 protected:
  OpsTest() : in(&graph, ::testing::UnitTest::GetInstance()->current_test_info()->name()) {}
  ~OpsTest() override { Session::Reset({in.container}); }

  void Create() {
    auto s = NewSession();
    ASSERT_TRUE(s.ok());
    session = std::move(s).value();
    ASSERT_TRUE(session->Create(graph).ok()) << session->Create(graph);
  }
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<std::string>& fetches,
                                          const std::vector<std::string>& targets = {},
                                          const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
    std::vector<Tensor> out;
    absl::Status s = session->Run(feeds, fetches, targets, &out);
    if (!s.ok()) return s;
    return out;
  }
  std::string Queue(const std::string& name, const std::string& op, std::vector<DataType> types, int64_t capacity,
                    std::map<std::string, AttrValue> extra = {}) {
    extra["component_types"] = MakeAttr(types);
    extra["capacity"] = MakeAttr(capacity);
    extra["container"] = MakeAttr(in.container);
    return in.AddNode(name, op, {}, extra);
  }

  GraphDef graph;
  InputGraph in;
  std::unique_ptr<Session> session;
};

TEST_F(OpsTest, QueueEnqueueDequeueSizeClose) {
  std::string q = Queue("q", "FIFOQueue", {DT_INT32}, 10);
  in.AddNode("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT32)}});
  in.AddNode("enqueue", "QueueEnqueue", {q, "x"}, {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_INT32})}});
  in.AddConst("many_values", Tensor::FromVector<int32_t>({10, 11, 12}));
  in.AddNode("enqueue_many", "QueueEnqueueMany", {q, "many_values"},
             {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_INT32})}});
  in.AddNode("size", "QueueSize", {q});
  in.AddNode("dequeue", "QueueDequeue", {q}, {{"component_types", MakeAttr(std::vector<DataType>{DT_INT32})}});
  in.AddConst("two", Tensor::Scalar<int32_t>(2));
  in.AddNode("dequeue_many", "QueueDequeueMany", {q, "two"},
             {{"component_types", MakeAttr(std::vector<DataType>{DT_INT32})}});
  in.AddNode("dequeue_up_to", "QueueDequeueUpTo", {q, "two"},
             {{"component_types", MakeAttr(std::vector<DataType>{DT_INT32})}});
  in.AddNode("close", "QueueClose", {q});
  Create();
  ASSERT_TRUE(Run({}, {"enqueue"}, {{"x", Tensor::Scalar<int32_t>(5)}}).ok());
  ASSERT_TRUE(Run({}, {"enqueue_many"}).ok());
  EXPECT_EQ((*Run({"size"}))[0].scalar<int32_t>(), 4);
  EXPECT_EQ((*Run({"dequeue"}))[0].scalar<int32_t>(), 5);
  auto many = Run({"dequeue_many"});
  ASSERT_TRUE(many.ok()) << many.status();
  EXPECT_EQ((*many)[0].shape(), TensorShape({2}));
  EXPECT_EQ((*many)[0].data<int32_t>()[1], 11);
  ASSERT_TRUE(Run({}, {"close"}).ok());
  auto last = Run({"dequeue_up_to"});
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ((*last)[0].NumElements(), 1);
  auto end = Run({"dequeue"});
  EXPECT_TRUE(absl::IsOutOfRange(end.status())) << end.status();
  auto rejected = Run({}, {"enqueue"}, {{"x", Tensor::Scalar<int32_t>(1)}});
  EXPECT_TRUE(absl::IsCancelled(rejected.status())) << rejected.status();
}

// The dequeue would wait forever; the step still ends with the other node's
// error (the executor cancels pending async work when a node fails).
// Dequeue ops take their shapes from the queue's `shapes` attr (through the
// handle), so the model after an input pipeline has known shapes (the plan's
// FLOPs and memory depend on them).
TEST_F(OpsTest, DequeueShapesComeFromTheQueuesDeclaredShapes) {
  AttrValue shapes;
  TensorShapeProto image, label;
  for (int64_t d : {28, 28, 1}) image.add_dim()->set_size(d);
  *shapes.mutable_list()->add_shape() = image;
  *shapes.mutable_list()->add_shape() = label;
  const std::string q = Queue("q", "FIFOQueue", {DT_FLOAT, DT_INT64}, 10, {{"shapes", shapes}});
  const std::string n = in.AddConst("n", Tensor::Scalar<int32_t>(32));
  in.AddNode("many", "QueueDequeueMany", {q, n}, {{"component_types", MakeAttr(std::vector<DataType>{DT_FLOAT, DT_INT64})}});
  in.AddNode("up_to", "QueueDequeueUpTo", {q, n}, {{"component_types", MakeAttr(std::vector<DataType>{DT_FLOAT, DT_INT64})}});
  in.AddNode("one", "QueueDequeue", {q}, {{"component_types", MakeAttr(std::vector<DataType>{DT_FLOAT, DT_INT64})}});
  const std::string plain = Queue("plain", "FIFOQueue", {DT_FLOAT}, 10);
  in.AddNode("unknown", "QueueDequeue", {plain}, {{"component_types", MakeAttr(std::vector<DataType>{DT_FLOAT})}});
  auto g = GraphFromGraphDef(graph);
  ASSERT_TRUE(g.ok()) << g.status();
  ShapeRefiner refiner;
  ASSERT_TRUE(refiner.InferShapes(**g).ok());
  auto shape = [&](const std::string& node, int port) {
    return refiner.OutputShape((*g)->FindNode(node), port).DebugString();
  };
  EXPECT_EQ(shape("many", 0), "[32,28,28,1]");
  EXPECT_EQ(shape("many", 1), "[32]");
  EXPECT_EQ(shape("up_to", 0), "[?,28,28,1]");
  EXPECT_EQ(shape("one", 0), "[28,28,1]");
  EXPECT_EQ(shape("one", 1), "[]");
  EXPECT_EQ(shape("unknown", 0), "<unknown>");
}

// Stage and Unstage share an area by (container, shared_name): a Run of the
// Stage puts a tuple, a later Run's Unstage takes the oldest; neither waits.
TEST_F(OpsTest, StageAndUnstageHandTuplesOverBetweenRunsInOrder) {
  const std::vector<DataType> types = {DT_INT32, DT_FLOAT};
  in.AddNode("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT32)}});
  in.AddNode("y", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
  const std::map<std::string, AttrValue> area = {{"dtypes", MakeAttr(types)},
                                                 {"container", MakeAttr(in.container)},
                                                 {"shared_name", MakeAttr("area")}};
  std::map<std::string, AttrValue> stage_attrs = area;
  stage_attrs["capacity"] = MakeAttr(int64_t{2});
  in.AddNode("stage", "Stage", {"x", "y"}, stage_attrs);
  in.AddNode("unstage", "Unstage", {}, area);
  Create();
  auto empty = Run({"unstage:0"});
  ASSERT_TRUE(absl::IsFailedPrecondition(empty.status())) << empty.status();
  EXPECT_TRUE(absl::StrContains(empty.status().message(), "staging area 'area' is empty")) << empty.status();
  for (int i = 1; i <= 2; ++i) {
    ASSERT_TRUE(Run({}, {"stage"}, {{"x", Tensor::Scalar<int32_t>(i)}, {"y", Tensor::Scalar<float>(i * 0.5f)}}).ok());
  }
  auto full = Run({}, {"stage"}, {{"x", Tensor::Scalar<int32_t>(3)}, {"y", Tensor::Scalar<float>(1.5f)}});
  ASSERT_TRUE(absl::IsFailedPrecondition(full.status())) << full.status();
  EXPECT_TRUE(absl::StrContains(full.status().message(), "capacity of 2")) << full.status();
  for (int i = 1; i <= 2; ++i) {
    auto got = Run({"unstage:0", "unstage:1"});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].scalar<int32_t>(), i);
    EXPECT_EQ((*got)[1].scalar<float>(), i * 0.5f);
  }
  EXPECT_TRUE(absl::IsFailedPrecondition(Run({"unstage:0"}).status()));
}

TEST_F(OpsTest, StagingNodesNeedASharedNameAndTheAreasDtypes) {
  in.AddNode("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT32)}});
  in.AddNode("unnamed", "Stage", {"x"},
             {{"dtypes", MakeAttr(std::vector<DataType>{DT_INT32})}, {"container", MakeAttr(in.container)}});
  in.AddNode("stage", "Stage", {"x"},
             {{"dtypes", MakeAttr(std::vector<DataType>{DT_INT32})},
              {"container", MakeAttr(in.container)},
              {"shared_name", MakeAttr("area")}});
  in.AddNode("floats", "Unstage", {},
             {{"dtypes", MakeAttr(std::vector<DataType>{DT_FLOAT})},
              {"container", MakeAttr(in.container)},
              {"shared_name", MakeAttr("area")}});
  Create();
  auto unnamed = Run({}, {"unnamed"}, {{"x", Tensor::Scalar<int32_t>(1)}});
  ASSERT_TRUE(absl::IsInvalidArgument(unnamed.status())) << unnamed.status();
  EXPECT_TRUE(absl::StrContains(unnamed.status().message(), "shared_name")) << unnamed.status();
  ASSERT_TRUE(Run({}, {"stage"}, {{"x", Tensor::Scalar<int32_t>(1)}}).ok());
  auto floats = Run({"floats:0"});
  ASSERT_TRUE(absl::IsInvalidArgument(floats.status())) << floats.status();
  EXPECT_TRUE(absl::StrContains(floats.status().message(), "holds (int32), not (float)")) << floats.status();
}

// The area itself: a tuple of other dtypes, a full area and an empty one are
// errors (Put's dtype check backs the kernels' attr checks up).
TEST(StagingArea, RejectsOtherDtypesAndReportsFullAndEmpty) {
  StagingArea area("area", {DT_INT32}, 1);
  absl::Status wrong = area.Put({Tensor::Scalar<float>(1)});
  EXPECT_TRUE(absl::IsInvalidArgument(wrong)) << wrong;
  EXPECT_TRUE(absl::StrContains(wrong.message(), "holds (int32), not (float)")) << wrong;
  EXPECT_TRUE(absl::IsInvalidArgument(area.Put({})));
  ASSERT_TRUE(area.Put({Tensor::Scalar<int32_t>(7)}).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(area.Put({Tensor::Scalar<int32_t>(8)})));
  EXPECT_EQ(area.size(), 1);
  auto got = area.Take();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->values[0].scalar<int32_t>(), 7);
  EXPECT_FALSE(got->before_use) << "a tuple staged without a fence has none";
  EXPECT_TRUE(absl::IsFailedPrecondition(area.Take().status()));
}

// A Stage whose tuples carry a fence (as a GPU's do: gpu/staging_ops_gpu.cc)
// that counts the times it ran, and fails while fail_staged_fences is set.
std::atomic<int> staged_fence_calls{0};
std::atomic<bool> fail_staged_fences{false};
class CountingFenceStageOp : public StageOp {
 public:
  using StageOp::StageOp;

 protected:
  absl::StatusOr<StagedTupleFence> Fence(OpKernelContext*) override {
    return StagedTupleFence([](OpKernelContext*) {
      ++staged_fence_calls;
      return fail_staged_fences ? absl::InternalError("the staged copies failed") : absl::OkStatus();
    });
  }
};
REGISTER_KERNEL_BUILDER(Name("Stage").Device(kDeviceCpu).Label("counting_fence"), CountingFenceStageOp);

// Each Unstage runs its tuple's fence once, before the values go on, and a
// fence's error fails the Run that unstages.
TEST_F(OpsTest, AnUnstageRunsItsTuplesFenceOnceBeforeHandingTheValuesOn) {
  in.AddNode("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT32)}});
  const std::map<std::string, AttrValue> area = {{"dtypes", MakeAttr(std::vector<DataType>{DT_INT32})},
                                                 {"container", MakeAttr(in.container)},
                                                 {"shared_name", MakeAttr("fenced")}};
  std::map<std::string, AttrValue> stage_attrs = area;
  stage_attrs[kKernelLabelAttr] = MakeAttr("counting_fence");
  in.AddNode("stage", "Stage", {"x"}, stage_attrs);
  in.AddNode("unstage", "Unstage", {}, area);
  Create();
  staged_fence_calls = 0;
  fail_staged_fences = false;
  for (int i = 1; i <= 2; ++i) ASSERT_TRUE(Run({}, {"stage"}, {{"x", Tensor::Scalar<int32_t>(i)}}).ok());
  EXPECT_EQ(staged_fence_calls, 0) << "staging runs no fence";
  auto got = Run({"unstage:0"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0].scalar<int32_t>(), 1);
  EXPECT_EQ(staged_fence_calls, 1);
  fail_staged_fences = true;
  auto failed = Run({"unstage:0"});
  fail_staged_fences = false;
  EXPECT_FALSE(failed.ok());
  EXPECT_TRUE(absl::StrContains(failed.status().message(), "the staged copies failed")) << failed.status();
  EXPECT_EQ(staged_fence_calls, 2);
}

// An Unstage's `shapes` attr is what shape inference told the model: a staged
// tuple of another shape fails the Run, naming the node and the attr.
TEST_F(OpsTest, AnUnstagedShapeOtherThanTheShapesAttrIsAnError) {
  in.AddNode("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT32)}});
  const std::map<std::string, AttrValue> area = {{"dtypes", MakeAttr(std::vector<DataType>{DT_INT32})},
                                                 {"container", MakeAttr(in.container)},
                                                 {"shared_name", MakeAttr("area")}};
  in.AddNode("stage", "Stage", {"x"}, area);
  AttrValue shapes;
  shapes.mutable_list()->add_shape()->add_dim()->set_size(2);
  std::map<std::string, AttrValue> unstage_attrs = area;
  unstage_attrs["shapes"] = shapes;
  in.AddNode("unstage", "Unstage", {}, unstage_attrs);
  Create();
  ASSERT_TRUE(Run({}, {"stage"}, {{"x", Tensor::FromVector<int32_t>({1, 2})}}).ok());
  ASSERT_TRUE(Run({}, {"stage"}, {{"x", Tensor::FromVector<int32_t>({1, 2, 3})}}).ok());
  auto fits = Run({"unstage:0"});
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ((*fits)[0].NumElements(), 2);
  auto wrong = Run({"unstage:0"});
  ASSERT_TRUE(absl::IsInvalidArgument(wrong.status())) << wrong.status();
  EXPECT_TRUE(absl::StrContains(wrong.status().message(), "unstage")) << wrong.status();
  EXPECT_TRUE(absl::StrContains(wrong.status().message(), "has shape [3], not [2] (attr 'shapes')")) << wrong.status();
}

// AddBatch with `stage`: the batch reaches its consumers through the Unstage,
// one Run of the stage op ahead, with the dequeued batch's shapes, and the
// Unstage is colocated with its Stage (_class).
TEST_F(OpsTest, AStagedBatchArrivesThroughTheUnstageOneStageRunAhead) {
  in.AddConst("values", Tensor::FromVector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7}));
  BatchOptions o;
  o.scope = "batch";
  o.batch_size = 2;
  o.capacity = 8;
  o.enqueue_many = true;
  o.stage = true;
  auto batched = AddBatch(&in, {{"values", DT_INT32, TensorShape()}}, o);
  ASSERT_TRUE(batched.ok()) << batched.status();
  ASSERT_EQ(in.stage_ops, std::vector<std::string>{"batch/stage"});
  EXPECT_EQ((*batched)[0], "batch/unstage:0");
  for (const NodeDef& n : graph.node()) {
    if (n.name() == "batch/unstage") EXPECT_EQ(n.attr().at("_class").s(), "loc:@batch/stage");
    // On a GPU the batch's _Recv kernels may then leave their copies out of
    // the compute stream's order (the Stage's fence orders them).
    if (n.name() == "batch/stage") EXPECT_TRUE(n.attr().at(kOrdersItsInputCopiesAttr).b());
  }
  auto g = GraphFromGraphDef(graph);
  ASSERT_TRUE(g.ok()) << g.status();
  ShapeRefiner refiner;
  ASSERT_TRUE(refiner.InferShapes(**g).ok());
  EXPECT_EQ(refiner.OutputShape((*g)->FindNode("batch/unstage"), 0).DebugString(), "[2]");
  Create();
  ASSERT_TRUE(Run({}, {in.runners[0].enqueue_op_names[0]}).ok());
  ASSERT_TRUE(Run({}, {"batch/stage"}).ok());
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(Run({}, {"batch/stage"}).ok());  // the next batch, beside this step
    auto got = Run({(*batched)[0]});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].data<int32_t>()[0], 2 * step);
    EXPECT_EQ((*got)[0].data<int32_t>()[1], 2 * step + 1);
  }
}

TEST_F(OpsTest, AStepWithABlockedDequeueEndsWhenAnotherNodeFails) {
  std::string q = Queue("q", "FIFOQueue", {DT_FLOAT}, 10);
  in.AddNode("dequeue", "QueueDequeue", {q}, {{"component_types", MakeAttr(std::vector<DataType>{DT_FLOAT})}});
  // A node of the same step that fails: ParseExample of bytes that are no proto.
  in.AddConst("garbage", Tensor::FromVector<tstring>({"\xff\xff\xff"}));
  auto parsed = AddParseSingleExample(&in, "garbage", {{"x", DT_FLOAT, TensorShape({})}}, "parse");
  Create();
  auto r = Run({"dequeue", parsed[0]});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "tf.train.Example")) << r.status();
}

TEST_F(OpsTest, SharedQueueOfAnotherKindIsRejected) {
  Queue("q", "FIFOQueue", {DT_FLOAT}, 10, {{"shared_name", MakeAttr("shared")}});
  Queue("q2", "FIFOQueue", {DT_INT32}, 10, {{"shared_name", MakeAttr("shared")}});
  Create();
  ASSERT_TRUE(Run({}, {"q"}).ok());
  auto r = Run({}, {"q2"});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
}

std::vector<std::string> WriteTfRecords(const std::string& path, int first, int n) {
  std::vector<std::string> records;
  auto file = Env::Default()->NewWritableFile(path);
  EXPECT_TRUE(file.ok());
  RecordWriter w(file->get());
  for (int i = first; i < first + n; ++i) {
    records.push_back(absl::StrCat("record-", i));
    EXPECT_TRUE(w.WriteRecord(records.back()).ok());
  }
  EXPECT_TRUE(w.Close().ok());
  return records;
}

TEST_F(OpsTest, TFRecordReaderReadsEveryFileThenStopsAndResumesFromSavedState) {
  std::string a = TmpDir() + "/ops_a.tfrecord", b = TmpDir() + "/ops_b.tfrecord";
  std::vector<std::string> expected = WriteTfRecords(a, 0, 4);
  for (const auto& r : WriteTfRecords(b, 4, 3)) expected.push_back(r);
  std::string q = Queue("files", "FIFOQueue", {DT_STRING}, 10);
  in.AddConst("names", Tensor::FromVector<tstring>({a, b}));
  in.AddNode("fill", "QueueEnqueueMany", {q, "names"}, {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_STRING})}});
  in.AddNode("close", "QueueClose", {q});
  auto kv = AddReaderRead(&in, "TFRecordReader", q, "r");
  in.AddNode("state", "ReaderSerializeState", {"r/reader"});
  in.AddNode("state_in", "Placeholder", {}, {{"dtype", MakeAttr(DT_STRING)}});
  in.AddNode("restore", "ReaderRestoreState", {"r/reader", "state_in"});
  in.AddNode("produced", "ReaderNumRecordsProduced", {"r/reader"});
  in.AddNode("files_done", "ReaderNumWorkUnitsCompleted", {"r/reader"});
  Create();
  ASSERT_TRUE(Run({}, {"fill"}).ok());
  ASSERT_TRUE(Run({}, {"close"}).ok());  // (a separate step: the two are unordered in one)
  std::vector<std::string> got;
  std::string saved;
  std::vector<std::string> after_save;
  while (true) {
    if (got.size() == 1) saved = (*Run({"state"}))[0].scalar<tstring>();
    auto r = Run({kv.first, kv.second});
    if (!r.ok()) {
      EXPECT_TRUE(absl::IsOutOfRange(r.status())) << r.status();
      break;
    }
    if (got.size() >= 1 && got.size() < 4) after_save.push_back((*r)[1].scalar<tstring>());
    if (got.empty()) {
      EXPECT_EQ((*r)[0].scalar<tstring>(), a + ":0");
    }
    got.push_back((*r)[1].scalar<tstring>());
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ((*Run({"produced"}))[0].scalar<int64_t>(), 7);
  EXPECT_EQ((*Run({"files_done"}))[0].scalar<int64_t>(), 2);
  // Restore the state saved after 1 record: the rest of file a follows (the
  // file-name queue is not part of the reader's state, and it is now empty).
  ASSERT_TRUE(Run({}, {"restore"}, {{"state_in", Tensor::Scalar<tstring>(saved)}}).ok());
  std::vector<std::string> again;
  for (size_t i = 0; i < after_save.size(); ++i) {
    auto r = Run({kv.second});
    ASSERT_TRUE(r.ok()) << r.status();
    again.push_back((*r)[0].scalar<tstring>());
  }
  EXPECT_EQ(again, after_save);
  EXPECT_TRUE(absl::IsOutOfRange(Run({kv.second}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      Run({}, {"restore"}, {{"state_in", Tensor::Scalar<tstring>("not a state")}}).status()));
}

TEST_F(OpsTest, ACorruptRecordFailsTheReadWithDataLossNamingTheFile) {
  std::string path = TmpDir() + "/ops_corrupt.tfrecord";
  WriteTfRecords(path, 0, 2);
  auto contents = ReadFileToString(Env::Default(), path);
  ASSERT_TRUE(contents.ok());
  std::string bad = *contents;
  bad[bad.size() - 6] ^= 1;  // inside the second record's data
  ASSERT_TRUE(WriteStringToFile(Env::Default(), path, bad).ok());
  std::string q = Queue("files", "FIFOQueue", {DT_STRING}, 10);
  in.AddConst("names", Tensor::FromVector<tstring>({path}));
  in.AddNode("fill", "QueueEnqueueMany", {q, "names"}, {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_STRING})}});
  auto kv = AddReaderRead(&in, "TFRecordReader", q, "r");
  Create();
  ASSERT_TRUE(Run({}, {"fill"}).ok());
  EXPECT_TRUE(Run({kv.second}).ok());
  auto r = Run({kv.second});
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), path)) << r.status();
}

TEST_F(OpsTest, ReaderReadUpToReadsBatchesThatEndAtFileEnds) {
  std::string a = TmpDir() + "/upto_a.tfrecord", b = TmpDir() + "/upto_b.tfrecord";
  std::vector<std::string> expected = WriteTfRecords(a, 0, 4);
  for (const auto& r : WriteTfRecords(b, 4, 3)) expected.push_back(r);
  std::string q = Queue("files", "FIFOQueue", {DT_STRING}, 10);
  in.AddConst("names", Tensor::FromVector<tstring>({a, b}));
  in.AddNode("fill", "QueueEnqueueMany", {q, "names"}, {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_STRING})}});
  in.AddNode("close", "QueueClose", {q});
  auto kv = AddReaderReadUpTo(&in, "TFRecordReader", q, 3, "r");
  in.AddNode("produced", "ReaderNumRecordsProduced", {"r/reader"});
  in.AddNode("files_done", "ReaderNumWorkUnitsCompleted", {"r/reader"});
  in.AddConst("zero", Tensor::Scalar<int64_t>(0));
  in.AddNode("bad_read", "ReaderReadUpTo", {"r/reader", q, "zero"});
  Create();
  ASSERT_TRUE(Run({}, {"fill"}).ok());
  ASSERT_TRUE(Run({}, {"close"}).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(Run({"bad_read:1"}).status()));
  std::vector<int64_t> sizes;
  std::vector<std::string> got;
  while (true) {
    auto r = Run({kv.first, kv.second});
    if (!r.ok()) {
      EXPECT_TRUE(absl::IsOutOfRange(r.status())) << r.status();
      break;
    }
    ASSERT_EQ((*r)[0].dims(), 1);
    ASSERT_EQ((*r)[1].NumElements(), (*r)[0].NumElements());
    if (got.empty()) {
      EXPECT_EQ((*r)[0].data<tstring>()[0], a + ":0");
    }
    sizes.push_back((*r)[1].NumElements());
    for (int64_t i = 0; i < (*r)[1].NumElements(); ++i) got.push_back((*r)[1].data<tstring>()[i]);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 1, 3}));  // a batch never spans two files
  EXPECT_EQ(got, expected);
  EXPECT_EQ((*Run({"produced"}))[0].scalar<int64_t>(), 7);
  EXPECT_EQ((*Run({"files_done"}))[0].scalar<int64_t>(), 2);
}

TEST_F(OpsTest, ReaderReadUpToStopsBeforeABadRecordThenReportsIt) {
  std::string path = TmpDir() + "/upto_corrupt.tfrecord";
  WriteTfRecords(path, 0, 3);
  auto contents = ReadFileToString(Env::Default(), path);
  ASSERT_TRUE(contents.ok());
  std::string bad = *contents;
  bad[bad.size() - 6] ^= 1;  // inside the third record's data
  ASSERT_TRUE(WriteStringToFile(Env::Default(), path, bad).ok());
  std::string q = Queue("files", "FIFOQueue", {DT_STRING}, 10);
  in.AddConst("names", Tensor::FromVector<tstring>({path}));
  in.AddNode("fill", "QueueEnqueueMany", {q, "names"}, {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_STRING})}});
  auto kv = AddReaderReadUpTo(&in, "TFRecordReader", q, 10, "r");
  Create();
  ASSERT_TRUE(Run({}, {"fill"}).ok());
  auto r = Run({kv.second});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].NumElements(), 2);
  for (int i = 0; i < 2; ++i) {
    r = Run({kv.second});
    EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), path)) << r.status();
  }
}

TEST_F(OpsTest, TextLineReaderAndDecodeCSV) {
  std::string path = TmpDir() + "/ops.csv";
  ASSERT_TRUE(WriteStringToFile(Env::Default(), path, "id,score,name\n1,0.5,a\n2,,\"b,c\"\n").ok());
  std::string q = Queue("files", "FIFOQueue", {DT_STRING}, 10);
  in.AddConst("names", Tensor::FromVector<tstring>({path}));
  in.AddNode("fill", "QueueEnqueueMany", {q, "names"}, {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_STRING})}});
  in.AddNode("reader", "TextLineReader", {}, {{"skip_header_lines", MakeAttr(int64_t{1})}, {"container", MakeAttr(in.container)}});
  in.AddNode("read", "ReaderRead", {"reader", q});
  in.AddConst("d0", Tensor(DT_INT64, TensorShape({0})));
  in.AddConst("d1", Tensor::FromVector<float>({-1.0f}));
  in.AddConst("d2", Tensor::FromVector<tstring>({""}));
  in.AddNode("csv", "DecodeCSV", {"read:1", "d0", "d1", "d2"},
             {{"OUT_TYPE", MakeAttr(std::vector<DataType>{DT_INT64, DT_FLOAT, DT_STRING})}});
  Create();
  ASSERT_TRUE(Run({}, {"fill"}).ok());
  auto r1 = Run({"read:0", "csv:0", "csv:1", "csv:2"});
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ((*r1)[0].scalar<tstring>(), path + ":2");
  EXPECT_EQ((*r1)[1].scalar<int64_t>(), 1);
  EXPECT_FLOAT_EQ((*r1)[2].scalar<float>(), 0.5f);
  auto r2 = Run({"csv:0", "csv:1", "csv:2"});
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_FLOAT_EQ((*r2)[1].scalar<float>(), -1.0f) << "the default fills an empty field";
  EXPECT_EQ((*r2)[2].scalar<tstring>(), "b,c");
}

TEST_F(OpsTest, DecodeCSVErrors) {
  in.AddNode("line", "Placeholder", {}, {{"dtype", MakeAttr(DT_STRING)}});
  in.AddConst("d0", Tensor(DT_INT32, TensorShape({0})));
  in.AddNode("csv", "DecodeCSV", {"line", "d0"}, {{"OUT_TYPE", MakeAttr(std::vector<DataType>{DT_INT32})}});
  Create();
  for (const char* bad : {"x", "", "1,2", "\"1"}) {
    auto r = Run({"csv"}, {}, {{"line", Tensor::Scalar<tstring>(bad)}});
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << bad << ": " << r.status();
  }
}

TEST_F(OpsTest, IdxRecordReaderAndDecodeRaw) {
  IdxFile f;
  f.dtype = DT_UINT8;
  f.dims = {3, 2, 2};
  for (int i = 0; i < 12; ++i) f.data.push_back(static_cast<char>(i));
  std::string path = TmpDir() + "/ops.idx.gz";
  ASSERT_TRUE(WriteIdxFile(Env::Default(), path, f, true).ok());
  std::string q = Queue("files", "FIFOQueue", {DT_STRING}, 10);
  in.AddConst("names", Tensor::FromVector<tstring>({path}));
  in.AddNode("fill", "QueueEnqueueMany", {q, "names"}, {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_STRING})}});
  auto kv = AddReaderRead(&in, "IdxRecordReader", q, "r");
  in.AddNode("pixels", "DecodeRaw", {kv.second}, {{"out_type", MakeAttr(DT_UINT8)}});
  Create();
  ASSERT_TRUE(Run({}, {"fill"}).ok());
  for (int item = 0; item < 3; ++item) {
    auto r = Run({kv.first, "pixels"});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)[0].scalar<tstring>(), absl::StrCat(path, ":", item));
    ASSERT_EQ((*r)[1].shape(), TensorShape({4}));
    EXPECT_EQ((*r)[1].data<uint8_t>()[3], item * 4 + 3);
  }
}

// A gzip IDX file read again (the next epoch) reuses the items inflated last
// time, and a rewritten file (another gzip trailer) is read anew.
TEST_F(OpsTest, IdxRecordReaderReopensAChangedFile) {
  auto write = [](const std::string& path, int base) {
    IdxFile f;
    f.dtype = DT_UINT8;
    f.dims = {3, 2};
    for (int i = 0; i < 6; ++i) f.data.push_back(static_cast<char>(base + i));
    return WriteIdxFile(Env::Default(), path, f, true);
  };
  std::string path = TmpDir() + "/reopen.idx.gz";
  ASSERT_TRUE(write(path, 0).ok());
  std::string q = Queue("files", "FIFOQueue", {DT_STRING}, 10);
  in.AddConst("names", Tensor::FromVector<tstring>({path, path, path}));
  in.AddNode("fill", "QueueEnqueueMany", {q, "names"}, {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_STRING})}});
  auto kv = AddReaderReadUpTo(&in, "IdxRecordReader", q, 3, "r");
  in.AddNode("pixels", "DecodeRaw", {kv.second}, {{"out_type", MakeAttr(DT_UINT8)}});
  Create();
  ASSERT_TRUE(Run({}, {"fill"}).ok());
  for (int base : {0, 50, 50}) {
    auto r = Run({"pixels"});
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ((*r)[0].shape(), TensorShape({3, 2}));
    for (int i = 0; i < 6; ++i) EXPECT_EQ((*r)[0].data<uint8_t>()[i], base + i) << "epoch of " << base;
    if (base == 0) {
      ASSERT_TRUE(write(path, 50).ok());
    }
  }
}

// Replicated training: shard k of n reads the records at positions k, k+n, ...
// of every epoch, so the shards of one epoch together are the file once.
TEST_F(OpsTest, IdxRecordReaderShardsReadDisjointRecordsThatCoverTheFile) {
  IdxFile f;
  f.dtype = DT_UINT8;
  f.dims = {7, 1};
  for (int i = 0; i < 7; ++i) f.data.push_back(static_cast<char>(i));
  std::string path = TmpDir() + "/shards.idx";
  ASSERT_TRUE(WriteIdxFile(Env::Default(), path, f, false).ok());
  in.AddConst("names", Tensor::FromVector<tstring>({path}));
  std::vector<std::string> pixels;
  for (int shard = 0; shard < 3; ++shard) {
    std::string files = Queue(absl::StrCat("files", shard), "FIFOQueue", {DT_STRING}, 10);
    in.AddNode(absl::StrCat("fill", shard), "QueueEnqueueMany", {files, "names"},
               {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_STRING})}});
    auto kv = AddReaderReadUpTo(&in, "IdxRecordReader", files, 10, absl::StrCat("r", shard),
                                {{"num_shards", MakeAttr(int64_t{3})}, {"shard_index", MakeAttr(int64_t{shard})}});
    pixels.push_back(in.AddNode(absl::StrCat("pixels", shard), "DecodeRaw", {kv.second}, {{"out_type", MakeAttr(DT_UINT8)}}));
  }
  Create();
  std::vector<int> seen;
  for (int shard = 0; shard < 3; ++shard) {
    ASSERT_TRUE(Run({}, {absl::StrCat("fill", shard)}).ok());
    auto r = Run({pixels[shard]});
    ASSERT_TRUE(r.ok()) << r.status();
    for (int64_t i = 0; i < (*r)[0].NumElements(); ++i) {
      const int item = (*r)[0].data<uint8_t>()[i];
      EXPECT_EQ(item % 3, shard) << "shard " << shard << " read item " << item;
      seen.push_back(item);
    }
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
}

// TextWindowReader: a corpus of 30 numbered lines read as windows of
// seq_len + 1 ids; the windows cover the split's id stream in order, restart
// with each work unit (epoch), come in a seeded permutation with a
// shuffle_seed, and resume from a saved state.
class TextReaderTest : public OpsTest {
 protected:
  void SetUp() override {
    path = TmpDir() + "/text_reader_corpus.txt";
    std::string lines;
    for (int i = 0; i < 30; ++i) absl::StrAppend(&lines, "Line number ", i, " says: hello.\n");
    ASSERT_TRUE(WriteStringToFile(Env::Default(), path, lines).ok());
    corpus.files = {path};
    corpus.format = text::Format::kLines;
    auto v = text::BuildVocabulary(Env::Default(), corpus, text::Split::kTrain, 6, 1);
    ASSERT_TRUE(v.ok()) << v.status();
    vocabulary = v->words();
    auto stream = text::ReadTokenStream(Env::Default(), corpus, text::Split::kTrain, *v);
    ASSERT_TRUE(stream.ok()) << stream.status();
    ids = stream->ids;
  }
  std::map<std::string, AttrValue> Attrs(int64_t seq_len) {
    return {{"files", MakeAttr(std::vector<std::string>{path})},
            {"format", MakeAttr("lines")},
            {"seq_len", MakeAttr(seq_len)},
            {"vocabulary", MakeAttr(vocabulary)}};
  }
  // Reads every window of one work unit (`n` per step) as int64 rows.
  std::vector<std::vector<int64_t>> ReadAll(const std::string& windows, int64_t seq_len) {
    std::vector<std::vector<int64_t>> rows;
    while (true) {
      auto r = Run({windows});
      if (!r.ok()) {
        EXPECT_TRUE(absl::IsOutOfRange(r.status())) << r.status();
        break;
      }
      const Tensor& t = (*r)[0];
      EXPECT_EQ(t.dims(), 2);
      EXPECT_EQ(t.dim_size(1), seq_len + 1);
      for (int64_t i = 0; i < t.dim_size(0); ++i) {
        rows.emplace_back(t.data<int64_t>() + i * (seq_len + 1), t.data<int64_t>() + (i + 1) * (seq_len + 1));
      }
      if (rows.size() > 1000) break;
    }
    return rows;
  }
  std::string Windows(const std::string& scope, const std::string& files, int64_t seq_len,
                      std::map<std::string, AttrValue> extra = {}) {
    std::map<std::string, AttrValue> attrs = Attrs(seq_len);
    for (const auto& [k, v] : extra) attrs[k] = v;
    auto kv = AddReaderReadUpTo(&in, "TextWindowReader", files, 4, scope, attrs);
    std::string raw = in.AddNode(scope + "/decode", "DecodeRaw", {kv.second}, {{"out_type", MakeAttr(DT_INT64)}});
    in.AddConst(scope + "/dims", Tensor::FromVector<int32_t>({-1, static_cast<int32_t>(seq_len + 1)}));
    return in.AddNode(scope + "/rows", "Reshape", {raw, scope + "/dims"},
                      {{"T", MakeAttr(DT_INT64)}, {"Tshape", MakeAttr(DT_INT32)}});
  }
  std::string FileQueue(const std::string& name, int units) {
    std::string q = Queue(name, "FIFOQueue", {DT_STRING}, 10);
    in.AddConst(name + "/names", Tensor::FromVector<tstring>(std::vector<tstring>(units, "corpus")));
    in.AddNode(name + "/fill", "QueueEnqueueMany", {q, name + "/names"},
               {{"Tcomponents", MakeAttr(std::vector<DataType>{DT_STRING})}});
    in.AddNode(name + "/close", "QueueClose", {q});
    return q;
  }
  void Fill(const std::string& q) {
    ASSERT_TRUE(Run({}, {q + "/fill"}).ok());
    ASSERT_TRUE(Run({}, {q + "/close"}).ok());
  }

  std::string path;
  text::Corpus corpus;
  std::vector<std::string> vocabulary;
  std::vector<int32_t> ids;
};

TEST_F(TextReaderTest, WindowsCoverTheStreamInOrderEveryEpoch) {
  const int64_t seq_len = 5;
  std::string q = FileQueue("files", 2);
  std::string rows = Windows("r", q, seq_len);
  Create();
  Fill(q);
  auto got = ReadAll(rows, seq_len);
  const int64_t n = text::NumWindows(static_cast<int64_t>(ids.size()), seq_len);
  ASSERT_GT(n, 10);
  ASSERT_EQ(static_cast<int64_t>(got.size()), 2 * n);  // two work units: two epochs
  for (int64_t w = 0; w < 2 * n; ++w) {
    for (int64_t i = 0; i <= seq_len; ++i) {
      ASSERT_EQ(got[w][i], ids[(w % n) * seq_len + i]) << "window " << w << " token " << i;
    }
  }
  // Ids are in the vocabulary; <eos> (1) ends each of the split's lines.
  int64_t eos = 0;
  for (int32_t id : ids) eos += id == 1;
  EXPECT_GT(eos, 20);
  for (const auto& row : got) {
    for (int64_t id : row) EXPECT_LT(id, static_cast<int64_t>(vocabulary.size()));
  }
}

TEST_F(TextReaderTest, ShuffleSeedPermutesWindowsAndStateRestores) {
  const int64_t seq_len = 4;
  std::string q = FileQueue("files", 1);
  std::string rows = Windows("r", q, seq_len, {{"shuffle_seed", MakeAttr(int64_t{7})}});
  in.AddNode("state", "ReaderSerializeState", {"r/reader"});
  in.AddNode("state_in", "Placeholder", {}, {{"dtype", MakeAttr(DT_STRING)}});
  in.AddNode("restore", "ReaderRestoreState", {"r/reader", "state_in"});
  Create();
  Fill(q);
  auto first = Run({rows});
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string saved = (*Run({"state"}))[0].scalar<tstring>();
  auto rest = ReadAll(rows, seq_len);
  const int64_t n = text::NumWindows(static_cast<int64_t>(ids.size()), seq_len);
  ASSERT_EQ(static_cast<int64_t>(rest.size()) + 4, n);
  // A permutation of the windows, not the file order.
  std::set<std::vector<int64_t>> expected, seen;
  for (int64_t w = 0; w < n; ++w) expected.insert(std::vector<int64_t>(ids.begin() + w * seq_len, ids.begin() + w * seq_len + seq_len + 1));
  for (int64_t i = 0; i < 4; ++i) {
    seen.insert(std::vector<int64_t>((*first)[0].data<int64_t>() + i * (seq_len + 1),
                                     (*first)[0].data<int64_t>() + (i + 1) * (seq_len + 1)));
  }
  bool in_order = true;
  for (size_t i = 0; i < rest.size(); ++i) {
    seen.insert(rest[i]);
    in_order = in_order && rest[i] == std::vector<int64_t>(ids.begin() + (i + 4) * seq_len,
                                                           ids.begin() + (i + 4) * seq_len + seq_len + 1);
  }
  EXPECT_EQ(seen, expected);
  EXPECT_FALSE(in_order);
  // Restored after the first batch, the same windows follow.
  ASSERT_TRUE(Run({}, {"restore"}, {{"state_in", Tensor::Scalar<tstring>(saved)}}).ok());
  auto again = Run({rows});
  ASSERT_TRUE(again.ok()) << again.status();
  for (int64_t i = 0; i < (*again)[0].dim_size(0); ++i) {
    EXPECT_EQ(std::vector<int64_t>((*again)[0].data<int64_t>() + i * (seq_len + 1),
                                   (*again)[0].data<int64_t>() + (i + 1) * (seq_len + 1)),
              rest[i]);
  }
}

TEST_F(TextReaderTest, ShardsReadDisjointWindowsThatCoverTheCorpus) {
  const int64_t seq_len = 3;
  std::vector<std::string> rows;
  for (int shard = 0; shard < 2; ++shard) {
    std::string q = FileQueue(absl::StrCat("files", shard), 1);
    rows.push_back(Windows(absl::StrCat("r", shard), q, seq_len,
                           {{"num_shards", MakeAttr(int64_t{2})}, {"shard_index", MakeAttr(int64_t{shard})}}));
  }
  Create();
  std::multiset<std::vector<int64_t>> seen;
  size_t total = 0;
  for (int shard = 0; shard < 2; ++shard) {
    Fill(absl::StrCat("files", shard));
    for (const auto& row : ReadAll(rows[shard], seq_len)) {
      seen.insert(row);
      ++total;
    }
  }
  const int64_t n = text::NumWindows(static_cast<int64_t>(ids.size()), seq_len);
  EXPECT_EQ(static_cast<int64_t>(total), n);
  std::multiset<std::vector<int64_t>> expected;
  for (int64_t w = 0; w < n; ++w) expected.insert(std::vector<int64_t>(ids.begin() + w * seq_len, ids.begin() + w * seq_len + seq_len + 1));
  EXPECT_EQ(seen, expected);
}

TEST_F(TextReaderTest, BadAttrsAndFilesAreErrors) {
  std::string q = FileQueue("files", 1);
  vocabulary.push_back("hello");  // a repeat
  Windows("dup", q, 3);
  vocabulary.pop_back();
  Windows("split", q, 3, {{"split", MakeAttr("validation")}});
  Windows("seq", q, 0);
  Windows("missing", q, 3, {{"files", MakeAttr(std::vector<std::string>{TmpDir() + "/no_such_corpus.txt"})}});
  Create();
  Fill(q);
  auto dup = Run({"dup/rows"});
  EXPECT_TRUE(absl::IsInvalidArgument(dup.status())) << dup.status();
  EXPECT_TRUE(absl::StrContains(dup.status().message(), "listed twice")) << dup.status();
  auto split = Run({"split/rows"});
  EXPECT_TRUE(absl::StrContains(split.status().message(), "'validation' is not 'train', 'test' or 'all'")) << split.status();
  auto seq = Run({"seq/rows"});
  EXPECT_TRUE(absl::StrContains(seq.status().message(), "seq_len 0")) << seq.status();
  auto missing = Run({"missing/rows"});
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "no_such_corpus.txt")) << missing.status();
}

TEST_F(OpsTest, DecodeRawEndiannessAndErrors) {
  in.AddNode("bytes", "Placeholder", {}, {{"dtype", MakeAttr(DT_STRING)}});
  in.AddNode("le", "DecodeRaw", {"bytes"}, {{"out_type", MakeAttr(DT_INT32)}});
  in.AddNode("be", "DecodeRaw", {"bytes"}, {{"out_type", MakeAttr(DT_INT32)}, {"little_endian", MakeAttr(false)}});
  Create();
  Tensor two = Tensor::FromVector<tstring>({std::string("\x01\0\0\0", 4), std::string("\0\0\0\x02", 4)});
  auto r = Run({"le", "be"}, {}, {{"bytes", two}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].shape(), TensorShape({2, 1}));
  EXPECT_EQ((*r)[0].data<int32_t>()[0], 1);
  EXPECT_EQ((*r)[1].data<int32_t>()[1], 2);
  auto ragged = Run({"le"}, {}, {{"bytes", Tensor::FromVector<tstring>({"abcd", "ab"})}});
  EXPECT_TRUE(absl::IsInvalidArgument(ragged.status()));
  auto odd = Run({"le"}, {}, {{"bytes", Tensor::FromVector<tstring>({"abc"})}});
  EXPECT_TRUE(absl::IsInvalidArgument(odd.status()));
}

std::string SerializedExample(float a, float b, int64_t label, const std::string& name, bool with_label = true) {
  Example e;
  auto* f = e.mutable_features()->mutable_feature();
  (*f)["xy"].mutable_float_list()->add_value(a);
  (*f)["xy"].mutable_float_list()->add_value(b);
  if (with_label) (*f)["label"].mutable_int64_list()->add_value(label);
  (*f)["name"].mutable_bytes_list()->add_value(name);
  return e.SerializeAsString();
}

TEST_F(OpsTest, ParseExampleDenseFeaturesWithDefaults) {
  in.AddNode("serialized", "Placeholder", {}, {{"dtype", MakeAttr(DT_STRING)}});
  in.AddConst("names", Tensor(DT_STRING, TensorShape({0})));
  in.AddConst("k0", Tensor::Scalar<tstring>("xy"));
  in.AddConst("k1", Tensor::Scalar<tstring>("label"));
  in.AddConst("k2", Tensor::Scalar<tstring>("name"));
  in.AddConst("d0", Tensor(DT_FLOAT, TensorShape({0})));
  in.AddConst("d1", Tensor::FromVector<int64_t>({-1}));
  in.AddConst("d2", Tensor(DT_STRING, TensorShape({0})));
  AttrValue shapes;
  TensorShape({2}).AsProto(shapes.mutable_list()->add_shape());
  TensorShape({}).AsProto(shapes.mutable_list()->add_shape());
  TensorShape({}).AsProto(shapes.mutable_list()->add_shape());
  in.AddNode("parse", "ParseExample", {"serialized", "names", "k0", "k1", "k2", "d0", "d1", "d2"},
             {{"Nsparse", MakeAttr(int64_t{0})},
              {"Ndense", MakeAttr(int64_t{3})},
              {"sparse_types", MakeAttr(std::vector<DataType>{})},
              {"Tdense", MakeAttr(std::vector<DataType>{DT_FLOAT, DT_INT64, DT_STRING})},
              {"dense_shapes", shapes}});
  Create();
  Tensor batch = Tensor::FromVector<tstring>({SerializedExample(1, 2, 7, "a"), SerializedExample(3, 4, 0, "b", false)});
  auto r = Run({"parse:0", "parse:1", "parse:2"}, {}, {{"serialized", batch}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].shape(), TensorShape({2, 2}));
  EXPECT_EQ((*r)[0].data<float>()[3], 4);
  EXPECT_EQ((*r)[1].data<int64_t>()[0], 7);
  EXPECT_EQ((*r)[1].data<int64_t>()[1], -1) << "missing label takes the default";
  EXPECT_EQ((*r)[2].data<tstring>()[1], "b");
  // A scalar parses one example without the batch dimension.
  auto one = Run({"parse:0"}, {}, {{"serialized", Tensor::Scalar<tstring>(SerializedExample(5, 6, 1, "c"))}});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)[0].shape(), TensorShape({2}));
  // Errors: missing required feature, wrong kind, wrong count, not a proto.
  Example no_xy;
  (*no_xy.mutable_features()->mutable_feature())["name"].mutable_bytes_list()->add_value("z");
  Example wrong_kind;
  (*wrong_kind.mutable_features()->mutable_feature())["xy"].mutable_int64_list()->add_value(1);
  (*wrong_kind.mutable_features()->mutable_feature())["name"].mutable_bytes_list()->add_value("z");
  Example wrong_count;
  (*wrong_count.mutable_features()->mutable_feature())["xy"].mutable_float_list()->add_value(1);
  (*wrong_count.mutable_features()->mutable_feature())["name"].mutable_bytes_list()->add_value("z");
  for (const std::string& bad : {no_xy.SerializeAsString(), wrong_kind.SerializeAsString(),
                                 wrong_count.SerializeAsString(), std::string("\x0a\xff", 2)}) {
    auto e = Run({"parse:0"}, {}, {{"serialized", Tensor::FromVector<tstring>({bad})}});
    EXPECT_TRUE(absl::IsInvalidArgument(e.status())) << e.status();
    EXPECT_TRUE(absl::StrContains(e.status().message(), "example 0")) << e.status();
  }
}

// Issue 22, class 1: [batch] + a dense shape with a zero and a 2^62 dim.
// One example gives [1, 0, 2^62] (no elements); four would be [4, 0, 2^62],
// whose non-zero dims multiply past 2^62: an error naming the feature, where
// building the output shape used to CHECK.
TEST_F(OpsTest, ParseExampleBatchOfAHugeEmptyDenseShapeFails) {
  in.AddNode("serialized", "Placeholder", {}, {{"dtype", MakeAttr(DT_STRING)}});
  in.AddConst("names", Tensor(DT_STRING, TensorShape({0})));
  in.AddConst("k0", Tensor::Scalar<tstring>("empty"));
  in.AddConst("d0", Tensor(DT_FLOAT, TensorShape({0})));
  AttrValue shapes;
  TensorShape({0, int64_t{1} << 62}).AsProto(shapes.mutable_list()->add_shape());
  in.AddNode("parse", "ParseExample", {"serialized", "names", "k0", "d0"},
             {{"Nsparse", MakeAttr(int64_t{0})},
              {"Ndense", MakeAttr(int64_t{1})},
              {"sparse_types", MakeAttr(std::vector<DataType>{})},
              {"Tdense", MakeAttr(std::vector<DataType>{DT_FLOAT})},
              {"dense_shapes", shapes}});
  Create();
  Example ex;  // the feature, with its zero values
  (*ex.mutable_features()->mutable_feature())["empty"].mutable_float_list();
  const std::string e = ex.SerializeAsString();
  auto one = Run({"parse:0"}, {}, {{"serialized", Tensor::FromVector<tstring>({e})}});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)[0].shape(), TensorShape({1, 0, int64_t{1} << 62}));
  auto four = Run({"parse:0"}, {}, {{"serialized", Tensor::FromVector<tstring>({e, e, e, e})}});
  EXPECT_TRUE(absl::IsInvalidArgument(four.status())) << four.status();
  EXPECT_TRUE(absl::StrContains(four.status().message(), "'parse'")) << four.status();
  EXPECT_TRUE(absl::StrContains(four.status().message(), "feature 'empty'")) << four.status();
  EXPECT_TRUE(absl::StrContains(four.status().message(), "2^62")) << four.status();
}

TEST_F(OpsTest, ImageOps) {
  in.AddNode("img", "Placeholder", {}, {{"dtype", MakeAttr(DT_UINT8)}});
  in.AddNode("f", "ImageToFloat", {"img"});
  in.AddNode("std", "PerImageStandardization", {"f"});
  in.AddNode("flip", "RandomFlipLeftRight", {"img"}, {{"T", MakeAttr(DT_UINT8)}, {"seed", MakeAttr(int64_t{3})}});
  in.AddConst("size", Tensor::FromVector<int64_t>({2, 2}));
  in.AddNode("crop", "RandomCrop", {"img", "size"}, {{"T", MakeAttr(DT_UINT8)}, {"seed", MakeAttr(int64_t{3})}});
  Create();
  std::vector<uint8_t> px(3 * 4);
  for (int i = 0; i < 12; ++i) px[i] = static_cast<uint8_t>(i * 20);
  Tensor img = Tensor::FromVector<uint8_t>(px, TensorShape({3, 4, 1}));
  auto r = Run({"f", "std"}, {}, {{"img", img}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FLOAT_EQ((*r)[0].data<float>()[11], 220.0f / 255);
  double mean = 0, sq = 0;
  for (int i = 0; i < 12; ++i) mean += (*r)[1].data<float>()[i] / 12;
  for (int i = 0; i < 12; ++i) sq += ((*r)[1].data<float>()[i] - mean) * ((*r)[1].data<float>()[i] - mean) / 12;
  EXPECT_NEAR(mean, 0, 1e-5);
  double sd = 0, fmean = 0;  // of the float image: values 20k/255
  for (int i = 0; i < 12; ++i) fmean += i * 20.0 / 255 / 12;
  for (int i = 0; i < 12; ++i) sd += (i * 20.0 / 255 - fmean) * (i * 20.0 / 255 - fmean) / 12;
  sd = std::sqrt(sd);
  const double adjusted = std::max(sd, 1 / std::sqrt(12.0));  // below 1/sqrt(n), that floor divides
  EXPECT_LT(sd, adjusted);
  EXPECT_NEAR(sq, sd * sd / (adjusted * adjusted), 1e-4);
  std::set<int> first_pixels;
  for (int i = 0; i < 20; ++i) {
    auto f = Run({"flip", "crop"}, {}, {{"img", img}});
    ASSERT_TRUE(f.ok()) << f.status();
    const uint8_t* p = (*f)[0].data<uint8_t>();
    first_pixels.insert(p[0]);
    EXPECT_TRUE((p[0] == 0 && p[3] == 60) || (p[0] == 60 && p[3] == 0)) << int(p[0]);
    const uint8_t* c = (*f)[1].data<uint8_t>();
    ASSERT_EQ((*f)[1].shape(), TensorShape({2, 2, 1}));
    EXPECT_EQ(c[1], c[0] + 20);
    EXPECT_EQ(c[2], c[0] + 80) << "a window of the image, row stride 4";
  }
  EXPECT_EQ(first_pixels.size(), 2u) << "both flipped and unflipped images appear";
  Tensor small = Tensor::FromVector<uint8_t>({1}, TensorShape({1, 1, 1}));
  EXPECT_TRUE(absl::IsInvalidArgument(Run({"crop"}, {}, {{"img", small}}).status()));
}

// AugmentImages: every output image is its input flipped or not and shifted
// by (dy, dx) within max_shift, zero where the shift leaves the image; the
// draws cover every flip and shift, are the same for the same step and
// others at another step (its high word included); flip_left_right alone
// never shifts; bad ranks and shifts are errors.
TEST_F(OpsTest, AugmentImagesFlipsAndShiftsEachImageByItsStepsDraws) {
  constexpr int64_t N = 64, H = 5, W = 6, C = 2, kShift = 2;
  std::vector<float> px;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t r = 0; r < H; ++r) {
      for (int64_t c = 0; c < W; ++c) {
        for (int64_t ch = 0; ch < C; ++ch) px.push_back(static_cast<float>(n * 1000 + r * 100 + c * 10 + ch + 1));
      }
    }
  }
  const Tensor images = Tensor::FromVector<float>(px, TensorShape({N, H, W, C}));
  in.AddNode("images", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
  in.AddNode("step", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT64)}});
  auto augment = [&](const std::string& name, bool flip, int64_t shift) {
    in.AddNode(name, "AugmentImages", {"images", "step"},
               {{"T", MakeAttr(DT_FLOAT)},
                {"flip_left_right", MakeAttr(flip)},
                {"max_shift", MakeAttr(shift)},
                {"seed", MakeAttr(int64_t{7})},
                {"seed2", MakeAttr(int64_t{11})}});
  };
  augment("both", true, kShift);
  augment("flip_only", true, 0);
  augment("too_far", false, H);
  Create();
  // The image n transformed by (flip, dy, dx), as the op's contract says.
  auto transformed = [&](int64_t n, bool flip, int64_t dy, int64_t dx) {
    std::vector<float> out;
    for (int64_t r = 0; r < H; ++r) {
      for (int64_t c = 0; c < W; ++c) {
        for (int64_t ch = 0; ch < C; ++ch) {
          const int64_t sr = r + dy, sc = c + dx;
          const bool inside = sr >= 0 && sr < H && sc >= 0 && sc < W;
          out.push_back(inside ? px[((n * H + sr) * W + (flip ? W - 1 - sc : sc)) * C + ch] : 0.0f);
        }
      }
    }
    return out;
  };
  // The (flip, dy, dx) within `shift` that gives image n of `result`, or none.
  auto find_transform = [&](const Tensor& result, int64_t n, int64_t shift) -> std::optional<std::array<int64_t, 3>> {
    const float* got = result.data<float>() + n * H * W * C;
    for (int flip = 0; flip < 2; ++flip) {
      for (int64_t dy = -shift; dy <= shift; ++dy) {
        for (int64_t dx = -shift; dx <= shift; ++dx) {
          const std::vector<float> want = transformed(n, flip == 1, dy, dx);
          if (std::equal(want.begin(), want.end(), got)) return std::array<int64_t, 3>{flip, dy, dx};
        }
      }
    }
    return std::nullopt;
  };
  auto run_at = [&](int64_t step) {
    auto r = Run({"both", "flip_only"}, {}, {{"images", images}, {"step", Tensor::Scalar<int64_t>(step)}});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : std::vector<Tensor>{};
  };
  std::set<int64_t> flips, dys, dxs;
  for (int64_t step : {int64_t{5}, int64_t{6}}) {
    const std::vector<Tensor> r = run_at(step);
    ASSERT_EQ(r.size(), 2u);
    ASSERT_EQ(r[0].shape(), images.shape());
    for (int64_t n = 0; n < N; ++n) {
      const auto t = find_transform(r[0], n, kShift);
      ASSERT_TRUE(t.has_value()) << "image " << n << " at step " << step << " is no flip and shift of its input";
      flips.insert((*t)[0]);
      dys.insert((*t)[1]);
      dxs.insert((*t)[2]);
      const auto f = find_transform(r[1], n, 0);
      ASSERT_TRUE(f.has_value()) << "flip_only image " << n << " is neither the input nor its mirror";
    }
  }
  EXPECT_EQ(flips.size(), 2u);
  EXPECT_EQ(dys.size(), static_cast<size_t>(2 * kShift + 1)) << "every vertical shift appears";
  EXPECT_EQ(dxs.size(), static_cast<size_t>(2 * kShift + 1)) << "every horizontal shift appears";
  auto same = [](const Tensor& a, const Tensor& b) {
    return std::equal(a.data<float>(), a.data<float>() + a.NumElements(), b.data<float>());
  };
  const std::vector<Tensor> at5 = run_at(5), again = run_at(5), at6 = run_at(6), high = run_at(5 + (int64_t{1} << 32));
  for (const std::vector<Tensor>* r : {&at5, &again, &at6, &high}) ASSERT_EQ(r->size(), 2u);
  EXPECT_TRUE(same(at5[0], again[0])) << "a step's draws are a function of the step";
  EXPECT_FALSE(same(at5[0], at6[0]));
  EXPECT_FALSE(same(at5[0], high[0])) << "the step's high word counts";
  auto far = Run({"too_far"}, {}, {{"images", images}, {"step", Tensor::Scalar<int64_t>(1)}});
  EXPECT_TRUE(absl::IsInvalidArgument(far.status())) << far.status();
  EXPECT_TRUE(absl::StrContains(far.status().message(), "max_shift 5")) << far.status();
  auto rank3 = Run({"flip_only"}, {},
                   {{"images", Tensor(DT_FLOAT, TensorShape({H, W, C}))}, {"step", Tensor::Scalar<int64_t>(1)}});
  EXPECT_TRUE(absl::IsInvalidArgument(rank3.status())) << rank3.status();
}

// ShuffleForEpoch: epoch e's order is SeededPermutation(seed, e) of the
// input, the same in every run, another for another epoch or seed; strings
// and numbers alike; anything but a vector is an error naming the node.
TEST_F(OpsTest, ShuffleForEpochIsAPermutationKeyedBySeedAndEpoch) {
  std::vector<int64_t> values;
  std::vector<tstring> names;
  for (int64_t i = 0; i < 12; ++i) {
    values.push_back(100 + i);
    names.push_back(absl::StrCat("file", i));
  }
  in.AddConst("values", Tensor::FromVector<int64_t>(values));
  in.AddConst("names", Tensor::FromVector<tstring>(names));
  in.AddConst("matrix", Tensor(DT_INT64, TensorShape({2, 2})));
  in.AddNode("epoch", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT64)}});
  in.AddNode("shuffled", "ShuffleForEpoch", {"values", "epoch"}, {{"T", MakeAttr(DT_INT64)}, {"seed", MakeAttr(int64_t{3})}});
  in.AddNode("shuffled_names", "ShuffleForEpoch", {"names", "epoch"},
             {{"T", MakeAttr(DT_STRING)}, {"seed", MakeAttr(int64_t{3})}});
  in.AddNode("other_seed", "ShuffleForEpoch", {"values", "epoch"}, {{"T", MakeAttr(DT_INT64)}, {"seed", MakeAttr(int64_t{4})}});
  in.AddNode("bad", "ShuffleForEpoch", {"matrix", "epoch"}, {{"T", MakeAttr(DT_INT64)}});
  Create();
  auto at = [&](const std::string& node, int64_t epoch) {
    auto out = Run({node}, {}, {{"epoch", Tensor::Scalar<int64_t>(epoch)}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0] : Tensor();
  };
  for (int64_t epoch : {0, 1, 7}) {
    const Tensor t = at("shuffled", epoch);
    const Tensor s = at("shuffled_names", epoch);
    const std::vector<int64_t> order = SeededPermutation(3, epoch, 12);
    ASSERT_EQ(t.NumElements(), 12);
    for (int64_t i = 0; i < 12; ++i) {
      EXPECT_EQ(t.data<int64_t>()[i], 100 + order[i]);
      EXPECT_EQ(std::string(s.data<tstring>()[i]), absl::StrCat("file", order[i]));
    }
  }
  auto as_vector = [](const Tensor& t) { return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + 12); };
  EXPECT_EQ(as_vector(at("shuffled", 1)), as_vector(at("shuffled", 1)));
  EXPECT_NE(as_vector(at("shuffled", 1)), as_vector(at("shuffled", 2)));
  EXPECT_NE(as_vector(at("shuffled", 1)), as_vector(at("other_seed", 1)));
  std::vector<int64_t> sorted = as_vector(at("shuffled", 5));
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, values);
  auto bad = Run({"bad"}, {}, {{"epoch", Tensor::Scalar<int64_t>(0)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "bad")) << bad.status();
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "must be a vector")) << bad.status();
}

}  // namespace
}  // namespace sluice
