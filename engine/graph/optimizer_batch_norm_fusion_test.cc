// Spec for the batch-norm fusion pass: on a CPU, FusedBatchNormV3 -> Relu and
// FusedBatchNormV3 -> AddN(side, y) -> Relu become one _FusedBatchNormEx
// named after the Relu (the side input last, num_side_inputs 1), whose
// outputs 1-5 are the batch norm's; ReluGrad -> FusedBatchNormGradV3 becomes
// one _FusedBatchNormGradEx named after the gradient, taking the forward's
// offset and the ReluGrad's mask tensor as y, its side_input_backprop read by
// the ReluGrad's other consumers. A y with another reader, an AddN of three,
// float64, kept nodes, a device without the fused kernels (a GPU here) are
// left alone, and so are chains that would put the fused node in a cycle or
// whose members read each other twice; control edges move. (Values through a session:
// engine/runtime/batch_norm_fusion_session_test.cc.)
#include "engine/graph/optimizer_batch_norm_fusion.h"

#include <map>
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
using fusion_test::kGpu;
using fusion_test::kXpu;
using fusion_test::MustBuild;

std::map<std::string, AttrValue> Attrs(DataType dtype) {
  return {{"T", MakeAttr(dtype)}, {"U", MakeAttr(dtype)}, {"epsilon", MakeAttr(0.001f)}};
}

// bn = FusedBatchNormV3(x, ...); relu = Relu(bn) or Relu(AddN(side, bn));
// moving = Identity(bn:1); backward: ReluGrad(dy, relu) -> grad; dx, dscale
// read the gradient, `other` the ReluGrad (a residual's other branch).
GraphDefBuilder Chain(bool with_side, DataType dtype = DT_FLOAT) {
  GraphDefBuilder b;
  for (const char* name : {"x", "scale", "offset", "side", "dy"}) b.Placeholder(name, dtype);
  b.Node("bn", "FusedBatchNormV3", {"x", "scale", "offset", "scale", "offset"}, Attrs(dtype));
  b.Node("moving", "Identity", {"bn:1"}, {{"T", MakeAttr(dtype)}});
  if (with_side) {
    b.Node("sum", "AddN", {"side", "bn"}, {{"T", MakeAttr(dtype)}, {"N", MakeAttr(int64_t{2})}});
    b.Node("relu", "Relu", {"sum"}, {{"T", MakeAttr(dtype)}});
  } else {
    b.Node("relu", "Relu", {"bn"}, {{"T", MakeAttr(dtype)}});
  }
  b.Node("relu_grad", "ReluGrad", {"dy", "relu"}, {{"T", MakeAttr(dtype)}});
  b.Node("grad", "FusedBatchNormGradV3", {"relu_grad", "x", "scale", "bn:3", "bn:4", "bn:5"}, Attrs(dtype));
  b.Node("dx", "Identity", {"grad"}, {{"T", MakeAttr(dtype)}});
  b.Node("dscale", "Identity", {"grad:1"}, {{"T", MakeAttr(dtype)}});
  if (with_side) b.Node("other", "Identity", {"relu_grad"}, {{"T", MakeAttr(dtype)}});
  return b;
}

BatchNormFusionResult Fuse(Graph* g, BatchNormFusionOptions options = BatchNormFusionOptions()) {
  return FuseBatchNormRelu(options, g);
}

REGISTER_KERNEL_BUILDER(Name("_FusedBatchNormEx").Device(fusion_test::kXpuType).TypeConstraint<float>("T"),
                        fusion_test::StandInKernel);
REGISTER_KERNEL_BUILDER(Name("_FusedBatchNormGradEx").Device(fusion_test::kXpuType).TypeConstraint<float>("T"),
                        fusion_test::StandInKernel);

void ExpectValid(const Graph& g) {
  GraphDef def;
  g.ToGraphDef(&def);
  auto rebuilt = GraphFromGraphDef(def);
  EXPECT_TRUE(rebuilt.ok()) << rebuilt.status();
}

