// The batch-norm fusion through a session: batch norms followed by a Relu
// (training with running averages, inference, NHWC and NCHW), one whose y
// joins a side input in an AddN before the Relu (a residual connection), and
// the gradients of the training ones through their ReluGrads compute the same
// values bit for bit with SessionOptions::fuse_batch_norm on and off (y, the
// statistics, dx, dscale, doffset, and the masked gradient that the residual's
// other branch reads); _FusedBatchNormEx and _FusedBatchNormGradEx run when
// the option is on, and Relu, AddN, ReluGrad, FusedBatchNormV3 and
// FusedBatchNormGradV3 do not.
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

Attrs Gradient(bool training, const char* format = "NHWC") {
  return {{"T", MakeAttr(DT_FLOAT)},
          {"U", MakeAttr(DT_FLOAT)},
          {"epsilon", MakeAttr(0.001f)},
          {"is_training", MakeAttr(training)},
          {"data_format", MakeAttr(format)}};
}

Attrs BatchNorm(bool training, const char* format = "NHWC") {
  Attrs a = Gradient(training, format);
  a["exponential_avg_factor"] = MakeAttr(training ? 0.25f : 1.0f);
  return a;
}

// x [4, 6, 5, 8] NHWC: bn1 -> relu1 (training, running averages blended);
// bn2 of x2 -> AddN(side, bn2) -> relu2 (training; of x, CSE would merge it
// with bn1); bn3 -> relu3 (inference); x as
// [4, 8, 6, 5] NCHW: bn4 -> AddN(bn4, side4) -> relu4 (training). Backward:
// ReluGrad(dy, relu) -> FusedBatchNormGradV3 for bn1, bn2 and bn4; relu2_grad
// is fetched, as the residual's other branch would read it.
GraphDef Model() {
  GraphDefBuilder b;
  for (const char* name : {"x", "x2", "side", "dy", "x4", "side4", "dy4"}) b.Placeholder(name, DT_FLOAT);
  b.Const("scale", RandomFloats(TensorShape({8}), 1));
  b.Const("offset", RandomFloats(TensorShape({8}), 2));
  b.Const("mean", RandomFloats(TensorShape({8}), 3));
  b.Const("variance", Tensor::FromVector<float>({0.5f, 1, 2, 0.25f, 1.5f, 3, 0.75f, 1}));
  const std::vector<std::string> vectors = {"scale", "offset", "mean", "variance"};
  auto batch_norm = [&](const std::string& name, const std::string& x, Attrs attrs) {
    std::vector<std::string> inputs = {x};
    inputs.insert(inputs.end(), vectors.begin(), vectors.end());
    b.Node(name, "FusedBatchNormV3", inputs, attrs);
  };
  auto gradient = [&](const std::string& name, const std::string& dy, const std::string& relu, const std::string& x,
                      const std::string& bn, Attrs attrs) {
    b.Node(name + "_relu_grad", "ReluGrad", {dy, relu}, Float());
    b.Node(name, "FusedBatchNormGradV3", {name + "_relu_grad", x, "scale", bn + ":3", bn + ":4", bn + ":5"}, attrs);
  };
  batch_norm("bn1", "x", BatchNorm(true));
  b.Node("relu1", "Relu", {"bn1"}, Float());
  gradient("grad1", "dy", "relu1", "x", "bn1", Gradient(true));
  batch_norm("bn2", "x2", BatchNorm(true));
  b.Node("sum2", "AddN", {"side", "bn2"}, {{"T", MakeAttr(DT_FLOAT)}, {"N", MakeAttr(int64_t{2})}});
  b.Node("relu2", "Relu", {"sum2"}, Float());
  gradient("grad2", "dy", "relu2", "x2", "bn2", Gradient(true));
  batch_norm("bn3", "x", BatchNorm(false));
  b.Node("relu3", "Relu", {"bn3"}, Float());
  batch_norm("bn4", "x4", BatchNorm(true, "NCHW"));
  b.Node("sum4", "AddN", {"bn4", "side4"}, {{"T", MakeAttr(DT_FLOAT)}, {"N", MakeAttr(int64_t{2})}});
  b.Node("relu4", "Relu", {"sum4"}, Float());
  gradient("grad4", "dy4", "relu4", "x4", "bn4", Gradient(true, "NCHW"));
  return b.graph();
}

const std::vector<std::string> kFetches = {
    "relu1",   "bn1:1",   "bn1:2",   "grad1:0", "grad1:1", "grad1:2", "relu2",   "grad2:0", "grad2:1",
    "grad2:2", "grad2_relu_grad", "relu3", "relu4", "grad4:0", "grad4:1", "grad4:2"};

using Step = StepWithOps;

Step RunModel(bool fuse) {
  SessionOptions options;
  options.fuse_batch_norm = fuse;
  return RunCollectingOps(options, Model(),
                          {{"x", RandomFloats(TensorShape({4, 6, 5, 8}), 11)},
                           {"x2", RandomFloats(TensorShape({4, 6, 5, 8}), 17)},
                           {"side", RandomFloats(TensorShape({4, 6, 5, 8}), 12)},
                           {"dy", RandomFloats(TensorShape({4, 6, 5, 8}), 13)},
                           {"x4", RandomFloats(TensorShape({4, 8, 6, 5}), 14)},
                           {"side4", RandomFloats(TensorShape({4, 8, 6, 5}), 15)},
                           {"dy4", RandomFloats(TensorShape({4, 8, 6, 5}), 16)}},
                          kFetches);
}

TEST(BatchNormFusionSession, FusedAndUnfusedGraphsComputeTheSameValues) {
  const Step off = RunModel(false);
  const Step on = RunModel(true);
  ASSERT_EQ(off.outputs.size(), kFetches.size());
  ASSERT_EQ(on.outputs.size(), kFetches.size());
  for (size_t i = 0; i < kFetches.size(); ++i) {
    const Tensor& a = on.outputs[i];
    const Tensor& b = off.outputs[i];
    ASSERT_EQ(a.shape(), b.shape()) << kFetches[i];
    int zeros = 0;
    for (int64_t j = 0; j < a.NumElements(); ++j) {
      ASSERT_EQ(a.data<float>()[j], b.data<float>()[j]) << kFetches[i] << " at " << j;
      zeros += b.data<float>()[j] == 0.0f;
    }
    EXPECT_LT(zeros, a.NumElements()) << kFetches[i] << " is all zeros";
    // The Relus clipped (and their gradients masked) a good part.
    if (kFetches[i].rfind("relu", 0) == 0 || kFetches[i] == "grad2_relu_grad") {
      EXPECT_GT(zeros, a.NumElements() / 5) << kFetches[i];
    }
  }
  for (const char* op : {"_FusedBatchNormEx", "_FusedBatchNormGradEx"}) EXPECT_EQ(off.ops.count(op), 0u) << op;
  EXPECT_EQ(on.ops.count("_FusedBatchNormEx"), 4u);
  EXPECT_EQ(on.ops.count("_FusedBatchNormGradEx"), 3u);
  for (const char* op : {"Relu", "AddN", "ReluGrad", "FusedBatchNormV3", "FusedBatchNormGradV3"}) {
    EXPECT_EQ(on.ops.count(op), 0u) << op;
  }
}

}  // namespace
}  // namespace sluice
