// Spec for the shape no-ops pass: a Reshape, Tile, BroadcastTo,
// Squeeze or reduction whose static input and output shapes are equal becomes
// an Identity under its name, with its control edges and consumers, and the
// step computes the same values (a session with the pass through constant
// folding on and off); one that changes the shape, or whose shapes are not
// known, stays, and so does a kept node.
#include "engine/graph/optimizer_shape_noops.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/graph/fusion_test_util.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using fusion_test::MustBuild;

std::string OpOf(const Graph& g, const std::string& name) {
  const Node* n = g.FindNode(name);
  return n == nullptr ? "<none>" : n->type_string();
}

// x: a [2, 3] placeholder (static shape); u: one of unknown shape; each op
// applied to x with arguments that keep its shape (`same_*`) and that change
// it (`other_*`).
GraphDef Ops() {
  GraphDefBuilder b;
  b.Node("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({2, 3}))}});
  b.Node("row", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({1, 3}))}});
  b.Placeholder("u", DT_FLOAT);
  const AttrValue f = MakeAttr(DT_FLOAT);
  b.NoOp("before");
  b.Node("same_reshape", "Reshape", {"x", b.Const("shape_23", Tensor::FromVector<int32_t>({2, 3})), "^before"},
         {{"T", f}});
  b.Node("other_reshape", "Reshape", {"x", b.Const("shape_32", Tensor::FromVector<int32_t>({3, 2}))}, {{"T", f}});
  b.Node("unknown_reshape", "Reshape", {"u", b.Const("shape_m1", Tensor::FromVector<int32_t>({-1}))}, {{"T", f}});
  b.Const("no_axes", Tensor::FromVector<int32_t>({}));
  b.Const("axis0", Tensor::FromVector<int32_t>({0}));
  b.Node("same_sum", "Sum", {"x", "no_axes"}, {{"T", f}});
  b.Node("same_mean", "Mean", {"row", "axis0"}, {{"T", f}, {"keep_dims", MakeAttr(true)}});
  b.Node("other_sum", "Sum", {"x", "axis0"}, {{"T", f}, {"keep_dims", MakeAttr(true)}});
  b.Node("same_tile", "Tile", {"x", b.Const("ones", Tensor::FromVector<int32_t>({1, 1}))}, {{"T", f}});
  b.Node("other_tile", "Tile", {"x", b.Const("twice", Tensor::FromVector<int32_t>({2, 1}))}, {{"T", f}});
  b.Node("same_broadcast", "BroadcastTo", {"x", "shape_23"}, {{"T", f}});
  b.Node("squeezed", "Squeeze", {"x"}, {{"T", f}});
  b.NoOp("after", {"same_sum"});
  b.Node("neg", "Neg", {"same_reshape"}, {{"T", f}});
  b.Node("inner_reshape", "Reshape", {"row", b.Const("shape_13", Tensor::FromVector<int32_t>({1, 3}))}, {{"T", f}});
  b.Node("neg_inner", "Neg", {"inner_reshape"}, {{"T", f}});
  // Reshape(x, [n, 3]) with n fed: statically [2,3] (the only n that fits),
  // but a fed n that does not fit must still fail the kernel.
  b.Node("n", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT32)}, {"shape", MakeAttr(TensorShape({}))}});
  b.Node("fed_shape", "Pack", {"n", b.Const("three", Tensor::Scalar<int32_t>(3))},
         {{"T", MakeAttr(DT_INT32)}, {"N", MakeAttr(int64_t{2})}});
  b.Node("fed_reshape", "Reshape", {"x", "fed_shape"}, {{"T", f}});
  // Reshape(x, Shape(x)): computed at run time, but known whole.
  b.Node("x_shape", "Shape", {"x"}, {{"T", f}});
  b.Node("own_shape_reshape", "Reshape", {"x", "x_shape"}, {{"T", f}});
  return b.graph();
}

