// Runs every op harness entry (engine/kernels/harness/*_cases.cc): each case's
// outputs against its float64 reference, each bad-input case's error, and a
// finite-difference check of every registered gradient. Fails when a
// registered op has no entry or a differentiable op has no gradient check.
#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/framework/device.h"
#include "engine/framework/op_def.h"
#include "engine/graph/gradients.h"
#include "engine/graph/graph_builder.h"
#include "engine/graph/optimizer_layout.h"
#include "engine/graph/subgraph.h"
#include "engine/kernels/harness/op_harness.h"
#include "engine/kernels/onednn/conv_ops.h"
#include "engine/kernels/onednn/onednn_util.h"
#include "engine/kernels/winograd_conv.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/local_rendezvous.h"
#include "gtest/gtest.h"

namespace sluice {
namespace harness {
namespace {

const OpHarnessEntry* FindEntry(const std::string& op) {
  for (const OpHarnessEntry& e : Entries()) {
    if (e.op == op) return &e;
  }
  return nullptr;
}

Eigen::ThreadPool* Pool() {
  static auto* pool = new Eigen::ThreadPool(2);
  return pool;
}

// Runs `graph` (consumed) with feeds (node name -> value) and returns the
// fetched tensors.
absl::StatusOr<std::vector<Tensor>> RunGraph(std::unique_ptr<Graph> graph,
                                             const std::vector<std::pair<std::string, Tensor>>& feeds,
                                             const std::vector<std::string>& fetches) {
  Device* device = DeviceMgr::Local()->HostCpu();
  RewriteOptions options;
  options.device_name = device->name();
  std::vector<std::string> feed_names;
  for (const auto& f : feeds) feed_names.push_back(f.first);
  RewriteResult keys;
  absl::Status s = RewriteGraphForExecution(options, feed_names, fetches, {}, graph.get(), &keys);
  if (!s.ok()) return s;
  // As a session does after its rewrite: NCHW convolution and pooling nodes
  // become NHWC ones between Transposes (engine/graph/optimizer_layout.h).
  for (Node* n : graph->nodes()) n->set_assigned_device(device->name());
  ConvertDataFormats(LayoutOptions(), graph.get());
  ExecutorParams params;
  params.device = device;
  params.runner = [](std::function<void()> fn) { Pool()->Schedule(std::move(fn)); };
  auto executor = NewLocalExecutor(params, std::move(graph));
  if (!executor.ok()) return executor.status();
  LocalRendezvous rendezvous;
  for (size_t i = 0; i < feeds.size(); ++i) {
    s = rendezvous.Send(keys.feed_keys[i], feeds[i].second, false);
    if (!s.ok()) return s;
  }
  Executor::Args args;
  args.rendezvous = &rendezvous;
  s = (*executor)->Run(args);
  if (!s.ok()) return s;
  std::vector<Tensor> out;
  for (const std::string& key : keys.fetch_keys) {
    Tensor t;
    bool dead = false;
    s = rendezvous.Recv(key, &t, &dead, absl::ZeroDuration());
    if (!s.ok()) return s;
    out.push_back(t);
  }
  return out;
}

double DefaultTolerance(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT: return 1e-5;
    case DT_DOUBLE: return 1e-12;
    case DT_HALF:
    case DT_BFLOAT16: return 2e-2;
    case DT_COMPLEX64: return 1e-5;
    default: return 0;
  }
}

void ExpectClose(const Tensor& actual, const Tensor& expected, double tolerance, const std::string& where) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << where;
  ASSERT_EQ(actual.shape(), expected.shape()) << where << ": got " << actual.shape().DebugString() << ", expected "
                                              << expected.shape().DebugString();
  if (actual.dtype() == DT_STRING) {
    for (int64_t i = 0; i < actual.NumElements(); ++i) {
      ASSERT_EQ(actual.data<tstring>()[i], expected.data<tstring>()[i]) << where << " at " << i;
    }
    return;
  }
  if (actual.dtype() == DT_COMPLEX64) {
    for (int64_t i = 0; i < actual.NumElements(); ++i) {
      complex64 a = actual.data<complex64>()[i], e = expected.data<complex64>()[i];
      ASSERT_LE(std::abs(a - e), tolerance * std::max(1.0f, std::abs(e))) << where << " at " << i;
    }
    return;
  }
  std::vector<double> a = ToDoubles(actual), e = ToDoubles(expected);
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(e[i])) {
      ASSERT_TRUE(std::isnan(a[i])) << where << " at " << i << ": expected NaN, got " << a[i];
      continue;
    }
    if (std::isinf(e[i])) {
      ASSERT_EQ(a[i], e[i]) << where << " at " << i;
      continue;
    }
    ASSERT_LE(std::abs(a[i] - e[i]), tolerance * std::max(1.0, std::abs(e[i])))
        << where << " at flat index " << i << ": got " << a[i] << ", expected " << e[i];
  }
}

