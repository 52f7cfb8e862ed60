// CPU kernels for AddN (sum of N same-shape tensors), Select (TensorFlow's
// v1 semantics: the condition has the shape of t, is a scalar, or a vector
// over t's first dimension), SelectV2 (numpy broadcasting of all three) and BroadcastGradientArgs (the reduction axes
// of each operand of a broadcasting binary op, for its gradient).
// Thread safety: kernels are stateless.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/kernels/cwise_ops_common.h"

namespace sluice {
namespace {

using cwise::CVec;
using cwise::Vec;

template <typename T>
class AddNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    const Tensor& first = ctx->input(0);
    for (int i = 1; i < n; ++i) {
      OP_REQUIRES(ctx, ctx->input(i).shape() == first.shape(),
                  absl::InvalidArgumentError(absl::StrCat("AddN inputs must have the same shape: input 0 is ",
                                                          first.shape().DebugString(), ", input ", i, " is ",
                                                          ctx->input(i).shape().DebugString())));
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, first.shape(), &out));
    T* c = out->data<T>();
    cwise::ParallelFor(ctx, first.NumElements(), n, [&](int64_t lo, int64_t len_end) {
      const int64_t len = len_end - lo;
      Vec<T> o(c + lo, len);
      if (n == 1) {
        o = CVec<T>(ctx->input(0).data<T>() + lo, len);
        return;
      }
      o = CVec<T>(ctx->input(0).data<T>() + lo, len) + CVec<T>(ctx->input(1).data<T>() + lo, len);
      int i = 2;
      for (; i + 1 < n; i += 2) {
        o += CVec<T>(ctx->input(i).data<T>() + lo, len) + CVec<T>(ctx->input(i + 1).data<T>() + lo, len);
      }
      if (i < n) o += CVec<T>(ctx->input(i).data<T>() + lo, len);
    });
  }
};

template <typename T>
class SelectOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    OP_REQUIRES(ctx, t.shape() == e.shape(),
                absl::InvalidArgumentError(absl::StrCat("'t' and 'e' must have the same shape, got ",
                                                        t.shape().DebugString(), " and ", e.shape().DebugString())));
    const bool same = cond.shape() == t.shape();
    const bool scalar = cond.dims() == 0;
    const bool vector = cond.dims() == 1 && t.dims() >= 1 && cond.dim_size(0) == t.dim_size(0);
    OP_REQUIRES(ctx, same || scalar || vector,
                absl::InvalidArgumentError(absl::StrCat(
                    "condition must be a scalar, a vector over the first dimension of 't', or have its shape; got ",
                    cond.shape().DebugString(), " for 't' of shape ", t.shape().DebugString())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, t.shape(), &out));
    const int64_t n = t.NumElements();
    if (n == 0) return;
    const bool* c = cond.data<bool>();
    const T* a = t.data<T>();
    const T* b = e.data<T>();
    T* o = out->data<T>();
    if (same && !scalar) {
      cwise::ParallelFor(ctx, n, 1, [&](int64_t lo, int64_t hi) {
        const int64_t len = hi - lo;
        Vec<T>(o + lo, len) =
            CVec<bool>(c + lo, len).select(CVec<T>(a + lo, len), CVec<T>(b + lo, len));
      });
      return;
    }
    if (scalar) {
      const T* src = c[0] ? a : b;
      std::copy(src, src + n, o);
      return;
    }
    const int64_t rows = t.dim_size(0), inner = n / rows;
    cwise::ParallelFor(ctx, rows, inner, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const T* src = (c[r] ? a : b) + r * inner;
        std::copy(src, src + inner, o + r * inner);
      }
    });
  }
};

// Row-major strides of `in` laid out in the rank of `out` (numpy alignment:
// trailing dims line up), 0 along the dims `in` is broadcast over.
// REQUIRES: `in` broadcasts to `out`.
std::vector<int64_t> BroadcastStrides(const TensorShape& in, const TensorShape& out) {
  const int rank = out.dims();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (int i = in.dims() - 1; i >= 0; --i) {
    if (in.dim_size(i) != 1) strides[rank - in.dims() + i] = stride;
    stride *= in.dim_size(i);
  }
  return strides;
}

