// Spec for constant folding: a graph computes the same values with the pass
// on and off (run through a session both ways), folded nodes become Consts
// under their own names, and what must stay (stateful ops, loops, conds,
// control inputs from live nodes, variable refs, values over the size cap,
// `keep`) stays.
#include "engine/graph/optimizer_constant_folding.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/graph/control_flow_builders.h"
#include "engine/graph/graph_builder.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

std::unique_ptr<Graph> MustBuild(const GraphDef& def) {
  auto g = GraphFromGraphDef(def);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(g).value() : nullptr;
}

std::string OpOf(const Graph& g, const std::string& name) {
  Node* n = g.FindNode(name);
  return n == nullptr ? "<none>" : n->type_string();
}

int CountOps(const Graph& g, const std::string& op) {
  int count = 0;
  for (Node* n : g.nodes()) count += n->type_string() == op;
  return count;
}

ConstantFoldingStats Fold(Graph* g, int64_t max_bytes = int64_t{10} << 20) {
  ConstantFoldingOptions options;
  options.max_constant_bytes = max_bytes;
  return FoldConstants(options, g);
}

// The graph is still a valid graph after the pass.
void ExpectReimports(const Graph& g) {
  GraphDef def;
  g.ToGraphDef(&def);
  EXPECT_TRUE(GraphFromGraphDef(def).ok());
}

struct RunResult {
  std::vector<Tensor> outputs;
  int nodes = 0;
};

// Runs `init` targets (if any) then fetches `fetches`, in a session with
// constant folding on or off (CSE and Identity removal off, to see this pass
// alone).
RunResult RunWith(bool fold, const GraphDef& def, const std::vector<std::string>& fetches,
                  const std::vector<std::pair<std::string, Tensor>>& feeds = {},
                  const std::vector<std::string>& init = {}) {
  SessionOptions options;
  options.enable_cse = false;
  options.enable_identity_removal = false;
  options.enable_constant_folding = fold;
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  EXPECT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> ignored;
  if (!init.empty()) {
    EXPECT_TRUE((*session)->Run({}, {}, init, &ignored).ok());
  }
  RunResult result;
  RunMetadata metadata;
  absl::Status s = (*session)->Run(RunOptions(), feeds, fetches, {}, &result.outputs, &metadata);
  EXPECT_TRUE(s.ok()) << s;
  result.nodes = metadata.executed_graph_nodes;
  return result;
}

void ExpectSameTensors(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].DebugString(100), b[i].DebugString(100)) << "output " << i;
  }
}

TEST(ConstantFolding, ArithmeticOnConstantsBecomesOneConstUnderItsName) {
  GraphDefBuilder b;
  b.Const("a", Tensor::Scalar<float>(3));
  b.Const("b", Tensor::Scalar<float>(4));
  b.Binary("Mul", "ab", "a", "b", DT_FLOAT);
  b.Binary("Add", "sum", "ab", "a", DT_FLOAT);
  b.Placeholder("x", DT_FLOAT);
  b.Binary("Mul", "out", "sum", "x", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);

  ConstantFoldingStats stats = Fold(g.get());
  EXPECT_EQ(stats.folded, 2);   // ab, sum
  EXPECT_EQ(stats.removed, 2);  // a, b: nothing reads them any more
  EXPECT_EQ(OpOf(*g, "sum"), "Const");
  EXPECT_EQ(OpOf(*g, "ab"), "<none>");  // its only consumer was folded too
  EXPECT_EQ(OpOf(*g, "out"), "Mul");
  EXPECT_EQ(OpOf(*g, "x"), "Placeholder");
  ExpectReimports(*g);

  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Tensor::Scalar<float>(0.5f)}};
  RunResult on = RunWith(true, b.graph(), {"out", "sum"}, feeds);
  RunResult off = RunWith(false, b.graph(), {"out", "sum"}, feeds);
  ExpectSameTensors(on.outputs, off.outputs);
  EXPECT_LT(on.nodes, off.nodes);
}

