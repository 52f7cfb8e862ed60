// SessionOptions::onednn_kernels through a session: a small convolutional
// model (a fused Conv2D + BiasAdd + Relu, a strided VALID Conv2D, and both
// backprops of a convolution) computes the same values, within float32
// rounding, with the oneDNN kernels (engine/kernels/onednn) selected and
// without; oneDNN primitives run only when the option is on.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/graph/graph_def_builder.h"
#include "engine/kernels/onednn/onednn_util.h"
#include "engine/runtime/session.h"
#include "engine/runtime/session_test_util.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

Tensor Int32s(std::vector<int32_t> v) { return Tensor::FromVector<int32_t>(v); }

using Attrs = std::map<std::string, AttrValue>;

// img [4, 12, 12, 8] -> conv 3x3x16 SAME + bias + relu = conv_relu -> conv
// 5x5x8 stride 2 VALID = conv2 [4, 4, 4, 8]; dy [4, 12, 12, 16] gives
// dx (Conv2DBackpropInput) and dw (Conv2DBackpropFilter) of the first conv.
GraphDef Model() {
  GraphDefBuilder b;
  b.Placeholder("img", DT_FLOAT);
  b.Placeholder("dy", DT_FLOAT);
  b.Const("f1", RandomFloats(TensorShape({3, 3, 8, 16}), 1));
  b.Const("c1", RandomFloats(TensorShape({16}), 2));
  b.Const("f2", RandomFloats(TensorShape({5, 5, 16, 8}), 3));
  b.Const("img_shape", Int32s({4, 12, 12, 8}));
  b.Const("f1_shape", Int32s({3, 3, 8, 16}));
  Attrs same = {{"T", MakeAttr(DT_FLOAT)}, {"padding", MakeAttr("SAME")}};
  same["strides"] = MakeAttr(std::vector<int64_t>{1, 1, 1, 1});
  Attrs valid2 = {{"T", MakeAttr(DT_FLOAT)}, {"padding", MakeAttr("VALID")}};
  valid2["strides"] = MakeAttr(std::vector<int64_t>{1, 2, 2, 1});
  b.Node("conv1", "Conv2D", {"img", "f1"}, same);
  b.Node("conv1_bias", "BiasAdd", {"conv1", "c1"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("conv_relu", "Relu", {"conv1_bias"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("conv2", "Conv2D", {"conv_relu", "f2"}, valid2);
  b.Node("dx", "Conv2DBackpropInput", {"img_shape", "f1", "dy"}, same);
  b.Node("dw", "Conv2DBackpropFilter", {"img", "f1_shape", "dy"}, same);
  return b.graph();
}

std::vector<Tensor> RunModel(bool onednn) {
  SessionOptions options;
  options.onednn_kernels = onednn;
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> outputs;
  if (!session.ok()) return outputs;
  absl::Status s = (*session)->Create(Model());
  EXPECT_TRUE(s.ok()) << s;
  s = (*session)->Run({{"img", RandomFloats(TensorShape({4, 12, 12, 8}), 11)},
                       {"dy", RandomFloats(TensorShape({4, 12, 12, 16}), 12)}},
                      {"conv_relu", "conv2", "dx", "dw"}, {}, &outputs);
  EXPECT_TRUE(s.ok()) << s;
  return outputs;
}

TEST(OneDnnSession, OneDnnKernelsComputeWhatOursDo) {
  const int64_t before_off = onednn::PrimitiveRuns();
  const std::vector<Tensor> ours = RunModel(false);
  EXPECT_EQ(onednn::PrimitiveRuns(), before_off) << "oneDNN ran with onednn_kernels off";
  const int64_t before_on = onednn::PrimitiveRuns();
  const std::vector<Tensor> theirs = RunModel(true);
  EXPECT_GE(onednn::PrimitiveRuns(), before_on + 4) << "the four convolutions did not all run on oneDNN";
  ASSERT_EQ(ours.size(), 4u);
  ASSERT_EQ(theirs.size(), 4u);
  const char* names[] = {"conv_relu", "conv2", "dx", "dw"};
  for (size_t i = 0; i < ours.size(); ++i) {
    ASSERT_EQ(ours[i].shape(), theirs[i].shape()) << names[i];
    const FloatDifference d = CompareFloats(ours[i], theirs[i]);
    EXPECT_GT(d.scale, 1.0) << names[i] << " is trivial";
    // Sums of up to 4 * 12 * 12 = 576 products of values in [-1, 1].
    EXPECT_LE(d.worst, 1e-4 * d.scale) << names[i];
  }
}

}  // namespace
}  // namespace sluice
