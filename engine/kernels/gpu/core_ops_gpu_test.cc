// Targeted GPU-vs-CPU checks of the core GPU kernels (element-wise,
// Cast/Fill, BiasAdd(+Grad), Relu, MatMul/BatchMatMul) on what the op
// harness's small cases miss: inputs over 2^20 elements (vector paths and
// their tails, multi-split reductions), broadcasting shapes, transposes and
// adjoints, empty dims and K = 0. Each case builds one graph with the op twice
// (one copy on CPU:0, one on GPU:0) fed by the same CPU placeholders, so the
// GPU path includes the _Recv/_Send copies, and compares the two outputs.
// Without a GPU every test prints "SKIP: no GPU" and passes.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <array>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/device.h"
#include "engine/framework/node_def_util.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/gpu/gpu_test_util.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

const char kCpu[] = "/job:localhost/replica:0/task:0/device:CPU:0";
const char kGpu[] = "/job:localhost/replica:0/task:0/device:GPU:0";


template <typename T>
Tensor Random(const TensorShape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  Tensor t(DataTypeToEnum<T>::value, shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = static_cast<T>(d(gen));
  return t;
}

Tensor RandomInts(DataType dtype, const TensorShape& shape, uint32_t seed, int lo, int hi) {
  Tensor t(dtype, shape);
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (dtype == DT_INT32) t.data<int32_t>()[i] = d(gen);
    if (dtype == DT_INT64) t.data<int64_t>()[i] = d(gen);
    if (dtype == DT_BOOL) t.data<bool>()[i] = d(gen) != 0;
  }
  return t;
}

// An op to check: its type, attrs and inputs; `inputs` are fed through
// placeholders on the CPU (or, for `const_inputs`, become Const nodes on the CPU).
struct OpCase {
  std::string op;
  std::map<std::string, AttrValue> attrs;
  std::vector<Tensor> inputs;
  int num_outputs = 1;
  double rtol = 1e-5, atol = 1e-5;
};

double AsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT: return t.data<float>()[i];
    case DT_DOUBLE: return t.data<double>()[i];
    case DT_INT32: return t.data<int32_t>()[i];
    case DT_INT64: return static_cast<double>(t.data<int64_t>()[i]);
    case DT_BOOL: return t.data<bool>()[i] ? 1 : 0;
    default: ADD_FAILURE() << "dtype " << DataTypeString(t.dtype()); return 0;
  }
}

void ExpectClose(const Tensor& cpu, const Tensor& gpu, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << what;
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  int64_t bad = 0;
  for (int64_t i = 0; i < cpu.NumElements(); ++i) {
    const double a = AsDouble(cpu, i), b = AsDouble(gpu, i);
    const bool both_nan = std::isnan(a) && std::isnan(b);
    if (!both_nan && !(std::fabs(a - b) <= atol + rtol * std::fabs(a))) {
      if (++bad <= 5) ADD_FAILURE() << what << ": element " << i << " cpu " << a << " gpu " << b;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << cpu.NumElements() << " elements differ";
}

// Runs c.op on the CPU and on the GPU in one session and compares outputs.
void CheckOp(const OpCase& c, const std::string& label = "") {
  const std::string what = absl::StrCat(c.op, label.empty() ? "" : " ", label);
  GraphDefBuilder b;
  std::vector<std::string> ins;
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const std::string name = absl::StrCat("in", i);
    b.Node(name, "Placeholder", {}, {{"dtype", MakeAttr(c.inputs[i].dtype())}});
    ins.push_back(name);
    feeds.push_back({name, c.inputs[i]});
  }
  b.Node("on_cpu", c.op, ins, c.attrs);
  b.Node("on_gpu", c.op, ins, c.attrs);
  GraphDef g = b.graph();
  for (NodeDef& n : *g.mutable_node()) {
    n.set_device(n.name() == "on_gpu" ? kGpu : kCpu);
  }
  SessionOptions options;
  options.allow_soft_placement = false;
  auto session = NewSession(options);
  ASSERT_TRUE(session.ok()) << session.status();
  absl::Status s = (*session)->Create(g);
  ASSERT_TRUE(s.ok()) << what << ": " << s;
  std::vector<std::string> fetches;
  for (int i = 0; i < c.num_outputs; ++i) {
    fetches.push_back(absl::StrCat("on_cpu:", i));
    fetches.push_back(absl::StrCat("on_gpu:", i));
  }
  std::vector<Tensor> out;
  s = (*session)->Run(feeds, fetches, {}, &out);
  ASSERT_TRUE(s.ok()) << what << ": " << s;
  for (int i = 0; i < c.num_outputs; ++i) {
    ExpectClose(out[2 * i], out[2 * i + 1], c.rtol, c.atol, absl::StrCat(what, " output ", i));
  }
}

std::map<std::string, AttrValue> TAttr(DataType t) { return {{"T", MakeAttr(t)}}; }

class CoreOpsGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu::HaveGpu()) return;
    bool found = false;
    for (const auto& d : DeviceMgr::Local()->devices()) found |= d->name() == kGpu;
    ASSERT_TRUE(found) << "a GPU is visible but DeviceMgr::Local() has no " << kGpu;
  }
};

