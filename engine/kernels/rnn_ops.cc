// CPU kernels for LstmGates and LstmGatesGrad (engine/ops/rnn_ops.cc): one
// pass over each row of the batch with Eigen's vectorized logistic and tanh;
// rows split over the intra-op pool when the step is large.
// Thread safety: kernels are stateless after construction.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/run_tasks.h"

namespace sluice {
namespace {

template <typename T>
using Row = Eigen::Map<Eigen::Array<T, 1, Eigen::Dynamic>>;
template <typename T>
using ConstRow = Eigen::Map<const Eigen::Array<T, 1, Eigen::Dynamic>>;

// Checks z or activations [batch, 4 units] against a state [batch, units].
bool CheckShapes(OpKernelContext* ctx, const Tensor& gates, const Tensor& state, const char* gates_name) {
  if (gates.dims() != 2 || state.dims() != 2 || gates.dim_size(0) != state.dim_size(0) ||
      gates.dim_size(1) != 4 * state.dim_size(1)) {
    ctx->CtxFailure(absl::InvalidArgumentError(absl::StrCat(gates_name, " must be [batch, 4 * units] for a [batch, units] state; got ",
                                                            gates.shape().DebugString(), " and ",
                                                            state.shape().DebugString())));
    return false;
  }
  return true;
}

// Runs fn(first_row, end_row) over the rows, split when there is enough work.
template <typename Fn>
void ForRows(OpKernelContext* ctx, int64_t rows, int64_t units, const Fn& fn) {
  auto* pool = ctx->eigen_cpu_device().getPool();
  const int threads = ctx->eigen_cpu_device().numThreads();
  const int64_t tasks = std::max<int64_t>(1, std::min<int64_t>({threads, rows, rows * units / (32 * 1024)}));
  RunTasks(pool, tasks, [&](int64_t t) { fn(rows * t / tasks, rows * (t + 1) / tasks); });
}

template <typename T>
class LstmGatesOp : public OpKernel {
 public:
  explicit LstmGatesOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("forget_bias", &forget_bias_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& z = ctx->input(0);
    const Tensor& c_prev = ctx->input(1);
    if (!CheckShapes(ctx, z, c_prev, "z")) return;
    Tensor *h, *c, *act;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, c_prev.shape(), &h));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, c_prev.shape(), &c));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, z.shape(), &act));
    const int64_t rows = c_prev.dim_size(0), n = c_prev.dim_size(1);
    const T fb = static_cast<T>(forget_bias_);
    const T* zp = z.data<T>();
    const T* cpp = c_prev.data<T>();
    T* hp = h->data<T>();
    T* cp = c->data<T>();
    T* ap = act->data<T>();
    ForRows(ctx, rows, n, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* zr = zp + r * 4 * n;
        T* ar = ap + r * 4 * n;
        Row<T> i(ar, n), f(ar + n, n), g(ar + 2 * n, n), o(ar + 3 * n, n);
        i = ConstRow<T>(zr, n).logistic();
        f = (ConstRow<T>(zr + n, n) + fb).logistic();
        g = ConstRow<T>(zr + 2 * n, n).tanh();
        o = ConstRow<T>(zr + 3 * n, n).logistic();
        Row<T> c_row(cp + r * n, n);
        c_row = f * ConstRow<T>(cpp + r * n, n) + i * g;
        Row<T>(hp + r * n, n) = o * c_row.tanh();
      }
    });
  }

 private:
  float forget_bias_ = 1.0f;
};

template <typename T>
class LstmGatesGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& c_prev = ctx->input(0);
    const Tensor& c = ctx->input(1);
    const Tensor& act = ctx->input(2);
    const Tensor& dh = ctx->input(3);
    const Tensor& dc = ctx->input(4);
    if (!CheckShapes(ctx, act, c_prev, "activations")) return;
    for (const Tensor* t : {&c, &dh, &dc}) {
      OP_REQUIRES(ctx, t->shape() == c_prev.shape(),
                  absl::InvalidArgumentError(absl::StrCat("c, dh and dc must have c_prev's shape ",
                                                          c_prev.shape().DebugString(), "; got ",
                                                          t->shape().DebugString())));
    }
    Tensor *dz, *dc_prev;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, act.shape(), &dz));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, c_prev.shape(), &dc_prev));
    const int64_t rows = c_prev.dim_size(0), n = c_prev.dim_size(1);
    ForRows(ctx, rows, n, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* ar = act.data<T>() + r * 4 * n;
        ConstRow<T> i(ar, n), f(ar + n, n), g(ar + 2 * n, n), o(ar + 3 * n, n);
        ConstRow<T> h_grad(dh.data<T>() + r * n, n);
        const auto tc = ConstRow<T>(c.data<T>() + r * n, n).tanh().eval();
        // The whole gradient reaching c: from the next step and through h.
        const auto dcc = (ConstRow<T>(dc.data<T>() + r * n, n) + h_grad * o * (T(1) - tc * tc)).eval();
        T* dzr = dz->data<T>() + r * 4 * n;
        Row<T>(dzr, n) = dcc * g * i * (T(1) - i);
        Row<T>(dzr + n, n) = dcc * ConstRow<T>(c_prev.data<T>() + r * n, n) * f * (T(1) - f);
        Row<T>(dzr + 2 * n, n) = dcc * i * (T(1) - g * g);
        Row<T>(dzr + 3 * n, n) = h_grad * tc * o * (T(1) - o);
        Row<T>(dc_prev->data<T>() + r * n, n) = dcc * f;
      }
    });
  }
};

#define SLUICE_REGISTER_LSTM_GATES_(T)                                                                    \
  REGISTER_KERNEL_BUILDER(Name("LstmGates").Device(kDeviceCpu).TypeConstraint<T>("T"), LstmGatesOp<T>); \
  REGISTER_KERNEL_BUILDER(Name("LstmGatesGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), LstmGatesGradOp<T>)
SLUICE_REGISTER_LSTM_GATES_(float);
SLUICE_REGISTER_LSTM_GATES_(double);
#undef SLUICE_REGISTER_LSTM_GATES_

}  // namespace
}  // namespace sluice