// SelectV2: output = condition ? t : e with numpy broadcasting of all three.
// A scalar condition forwards t or e without a copy when it has the output's
// shape; same-shape inputs take one vectorized select; anything else walks
// the output row by row with per-input strides (0 where broadcast), over
// dims merged where every input walks them alike, each row one vectorized
// select when all three are contiguous along it.
template <typename T>
class SelectV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    cwise::BroadcastPlan te;
    OP_REQUIRES(ctx, cwise::MakeBroadcastPlan(t.shape(), e.shape(), &te).ok(),
                absl::InvalidArgumentError(absl::StrCat("'t' ", t.shape().DebugString(), " and 'e' ",
                                                        e.shape().DebugString(), " are not broadcast-compatible")));
    cwise::BroadcastPlan plan;
    OP_REQUIRES(ctx, cwise::MakeBroadcastPlan(cond.shape(), te.out_shape, &plan).ok(),
                absl::InvalidArgumentError(absl::StrCat("condition ", cond.shape().DebugString(), " and 't'/'e' ",
                                                        te.out_shape.DebugString(),
                                                        " are not broadcast-compatible")));
    const TensorShape& out_shape = plan.out_shape;
    if (cond.NumElements() == 1) {
      const Tensor& chosen = cond.data<bool>()[0] ? t : e;
      if (chosen.shape() == out_shape) {
        ctx->set_output(0, chosen);
        return;
      }
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    const bool* c = cond.data<bool>();
    const T* a = t.data<T>();
    const T* b = e.data<T>();
    T* o = out->data<T>();
    if constexpr (!std::is_same<T, tstring>::value) {
      if (cond.shape() == out_shape && t.shape() == out_shape && e.shape() == out_shape) {
        cwise::ParallelFor(ctx, n, 1, [&](int64_t lo, int64_t hi) {
          const int64_t len = hi - lo;
          Vec<T>(o + lo, len) = CVec<bool>(c + lo, len).select(CVec<T>(a + lo, len), CVec<T>(b + lo, len));
        });
        return;
      }
    }
    if (out_shape.dims() == 0) {
      o[0] = c[0] ? a[0] : b[0];
      return;
    }
    // Per output dim, each input's stride (0 where broadcast); adjacent dims
    // that every input walks alike (contiguously, or not at all) merge, so
    // a mask [16, 16] over scores [8, 4, 16, 16] is rows of 256.
    std::vector<int64_t> dims(out_shape.dim_sizes().begin(), out_shape.dim_sizes().end());
    std::vector<int64_t> cs = BroadcastStrides(cond.shape(), out_shape);
    std::vector<int64_t> as = BroadcastStrides(t.shape(), out_shape);
    std::vector<int64_t> bs = BroadcastStrides(e.shape(), out_shape);
    for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
      auto walks_alike = [&](const std::vector<int64_t>& st) {
        return st[d] == st[d + 1] * dims[d + 1] || (st[d] == 0 && st[d + 1] == 0);
      };
      if (!walks_alike(cs) || !walks_alike(as) || !walks_alike(bs)) continue;
      dims[d] *= dims[d + 1];
      for (auto* st : {&cs, &as, &bs}) {
        (*st)[d] = (*st)[d + 1];
        st->erase(st->begin() + d + 1);
      }
      dims.erase(dims.begin() + d + 1);
    }
    const int rank = static_cast<int>(dims.size());
    const int64_t inner = dims[rank - 1];
    const int64_t ci = cs[rank - 1], ai = as[rank - 1], bi = bs[rank - 1];
    cwise::ParallelFor(ctx, n / inner, inner, [&](int64_t lo, int64_t hi) {
      // The index of row `lo` over the outer dims, and each input's offset.
      std::vector<int64_t> index(rank - 1, 0);
      int64_t co = 0, ao = 0, bo = 0, r = lo;
      for (int d = rank - 2; d >= 0; --d) {
        index[d] = r % dims[d];
        r /= dims[d];
        co += index[d] * cs[d];
        ao += index[d] * as[d];
        bo += index[d] * bs[d];
      }
      for (int64_t row = lo; row < hi; ++row) {
        T* dst = o + row * inner;
        if constexpr (!std::is_same<T, tstring>::value) {
          if (ci == 1 && ai == 1 && bi == 1) {  // contiguous: one vectorized select
            Vec<T>(dst, inner) = CVec<bool>(c + co, inner).select(CVec<T>(a + ao, inner), CVec<T>(b + bo, inner));
          } else {
            for (int64_t j = 0; j < inner; ++j) dst[j] = c[co + j * ci] ? a[ao + j * ai] : b[bo + j * bi];
          }
        } else {
          for (int64_t j = 0; j < inner; ++j) dst[j] = c[co + j * ci] ? a[ao + j * ai] : b[bo + j * bi];
        }
        for (int d = rank - 2; d >= 0; --d) {
          co += cs[d];
          ao += as[d];
          bo += bs[d];
          if (++index[d] < dims[d]) break;
          co -= cs[d] * index[d];
          ao -= as[d] * index[d];
          bo -= bs[d] * index[d];
          index[d] = 0;
        }
      }
    });
  }
};

