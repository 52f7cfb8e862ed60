// The conditional accumulator's ops (TensorFlow's names and signatures, the
// V1 form whose handle is a Ref(string)): ConditionalAccumulator,
// AccumulatorApplyGradient, AccumulatorTakeGradient, AccumulatorSetGlobalStep,
// AccumulatorNumAccumulated; plus AccumulatorNumStale and AccumulatorLastTaken
// (ours: the gradients dropped as stale, and how many the last take averaged,
// for /metrics); and the sparse accumulator's SparseConditionalAccumulator,
// SparseAccumulatorApplyGradient and SparseAccumulatorTakeGradient (the
// Accumulator* ops above serve both kinds). CPU kernels beside them; the
// accumulator itself is conditional_accumulator.h.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "inputs/resource_handle.h"
#include "models/replication/conditional_accumulator.h"

namespace sluice {
namespace {

absl::Status HandleShape(InferenceContext* c) {
  c->set_output(0, PartialShape{2});
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("ConditionalAccumulator")
    .Output("handle: Ref(string)")
    .Attr("dtype: {float, double}")
    .Attr("shape: shape")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("reduction_type: string = 'MEAN'")
    .SetIsStateful()
    .SetShapeFn(HandleShape);

REGISTER_OP("AccumulatorApplyGradient")
    .Input("handle: Ref(string)")
    .Input("local_step: int64")
    .Input("gradient: dtype")
    .Attr("dtype: {float, double}")
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("AccumulatorTakeGradient")
    .Input("handle: Ref(string)")
    .Input("num_required: int32")
    .Output("average: dtype")
    .Attr("dtype: {float, double}")
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("SparseConditionalAccumulator")
    .Output("handle: Ref(string)")
    .Attr("dtype: {float, double}")
    .Attr("shape: shape")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("reduction_type: string = 'MEAN'")
    .SetIsStateful()
    .SetShapeFn(HandleShape);

// gradient_shape is checked against the accumulator's shape when
// has_known_shape (the variable's rows are the accumulator's).
REGISTER_OP("SparseAccumulatorApplyGradient")
    .Input("handle: Ref(string)")
    .Input("local_step: int64")
    .Input("gradient_indices: int64")
    .Input("gradient_values: dtype")
    .Input("gradient_shape: int64")
    .Attr("dtype: {float, double}")
    .Attr("has_known_shape: bool")
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("SparseAccumulatorTakeGradient")
    .Input("handle: Ref(string)")
    .Input("num_required: int32")
    .Output("indices: int64")
    .Output("values: dtype")
    .Output("shape: int64")
    .Attr("dtype: {float, double}")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, PartialShape::FromDims({kUnknownDim}));
      c->set_output(1, PartialShape::Unknown());
      c->set_output(2, PartialShape::FromDims({kUnknownDim}));
      return absl::OkStatus();
    });

REGISTER_OP("AccumulatorSetGlobalStep")
    .Input("handle: Ref(string)")
    .Input("new_global_step: int64")
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("AccumulatorNumAccumulated")
    .Input("handle: Ref(string)")
    .Output("num_accumulated: int32")
    .SetShapeFn(shape_fns::Scalar);

REGISTER_OP("AccumulatorNumStale")
    .SetSluiceOnly()
    .Input("handle: Ref(string)")
    .Output("num_stale: int64")
    .SetShapeFn(shape_fns::Scalar);

REGISTER_OP("AccumulatorLastTaken")
    .SetSluiceOnly()
    .Input("handle: Ref(string)")
    .Output("last_taken: int32")
    .SetShapeFn(shape_fns::Scalar);

