// Spec for the cost model (FLOPs and bytes from shapes, measured times) and
// cost-model placement (whitepaper §3.2.1): independent heavy work spreads
// over devices, a chain stays on one device because transfers cost time,
// requests and colocation still hold, measured times change the decision,
// and the result is deterministic.
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/device.h"
#include "engine/framework/device_name.h"
#include "engine/framework/device_set.h"
#include "engine/framework/node_def_util.h"
#include "engine/graph/cost_model.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/graph/optimizer_constant_folding.h"
#include "engine/graph/placer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr char kCpu2[] = "/job:localhost/replica:0/task:0/device:CPU:2";

class CostPlacerTest : public ::testing::Test {
 protected:
  void UseDevices(const std::vector<std::string>& names) {
    owned_.clear();
    std::vector<Device*> raw;
    for (const std::string& name : names) {
      owned_.push_back(std::make_unique<Device>(name, "CPU", CpuAllocator(), 1));
      raw.push_back(owned_.back().get());
    }
    set_ = std::make_unique<DeviceSet>(raw);
  }

  std::string Matrix(const std::string& name, int64_t rows, int64_t cols) {
    return b_.Const(name, Tensor(DT_FLOAT, TensorShape({rows, cols})));
  }
  std::string MatMul(const std::string& name, const std::string& a, const std::string& b,
                     bool transpose_a = false) {
    return b_.Node(name, "MatMul", {a, b}, {{"T", MakeAttr(DT_FLOAT)}, {"transpose_a", MakeAttr(transpose_a)}});
  }
  // A chain of `length` square MatMuls of size n, named p0, p1, ...
  void Chain(const std::string& p, int length, int64_t n) {
    std::string x = Matrix(p + "x", n, n);
    const std::string w = Matrix(p + "w", n, n);
    for (int i = 0; i < length; ++i) x = MatMul(absl::StrCat(p, i), x, w);
  }

  absl::Status Build() {
    auto g = GraphFromGraphDef(b_.graph());
    if (!g.ok()) return g.status();
    graph_ = std::move(g).value();
    return absl::OkStatus();
  }

  // Builds the graph (when not built yet), estimates costs and places.
  absl::Status Run(const std::vector<std::string>& roots = {},
                   const std::vector<std::pair<std::string, double>>& measured = {}) {
    if (set_ == nullptr) UseDevices({kCpu0, kCpu1});
    if (graph_ == nullptr) {
      absl::Status s = Build();
      if (!s.ok()) return s;
    }
    auto model = CostModel::Estimate(*graph_);
    if (!model.ok()) return model.status();
    model_ = std::make_unique<CostModel>(std::move(model).value());
    model_->ApplyMeasured(*graph_, measured);
    PlacementOptions options;
    options.devices = set_.get();
    options.cost_model = model_.get();
    options.cost_roots = roots;
    options.device_indices = &indices_;
    return Place(options, graph_.get());
  }

  std::string DeviceOf(const std::string& node) {
    const Node* n = graph_->FindNode(node);
    EXPECT_NE(n, nullptr) << node;
    return n == nullptr ? "" : n->assigned_device();
  }

  GraphDefBuilder b_;
  std::vector<std::unique_ptr<Device>> owned_;
  std::unique_ptr<DeviceSet> set_;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<CostModel> model_;
  std::vector<int> indices_;
};

// ---- The cost model ----

TEST_F(CostPlacerTest, MatMulCostsTwoMNKFlopsAndItsOutputBytes) {
  MatMul("mm", Matrix("a", 64, 128), Matrix("b", 128, 32));
  MatMul("mm_t", Matrix("at", 128, 64), "b", /*transpose_a=*/true);
  ASSERT_TRUE(Build().ok());
  auto model = CostModel::Estimate(*graph_);
  ASSERT_TRUE(model.ok()) << model.status();
  const Node* mm = graph_->FindNode("mm");
  EXPECT_DOUBLE_EQ(model->Flops(mm), 2.0 * 64 * 32 * 128);
  EXPECT_DOUBLE_EQ(model->Flops(graph_->FindNode("mm_t")), 2.0 * 64 * 32 * 128);
  EXPECT_EQ(model->OutputBytes(mm, 0), 64 * 32 * 4);
  EXPECT_EQ(model->Flops(graph_->FindNode("a")), 0);
  // Compute-bound: FLOPs at the device's rate plus the dispatch overhead.
  const CostModelOptions defaults;
  EXPECT_DOUBLE_EQ(model->ComputeNs(mm), defaults.node_overhead_ns + 2.0 * 64 * 32 * 128 / defaults.flops_per_ns);
}

