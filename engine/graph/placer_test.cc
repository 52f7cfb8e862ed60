// Spec for the simple placer (whitepaper §4.3): partial device requests,
// colocation by ref edges, _class, shared_name and loop frames, kernel
// availability, soft placement, pinned assignments, the choice rule (lowest
// index; unconstrained nodes follow their first data input), and one error
// per kind of conflict naming the node and both clashing constraints.
#include "engine/graph/placer.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/device.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_kernel.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {

// A test device type "TEST" with kernels for Const (any dtype) and Identity
// of float only; and an op with no kernel anywhere.
class PlacerTestKernel : public OpKernel {
 public:
  explicit PlacerTestKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {}
  void Compute(OpKernelContext*) override {}
};
REGISTER_KERNEL_BUILDER(Name("Const").Device("TEST"), PlacerTestKernel);
REGISTER_KERNEL_BUILDER(Name("Identity").Device("TEST").TypeConstraint<float>("T"), PlacerTestKernel);
// Stand-ins for GPU kernels (this test links no CUDA): Const and Identity of
// float only.
REGISTER_KERNEL_BUILDER(Name("Const").Device(kDeviceGpu).TypeConstraint<float>("dtype"), PlacerTestKernel);
REGISTER_KERNEL_BUILDER(Name("Identity").Device(kDeviceGpu).TypeConstraint<float>("T"), PlacerTestKernel);
REGISTER_OP("PlacerTestNoKernel").Output("y: float");

namespace {

using ::testing::HasSubstr;

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr char kTest0[] = "/job:localhost/replica:0/task:0/device:TEST:0";
constexpr char kGpu0[] = "/job:localhost/replica:0/task:0/device:GPU:0";
constexpr char kPs0[] = "/job:ps/replica:0/task:0/device:CPU:0";

class PlacerTest : public ::testing::Test {
 protected:
  // Devices named in order; the type is the name's.
  void UseDevices(const std::vector<std::string>& names) {
    owned_.clear();
    std::vector<Device*> raw;
    for (const std::string& name : names) {
      auto parsed = ParseDeviceName(name);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      owned_.push_back(std::make_unique<Device>(name, parsed->type, CpuAllocator(), 1));
      raw.push_back(owned_.back().get());
    }
    set_ = std::make_unique<DeviceSet>(raw);
  }

  void SetDevice(const std::string& node, const std::string& device) { b_.FindNode(node)->set_device(device); }
  void SetClass(const std::string& node, const std::vector<std::string>& entries) {
    (*b_.FindNode(node)->mutable_attr())["_class"] = MakeAttr(entries);
  }

  // Builds the graph from b_ and places it.
  absl::Status Run(bool soft = false, const absl::flat_hash_map<std::string, int>* pinned = nullptr) {
    if (set_ == nullptr) UseDevices({kCpu0, kCpu1});
    GraphConstructorOptions construct;
    construct.infer_shapes = false;
    auto g = GraphFromGraphDef(b_.graph(), construct);
    EXPECT_TRUE(g.ok()) << g.status();
    if (!g.ok()) return g.status();
    graph_ = std::move(g).value();
    PlacementOptions options;
    options.devices = set_.get();
    options.allow_soft_placement = soft;
    options.pinned = pinned;
    options.device_indices = &indices_;
    conflict_ = PlacementConflict();
    return Place(options, graph_.get(), &conflict_);
  }

  std::string DeviceOf(const std::string& node) {
    Node* n = graph_->FindNode(node);
    EXPECT_NE(n, nullptr) << node;
    return n == nullptr ? "" : n->assigned_device();
  }

  // v = VariableV2; init = Assign(v, init_value); apply =
  // ApplyGradientDescent(v, lr, grad); read = Identity(v).
  void VariableAndUsers() {
    b_.Variable("v", DT_FLOAT, TensorShape({}));
    b_.Const("init_value", Tensor::Scalar<float>(1));
    b_.Assign("init", "v", "init_value", DT_FLOAT);
    b_.Const("lr", Tensor::Scalar<float>(0.1f));
    b_.Const("grad", Tensor::Scalar<float>(2));
    b_.Node("apply", "ApplyGradientDescent", {"v", "lr", "grad"}, {{"T", MakeAttr(DT_FLOAT)}});
    b_.Identity("read", "v", DT_FLOAT);
  }