TEST(ConstantFolding, KeepsDeviceAndControlOutputs) {
  GraphDefBuilder b;
  b.Const("a", Tensor::Scalar<float>(3));
  b.Binary("Add", "aa", "a", "a", DT_FLOAT);
  b.NoOp("after", {"aa"});
  b.FindNode("aa")->set_device("/device:CPU:0");
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  g->FindNode("aa")->set_assigned_device("/job:localhost/replica:0/task:0/device:CPU:0");

  EXPECT_EQ(Fold(g.get()).folded, 1);
  Node* aa = g->FindNode("aa");
  ASSERT_NE(aa, nullptr);
  EXPECT_EQ(aa->type_string(), "Const");
  EXPECT_EQ(aa->requested_device(), "/device:CPU:0");
  EXPECT_EQ(aa->assigned_device(), "/job:localhost/replica:0/task:0/device:CPU:0");
  ASSERT_EQ(aa->out_edges().size(), 1u);
  EXPECT_TRUE(aa->out_edges()[0]->IsControlEdge());
  EXPECT_EQ(aa->out_edges()[0]->dst->name(), "after");
}

// The Mean gradient's shape arithmetic over a tensor whose shape is known:
// Shape -> Prod -> Cast feeds a division; Reshape's shape input is a Shape.
TEST(ConstantFolding, ShapeChainOfAKnownShapeFolds) {
  GraphDefBuilder b;
  b.Variable("v", DT_FLOAT, TensorShape({2, 3}));
  b.Const("init_value", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})));
  b.Assign("init", "v", "init_value", DT_FLOAT);
  b.Identity("read", "v", DT_FLOAT);
  b.Node("shape", "Shape", {"read"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Const("axis0", Tensor::Scalar<int32_t>(0));
  b.Node("count", "Prod", {"shape", "axis0"}, {{"T", MakeAttr(DT_INT32)}});
  b.Node("count_f", "Cast", {"count"}, {{"SrcT", MakeAttr(DT_INT32)}, {"DstT", MakeAttr(DT_FLOAT)}});
  b.Const("all", Tensor::FromVector<int32_t>({0, 1}));
  b.Node("total", "Sum", {"read", "all"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Binary("RealDiv", "mean", "total", "count_f", DT_FLOAT);
  b.Node("flat_shape", "Reshape", {"shape", b.Const("minus1", Tensor::FromVector<int32_t>({-1}))},
         {{"T", MakeAttr(DT_INT32)}});
  b.Node("same", "Reshape", {"read", "flat_shape"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("size", "Size", {"read"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("rank", "Rank", {"read"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);

  Fold(g.get());
  EXPECT_EQ(CountOps(*g, "Shape"), 0);
  EXPECT_EQ(CountOps(*g, "Prod"), 0);
  EXPECT_EQ(CountOps(*g, "Cast"), 0);
  EXPECT_EQ(OpOf(*g, "count_f"), "Const");
  EXPECT_EQ(OpOf(*g, "flat_shape"), "Const");
  EXPECT_EQ(OpOf(*g, "size"), "Const");
  EXPECT_EQ(OpOf(*g, "rank"), "Const");
  // Reading the variable and what depends on its value stay.
  EXPECT_EQ(OpOf(*g, "read"), "Identity");
  EXPECT_EQ(OpOf(*g, "total"), "Sum");
  EXPECT_EQ(OpOf(*g, "same"), "Reshape");
  ExpectReimports(*g);

  const std::vector<std::string> fetches = {"mean", "same", "shape", "size", "rank"};
  RunResult on = RunWith(true, b.graph(), fetches, {}, {"init"});
  RunResult off = RunWith(false, b.graph(), fetches, {}, {"init"});
  ExpectSameTensors(on.outputs, off.outputs);
  EXPECT_LT(on.nodes, off.nodes);
}

TEST(ConstantFolding, BothOutputsOfATwoOutputNodeCanBeFetched) {
  GraphDefBuilder b;
  b.Const("s0", Tensor::FromVector<int32_t>({2, 3}));
  b.Const("s1", Tensor::FromVector<int32_t>({3}));
  b.Node("args", "BroadcastGradientArgs", {"s0", "s1"});
  b.Const("zero", Tensor::Scalar<int32_t>(0));
  b.Binary("Add", "r1_plus", "args:1", "zero", DT_INT32);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fold(g.get()).folded, 2);
  EXPECT_EQ(OpOf(*g, "r1_plus"), "Const");

  const std::vector<std::string> fetches = {"args:0", "args:1", "r1_plus"};
  RunResult on = RunWith(true, b.graph(), fetches);
  RunResult off = RunWith(false, b.graph(), fetches);
  ExpectSameTensors(on.outputs, off.outputs);
  ASSERT_EQ(on.outputs.size(), 3u);
  EXPECT_EQ(on.outputs[1].NumElements(), 1);  // the reduction axes of s1: {0}
}

TEST(ConstantFolding, StatefulAndRandomOpsStay) {
  GraphDefBuilder b;
  b.Const("dims", Tensor::FromVector<int32_t>({4}));
  b.Node("random", "RandomUniform", {"dims"}, {{"dtype", MakeAttr(DT_FLOAT)}, {"T", MakeAttr(DT_INT32)}});
  b.Const("one", Tensor::Scalar<float>(1));
  b.Binary("Add", "shifted", "random", "one", DT_FLOAT);
  b.Variable("v", DT_FLOAT, TensorShape({}));
  b.Assign("assign", "v", "one", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fold(g.get()).folded, 0);
  EXPECT_EQ(OpOf(*g, "random"), "RandomUniform");
  EXPECT_EQ(OpOf(*g, "shifted"), "Add");
  EXPECT_EQ(OpOf(*g, "assign"), "Assign");
}

// Shape of a variable's ref is read at run time (it fails while the variable
// is uninitialized), so it stays.
TEST(ConstantFolding, ShapeOfARefStays) {
  GraphDefBuilder b;
  b.Variable("v", DT_FLOAT, TensorShape({2, 3}));
  b.Node("shape", "Shape", {"v"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fold(g.get()).folded, 0);
  EXPECT_EQ(OpOf(*g, "shape"), "Shape");
}

TEST(ConstantFolding, ShapeOfAFedTensorStays) {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Node("shape", "Shape", {"x"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fold(g.get()).folded, 0);

  Tensor x(DT_FLOAT, TensorShape({5, 7}));
  RunResult on = RunWith(true, b.graph(), {"shape"}, {{"x", x}});
  ASSERT_EQ(on.outputs.size(), 1u);
  EXPECT_EQ(on.outputs[0].DebugString(), Tensor::FromVector<int32_t>({5, 7}).DebugString());
}

TEST(ConstantFolding, ControlInputFromALiveNodeBlocksFolding) {
  GraphDefBuilder b;
  b.Variable("v", DT_FLOAT, TensorShape({}));
  b.Const("one", Tensor::Scalar<float>(1));
  b.AssignAdd("bump", "v", "one", DT_FLOAT);
  b.Const("two", Tensor::Scalar<float>(2));
  b.Binary("Add", "three", "one", "two", DT_FLOAT);
  b.FindNode("three")->add_input("^bump");
  b.Binary("Add", "free", "one", "two", DT_FLOAT);
  b.FindNode("free")->add_input("^two");  // a control input from a constant is fine
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fold(g.get()).folded, 1);
  EXPECT_EQ(OpOf(*g, "three"), "Add");
  EXPECT_EQ(OpOf(*g, "free"), "Const");
}

// A Const ordered after a folded node (a control edge) and read only by a
// folded node is removed; the folded node's Const keeps the name.
TEST(ConstantFolding, AConstAfterAFoldedNodeIsRemovedWhenUnused) {
  GraphDefBuilder b;
  b.Const("a", Tensor::Scalar<float>(2));
  b.Binary("Add", "f", "a", "a", DT_FLOAT);
  b.Const("c", Tensor::Scalar<float>(5));
  b.FindNode("c")->add_input("^f");
  b.Node("g", "Neg", {"c"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Binary("Mul", "out", "g", "f", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  ConstantFoldingStats stats = Fold(g.get());
  EXPECT_EQ(OpOf(*g, "out"), "Const");
  EXPECT_EQ(OpOf(*g, "c"), "<none>");
  EXPECT_GE(stats.removed, 1);
  ExpectReimports(*g);
  RunResult on = RunWith(true, b.graph(), {"out"});
  RunResult off = RunWith(false, b.graph(), {"out"});
  ExpectSameTensors(on.outputs, off.outputs);
  ASSERT_EQ(on.outputs.size(), 1u);
  EXPECT_EQ(on.outputs[0].scalar<float>(), -20.0f);
}

TEST(ConstantFolding, ValuesOverTheCapStay) {
  GraphDefBuilder b;
  b.Const("big_dims", Tensor::FromVector<int32_t>({512, 1024}));  // 2 MiB of float
  b.Const("small_dims", Tensor::FromVector<int32_t>({16}));
  b.Const("one", Tensor::Scalar<float>(1));
  b.Node("big", "Fill", {"big_dims", "one"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("small", "Fill", {"small_dims", "one"}, {{"T", MakeAttr(DT_FLOAT)}});
  {
    auto g = MustBuild(b.graph());
    ASSERT_NE(g, nullptr);
    Fold(g.get(), /*max_bytes=*/1 << 20);
    EXPECT_EQ(OpOf(*g, "big"), "Fill");
    EXPECT_EQ(OpOf(*g, "small"), "Const");
  }
  {
    auto g = MustBuild(b.graph());
    ASSERT_NE(g, nullptr);
    Fold(g.get(), /*max_bytes=*/4 << 20);
    EXPECT_EQ(OpOf(*g, "big"), "Const");
  }
  // A Const over the cap is not materialized, so what reads it stays too.
  b.Node("big_neg", "Neg", {b.Const("big_value", Tensor(DT_FLOAT, TensorShape({1024, 1024})))},
         {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  Fold(g.get(), /*max_bytes=*/1 << 20);
  EXPECT_EQ(OpOf(*g, "big_neg"), "Neg");
}

TEST(ConstantFolding, KeepProtectsANode) {
  GraphDefBuilder b;
  b.Const("a", Tensor::Scalar<float>(3));
  b.Binary("Add", "aa", "a", "a", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  ConstantFoldingOptions options;
  options.keep = [](const Node* n) { return n->name() == "aa"; };
  EXPECT_EQ(FoldConstants(options, g.get()).folded, 0);
  EXPECT_EQ(OpOf(*g, "aa"), "Add");
}

TEST(ConstantFolding, AFailingKernelIsLeftToFailAtRunTime) {
  GraphDefBuilder b;
  b.Const("x", Tensor::FromVector<float>({1, 2, 3}));
  b.Node("bad", "Reshape", {"x", b.Const("shape", Tensor::FromVector<int32_t>({2}))}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  if (g == nullptr) GTEST_SKIP() << "shape inference already rejects the graph";
  Fold(g.get());
  EXPECT_EQ(OpOf(*g, "bad"), "Reshape");
}

// Inside a loop every node may run many times (or none); inside a cond's
// branch a node may be dead. Neither is folded, and the results match.
TEST(ConstantFolding, LoopsAndCondsStay) {
  Graph graph;
  GraphBuilder b(&graph);
  Output limit = b.Scalar<int32_t>("limit", 5);
  Output zero = b.Scalar<int32_t>("zero", 0);
  auto loop = BuildWhileLoop(
      &b, {zero},
      [&](GraphBuilder& g, const std::vector<Output>& v) { return g.Op("less", "Less", {v[0], limit}); },
      [&](GraphBuilder& g, const std::vector<Output>& v) {
        Output two = g.Op("two", "Add", {g.Scalar<int32_t>("one_a", 1), g.Scalar<int32_t>("one_b", 1)});
        return WhileBody{{g.Op("next", "Add", {v[0], two})}, {}};
      });
  ASSERT_TRUE(loop.ok()) << loop.status();
  Output pred = b.Op("pred", "Less", {zero, limit});
  auto cond = BuildCond(
      &b, pred,
      [&](GraphBuilder& g) {
        return std::vector<Output>{g.Op("then_v", "Mul", {g.Scalar<int32_t>("t3", 3), g.Scalar<int32_t>("t4", 4)})};
      },
      [&](GraphBuilder& g) {
        return std::vector<Output>{g.Op("else_v", "Mul", {g.Scalar<int32_t>("e5", 5), g.Scalar<int32_t>("e6", 6)})};
      });
  ASSERT_TRUE(cond.ok()) << cond.status();
  ASSERT_TRUE(b.ok()) << b.status();
  GraphDef def;
  graph.ToGraphDef(&def);
  auto g = MustBuild(def);
  ASSERT_NE(g, nullptr);
  std::vector<std::string> adds_and_muls_before;
  for (Node* n : g->nodes()) {
    if (n->type_string() == "Add" || n->type_string() == "Mul") adds_and_muls_before.push_back(n->name());
  }
  ASSERT_GE(adds_and_muls_before.size(), 4u);
  Fold(g.get());
  for (const std::string& name : adds_and_muls_before) {
    EXPECT_NE(OpOf(*g, name), "Const") << name;
  }
  ExpectReimports(*g);

  const std::vector<std::string> fetches = {loop->outputs[0].name(), (*cond)[0].name()};
  RunResult on = RunWith(true, def, fetches);
  RunResult off = RunWith(false, def, fetches);
  ExpectSameTensors(on.outputs, off.outputs);
  ASSERT_EQ(on.outputs.size(), 2u);
  EXPECT_EQ(on.outputs[0].scalar<int32_t>(), 6);
  EXPECT_EQ(on.outputs[1].scalar<int32_t>(), 12);
}

}  // namespace
}  // namespace sluice