TEST_F(CostPlacerTest, UnknownDimensionsCountAsTheGivenSize) {
  b_.Node("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShapeProto())}});
  TensorShapeProto batch_by_128;
  batch_by_128.add_dim()->set_size(-1);
  batch_by_128.add_dim()->set_size(128);
  (*b_.FindNode("x")->mutable_attr())["shape"] = MakeAttr(batch_by_128);
  MatMul("mm", "x", Matrix("w", 128, 10));
  ASSERT_TRUE(Build().ok());
  CostModelOptions options;
  options.unknown_dim = 32;
  auto model = CostModel::Estimate(*graph_, options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_DOUBLE_EQ(model->Flops(graph_->FindNode("mm")), 2.0 * 32 * 10 * 128);
  EXPECT_EQ(model->OutputBytes(graph_->FindNode("x"), 0), 32 * 128 * 4);
}

TEST_F(CostPlacerTest, ShapesComeFromTheGraphAsRunWhenGiven) {
  // A Reshape to a computed shape (Shape(x) * [1, 1], through float, which
  // static shape inference does not follow) is unknown until constant
  // folding, which the session runs before a step, makes the shape a Const.
  TensorShapeProto shape_8x16;
  shape_8x16.add_dim()->set_size(8);
  shape_8x16.add_dim()->set_size(16);
  b_.Node("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(shape_8x16)}});
  b_.Node("shape", "Shape", {"x"}, {{"T", MakeAttr(DT_FLOAT)}, {"out_type", MakeAttr(DT_INT32)}});
  b_.Node("shape_f", "Cast", {"shape"}, {{"SrcT", MakeAttr(DT_INT32)}, {"DstT", MakeAttr(DT_FLOAT)}});
  b_.Const("ones", Tensor::FromVector<float>({1, 1}));
  b_.Node("product", "Mul", {"shape_f", "ones"}, {{"T", MakeAttr(DT_FLOAT)}});
  b_.Node("computed", "Cast", {"product"}, {{"SrcT", MakeAttr(DT_FLOAT)}, {"DstT", MakeAttr(DT_INT32)}});
  b_.Node("r", "Reshape", {"x", "computed"}, {{"T", MakeAttr(DT_FLOAT)}, {"Tshape", MakeAttr(DT_INT32)}});
  MatMul("mm", "r", Matrix("w", 8, 4), /*transpose_a=*/true);
  ASSERT_TRUE(Build().ok());
  CostModelOptions options;
  options.unknown_dim = 1000;
  auto alone = CostModel::Estimate(*graph_, options);
  ASSERT_TRUE(alone.ok()) << alone.status();
  // r is [?, ?]: the product counts as [1000, 4] over k = 1000.
  EXPECT_DOUBLE_EQ(alone->Flops(graph_->FindNode("mm")), 2.0 * 1000 * 4 * 1000);

  std::unique_ptr<Graph> as_run = graph_->Clone();
  ASSERT_GT(FoldConstants(ConstantFoldingOptions(), as_run.get()).folded, 0);
  auto run = CostModel::Estimate(*graph_, options, as_run.get());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_DOUBLE_EQ(run->Flops(graph_->FindNode("mm")), 2.0 * 16 * 4 * 8);
  EXPECT_EQ(run->OutputBytes(graph_->FindNode("r"), 0), 8 * 16 * 4);
  // Folded into a Const: no FLOPs per step (alone it multiplies 2 elements).
  EXPECT_DOUBLE_EQ(alone->Flops(graph_->FindNode("computed")), 2);
  EXPECT_DOUBLE_EQ(run->Flops(graph_->FindNode("computed")), 0);
  // Removed with the fold (its only consumer is now a Const): not run.
  EXPECT_EQ(run->OutputBytes(graph_->FindNode("shape"), 0), 0);
  EXPECT_DOUBLE_EQ(run->ComputeNs(graph_->FindNode("shape")), options.node_overhead_ns);
}

TEST_F(CostPlacerTest, ConvolutionAndElementwiseFlops) {
  b_.Const("image", Tensor(DT_FLOAT, TensorShape({2, 8, 8, 3})));
  b_.Const("filter", Tensor(DT_FLOAT, TensorShape({3, 3, 3, 16})));
  std::vector<int64_t> strides = {1, 1, 1, 1};
  b_.Node("conv", "Conv2D", {"image", "filter"},
          {{"T", MakeAttr(DT_FLOAT)}, {"strides", MakeAttr(strides)}, {"padding", MakeAttr("SAME")}});
  b_.Node("relu", "Relu", {"conv"}, {{"T", MakeAttr(DT_FLOAT)}});
  ASSERT_TRUE(Build().ok());
  auto model = CostModel::Estimate(*graph_);
  ASSERT_TRUE(model.ok()) << model.status();
  // Output [2, 8, 8, 16]; each output element is a 3x3x3 dot product.
  EXPECT_DOUBLE_EQ(model->Flops(graph_->FindNode("conv")), 2.0 * (2 * 8 * 8 * 16) * 27);
  EXPECT_DOUBLE_EQ(model->Flops(graph_->FindNode("relu")), 2.0 * 8 * 8 * 16);
}

TEST_F(CostPlacerTest, VariablesReportTheirElements) {
  b_.Variable("v", DT_FLOAT, TensorShape({3, 5}));
  ASSERT_TRUE(Build().ok());
  auto model = CostModel::Estimate(*graph_);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->VariableElements(graph_->FindNode("v")), 15);
}

TEST_F(CostPlacerTest, MeasuredTimesReplaceEstimates) {
  MatMul("mm", Matrix("a", 64, 64), Matrix("b", 64, 64));
  ASSERT_TRUE(Build().ok());
  auto model = CostModel::Estimate(*graph_);
  ASSERT_TRUE(model.ok()) << model.status();
  const Node* mm = graph_->FindNode("mm");
  EXPECT_FALSE(model->measured(mm));
  EXPECT_EQ(model->ApplyMeasured(*graph_, {{"mm", 12345.0}, {"not_a_node", 1.0}, {"a", -5.0}}), 1);
  EXPECT_TRUE(model->measured(mm));
  EXPECT_DOUBLE_EQ(model->ComputeNs(mm), 12345.0);
  EXPECT_FALSE(model->measured(graph_->FindNode("a")));  // a negative time is ignored
}

// ---- Placement ----

TEST_F(CostPlacerTest, IndependentHeavyChainsGoToDifferentDevices) {
  Chain("a", 3, 256);
  Chain("b", 3, 256);
  ASSERT_TRUE(Run().ok());
  const std::string a = DeviceOf("a0");
  const std::string b = DeviceOf("b0");
  EXPECT_NE(a, b);
  for (const char* n : {"a1", "a2", "ax", "aw"}) EXPECT_EQ(DeviceOf(n), a) << n;
  for (const char* n : {"b1", "b2", "bx", "bw"}) EXPECT_EQ(DeviceOf(n), b) << n;
}

TEST_F(CostPlacerTest, SimplePlacerPutsThemTogether) {
  // The same graph without a cost model: everything on the lowest device.
  Chain("a", 3, 256);
  Chain("b", 3, 256);
  ASSERT_TRUE(Build().ok());
  UseDevices({kCpu0, kCpu1});
  PlacementOptions options;
  options.devices = set_.get();
  ASSERT_TRUE(Place(options, graph_.get()).ok());
  EXPECT_EQ(DeviceOf("a0"), kCpu0);
  EXPECT_EQ(DeviceOf("b0"), kCpu0);
}

TEST_F(CostPlacerTest, AChainStaysOnOneDevice) {
  // Nothing runs in parallel, so any move would only add transfers.
  Chain("c", 6, 256);
  UseDevices({kCpu0, kCpu1, kCpu2});
  ASSERT_TRUE(Run().ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(DeviceOf(absl::StrCat("c", i)), kCpu0) << i;
}

TEST_F(CostPlacerTest, TransfersOutweighingComputeKeepWorkTogether) {
  // Two cheap consumers of one big tensor: splitting them saves less than
  // moving the tensor costs.
  const std::string big = Matrix("big", 1024, 1024);
  b_.Node("r1", "Relu", {big}, {{"T", MakeAttr(DT_FLOAT)}});
  b_.Node("neg", "Neg", {big}, {{"T", MakeAttr(DT_FLOAT)}});
  ASSERT_TRUE(Build().ok());
  CostModelOptions options;
  options.transfer_bytes_per_ns = 0.5;  // a slow link
  auto model = CostModel::Estimate(*graph_, options);
  ASSERT_TRUE(model.ok());
  UseDevices({kCpu0, kCpu1});
  PlacementOptions place;
  place.devices = set_.get();
  place.cost_model = &*model;
  ASSERT_TRUE(Place(place, graph_.get()).ok());
  EXPECT_EQ(DeviceOf("r1"), DeviceOf("neg"));
  // On a fast link the second consumer moves to the idle device.
  graph_.reset();
  ASSERT_TRUE(Build().ok());
  options.transfer_bytes_per_ns = 1000;
  options.transfer_latency_ns = 0;
  model = CostModel::Estimate(*graph_, options);
  ASSERT_TRUE(model.ok());
  place.cost_model = &*model;
  ASSERT_TRUE(Place(place, graph_.get()).ok());
  EXPECT_NE(DeviceOf("r1"), DeviceOf("neg"));
}

TEST_F(CostPlacerTest, RequestsAndColocationStillHold) {
  Chain("a", 2, 128);
  Chain("b", 2, 128);
  b_.FindNode("a0")->set_device("/device:CPU:1");
  // A variable with a ref reader: the reader's choice takes the variable along.
  b_.Variable("v", DT_FLOAT, TensorShape({128, 128}));
  MatMul("uses_v", "b1", "v");
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(DeviceOf("a0"), kCpu1);
  EXPECT_EQ(DeviceOf("a1"), kCpu1);  // follows: a transfer would cost more
  EXPECT_EQ(DeviceOf("v"), DeviceOf("uses_v"));
}

TEST_F(CostPlacerTest, MeasuredTimesChangeTheDecision) {
  // Two branches read one input x. Estimated, each branch is a millisecond
  // of MatMuls, worth moving x to the idle device.
  const std::string x = Matrix("x", 256, 256);
  MatMul("a1", MatMul("a0", x, Matrix("wa", 256, 256)), "wa");
  MatMul("b1", MatMul("b0", x, Matrix("wb", 256, 256)), "wb");
  ASSERT_TRUE(Run().ok());
  EXPECT_NE(DeviceOf("a0"), DeviceOf("b0"));
  // Measured: every MatMul is nearly free, so moving x is not worth it.
  std::vector<std::pair<std::string, double>> measured;
  for (const char* n : {"a0", "a1", "b0", "b1"}) measured.emplace_back(n, 1.0);
  graph_.reset();
  ASSERT_TRUE(Run({}, measured).ok());
  EXPECT_EQ(DeviceOf("a0"), DeviceOf("b0"));
  EXPECT_EQ(DeviceOf("b1"), DeviceOf("x"));
}

TEST_F(CostPlacerTest, OnlyTheSimulatedStepDrivesTheChoice) {
  // "side" is not part of the step (root "a1"): the simple rule places it,
  // following its input even though it is heavy.
  Chain("a", 2, 256);
  MatMul("side", "ax", "aw");
  ASSERT_TRUE(Run({"a1"}).ok());
  EXPECT_EQ(DeviceOf("side"), DeviceOf("ax"));
  graph_.reset();
  EXPECT_THAT(std::string(Run({"no_such_node"}).message()), HasSubstr("'no_such_node' is not a node"));
}

TEST_F(CostPlacerTest, TheResultIsDeterministic) {
  for (int c = 0; c < 4; ++c) Chain(absl::StrCat("c", c, "_"), 3, 128);
  UseDevices({kCpu0, kCpu1, kCpu2});
  ASSERT_TRUE(Run().ok());
  const std::vector<int> first = indices_;
  std::set<int> used(first.begin(), first.end());
  EXPECT_EQ(used.size(), 3u);  // four parallel chains fill three devices
  graph_.reset();
  ASSERT_TRUE(Run().ok());
  EXPECT_EQ(indices_, first);
}

}  // namespace
}  // namespace sluice