  // A loop in frame `frame` (i = 0; while (i < 3) i += 1), node names prefixed with `p`.
  void Loop(const std::string& p, const std::string& frame) {
    b_.Const(p + "zero", Tensor::Scalar<int32_t>(0));
    b_.Const(p + "limit", Tensor::Scalar<int32_t>(3));
    b_.Const(p + "one", Tensor::Scalar<int32_t>(1));
    b_.Enter(p + "i_e", p + "zero", DT_INT32, frame);
    b_.Enter(p + "limit_e", p + "limit", DT_INT32, frame, true);
    b_.Enter(p + "one_e", p + "one", DT_INT32, frame, true);
    b_.Merge(p + "i_m", {p + "i_e", p + "i_next"}, DT_INT32);
    b_.LoopCond(p + "cond", b_.Binary("Less", p + "less", p + "i_m", p + "limit_e", DT_INT32));
    b_.Switch(p + "i_sw", p + "i_m", p + "cond", DT_INT32);
    b_.Exit(p + "i_exit", p + "i_sw:0", DT_INT32);
    b_.Identity(p + "body", p + "i_sw:1", DT_INT32);
    b_.NextIteration(p + "i_next", b_.Binary("Add", p + "i_new", p + "body", p + "one_e", DT_INT32), DT_INT32);
  }
  std::vector<std::string> LoopFrameNodes(const std::string& p) {
    std::vector<std::string> names;
    for (const char* n : {"i_e", "limit_e", "one_e", "i_m", "less", "cond", "i_sw", "i_exit", "body", "i_new", "i_next"}) {
      names.push_back(p + n);
    }
    return names;
  }

