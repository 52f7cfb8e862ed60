// oneDNN kernels of MatMul, MaxPool and MaxPoolGrad (float32, CPU,
// Label("onednn")) for the evaluation of issue 18 only: onednn_bench links
// them; the product does not, because ours measured as fast or faster
// (docs/PERFORMANCE.md, "oneDNN against our kernels"). Built the way
// conv_ops.cc builds its kernels: one-thread primitives cached per shape,
// the work cut into one piece per intra-op thread (MatMul: rows of the
// output; pools: images), our kernel for what oneDNN does not take.
// MaxPoolGrad has no argmax from the forward op (TensorFlow's MaxPoolGrad
// takes the input and output instead), so it runs oneDNN's forward pass
// with a workspace and then the backward pass, as a MaxPoolGrad kernel
// built on oneDNN must.
//
// Thread safety: Compute may run concurrently; plan caches are locked.
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/nn_util.h"
#include "engine/kernels/onednn/onednn_util.h"

namespace sluice {
namespace onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// Plans (of type P) by an integer key; null records "no primitive".
template <typename P>
class Cache {
 public:
  template <typename Make>
  std::shared_ptr<const P> Get(const std::vector<int64_t>& key, const Make& make) {
    absl::MutexLock lock(&mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    if (plans_.size() >= 64) plans_.clear();
    std::shared_ptr<const P> plan;
    try {
      plan = make();
    } catch (const dnnl::error&) {
      plan = nullptr;
    }
    plans_[key] = plan;
    return plan;
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::vector<int64_t>, std::shared_ptr<const P>> plans_ ABSL_GUARDED_BY(mu_);
};

int64_t Pieces(OpKernelContext* ctx, int64_t items) {
  return std::max<int64_t>(1, std::min<int64_t>(ctx->eigen_cpu_device().numThreads(), items));
}

// ---- MatMul: c[m, n] = op(a) op(b), rows of c cut into pieces ----

struct MatMulPlan {
  dnnl::matmul primitive;
  memory::desc a, b, c;
  size_t scratchpad_bytes = 0;
};

class OneDnnMatMulOp : public OpKernel {
 public:
  explicit OneDnnMatMulOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    auto own = MakeOwnKernel(ctx);
    OP_REQUIRES_OK(ctx, own.status());
    ours_ = std::move(own).value();
    OP_REQUIRES_OK(ctx, ctx->GetAttr("transpose_a", &ta_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("transpose_b", &tb_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    if (a.dims() != 2 || b.dims() != 2) {
      ours_->Compute(ctx);
      return;
    }
    const int64_t m = ta_ ? a.dim_size(1) : a.dim_size(0), k = ta_ ? a.dim_size(0) : a.dim_size(1);
    const int64_t kb = tb_ ? b.dim_size(1) : b.dim_size(0), n = tb_ ? b.dim_size(0) : b.dim_size(1);
    if (k != kb || m == 0 || n == 0 || k == 0) {
      ours_->Compute(ctx);
      return;
    }
    RunInlineOnThisThread();
    const int64_t pieces = Pieces(ctx, m / 16);
    std::vector<std::shared_ptr<const MatMulPlan>> plans;
    size_t total = 0;
    for (int64_t p = 0; p < pieces; ++p) {
      const int64_t rows = PieceBegin(m, pieces, p + 1) - PieceBegin(m, pieces, p);
      auto plan = cache_.Get({rows, m, k, n}, [&] {
        auto plan = std::make_shared<MatMulPlan>();
        // Strides of the whole a and b: a piece is a block of rows of op(a).
        plan->a = memory::desc({rows, k}, memory::data_type::f32, ta_ ? memory::dims{1, m} : memory::dims{k, 1});
        plan->b = memory::desc({k, n}, memory::data_type::f32, tb_ ? memory::dims{1, k} : memory::dims{n, 1});
        plan->c = memory::desc({rows, n}, memory::data_type::f32, memory::dims{n, 1});
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(plan->a, plan->b, plan->c), attr, CpuEngine());
        plan->primitive = dnnl::matmul(pd);
        plan->scratchpad_bytes = pd.scratchpad_desc().get_size();
        return std::shared_ptr<const MatMulPlan>(plan);
      });
      if (plan == nullptr) {
        ours_->Compute(ctx);
        return;
      }
      total += (plan->scratchpad_bytes + 63) / 64 * 64;
      plans.push_back(plan);
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({m, n}), &out));
    Tensor temp;
    void* base;
    OP_REQUIRES_OK(ctx, AllocateBytes(ctx, total, &temp, &base));
    std::vector<char*> scratch(pieces);
    char* at = static_cast<char*>(base);
    for (int64_t p = 0; p < pieces; ++p) {
      scratch[p] = at;
      at += (plans[p]->scratchpad_bytes + 63) / 64 * 64;
    }
    std::vector<absl::Status> errors(pieces);
    float* a_data = const_cast<float*>(a.data<float>());
    float* b_data = const_cast<float*>(b.data<float>());
    RunPieces(ctx, pieces, [&](int64_t p) {
      const MatMulPlan& plan = *plans[p];
      const int64_t r0 = PieceBegin(m, pieces, p);
      try {
        dnnl::stream stream(CpuEngine());
        Args args = {{DNNL_ARG_SRC, memory(plan.a, CpuEngine(), a_data + (ta_ ? r0 : r0 * k))},
                     {DNNL_ARG_WEIGHTS, memory(plan.b, CpuEngine(), b_data)},
                     {DNNL_ARG_DST, memory(plan.c, CpuEngine(), out->data<float>() + r0 * n)}};
        AddScratchpad(plan.scratchpad_bytes, scratch[p], &args);
        plan.primitive.execute(stream, args);
      } catch (const dnnl::error& e) {
        errors[p] = FromError(e, "MatMul");
      }
    });
    for (const absl::Status& e : errors) OP_REQUIRES_OK(ctx, e);
  }

 private:
  std::unique_ptr<OpKernel> ours_;
  bool ta_ = false, tb_ = false;
  Cache<MatMulPlan> cache_;
};

// ---- MaxPool and MaxPoolGrad: images cut into pieces ----

struct PoolPlan {
  dnnl::pooling_forward forward;
  dnnl::pooling_backward backward;  // MaxPoolGrad only
  memory::desc x, y, workspace;
  size_t forward_scratchpad = 0, backward_scratchpad = 0;
};

class OneDnnMaxPoolOp : public OpKernel {
 public:
  explicit OneDnnMaxPoolOp(OpKernelConstruction* ctx) : OpKernel(ctx), grad_(ctx->def().op() == "MaxPoolGrad") {
    auto own = MakeOwnKernel(ctx);
    OP_REQUIRES_OK(ctx, own.status());
    ours_ = std::move(own).value();
    OP_REQUIRES_OK(ctx, ReadWindowAttrs(ctx, &strides_, &ksize_, &padding_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    WindowDim rows, cols;
    if (x.dims() != 4 || !ComputeWindow(x.dim_size(1), ksize_[1], strides_[1], padding_, &rows).ok() ||
        !ComputeWindow(x.dim_size(2), ksize_[2], strides_[2], padding_, &cols).ok() || x.NumElements() == 0 ||
        rows.out == 0 || cols.out == 0) {
      ours_->Compute(ctx);
      return;
    }
    const int64_t batch = x.dim_size(0), depth = x.dim_size(3);
    const TensorShape y_shape({batch, rows.out, cols.out, depth});
    if (grad_ && (ctx->input(1).shape() != y_shape || ctx->input(2).shape() != y_shape)) {
      ours_->Compute(ctx);
      return;
    }
    RunInlineOnThisThread();
    const int64_t pieces = Pieces(ctx, batch);
    std::vector<std::shared_ptr<const PoolPlan>> plans;
    std::vector<size_t> bytes;
    size_t total = 0;
    for (int64_t p = 0; p < pieces; ++p) {
      const int64_t images = PieceBegin(batch, pieces, p + 1) - PieceBegin(batch, pieces, p);
      auto plan = cache_.Get({images, x.dim_size(1), x.dim_size(2), depth}, [&] {
        auto plan = std::make_shared<PoolPlan>();
        plan->x = FloatDesc({images, depth, x.dim_size(1), x.dim_size(2)}, Tag::nhwc);
        plan->y = FloatDesc({images, depth, rows.out, cols.out}, Tag::nhwc);
        const memory::dims kernel = {ksize_[1], ksize_[2]}, strides = {strides_[1], strides_[2]};
        const memory::dims pad_l = {rows.pad, cols.pad};
        const memory::dims pad_r = {std::max<int64_t>(0, (rows.out - 1) * rows.stride + rows.k - rows.in - rows.pad),
                                    std::max<int64_t>(0, (cols.out - 1) * cols.stride + cols.k - cols.in - cols.pad)};
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        const dnnl::pooling_forward::desc fd(
            grad_ ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
            dnnl::algorithm::pooling_max, plan->x, plan->y, strides, kernel, pad_l, pad_r);
        const dnnl::pooling_forward::primitive_desc fpd(fd, attr, CpuEngine());
        plan->forward = dnnl::pooling_forward(fpd);
        plan->forward_scratchpad = fpd.scratchpad_desc().get_size();
        if (grad_) {
          plan->workspace = fpd.workspace_desc();
          const dnnl::pooling_backward::desc bd(dnnl::algorithm::pooling_max, plan->x, plan->y, strides, kernel,
                                                pad_l, pad_r);
          const dnnl::pooling_backward::primitive_desc bpd(bd, attr, CpuEngine(), fpd);
          plan->backward = dnnl::pooling_backward(bpd);
          plan->backward_scratchpad = bpd.scratchpad_desc().get_size();
        }
        return std::shared_ptr<const PoolPlan>(plan);
      });
      if (plan == nullptr) {
        ours_->Compute(ctx);
        return;
      }
      auto round = [](size_t b) { return (b + 63) / 64 * 64; };
      // MaxPoolGrad: the recomputed output, the workspace, both scratchpads.
      size_t b = round(plan->forward_scratchpad) + round(plan->backward_scratchpad);
      if (grad_) b += round(plan->y.get_size()) + round(plan->workspace.get_size());
      bytes.push_back(b);
      total += b;
      plans.push_back(plan);
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, grad_ ? x.shape() : y_shape, &out));
    Tensor temp;
    void* base;
    OP_REQUIRES_OK(ctx, AllocateBytes(ctx, total, &temp, &base));
    std::vector<char*> temps(pieces);
    char* at = static_cast<char*>(base);
    for (int64_t p = 0; p < pieces; ++p) {
      temps[p] = at;
      at += bytes[p];
    }
    const int64_t x_image = x.dim_size(1) * x.dim_size(2) * depth, y_image = rows.out * cols.out * depth;
    float* x_data = const_cast<float*>(x.data<float>());
    std::vector<absl::Status> errors(pieces);
    RunPieces(ctx, pieces, [&](int64_t p) {
      const PoolPlan& plan = *plans[p];
      const int64_t b0 = PieceBegin(batch, pieces, p);
      char* t = temps[p];
      auto take = [&t](size_t bytes) {
        char* r = t;
        t += (bytes + 63) / 64 * 64;
        return r;
      };
      try {
        dnnl::stream stream(CpuEngine());
        const dnnl::engine& e = CpuEngine();
        memory xm(plan.x, e, x_data + b0 * x_image);
        if (!grad_) {
          Args args = {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, memory(plan.y, e, out->data<float>() + b0 * y_image)}};
          AddScratchpad(plan.forward_scratchpad, take(plan.forward_scratchpad), &args);
          plan.forward.execute(stream, args);
          return;
        }
        memory ym(plan.y, e, take(plan.y.get_size()));
        memory ws(plan.workspace, e, take(plan.workspace.get_size()));
        Args fargs = {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}, {DNNL_ARG_WORKSPACE, ws}};
        AddScratchpad(plan.forward_scratchpad, take(plan.forward_scratchpad), &fargs);
        plan.forward.execute(stream, fargs);
        float* dy = const_cast<float*>(ctx->input(2).data<float>()) + b0 * y_image;
        Args bargs = {{DNNL_ARG_DIFF_DST, memory(plan.y, e, dy)},
                      {DNNL_ARG_WORKSPACE, ws},
                      {DNNL_ARG_DIFF_SRC, memory(plan.x, e, out->data<float>() + b0 * x_image)}};
        AddScratchpad(plan.backward_scratchpad, take(plan.backward_scratchpad), &bargs);
        plan.backward.execute(stream, bargs);
      } catch (const dnnl::error& e) {
        errors[p] = FromError(e, grad_ ? "MaxPoolGrad" : "MaxPool");
      }
    });
    for (const absl::Status& e : errors) OP_REQUIRES_OK(ctx, e);
  }

 private:
  const bool grad_;
  std::unique_ptr<OpKernel> ours_;
  std::vector<int64_t> strides_, ksize_;
  std::string padding_;
  Cache<PoolPlan> cache_;
};

REGISTER_KERNEL_BUILDER(Name("MatMul").Device(kDeviceCpu).TypeConstraint<float>("T").Label(kLabel), OneDnnMatMulOp);
REGISTER_KERNEL_BUILDER(Name("MaxPool").Device(kDeviceCpu).TypeConstraint<float>("T").Label(kLabel), OneDnnMaxPoolOp);
REGISTER_KERNEL_BUILDER(Name("MaxPoolGrad").Device(kDeviceCpu).TypeConstraint<float>("T").Label(kLabel),
                        OneDnnMaxPoolOp);

}  // namespace
}  // namespace onednn
}  // namespace sluice
