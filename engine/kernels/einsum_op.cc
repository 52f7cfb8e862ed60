// CPU Einsum, one or two inputs (as TensorFlow's kernel). The equation
// (einsum_equation.h) gives every axis a label; the kernel reduces each
// operand to a batched matrix product:
//   * labels of one input only and not in the output are summed first;
//   * with two inputs, A is laid out [batch, free_a, contracted] and B
//     [batch, contracted, free_b] (StridedCopy; a "..." dim of size 1
//     broadcasts with stride 0), batch_gemm multiplies them, and the product
//     [batch, free_a, free_b] is permuted into the output's label order
//     (written in place when the order already matches).
// One input is a permutation plus a sum. Repeated labels within one input
// (diagonals) are Unimplemented.
// Thread safety: kernels are stateless (the parsed equation is const).

// GCC 12 flags the AVX-512 intrinsics that Eigen's half/bfloat16 contraction
// inlines (avx512fintrin.h's __Y) as maybe-uninitialized: some 6,000 false
// warnings (25 MB) for this file on an AVX-512 machine.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

#include "engine/framework/einsum_equation.h"
#include "engine/kernels/batch_gemm.h"
#include "engine/kernels/strided_copy.h"

namespace sluice {
namespace {

template <typename T>
using SumType = std::conditional_t<std::is_same<T, half>::value || std::is_same<T, bfloat16>::value, float, T>;

bool Contains(const std::vector<int>& labels, int l) { return std::find(labels.begin(), labels.end(), l) != labels.end(); }

// out (labels `target`, sizes from label_size) = in (labels `in_labels`)
// summed over its labels that `target` lacks; an input dim of 1 under a
// larger label size broadcasts. Every target label is one of in's.
template <typename T>
absl::Status Arrange(OpKernelContext* ctx, const Tensor& in, const std::vector<int>& in_labels,
                     const std::vector<int>& target, const std::vector<int64_t>& label_size, Tensor* out) {
  const std::vector<int64_t> in_strides = array_util::RowMajorStrides(in.shape());
  std::vector<int64_t> dims, strides;
  for (int l : target) {
    const int axis = static_cast<int>(std::find(in_labels.begin(), in_labels.end(), l) - in_labels.begin());
    dims.push_back(label_size[l]);
    strides.push_back(in.dim_size(axis) == 1 ? 0 : in_strides[axis]);
  }
  std::vector<int64_t> out_dims = dims;
  int64_t reduced = 1;
  for (size_t axis = 0; axis < in_labels.size(); ++axis) {
    if (Contains(target, in_labels[axis])) continue;
    dims.push_back(in.dim_size(static_cast<int>(axis)));
    strides.push_back(in_strides[axis]);
    reduced *= in.dim_size(static_cast<int>(axis));
  }
  absl::StatusOr<TensorShape> out_shape = TensorShape::Build(out_dims);
  if (!out_shape.ok()) return out_shape.status();
  absl::Status s = ctx->allocate_temp(in.dtype(), *out_shape, out);
  if (!s.ok()) return s;
  if (dims.size() == out_dims.size()) {
    array_util::StridedCopy(in, 0, strides, *out, 0, array_util::RowMajorStrides(*out_shape), dims);
    return absl::OkStatus();
  }
  const int64_t rows = out->NumElements();
  T* op = out->data<T>();
  if (reduced == 0 || rows == 0) {
    std::fill(op, op + rows, T(0));
    return absl::OkStatus();
  }
  absl::StatusOr<TensorShape> all_shape = TensorShape::Build(dims);
  if (!all_shape.ok()) return all_shape.status();
  Tensor all;
  s = ctx->allocate_temp(in.dtype(), *all_shape, &all);
  if (!s.ok()) return s;
  array_util::StridedCopy(in, 0, strides, all, 0, array_util::RowMajorStrides(*all_shape), dims);
  const T* ap = all.data<T>();
  cwise::ParallelFor(ctx, rows, reduced, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      SumType<T> sum = SumType<T>(0);
      const T* row = ap + r * reduced;
      for (int64_t j = 0; j < reduced; ++j) sum += static_cast<SumType<T>>(row[j]);
      op[r] = static_cast<T>(sum);
    }
  });
  return absl::OkStatus();
}

int64_t Product(const std::vector<int>& labels, const std::vector<int64_t>& label_size) {
  int64_t p = 1;
  for (int l : labels) p *= label_size[l];
  return p;
}

