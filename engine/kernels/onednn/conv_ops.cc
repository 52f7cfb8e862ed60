// oneDNN-backed float32 CPU kernels of Conv2D, Conv2DBackpropInput,
// Conv2DBackpropFilter and _FusedConv2D (bias, then Relu, as oneDNN's bias
// and eltwise post-op), registered with Label("onednn"): a node gets them
// when its `_kernel` attr says so (engine/graph/kernel_selection.h; the
// session's onednn_kernels option). NHWC input, HWIO filter, SAME/VALID,
// dilation 1, as our kernels (conv_ops.cc), whose geometry checks they share.
//
// Per shape, a kernel builds a ConvPlan once (the primitive for a given
// number of images, with the primitive's preferred, usually blocked, layouts
// and the reorders from and to our NHWC / HWIO tensors) and caches it. A
// call cuts the batch into one piece per intra-op thread (RunPieces in
// onednn_util.h: one-thread primitives, no OpenMP threads); each piece
// reorders its inputs, runs the primitive and reorders its outputs. The
// filter gradient sums the pieces' partial gradients in piece order, so it
// is deterministic for a given intra-op thread count.
//
// What oneDNN does not take (bad inputs, whose errors our kernels report;
// empty tensors; a shape without a primitive) and the shapes where our
// kernels measured faster (ConvPrefersOurs) run our kernel for the node.
//
// Thread safety: Compute may run concurrently; the plan cache is locked.
#include "engine/kernels/onednn/conv_ops.h"

#include <atomic>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/conv_shape.h"
#include "engine/kernels/fused_epilogue.h"
#include "engine/kernels/nn_util.h"
#include "engine/kernels/onednn/onednn_util.h"
#include "engine/kernels/single_channel_conv.h"

namespace sluice {
namespace onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

std::atomic<bool> g_prefer_ours{true};

enum class ConvKind { kForward, kBackwardData, kBackwardWeights };

// Our kernels are faster with few input channels (the CNN's first layer, one
// channel: oneDNN's blocked kernel pads the channel to 16): the input
// gradient below 8 channels, and with one channel the forward pass and the
// filter gradient of single_channel_conv.h (figures in docs/PERFORMANCE.md,
// "oneDNN against our kernels" and "One input channel").
bool ConvPrefersOurs(ConvKind kind, const ConvGeometry& g) {
  if (kind == ConvKind::kBackwardData) return g.in_depth < 8;
  return single_channel::Applies(g);
}

// One primitive for `images` images of one geometry, and its reorders:
// src is x (forward, filter gradient) or dx (backprop input), weights is the
// filter or its gradient, dst is y or dy.
struct ConvPlan {
  dnnl::primitive primitive;
  Relayout src, weights, dst;
  size_t scratchpad_bytes = 0;

  // Temp bytes one piece needs: the inner buffers that differ from ours and
  // the scratchpad, each rounded to 64 bytes.
  size_t TempBytes() const {
    auto round = [](size_t b) { return (b + 63) / 64 * 64; };
    size_t bytes = round(scratchpad_bytes);
    for (const Relayout* r : {&src, &weights, &dst}) {
      if (!r->same()) bytes += round(r->inner.get_size());
    }
    return bytes;
  }
};

// Hands out consecutive 64-byte aligned pieces of one temp buffer.
class Carver {
 public:
  explicit Carver(char* base) : at_(base) {}
  void* Take(size_t bytes) {
    void* p = at_;
    at_ += (bytes + 63) / 64 * 64;
    return p;
  }
  void* TakeFor(const Relayout& r) { return r.same() ? nullptr : Take(r.inner.get_size()); }

