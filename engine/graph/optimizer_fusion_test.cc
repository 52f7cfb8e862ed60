// Spec for the bias + activation fusion pass: MatMul/Conv2D -> BiasAdd [->
// Relu] chains on a CPU become one _FusedMatMul/_FusedConv2D named after the
// chain's last node, carrying the chain's inputs, attrs and control edges;
// chains whose intermediates have other consumers, that sit on a device
// without a kernel for the fused op (a GPU here: no GPU kernels linked) or on
// two devices, that are not float32, or whose fusion would make a cycle are
// left alone. (Values through a session: engine/runtime/fusion_session_test.cc.)
#include "engine/graph/optimizer_fusion.h"

#include <memory>
#include <string>
#include <vector>

#include "engine/graph/fusion_test_util.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

using fusion_test::CountOps;
using fusion_test::DefOf;
using fusion_test::InputsOf;
using fusion_test::kCpu;
using fusion_test::kCpu1;
using fusion_test::kGpu;
using fusion_test::kXpu;
using fusion_test::MustBuild;

std::vector<std::string> FusedOps(const Graph& g, const std::string& node) {
  std::vector<std::string> ops;
  EXPECT_TRUE(GetNodeAttr(DefOf(g, node), "fused_ops", &ops).ok());
  return ops;
}

// The graph is still a valid graph (ops, attrs, shapes) after the pass.
void ExpectReimports(const Graph& g) {
  GraphDef def;
  g.ToGraphDef(&def);
  auto again = GraphFromGraphDef(def);
  EXPECT_TRUE(again.ok()) << again.status();
}

int Fuse(Graph* g, FusionOptions options = FusionOptions()) { return FuseBiasActivation(options, g); }

REGISTER_KERNEL_BUILDER(Name("_FusedMatMul").Device(fusion_test::kXpuType).TypeConstraint<float>("T"),
                        fusion_test::StandInKernel);

// x [4, 3] . w [3, 5] -> + b [5] -> relu, then out = Identity(relu); the
// dense layer of a model, as its builder makes it.
GraphDefBuilder DenseRelu(DataType dtype = DT_FLOAT, bool transpose_b = false) {
  GraphDefBuilder b;
  b.Placeholder("x", dtype);
  b.Placeholder("w", dtype);
  b.Placeholder("b", dtype);
  b.Node("mm", "MatMul", {"x", "w"}, {{"T", MakeAttr(dtype)}, {"transpose_b", MakeAttr(transpose_b)}});
  b.Node("bias", "BiasAdd", {"mm", "b"}, {{"T", MakeAttr(dtype)}});
  b.Node("relu", "Relu", {"bias"}, {{"T", MakeAttr(dtype)}});
  b.Identity("out", "relu", dtype);
  return b;
}

TEST(Fusion, MatMulBiasAddReluBecomesOneNodeNamedAfterTheRelu) {
  auto g = MustBuild(DenseRelu(DT_FLOAT, /*transpose_b=*/true).graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fuse(g.get()), 1);
  EXPECT_EQ(CountOps(*g, "MatMul"), 0);
  EXPECT_EQ(CountOps(*g, "BiasAdd"), 0);
  EXPECT_EQ(CountOps(*g, "Relu"), 0);
  Node* fused = g->FindNode("relu");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->type_string(), "_FusedMatMul");
  EXPECT_EQ(fused->assigned_device(), kCpu);
  EXPECT_EQ(g->FindNode("mm"), nullptr);
  EXPECT_EQ(g->FindNode("bias"), nullptr);
  EXPECT_THAT(InputsOf(*g, "relu"), ElementsAre("x", "w", "b"));
  EXPECT_THAT(FusedOps(*g, "relu"), ElementsAre("BiasAdd", "Relu"));
  bool transpose_a = true, transpose_b = false;
  ASSERT_TRUE(GetNodeAttr(fused->def(), "transpose_a", &transpose_a).ok());
  ASSERT_TRUE(GetNodeAttr(fused->def(), "transpose_b", &transpose_b).ok());
  EXPECT_FALSE(transpose_a);
  EXPECT_TRUE(transpose_b);
  int64_t num_args = 0;
  ASSERT_TRUE(GetNodeAttr(fused->def(), "num_args", &num_args).ok());
  EXPECT_EQ(num_args, 1);
  EXPECT_THAT(InputsOf(*g, "out"), ElementsAre("relu"));
  ExpectReimports(*g);
}