// Builds op(inputs) where inputs in `as_placeholders` are Placeholders.
struct Built {
  std::unique_ptr<Graph> graph;
  Node* node = nullptr;
  std::vector<Output> placeholders;  // parallel to the case's inputs (null if Const)
};

absl::StatusOr<Built> BuildCase(const std::string& op, const OpCase& c, const std::set<int>& as_placeholders) {
  Built built;
  built.graph = std::make_unique<Graph>();
  GraphBuilder b(built.graph.get());
  std::vector<Output> inputs;
  built.placeholders.resize(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (as_placeholders.count(static_cast<int>(i))) {
      Output p = b.Op(absl::StrCat("in", i), "Placeholder", {}, {{"dtype", MakeAttr(c.inputs[i].dtype())}});
      built.placeholders[i] = p;
      inputs.push_back(p);
    } else {
      inputs.push_back(b.Const(absl::StrCat("in", i), c.inputs[i]));
    }
  }
  built.node = b.AddNode("op_under_test", op, inputs, c.attrs);
  if (!b.ok()) return b.status();
  return built;
}

std::vector<std::string> OutputNames(const Node* node) {
  std::vector<std::string> names;
  for (int i = 0; i < node->num_outputs(); ++i) names.push_back(absl::StrCat(node->name(), ":", i));
  return names;
}

void RunValueCase(const OpHarnessEntry& entry, DataType dtype, const OpCase& c) {
  const std::string where = absl::StrCat(entry.op, " [", DataTypeString(dtype), "] ", c.description);
  auto built = BuildCase(entry.op, c, {});
  if (c.expected_error != absl::StatusCode::kOk && !built.ok()) {
    // Rejected while building (shape inference): also acceptable.
    EXPECT_EQ(built.status().code(), c.expected_error) << where << ": " << built.status();
    EXPECT_NE(built.status().message().find(c.error_substring), std::string::npos) << where << ": " << built.status();
    return;
  }
  ASSERT_TRUE(built.ok()) << where << ": " << built.status();
  std::vector<std::string> fetches = OutputNames(built->node);
  auto out = RunGraph(std::move(built->graph), {}, fetches);
  if (c.expected_error != absl::StatusCode::kOk) {
    ASSERT_FALSE(out.ok()) << where << ": expected an error";
    EXPECT_EQ(out.status().code(), c.expected_error) << where << ": " << out.status();
    EXPECT_NE(out.status().message().find(c.error_substring), std::string::npos) << where << ": " << out.status();
    EXPECT_NE(out.status().message().find("op_under_test"), std::string::npos) << where << ": " << out.status();
    return;
  }
  ASSERT_TRUE(out.ok()) << where << ": " << out.status();
  if (c.check) {
    absl::Status s = c.check(*out);
    EXPECT_TRUE(s.ok()) << where << ": " << s;
  }
  ASSERT_LE(c.expected.size(), out->size()) << where;
  for (size_t i = 0; i < c.expected.size(); ++i) {
    if (i < c.skip_output.size() && c.skip_output[i]) continue;
    double tol = c.tolerance > 0 ? c.tolerance : DefaultTolerance(c.expected[i].dtype());
    ExpectClose((*out)[i], c.expected[i], tol, absl::StrCat(where, " output ", i));
  }
}

