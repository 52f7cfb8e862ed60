// Shared machinery of the elementwise (cwise) CPU kernels: numpy broadcast
// plans, chunked parallel loops on the device's intra-op pool, and the
// templates that evaluate an Eigen expression functor over same-shape,
// scalar and broadcast operands. Every expression is evaluated per chunk on
// Eigen's DefaultDevice (vectorized); the chunks run in parallel, so each
// (op, dtype) instantiates only a few small evaluators.
// Thread safety: pure functions of their arguments.
#ifndef SLUICE_ENGINE_KERNELS_CWISE_OPS_COMMON_H_
#define SLUICE_ENGINE_KERNELS_CWISE_OPS_COMMON_H_

#include <cstdint>
#include <functional>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "engine/framework/op_kernel.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace sluice {
namespace cwise {

template <typename T>
using Vec = Eigen::TensorMap<Eigen::Tensor<T, 1, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Unaligned>;
template <typename T>
using CVec = Eigen::TensorMap<Eigen::Tensor<const T, 1, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Unaligned>;

// Below this many elements of work, loops run inline on the calling thread:
// a second thread only pays once the tensors are out of the caches (ops_bench
// BM_AddSmall: Add of two [512, 1024] tensors, 2 MiB each, takes 86 us on one
// thread and 103 us split over two; 32 MiB ones run 1.6x faster on two).
constexpr int64_t kParallelThreshold = 1 << 20;

// Runs fn(first, last) over [0, n), in parallel chunks on the device's pool
// when n * cost_per_unit is large. `cost_per_unit` is in elements of work.
void ParallelFor(OpKernelContext* ctx, int64_t n, int64_t cost_per_unit,
                 const std::function<void(int64_t, int64_t)>& fn);

// How the two operands of a broadcasting binary op line up with the output.
struct BroadcastPlan {
  enum Kind { kSame, kYScalar, kXScalar, kGeneral };
  TensorShape out_shape;
  Kind kind = kSame;
  // kGeneral: the output collapsed to `dims` (innermost last); per collapsed
  // dim, the operands' strides (0 where broadcast). The innermost dim is the
  // contiguous run; inner_x_scalar / inner_y_scalar say which operand is
  // constant along it.
  absl::InlinedVector<int64_t, 8> dims, x_strides, y_strides;
  bool inner_x_scalar = false, inner_y_scalar = false;
};

// InvalidArgument "shapes [2] and [3] are not broadcast-compatible" otherwise.
absl::Status MakeBroadcastPlan(const TensorShape& x, const TensorShape& y, BroadcastPlan* plan);

// Walks the rows [first, last) of a kGeneral plan: fn(row, x_offset, y_offset).
void ForEachRow(const BroadcastPlan& p, int64_t first, int64_t last,
                const std::function<void(int64_t, int64_t, int64_t)>& fn);

// out = f(x, y) with numpy broadcasting. `F` is a functor over Eigen
// expressions: template <class A, class B> auto operator()(const A&, const B&).
template <typename T, typename Tout, typename F>
void ApplyBinary(OpKernelContext* ctx, const Tensor& x, const Tensor& y, const BroadcastPlan& p, Tensor* out,
                 const F& f) {
  const int64_t n = out->NumElements();
  if (n == 0) return;
  const T* a = x.data<T>();
  const T* b = y.data<T>();
  Tout* c = out->data<Tout>();
  switch (p.kind) {
    case BroadcastPlan::kSame:
      ParallelFor(ctx, n, 1, [&](int64_t first, int64_t last) {
        const int64_t len = last - first;
        Vec<Tout>(c + first, len) = f(CVec<T>(a + first, len), CVec<T>(b + first, len));
      });
      return;
    case BroadcastPlan::kYScalar: {
      const T s = b[0];
      ParallelFor(ctx, n, 1, [&](int64_t first, int64_t last) {
        const int64_t len = last - first;
        CVec<T> va(a + first, len);
        Vec<Tout>(c + first, len) = f(va, va.constant(s));
      });
      return;
    }
    case BroadcastPlan::kXScalar: {
      const T s = a[0];
      ParallelFor(ctx, n, 1, [&](int64_t first, int64_t last) {
        const int64_t len = last - first;
        CVec<T> vb(b + first, len);
        Vec<Tout>(c + first, len) = f(vb.constant(s), vb);
      });
      return;
    }
    case BroadcastPlan::kGeneral: {
      const int64_t inner = p.dims.back();
      const int64_t rows = n / inner;
      ParallelFor(ctx, rows, inner, [&](int64_t first, int64_t last) {
        ForEachRow(p, first, last, [&](int64_t row, int64_t xo, int64_t yo) {
          Vec<Tout> vc(c + row * inner, inner);
          if (p.inner_x_scalar) {
            CVec<T> vb(b + yo, inner);
            vc = f(vb.constant(a[xo]), vb);
          } else if (p.inner_y_scalar) {
            CVec<T> va(a + xo, inner);
            vc = f(va, va.constant(b[yo]));
          } else {
            vc = f(CVec<T>(a + xo, inner), CVec<T>(b + yo, inner));
          }
        });
      });
      return;
    }
  }
}

// Computes the broadcast plan of inputs 0 and 1, allocates output 0 and
// applies f. Returns false (with the context's status set) on error.
template <typename T, typename Tout, typename F>
void BinaryCompute(OpKernelContext* ctx, const F& f) {
  const Tensor& x = ctx->input(0);
  const Tensor& y = ctx->input(1);
  BroadcastPlan plan;
  OP_REQUIRES_OK(ctx, MakeBroadcastPlan(x.shape(), y.shape(), &plan));
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan.out_shape, &out));
  ApplyBinary<T, Tout>(ctx, x, y, plan, out, f);
}

// out = f(in) elementwise, in parallel chunks.
template <typename T, typename Tout, typename F>
void ApplyUnary(OpKernelContext* ctx, const Tensor& in, Tensor* out, const F& f, int64_t cost = 1) {
  const T* a = in.data<T>();
  Tout* c = out->data<Tout>();
  ParallelFor(ctx, in.NumElements(), cost, [&](int64_t first, int64_t last) {
    const int64_t len = last - first;
    Vec<Tout>(c + first, len) = f(CVec<T>(a + first, len));
  });
}

}  // namespace cwise
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_CWISE_OPS_COMMON_H_