TEST(BatchNormFusion, FusesBatchNormReluAndItsGradient) {
  auto g = MustBuild(Chain(false).graph());
  const BatchNormFusionResult r = Fuse(g.get());
  EXPECT_EQ(r.forward, 1);
  EXPECT_EQ(r.with_side, 0);
  EXPECT_EQ(r.backward, 1);
  for (const char* op : {"FusedBatchNormV3", "Relu", "ReluGrad", "FusedBatchNormGradV3"}) {
    EXPECT_EQ(CountOps(*g, op), 0) << op;
  }
  const NodeDef forward = DefOf(*g, "relu");
  EXPECT_EQ(forward.op(), "_FusedBatchNormEx");
  EXPECT_THAT(InputsOf(*g, "relu"), ElementsAre("x", "scale", "offset", "scale", "offset"));
  std::string mode;
  int64_t sides = -1;
  float epsilon = 0;
  ASSERT_TRUE(GetNodeAttr(forward, "activation_mode", &mode).ok());
  ASSERT_TRUE(GetNodeAttr(forward, "num_side_inputs", &sides).ok());
  ASSERT_TRUE(GetNodeAttr(forward, "epsilon", &epsilon).ok());
  EXPECT_EQ(mode, "Relu");
  EXPECT_EQ(sides, 0);
  EXPECT_FLOAT_EQ(epsilon, 0.001f);
  EXPECT_THAT(InputsOf(*g, "moving"), ElementsAre("relu:1"));
  const NodeDef backward = DefOf(*g, "grad");
  EXPECT_EQ(backward.op(), "_FusedBatchNormGradEx");
  // y_backprop, x, scale, reserve_space_1..3 (now the fused forward's),
  // offset, y (the ReluGrad's mask tensor).
  EXPECT_THAT(InputsOf(*g, "grad"), ElementsAre("dy", "x", "scale", "relu:3", "relu:4", "relu:5", "offset", "relu"));
  ASSERT_TRUE(GetNodeAttr(backward, "num_side_inputs", &sides).ok());
  EXPECT_EQ(sides, 0);
  EXPECT_THAT(InputsOf(*g, "dx"), ElementsAre("grad"));
  EXPECT_THAT(InputsOf(*g, "dscale"), ElementsAre("grad:1"));
  ExpectValid(*g);
}

TEST(BatchNormFusion, AResidualAddJoinsAsTheSideInput) {
  auto g = MustBuild(Chain(true).graph());
  const BatchNormFusionResult r = Fuse(g.get());
  EXPECT_EQ(r.forward, 1);
  EXPECT_EQ(r.with_side, 1);
  EXPECT_EQ(r.backward, 1);
  EXPECT_EQ(CountOps(*g, "AddN"), 0);
  EXPECT_THAT(InputsOf(*g, "relu"), ElementsAre("x", "scale", "offset", "scale", "offset", "side"));
  int64_t sides = -1;
  ASSERT_TRUE(GetNodeAttr(DefOf(*g, "relu"), "num_side_inputs", &sides).ok());
  EXPECT_EQ(sides, 1);
  // The ReluGrad's other reader takes the fused gradient's side_input_backprop.
  ASSERT_TRUE(GetNodeAttr(DefOf(*g, "grad"), "num_side_inputs", &sides).ok());
  EXPECT_EQ(sides, 1);
  EXPECT_THAT(InputsOf(*g, "other"), ElementsAre("grad:5"));
  ExpectValid(*g);
}