// Compares symbolic gradients of f = sum_k <w_k, y_k> with central differences.
void RunGradientCase(const OpHarnessEntry& entry, const OpCase& c, Rng* rng) {
  const std::string where = absl::StrCat(entry.op, " gradient ", c.description);
  std::set<int> grad_inputs(c.grad_inputs.begin(), c.grad_inputs.end());
  if (grad_inputs.empty()) {
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (c.inputs[i].dtype() == DT_DOUBLE) grad_inputs.insert(static_cast<int>(i));
    }
  }
  ASSERT_FALSE(grad_inputs.empty()) << where << ": no double inputs to differentiate";
  // Forward values and random weights for each double output.
  auto fwd = BuildCase(entry.op, c, grad_inputs);
  ASSERT_TRUE(fwd.ok()) << where << ": " << fwd.status();
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (int i : grad_inputs) feeds.push_back({fwd->placeholders[i].node->name(), c.inputs[i]});
  std::vector<int> float_outputs;
  for (int i = 0; i < fwd->node->num_outputs(); ++i) {
    const bool wanted = c.grad_outputs.empty() ||
                        std::find(c.grad_outputs.begin(), c.grad_outputs.end(), i) != c.grad_outputs.end();
    // float32 outputs of float64 inputs (ResizeBilinear's) only with a
    // case's own, larger step (see OpCase::gradient_epsilon).
    const DataType t = fwd->node->output_type(i);
    if (wanted && (t == DT_DOUBLE || (t == DT_FLOAT && c.gradient_epsilon > 0))) float_outputs.push_back(i);
  }
  ASSERT_FALSE(float_outputs.empty()) << where;
  std::vector<std::string> fetches;
  for (int i : float_outputs) fetches.push_back(absl::StrCat(fwd->node->name(), ":", i));
  auto base = RunGraph(std::move(fwd->graph), feeds, fetches);
  ASSERT_TRUE(base.ok()) << where << ": " << base.status();
  std::vector<Tensor> weights;
  for (const Tensor& y : *base) weights.push_back(RandomTensor(y.dtype(), y.shape(), rng, -1, 1));

  auto objective = [&](const std::vector<std::pair<std::string, Tensor>>& f) -> double {
    auto g = BuildCase(entry.op, c, grad_inputs);
    EXPECT_TRUE(g.ok());
    if (!g.ok()) return NAN;
    auto out = RunGraph(std::move(g->graph), f, fetches);
    EXPECT_TRUE(out.ok()) << where << ": " << out.status();
    if (!out.ok()) return NAN;
    double sum = 0;
    for (size_t k = 0; k < out->size(); ++k) {
      std::vector<double> y = ToDoubles((*out)[k]), w = ToDoubles(weights[k]);
      if (y.size() != w.size()) return NAN;
      for (size_t j = 0; j < y.size(); ++j) sum += y[j] * w[j];
    }
    return sum;
  };

  // Symbolic gradients.
  auto sym = BuildCase(entry.op, c, grad_inputs);
  ASSERT_TRUE(sym.ok());
  GraphBuilder b(sym->graph.get());
  std::vector<Output> ys, grad_ys, xs;
  for (size_t k = 0; k < float_outputs.size(); ++k) {
    ys.push_back(Output{sym->node, float_outputs[k]});
    grad_ys.push_back(b.Const(absl::StrCat("w", k), weights[k]));
  }
  std::vector<int> order(grad_inputs.begin(), grad_inputs.end());
  for (int i : order) xs.push_back(sym->placeholders[i]);
  std::vector<Gradient> grads;
  absl::Status s = AddSymbolicGradients(sym->graph.get(), ys, xs, grad_ys, &grads);
  ASSERT_TRUE(s.ok()) << where << ": " << s;
  GraphBuilder gb(sym->graph.get(), "check");
  std::vector<std::string> grad_fetches;
  for (size_t j = 0; j < grads.size(); ++j) {
    ASSERT_TRUE(grads[j].present()) << where << ": no gradient for input " << order[j];
    grad_fetches.push_back(DenseGradient(&gb, grads[j]).name());
  }
  ASSERT_TRUE(gb.ok()) << gb.status();
  auto analytic = RunGraph(std::move(sym->graph), feeds, grad_fetches);
  ASSERT_TRUE(analytic.ok()) << where << ": " << analytic.status();

  const double eps = c.gradient_epsilon > 0 ? c.gradient_epsilon : 1e-6;
  double worst = 0;
  for (size_t j = 0; j < order.size(); ++j) {
    const int input = order[j];
    const Tensor& x = c.inputs[input];
    ASSERT_EQ((*analytic)[j].shape(), x.shape()) << where << ": gradient shape for input " << input;
    std::vector<double> a = ToDoubles((*analytic)[j]);
    for (int64_t e = 0; e < x.NumElements(); ++e) {
      auto perturbed = [&](double delta) {
        std::vector<std::pair<std::string, Tensor>> f = feeds;
        for (auto& [name, value] : f) {
          if (name == absl::StrCat("in", input)) {
            value = x.Clone();
            value.data<double>()[e] += delta;
          }
        }
        return objective(f);
      };
      double numeric = (perturbed(eps) - perturbed(-eps)) / (2 * eps);
      double err = std::abs(a[e] - numeric) / std::max({1e-3, std::abs(a[e]), std::abs(numeric)});
      worst = std::max(worst, err);
      EXPECT_LT(err, 1e-3) << where << ": input " << input << " element " << e << ": symbolic " << a[e]
                           << ", numeric " << numeric;
    }
  }
}

