// CPU kernels for BiasAdd and BiasAddGrad, NHWC (channels last, any rank >= 2)
// and NCHW (channels in dimension 1). BiasAdd broadcasts the [C] bias over the
// other dimensions; BiasAddGrad sums over them (accumulating in float/double).
// Attrs, shape checks and outputs: bias_shape.h (shared with the GPU kernels).
// Thread safety: kernels are stateless.
#include "engine/framework/op_kernel.h"
#include "engine/kernels/bias_shape.h"
#include "engine/kernels/nn_util.h"
#include "engine/kernels/run_tasks.h"

namespace sluice {
namespace {

template <typename T>
class BiasAddOp : public OpKernel {
 public:
  explicit BiasAddOp(OpKernelConstruction* ctx) : OpKernel(ctx), nchw_(BiasIsNchw(ctx)) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    BiasLayout l;
    Tensor* out;
    OP_REQUIRES_OK(ctx, PrepareBiasAdd(ctx, nchw_, &l, &out));
    if (x.NumElements() == 0) return;
    const T* in = x.data<T>();
    const T* b = bias.data<T>();
    T* o = out->data<T>();
    const int64_t c = l.channels, inner = l.inner;
    ParallelForRanges(ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(), l.outer, c * inner, 1,
        [&](Eigen::Index first, Eigen::Index last) {
          for (Eigen::Index n = first; n < last; ++n) {
            const T* xi = in + n * c * inner;
            T* oi = o + n * c * inner;
            if (inner == 1) {
              for (int64_t j = 0; j < c; ++j) oi[j] = static_cast<T>(xi[j] + b[j]);
            } else {
              for (int64_t j = 0; j < c; ++j) {
                const T bj = b[j];
                for (int64_t k = 0; k < inner; ++k) oi[j * inner + k] = static_cast<T>(xi[j * inner + k] + bj);
              }
            }
          }
        });
  }

 private:
  const bool nchw_;
};

template <typename T>
class BiasAddGradOp : public OpKernel {
 public:
  explicit BiasAddGradOp(OpKernelConstruction* ctx) : OpKernel(ctx), nchw_(BiasIsNchw(ctx)) {}
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename std::conditional<std::is_integral<T>::value, int64_t,
                                          typename AccumulatorType<T>::type>::type;
    const Tensor& dy = ctx->input(0);
    BiasLayout l;
    Tensor* out;
    OP_REQUIRES_OK(ctx, PrepareBiasAddGrad(ctx, nchw_, &l, &out));
    const int64_t c = l.channels, inner = l.inner, outer = l.outer;
    if (c == 0) return;
    const T* in = dy.data<T>();
    // Partial sums per block of `outer`, then a serial combine. Few blocks: the
    // partial sums are a heap buffer, and glibc consolidates its free lists
    // whenever a buffer of 64 KB or more is freed.
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(outer, 8));
    std::vector<Acc> partial(blocks * c, Acc(0));
    const int64_t per = (outer + blocks - 1) / blocks;
    ParallelForRanges(ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(), blocks, per * c * inner, 1,
        [&](Eigen::Index first, Eigen::Index last) {
          for (Eigen::Index blk = first; blk < last; ++blk) {
            Acc* acc = partial.data() + blk * c;
            const int64_t end = std::min(outer, (blk + 1) * per);
            for (int64_t n = blk * per; n < end; ++n) {
              const T* __restrict xi = in + n * c * inner;
              if (inner == 1) {  // NHWC / 2-D: one vectorized pass over the channels
                Acc* __restrict a = acc;
                for (int64_t j = 0; j < c; ++j) a[j] += static_cast<Acc>(xi[j]);
                continue;
              }
              for (int64_t j = 0; j < c; ++j) {
                Acc s = 0;
                for (int64_t k = 0; k < inner; ++k) s += static_cast<Acc>(xi[j * inner + k]);
                acc[j] += s;
              }
            }
          }
        });
    T* o = out->data<T>();
    for (int64_t j = 0; j < c; ++j) {
      Acc s = 0;
      for (int64_t blk = 0; blk < blocks; ++blk) s += partial[blk * c + j];
      o[j] = static_cast<T>(s);
    }
  }

 private:
  const bool nchw_;
};

#define SLUICE_REGISTER_BIAS_(T)                                                                 \
  REGISTER_KERNEL_BUILDER(Name("BiasAdd").Device(kDeviceCpu).TypeConstraint<T>("T"), BiasAddOp<T>); \
  REGISTER_KERNEL_BUILDER(Name("BiasAddGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), BiasAddGradOp<T>)
SLUICE_REGISTER_BIAS_(float);
SLUICE_REGISTER_BIAS_(double);
SLUICE_REGISTER_BIAS_(half);
SLUICE_REGISTER_BIAS_(bfloat16);
SLUICE_REGISTER_BIAS_(int8_t);
SLUICE_REGISTER_BIAS_(int16_t);
SLUICE_REGISTER_BIAS_(int32_t);
SLUICE_REGISTER_BIAS_(int64_t);
SLUICE_REGISTER_BIAS_(uint8_t);
SLUICE_REGISTER_BIAS_(uint16_t);
#undef SLUICE_REGISTER_BIAS_

}  // namespace
}  // namespace sluice