  GraphDefBuilder b_;
  std::vector<std::unique_ptr<Device>> owned_;
  std::unique_ptr<DeviceSet> set_;
  std::unique_ptr<Graph> graph_;
  std::vector<int> indices_;
  PlacementConflict conflict_;
};

// ---- Requests and the choice rule ----

TEST_F(PlacerTest, PartialNamesPickTheLowestMatchingDevice) {
  UseDevices({kCpu0, kCpu1, kPs0});
  b_.Const("any", Tensor::Scalar<float>(1));
  b_.Const("ps", Tensor::Scalar<float>(1));
  SetDevice("ps", "/job:ps");
  b_.Const("second_cpu", Tensor::Scalar<float>(1));
  SetDevice("second_cpu", "/device:CPU:1");
  b_.Const("legacy", Tensor::Scalar<float>(1));
  SetDevice("legacy", "/task:0/cpu:1");
  b_.Const("any_cpu", Tensor::Scalar<float>(1));
  SetDevice("any_cpu", "/device:CPU:*");
  b_.Const("job_and_id", Tensor::Scalar<float>(1));
  SetDevice("job_and_id", "/job:ps/device:CPU:0");
  b_.Const("full", Tensor::Scalar<float>(1));
  SetDevice("full", kCpu1);
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(DeviceOf("any"), kCpu0);
  EXPECT_EQ(DeviceOf("ps"), kPs0);
  EXPECT_EQ(DeviceOf("second_cpu"), kCpu1);
  EXPECT_EQ(DeviceOf("legacy"), kCpu1);
  EXPECT_EQ(DeviceOf("any_cpu"), kCpu0);
  EXPECT_EQ(DeviceOf("job_and_id"), kPs0);
  EXPECT_EQ(DeviceOf("full"), kCpu1);
}

TEST_F(PlacerTest, UnconstrainedNodesFollowTheirFirstDataInput) {
  b_.Const("a", Tensor::Scalar<float>(1));
  SetDevice("a", "/device:CPU:1");
  b_.Const("b", Tensor::Scalar<float>(2));
  b_.Identity("a_next", "a", DT_FLOAT);
  b_.Binary("Add", "sum_ab", "a_next", "b", DT_FLOAT);  // first input on CPU:1
  b_.Binary("Add", "sum_ba", "b", "a_next", DT_FLOAT);  // first input on CPU:0
  b_.Identity("pinned_back", "a_next", DT_FLOAT);
  SetDevice("pinned_back", "/device:CPU:0");
  b_.NoOp("after", {"a_next"});  // control inputs do not count
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(DeviceOf("a"), kCpu1);
  EXPECT_EQ(DeviceOf("b"), kCpu0);
  EXPECT_EQ(DeviceOf("a_next"), kCpu1);
  EXPECT_EQ(DeviceOf("sum_ab"), kCpu1);
  EXPECT_EQ(DeviceOf("sum_ba"), kCpu0);
  EXPECT_EQ(DeviceOf("pinned_back"), kCpu0);
  EXPECT_EQ(DeviceOf("after"), kCpu0);
}

// With a GPU, every node that has a GPU kernel goes there, even when its input
// comes from the CPU; nodes without one stay on the CPU (listed first).
TEST_F(PlacerTest, AGpuTakesEveryNodeWithAGpuKernel) {
  UseDevices({kCpu0, kGpu0});
  b_.Const("c", Tensor::Scalar<float>(1));
  b_.Identity("on_gpu", "c", DT_FLOAT);
  b_.Const("cpu_only", Tensor::Scalar<float>(1));
  SetDevice("cpu_only", "/device:CPU:0");
  b_.Identity("after_cpu", "cpu_only", DT_FLOAT);
  b_.Const("ci", Tensor::Scalar<int32_t>(1));
  b_.Identity("int_identity", "ci", DT_INT32);
  absl::Status s = Run();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(DeviceOf("c"), kGpu0);
  EXPECT_EQ(DeviceOf("on_gpu"), kGpu0);
  EXPECT_EQ(DeviceOf("cpu_only"), kCpu0);
  EXPECT_EQ(DeviceOf("ci"), kCpu0);
  EXPECT_EQ(DeviceOf("after_cpu"), kGpu0);
  EXPECT_EQ(DeviceOf("int_identity"), kCpu0);
  // A request still wins.
  SetDevice("on_gpu", "/device:CPU:0");
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(DeviceOf("on_gpu"), kCpu0);
}

TEST_F(PlacerTest, DeviceIndicesMatchTheAssignedNames) {
  VariableAndUsers();
  SetDevice("v", "/device:CPU:1");
  ASSERT_TRUE(Run().ok());
  ASSERT_EQ(static_cast<int>(indices_.size()), graph_->num_node_ids());
  for (Node* n : graph_->nodes()) {
    ASSERT_GE(indices_[n->id()], 0) << n->name();
    EXPECT_EQ(set_->name(indices_[n->id()]), n->assigned_device()) << n->name();
  }
}

TEST_F(PlacerTest, LongChainFollowsItsHead) {
  constexpr int kLength = 100000;
  b_.Const("n0", Tensor::Scalar<float>(1));
  SetDevice("n0", "/device:CPU:1");
  for (int i = 1; i < kLength; ++i) {
    b_.Identity(absl::StrCat("n", i), absl::StrCat("n", i - 1), DT_FLOAT);
  }
  ASSERT_TRUE(Run().ok());
  int on_cpu1 = 0;
  for (Node* n : graph_->nodes()) on_cpu1 += n->assigned_device() == kCpu1;
  EXPECT_EQ(on_cpu1, kLength);
}

TEST_F(PlacerTest, SamePlacementEveryRun) {
  UseDevices({kCpu0, kCpu1, kPs0});
  VariableAndUsers();
  SetDevice("v", "/job:ps");
  Loop("l/", "loop");
  SetDevice("l/body", "/device:CPU:1");
  ASSERT_TRUE(Run().ok());
  std::vector<int> first = indices_;
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(Run().ok());
    EXPECT_EQ(indices_, first);
  }
}

// ---- Colocation ----

TEST_F(PlacerTest, RefEdgesKeepAVariableWithItsAssignApplyAndRead) {
  VariableAndUsers();
  SetDevice("v", "/device:CPU:1");
  ASSERT_TRUE(Run().ok());
  for (const char* n : {"v", "init", "apply", "read"}) EXPECT_EQ(DeviceOf(n), kCpu1) << n;
  // Their other inputs are not dragged along.
  for (const char* n : {"init_value", "lr", "grad"}) EXPECT_EQ(DeviceOf(n), kCpu0) << n;
}