TEST(BatchNormFusion, AYWithAnotherReaderKeepsTheForwardApart) {
  GraphDefBuilder b = Chain(false);
  b.Node("peek", "Identity", {"bn"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  const BatchNormFusionResult r = Fuse(g.get());
  EXPECT_EQ(r.forward, 0);
  EXPECT_EQ(CountOps(*g, "Relu"), 1);
  // The backward does not depend on it: the offset comes from the unfused batch norm.
  EXPECT_EQ(r.backward, 1);
  EXPECT_THAT(InputsOf(*g, "grad"), ElementsAre("dy", "x", "scale", "bn:3", "bn:4", "bn:5", "offset", "relu"));
}

TEST(BatchNormFusion, AnAddNOfThreeIsLeftAlone) {
  GraphDefBuilder b;
  for (const char* name : {"x", "scale", "offset", "side"}) b.Placeholder(name, DT_FLOAT);
  b.Node("bn", "FusedBatchNormV3", {"x", "scale", "offset", "scale", "offset"}, Attrs(DT_FLOAT));
  b.Node("sum", "AddN", {"side", "bn", "side"}, {{"T", MakeAttr(DT_FLOAT)}, {"N", MakeAttr(int64_t{3})}});
  b.Node("relu", "Relu", {"sum"}, {{"T", MakeAttr(DT_FLOAT)}});
  auto g = MustBuild(b.graph());
  EXPECT_EQ(Fuse(g.get()).forward, 0);
  EXPECT_EQ(CountOps(*g, "AddN"), 1);
}

// This binary links no GPU kernels: a GPU has no fused batch-norm kernels;
// kXpuType has stand-in ones (registered above), so chains fuse there.
TEST(BatchNormFusion, ChainsFuseOnlyOnDevicesWithTheFusedKernels) {
  auto xpu = MustBuild(Chain(true).graph(), kXpu);
  const BatchNormFusionResult on_xpu = Fuse(xpu.get());
  EXPECT_EQ(on_xpu.forward + on_xpu.backward, 2);
  EXPECT_EQ(xpu->FindNode("relu")->assigned_device(), kXpu);
  auto gpu = MustBuild(Chain(true).graph(), kGpu);
  const BatchNormFusionResult on_gpu = Fuse(gpu.get());
  EXPECT_EQ(on_gpu.forward + on_gpu.backward, 0);
}

TEST(BatchNormFusion, Float64AndKeptChainsAreLeftAlone) {
  auto wide = MustBuild(Chain(true, DT_DOUBLE).graph());
  const BatchNormFusionResult r = Fuse(wide.get());
  EXPECT_EQ(r.forward + r.backward, 0);
  auto kept = MustBuild(Chain(true).graph());
  BatchNormFusionOptions options;
  options.keep = [](const Node* n) { return n->name() == "sum" || n->name() == "relu_grad"; };
  const BatchNormFusionResult k = Fuse(kept.get(), options);
  EXPECT_EQ(k.forward + k.backward, 0);
}

TEST(BatchNormFusion, ControlEdgesMoveToTheFusedNodes) {
  GraphDefBuilder b = Chain(true);
  b.Placeholder("before", DT_FLOAT);
  b.Node("after", "NoOp", {"^sum", "^relu_grad"}, {});
  GraphDef def = b.graph();
  for (NodeDef& n : *def.mutable_node()) {
    if (n.name() == "bn" || n.name() == "grad") n.add_input("^before");
  }
  auto g = MustBuild(def);
  const BatchNormFusionResult r = Fuse(g.get());
  ASSERT_EQ(r.forward + r.backward, 2);
  EXPECT_THAT(InputsOf(*g, "relu"), UnorderedElementsAre("x", "scale", "offset", "scale", "offset", "side", "^before"));
  EXPECT_THAT(InputsOf(*g, "grad"),
              UnorderedElementsAre("dy", "x", "scale", "relu:3", "relu:4", "relu:5", "offset", "relu", "^before"));
  EXPECT_THAT(InputsOf(*g, "after"), UnorderedElementsAre("^relu", "^grad"));
}

// A fused node whose input would come from a member (the side input computed
// from the batch norm's statistics; the gradient's x from the ReluGrad) would
// be in a cycle: left alone, as are chains whose members read each other
// twice (AddN(bn:0, bn:1); a gradient that takes the ReluGrad as y_backprop
// and as x), whose removed member would be left an input of the fused node.
TEST(BatchNormFusion, CyclesAndMembersReadTwiceAreLeftAlone) {
  GraphDefBuilder cycle;
  for (const char* name : {"x", "scale", "offset", "dy"}) cycle.Placeholder(name, DT_FLOAT);
  cycle.Node("bn", "FusedBatchNormV3", {"x", "scale", "offset", "scale", "offset"}, Attrs(DT_FLOAT));
  cycle.Node("from_bn", "Identity", {"bn:1"}, {{"T", MakeAttr(DT_FLOAT)}});
  cycle.Node("sum", "AddN", {"from_bn", "bn"}, {{"T", MakeAttr(DT_FLOAT)}, {"N", MakeAttr(int64_t{2})}});
  cycle.Node("relu", "Relu", {"sum"}, {{"T", MakeAttr(DT_FLOAT)}});
  // (Another batch norm, whose forward fuses: this one's sum is a vector.)
  cycle.Node("bn2", "FusedBatchNormV3", {"x", "scale", "offset", "scale", "offset"}, Attrs(DT_FLOAT));
  cycle.Node("relu2", "Relu", {"bn2"}, {{"T", MakeAttr(DT_FLOAT)}});
  cycle.Node("relu_grad", "ReluGrad", {"dy", "relu2"}, {{"T", MakeAttr(DT_FLOAT)}});
  cycle.Node("from_relu_grad", "Identity", {"relu_grad"}, {{"T", MakeAttr(DT_FLOAT)}});
  cycle.Node("grad", "FusedBatchNormGradV3", {"relu_grad", "from_relu_grad", "scale", "bn2:3", "bn2:4", "bn2:5"},
             Attrs(DT_FLOAT));
  auto g = MustBuild(cycle.graph());
  BatchNormFusionResult r = Fuse(g.get());
  EXPECT_EQ(r.forward, 1);  // bn2's
  EXPECT_EQ(r.backward, 0);
  EXPECT_EQ(CountOps(*g, "AddN"), 1);
  EXPECT_EQ(CountOps(*g, "ReluGrad"), 1);
  ExpectValid(*g);

  GraphDefBuilder twice;
  for (const char* name : {"x", "scale", "offset", "dy"}) twice.Placeholder(name, DT_FLOAT);
  twice.Node("bn", "FusedBatchNormV3", {"x", "scale", "offset", "scale", "offset"}, Attrs(DT_FLOAT));
  twice.Node("sum", "AddN", {"bn:0", "bn:1"}, {{"T", MakeAttr(DT_FLOAT)}, {"N", MakeAttr(int64_t{2})}});
  twice.Node("relu", "Relu", {"sum"}, {{"T", MakeAttr(DT_FLOAT)}});
  twice.Node("bn2", "FusedBatchNormV3", {"x", "scale", "offset", "scale", "offset"}, Attrs(DT_FLOAT));
  twice.Node("relu2", "Relu", {"bn2"}, {{"T", MakeAttr(DT_FLOAT)}});
  twice.Node("relu_grad", "ReluGrad", {"dy", "relu2"}, {{"T", MakeAttr(DT_FLOAT)}});
  twice.Node("grad", "FusedBatchNormGradV3", {"relu_grad", "relu_grad", "scale", "bn2:3", "bn2:4", "bn2:5"},
             Attrs(DT_FLOAT));
  g = MustBuild(twice.graph());
  r = Fuse(g.get());
  EXPECT_EQ(r.forward, 1);  // bn2's
  EXPECT_EQ(r.backward, 0);
  EXPECT_EQ(CountOps(*g, "AddN"), 1);
  EXPECT_EQ(CountOps(*g, "ReluGrad"), 1);
  ExpectValid(*g);
}

}  // namespace
}  // namespace sluice