TEST(OpHarness, EveryRegisteredOpHasAnEntry) {
  std::vector<std::string> missing;
  for (const std::string& op : OpRegistry::Global()->ListOpNames()) {
    if (FindEntry(op) == nullptr) missing.push_back(op);
  }
  EXPECT_TRUE(missing.empty()) << "ops without a harness entry: " << absl::StrJoin(missing, ", ");
}

TEST(OpHarness, EveryDifferentiableOpHasAGradientCheck) {
  std::vector<std::string> unchecked, undecided;
  for (const std::string& name : OpRegistry::Global()->ListOpNames()) {
    const OpDef* def = OpRegistry::Global()->LookUp(name);
    const OpHarnessEntry* entry = FindEntry(name);
    if (entry == nullptr || !entry->covered_elsewhere.empty()) continue;
    bool floating = false;
    for (DataType t : entry->dtypes) floating |= DataTypeIsFloating(t);
    if (floating && !def->gradient && !def->not_differentiable && !def->is_stateful) undecided.push_back(name);
    if (!def->gradient) continue;
    Rng rng(7);
    bool has_check = false;
    for (const OpCase& c : entry->make_cases(DT_DOUBLE, &rng)) has_check |= c.check_gradient;
    if (!has_check) unchecked.push_back(name);
  }
  EXPECT_TRUE(unchecked.empty()) << "ops with a gradient but no gradient check: " << absl::StrJoin(unchecked, ", ");
  EXPECT_TRUE(undecided.empty()) << "floating ops with neither a gradient nor SetNotDifferentiable(): "
                                 << absl::StrJoin(undecided, ", ");
}

TEST(OpHarness, EntriesNameRegisteredOps) {
  std::set<std::string> seen;
  for (const OpHarnessEntry& e : Entries()) {
    EXPECT_NE(OpRegistry::Global()->LookUp(e.op), nullptr) << "harness entry for unknown op " << e.op;
    EXPECT_TRUE(seen.insert(e.op).second) << "two harness entries for " << e.op;
    if (e.covered_elsewhere.empty()) {
      EXPECT_TRUE(static_cast<bool>(e.make_cases)) << e.op;
      EXPECT_FALSE(e.dtypes.empty()) << e.op;
    }
  }
}

class OpHarnessTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OpHarnessTest, ValuesErrorsAndGradients) {
  const OpHarnessEntry* entry = FindEntry(GetParam());
  ASSERT_NE(entry, nullptr);
  if (!entry->covered_elsewhere.empty()) GTEST_SKIP() << "covered by " << entry->covered_elsewhere;
  for (DataType dtype : entry->dtypes) {
    Rng rng(std::hash<std::string>()(entry->op) ^ dtype);
    std::vector<OpCase> cases = entry->make_cases(dtype, &rng);
    EXPECT_FALSE(cases.empty()) << entry->op << " has no cases for " << DataTypeString(dtype);
    for (const OpCase& c : cases) {
      RunValueCase(*entry, dtype, c);
      if (c.check_gradient && dtype == DT_DOUBLE && c.expected_error == absl::StatusCode::kOk) {
        RunGradientCase(*entry, c, &rng);
      }
    }
  }
}

