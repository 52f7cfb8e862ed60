// The MaxPoolGrad + ReluGrad [+ BiasAddGrad] fusion through a session: the
// backward of conv -> bias -> relu -> max pool, with tiling 2x2 windows and
// with overlapping 3x3 stride-2 SAME windows, computes the same values with
// SessionOptions::fuse_bias_activation on and off: the input gradient and a
// convolution's filter gradient that reads it bit for bit, the bias gradient
// within float32 accumulation error (BiasAddGrad sums in float32 by blocks,
// the fused kernel in float32 per image, then in float64 across images: both
// within a few roundings of the sum of magnitudes); the fused op
// runs when the option is on, and MaxPoolGrad, ReluGrad and BiasAddGrad do not.
#include <cmath>
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

Attrs Pool(int64_t size, int64_t stride, const char* padding) {
  Attrs a = Float();
  a["ksize"] = MakeAttr(std::vector<int64_t>{1, size, size, 1});
  a["strides"] = MakeAttr(std::vector<int64_t>{1, stride, stride, 1});
  a["padding"] = MakeAttr(padding);
  return a;
}

// img [3, 8, 10, 4] -> conv 3x3x16 SAME + bias + relu = conv_relu;
// pool2 = MaxPool 2x2/2 VALID [3, 4, 5, 16]; pool3 = MaxPool 3x3/2 SAME
// [3, 4, 5, 16]. With dy2, dy3 of the pooled shape: MaxPoolGrad -> ReluGrad
// (against conv_relu) -> BiasAddGrad for each, and the filter gradient of the
// convolution from the first ReluGrad.
GraphDef Model() {
  GraphDefBuilder b;
  b.Placeholder("img", DT_FLOAT);
  b.Placeholder("dy2", DT_FLOAT);
  b.Placeholder("dy3", DT_FLOAT);
  b.Const("f", RandomFloats(TensorShape({3, 3, 4, 16}), 1));
  b.Const("c", RandomFloats(TensorShape({16}), 2));
  b.Const("f_shape", Tensor::FromVector<int32_t>({3, 3, 4, 16}));
  Attrs same = Float();
  same["strides"] = MakeAttr(std::vector<int64_t>{1, 1, 1, 1});
  same["padding"] = MakeAttr("SAME");
  b.Node("conv", "Conv2D", {"img", "f"}, same);
  b.Node("conv_bias", "BiasAdd", {"conv", "c"}, Float());
  b.Node("conv_relu", "Relu", {"conv_bias"}, Float());
  b.Node("pool2", "MaxPool", {"conv_relu"}, Pool(2, 2, "VALID"));
  b.Node("pool3", "MaxPool", {"conv_relu"}, Pool(3, 2, "SAME"));
  b.Node("pool2_grad", "MaxPoolGrad", {"conv_relu", "pool2", "dy2"}, Pool(2, 2, "VALID"));
  b.Node("relu2_grad", "ReluGrad", {"pool2_grad", "conv_relu"}, Float());
  b.Node("bias2_grad", "BiasAddGrad", {"relu2_grad"}, Float());
  b.Node("filter_grad", "Conv2DBackpropFilter", {"img", "f_shape", "relu2_grad"}, same);
  b.Node("pool3_grad", "MaxPoolGrad", {"conv_relu", "pool3", "dy3"}, Pool(3, 2, "SAME"));
  b.Node("relu3_grad", "ReluGrad", {"pool3_grad", "conv_relu"}, Float());
  b.Node("bias3_grad", "BiasAddGrad", {"relu3_grad"}, Float());
  return b.graph();
}

const std::vector<std::string> kFetches = {"relu2_grad", "bias2_grad", "filter_grad", "relu3_grad", "bias3_grad"};

using Step = StepWithOps;

Step RunModel(bool fuse) {
  SessionOptions options;
  options.fuse_bias_activation = fuse;
  return RunCollectingOps(options, Model(),
                          {{"img", RandomFloats(TensorShape({3, 8, 10, 4}), 11)},
                           {"dy2", RandomFloats(TensorShape({3, 4, 5, 16}), 12)},
                           {"dy3", RandomFloats(TensorShape({3, 4, 5, 16}), 13)}},
                          kFetches);
}

TEST(PoolGradFusionSession, FusedAndUnfusedGraphsComputeTheSameValues) {
  const Step off = RunModel(false);
  const Step on = RunModel(true);
  ASSERT_EQ(off.outputs.size(), kFetches.size());
  ASSERT_EQ(on.outputs.size(), kFetches.size());
  for (size_t i = 0; i < kFetches.size(); ++i) {
    const Tensor& a = on.outputs[i];
    const Tensor& b = off.outputs[i];
    ASSERT_EQ(a.shape(), b.shape()) << kFetches[i];
    const bool bias = kFetches[i].rfind("bias", 0) == 0;
    // A bias gradient's terms: the input gradient fetched just before it.
    std::vector<double> magnitude(16, 0.0);
    if (bias) {
      const Tensor& terms = off.outputs[i - 1];
      for (int64_t j = 0; j < terms.NumElements(); ++j) magnitude[j % 16] += std::abs(terms.data<float>()[j]);
    }
    int zeros = 0, nonzeros = 0;
    for (int64_t j = 0; j < a.NumElements(); ++j) {
      const float x = a.data<float>()[j], y = b.data<float>()[j];
      if (bias) {
        EXPECT_LE(std::abs(x - y), 1e-6 * magnitude[j]) << kFetches[i] << " at " << j;
      } else {
        ASSERT_EQ(x, y) << kFetches[i] << " at " << j;
      }
      zeros += y == 0.0f;
      nonzeros += y != 0.0f;
    }
    EXPECT_GT(nonzeros, 0) << kFetches[i];
    // The input gradients are zero off the window maxima and where the relu
    // clipped: the mask did something.
    if (kFetches[i].find("relu") == 0) {
      EXPECT_GT(zeros, a.NumElements() / 2) << kFetches[i];
    }
  }
  EXPECT_EQ(off.ops.count("_FusedMaxPoolGrad"), 0u);
  EXPECT_EQ(off.ops.count("MaxPoolGrad"), 2u);
  EXPECT_EQ(on.ops.count("_FusedMaxPoolGrad"), 2u);
  EXPECT_EQ(on.ops.count("MaxPoolGrad"), 0u);
  EXPECT_EQ(on.ops.count("ReluGrad"), 0u);
  EXPECT_EQ(on.ops.count("BiasAddGrad"), 0u);
}

}  // namespace
}  // namespace sluice