// ---- Element-wise ----

TEST_F(CoreOpsGpuTest, BinaryLargeSameShapeWithOddTail) {
  SLUICE_SKIP_WITHOUT_GPU();
  const TensorShape shape({(1 << 20) + 3});
  Tensor x = Random<float>(shape, 1), y = Random<float>(shape, 2, 0.5, 2);
  for (const char* op : {"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "SquaredDifference"}) {
    CheckOp({op, TAttr(DT_FLOAT), {x, y}});
  }
  CheckOp({"Pow", TAttr(DT_FLOAT), {y, x}, 1, 1e-5, 1e-5});
  for (const char* op : {"Less", "Greater", "LessEqual", "GreaterEqual", "Equal", "NotEqual"}) {
    CheckOp({op, TAttr(DT_FLOAT), {x, y}});
  }
  CheckOp({"Equal", TAttr(DT_FLOAT), {x, x}});
}

TEST_F(CoreOpsGpuTest, BinaryBroadcastShapes) {
  SLUICE_SKIP_WITHOUT_GPU();
  const std::vector<std::pair<TensorShape, TensorShape>> shapes = {
      {TensorShape({1024, 512}), TensorShape({512})},        // bias-like row broadcast
      {TensorShape({1024, 512}), TensorShape({1024, 1})},    // column broadcast
      {TensorShape({3, 1, 5}), TensorShape({4, 1})},          // both broadcast
      {TensorShape({2, 1, 3, 1, 5}), TensorShape({1, 4, 1, 6, 1})},
      {TensorShape({}), TensorShape({1000, 33})},             // scalar x
      {TensorShape({1000, 33}), TensorShape({1})},            // scalar y
      {TensorShape({0, 3}), TensorShape({3})},                // empty
      {TensorShape({2049, 1, 513}), TensorShape({1, 3, 1})},  // > 2^20 outputs
  };
  uint32_t seed = 10;
  for (const auto& [xs, ys] : shapes) {
    Tensor x = Random<float>(xs, ++seed), y = Random<float>(ys, ++seed, 0.5, 2);
    const std::string label = absl::StrCat(xs.DebugString(), " vs ", ys.DebugString());
    for (const char* op : {"Add", "Sub", "Mul", "RealDiv", "Maximum", "Greater"}) {
      CheckOp({op, TAttr(DT_FLOAT), {x, y}}, label);
      CheckOp({op, TAttr(DT_FLOAT), {y, x}}, label + " swapped");
    }
  }
  // double and int64
  CheckOp({"Mul", TAttr(DT_DOUBLE), {Random<double>(TensorShape({7, 1, 9}), 3), Random<double>(TensorShape({5, 1}), 4)},
           1, 1e-12, 1e-12});
  CheckOp({"Add", TAttr(DT_INT64),
           {RandomInts(DT_INT64, TensorShape({6, 4}), 5, -100, 100), RandomInts(DT_INT64, TensorShape({4}), 6, -5, 5)}});
  CheckOp({"Equal", TAttr(DT_INT64),
           {RandomInts(DT_INT64, TensorShape({6, 4}), 7, 0, 3), RandomInts(DT_INT64, TensorShape({6, 1}), 8, 0, 3)}});
  CheckOp({"NotEqual", TAttr(DT_BOOL),
           {RandomInts(DT_BOOL, TensorShape({6, 4}), 9, 0, 1), RandomInts(DT_BOOL, TensorShape({4}), 10, 0, 1)}});
}

TEST_F(CoreOpsGpuTest, BroadcastErrorMatchesCpu) {
  SLUICE_SKIP_WITHOUT_GPU();
  GraphDefBuilder b;
  b.Node("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
  b.Node("y", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
  b.Node("add", "Add", {"x", "y"}, TAttr(DT_FLOAT));
  GraphDef g = b.graph();
  for (NodeDef& n : *g.mutable_node()) n.set_device(n.name() == "add" ? kGpu : kCpu);
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(g).ok());
  std::vector<Tensor> out;
  absl::Status s = (*session)->Run({{"x", Random<float>(TensorShape({2}), 1)}, {"y", Random<float>(TensorShape({3}), 2)}},
                                   {"add:0"}, {}, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("not broadcast-compatible"), std::string::npos) << s;
}

TEST_F(CoreOpsGpuTest, UnaryLarge) {
  SLUICE_SKIP_WITHOUT_GPU();
  const TensorShape shape({(1 << 20) + 1});
  Tensor x = Random<float>(shape, 21, -3, 3);
  Tensor pos = Random<float>(shape, 22, 0.1, 4);
  for (const char* op : {"Neg", "Square", "Exp", "Tanh", "Sigmoid", "Abs", "Relu", "Elu"}) {
    CheckOp({op, TAttr(DT_FLOAT), {x}, 1, 1e-5, 1e-6});
  }
  for (const char* op : {"Sqrt", "Rsqrt", "Log", "Log1p", "Reciprocal"}) {
    CheckOp({op, TAttr(DT_FLOAT), {pos}, 1, 1e-5, 1e-6});
  }
  Tensor xd = Random<double>(TensorShape({1001}), 23, 0.1, 3);
  for (const char* op : {"Sqrt", "Rsqrt", "Exp", "Log", "Tanh", "Sigmoid"}) {
    CheckOp({op, TAttr(DT_DOUBLE), {xd}, 1, 1e-12, 1e-14});
  }
}

TEST_F(CoreOpsGpuTest, ActivationGradsLarge) {
  SLUICE_SKIP_WITHOUT_GPU();
  const TensorShape shape({1024, 1025});
  Tensor dy = Random<float>(shape, 31), x = Random<float>(shape, 32);
  Tensor y = Random<float>(shape, 33, 0.1, 0.9);
  CheckOp({"ReluGrad", TAttr(DT_FLOAT), {dy, x}});
  CheckOp({"EluGrad", TAttr(DT_FLOAT), {dy, x}});
  CheckOp({"TanhGrad", TAttr(DT_FLOAT), {y, dy}});
  CheckOp({"SigmoidGrad", TAttr(DT_FLOAT), {y, dy}});
  CheckOp({"SqrtGrad", TAttr(DT_FLOAT), {y, dy}});
  CheckOp({"RsqrtGrad", TAttr(DT_FLOAT), {y, dy}});
}

TEST_F(CoreOpsGpuTest, AddNManyInputs) {
  SLUICE_SKIP_WITHOUT_GPU();
  for (int n : {1, 2, 8, 9, 19}) {
    std::vector<Tensor> ins;
    std::vector<std::string> unused;
    for (int i = 0; i < n; ++i) ins.push_back(Random<float>(TensorShape({300, 1001}), 40 + i));
    std::map<std::string, AttrValue> attrs = TAttr(DT_FLOAT);
    attrs["N"] = MakeAttr(n);
    CheckOp({"AddN", attrs, ins, 1, 1e-5, 1e-5}, absl::StrCat("N=", n));
  }
}

TEST_F(CoreOpsGpuTest, CastBetweenTypes) {
  SLUICE_SKIP_WITHOUT_GPU();
  const TensorShape shape({(1 << 20) + 5});
  Tensor f = Random<float>(shape, 51, -1000, 1000);
  Tensor i32 = RandomInts(DT_INT32, shape, 52, -100000, 100000);
  Tensor i64 = RandomInts(DT_INT64, shape, 53, -100000, 100000);
  Tensor bl = RandomInts(DT_BOOL, shape, 54, 0, 1);
  Tensor d = Random<double>(shape, 55, -1000, 1000);
  const std::vector<Tensor> srcs = {f, i32, i64, bl, d};
  for (const Tensor& src : srcs) {
    for (DataType dst : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL}) {
      std::map<std::string, AttrValue> attrs = {{"SrcT", MakeAttr(src.dtype())}, {"DstT", MakeAttr(dst)}};
      CheckOp({"Cast", attrs, {src}}, absl::StrCat(DataTypeString(src.dtype()), "->", DataTypeString(dst)));
    }
  }
}

TEST_F(CoreOpsGpuTest, FillAndLikes) {
  SLUICE_SKIP_WITHOUT_GPU();
  Tensor dims = Tensor::FromVector<int32_t>(std::vector<int32_t>{1025, 1024});
  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL}) {
    Tensor value(t, TensorShape());
    if (t == DT_FLOAT) value.data<float>()[0] = 2.5f;
    if (t == DT_DOUBLE) value.data<double>()[0] = -1.25;
    if (t == DT_INT64) value.data<int64_t>()[0] = 7;
    if (t == DT_BOOL) value.data<bool>()[0] = true;
    CheckOp({"Fill", {{"T", MakeAttr(t)}, {"index_type", MakeAttr(DT_INT32)}}, {dims, value}}, DataTypeString(t));
  }
  CheckOp({"Fill", {{"T", MakeAttr(DT_FLOAT)}, {"index_type", MakeAttr(DT_INT32)}},
           {Tensor::FromVector<int32_t>(std::vector<int32_t>{0, 3}), Tensor::Scalar<float>(1)}},
          "empty");
  Tensor x = Random<float>(TensorShape({1 << 20, 3}), 61);
  CheckOp({"ZerosLike", TAttr(DT_FLOAT), {x}});
  CheckOp({"OnesLike", TAttr(DT_FLOAT), {x}});
  CheckOp({"OnesLike", TAttr(DT_INT64), {RandomInts(DT_INT64, TensorShape({5, 3}), 62, 0, 9)}});
}

