// CPU kernel for Sluice's Dropout op (engine/ops/nn_ops.cc documents it):
// mask[i] = (u[i] >= rate) with u uniform in [0, 1) from the Philox stream
// keyed by (seed, seed2) at counter `step` (an input), output = x * mask / (1 - rate).
// Thread safety: Compute keeps no state and may run concurrently.

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/nn_util.h"
#include "engine/kernels/philox_random.h"
#include "engine/kernels/run_tasks.h"

namespace sluice {
namespace {

#if defined(__AVX512F__)
// Elements 4 * b0 .. 4 * b0 + 63 of a float Dropout: Philox blocks b0 .. b0 +
// 15 in vectors, reordered from block order to element order, then the mask
// and the scaled kept inputs (x * scale where kept, else 0, as the scalar
// loop computes them).
void DropoutBlocks16(philox::Key key, int64_t b0, uint32_t run, float rate, float scale, const float* in, float* out,
                     float* mask) {
  __m512i words[4];
  philox::Generate16(key, static_cast<uint64_t>(b0), run, 0, words);
  __m512 keep[4];
  const __m512 ones = _mm512_set1_ps(1.0f), rates = _mm512_set1_ps(rate), scales = _mm512_set1_ps(scale);
  for (int j = 0; j < 4; ++j) {
    keep[j] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(philox::ToFloat16(words[j]), rates, _CMP_GE_OQ), ones);
  }
  philox::BlocksToElements(keep);
  const int64_t base = b0 * 4;
  for (int k = 0; k < 4; ++k) {
    const __mmask16 kept = _mm512_cmp_ps_mask(keep[k], _mm512_setzero_ps(), _CMP_NEQ_OQ);
    _mm512_storeu_ps(mask + base + 16 * k, keep[k]);
    _mm512_storeu_ps(out + base + 16 * k, _mm512_maskz_mul_ps(kept, _mm512_loadu_ps(in + base + 16 * k), scales));
  }
}
#endif

template <typename T>
class DropoutOp : public OpKernel {
 public:
  explicit DropoutOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    int64_t seed = 0, seed2 = 0;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seed", &seed));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seed2", &seed2));
    key_ = philox::KeyFromSeeds(seed, seed2);
  }

  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    const Tensor& x = ctx->input(0);
    const Tensor& rate_t = ctx->input(1);
    OP_REQUIRES(ctx, rate_t.NumElements() == 1 && rate_t.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("rate must be a scalar, got ", rate_t.shape().DebugString())));
    const Acc rate = static_cast<Acc>(rate_t.data<T>()[0]);
    OP_REQUIRES(ctx, rate >= Acc(0) && rate < Acc(1),
                absl::InvalidArgumentError(absl::StrCat("rate must be in [0, 1), got ", static_cast<double>(rate))));
    Tensor *out, *mask;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, x.shape(), &mask));
    const Tensor& step_t = ctx->input(2);
    OP_REQUIRES(ctx, step_t.NumElements() == 1 && step_t.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("step must be a scalar, got ", step_t.shape().DebugString())));
    const uint32_t run = static_cast<uint32_t>(step_t.data<int64_t>()[0]);
    const int64_t n = x.NumElements();
    if (n == 0) return;
    const Acc scale = Acc(1) / (Acc(1) - rate);
    const T* in = x.data<T>();
    T* o = out->data<T>();
    T* m = mask->data<T>();
    const philox::Key key = key_;
    const int64_t blocks = (n + 3) / 4;
    ParallelForRanges(
        ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(), blocks, 60, 1,
        [&](Eigen::Index first, Eigen::Index last) {
          Eigen::Index b = first;
#if defined(__AVX512F__)
          if constexpr (std::is_same_v<T, float>) {
            // 16 blocks (64 elements) at a time, the same stream and values as the loop below.
            for (; b + 16 <= last && (b + 16) * 4 <= n; b += 16) DropoutBlocks16(key, b, run, rate, scale, in, o, m);
          }
#endif
          for (; b < last; ++b) {
            const philox::Block bits = philox::Generate(key, b, run);
            for (int j = 0; j < 4; ++j) {
              const int64_t i = b * 4 + j;
              if (i >= n) break;
              // 32-bit uniforms even for double: the keep decision needs no more.
              const bool keep = static_cast<Acc>(philox::ToFloat(bits[j])) >= rate;
              m[i] = static_cast<T>(keep ? 1 : 0);
              o[i] = keep ? static_cast<T>(static_cast<Acc>(in[i]) * scale) : static_cast<T>(0);
            }
          }
        });
  }

 private:
  philox::Key key_;
};

REGISTER_KERNEL_BUILDER(Name("Dropout").Device(kDeviceCpu).TypeConstraint<float>("T"), DropoutOp<float>);
REGISTER_KERNEL_BUILDER(Name("Dropout").Device(kDeviceCpu).TypeConstraint<double>("T"), DropoutOp<double>);
REGISTER_KERNEL_BUILDER(Name("Dropout").Device(kDeviceCpu).TypeConstraint<half>("T"), DropoutOp<half>);
REGISTER_KERNEL_BUILDER(Name("Dropout").Device(kDeviceCpu).TypeConstraint<bfloat16>("T"), DropoutOp<bfloat16>);

}  // namespace
}  // namespace sluice
