// CPU kernels for SoftmaxCrossEntropyWithLogits (dense labels) and
// SparseSoftmaxCrossEntropyWithLogits (class indices): per row of the
// [batch, classes] logits, loss = logsumexp(x) - <labels, x> and backprop =
// softmax(x) - labels, in one pass. Rows run in parallel on the intra-op pool.
// Checks and allocation: softmax_shape.h (shared with the GPU kernels).
// Thread safety: kernels are stateless.
#include <cmath>
#include <type_traits>

#include "Eigen/Core"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/nn_util.h"
#include "engine/kernels/softmax_shape.h"
#include "engine/kernels/run_tasks.h"

namespace sluice {
namespace {

template <typename T>
class SoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    Tensor *loss, *backprop;
    OP_REQUIRES_OK(ctx, PrepareXent(ctx, false, &loss, &backprop));
    const int64_t batch = ctx->input(0).dim_size(0), depth = ctx->input(0).dim_size(1);
    const T* x = ctx->input(0).data<T>();
    const T* y = ctx->input(1).data<T>();
    T* l = loss->data<T>();
    T* bp = backprop->data<T>();
    ParallelForRanges(
        ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(), batch,
        static_cast<int64_t>(depth * 25), 1,
        [&](Eigen::Index first, Eigen::Index last) {
          for (Eigen::Index r = first; r < last; ++r) {
            const T* xr = x + r * depth;
            const T* yr = y + r * depth;
            T* br = bp + r * depth;
            if constexpr (std::is_same_v<T, Acc>) {
              // One vectorized exp pass: e = exp(x - max), loss = sum(labels *
              // (lse - (x - max))) with lse = log(sum(e)), backprop = e / sum(e) - labels.
              using Row = Eigen::Array<T, Eigen::Dynamic, 1>;
              Eigen::Map<const Row> xv(xr, depth), yv(yr, depth);
              Eigen::Map<Row> bv(br, depth);
              const T mx = xv.maxCoeff();
              bv = (xv - mx).exp();
              const T sum = bv.sum();
              const T lse = std::log(sum);
              l[r] = (yv * (lse - (xv - mx))).sum();
              bv = bv * (T(1) / sum) - yv;
              continue;
            }
            SoftmaxRow<T>(xr, depth, /*log=*/true, br);  // br = log_softmax
            Acc total = 0;
            for (int64_t j = 0; j < depth; ++j) {
              const Acc logp = static_cast<Acc>(br[j]);
              total -= static_cast<Acc>(yr[j]) * logp;
              br[j] = static_cast<T>(std::exp(logp) - static_cast<Acc>(yr[j]));
            }
            l[r] = static_cast<T>(total);
          }
        });
  }
};

template <typename T, typename Index>
class SparseSoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    Tensor *loss, *backprop;
    OP_REQUIRES_OK(ctx, PrepareXent(ctx, true, &loss, &backprop));
    const int64_t batch = ctx->input(0).dim_size(0), depth = ctx->input(0).dim_size(1);
    const Index* labels = ctx->input(1).data<Index>();
    OP_REQUIRES_OK(ctx, CheckXentLabels(labels, batch, depth));
    const T* x = ctx->input(0).data<T>();
    T* l = loss->data<T>();
    T* bp = backprop->data<T>();
    ParallelForRanges(
        ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(), batch,
        static_cast<int64_t>(depth * 25), 1,
        [&](Eigen::Index first, Eigen::Index last) {
          for (Eigen::Index r = first; r < last; ++r) {
            T* br = bp + r * depth;
            SoftmaxRow<T>(x + r * depth, depth, /*log=*/true, br);
            const int64_t label = static_cast<int64_t>(labels[r]);
            l[r] = static_cast<T>(-static_cast<Acc>(br[label]));
            if constexpr (std::is_same_v<T, Acc>) {  // vectorized exp, as above
              Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> bv(br, depth);
              bv = bv.exp();
              br[label] -= T(1);
              continue;
            }
            for (int64_t j = 0; j < depth; ++j) {
              br[j] = static_cast<T>(std::exp(static_cast<Acc>(br[j])) - (j == label ? Acc(1) : Acc(0)));
            }
          }
        });
  }
};

#define SLUICE_REGISTER_XENT_(T)                                                                              \
  REGISTER_KERNEL_BUILDER(Name("SoftmaxCrossEntropyWithLogits").Device(kDeviceCpu).TypeConstraint<T>("T"),    \
                          SoftmaxXentOp<T>);                                                                  \
  REGISTER_KERNEL_BUILDER(Name("SparseSoftmaxCrossEntropyWithLogits")                                         \
                              .Device(kDeviceCpu)                                                             \
                              .TypeConstraint<T>("T")                                                         \
                              .TypeConstraint<int32_t>("Tlabels"),                                            \
                          SparseSoftmaxXentOp<T, int32_t>);                                                   \
  REGISTER_KERNEL_BUILDER(Name("SparseSoftmaxCrossEntropyWithLogits")                                         \
                              .Device(kDeviceCpu)                                                             \
                              .TypeConstraint<T>("T")                                                         \
                              .TypeConstraint<int64_t>("Tlabels"),                                            \
                          SparseSoftmaxXentOp<T, int64_t>)
SLUICE_REGISTER_XENT_(float);
SLUICE_REGISTER_XENT_(double);
SLUICE_REGISTER_XENT_(half);
SLUICE_REGISTER_XENT_(bfloat16);
#undef SLUICE_REGISTER_XENT_

}  // namespace
}  // namespace sluice