// ---- BiasAdd ----

TEST_F(CoreOpsGpuTest, BiasAddAndGrad) {
  SLUICE_SKIP_WITHOUT_GPU();
  struct Shape {
    TensorShape x;
    const char* format;
  };
  const std::vector<Shape> shapes = {
      {TensorShape({128, 512}), "NHWC"},       {TensorShape({1024, 512}), "NHWC"},
      {TensorShape({1024, 10}), "NHWC"},       {TensorShape({4096, 300}), "NHWC"},  // > 2^20, C % 4 != 0
      {TensorShape({64, 28, 28, 32}), "NHWC"}, {TensorShape({3, 0, 5}), "NHWC"},
      {TensorShape({8, 6, 5, 7}), "NCHW"},     {TensorShape({64, 32, 28, 28}), "NCHW"},
      {TensorShape({100, 7}), "NCHW"},
  };
  uint32_t seed = 70;
  for (const Shape& s : shapes) {
    const int c = std::string(s.format) == "NCHW" ? 1 : s.x.dims() - 1;
    Tensor x = Random<float>(s.x, ++seed);
    Tensor bias = Random<float>(TensorShape({s.x.dim_size(c)}), ++seed);
    std::map<std::string, AttrValue> attrs = {{"T", MakeAttr(DT_FLOAT)}, {"data_format", MakeAttr(s.format)}};
    const std::string label = absl::StrCat(s.x.DebugString(), " ", s.format);
    CheckOp({"BiasAdd", attrs, {x, bias}}, label);
    // Sums of up to ~10^5 terms in a different order: relative 1e-4.
    CheckOp({"BiasAddGrad", attrs, {x}, 1, 1e-4, 1e-3}, label);
  }
  CheckOp({"BiasAddGrad", {{"T", MakeAttr(DT_DOUBLE)}, {"data_format", MakeAttr("NHWC")}},
           {Random<double>(TensorShape({5000, 33}), 99)}, 1, 1e-11, 1e-11});
}

