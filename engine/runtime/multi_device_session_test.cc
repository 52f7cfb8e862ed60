// A session over several virtual CPU devices of one process: the graph is
// placed (requested devices, variables kept with their Assign/AssignAdd),
// each Run signature is cut into per-device partitions joined by Send/Recv,
// the results equal the one-device run, placement is stable across
// signatures and Extend, an error on one device aborts the whole step with
// that error (and the next step works), and step stats come per device.
#include <set>

#include "absl/strings/match.h"
#include "engine/framework/local_devices.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {

// Fails when its input is negative (an error raised on one device).
REGISTER_OP("TestFailIfNegative").Input("x: float").Output("y: float").SetShapeFn(shape_fns::Unchanged);
class TestFailIfNegativeOp : public OpKernel {
 public:
  explicit TestFailIfNegativeOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}
  void Compute(OpKernelContext* ctx) override {
    if (ctx->input(0).scalar<float>() < 0) {
      ctx->SetStatus(absl::FailedPreconditionError("negative input"));
      return;
    }
    ctx->set_output(0, ctx->input(0));
  }
};
REGISTER_KERNEL_BUILDER(Name("TestFailIfNegative").Device(kDeviceCpu), TestFailIfNegativeOp);

namespace {

const std::string kCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
const std::string kCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";

void SetDevice(GraphDef* g, const std::string& node, const std::string& device) {
  for (NodeDef& n : *g->mutable_node()) {
    if (n.name() == node) {
      n.set_device(device);
      return;
    }
  }
  ADD_FAILURE() << "no node " << node;
}

std::unique_ptr<Session> MakeSession(DeviceMgr* mgr, const GraphDef& graph, bool fold_constants = false) {
  SessionOptions options;
  options.device_mgr = mgr;
  options.inter_op_threads = 1;  // two executors must still make progress on one thread
  // The graphs here compute from Consts to show where nodes run: constant
  // folding would compute them when the step is built instead.
  options.enable_constant_folding = fold_constants;
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  absl::Status s = (*session)->Create(graph);
  EXPECT_TRUE(s.ok()) << s;
  return std::move(session).value();
}

// Figure 5's graph, with b and c on CPU:1 and a, d, e on CPU:0 (f, unconstrained,
// follows its input c to CPU:1).
GraphDef Figure5(bool split) {
  GraphDefBuilder b;
  std::string a = b.Const("a", Tensor::Scalar<float>(1));
  std::string bb = b.Binary("Add", "b", a, a, DT_FLOAT);
  std::string c = b.Binary("Mul", "c", bb, bb, DT_FLOAT);
  std::string d = b.Binary("Add", "d", bb, a, DT_FLOAT);
  b.Binary("Mul", "e", d, c, DT_FLOAT);
  b.Binary("Add", "f", c, c, DT_FLOAT);
  GraphDef g = b.graph();
  if (split) {
    SetDevice(&g, "b", "/device:CPU:1");
    SetDevice(&g, "c", "/device:CPU:1");
    SetDevice(&g, "a", "/device:CPU:0");
    SetDevice(&g, "d", "/device:CPU:0");
    SetDevice(&g, "e", "/device:CPU:0");  // reads c from CPU:1
  }
  return g;
}

TEST(MultiDeviceSession, SplitGraphGivesTheOneDeviceResultsWithFeedsAndFetchesOnBothDevices) {
  auto one = NewCpuDeviceMgr(1, 1);
  auto two = NewCpuDeviceMgr(2, 1);
  auto s1 = MakeSession(one.get(), Figure5(false));
  auto s2 = MakeSession(two.get(), Figure5(true));
  for (const auto& feeds : std::vector<std::vector<std::pair<std::string, Tensor>>>{
           {}, {{"b", Tensor::Scalar<float>(3)}}, {{"a", Tensor::Scalar<float>(-2)}}}) {
    std::vector<Tensor> out1, out2;
    ASSERT_TRUE(s1->Run(feeds, {"e", "f", "b"}, {}, &out1).ok());
    RunOptions options;
    options.collect_step_stats = true;
    RunMetadata md;
    absl::Status s = s2->Run(options, feeds, {"e", "f", "b"}, {}, &out2, &md);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(out1.size(), 3u);
    ASSERT_EQ(out2.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(out1[i].scalar<float>(), out2[i].scalar<float>()) << i;
    // Stats by device: c ran on CPU:1, e (which reads c) on CPU:0, and
    // Send/Recv nodes carried c across.
    std::map<std::string, std::set<std::string>> ran;
    for (const DeviceStepStats& d : md.device_step_stats) {
      for (const NodeExecStats& n : d.nodes) ran[d.device].insert(n.op == "_Send" || n.op == "_Recv" ? n.op : n.node_name);
    }
    EXPECT_EQ(md.device_step_stats.size(), 2u);
    EXPECT_EQ(ran[kCpu1].count("c"), 1u);
    EXPECT_EQ(ran[kCpu0].count("e"), 1u);
    EXPECT_EQ(ran[kCpu0].count("_Recv"), 1u);
    EXPECT_EQ(ran[kCpu1].count("_Send"), 1u);
  }
  // The 1-device session runs no Send/Recv pair beyond the feeds and fetches.
}

// A resource variable's handle on CPU:1: its readers and writers run there
// (resource edges), and a consumer of the value read on CPU:0 receives it
// through Send/Recv.
// With constant folding the split graph's constant nodes become Consts on
// their own devices: the same results, fewer nodes run.
TEST(MultiDeviceSession, FoldedConstantsKeepTheirDevicesAndResults) {
  auto two = NewCpuDeviceMgr(2, 1);
  auto plain = MakeSession(two.get(), Figure5(true));
  auto folded = MakeSession(two.get(), Figure5(true), /*fold_constants=*/true);
  for (const auto& feeds : std::vector<std::vector<std::pair<std::string, Tensor>>>{
           {}, {{"b", Tensor::Scalar<float>(3)}}, {{"a", Tensor::Scalar<float>(-2)}}}) {
    std::vector<Tensor> out1, out2;
    RunMetadata md1, md2;
    RunOptions options;
    options.collect_step_stats = true;
    ASSERT_TRUE(plain->Run(options, feeds, {"e", "f", "b"}, {}, &out1, &md1).ok());
    ASSERT_TRUE(folded->Run(options, feeds, {"e", "f", "b"}, {}, &out2, &md2).ok());
    ASSERT_EQ(out1.size(), 3u);
    ASSERT_EQ(out2.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(out1[i].scalar<float>(), out2[i].scalar<float>()) << i;
    // Only without feeds is anything computable from constants alone.
    if (feeds.empty()) EXPECT_LT(md2.executed_graph_nodes, md1.executed_graph_nodes);
    else EXPECT_EQ(md2.executed_graph_nodes, md1.executed_graph_nodes);
  }
}

TEST(MultiDeviceSession, AResourceVariableIsUsedWhereItsHandleLives) {
  auto two = NewCpuDeviceMgr(2, 1);
  GraphDefBuilder b;
  b.Node("h", "VarHandleOp", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({}))}});
  b.Node("init", "AssignVariableOp", {"h", b.Const("three", Tensor::Scalar<float>(3))}, {{"dtype", MakeAttr(DT_FLOAT)}});
  b.Node("add", "AssignAddVariableOp", {"h", b.Const("one", Tensor::Scalar<float>(1))}, {{"dtype", MakeAttr(DT_FLOAT)}});
  b.Node("read", "ReadVariableOp", {"h"}, {{"dtype", MakeAttr(DT_FLOAT)}});
  b.Binary("Mul", "twice", "read", b.Const("two", Tensor::Scalar<float>(2)), DT_FLOAT);
  GraphDef g = b.graph();
  SetDevice(&g, "h", "/device:CPU:1");
  SetDevice(&g, "twice", "/device:CPU:0");
  auto session = MakeSession(two.get(), g);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE(session->Run({}, {}, {"add"}, &out).ok());
  RunOptions options;
  options.collect_step_stats = true;
  RunMetadata md;
  absl::Status s = session->Run(options, {}, {"twice"}, {}, &out, &md);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].scalar<float>(), 8.0f);
  std::map<std::string, std::set<std::string>> ran;
  for (const DeviceStepStats& d : md.device_step_stats) {
    for (const NodeExecStats& n : d.nodes) ran[d.device].insert(n.node_name);
  }
  EXPECT_EQ(ran[kCpu1].count("h"), 1u);
  EXPECT_EQ(ran[kCpu1].count("read"), 1u);
  EXPECT_EQ(ran[kCpu0].count("twice"), 1u);
}