TEST_F(PlacerTest, ARequestOnARefConsumerMovesTheVariable) {
  VariableAndUsers();
  SetDevice("apply", "/device:CPU:1");
  ASSERT_TRUE(Run().ok());
  for (const char* n : {"v", "init", "apply", "read"}) EXPECT_EQ(DeviceOf(n), kCpu1) << n;
}

TEST_F(PlacerTest, AReaderOfAVariableMayRunOnAnotherDevice) {
  // Only a ref input ties a node to the variable: a value reader (the Identity
  // here, a MatMul on a worker in general) may be pinned elsewhere.
  VariableAndUsers();
  SetDevice("v", "/device:CPU:1");
  SetDevice("read", "/device:CPU:0");
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(DeviceOf("read"), kCpu0);
  for (const char* n : {"v", "init", "apply"}) EXPECT_EQ(DeviceOf(n), kCpu1) << n;
}

// h = VarHandleOp; init = AssignVariableOp(h, init_value); read =
// ReadVariableOp(h); apply = ResourceApplyGradientDescent(h, lr, grad).
void ResourceVariableAndUsers(GraphDefBuilder& b) {
  b.Node("h", "VarHandleOp", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({}))}});
  b.Const("init_value", Tensor::Scalar<float>(1));
  b.Node("init", "AssignVariableOp", {"h", "init_value"}, {{"dtype", MakeAttr(DT_FLOAT)}});
  b.Node("read", "ReadVariableOp", {"h"}, {{"dtype", MakeAttr(DT_FLOAT)}});
  b.Const("lr", Tensor::Scalar<float>(0.1f));
  b.Const("grad", Tensor::Scalar<float>(2));
  b.Node("apply", "ResourceApplyGradientDescent", {"h", "lr", "grad"}, {{"T", MakeAttr(DT_FLOAT)}});
}

TEST_F(PlacerTest, ResourceEdgesKeepAHandleWithItsReadersAndWriters) {
  ResourceVariableAndUsers(b_);
  SetDevice("h", "/device:CPU:1");
  ASSERT_TRUE(Run().ok());
  for (const char* n : {"h", "init", "read", "apply"}) EXPECT_EQ(DeviceOf(n), kCpu1) << n;
  for (const char* n : {"init_value", "lr", "grad"}) EXPECT_EQ(DeviceOf(n), kCpu0) << n;
}

TEST_F(PlacerTest, ARequestOnAResourceConsumerMovesTheHandle) {
  ResourceVariableAndUsers(b_);
  SetDevice("read", "/device:CPU:1");
  ASSERT_TRUE(Run().ok());
  for (const char* n : {"h", "init", "read", "apply"}) EXPECT_EQ(DeviceOf(n), kCpu1) << n;
}

TEST_F(PlacerTest, ClassColocatesWithTheNamedNode) {
  b_.Const("anchor", Tensor::Scalar<float>(1));
  SetDevice("anchor", "/device:CPU:1");
  b_.Const("listed", Tensor::Scalar<float>(2));
  SetClass("listed", {"loc:@anchor"});
  b_.Const("single", Tensor::Scalar<float>(3));
  (*b_.FindNode("single")->mutable_attr())["_class"] = MakeAttr("loc:@anchor");
  b_.Const("other_class", Tensor::Scalar<float>(4));
  SetClass("other_class", {"some_class_name"});  // not "loc:@": ignored
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(DeviceOf("listed"), kCpu1);
  EXPECT_EQ(DeviceOf("single"), kCpu1);
  EXPECT_EQ(DeviceOf("other_class"), kCpu0);
}

TEST_F(PlacerTest, SharedNameColocatesVariablesOfOneResource) {
  b_.Variable("w", DT_FLOAT, TensorShape({}));
  SetDevice("w", "/device:CPU:1");
  // The eval tower's copy names w through shared_name.
  b_.Variable("eval/w", DT_FLOAT, TensorShape({}));
  (*b_.FindNode("eval/w")->mutable_attr())["shared_name"] = MakeAttr("w");
  // Same shared_name in another container: another resource.
  b_.Variable("other_container", DT_FLOAT, TensorShape({}), "c2");
  (*b_.FindNode("other_container")->mutable_attr())["shared_name"] = MakeAttr("w");
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(DeviceOf("eval/w"), kCpu1);
  EXPECT_EQ(DeviceOf("other_container"), kCpu0);
}