// ---- MatMul ----

TEST_F(CoreOpsGpuTest, MatMulTransposesAndSizes) {
  SLUICE_SKIP_WITHOUT_GPU();
  const std::vector<std::array<int64_t, 3>> mnk = {{128, 512, 784}, {1024, 10, 512}, {67, 45, 33}, {1, 1, 1},
                                                   {3, 4, 0},       {0, 4, 5},        {3, 0, 5},   {1500, 1100, 700}};
  uint32_t seed = 100;
  for (const auto& [m, n, k] : mnk) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        Tensor a = Random<float>(ta ? TensorShape({k, m}) : TensorShape({m, k}), ++seed);
        Tensor b = Random<float>(tb ? TensorShape({n, k}) : TensorShape({k, n}), ++seed);
        std::map<std::string, AttrValue> attrs = {
            {"T", MakeAttr(DT_FLOAT)}, {"transpose_a", MakeAttr(ta)}, {"transpose_b", MakeAttr(tb)}};
        CheckOp({"MatMul", attrs, {a, b}, 1, 1e-4, 1e-4}, absl::StrCat(m, "x", n, "x", k, " ta=", ta, " tb=", tb));
      }
    }
  }
  Tensor ad = Random<double>(TensorShape({37, 29}), 7), bd = Random<double>(TensorShape({29, 41}), 8);
  CheckOp({"MatMul", {{"T", MakeAttr(DT_DOUBLE)}, {"transpose_a", MakeAttr(false)}, {"transpose_b", MakeAttr(false)}},
           {ad, bd}, 1, 1e-12, 1e-12});
}