 private:
  char* at_;
};

// padding_r for oneDNN: the padding after the input that the output size
// implies (SAME's larger half; 0 for VALID).
int64_t PadAfter(const WindowDim& w) { return std::max<int64_t>(0, (w.out - 1) * w.stride + w.k - w.in - w.pad); }

// REQUIRES: RunInlineOnThisThread() on this thread (the primitive is built
// for one thread).
std::shared_ptr<const ConvPlan> MakePlan(ConvKind kind, const ConvGeometry& g, int64_t images, bool bias, bool relu) {
  const memory::dims x_dims = {images, g.in_depth, g.in_rows, g.in_cols};
  const memory::dims w_dims = {g.out_depth, g.in_depth, g.filter_rows, g.filter_cols};
  const memory::dims y_dims = {images, g.out_depth, g.rows.out, g.cols.out};
  const memory::dims strides = {g.rows.stride, g.cols.stride};
  const memory::dims pad_l = {g.rows.pad, g.cols.pad}, pad_r = {PadAfter(g.rows), PadAfter(g.cols)};
  const memory::desc x_user = FloatDesc(x_dims, Tag::nhwc), w_user = FloatDesc(w_dims, Tag::hwio),
                     y_user = FloatDesc(y_dims, Tag::nhwc);
  const memory::desc x_any = FloatDesc(x_dims, Tag::any), w_any = FloatDesc(w_dims, Tag::any),
                     y_any = FloatDesc(y_dims, Tag::any);
  const memory::desc b_user = bias ? FloatDesc({g.out_depth}, Tag::x) : memory::desc();
  const dnnl::engine& e = CpuEngine();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::primitive_attr forward_attr = attr;
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    forward_attr.set_post_ops(ops);
  }
  const dnnl::convolution_forward::desc forward(dnnl::prop_kind::forward_training,
                                                dnnl::algorithm::convolution_direct, x_any, w_any, b_user, y_any,
                                                strides, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc forward_pd(forward, forward_attr, e);
  auto plan = std::make_shared<ConvPlan>();
  // The primitive, and the relayouts between our layouts and its own for x,
  // w and y (or their gradients): the one the kind computes is written back,
  // the other two are read.
  auto fill = [&](dnnl::primitive primitive, const memory::desc& x, const memory::desc& w, const memory::desc& y,
                  const memory::desc& scratchpad) {
    const bool x_out = kind == ConvKind::kBackwardData, w_out = kind == ConvKind::kBackwardWeights,
               y_out = kind == ConvKind::kForward;
    plan->primitive = std::move(primitive);
    plan->src = Relayout::Make(x_user, x, !x_out, x_out);
    plan->weights = Relayout::Make(w_user, w, !w_out, w_out);
    plan->dst = Relayout::Make(y_user, y, !y_out, y_out);
    plan->scratchpad_bytes = scratchpad.get_size();
  };
  switch (kind) {
    case ConvKind::kForward:
      fill(dnnl::convolution_forward(forward_pd), forward_pd.src_desc(), forward_pd.weights_desc(),
           forward_pd.dst_desc(), forward_pd.scratchpad_desc());
      break;
    case ConvKind::kBackwardData: {
      const dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, x_any, w_any, y_any,
                                                    strides, pad_l, pad_r);
      const dnnl::convolution_backward_data::primitive_desc pd(d, attr, e, forward_pd);
      fill(dnnl::convolution_backward_data(pd), pd.diff_src_desc(), pd.weights_desc(), pd.diff_dst_desc(),
           pd.scratchpad_desc());
      break;
    }
    case ConvKind::kBackwardWeights: {
      const dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, x_any, w_any, y_any,
                                                       strides, pad_l, pad_r);
      const dnnl::convolution_backward_weights::primitive_desc pd(d, attr, e, forward_pd);
      fill(dnnl::convolution_backward_weights(pd), pd.src_desc(), pd.diff_weights_desc(), pd.diff_dst_desc(),
           pd.scratchpad_desc());
      break;
    }
  }
  return plan;
}

