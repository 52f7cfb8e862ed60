// Spec for the MaxPoolGrad + ReluGrad [+ BiasAddGrad] fusion pass: the chain
// on a CPU becomes one _FusedMaxPoolGrad named after the ReluGrad, with
// MaxPoolGrad's inputs and attrs; ReluGrad's consumers read its output 0 and
// BiasAddGrad's its output 1; control edges move to it. Chains whose mask is
// taken on another tensor, whose MaxPoolGrad output has another consumer,
// that sit on a device without the fused kernel (a GPU here: no GPU kernels
// linked), are float64, or are kept are left alone. (Values
// through a session: engine/runtime/pool_grad_fusion_session_test.cc.)
#include "engine/graph/optimizer_pool_grad_fusion.h"

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
using fusion_test::kGpu;
using fusion_test::kXpu;
using fusion_test::MustBuild;

std::map<std::string, AttrValue> PoolAttrs(DataType dtype) {
  return {{"T", MakeAttr(dtype)},
          {"ksize", MakeAttr(std::vector<int64_t>{1, 2, 2, 1})},
          {"strides", MakeAttr(std::vector<int64_t>{1, 2, 2, 1})},
          {"padding", MakeAttr("VALID")}};
}

// features = Relu(x); pool = MaxPool(features); dy -> MaxPoolGrad ->
// ReluGrad(., mask) -> BiasAddGrad; dx = Identity(relu_grad), db =
// Identity(bias_grad). `mask` is "features" (the fusable chain) or "other".
GraphDefBuilder Chain(DataType dtype = DT_FLOAT, const std::string& mask = "features") {
  GraphDefBuilder b;
  b.Placeholder("x", dtype);
  b.Placeholder("other", dtype);
  b.Placeholder("dy", dtype);
  b.Node("features", "Relu", {"x"}, {{"T", MakeAttr(dtype)}});
  b.Node("pool", "MaxPool", {"features"}, PoolAttrs(dtype));
  b.Node("pool_grad", "MaxPoolGrad", {"features", "pool", "dy"}, PoolAttrs(dtype));
  b.Node("relu_grad", "ReluGrad", {"pool_grad", mask}, {{"T", MakeAttr(dtype)}});
  b.Node("bias_grad", "BiasAddGrad", {"relu_grad"}, {{"T", MakeAttr(dtype)}});
  b.Node("dx", "Identity", {"relu_grad"}, {{"T", MakeAttr(dtype)}});
  b.Node("db", "Identity", {"bias_grad"}, {{"T", MakeAttr(dtype)}});
  return b;
}

int Fuse(Graph* g, PoolGradFusionOptions options = PoolGradFusionOptions()) {
  return FuseMaxPoolReluGrad(options, g);
}

REGISTER_KERNEL_BUILDER(Name("_FusedMaxPoolGrad").Device(fusion_test::kXpuType).TypeConstraint<float>("T"),
                        fusion_test::StandInKernel);

TEST(PoolGradFusion, FusesMaxPoolGradReluGradAndBiasAddGrad) {
  auto g = MustBuild(Chain().graph());
  ASSERT_EQ(Fuse(g.get()), 1);
  EXPECT_EQ(CountOps(*g, "MaxPoolGrad"), 0);
  EXPECT_EQ(CountOps(*g, "ReluGrad"), 0);
  EXPECT_EQ(CountOps(*g, "BiasAddGrad"), 0);
  const NodeDef fused = DefOf(*g, "relu_grad");
  EXPECT_EQ(fused.op(), "_FusedMaxPoolGrad");
  EXPECT_THAT(InputsOf(*g, "relu_grad"), ElementsAre("features", "pool", "dy"));
  std::vector<int64_t> ksize;
  ASSERT_TRUE(GetNodeAttr(fused, "ksize", &ksize).ok());
  EXPECT_THAT(ksize, ElementsAre(1, 2, 2, 1));
  EXPECT_THAT(InputsOf(*g, "dx"), ElementsAre("relu_grad"));
  EXPECT_THAT(InputsOf(*g, "db"), ElementsAre("relu_grad:1"));
  // The result is a valid graph (the fused op's attrs and shapes).
  GraphDef def;
  g->ToGraphDef(&def);
  EXPECT_TRUE(GraphFromGraphDef(def).ok());
}