// Ops with more than one kernel per dtype (KernelDefBuilder::Label; the
// oneDNN kernels of engine/kernels/onednn, the Winograd convolutions of
// winograd_conv_ops.cc): every value and error case of a dtype a labeled
// kernel takes runs again with the node's `_kernel` attr set, against the
// same reference. The oneDNN conv kernels run oneDNN for every shape here
// (not only where it is faster); the test checks that each library did run
// (oneDNN primitives, Winograd convolutions: the conv specs include 5x5
// stride-1 ones with 16 or more channels).
const char* const kLabels[] = {onednn::kLabel, winograd::kLabel};

// How many times the library behind `label` has run so far.
int64_t LibraryRuns(const std::string& label) {
  return label == winograd::kLabel ? winograd::Runs() : onednn::PrimitiveRuns();
}

bool HasLabeledKernel(const std::string& op, DataType dtype, const std::string& label) {
  NodeDef def;
  def.set_op(op);
  (*def.mutable_attr())["T"] = MakeAttr(dtype);
  (*def.mutable_attr())[kKernelLabelAttr] = MakeAttr(label);
  return KernelRegistry::Global()->HasKernel(kDeviceCpu, def);
}

class LabeledKernelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LabeledKernelTest, ValuesAndErrors) {
  const OpHarnessEntry* entry = FindEntry(GetParam());
  ASSERT_NE(entry, nullptr);
  onednn::SetConvPreferOursWhereFaster(false);
  int ran = 0;
  for (const char* label : kLabels) {
    for (DataType dtype : entry->dtypes) {
      if (!HasLabeledKernel(entry->op, dtype, label)) continue;
      ++ran;
      const int64_t runs_before = LibraryRuns(label);
      Rng rng(std::hash<std::string>()(entry->op) ^ dtype);
      for (OpCase c : entry->make_cases(dtype, &rng)) {
        c.attrs[kKernelLabelAttr] = MakeAttr(label);
        if (label == std::string(winograd::kLabel) && dtype == DT_FLOAT) {
          // A Winograd convolution's rounding error follows the size of the
          // products it sums, not of the result (winograd_conv.h): these cases'
          // outputs reach 30-80 while the tolerance is per element. Measured:
          // up to 2.6 times the direct kernels' tolerance for the forward
          // pass and the input gradient, 5.5 times for the filter gradient
          // (its output transform multiplies by up to 16 x 16).
          c.tolerance = 8 * (c.tolerance > 0 ? c.tolerance : 1e-5);
        }
        c.description += absl::StrCat(" [", label, " kernel]");
        RunValueCase(*entry, dtype, c);
      }
      EXPECT_GT(LibraryRuns(label), runs_before) << entry->op << ": no case ran the " << label << " library";
    }
  }
  onednn::SetConvPreferOursWhereFaster(true);
  if (ran == 0) GTEST_SKIP() << "no labeled kernel";
}

std::vector<std::string> LabeledOps() {
  std::vector<std::string> names;
  for (const OpHarnessEntry& e : Entries()) {
    bool any = false;
    for (const char* label : kLabels) {
      for (DataType t : e.dtypes) any |= HasLabeledKernel(e.op, t, label);
    }
    if (any) names.push_back(e.op);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(LabeledKernels, TheOneDnnKernelsAreRegistered) {
  const std::vector<std::string> ops = LabeledOps();
  for (const char* op : {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "_FusedConv2D"}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
    for (const char* label : kLabels) EXPECT_TRUE(HasLabeledKernel(op, DT_FLOAT, label)) << op << " " << label;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, LabeledKernelTest, ::testing::ValuesIn(LabeledOps()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

std::vector<std::string> EntryNames() {
  std::vector<std::string> names;
  for (const OpHarnessEntry& e : Entries()) names.push_back(e.op);
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Ops, OpHarnessTest, ::testing::ValuesIn(EntryNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace harness
}  // namespace sluice
