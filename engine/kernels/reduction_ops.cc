// CPU kernels for the reductions Sum, Mean, Prod, Max, Min, All, Any (axes
// from an int32/int64 input, negative axes allowed, keep_dims) and ArgMax /
// ArgMin.
// The input is viewed as alternating groups of kept and reduced dims; each
// reduced group is folded away as a [A, R, B] -> [A, B] pass with vectorized
// Eigen expressions in parallel chunks. half and bfloat16 accumulate in float.
// Axis checks and output shapes: reduction_shape.h (shared with the GPU).
// Thread safety: kernels are stateless.
#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/kernels/cwise_ops_common.h"
#include "engine/kernels/reduction_shape.h"

namespace sluice {
namespace {

using cwise::CVec;
using cwise::Vec;

struct SumR {
  template <typename T>
  static T Identity() { return T(0); }
  template <typename M>
  static auto All(const M& m) { return m.sum(); }
  template <typename A, typename B>
  static auto Combine(const A& a, const B& b) { return a + b; }
  template <typename T>
  static T Scalar(T a, T b) { return a + b; }
};
struct ProdR {
  template <typename T>
  static T Identity() { return T(1); }
  template <typename M>
  static auto All(const M& m) { return m.prod(); }
  template <typename A, typename B>
  static auto Combine(const A& a, const B& b) { return a * b; }
  template <typename T>
  static T Scalar(T a, T b) { return a * b; }
};
struct MaxR {
  template <typename T>
  static T Identity() {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  }
  template <typename M>
  static auto All(const M& m) { return m.maximum(); }
  template <typename A, typename B>
  static auto Combine(const A& a, const B& b) { return a.cwiseMax(b); }
  template <typename T>
  static T Scalar(T a, T b) { return a < b ? b : a; }
};
struct MinR {
  template <typename T>
  static T Identity() {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  }
  template <typename M>
  static auto All(const M& m) { return m.minimum(); }
  template <typename A, typename B>
  static auto Combine(const A& a, const B& b) { return a.cwiseMin(b); }
  template <typename T>
  static T Scalar(T a, T b) { return b < a ? b : a; }
};

// Logical reductions of bool tensors.
struct AllR {
  template <typename T>
  static T Identity() { return true; }
  template <typename M>
  static auto All(const M& m) { return m.all(); }
  template <typename A, typename B>
  static auto Combine(const A& a, const B& b) { return a && b; }
  template <typename T>
  static T Scalar(T a, T b) { return a && b; }
};
struct AnyR {
  template <typename T>
  static T Identity() { return false; }
  template <typename M>
  static auto All(const M& m) { return m.any(); }
  template <typename A, typename B>
  static auto Combine(const A& a, const B& b) { return a || b; }
  template <typename T>
  static T Scalar(T a, T b) { return a || b; }
};

// out[a, b] = reduce_r in[a, r, b].
template <typename T, typename R>
void Reduce3(OpKernelContext* ctx, const T* in, T* out, int64_t A, int64_t Rn, int64_t B) {
  if (A * B == 0) return;
  if (Rn == 0) {
    std::fill(out, out + A * B, R::template Identity<T>());
    return;
  }
  if (B == 1) {
    if (A == 1 && Rn >= 2 * cwise::kParallelThreshold) {
      // One long row: partial results per chunk, combined serially.
      const int64_t chunk = cwise::kParallelThreshold;
      const int64_t parts = (Rn + chunk - 1) / chunk;
      // Not std::vector: vector<bool> packs bits that chunks would share.
      std::unique_ptr<T[]> partial(new T[parts]);
      cwise::ParallelFor(ctx, parts, chunk, [&](int64_t lo, int64_t hi) {
        for (int64_t p = lo; p < hi; ++p) {
          const int64_t first = p * chunk, len = std::min(chunk, Rn - first);
          Eigen::Tensor<T, 0, Eigen::RowMajor, Eigen::DenseIndex> r = R::All(CVec<T>(in + first, len));
          partial[p] = r();
        }
      });
      T acc = partial[0];
      for (int64_t p = 1; p < parts; ++p) acc = R::Scalar(acc, partial[p]);
      out[0] = acc;
      return;
    }
    cwise::ParallelFor(ctx, A, Rn, [&](int64_t lo, int64_t hi) {
      for (int64_t a = lo; a < hi; ++a) {
        Eigen::Tensor<T, 0, Eigen::RowMajor, Eigen::DenseIndex> r = R::All(CVec<T>(in + a * Rn, Rn));
        out[a] = r();
      }
    });
    return;
  }
  // Rows of length B are combined into out[a]; parallel over (a, column block).
  const int64_t block = std::min<int64_t>(B, 4096);
  const int64_t blocks_per_a = (B + block - 1) / block;
  cwise::ParallelFor(ctx, A * blocks_per_a, Rn * block, [&](int64_t lo, int64_t hi) {
    for (int64_t w = lo; w < hi; ++w) {
      const int64_t a = w / blocks_per_a, b0 = (w % blocks_per_a) * block;
      const int64_t len = std::min(block, B - b0);
      Vec<T> o(out + a * B + b0, len);
      const T* base = in + a * Rn * B + b0;
      o = CVec<T>(base, len);
      for (int64_t r = 1; r < Rn; ++r) o = R::Combine(o, CVec<T>(base + r * B, len));
    }
  });
}

// Reduces `in` (of `dims`) along the flagged dims into `out`, via temporaries.
template <typename T, typename R>
absl::Status ReduceAxes(OpKernelContext* ctx, const T* in, absl::InlinedVector<int64_t, 8> dims,
                        std::vector<bool> reduce, T* out) {
  // Collapse into alternating groups.
  absl::InlinedVector<int64_t, 8> g;
  std::vector<bool> gr;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!g.empty() && gr.back() == reduce[i]) {
      g.back() *= dims[i];
    } else {
      g.push_back(dims[i]);
      gr.push_back(reduce[i]);
    }
  }
  int64_t total = 1;
  for (int64_t d : g) total *= d;
  int64_t out_n = 1;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!gr[i]) out_n *= g[i];
  }
  int num_reduced = 0;
  for (bool r : gr) num_reduced += r;
  if (num_reduced == 0) {
    std::copy(in, in + out_n, out);
    return absl::OkStatus();
  }
  Tensor tmp[2];
  const T* src = in;
  int which = 0;
  while (num_reduced > 0) {
    // Fold the last reduced group.
    int k = static_cast<int>(g.size()) - 1;
    while (!gr[k]) --k;
    int64_t A = 1, B = 1;
    for (int i = 0; i < k; ++i) A *= g[i];
    for (size_t i = k + 1; i < g.size(); ++i) B *= g[i];
    T* dst;
    if (num_reduced == 1) {
      dst = out;
    } else {
      absl::Status s = ctx->allocate_temp(DataTypeToEnum<T>::value, TensorShape({A * B}), &tmp[which]);
      if (!s.ok()) return s;
      dst = tmp[which].data<T>();
    }
    Reduce3<T, R>(ctx, src, dst, A, g[k], B);
    src = dst;
    which ^= 1;
    g.erase(g.begin() + k);
    gr.erase(gr.begin() + k);
    // Merge the neighbours that are now adjacent kept groups.
    if (k > 0 && k < static_cast<int>(g.size()) && !gr[k - 1] && !gr[k]) {
      g[k - 1] *= g[k];
      g.erase(g.begin() + k);
      gr.erase(gr.begin() + k);
    }
    --num_reduced;
  }
  return absl::OkStatus();
}