// The plans of one kernel, by (images, geometry); a null plan records that
// oneDNN has no primitive for the shape.
class PlanCache {
 public:
  // REQUIRES: RunInlineOnThisThread() on this thread.
  std::shared_ptr<const ConvPlan> Get(ConvKind kind, const ConvGeometry& g, int64_t images, bool bias, bool relu) {
    const std::vector<int64_t> key = {images,          g.in_rows,      g.in_cols,      g.in_depth,  g.filter_rows,
                                      g.filter_cols,   g.out_depth,    g.rows.stride,  g.cols.stride, g.rows.pad,
                                      g.cols.pad,      g.rows.out,     g.cols.out,     bias,        relu};
    absl::MutexLock lock(&mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    if (plans_.size() >= kMaxPlans) plans_.clear();  // shapes that keep changing: keep memory bounded
    std::shared_ptr<const ConvPlan> plan;
    try {
      plan = MakePlan(kind, g, images, bias, relu);
    } catch (const dnnl::error&) {
      plan = nullptr;  // unimplemented or unsupported: our kernel runs instead
    }
    plans_[key] = plan;
    return plan;
  }

 private:
  static constexpr size_t kMaxPlans = 64;
  absl::Mutex mu_;
  absl::flat_hash_map<std::vector<int64_t>, std::shared_ptr<const ConvPlan>> plans_ ABSL_GUARDED_BY(mu_);
};

// What the pieces of one call share.
struct ConvCall {
  ConvKind kind;
  const ConvGeometry* g;
  int64_t pieces;
  std::vector<std::shared_ptr<const ConvPlan>> plans;  // per piece
  std::vector<char*> temps;                            // per piece
};

// The plans for the pieces of a call, and their temp memory in `holder`;
// false (and nothing allocated) when some piece has no plan.
bool PlanCall(OpKernelContext* ctx, PlanCache* cache, ConvKind kind, const ConvGeometry& g, bool bias, bool relu,
              ConvCall* call, Tensor* holder, size_t extra_bytes_per_piece, absl::Status* status) {
  RunInlineOnThisThread();
  call->kind = kind;
  call->g = &g;
  call->pieces = std::max<int64_t>(1, std::min<int64_t>(ctx->eigen_cpu_device().numThreads(), g.batch));
  size_t total = 0;
  std::vector<size_t> bytes;
  for (int64_t p = 0; p < call->pieces; ++p) {
    const int64_t images = PieceBegin(g.batch, call->pieces, p + 1) - PieceBegin(g.batch, call->pieces, p);
    auto plan = cache->Get(kind, g, images, bias, relu);
    if (plan == nullptr) return false;
    call->plans.push_back(plan);
    bytes.push_back(plan->TempBytes() + (extra_bytes_per_piece + 63) / 64 * 64);
    total += bytes.back();
  }
  void* base = nullptr;
  *status = AllocateBytes(ctx, total, holder, &base);
  if (!status->ok()) return true;
  char* at = static_cast<char*>(base);
  for (size_t b : bytes) {
    call->temps.push_back(at);
    at += b;
  }
  return true;
}

class OneDnnConvBase : public OpKernel {
 public:
  explicit OneDnnConvBase(OpKernelConstruction* ctx) : OpKernel(ctx) {
    auto own = MakeOwnKernel(ctx);
    if (!own.ok()) {
      ctx->CtxFailure(own.status());
      return;
    }
    ours_ = std::move(own).value();
    OP_REQUIRES_OK(ctx, ReadWindowAttrs(ctx, &strides_, nullptr, &padding_));
  }

 protected:
  bool PreferOurs(ConvKind kind, const ConvGeometry& g) const {
    return g_prefer_ours.load(std::memory_order_relaxed) && ConvPrefersOurs(kind, g);
  }
  // Geometry with no empty dimension (oneDNN takes no empty tensors).
  static bool NonEmpty(const ConvGeometry& g) {
    return g.batch > 0 && g.in_rows > 0 && g.in_cols > 0 && g.in_depth > 0 && g.out_depth > 0 && g.rows.out > 0 &&
           g.cols.out > 0;
  }

