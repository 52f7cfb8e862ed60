// Runs the op harness (engine/kernels/harness/*_cases.cc) on the GPU: for
// every entry whose op has a GPU kernel for a case's dtype, the op node is
// placed on the process's GPU:0 (its inputs are Consts on CPU:0, so each case
// also crosses the CPU->GPU and GPU->CPU copies), run through a Session
// without soft placement, and its outputs compared with the case's float64
// reference; a bad-input case must fail with the same code. Prints one line
// per op: "op X: N cases on GPU, M skipped". Without a GPU it prints
// "SKIP: no GPU" and passes.
//
// Tolerances (relative, against max(1, |expected|)): the case's own, or the
// harness default per dtype, at least 1e-4 for float and 1e-10 for double
// (GPU sums in another order; exp/log/sqrt differ by an ulp). Per-op
// overrides, the only places where the GPU's behaviour differs from the CPU's:
//
//   op                                   | case                          | GPU behaviour checked instead
//   -------------------------------------+-------------------------------+-------------------------------
//   SparseSoftmaxCrossEntropyWithLogits  | int64 labels out of [0, C)    | NaN loss and backprop rows, no error
//                                        |                               | (labels live on the device; int32 labels
//                                        |                               | are host memory and fail as on the CPU)
//   Dropout                              | rate outside [0, 1)           | NaN output and mask, no error (rate
//                                        |                               | lives on the device)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/framework/device.h"
#include "engine/framework/op_kernel.h"
#include "engine/graph/graph.h"
#include "engine/graph/graph_builder.h"
#include "engine/kernels/harness/op_harness.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {
namespace harness {
namespace {

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

double GpuTolerance(const OpCase& c, DataType dtype) {
  double tol = c.tolerance > 0 ? c.tolerance : DefaultTolerance(dtype);
  if (dtype == DT_FLOAT) tol = std::max(tol, 1e-4);
  if (dtype == DT_DOUBLE) tol = std::max(tol, 1e-10);
  return tol;
}

// Error cases the GPU answers with NaN outputs instead (the table above).
bool NanInsteadOfError(const std::string& op, const OpCase& c) {
  if (c.expected_error == absl::StatusCode::kOk) return false;
  if (op == "SparseSoftmaxCrossEntropyWithLogits") {
    return c.inputs.size() == 2 && c.inputs[1].dtype() == DT_INT64 &&
           c.error_substring.find("outside the valid range") != std::string::npos;
  }
  if (op == "Dropout") return c.error_substring.find("rate must be in [0, 1)") != std::string::npos;
  return false;
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

struct Built {
  std::unique_ptr<Graph> graph;
  Node* node = nullptr;
};

// op(inputs) with the inputs as Consts on `cpu` and the op on `gpu`.
absl::StatusOr<Built> BuildCase(const std::string& op, const OpCase& c, const std::string& cpu,
                                const std::string& gpu) {
  Built built;
  built.graph = std::make_unique<Graph>();
  GraphBuilder b(built.graph.get());
  GraphBuilder on_cpu = b.WithDevice(cpu);
  std::vector<Output> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) inputs.push_back(on_cpu.Const(absl::StrCat("in", i), c.inputs[i]));
  built.node = b.WithDevice(gpu).AddNode("op_under_test", op, inputs, c.attrs);
  if (!b.ok()) return b.status();
  return built;
}

absl::StatusOr<std::vector<Tensor>> RunOnSession(DeviceMgr* devices, const Graph& graph,
                                                 const std::vector<std::string>& fetches) {
  SessionOptions options;
  options.device_mgr = devices;
  options.allow_soft_placement = false;
  // The op's inputs are Consts: folding would compute it on the CPU.
  options.enable_constant_folding = false;
  auto session = NewSession(options);
  if (!session.ok()) return session.status();
  GraphDef def;
  graph.ToGraphDef(&def);
  absl::Status s = (*session)->Create(def);
  if (!s.ok()) return s;
  std::vector<Tensor> outputs;
  s = (*session)->Run({}, fetches, {}, &outputs);
  (*session)->Close().IgnoreError();
  if (!s.ok()) return s;
  return outputs;
}

// Runs one case on the GPU; false when the op has no GPU kernel for it.
bool RunCaseOnGpu(DeviceMgr* devices, const std::string& cpu, const std::string& gpu, const OpHarnessEntry& entry,
                  DataType dtype, const OpCase& c) {
  const std::string where = absl::StrCat(entry.op, " [", DataTypeString(dtype), "] ", c.description, " on GPU");
  auto built = BuildCase(entry.op, c, cpu, gpu);
  if (!built.ok()) {
    // Rejected while building (shape inference): device-independent; only
    // bad-input cases may do so.
    EXPECT_NE(c.expected_error, absl::StatusCode::kOk) << where << ": " << built.status();
    EXPECT_EQ(built.status().code(), c.expected_error) << where << ": " << built.status();
    return false;
  }
  if (!KernelRegistry::Global()->HasKernel(kDeviceGpu, built->node->def())) return false;
  std::vector<std::string> fetches;
  for (int i = 0; i < built->node->num_outputs(); ++i) fetches.push_back(absl::StrCat(built->node->name(), ":", i));
  auto out = RunOnSession(devices, *built->graph, fetches);
  if (NanInsteadOfError(entry.op, c)) {
    EXPECT_TRUE(out.ok()) << where << ": " << out.status();
    if (out.ok()) {
      std::vector<double> v = ToDoubles((*out)[0]);
      EXPECT_TRUE(std::any_of(v.begin(), v.end(), [](double x) { return std::isnan(x); }))
          << where << ": expected NaN outputs for the bad input";
    }
    return true;
  }
  if (c.expected_error != absl::StatusCode::kOk) {
    EXPECT_FALSE(out.ok()) << where << ": expected an error";
    if (!out.ok()) {
      EXPECT_EQ(out.status().code(), c.expected_error) << where << ": " << out.status();
    }
    return true;
  }
  EXPECT_TRUE(out.ok()) << where << ": " << out.status();
  if (!out.ok()) return true;
  if (c.check) {
    absl::Status s = c.check(*out);
    EXPECT_TRUE(s.ok()) << where << ": " << s;
  }
  EXPECT_LE(c.expected.size(), out->size()) << where;
  for (size_t i = 0; i < c.expected.size() && i < out->size(); ++i) {
    if (i < c.skip_output.size() && c.skip_output[i]) continue;
    ExpectClose((*out)[i], c.expected[i], GpuTolerance(c, c.expected[i].dtype()), absl::StrCat(where, " output ", i));
  }
  return true;
}

TEST(OpHarnessGpu, EveryGpuKernelMatchesTheHarness) {
  DeviceMgr* devices = DeviceMgr::Local();
  const Device* gpu = nullptr;
  for (const auto& d : devices->devices()) {
    if (d->device_type() == kDeviceGpu) {
      gpu = d.get();
      break;
    }
  }
  if (gpu == nullptr) {
    std::printf("SKIP: no GPU\n");
    return;
  }
  const std::string cpu_name = devices->HostCpu()->name();
  std::vector<const OpHarnessEntry*> entries;
  for (const OpHarnessEntry& e : Entries()) entries.push_back(&e);
  std::sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->op < b->op; });
  std::vector<std::string> cpu_only;
  int total = 0;
  for (const OpHarnessEntry* entry : entries) {
    if (!entry->covered_elsewhere.empty() || !entry->make_cases) continue;
    int on_gpu = 0, skipped = 0;
    for (DataType dtype : entry->dtypes) {
      Rng rng(std::hash<std::string>()(entry->op) ^ dtype);
      for (const OpCase& c : entry->make_cases(dtype, &rng)) {
        if (RunCaseOnGpu(devices, cpu_name, gpu->name(), *entry, dtype, c)) {
          ++on_gpu;
        } else {
          ++skipped;
        }
      }
    }
    if (on_gpu == 0) {
      cpu_only.push_back(entry->op);
      continue;
    }
    total += on_gpu;
    std::printf("op %s: %d cases on GPU, %d skipped\n", entry->op.c_str(), on_gpu, skipped);
  }
  std::printf("%d cases ran on %s; ops without a GPU kernel for any case: %s\n", total, gpu->name().c_str(),
              absl::StrJoin(cpu_only, ", ").c_str());
}

}  // namespace
}  // namespace harness
}  // namespace sluice