template <typename T>
struct Accum {
  using type = T;
};
template <>
struct Accum<half> {
  using type = float;
};
template <>
struct Accum<bfloat16> {
  using type = float;
};

template <typename T, typename R, bool kMean>
class ReductionOp : public OpKernel {
 public:
  explicit ReductionOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("keep_dims", &keep_dims_));
  }

  void Compute(OpKernelContext* ctx) override {
    using A = typename Accum<T>::type;
    const Tensor& in = ctx->input(0);
    ReductionShape r;
    OP_REQUIRES_OK(ctx, ComputeReductionShape(in.shape(), ctx->input(1), keep_dims_, &r));
    const std::vector<bool>& reduce = r.reduce;
    const int64_t count = r.count;
    absl::InlinedVector<int64_t, 8> dims(in.shape().dim_sizes().begin(), in.shape().dim_sizes().end());
    if (count == 1) {
      // Nothing is combined (no axes, or only axes of size 1; e.g. the Sum in
      // the gradient of a non-broadcasting Add): the output is the input,
      // reshaped, sharing its buffer, as in TensorFlow.
      auto same = in.Reshaped(r.out);
      OP_REQUIRES_OK(ctx, same.status());
      ctx->set_output(0, *same);
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, r.out, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    const A* src;
    A* dst;
    Tensor in_acc, out_acc;
    if constexpr (std::is_same<A, T>::value) {
      src = in.data<T>();
      dst = out->data<T>();
    } else {
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<A>::value, in.shape(), &in_acc));
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<A>::value, out->shape(), &out_acc));
      cwise::ApplyUnary<T, A>(ctx, in, &in_acc, [](const auto& a) { return a.template cast<A>(); });
      src = in_acc.data<A>();
      dst = out_acc.data<A>();
    }
    OP_REQUIRES_OK(ctx, (ReduceAxes<A, R>(ctx, src, dims, reduce, dst)));
    if (kMean) {
      if (count == 0) {
        // 0/0: NaN for floats; integers have no NaN, TF-like 0 avoids a trap.
        std::fill(dst, dst + n, std::numeric_limits<A>::has_quiet_NaN ? std::numeric_limits<A>::quiet_NaN() : A(0));
      } else {
        const A c = static_cast<A>(count);
        for (int64_t i = 0; i < n; ++i) dst[i] = dst[i] / c;
      }
    }
    if constexpr (!std::is_same<A, T>::value) {
      cwise::ApplyUnary<A, T>(ctx, out_acc, out, [](const auto& a) { return a.template cast<T>(); });
    }
  }

 private:
  bool keep_dims_ = false;
};

