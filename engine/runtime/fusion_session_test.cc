// The bias + activation fusion pass through a session: a graph of dense and
// convolution layers (MatMul/Conv2D -> BiasAdd [-> Relu], transposes, a 1x1
// convolution, edge-tile sizes) and a training-style gradient computes the
// same values, bit for bit, with SessionOptions::fuse_bias_activation on and
// off; the fused ops really run when it is on and never when it is off; and
// fetching an intermediate keeps its chain unfused.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "engine/runtime/session_test_util.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using Attrs = std::map<std::string, AttrValue>;

Attrs Float() { return {{"T", MakeAttr(DT_FLOAT)}}; }

// x [5, 7] -> dense 33 + relu -> dense 10 (transpose_b, no relu) = logits;
// img [2, 9, 8, 3] -> conv 3x3x20 SAME + relu = conv_relu -> conv 1x1x7 VALID
// + bias = pointwise; dy -> ReluGrad(dy, relu) -> BiasAddGrad = bias_grad.
GraphDef Model() {
  GraphDefBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("img", DT_FLOAT);
  b.Placeholder("dy", DT_FLOAT);
  b.Const("w1", RandomFloats(TensorShape({7, 33}), 1));
  b.Const("b1", RandomFloats(TensorShape({33}), 2));
  b.Const("w2", RandomFloats(TensorShape({10, 33}), 3));
  b.Const("b2", RandomFloats(TensorShape({10}), 4));
  b.Const("f1", RandomFloats(TensorShape({3, 3, 3, 20}), 5));
  b.Const("c1", RandomFloats(TensorShape({20}), 6));
  b.Const("f2", RandomFloats(TensorShape({1, 1, 20, 7}), 7));
  b.Const("c2", RandomFloats(TensorShape({7}), 8));
  b.Node("mm1", "MatMul", {"x", "w1"}, Float());
  b.Node("bias1", "BiasAdd", {"mm1", "b1"}, Float());
  b.Node("relu", "Relu", {"bias1"}, Float());
  b.Node("mm2", "MatMul", {"relu", "w2"}, {{"T", MakeAttr(DT_FLOAT)}, {"transpose_b", MakeAttr(true)}});
  b.Node("logits", "BiasAdd", {"mm2", "b2"}, Float());
  Attrs same = Float(), valid = Float();
  same["strides"] = valid["strides"] = MakeAttr(std::vector<int64_t>{1, 1, 1, 1});
  same["padding"] = MakeAttr("SAME");
  valid["padding"] = MakeAttr("VALID");
  b.Node("conv1", "Conv2D", {"img", "f1"}, same);
  b.Node("conv1_bias", "BiasAdd", {"conv1", "c1"}, Float());
  b.Node("conv_relu", "Relu", {"conv1_bias"}, Float());
  b.Node("conv2", "Conv2D", {"conv_relu", "f2"}, valid);
  b.Node("pointwise", "BiasAdd", {"conv2", "c2"}, Float());
  b.Node("relu_grad", "ReluGrad", {"dy", "relu"}, Float());
  b.Node("bias_grad", "BiasAddGrad", {"relu_grad"}, Float());
  return b.graph();
}

std::vector<std::pair<std::string, Tensor>> Feeds() {
  return {{"x", RandomFloats(TensorShape({5, 7}), 11)},
          {"img", RandomFloats(TensorShape({2, 9, 8, 3}), 12)},
          {"dy", RandomFloats(TensorShape({5, 33}), 13)}};
}

using Step = StepWithOps;

Step RunModel(bool fuse, const std::vector<std::string>& fetches) {
  SessionOptions options;
  options.fuse_bias_activation = fuse;
  return RunCollectingOps(options, Model(), Feeds(), fetches);
}

void ExpectBitwiseEqual(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  int positives = 0, zeros = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    ASSERT_EQ(pa[i], pb[i]) << what << " at " << i;
    positives += pa[i] > 0;
    zeros += pa[i] == 0;
  }
  // The values are not trivial: neither all zero nor all clipped.
  EXPECT_GT(positives, 0) << what;
  EXPECT_LT(zeros, a.NumElements()) << what;
}

TEST(FusionSession, FusedAndUnfusedGraphsComputeTheSameValues) {
  const std::vector<std::string> fetches = {"logits", "conv_relu", "pointwise", "bias_grad", "relu"};
  const Step off = RunModel(false, fetches);
  const Step on = RunModel(true, fetches);
  ASSERT_EQ(off.outputs.size(), fetches.size());
  ASSERT_EQ(on.outputs.size(), fetches.size());
  for (size_t i = 0; i < fetches.size(); ++i) ExpectBitwiseEqual(on.outputs[i], off.outputs[i], fetches[i]);

  // Off: the ops one by one. On: two fused MatMuls and two fused convolutions,
  // and no BiasAdd or Relu left (ReluGrad and BiasAddGrad still run).
  EXPECT_EQ(off.ops.count("MatMul"), 2u);
  EXPECT_EQ(off.ops.count("Conv2D"), 2u);
  EXPECT_EQ(off.ops.count("BiasAdd"), 4u);
  EXPECT_EQ(off.ops.count("Relu"), 2u);
  EXPECT_EQ(off.ops.count("_FusedMatMul"), 0u);
  EXPECT_EQ(off.ops.count("_FusedConv2D"), 0u);
  EXPECT_EQ(on.ops.count("_FusedMatMul"), 2u);
  EXPECT_EQ(on.ops.count("_FusedConv2D"), 2u);
  EXPECT_EQ(on.ops.count("MatMul"), 0u);
  EXPECT_EQ(on.ops.count("Conv2D"), 0u);
  EXPECT_EQ(on.ops.count("BiasAdd"), 0u);
  EXPECT_EQ(on.ops.count("Relu"), 0u);
  EXPECT_EQ(on.ops.count("ReluGrad"), 1u);
  EXPECT_EQ(on.ops.count("BiasAddGrad"), 1u);
}

TEST(FusionSession, AFetchedIntermediateKeepsItsChainUnfused) {
  // mm1 is fetched: the first dense chain stays MatMul, BiasAdd, Relu.
  // conv1_bias is fetched: Conv2D and BiasAdd fuse (the fused node has the
  // BiasAdd's name, so the fetch finds it) and the Relu stays apart.
  const std::vector<std::string> fetches = {"mm1", "relu", "conv1_bias", "conv_relu", "bias_grad"};
  const Step off = RunModel(false, fetches);
  const Step on = RunModel(true, fetches);
  ASSERT_EQ(on.outputs.size(), fetches.size());
  ASSERT_EQ(off.outputs.size(), fetches.size());
  for (size_t i = 0; i < fetches.size(); ++i) ExpectBitwiseEqual(on.outputs[i], off.outputs[i], fetches[i]);
  EXPECT_EQ(on.ops.count("MatMul"), 1u);
  EXPECT_EQ(on.ops.count("_FusedMatMul"), 0u);
  EXPECT_EQ(on.ops.count("Relu"), 2u);
  EXPECT_EQ(on.ops.count("_FusedConv2D"), 1u);  // Conv2D + BiasAdd, the Relu apart
  EXPECT_EQ(on.ops.count("Conv2D"), 0u);
}

}  // namespace
}  // namespace sluice