// TensorFlow's BCastGradArgs: for shapes s0 and s1, the output axes along
// which each operand was broadcast (and so its gradient must be summed).
template <typename T>
class BroadcastGradientArgsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& s0 = ctx->input(0);
    const Tensor& s1 = ctx->input(1);
    OP_REQUIRES(ctx, s0.dims() == 1 && s1.dims() == 1,
                absl::InvalidArgumentError(absl::StrCat("BroadcastGradientArgs needs vectors, got shapes ",
                                                        s0.shape().DebugString(), " and ",
                                                        s1.shape().DebugString())));
    const int64_t n0 = s0.NumElements(), n1 = s1.NumElements();
    const int64_t rank = std::max(n0, n1);
    std::vector<T> r0, r1;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t j0 = i - (rank - n0), j1 = i - (rank - n1);
      const T d0 = j0 >= 0 ? s0.data<T>()[j0] : 1;
      const T d1 = j1 >= 0 ? s1.data<T>()[j1] : 1;
      OP_REQUIRES(ctx, d0 >= 0 && d1 >= 0,
                  absl::InvalidArgumentError(absl::StrCat("negative dimension in shapes ", s0.DebugString(), " and ",
                                                          s1.DebugString())));
      if (d0 == d1) {
        // TF: a dim of 1 in both is reduced in both (harmless, size 1).
        if (d0 == 1) {
          r0.push_back(static_cast<T>(i));
          r1.push_back(static_cast<T>(i));
        }
      } else if (d0 == 1) {
        r0.push_back(static_cast<T>(i));
      } else if (d1 == 1) {
        r1.push_back(static_cast<T>(i));
      } else {
        ctx->CtxFailure(absl::InvalidArgumentError(
            absl::StrCat("shapes ", s0.DebugString(), " and ", s1.DebugString(), " are not broadcast-compatible")));
        return;
      }
    }
    Tensor* o0;
    Tensor* o1;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(r0.size())}), &o0));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({static_cast<int64_t>(r1.size())}), &o1));
    std::copy(r0.begin(), r0.end(), o0->data<T>());
    std::copy(r1.begin(), r1.end(), o1->data<T>());
  }
};

#define SLUICE_REG_(OP, T, ...) \
  REGISTER_KERNEL_BUILDER(Name(OP).Device(kDeviceCpu).TypeConstraint<T>("T"), __VA_ARGS__)
#define SLUICE_REG_ALL_(T)                 \
  SLUICE_REG_("AddN", T, AddNOp<T>);       \
  SLUICE_REG_("Select", T, SelectOp<T>);   \
  SLUICE_REG_("SelectV2", T, SelectV2Op<T>)
SLUICE_REG_ALL_(float);
SLUICE_REG_ALL_(double);
SLUICE_REG_ALL_(half);
SLUICE_REG_ALL_(bfloat16);
SLUICE_REG_ALL_(int8_t);
SLUICE_REG_ALL_(int16_t);
SLUICE_REG_ALL_(int32_t);
SLUICE_REG_ALL_(int64_t);
SLUICE_REG_ALL_(uint8_t);
SLUICE_REG_ALL_(uint16_t);
#undef SLUICE_REG_ALL_
SLUICE_REG_("Select", bool, SelectOp<bool>);
SLUICE_REG_("SelectV2", bool, SelectV2Op<bool>);
SLUICE_REG_("SelectV2", complex64, SelectV2Op<complex64>);
SLUICE_REG_("SelectV2", tstring, SelectV2Op<tstring>);
SLUICE_REG_("BroadcastGradientArgs", int32_t, BroadcastGradientArgsOp<int32_t>);
SLUICE_REG_("BroadcastGradientArgs", int64_t, BroadcastGradientArgsOp<int64_t>);
#undef SLUICE_REG_

}  // namespace
}  // namespace sluice