TEST(Fusion, MatMulBiasAddWithoutReluFusesUnderTheBiasAddsName) {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("w", DT_FLOAT);
  b.Placeholder("b", DT_FLOAT);
  b.Node("mm", "MatMul", {"x", "w"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("logits", "BiasAdd", {"mm", "b"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("softmax", "Softmax", {"logits"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fuse(g.get()), 1);
  ASSERT_NE(g->FindNode("logits"), nullptr);
  EXPECT_EQ(g->FindNode("logits")->type_string(), "_FusedMatMul");
  EXPECT_THAT(FusedOps(*g, "logits"), ElementsAre("BiasAdd"));
  EXPECT_THAT(InputsOf(*g, "softmax"), ElementsAre("logits"));
  ExpectReimports(*g);
}

// x -> Conv2D (stride 2 along rows, SAME) -> + b -> relu -> MaxPool 2x2.
GraphDefBuilder ConvRelu() {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("f", DT_FLOAT);
  b.Placeholder("b", DT_FLOAT);
  b.Node("conv", "Conv2D", {"x", "f"},
         {{"T", MakeAttr(DT_FLOAT)},
          {"strides", MakeAttr(std::vector<int64_t>{1, 2, 1, 1})},
          {"padding", MakeAttr("SAME")}});
  b.Node("bias", "BiasAdd", {"conv", "b"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("relu", "Relu", {"bias"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("pool", "MaxPool", {"relu"},
         {{"T", MakeAttr(DT_FLOAT)},
          {"ksize", MakeAttr(std::vector<int64_t>{1, 2, 2, 1})},
          {"strides", MakeAttr(std::vector<int64_t>{1, 2, 2, 1})},
          {"padding", MakeAttr("VALID")}});
  return b;
}

TEST(Fusion, Conv2DBiasAddReluFusesWithItsWindowAttrs) {
  auto g = MustBuild(ConvRelu().graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fuse(g.get()), 1);
  Node* fused = g->FindNode("relu");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->type_string(), "_FusedConv2D");
  EXPECT_THAT(InputsOf(*g, "relu"), ElementsAre("x", "f", "b"));
  EXPECT_THAT(FusedOps(*g, "relu"), ElementsAre("BiasAdd", "Relu"));
  std::vector<int64_t> strides;
  std::string padding;
  ASSERT_TRUE(GetNodeAttr(fused->def(), "strides", &strides).ok());
  ASSERT_TRUE(GetNodeAttr(fused->def(), "padding", &padding).ok());
  EXPECT_THAT(strides, ElementsAre(1, 2, 1, 1));
  EXPECT_EQ(padding, "SAME");
  EXPECT_THAT(InputsOf(*g, "pool"), ElementsAre("relu"));
  ExpectReimports(*g);
}

// Training: ReluGrad reads the Relu's output (which the fused node makes),
// BiasAddGrad reads the incoming gradient, not the BiasAdd: still fused.
TEST(Fusion, TrainingConsumersOfTheReluDoNotPreventFusion) {
  GraphDefBuilder b = DenseRelu();
  b.Placeholder("dy", DT_FLOAT);
  b.Node("relu_grad", "ReluGrad", {"dy", "relu"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("bias_grad", "BiasAddGrad", {"relu_grad"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fuse(g.get()), 1);
  EXPECT_EQ(g->FindNode("relu")->type_string(), "_FusedMatMul");
  EXPECT_THAT(InputsOf(*g, "relu_grad"), ElementsAre("dy", "relu"));
  ExpectReimports(*g);
}

TEST(Fusion, AProductWithAnotherConsumerIsLeftAlone) {
  GraphDefBuilder b = DenseRelu();
  b.Identity("fetched_product", "mm", DT_FLOAT);  // as a fetch's _Retval would
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fuse(g.get()), 0);
  EXPECT_EQ(CountOps(*g, "MatMul"), 1);
  EXPECT_EQ(CountOps(*g, "BiasAdd"), 1);
  EXPECT_EQ(CountOps(*g, "Relu"), 1);
}

TEST(Fusion, ABiasAddWithAnotherConsumerEndsTheChainBeforeTheRelu) {
  GraphDefBuilder b = DenseRelu();
  b.Identity("pre_activation", "bias", DT_FLOAT);
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fuse(g.get()), 1);
  ASSERT_NE(g->FindNode("bias"), nullptr);
  EXPECT_EQ(g->FindNode("bias")->type_string(), "_FusedMatMul");
  EXPECT_THAT(FusedOps(*g, "bias"), ElementsAre("BiasAdd"));
  ASSERT_NE(g->FindNode("relu"), nullptr);
  EXPECT_EQ(g->FindNode("relu")->type_string(), "Relu");
  EXPECT_THAT(InputsOf(*g, "relu"), ElementsAre("bias"));
  EXPECT_THAT(InputsOf(*g, "pre_activation"), ElementsAre("bias"));
  ExpectReimports(*g);
}

// This binary links no GPU kernels: a GPU has no kernel for the fused ops.
TEST(Fusion, ChainsOnADeviceWithoutFusedKernelsAreLeftAlone) {
  auto g = MustBuild(DenseRelu().graph(), kGpu);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fuse(g.get()), 0);
  EXPECT_EQ(CountOps(*g, "MatMul"), 1);
  EXPECT_EQ(CountOps(*g, "_FusedMatMul"), 0);
}

// kXpuType has a stand-in _FusedMatMul kernel (registered above), and no
// _FusedConv2D: its dense chain fuses, its convolution chain does not.
TEST(Fusion, ChainsOnADeviceWithTheFusedKernelFuse) {
  auto dense = MustBuild(DenseRelu().graph(), kXpu);
  ASSERT_NE(dense, nullptr);
  EXPECT_EQ(Fuse(dense.get()), 1);
  EXPECT_EQ(dense->FindNode("relu")->type_string(), "_FusedMatMul");
  EXPECT_EQ(dense->FindNode("relu")->assigned_device(), kXpu);
  EXPECT_THAT(FusedOps(*dense, "relu"), ElementsAre("BiasAdd", "Relu"));
  auto conv = MustBuild(ConvRelu().graph(), kXpu);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(Fuse(conv.get()), 0);
  EXPECT_EQ(CountOps(*conv, "Conv2D"), 1);
}

TEST(Fusion, ChainsAcrossTwoDevicesAreLeftAloneAndUnplacedNodesToo) {
  {
    auto g = MustBuild(DenseRelu().graph());
    ASSERT_NE(g, nullptr);
    g->FindNode("bias")->set_assigned_device(kCpu1);
    // The MatMul and BiasAdd are on two CPUs; BiasAdd and Relu too.
    EXPECT_EQ(Fuse(g.get()), 0);
    EXPECT_EQ(CountOps(*g, "MatMul"), 1);
  }
  {
    auto g = MustBuild(DenseRelu().graph());
    ASSERT_NE(g, nullptr);
    g->FindNode("relu")->set_assigned_device(kGpu);
    // MatMul + BiasAdd fuse on the CPU; the GPU's Relu stays a Relu.
    EXPECT_EQ(Fuse(g.get()), 1);
    EXPECT_EQ(g->FindNode("bias")->type_string(), "_FusedMatMul");
    EXPECT_EQ(g->FindNode("relu")->type_string(), "Relu");
  }
  {
    auto g = MustBuild(DenseRelu().graph(), "");  // not placed: no device type
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(Fuse(g.get()), 0);
  }
}

TEST(Fusion, NonFloatChainsAreLeftAlone) {
  auto g = MustBuild(DenseRelu(DT_DOUBLE).graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fuse(g.get()), 0);
  EXPECT_EQ(CountOps(*g, "MatMul"), 1);
}

TEST(Fusion, OptionsSwitchEachPartOff) {
  {
    auto g = MustBuild(DenseRelu().graph());
    ASSERT_NE(g, nullptr);
    FusionOptions o;
    o.fuse_matmul = false;
    EXPECT_EQ(Fuse(g.get(), o), 0);
  }
  {
    auto g = MustBuild(DenseRelu().graph());
    ASSERT_NE(g, nullptr);
    FusionOptions o;
    o.fuse_relu = false;
    EXPECT_EQ(Fuse(g.get(), o), 1);
    EXPECT_EQ(g->FindNode("bias")->type_string(), "_FusedMatMul");
    EXPECT_EQ(g->FindNode("relu")->type_string(), "Relu");
  }
  {
    auto g = MustBuild(DenseRelu().graph());
    ASSERT_NE(g, nullptr);
    FusionOptions o;
    o.keep = [](const Node* n) { return n->name() == "mm"; };
    EXPECT_EQ(Fuse(g.get(), o), 0);
  }
}

TEST(Fusion, ControlEdgesMoveToTheFusedNode) {
  GraphDefBuilder b = DenseRelu();
  b.NoOp("before_mm");
  b.NoOp("before_relu");
  b.NoOp("after_mm", {"mm"});
  b.NoOp("after_bias", {"bias"});
  b.FindNode("mm")->add_input("^before_mm");
  b.FindNode("relu")->add_input("^before_relu");
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fuse(g.get()), 1);
  EXPECT_THAT(InputsOf(*g, "relu"), UnorderedElementsAre("x", "w", "b", "^before_mm", "^before_relu"));
  EXPECT_EQ(InputsOf(*g, "relu").at(2), "b");  // data inputs first, in order
  EXPECT_THAT(InputsOf(*g, "after_mm"), ElementsAre("^relu"));
  EXPECT_THAT(InputsOf(*g, "after_bias"), ElementsAre("^relu"));
  ExpectReimports(*g);
}

// The bias is computed after the product (a control edge mm -> bias_source):
// one node could not both make the product and wait for the bias.
TEST(Fusion, AChainWhoseBiasDependsOnItsProductIsLeftAlone) {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("w", DT_FLOAT);
  b.Placeholder("b0", DT_FLOAT);
  b.Node("mm", "MatMul", {"x", "w"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Identity("b", "b0", DT_FLOAT, {"mm"});
  b.Node("bias", "BiasAdd", {"mm", "b"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fuse(g.get()), 0);
  EXPECT_EQ(CountOps(*g, "MatMul"), 1);
  ExpectReimports(*g);
}

TEST(Fusion, EveryLayerOfAStackFuses) {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  std::string in = "x";
  for (int i = 0; i < 3; ++i) {
    const std::string l = "l" + std::to_string(i);
    b.Placeholder(l + "/w", DT_FLOAT);
    b.Placeholder(l + "/b", DT_FLOAT);
    b.Node(l + "/mm", "MatMul", {in, l + "/w"}, {{"T", MakeAttr(DT_FLOAT)}});
    b.Node(l + "/bias", "BiasAdd", {l + "/mm", l + "/b"}, {{"T", MakeAttr(DT_FLOAT)}});
    b.Node(l + "/relu", "Relu", {l + "/bias"}, {{"T", MakeAttr(DT_FLOAT)}});
    in = l + "/relu";
  }
  auto g = MustBuild(b.graph());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Fuse(g.get()), 3);
  EXPECT_EQ(CountOps(*g, "_FusedMatMul"), 3);
  EXPECT_THAT(InputsOf(*g, "l2/relu"), ElementsAre("l1/relu", "l2/w", "l2/b"));
  ExpectReimports(*g);
}

}  // namespace
}  // namespace sluice