TEST_F(CoreOpsGpuTest, BatchMatMulBroadcastAndAdjoints) {
  SLUICE_SKIP_WITHOUT_GPU();
  struct Case {
    const char* op;
    TensorShape x, y;  // as stored, before adjoints
    bool adj_x, adj_y;
  };
  const std::vector<Case> cases = {
      {"BatchMatMul", TensorShape({4, 6, 5}), TensorShape({4, 5, 7}), false, false},
      {"BatchMatMul", TensorShape({4, 5, 6}), TensorShape({4, 7, 5}), true, true},
      {"BatchMatMulV2", TensorShape({4, 6, 5}), TensorShape({5, 7}), false, false},        // y: one batch
      {"BatchMatMulV2", TensorShape({6, 5}), TensorShape({3, 2, 5, 7}), false, false},     // x: one batch
      {"BatchMatMulV2", TensorShape({2, 1, 6, 5}), TensorShape({3, 7, 5}), false, true},   // general
      {"BatchMatMulV2", TensorShape({2, 1, 5, 6}), TensorShape({1, 3, 5, 7}), true, false},
      {"BatchMatMulV2", TensorShape({2, 3, 6, 0}), TensorShape({2, 3, 0, 7}), false, false},  // K = 0
      {"BatchMatMulV2", TensorShape({0, 6, 5}), TensorShape({5, 7}), false, false},           // no batches
      {"BatchMatMulV2", TensorShape({16, 128, 256}), TensorShape({16, 256, 64}), false, false},
  };
  uint32_t seed = 200;
  for (const Case& c : cases) {
    std::map<std::string, AttrValue> attrs = {
        {"T", MakeAttr(DT_FLOAT)}, {"adj_x", MakeAttr(c.adj_x)}, {"adj_y", MakeAttr(c.adj_y)}};
    CheckOp({c.op, attrs, {Random<float>(c.x, ++seed), Random<float>(c.y, ++seed)}, 1, 1e-4, 1e-4},
            absl::StrCat(c.x.DebugString(), " ", c.y.DebugString(), " adj ", c.adj_x, c.adj_y));
  }
}

}  // namespace
}  // namespace sluice
