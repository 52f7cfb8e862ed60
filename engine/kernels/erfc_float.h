// erfc over float tensors, in vectors of four doubles: the
// scalar libm erfcf took most of a transformer block's step (GELU is
// 0.5 x erfc(-x / sqrt(2)); 117 us of a 660 us census attention step).
// For x >= 0, erfc(x) = t exp(P(t) - x^2) with t = 1 / (1 + x / 2) and P a
// degree-12 polynomial fitted here to ln(erfc(x) / t) + x^2 on [0, 10.1]
// (Chebyshev nodes, against a double-precision erfc: relative error under
// 2e-10 before rounding to float); erfc(-x) = 2 - erfc(x). exp is our own
// (a Cody-Waite reduction by ln 2 and a degree-11 Taylor polynomial), so the
// loop vectorizes. Results are within one float ulp of the correctly
// rounded value; NaN stays NaN, erfc(+inf) = 0, erfc(-inf) = 2. Sixteen
// values (four vectors) go through each step together.
// Thread safety: a function of its arguments.
#ifndef SLUICE_ENGINE_KERNELS_ERFC_FLOAT_H_
#define SLUICE_ENGINE_KERNELS_ERFC_FLOAT_H_

#include <cstdint>

namespace sluice {

// out[i] = erfc(in[i]) for i in [0, n). `in` and `out` may be the same.
void ErfcFloat(const float* in, float* out, int64_t n);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_ERFC_FLOAT_H_