template <typename T, bool kMax>
class ArgOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    ArgReductionShape r;
    OP_REQUIRES_OK(ctx, ComputeArgReductionShape(in.shape(), ctx->input(1), &r));
    const int64_t A = r.A, Rn = r.R, B = r.B;
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, r.out, &out));
    const T* x = in.data<T>();
    const DataType out_type = out->dtype();
    OP_REQUIRES(ctx, out_type == DT_INT32 || out_type == DT_INT64,
                absl::InvalidArgumentError(absl::StrCat("unsupported output_type ", DataTypeString(out_type))));
    cwise::ParallelFor(ctx, A * B, Rn, [&](int64_t lo, int64_t hi) {
      for (int64_t w = lo; w < hi; ++w) {
        const int64_t a = w / B, b = w % B;
        const T* p = x + a * Rn * B + b;
        int64_t best = 0;
        T best_v = p[0];
        for (int64_t r = 1; r < Rn; ++r) {
          const T v = p[r * B];
          if (kMax ? (best_v < v) : (v < best_v)) {
            best_v = v;
            best = r;
          }
        }
        if (out_type == DT_INT32) {
          out->data<int32_t>()[w] = static_cast<int32_t>(best);
        } else {
          out->data<int64_t>()[w] = best;
        }
      }
    });
  }
};

#define SLUICE_REG_RED_(OP, T, ...) \
  REGISTER_KERNEL_BUILDER(Name(OP).Device(kDeviceCpu).TypeConstraint<T>("T"), __VA_ARGS__)
#define SLUICE_REG_ALL_(T)                                     \
  SLUICE_REG_RED_("Sum", T, ReductionOp<T, SumR, false>);      \
  SLUICE_REG_RED_("Mean", T, ReductionOp<T, SumR, true>);      \
  SLUICE_REG_RED_("Prod", T, ReductionOp<T, ProdR, false>);    \
  SLUICE_REG_RED_("Max", T, ReductionOp<T, MaxR, false>);      \
  SLUICE_REG_RED_("Min", T, ReductionOp<T, MinR, false>);      \
  SLUICE_REG_RED_("ArgMax", T, ArgOp<T, true>);                \
  SLUICE_REG_RED_("ArgMin", T, ArgOp<T, false>)
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
REGISTER_KERNEL_BUILDER(Name("All").Device(kDeviceCpu), ReductionOp<bool, AllR, false>);
REGISTER_KERNEL_BUILDER(Name("Any").Device(kDeviceCpu), ReductionOp<bool, AnyR, false>);
#undef SLUICE_REG_RED_

}  // namespace
}  // namespace sluice
