// CPU kernel for Cast between the numeric types and bool (SrcT -> DstT), a
// vectorized Eigen cast evaluated in parallel chunks; conversions round to
// nearest as Eigen's casts do. With Truncate=true, float -> bfloat16 keeps the
// upper 16 bits of each float (the mantissa is cut, not rounded: the lossy
// transfer of whitepaper §5.5; a NaN stays a NaN); Truncate changes no other
// conversion.
// Thread safety: the kernel is stateless.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/kernels/cwise_ops_common.h"

namespace sluice {
namespace {

#define SLUICE_CAST_TYPES_(DTYPE, DEFAULT, ...)                 \
  switch (DTYPE) {                                              \
    SLUICE_CAST_CASE_(DT_FLOAT, float, __VA_ARGS__)             \
    SLUICE_CAST_CASE_(DT_DOUBLE, double, __VA_ARGS__)           \
    SLUICE_CAST_CASE_(DT_HALF, half, __VA_ARGS__)               \
    SLUICE_CAST_CASE_(DT_BFLOAT16, bfloat16, __VA_ARGS__)       \
    SLUICE_CAST_CASE_(DT_INT8, int8_t, __VA_ARGS__)             \
    SLUICE_CAST_CASE_(DT_INT16, int16_t, __VA_ARGS__)           \
    SLUICE_CAST_CASE_(DT_INT32, int32_t, __VA_ARGS__)           \
    SLUICE_CAST_CASE_(DT_INT64, int64_t, __VA_ARGS__)           \
    SLUICE_CAST_CASE_(DT_UINT8, uint8_t, __VA_ARGS__)           \
    SLUICE_CAST_CASE_(DT_UINT16, uint16_t, __VA_ARGS__)         \
    SLUICE_CAST_CASE_(DT_BOOL, bool, __VA_ARGS__)               \
    default: {                                                  \
      DEFAULT;                                                  \
    }                                                           \
  }

template <typename Src>
absl::Status CastFrom(OpKernelContext* ctx, const Tensor& in, Tensor* out) {
#define SLUICE_CAST_CASE_(ENUM, TYPE, ...) \
  case ENUM: {                             \
    using Dst = TYPE;                      \
    __VA_ARGS__;                           \
    return absl::OkStatus();               \
  }
  SLUICE_CAST_TYPES_(out->dtype(), break,
                     cwise::ApplyUnary<Src, Dst>(ctx, in, out,
                                                 [](const auto& a) { return a.template cast<Dst>(); }))
#undef SLUICE_CAST_CASE_
  return absl::UnimplementedError(absl::StrCat("Cast to ", DataTypeString(out->dtype()), " is not supported"));
}

// float -> bfloat16 by dropping the low 16 bits of each value.
void TruncateToBfloat16(const Tensor& in, Tensor* out) {
  const float* src = in.data<float>();
  uint16_t* dst = reinterpret_cast<uint16_t*>(out->data<bfloat16>());
  const int64_t n = in.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &src[i], sizeof(bits));
    // A NaN whose payload lies only in the low bits would become infinity.
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    dst[i] = nan ? static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7fc0u) : static_cast<uint16_t>(bits >> 16);
  }
}

class CastOp : public OpKernel {
 public:
  explicit CastOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("SrcT", &src_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("DstT", &dst_));
    // Absent in nodes built before the attr had a default.
    if (!ctx->GetAttr("Truncate", &truncate_).ok()) truncate_ = false;
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    if (src_ == dst_) {
      ctx->set_output(0, in);
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    if (truncate_ && src_ == DT_FLOAT && dst_ == DT_BFLOAT16) {
      TruncateToBfloat16(in, out);
      return;
    }
    absl::Status s = absl::UnimplementedError(absl::StrCat("Cast from ", DataTypeString(src_), " is not supported"));
#define SLUICE_CAST_CASE_(ENUM, TYPE, ...) \
  case ENUM: {                             \
    using Src = TYPE;                      \
    __VA_ARGS__;                           \
    break;                                 \
  }
    SLUICE_CAST_TYPES_(src_, break, s = CastFrom<Src>(ctx, in, out))
#undef SLUICE_CAST_CASE_
    OP_REQUIRES_OK(ctx, s);
  }

 private:
  DataType src_, dst_;
  bool truncate_ = false;
};
#undef SLUICE_CAST_TYPES_

REGISTER_KERNEL_BUILDER(Name("Cast").Device(kDeviceCpu), CastOp);

}  // namespace
}  // namespace sluice
