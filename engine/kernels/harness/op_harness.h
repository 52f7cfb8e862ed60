// The op test harness (DESIGN.md "one op, one place"; ggml's test-backend-ops
// idea): every registered op has an entry. An entry makes cases for each dtype
// the op supports: input tensors, attrs, and the expected outputs computed by
// a float64 reference; or an expected error for bad input. Differentiable ops
// also get finite-difference gradient checks in float64. Ops that cannot be
// tested as pure functions (state, control flow, I/O) name the test that
// covers them instead.
//
//   REGISTER_OP_HARNESS(OpHarnessEntry{
//       .op = "Add", .dtypes = {DT_FLOAT, DT_DOUBLE, DT_INT32},
//       .make_cases = [](DataType dtype, Rng* rng) { ... }});
//
// Entries live in engine/kernels/harness/*_cases.cc, one file per op family;
// //engine/kernels:op_harness_test runs them all and fails when a registered
// op has no entry, or a differentiable op has no gradient check.
#ifndef SLUICE_ENGINE_KERNELS_HARNESS_OP_HARNESS_H_
#define SLUICE_ENGINE_KERNELS_HARNESS_OP_HARNESS_H_

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/framework/tensor.h"
#include "engine/graph/graph_builder.h"

namespace sluice {
namespace harness {

using Rng = std::mt19937_64;

struct OpCase {
  std::string description;          // shown on failure, e.g. "broadcast [2,1] + [3]"
  std::vector<Tensor> inputs;        // in the dtype under test
  AttrList attrs;                    // type attrs are inferred from the inputs
  // Expected outputs, in the op's output dtypes; compared with `tolerance`
  // (0: a default per dtype: exact for integers and bool, 1e-5 relative for
  // float, 1e-12 for double, 1e-2 for half and bfloat16).
  std::vector<Tensor> expected;
  // Skip the value check for outputs whose values are not deterministic
  // functions of the inputs (random ops: check properties in the entry).
  std::vector<bool> skip_output;
  double tolerance = 0;
  // A bad-input case: the step must fail with this code, and the message must
  // contain `error_substring` and the node's name.
  absl::StatusCode expected_error = absl::StatusCode::kOk;
  std::string error_substring;
  // Finite-difference check of the gradients with respect to `grad_inputs`
  // (all floating inputs when empty). Only for DT_DOUBLE cases.
  bool check_gradient = false;
  std::vector<int> grad_inputs;
  // The outputs whose gradients flow back (all floating outputs when empty):
  // TensorFlow's FusedBatchNorm gradient, e.g., ignores the batch statistics.
  std::vector<int> grad_outputs;
  // The finite-difference step (0: 1e-6). A larger one lets float32 outputs
  // of float64 inputs be checked too (ResizeBilinear returns float32 for any
  // input): exact for outputs linear in the inputs, where the outputs'
  // rounding would swamp a small step.
  double gradient_epsilon = 0;
  // Custom check of the outputs (random ops); returns an error to fail.
  std::function<absl::Status(const std::vector<Tensor>& outputs)> check;
};

struct OpHarnessEntry {
  std::string op;
  std::vector<DataType> dtypes;
  std::function<std::vector<OpCase>(DataType dtype, Rng* rng)> make_cases;
  // When set, the op is covered by this test target instead (stateful,
  // control-flow or I/O ops), and `make_cases` may be empty.
  std::string covered_elsewhere;
};

// The registry of entries, filled at static initialization.
std::vector<OpHarnessEntry>& Entries();
struct Registrar {
  explicit Registrar(OpHarnessEntry entry) { Entries().push_back(std::move(entry)); }
};
#define SLUICE_HARNESS_CONCAT_(a, b) a##b
#define SLUICE_HARNESS_NAME_(ctr) SLUICE_HARNESS_CONCAT_(harness_registrar_, ctr)
#define REGISTER_OP_HARNESS(...) \
  static ::sluice::harness::Registrar SLUICE_HARNESS_NAME_(__COUNTER__)(__VA_ARGS__)

// ---- Helpers for writing entries ----

// Values uniformly in [lo, hi] (integers: whole numbers; bool: coin flips),
// stored in `dtype`.
Tensor RandomTensor(DataType dtype, const TensorShape& shape, Rng* rng, double lo = -2, double hi = 2);
// A random shape of `rank` with dims in [min_dim, max_dim].
TensorShape RandomShape(Rng* rng, int rank, int64_t min_dim = 1, int64_t max_dim = 4);
// RandomTensor in [-5, 5] for numbers; for strings, short random words
// ("s" and a number below 1000): values of any dtype, for ops that move
// elements (array ops).
Tensor RandomValues(DataType dtype, const TensorShape& shape, Rng* rng);
// The multi-index of flat element `flat` of `shape`, and back.
std::vector<int64_t> UnravelIndex(int64_t flat, const TensorShape& shape);
int64_t RavelIndex(const std::vector<int64_t>& index, const TensorShape& shape);
// An int32 or int64 tensor of `shape` holding `values` (row-major).
Tensor IndexTensor(DataType dtype, const std::vector<int64_t>& values, const TensorShape& shape);
// Every element as double (complex: the real part).
std::vector<double> ToDoubles(const Tensor& t);
// A tensor of `dtype` from doubles (rounded for integers, cast otherwise).
Tensor FromDoubles(DataType dtype, const TensorShape& shape, const std::vector<double>& values);
// Applies `fn` elementwise with numpy broadcasting, in float64.
Tensor BroadcastBinaryReference(DataType out_dtype, const Tensor& x, const Tensor& y,
                                const std::function<double(double, double)>& fn);
Tensor UnaryReference(DataType out_dtype, const Tensor& x, const std::function<double(double)>& fn);
// Pairs of shapes that broadcast, including scalars, size-0 dims and rank
// differences: ([2,3],[2,3]), ([2,1],[3]), ([],[4]), ([0,3],[3]) ...
std::vector<std::pair<TensorShape, TensorShape>> BroadcastShapePairs(Rng* rng);
// A case that must fail with InvalidArgument naming the node.
OpCase ErrorCase(std::string description, std::vector<Tensor> inputs, AttrList attrs, std::string substring,
                 absl::StatusCode code = absl::StatusCode::kInvalidArgument);

const std::vector<DataType>& FloatTypes();       // half, bfloat16, float, double
const std::vector<DataType>& RealNumberTypes();  // FloatTypes + int8/16/32/64, uint8/16

}  // namespace harness
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_HARNESS_OP_HARNESS_H_
