// CPU kernels for Unique and ListDiff. Unique: one pass with a hash map from
// value to its index among the distinct values (first appearance order).
// ListDiff: a hash set of y, then the elements of x not in it. Floating keys hash
// -0 and +0 alike (they compare equal); NaN never equals itself, so every NaN
// is its own value, as in TensorFlow. Every dtype, strings included.
// Stateless; Compute is safe to run concurrently.
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"

namespace sluice {
namespace {

template <typename T>
struct ValueHash {
  size_t operator()(const T& v) const {
    if constexpr (std::is_same<T, tstring>::value || std::is_integral<T>::value) {
      return std::hash<T>()(v);
    } else if constexpr (std::is_same<T, complex64>::value) {
      return ValueHash<float>()(v.real()) * 31 + ValueHash<float>()(v.imag());
    } else {  // float, double, half, bfloat16: exact in double
      const double d = static_cast<double>(v);
      return std::hash<double>()(d == 0 ? 0.0 : d);
    }
  }
};

template <typename T>
class UniqueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    OP_REQUIRES(ctx, x.dims() == 1,
                absl::InvalidArgumentError(absl::StrCat("x must be a vector, got shape ", x.shape().DebugString())));
    const int64_t n = x.NumElements();
    const bool idx32 = output_type(1) == DT_INT32;
    OP_REQUIRES(ctx, !idx32 || n <= std::numeric_limits<int32_t>::max(),
                absl::InvalidArgumentError(absl::StrCat("x has ", n, " elements: too many for out_idx int32")));
    Tensor* idx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, x.shape(), &idx));
    const T* in = x.data<T>();
    std::unordered_map<T, int64_t, ValueHash<T>> position;
    std::vector<int64_t> first;  // element index of each distinct value
    for (int64_t i = 0; i < n; ++i) {
      auto [it, inserted] = position.emplace(in[i], static_cast<int64_t>(first.size()));
      if (inserted) first.push_back(i);
      if (idx32) {
        idx->data<int32_t>()[i] = static_cast<int32_t>(it->second);
      } else {
        idx->data<int64_t>()[i] = it->second;
      }
    }
    Tensor* y;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(first.size())}), &y));
    T* out = y->data<T>();
    for (size_t j = 0; j < first.size(); ++j) out[j] = in[first[j]];
  }
};

template <typename T>
class ListDiffOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    OP_REQUIRES(ctx, x.dims() == 1 && y.dims() == 1,
                absl::InvalidArgumentError(absl::StrCat("x and y must be vectors, got shapes ", x.shape().DebugString(),
                                                        " and ", y.shape().DebugString())));
    const bool idx32 = output_type(1) == DT_INT32;
    OP_REQUIRES(ctx, !idx32 || x.NumElements() <= std::numeric_limits<int32_t>::max(),
                absl::InvalidArgumentError(absl::StrCat("x has ", x.NumElements(), " elements: too many for out_idx int32")));
    const T* xs = x.data<T>();
    const T* ys = y.data<T>();
    std::unordered_set<T, ValueHash<T>> exclude(ys, ys + y.NumElements());
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      if (exclude.count(xs[i]) == 0) kept.push_back(i);
    }
    const TensorShape shape({static_cast<int64_t>(kept.size())});
    Tensor *out, *idx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, shape, &idx));
    for (size_t j = 0; j < kept.size(); ++j) {
      out->data<T>()[j] = xs[kept[j]];
      if (idx32) {
        idx->data<int32_t>()[j] = static_cast<int32_t>(kept[j]);
      } else {
        idx->data<int64_t>()[j] = kept[j];
      }
    }
  }
};

#define SLUICE_REG_UNIQUE_(T)                                                                    \
  REGISTER_KERNEL_BUILDER(Name("Unique").Device(kDeviceCpu).TypeConstraint<T>("T"), UniqueOp<T>); \
  REGISTER_KERNEL_BUILDER(Name("ListDiff").Device(kDeviceCpu).TypeConstraint<T>("T"), ListDiffOp<T>)
SLUICE_REG_UNIQUE_(float);
SLUICE_REG_UNIQUE_(double);
SLUICE_REG_UNIQUE_(half);
SLUICE_REG_UNIQUE_(bfloat16);
SLUICE_REG_UNIQUE_(int8_t);
SLUICE_REG_UNIQUE_(int16_t);
SLUICE_REG_UNIQUE_(int32_t);
SLUICE_REG_UNIQUE_(int64_t);
SLUICE_REG_UNIQUE_(uint8_t);
SLUICE_REG_UNIQUE_(uint16_t);
SLUICE_REG_UNIQUE_(bool);
SLUICE_REG_UNIQUE_(complex64);
SLUICE_REG_UNIQUE_(tstring);
#undef SLUICE_REG_UNIQUE_

}  // namespace
}  // namespace sluice