TEST_F(PlacerTest, ALoopFrameStaysOnOneDevice) {
  Loop("l/", "loop");
  SetDevice("l/body", "/device:CPU:1");
  ASSERT_TRUE(Run().ok());
  for (const std::string& n : LoopFrameNodes("l/")) EXPECT_EQ(DeviceOf(n), kCpu1) << n;
  // Root-frame inputs of the loop are free.
  for (const char* n : {"l/zero", "l/limit", "l/one"}) EXPECT_EQ(DeviceOf(n), kCpu0) << n;
}

TEST_F(PlacerTest, ANestedLoopStaysWithItsEnclosingLoop) {
  Loop("outer/", "outer");
  // An inner loop whose inputs come from the outer body.
  b_.Identity("inner_seed", "outer/body", DT_INT32);
  b_.Enter("inner/i_e", "inner_seed", DT_INT32, "inner");
  b_.Merge("inner/i_m", {"inner/i_e", "inner/i_next"}, DT_INT32);
  b_.LoopCond("inner/cond", b_.Binary("Less", "inner/less", "inner/i_m", "inner/i_m", DT_INT32));
  b_.Switch("inner/i_sw", "inner/i_m", "inner/cond", DT_INT32);
  b_.Exit("inner/i_exit", "inner/i_sw:0", DT_INT32);
  b_.NextIteration("inner/i_next", "inner/i_sw:1", DT_INT32);
  SetDevice("inner/i_next", "/device:CPU:1");
  ASSERT_TRUE(Run().ok());
  for (const std::string& n : LoopFrameNodes("outer/")) EXPECT_EQ(DeviceOf(n), kCpu1) << n;
  for (const char* n : {"inner_seed", "inner/i_e", "inner/i_m", "inner/i_exit"}) EXPECT_EQ(DeviceOf(n), kCpu1) << n;
}

// ---- Kernels and soft placement ----

TEST_F(PlacerTest, ANodeGoesOnlyWhereItsKernelExists) {
  UseDevices({kTest0, kCpu0});
  b_.Const("c", Tensor::Scalar<float>(1));       // kernels on TEST and CPU: lowest index
  b_.Identity("f", "c", DT_FLOAT);               // follows c onto TEST
  b_.Binary("Add", "add", "f", "f", DT_FLOAT);   // no TEST kernel: CPU despite its input
  b_.Const("i", Tensor::Scalar<int32_t>(1));
  b_.Identity("int_identity", "i", DT_INT32);    // TEST has Identity for float only
  b_.Const("later", Tensor::Scalar<float>(1));
  SetDevice("later", "/device:CPU:*");
  b_.Identity("follows_cpu", "later", DT_FLOAT); // input on CPU, kernel there too
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(DeviceOf("c"), kTest0);
  EXPECT_EQ(DeviceOf("f"), kTest0);
  EXPECT_EQ(DeviceOf("add"), kCpu0);
  EXPECT_EQ(DeviceOf("i"), kTest0);
  EXPECT_EQ(DeviceOf("int_identity"), kCpu0);
  EXPECT_EQ(DeviceOf("follows_cpu"), kCpu0);
}