  std::unique_ptr<OpKernel> ours_;
  std::vector<int64_t> strides_;
  std::string padding_;
  PlanCache cache_;
};

// Conv2D and _FusedConv2D (bias when `bias_input` >= 0).
class OneDnnConvForwardOp : public OneDnnConvBase {
 public:
  explicit OneDnnConvForwardOp(OpKernelConstruction* ctx) : OneDnnConvBase(ctx) {
    if (!ctx->status().ok()) return;
    if (ctx->def().op() == "_FusedConv2D") {
      OP_REQUIRES_OK(ctx, ReadBiasEpilogueAttrs(ctx, &relu_));
      bias_input_ = 2;
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    ConvGeometry g;
    if (!MakeConvGeometry(input.shape(), filter.shape(), strides_, padding_, &g).ok() || !NonEmpty(g) ||
        PreferOurs(ConvKind::kForward, g) ||
        (bias_input_ >= 0 && !CheckBias(ctx->input(bias_input_), g.out_depth).ok())) {
      ours_->Compute(ctx);
      return;
    }
    ConvCall call;
    Tensor temp;
    absl::Status s;
    if (!PlanCall(ctx, &cache_, ConvKind::kForward, g, bias_input_ >= 0, relu_, &call, &temp, 0, &s)) {
      ours_->Compute(ctx);
      return;
    }
    OP_REQUIRES_OK(ctx, s);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.out_shape, &out));
    const float* x = input.data<float>();
    float* y = out->data<float>();
    const float* bias = bias_input_ >= 0 ? ctx->input(bias_input_).data<float>() : nullptr;
    std::vector<absl::Status> errors(call.pieces);
    RunPieces(ctx, call.pieces, [&](int64_t p) {
      const ConvPlan& plan = *call.plans[p];
      const int64_t b0 = PieceBegin(g.batch, call.pieces, p);
      Carver temp_at(call.temps[p]);
      try {
        dnnl::stream stream(CpuEngine());
        Staged xs(plan.src, const_cast<float*>(x) + b0 * g.in_rows * g.in_cols * g.in_depth,
                  temp_at.TakeFor(plan.src));
        Staged ws(plan.weights, const_cast<float*>(filter.data<float>()), temp_at.TakeFor(plan.weights));
        Staged ys(plan.dst, y + b0 * g.out_pixels() * g.out_depth, temp_at.TakeFor(plan.dst));
        xs.In(stream);
        ws.In(stream);
        Args args = {{DNNL_ARG_SRC, xs.inner()}, {DNNL_ARG_WEIGHTS, ws.inner()}, {DNNL_ARG_DST, ys.inner()}};
        AddScratchpad(plan.scratchpad_bytes, temp_at.Take(plan.scratchpad_bytes), &args);
        if (bias != nullptr) {
          args[DNNL_ARG_BIAS] =
              dnnl::memory(FloatDesc({g.out_depth}, Tag::x), CpuEngine(), const_cast<float*>(bias));
        }
        plan.primitive.execute(stream, args);
        ys.Out(stream);
      } catch (const dnnl::error& e) {
        errors[p] = FromError(e, "Conv2D");
      }
    });
    for (const absl::Status& e : errors) OP_REQUIRES_OK(ctx, e);
  }

 private:
  int bias_input_ = -1;
  bool relu_ = false;
};

class OneDnnConvBackpropInputOp : public OneDnnConvBase {
 public:
  using OneDnnConvBase::OneDnnConvBase;

  void Compute(OpKernelContext* ctx) override {
    TensorShape input_shape;
    ConvGeometry g;
    if (!ConvBackpropInputGeometry(ctx, strides_, padding_, &input_shape, &g).ok() || !NonEmpty(g) ||
        PreferOurs(ConvKind::kBackwardData, g)) {
      ours_->Compute(ctx);
      return;
    }
    ConvCall call;
    Tensor temp;
    absl::Status s;
    if (!PlanCall(ctx, &cache_, ConvKind::kBackwardData, g, false, false, &call, &temp, 0, &s)) {
      ours_->Compute(ctx);
      return;
    }
    OP_REQUIRES_OK(ctx, s);
    const Tensor& filter = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input_shape, &dx));
    std::vector<absl::Status> errors(call.pieces);
    RunPieces(ctx, call.pieces, [&](int64_t p) {
      const ConvPlan& plan = *call.plans[p];
      const int64_t b0 = PieceBegin(g.batch, call.pieces, p);
      Carver temp_at(call.temps[p]);
      try {
        dnnl::stream stream(CpuEngine());
        Staged dxs(plan.src, dx->data<float>() + b0 * g.in_rows * g.in_cols * g.in_depth, temp_at.TakeFor(plan.src));
        Staged ws(plan.weights, const_cast<float*>(filter.data<float>()), temp_at.TakeFor(plan.weights));
        Staged dys(plan.dst, const_cast<float*>(dy.data<float>()) + b0 * g.out_pixels() * g.out_depth,
                   temp_at.TakeFor(plan.dst));
        ws.In(stream);
        dys.In(stream);
        Args args = {{DNNL_ARG_DIFF_DST, dys.inner()}, {DNNL_ARG_WEIGHTS, ws.inner()},
                     {DNNL_ARG_DIFF_SRC, dxs.inner()}};
        AddScratchpad(plan.scratchpad_bytes, temp_at.Take(plan.scratchpad_bytes), &args);
        plan.primitive.execute(stream, args);
        dxs.Out(stream);
      } catch (const dnnl::error& e) {
        errors[p] = FromError(e, "Conv2DBackpropInput");
      }
    });
    for (const absl::Status& e : errors) OP_REQUIRES_OK(ctx, e);
  }
};