TEST(PoolGradFusion, WithoutABiasAddGradOutputOneIsUnused) {
  GraphDefBuilder b = Chain();
  auto g = MustBuild(b.graph());
  PoolGradFusionOptions options;
  options.fuse_bias_grad = false;
  ASSERT_EQ(Fuse(g.get(), options), 1);
  EXPECT_EQ(CountOps(*g, "BiasAddGrad"), 1);
  EXPECT_THAT(InputsOf(*g, "bias_grad"), ElementsAre("relu_grad"));
  EXPECT_THAT(InputsOf(*g, "dx"), ElementsAre("relu_grad"));
}

TEST(PoolGradFusion, AMaskOnAnotherTensorIsLeftAlone) {
  auto g = MustBuild(Chain(DT_FLOAT, "other").graph());
  EXPECT_EQ(Fuse(g.get()), 0);
  EXPECT_EQ(CountOps(*g, "MaxPoolGrad"), 1);
}

TEST(PoolGradFusion, AMaxPoolGradWithAnotherConsumerIsLeftAlone) {
  GraphDefBuilder b = Chain();
  b.Node("peek", "Identity", {"pool_grad"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  EXPECT_EQ(Fuse(g.get()), 0);
}

// This binary links no GPU kernels: a GPU has no _FusedMaxPoolGrad; kXpuType
// has a stand-in one (registered above), so the chain fuses there.
TEST(PoolGradFusion, ChainsFuseOnlyOnDevicesWithTheFusedKernel) {
  auto xpu = MustBuild(Chain().graph(), kXpu);
  EXPECT_EQ(Fuse(xpu.get()), 1);
  ASSERT_NE(xpu->FindNode("relu_grad"), nullptr);
  EXPECT_EQ(xpu->FindNode("relu_grad")->type_string(), "_FusedMaxPoolGrad");
  EXPECT_EQ(xpu->FindNode("relu_grad")->assigned_device(), kXpu);
  EXPECT_EQ(CountOps(*xpu, "BiasAddGrad"), 0);
  auto gpu = MustBuild(Chain().graph(), kGpu);
  EXPECT_EQ(Fuse(gpu.get()), 0);
  EXPECT_EQ(CountOps(*gpu, "MaxPoolGrad"), 1);
}

TEST(PoolGradFusion, Float64AndKeptChainsAreLeftAlone) {
  auto wide = MustBuild(Chain(DT_DOUBLE).graph());
  EXPECT_EQ(Fuse(wide.get()), 0);
  auto kept = MustBuild(Chain().graph());
  PoolGradFusionOptions options;
  options.keep = [](const Node* n) { return n->name() == "pool_grad"; };
  EXPECT_EQ(Fuse(kept.get(), options), 0);
}

TEST(PoolGradFusion, ControlEdgesMoveToTheFusedNode) {
  GraphDefBuilder b = Chain();
  b.Placeholder("before", DT_FLOAT);
  b.Node("after", "NoOp", {"^bias_grad"}, {});
  GraphDef def = b.graph();
  for (NodeDef& n : *def.mutable_node()) {
    if (n.name() == "relu_grad") n.add_input("^before");
  }
  auto g = MustBuild(def);
  ASSERT_EQ(Fuse(g.get()), 1);
  EXPECT_THAT(InputsOf(*g, "relu_grad"), UnorderedElementsAre("features", "pool", "dy", "^before"));
  EXPECT_THAT(InputsOf(*g, "after"), ElementsAre("^relu_grad"));
}

}  // namespace
}  // namespace sluice