TEST(MultiDeviceSession, AVariableStaysOnItsDeviceAcrossSignaturesAndExtend) {
  auto two = NewCpuDeviceMgr(2, 1);
  GraphDefBuilder b;
  std::string v = b.Variable("v", DT_FLOAT, TensorShape({}), "");
  std::string init = b.Assign("init", v, b.Const("zero", Tensor::Scalar<float>(0)), DT_FLOAT);
  std::string one = b.Const("one", Tensor::Scalar<float>(1));
  std::string add = b.AssignAdd("add", v, one, DT_FLOAT);
  GraphDef g = b.graph();
  SetDevice(&g, "v", "/device:CPU:1");
  auto session = MakeSession(two.get(), g);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE(session->Run({}, {}, {"add"}, &out).ok());
  // A node added later that reads the variable by reference joins it.
  GraphDefBuilder more;
  more.AssignAdd("add_two", "v", more.Const("two", Tensor::Scalar<float>(2)), DT_FLOAT);
  ASSERT_TRUE(session->Extend(more.graph()).ok());
  ASSERT_TRUE(session->Run({}, {}, {"add_two"}, &out).ok());
  absl::Status s = session->Run({}, {"v"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].scalar<float>(), 3.0f);
  // The variable lives in CPU:1's containers only.
  EXPECT_EQ(two->devices()[0]->resource_manager()->NumResources(), 0);
  EXPECT_EQ(two->devices()[1]->resource_manager()->NumResources(), 1);
}