class OneDnnConvBackpropFilterOp : public OneDnnConvBase {
 public:
  using OneDnnConvBase::OneDnnConvBase;

  void Compute(OpKernelContext* ctx) override {
    TensorShape filter_shape;
    ConvGeometry g;
    if (!ConvBackpropFilterGeometry(ctx, strides_, padding_, &filter_shape, &g).ok() || !NonEmpty(g) ||
        PreferOurs(ConvKind::kBackwardWeights, g)) {
      ours_->Compute(ctx);
      return;
    }
    const int64_t filter_size = filter_shape.num_elements();
    ConvCall call;
    Tensor temp;
    absl::Status s;
    // Each piece past the first writes its partial gradient to its temp.
    if (!PlanCall(ctx, &cache_, ConvKind::kBackwardWeights, g, false, false, &call, &temp,
                  filter_size * sizeof(float), &s)) {
      ours_->Compute(ctx);
      return;
    }
    OP_REQUIRES_OK(ctx, s);
    const Tensor& input = ctx->input(0);
    const Tensor& dy = ctx->input(2);
    Tensor* dw;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, filter_shape, &dw));
    std::vector<float*> partials(call.pieces);
    std::vector<absl::Status> errors(call.pieces);
    RunPieces(ctx, call.pieces, [&](int64_t p) {
      const ConvPlan& plan = *call.plans[p];
      const int64_t b0 = PieceBegin(g.batch, call.pieces, p);
      Carver temp_at(call.temps[p]);
      float* partial = static_cast<float*>(temp_at.Take(filter_size * sizeof(float)));
      partials[p] = p == 0 ? dw->data<float>() : partial;
      try {
        dnnl::stream stream(CpuEngine());
        Staged xs(plan.src, const_cast<float*>(input.data<float>()) + b0 * g.in_rows * g.in_cols * g.in_depth,
                  temp_at.TakeFor(plan.src));
        Staged dws(plan.weights, partials[p], temp_at.TakeFor(plan.weights));
        Staged dys(plan.dst, const_cast<float*>(dy.data<float>()) + b0 * g.out_pixels() * g.out_depth,
                   temp_at.TakeFor(plan.dst));
        xs.In(stream);
        dys.In(stream);
        Args args = {{DNNL_ARG_SRC, xs.inner()}, {DNNL_ARG_DIFF_DST, dys.inner()},
                     {DNNL_ARG_DIFF_WEIGHTS, dws.inner()}};
        AddScratchpad(plan.scratchpad_bytes, temp_at.Take(plan.scratchpad_bytes), &args);
        plan.primitive.execute(stream, args);
        dws.Out(stream);
      } catch (const dnnl::error& e) {
        errors[p] = FromError(e, "Conv2DBackpropFilter");
      }
    });
    for (const absl::Status& e : errors) OP_REQUIRES_OK(ctx, e);
    float* out = dw->data<float>();
    for (int64_t p = 1; p < call.pieces; ++p) {
      const float* part = partials[p];
      for (int64_t i = 0; i < filter_size; ++i) out[i] += part[i];
    }
  }
};

REGISTER_KERNEL_BUILDER(Name("Conv2D").Device(kDeviceCpu).TypeConstraint<float>("T").Label(kLabel),
                        OneDnnConvForwardOp);
REGISTER_KERNEL_BUILDER(Name("_FusedConv2D").Device(kDeviceCpu).TypeConstraint<float>("T").Label(kLabel),
                        OneDnnConvForwardOp);
REGISTER_KERNEL_BUILDER(Name("Conv2DBackpropInput").Device(kDeviceCpu).TypeConstraint<float>("T").Label(kLabel),
                        OneDnnConvBackpropInputOp);
REGISTER_KERNEL_BUILDER(Name("Conv2DBackpropFilter").Device(kDeviceCpu).TypeConstraint<float>("T").Label(kLabel),
                        OneDnnConvBackpropFilterOp);

}  // namespace

void SetConvPreferOursWhereFaster(bool prefer) { g_prefer_ours.store(prefer); }

}  // namespace onednn
}  // namespace sluice