namespace {

// What the ResourceMgr keeps: the accumulator and the handle tensor that the
// accumulator op outputs by reference; one type for both kinds (the
// Accumulator* ops serve both).
struct AccumulatorWithHandle : public ResourceBase {
  AccumulatorWithHandle(std::shared_ptr<ConditionalAccumulator> a, Tensor h)
      : accumulator(std::move(a)), handle(std::move(h)) {}
  std::string DebugString() const override { return accumulator->DebugString(); }
  std::shared_ptr<ConditionalAccumulator> accumulator;
  absl::Mutex handle_mu;
  Tensor handle;
};

template <bool kSparse>
class ConditionalAccumulatorOp : public OpKernel {
 public:
  explicit ConditionalAccumulatorOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, rn_.Read(ctx));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("dtype", &dtype_));
    TensorShapeProto proto;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("shape", &proto));
    auto shape = PartialShape::FromProto(proto);
    OP_REQUIRES_OK(ctx, shape.status());
    shape_ = *shape;
    std::string reduction;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("reduction_type", &reduction));
    OP_REQUIRES(ctx, reduction == "MEAN" || reduction == "SUM",
                absl::InvalidArgumentError(absl::StrCat(NodeContext(ctx->def()), "attr 'reduction_type' is '",
                                                        reduction, "', not 'MEAN' or 'SUM'")));
    reduction_ = reduction == "SUM" ? ConditionalAccumulator::Reduction::kSum : ConditionalAccumulator::Reduction::kMean;
  }

  void Compute(OpKernelContext* ctx) override {
    auto a = ctx->resource_manager()->LookupOrCreate<AccumulatorWithHandle>(
        rn_.container, rn_.name, [this]() -> absl::StatusOr<std::shared_ptr<AccumulatorWithHandle>> {
          auto made = kSparse ? ConditionalAccumulator::CreateSparse(rn_.name, dtype_, shape_, reduction_)
                              : ConditionalAccumulator::Create(rn_.name, dtype_, shape_, reduction_);
          if (!made.ok()) return made.status();
          return std::make_shared<AccumulatorWithHandle>(std::move(made).value(), MakeHandle(rn_));
        });
    OP_REQUIRES_OK(ctx, a.status());
    OP_REQUIRES(ctx, (*a)->accumulator->dtype() == dtype_ && (*a)->accumulator->sparse() == kSparse,
                absl::InvalidArgumentError(absl::StrCat(NodeContext(def()), "accumulator '", rn_.name,
                                                        "' already exists with dtype ",
                                                        DataTypeString((*a)->accumulator->dtype()),
                                                        (*a)->accumulator->sparse() ? " (sparse)" : " (dense)")));
    AccumulatorWithHandle* held = a->get();
    ctx->set_output_ref(0, &held->handle_mu, &held->handle, std::move(a).value());
  }
  bool IsExpensive() const override { return false; }

 private:
  ResourceName rn_;
  DataType dtype_ = DT_FLOAT;
  PartialShape shape_;
  ConditionalAccumulator::Reduction reduction_ = ConditionalAccumulator::Reduction::kMean;
};
using AccumulatorResource = AccumulatorWithHandle;

absl::StatusOr<std::shared_ptr<ConditionalAccumulator>> LookupAccumulator(OpKernelContext* ctx) {
  auto held = LookupFromHandle<AccumulatorResource>(ctx, 0);
  if (!held.ok()) return held.status();
  return (*held)->accumulator;
}

absl::StatusOr<int64_t> ScalarInt64(OpKernelContext* ctx, int i, const char* what) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_INT64 || t.dims() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be an int64 scalar, got ", t.DebugString()));
  }
  return t.scalar<int64_t>();
}

class ApplyGradientOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto a = LookupAccumulator(ctx);
    OP_REQUIRES_OK(ctx, a.status());
    auto step = ScalarInt64(ctx, 1, "local_step");
    OP_REQUIRES_OK(ctx, step.status());
    OP_REQUIRES_OK(ctx, (*a)->ApplyGradient(*step, ctx->input(2)));
  }
};

class TakeGradientOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    auto a = LookupAccumulator(ctx);
    OP_REQUIRES_OK_ASYNC(ctx, a.status(), done);
    const Tensor& n = ctx->input(1);
    OP_REQUIRES_ASYNC(ctx, n.dtype() == DT_INT32 && n.dims() == 0,
                      absl::InvalidArgumentError(absl::StrCat("num_required must be an int32 scalar, got ",
                                                              n.DebugString())),
                      done);
    (*a)->TryTakeGradient(n.scalar<int32_t>(), ctx->cancellation_manager(),
                          [ctx, done](const absl::Status& s, Tensor average) {
                            if (s.ok()) {
                              ctx->set_output(0, std::move(average));
                            } else {
                              ctx->SetStatus(s);
                            }
                            done();
                          });
  }
};

class SparseApplyGradientOp : public OpKernel {
 public:
  explicit SparseApplyGradientOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("has_known_shape", &has_known_shape_));
  }
  void Compute(OpKernelContext* ctx) override {
    auto a = LookupAccumulator(ctx);
    OP_REQUIRES_OK(ctx, a.status());
    auto step = ScalarInt64(ctx, 1, "local_step");
    OP_REQUIRES_OK(ctx, step.status());
    const Tensor& shape = ctx->input(4);
    const Tensor& values = ctx->input(3);
    if (has_known_shape_) {
      // The dense shape must be [rows, values' row dims...].
      bool same = shape.dtype() == DT_INT64 && shape.dims() == 1 && shape.NumElements() == values.dims();
      for (int d = 1; same && d < values.dims(); ++d) same = shape.data<int64_t>()[d] == values.dim_size(d);
      OP_REQUIRES(ctx, same,
                  absl::InvalidArgumentError(absl::StrCat("gradient_shape ", shape.DebugString(),
                                                          " does not match gradient_values of shape ",
                                                          values.shape().DebugString())));
    }
    OP_REQUIRES_OK(ctx, (*a)->ApplySparseGradient(*step, ctx->input(2), values));
  }

 private:
  bool has_known_shape_ = false;
};

class SparseTakeGradientOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    auto held = LookupFromHandle<AccumulatorResource>(ctx, 0);
    OP_REQUIRES_OK_ASYNC(ctx, held.status(), done);
    std::shared_ptr<ConditionalAccumulator> a = (*held)->accumulator;
    const Tensor& n = ctx->input(1);
    OP_REQUIRES_ASYNC(ctx, n.dtype() == DT_INT32 && n.dims() == 0,
                      absl::InvalidArgumentError(absl::StrCat("num_required must be an int32 scalar, got ",
                                                              n.DebugString())),
                      done);
    a->TryTakeSparseGradient(n.scalar<int32_t>(), ctx->cancellation_manager(),
                             [ctx, done, a](const absl::Status& s, Tensor indices, Tensor values) {
                               if (!s.ok()) {
                                 ctx->SetStatus(s);
                                 done();
                                 return;
                               }
                               // The dense shape: the rows' count is the
                               // accumulator's (or the largest index + 1).
                               Tensor shape(DT_INT64, TensorShape({values.dims()}));
                               for (int d = 0; d < values.dims(); ++d) {
                                 shape.data<int64_t>()[d] = values.dim_size(d);
                               }
                               int64_t rows = 0;
                               for (int64_t i = 0; i < indices.NumElements(); ++i) {
                                 rows = std::max(rows, indices.data<int64_t>()[i] + 1);
                               }
                               shape.data<int64_t>()[0] = std::max(rows, a->rows());
                               ctx->set_output(0, std::move(indices));
                               ctx->set_output(1, std::move(values));
                               ctx->set_output(2, std::move(shape));
                               done();
                             });
  }
};

class SetGlobalStepOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto a = LookupAccumulator(ctx);
    OP_REQUIRES_OK(ctx, a.status());
    auto step = ScalarInt64(ctx, 1, "new_global_step");
    OP_REQUIRES_OK(ctx, step.status());
    (*a)->SetGlobalStep(*step);
  }
  bool IsExpensive() const override { return false; }
};

// AccumulatorNumAccumulated and AccumulatorNumStale: one scalar the
// accumulator keeps.
template <typename T, T (ConditionalAccumulator::*kRead)() const>
class AccumulatorScalarOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto a = LookupAccumulator(ctx);
    OP_REQUIRES_OK(ctx, a.status());
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->data<T>()[0] = ((**a).*kRead)();
  }
  bool IsExpensive() const override { return false; }
};
using NumAccumulatedOp = AccumulatorScalarOp<int32_t, &ConditionalAccumulator::num_accumulated>;
using NumStaleOp = AccumulatorScalarOp<int64_t, &ConditionalAccumulator::num_stale>;
using LastTakenOp = AccumulatorScalarOp<int32_t, &ConditionalAccumulator::last_taken>;

REGISTER_KERNEL_BUILDER(Name("ConditionalAccumulator").Device(kDeviceCpu), ConditionalAccumulatorOp<false>);
REGISTER_KERNEL_BUILDER(Name("SparseConditionalAccumulator").Device(kDeviceCpu), ConditionalAccumulatorOp<true>);
REGISTER_KERNEL_BUILDER(Name("SparseAccumulatorApplyGradient").Device(kDeviceCpu), SparseApplyGradientOp);
REGISTER_KERNEL_BUILDER(Name("SparseAccumulatorTakeGradient").Device(kDeviceCpu), SparseTakeGradientOp);
REGISTER_KERNEL_BUILDER(Name("AccumulatorApplyGradient").Device(kDeviceCpu), ApplyGradientOp);
REGISTER_KERNEL_BUILDER(Name("AccumulatorTakeGradient").Device(kDeviceCpu), TakeGradientOp);
REGISTER_KERNEL_BUILDER(Name("AccumulatorSetGlobalStep").Device(kDeviceCpu), SetGlobalStepOp);
REGISTER_KERNEL_BUILDER(Name("AccumulatorNumAccumulated").Device(kDeviceCpu), NumAccumulatedOp);
REGISTER_KERNEL_BUILDER(Name("AccumulatorNumStale").Device(kDeviceCpu), NumStaleOp);
REGISTER_KERNEL_BUILDER(Name("AccumulatorLastTaken").Device(kDeviceCpu), LastTakenOp);

}  // namespace
}  // namespace sluice