TEST(MultiDeviceSession, AnErrorOnOneDeviceAbortsTheStepWithThatErrorAndTheNextStepRuns) {
  auto two = NewCpuDeviceMgr(2, 1);
  GraphDefBuilder b;
  std::string x = b.Placeholder("x", DT_FLOAT);
  std::string checked = b.Node("checked", "TestFailIfNegative", {x});
  std::string y = b.Binary("Mul", "y", checked, checked, DT_FLOAT);
  GraphDef g = b.graph();
  SetDevice(&g, "x", "/device:CPU:0");
  SetDevice(&g, "checked", "/device:CPU:1");
  SetDevice(&g, "y", "/device:CPU:0");  // waits on a Recv from CPU:1
  auto session = MakeSession(two.get(), g);
  std::vector<Tensor> out;
  absl::Status s = session->Run({{"x", Tensor::Scalar<float>(-1)}}, {"y"}, {}, &out);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "negative input")) << s;
  s = session->Run({{"x", Tensor::Scalar<float>(3)}}, {"y"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].scalar<float>(), 9.0f);
}

TEST(MultiDeviceSession, UnknownDeviceIsAnErrorNamingTheNode) {
  auto two = NewCpuDeviceMgr(2, 1);
  GraphDef g = Figure5(false);
  SetDevice(&g, "c", "/device:CPU:7");
  SessionOptions options;
  options.device_mgr = two.get();
  auto session = NewSession(options);
  ASSERT_TRUE(session.ok());
  absl::Status s = (*session)->Create(g);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "'c'")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "CPU:7")) << s;
}

}  // namespace
}  // namespace sluice