TEST(ShapeNoOps, OpsThatKeepAStaticShapeBecomeIdentities) {
  auto g = MustBuild(Ops());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(ReplaceShapeNoOpsWithIdentities(ShapeNoOpOptions(), g.get()), 8);
  for (const char* n : {"same_reshape", "same_sum", "same_mean", "same_tile", "same_broadcast", "squeezed",
                        "inner_reshape", "own_shape_reshape"}) {
    EXPECT_EQ(OpOf(*g, n), "Identity") << n;
  }
  for (const char* n : {"other_reshape", "unknown_reshape", "other_sum", "other_tile", "fed_reshape"}) {
    EXPECT_NE(OpOf(*g, n), "Identity") << n;
  }
  // Edges: input 0, the control input and the consumers stay; the shape
  // input loses this reader.
  const Node* reshape = g->FindNode("same_reshape");
  ASSERT_EQ(reshape->num_inputs(), 1);
  EXPECT_EQ(reshape->input_edge(0)->src->name(), "x");
  bool after_before = false;
  for (const Edge* e : reshape->in_edges()) after_before |= e->IsControlEdge() && e->src->name() == "before";
  EXPECT_TRUE(after_before);
  EXPECT_EQ(g->FindNode("neg")->input_edge(0)->src, reshape);
  bool ordered = false;
  for (const Edge* e : g->FindNode("after")->in_edges()) ordered |= e->IsControlEdge() && e->src->name() == "same_sum";
  EXPECT_TRUE(ordered);
  GraphDef again;
  g->ToGraphDef(&again);
  EXPECT_TRUE(GraphFromGraphDef(again).ok());
}

TEST(ShapeNoOps, KeptNodesStay) {
  auto g = MustBuild(Ops());
  ASSERT_NE(g, nullptr);
  ShapeNoOpOptions options;
  options.keep = [](const Node* n) { return n->name() == "same_tile"; };
  EXPECT_EQ(ReplaceShapeNoOpsWithIdentities(options, g.get()), 7);
  EXPECT_EQ(OpOf(*g, "same_tile"), "Tile");
}

TEST(ShapeNoOps, NodesAfterASwitchStay) {
  // On a cond's branch a node is dead when its shape input is: an Identity
  // of x alone would not be.
  GraphDefBuilder b;
  b.Node("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({2, 3}))}});
  b.Placeholder("p", DT_BOOL);
  b.Const("dims", Tensor::FromVector<int32_t>({2, 3}));
  b.Switch("sw", "dims", "p", DT_INT32);
  b.Node("branch_reshape", "Reshape", {"x", "sw:1"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(ReplaceShapeNoOpsWithIdentities(ShapeNoOpOptions(), g.get()), 0);
  EXPECT_EQ(OpOf(*g, "branch_reshape"), "Reshape");
}

std::vector<Tensor> RunOps(bool fold, const std::vector<std::string>& fetches, int* nodes) {
  SessionOptions options;
  options.enable_constant_folding = fold;  // the pass runs with it
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  EXPECT_TRUE((*session)->Create(Ops()).ok());
  const Tensor x = Tensor::FromVector<float>({1, -2, 3, -4, 5, -6}, TensorShape({2, 3}));
  const Tensor row = Tensor::FromVector<float>({7, 8, 9}, TensorShape({1, 3}));
  const Tensor u = Tensor::FromVector<float>({1, 2}, TensorShape({2}));
  std::vector<Tensor> outputs;
  RunMetadata metadata;
  absl::Status s = (*session)->Run(RunOptions(), {{"x", x}, {"row", row}, {"u", u}}, fetches, {}, &outputs, &metadata);
  EXPECT_TRUE(s.ok()) << s;
  *nodes = metadata.executed_graph_nodes;
  return outputs;
}

TEST(ShapeNoOps, AStepComputesTheSameValues) {
  const std::vector<std::string> fetches = {"neg",           "same_sum",  "same_mean",  "same_tile",
                                            "same_broadcast", "squeezed",  "other_reshape", "other_sum",
                                            "other_tile",     "unknown_reshape", "neg_inner"};
  int with_pass = 0, without = 0;
  const std::vector<Tensor> on = RunOps(true, fetches, &with_pass);
  const std::vector<Tensor> off = RunOps(false, fetches, &without);
  ASSERT_EQ(on.size(), fetches.size());
  ASSERT_EQ(off.size(), fetches.size());
  for (size_t i = 0; i < fetches.size(); ++i) {
    EXPECT_EQ(on[i].shape(), off[i].shape()) << fetches[i];
    EXPECT_EQ(on[i].DebugString(100), off[i].DebugString(100)) << fetches[i];
  }
  // inner_reshape, an Identity now, is gone too (identity removal; the
  // Identity of same_reshape stays for its control input).
  EXPECT_LT(with_pass, without);
  // Feeds that nothing fetched reads (u and row here) are pruned with their
  // _Recv nodes, shapes and all.
  const std::vector<Tensor> neg = RunOps(true, {"neg"}, &with_pass);
  ASSERT_EQ(neg.size(), 1u);
  EXPECT_EQ(neg[0].DebugString(100), on[0].DebugString(100));
}

}  // namespace
}  // namespace sluice