template <typename T>
class EinsumOp : public OpKernel {
 public:
  explicit EinsumOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    std::string equation;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("equation", &equation));
    absl::StatusOr<EinsumEquation> eq = ParseEinsumEquation(equation);
    OP_REQUIRES_OK(ctx, eq.status());
    equation_ = *std::move(eq);
    OP_REQUIRES(ctx, equation_.inputs.size() == 1 || equation_.inputs.size() == 2,
                absl::UnimplementedError(absl::StrCat("einsum '", equation, "' has ", equation_.inputs.size(),
                                                      " inputs; the kernel takes 1 or 2")));
  }

  void Compute(OpKernelContext* ctx) override {
    std::vector<std::vector<int64_t>> dims;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const auto& d = ctx->input(i).shape().dim_sizes();
      dims.emplace_back(d.begin(), d.end());
    }
    absl::StatusOr<EinsumPlan> resolved = ResolveEinsum(equation_, dims);
    OP_REQUIRES_OK(ctx, resolved.status());
    const EinsumPlan& plan = *resolved;
    absl::StatusOr<TensorShape> out_shape = TensorShape::Build(plan.output_dims);
    OP_REQUIRES_OK(ctx, out_shape.status());
    if (plan.input_labels.size() == 1) {
      Tensor out;
      OP_REQUIRES_OK(ctx, Arrange<T>(ctx, ctx->input(0), plan.input_labels[0], plan.output_labels, plan.label_size,
                                     &out));
      ctx->set_output(0, std::move(out));
      return;
    }
    const std::vector<int>& a = plan.input_labels[0];
    const std::vector<int>& b = plan.input_labels[1];
    const std::vector<int>& o = plan.output_labels;
    // Batch and free labels in the output's order; contracted in A's.
    std::vector<int> batch, free_a, free_b, contracted;
    for (int l : o) {
      const bool in_a = Contains(a, l), in_b = Contains(b, l);
      if (in_a && in_b) {
        batch.push_back(l);
      } else if (in_a) {
        free_a.push_back(l);
      } else {
        free_b.push_back(l);
      }
    }
    for (int l : a) {
      if (Contains(b, l) && !Contains(o, l)) contracted.push_back(l);
    }
    auto concat = [](std::initializer_list<const std::vector<int>*> parts) {
      std::vector<int> all;
      for (const std::vector<int>* p : parts) all.insert(all.end(), p->begin(), p->end());
      return all;
    };
    Tensor lhs, rhs;
    OP_REQUIRES_OK(ctx, Arrange<T>(ctx, ctx->input(0), a, concat({&batch, &free_a, &contracted}), plan.label_size,
                                   &lhs));
    OP_REQUIRES_OK(ctx, Arrange<T>(ctx, ctx->input(1), b, concat({&batch, &contracted, &free_b}), plan.label_size,
                                   &rhs));
    const int64_t nb = Product(batch, plan.label_size), m = Product(free_a, plan.label_size);
    const int64_t n = Product(free_b, plan.label_size), k = Product(contracted, plan.label_size);
    const std::vector<int> product_labels = concat({&batch, &free_a, &free_b});
    const bool in_place = product_labels == o;
    Tensor product;
    if (in_place) {
      Tensor* out;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
      product = *out;
    } else {
      std::vector<int64_t> pd;
      for (int l : product_labels) pd.push_back(plan.label_size[l]);
      absl::StatusOr<TensorShape> ps = TensorShape::Build(pd);
      OP_REQUIRES_OK(ctx, ps.status());
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<T>::value, *ps, &product));
    }
    T* pp = product.data<T>();
    if (product.NumElements() > 0) {
      if (k == 0) {
        std::fill(pp, pp + product.NumElements(), T(0));
      } else {
        std::vector<int64_t> index(nb);
        std::iota(index.begin(), index.end(), 0);
        batch_gemm::MultiplyBatches<T>(ctx, lhs.data<T>(), rhs.data<T>(), pp, index, index, {m, k, k, n, m, n, k},
                                       false, false);
      }
    }
    if (in_place) return;
    Tensor out;
    OP_REQUIRES_OK(ctx, Arrange<T>(ctx, product, product_labels, o, plan.label_size, &out));
    ctx->set_output(0, std::move(out));
  }

 private:
  EinsumEquation equation_;
};

#define SLUICE_REG_(T) \
  REGISTER_KERNEL_BUILDER(Name("Einsum").Device(kDeviceCpu).TypeConstraint<T>("T"), EinsumOp<T>)
SLUICE_REG_(float);
SLUICE_REG_(double);
SLUICE_REG_(half);
SLUICE_REG_(bfloat16);
SLUICE_REG_(int32_t);
SLUICE_REG_(int64_t);
#undef SLUICE_REG_

}  // namespace
}  // namespace sluice
