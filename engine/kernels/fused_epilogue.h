// The epilogue attrs of the fused kernels _FusedMatMul (matmul_op.cc,
// gpu/matmul_ops_gpu.cc) and _FusedConv2D (conv_ops.cc, gpu/conv_ops_gpu.cc): fused_ops ["BiasAdd"] or ["BiasAdd", "Relu"]
// with num_args 1 (the bias), read once at kernel construction, and the check
// that a bias fits the output. On the CPU, CpuGemm applies the epilogue
// itself (GemmArgs::bias, GemmArgs::relu); on a GPU, one pass after the
// product (gpu/bias_gpu.h), or, for a convolution cuDNN ran in NCHW, inside
// its transpose back to NHWC (gpu/cudnn_util_kernels.h).
// Thread safety: pure functions.
#ifndef SLUICE_ENGINE_KERNELS_FUSED_EPILOGUE_H_
#define SLUICE_ENGINE_KERNELS_FUSED_EPILOGUE_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/framework/op_kernel.h"

namespace sluice {

// Sets *relu from the node's fused_ops; InvalidArgument for any other list or
// a num_args other than 1.
inline absl::Status ReadBiasEpilogueAttrs(OpKernelConstruction* ctx, bool* relu) {
  std::vector<std::string> fused_ops;
  int64_t num_args = 0;
  absl::Status s = ctx->GetAttr("fused_ops", &fused_ops);
  if (!s.ok()) return s;
  s = ctx->GetAttr("num_args", &num_args);
  if (!s.ok()) return s;
  const bool bias_add = fused_ops.size() == 1 && fused_ops[0] == "BiasAdd";
  const bool bias_add_relu = fused_ops.size() == 2 && fused_ops[0] == "BiasAdd" && fused_ops[1] == "Relu";
  if (!bias_add && !bias_add_relu) {
    return absl::InvalidArgumentError(absl::StrCat("fused_ops must be [BiasAdd] or [BiasAdd, Relu], got [",
                                                 absl::StrJoin(fused_ops, ", "), "]"));
  }
  if (num_args != 1) {
    return absl::InvalidArgumentError(absl::StrCat("BiasAdd takes 1 argument (the bias), got num_args ", num_args));
  }
  *relu = bias_add_relu;
  return absl::OkStatus();
}

// InvalidArgument unless `bias` is a vector of `channels` elements.
inline absl::Status CheckBias(const Tensor& bias, int64_t channels) {
  if (bias.dims() != 1 || bias.dim_size(0) != channels) {
    return absl::InvalidArgumentError(absl::StrCat("the bias must be a vector of ", channels,
                                                   " elements (one per output channel), got shape ",
                                                   bias.shape().DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_FUSED_EPILOGUE_H_