TEST_F(PlacerTest, SoftPlacementMovesAnAbsentGpuRequestToACpu) {
  b_.Const("c", Tensor::Scalar<float>(1));
  SetDevice("c", "/device:GPU:0");
  b_.Const("keeps_job", Tensor::Scalar<float>(1));
  SetDevice("keeps_job", "/job:localhost/device:GPU:1");
  absl::Status hard = Run(/*soft=*/false);
  EXPECT_EQ(hard.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(hard.message(), HasSubstr("node 'c'"));
  EXPECT_THAT(hard.message(), HasSubstr("device '/device:GPU:0' matches no device"));
  EXPECT_THAT(hard.message(), HasSubstr("did you mean '/device:CPU:0'?"));
  ASSERT_TRUE(Run(/*soft=*/true).ok());
  EXPECT_EQ(DeviceOf("c"), kCpu0);
  EXPECT_EQ(DeviceOf("keeps_job"), kCpu0);
}

TEST_F(PlacerTest, SoftPlacementMovesAGpuRequestWithoutAGpuKernelToACpu) {
  UseDevices({kCpu0, kGpu0});
  b_.Const("c", Tensor::Scalar<int32_t>(1));  // no GPU kernel for an int32 Const here
  SetDevice("c", "/device:GPU:0");
  absl::Status hard = Run(/*soft=*/false);
  EXPECT_EQ(hard.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(hard.message(), HasSubstr("node 'c'"));
  EXPECT_THAT(hard.message(), HasSubstr("kernels for op 'Const' (CPU)"));
  EXPECT_THAT(hard.message(), HasSubstr("allow_soft_placement"));
  EXPECT_EQ(conflict_.node, "c");
  EXPECT_EQ(conflict_.constraint, "device '/device:GPU:0'");
  EXPECT_EQ(conflict_.other_node, "");
  EXPECT_EQ(conflict_.other_constraint, "kernels for op 'Const' (CPU)");
  ASSERT_TRUE(Run(/*soft=*/true).ok());
  EXPECT_EQ(DeviceOf("c"), kCpu0);
}

TEST_F(PlacerTest, SoftPlacementDoesNotInventAJob) {
  b_.Const("c", Tensor::Scalar<float>(1));
  SetDevice("c", "/job:ps/device:GPU:0");
  absl::Status s = Run(/*soft=*/true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("device '/job:ps/device:GPU:0' matches no device"));
}

// ---- Pinned ----

TEST_F(PlacerTest, PinnedAssignmentsAreKeptAndDragTheirGroup) {
  VariableAndUsers();
  absl::flat_hash_map<std::string, int> pinned = {{"v", 1}, {"not_in_graph", 0}};
  ASSERT_TRUE(Run(false, &pinned).ok());
  for (const char* n : {"v", "init", "apply", "read"}) EXPECT_EQ(DeviceOf(n), kCpu1) << n;
  EXPECT_EQ(DeviceOf("lr"), kCpu0);
}

TEST_F(PlacerTest, PinnedConflictsAreErrors) {
  b_.Const("c", Tensor::Scalar<float>(1));
  SetDevice("c", "/device:CPU:0");
  absl::flat_hash_map<std::string, int> pinned = {{"c", 1}};
  absl::Status s = Run(false, &pinned);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'c'"));
  EXPECT_THAT(s.message(), HasSubstr(kCpu1));
  EXPECT_THAT(s.message(), HasSubstr("device '/device:CPU:0'"));
  EXPECT_EQ(conflict_.node, "c");
  EXPECT_EQ(conflict_.constraint, absl::StrCat("pinned to '", kCpu1, "'"));
  EXPECT_EQ(conflict_.other_constraint, "device '/device:CPU:0'");

  pinned = {{"c", 2}};
  s = Run(false, &pinned);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'c' (op Const): pinned to device index 2, but the set has 2 devices"));
}

// ---- Errors ----

// Every error leaves the assignments as they were.
class PlacerErrorTest : public PlacerTest {
 protected:
  absl::Status RunExpectingError(bool soft = false) {
    absl::Status s = Run(soft);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    for (Node* n : graph_->nodes()) EXPECT_EQ(n->assigned_device(), n->requested_device()) << n->name();
    return s;
  }
};

TEST_F(PlacerErrorTest, MalformedDeviceNamesTheNodeAndThePart) {
  b_.Const("c", Tensor::Scalar<float>(1));
  SetDevice("c", "/job:ps/tsk:1");
  absl::Status s = RunExpectingError();
  EXPECT_THAT(s.message(), HasSubstr("node 'c' (op Const): device '/job:ps/tsk:1': unknown part 'tsk' (did you mean "
                                     "'task'?)"));
  EXPECT_EQ(conflict_.node, "c");
  EXPECT_EQ(conflict_.constraint, "device '/job:ps/tsk:1'");
}

TEST_F(PlacerErrorTest, UnknownDeviceSuggestsOneOfTheSet) {
  b_.Const("c", Tensor::Scalar<float>(1));
  SetDevice("c", "/device:CPU:5");
  absl::Status s = RunExpectingError();
  EXPECT_THAT(s.message(), HasSubstr("node 'c' (op Const): device '/device:CPU:5' matches no device of the set (did "
                                     "you mean '/device:CPU:0'?)"));
  EXPECT_THAT(s.message(), HasSubstr(kCpu1));
  EXPECT_EQ(conflict_.constraint, "device '/device:CPU:5'");
  EXPECT_EQ(conflict_.other_node, "");
}

TEST_F(PlacerErrorTest, NoKernelOnAnyDevice) {
  b_.Node("nk", "PlacerTestNoKernel");
  absl::Status s = RunExpectingError(/*soft=*/true);
  EXPECT_THAT(s.message(), HasSubstr("node 'nk' (op PlacerTestNoKernel): no device of the set has a kernel"));
  EXPECT_EQ(conflict_.constraint, "kernels for op 'PlacerTestNoKernel' (none)");
}

TEST_F(PlacerErrorTest, RefEdgeConflictNamesBothDevices) {
  VariableAndUsers();
  SetDevice("v", "/device:CPU:0");
  SetDevice("init", "/device:CPU:1");
  absl::Status s = RunExpectingError(/*soft=*/true);
  EXPECT_THAT(s.message(), HasSubstr("node 'init' (op Assign): cannot satisfy both its device '/device:CPU:1' and "
                                     "the device '/device:CPU:0' of node 'v'"));
  EXPECT_THAT(s.message(), HasSubstr("'v' -> 'init' is a ref edge"));
  EXPECT_EQ(conflict_.node, "init");
  EXPECT_EQ(conflict_.constraint, "device '/device:CPU:1'");
  EXPECT_EQ(conflict_.other_node, "v");
  EXPECT_EQ(conflict_.other_constraint, "device '/device:CPU:0'");
  EXPECT_EQ(conflict_.colocation, "colocation with 'v' (ref edge)");
}

TEST_F(PlacerErrorTest, ResourceEdgeConflictNamesBothDevices) {
  ResourceVariableAndUsers(b_);
  SetDevice("h", "/device:CPU:0");
  SetDevice("apply", "/device:CPU:1");
  absl::Status s = RunExpectingError(/*soft=*/true);
  EXPECT_THAT(s.message(), HasSubstr("'h' -> 'apply' is a resource edge"));
  EXPECT_EQ(conflict_.colocation, "colocation with 'h' (resource edge)");
}

TEST_F(PlacerErrorTest, RefConflictThroughAChainNamesEveryLink) {
  VariableAndUsers();
  SetDevice("init", "/device:CPU:0");
  b_.Const("x", Tensor::Scalar<float>(1));
  SetClass("x", {"loc:@apply"});
  SetDevice("x", "/device:CPU:1");
  absl::Status s = RunExpectingError();
  EXPECT_THAT(s.message(), HasSubstr("'x' has _class 'loc:@apply'"));
  EXPECT_THAT(s.message(), HasSubstr("'v' -> 'apply' is a ref edge"));
  EXPECT_THAT(s.message(), HasSubstr("'v' -> 'init' is a ref edge"));
  EXPECT_EQ(conflict_.node, "x");
  EXPECT_EQ(conflict_.other_node, "init");
  EXPECT_EQ(conflict_.colocation, "colocation with 'apply' (_class)");
}

TEST_F(PlacerErrorTest, ClassConflictWithTheNodesOwnDevice) {
  b_.Variable("fc1/kernel", DT_FLOAT, TensorShape({}));
  SetDevice("fc1/kernel", "/device:CPU:0");
  b_.Const("raw", Tensor::Scalar<float>(1));
  SetDevice("raw", "/device:CPU:1");
  SetClass("raw", {"loc:@fc1/kernel"});
  absl::Status s = RunExpectingError();
  EXPECT_THAT(s.message(), HasSubstr("node 'raw' (op Const): cannot satisfy both its device '/device:CPU:1' and "
                                     "the device '/device:CPU:0' of node 'fc1/kernel'"));
  EXPECT_THAT(s.message(), HasSubstr("'raw' has _class 'loc:@fc1/kernel'"));
  EXPECT_EQ(conflict_.colocation, "colocation with 'fc1/kernel' (_class)");
  EXPECT_EQ(conflict_.other_constraint, "device '/device:CPU:0'");
}

TEST_F(PlacerErrorTest, ClassNamingNoNodeSuggestsOne) {
  b_.Variable("fc1/kernel", DT_FLOAT, TensorShape({}));
  b_.Const("raw", Tensor::Scalar<float>(1));
  SetClass("raw", {"loc:@fc1/kernal"});
  absl::Status s = RunExpectingError();
  EXPECT_THAT(s.message(), HasSubstr("node 'raw' (op Const): _class 'loc:@fc1/kernal' names no node of the graph (did "
                                     "you mean 'fc1/kernel'?)"));
  EXPECT_EQ(conflict_.node, "raw");
  EXPECT_EQ(conflict_.constraint, "colocation with 'fc1/kernal' (_class)");
}

TEST_F(PlacerErrorTest, ClassOfTheWrongKind) {
  b_.Const("raw", Tensor::Scalar<float>(1));
  (*b_.FindNode("raw")->mutable_attr())["_class"] = MakeAttr(3);
  absl::Status s = RunExpectingError();
  EXPECT_THAT(s.message(), HasSubstr("node 'raw' (op Const): attr '_class' must be a string or a list of strings"));
}

TEST_F(PlacerErrorTest, SharedNameConflict) {
  b_.Variable("fc1/kernel", DT_FLOAT, TensorShape({}));
  SetDevice("fc1/kernel", "/device:CPU:0");
  b_.Variable("raw_var", DT_FLOAT, TensorShape({}));
  (*b_.FindNode("raw_var")->mutable_attr())["shared_name"] = MakeAttr("fc1/kernel");
  SetDevice("raw_var", "/device:CPU:1");
  absl::Status s = RunExpectingError();
  EXPECT_THAT(s.message(), HasSubstr("node 'raw_var' (op VariableV2): cannot satisfy both its device '/device:CPU:1' "
                                     "and the device '/device:CPU:0' of node 'fc1/kernel'"));
  EXPECT_THAT(s.message(), HasSubstr("share resource 'fc1/kernel' (shared_name)"));
  EXPECT_EQ(conflict_.colocation, "colocation with 'fc1/kernel' (shared_name)");
}

TEST_F(PlacerErrorTest, LoopFrameConflict) {
  Loop("l/", "loop");
  SetDevice("l/i_m", "/device:CPU:0");
  SetDevice("l/body", "/device:CPU:1");
  absl::Status s = RunExpectingError();
  EXPECT_THAT(s.message(), HasSubstr("node 'l/body' (op Identity): cannot satisfy both its device '/device:CPU:1' "
                                     "and the device '/device:CPU:0' of node 'l/i_m'"));
  EXPECT_THAT(s.message(), HasSubstr("run in loop frame 'loop'"));
  EXPECT_EQ(conflict_.node, "l/body");
  EXPECT_EQ(conflict_.other_node, "l/i_m");
  EXPECT_THAT(conflict_.colocation, HasSubstr("(loop frame 'loop')"));
}

TEST_F(PlacerErrorTest, KernelConflictInAGroup) {
  UseDevices({kCpu0, kTest0});
  b_.Const("c", Tensor::Scalar<float>(1));
  b_.Identity("on_test", "c", DT_FLOAT);
  SetDevice("on_test", "/device:TEST:0");
  b_.Binary("Add", "add", "c", "c", DT_FLOAT);  // CPU kernel only
  SetClass("add", {"loc:@on_test"});
  absl::Status s = RunExpectingError(/*soft=*/true);
  EXPECT_THAT(s.message(), HasSubstr("node 'add' (op Add): cannot satisfy both its kernels for op 'Add' (CPU) "
                                     "and the device '/device:TEST:0' of node 'on_test'"));
  EXPECT_EQ(conflict_.constraint, "kernels for op 'Add' (CPU)");
  EXPECT_EQ(conflict_.other_constraint, "device '/device:TEST:0'");
}

}  // namespace
}  // namespace sluice
