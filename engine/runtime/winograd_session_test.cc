// SessionOptions::winograd_kernels through a session: a model of 5x5
// stride-1 convolutions with 16 or more channels (a fused Conv2D + BiasAdd +
// Relu, a VALID Conv2D, both backprops of a convolution), a 3x3 stride-1 one,
// and a 3x3 stride-2 one that the Winograd kernels do not take computes the
// same values, within float32 rounding, with the option on and off. With it
// on, the Winograd kernels run the five stride-1 convolutions, and with
// oneDNN also on the stride-2 one falls back to oneDNN's kernel, not ours.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/graph/graph_def_builder.h"
#include "engine/kernels/onednn/onednn_util.h"
#include "engine/kernels/winograd_conv.h"
#include "engine/runtime/session.h"
#include "engine/runtime/session_test_util.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

Tensor Int32s(std::vector<int32_t> v) { return Tensor::FromVector<int32_t>(v); }

using Attrs = std::map<std::string, AttrValue>;

const char* const kOutputs[] = {"conv_relu", "conv2", "dx", "dw", "conv3", "conv3_stride2"};

// img [3, 11, 9, 16] -> conv 5x5x32 SAME + bias + relu = conv_relu -> conv
// 5x5x16 VALID = conv2 [3, 7, 5, 16]; dy [3, 11, 9, 32] gives dx
// (Conv2DBackpropInput) and dw (Conv2DBackpropFilter) of the first conv;
// conv3 = img convolved with a 3x3x16 filter (F(4x4, 3x3)), conv3_stride2
// the same at stride 2 (not a Winograd shape).
GraphDef Model() {
  GraphDefBuilder b;
  b.Placeholder("img", DT_FLOAT);
  b.Placeholder("dy", DT_FLOAT);
  b.Const("f1", RandomFloats(TensorShape({5, 5, 16, 32}), 1));
  b.Const("c1", RandomFloats(TensorShape({32}), 2));
  b.Const("f2", RandomFloats(TensorShape({5, 5, 32, 16}), 3));
  b.Const("f3", RandomFloats(TensorShape({3, 3, 16, 16}), 4));
  b.Const("img_shape", Int32s({3, 11, 9, 16}));
  b.Const("f1_shape", Int32s({5, 5, 16, 32}));
  Attrs same = {{"T", MakeAttr(DT_FLOAT)}, {"padding", MakeAttr("SAME")}};
  same["strides"] = MakeAttr(std::vector<int64_t>{1, 1, 1, 1});
  Attrs valid = same;
  valid["padding"] = MakeAttr("VALID");
  b.Node("conv1", "Conv2D", {"img", "f1"}, same);
  b.Node("conv1_bias", "BiasAdd", {"conv1", "c1"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("conv_relu", "Relu", {"conv1_bias"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("conv2", "Conv2D", {"conv_relu", "f2"}, valid);
  b.Node("dx", "Conv2DBackpropInput", {"img_shape", "f1", "dy"}, same);
  b.Node("dw", "Conv2DBackpropFilter", {"img", "f1_shape", "dy"}, same);
  b.Node("conv3", "Conv2D", {"img", "f3"}, same);
  Attrs stride2 = same;
  stride2["strides"] = MakeAttr(std::vector<int64_t>{1, 2, 2, 1});
  b.Node("conv3_stride2", "Conv2D", {"img", "f3"}, stride2);
  return b.graph();
}

std::vector<Tensor> RunModel(bool winograd, bool onednn) {
  SessionOptions options;
  options.winograd_kernels = winograd;
  options.onednn_kernels = onednn;
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> outputs;
  if (!session.ok()) return outputs;
  absl::Status s = (*session)->Create(Model());
  EXPECT_TRUE(s.ok()) << s;
  s = (*session)->Run({{"img", RandomFloats(TensorShape({3, 11, 9, 16}), 11)},
                       {"dy", RandomFloats(TensorShape({3, 11, 9, 32}), 12)}},
                      std::vector<std::string>(std::begin(kOutputs), std::end(kOutputs)), {}, &outputs);
  EXPECT_TRUE(s.ok()) << s;
  return outputs;
}

void ExpectClose(const std::vector<Tensor>& direct, const std::vector<Tensor>& winograd) {
  ASSERT_EQ(direct.size(), std::size(kOutputs));
  ASSERT_EQ(winograd.size(), std::size(kOutputs));
  for (size_t i = 0; i < direct.size(); ++i) {
    ASSERT_EQ(direct[i].shape(), winograd[i].shape()) << kOutputs[i];
    const FloatDifference d = CompareFloats(direct[i], winograd[i]);
    EXPECT_GT(d.scale, 1.0) << kOutputs[i] << " is trivial";
    // Sums of up to 3 * 11 * 9 = 297 products of values in [-1, 1]; the
    // transforms scale by up to 5 in and 16 out (winograd_conv.h).
    EXPECT_LE(d.worst, 1e-4 * d.scale) << kOutputs[i];
  }
}

TEST(WinogradSession, WinogradKernelsComputeWhatDirectOnesDo) {
  const int64_t before_off = winograd::Runs();
  const std::vector<Tensor> direct = RunModel(false, false);
  EXPECT_EQ(winograd::Runs(), before_off) << "a Winograd convolution ran with winograd_kernels off";
  const int64_t before_on = winograd::Runs();
  const std::vector<Tensor> fast = RunModel(true, false);
  EXPECT_EQ(winograd::Runs(), before_on + 5)
      << "the four 5x5 convolutions and the 3x3 stride-1 one, and only they, run Winograd";
  ExpectClose(direct, fast);
}

TEST(WinogradSession, OtherShapesFallBackToOneDnnWhenItIsOn) {
  const int64_t winograd_before = winograd::Runs();
  const int64_t onednn_before = onednn::PrimitiveRuns();
  const std::vector<Tensor> fast = RunModel(true, true);
  EXPECT_EQ(winograd::Runs(), winograd_before + 5);
  EXPECT_GT(onednn::PrimitiveRuns(), onednn_before) << "the stride-2 convolution did not run on oneDNN";
  ExpectClose(RunModel(false, false), fast);
}

}  // namespace
}  // namespace sluice
