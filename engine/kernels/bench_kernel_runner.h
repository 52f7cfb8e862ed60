// Runs one kernel directly, for benchmarks (ops_bench, onednn/onednn_bench):
// KernelRegistry::CreateKernel + OpKernel::Compute on a CPU Device of our own
// with 1 or 2 intra-op threads, without a Session (whose local device has one
// process-wide thread count). Each Run allocates the outputs fresh, as in a
// session step.
// Also the inputs both benchmarks build: uniform random floats and shape
// vectors.
// Thread safety: a KernelRunner is used from one thread at a time.
#ifndef SLUICE_ENGINE_KERNELS_BENCH_KERNEL_RUNNER_H_
#define SLUICE_ENGINE_KERNELS_BENCH_KERNEL_RUNNER_H_

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/framework/allocator.h"
#include "engine/framework/device.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"

namespace sluice {

// A float tensor of `shape` filled from a fixed seed, uniform in [lo, hi).
inline Tensor BenchRandom(const TensorShape& shape, float lo = -1, float hi = 1) {
  Tensor t(DT_FLOAT, shape);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = u(rng);
  return t;
}

// `shape` as an int32 vector tensor (the sizes input of a backprop op).
inline Tensor BenchDims(const TensorShape& shape) {
  std::vector<int32_t> d(shape.dim_sizes().begin(), shape.dim_sizes().end());
  return Tensor::FromVector<int32_t>(d);
}

// A CPU device with `threads` (1 or 2) intra-op threads, made once.
inline Device* BenchCpuDevice(int threads) {
  static Device* devices[3] = {
      nullptr, new Device("/job:localhost/replica:0/task:0/device:CPU:0", kDeviceCpu, CpuAllocator(), 1),
      new Device("/job:localhost/replica:0/task:0/device:CPU:0", kDeviceCpu, CpuAllocator(), 2)};
  return devices[threads];
}

class KernelRunner {
 public:
  // `label`: the kernel label (KernelDefBuilder::Label) to run, "" for ours.
  KernelRunner(int threads, const std::string& op, std::map<std::string, AttrValue> attrs, std::vector<Tensor> inputs,
               const std::string& label = "")
      : device_(BenchCpuDevice(threads)), inputs_(std::move(inputs)) {
    NodeDef def;
    def.set_name("node");
    def.set_op(op);
    for (auto& kv : attrs) (*def.mutable_attr())[kv.first] = kv.second;
    if (!label.empty()) (*def.mutable_attr())[kKernelLabelAttr] = MakeAttr(label);
    const OpDef* op_def = OpRegistry::Global()->LookUp(op);
    if (op_def == nullptr) {
      status_ = absl::NotFoundError(op);
      return;
    }
    status_ = AddDefaultsAndValidateAttrs(*op_def, &def);
    if (!status_.ok()) return;
    auto k = KernelRegistry::Global()->CreateKernel(device_, def, *op_def);
    if (!k.ok()) {
      status_ = k.status();
      return;
    }
    kernel_ = std::move(*k);
    for (Tensor& t : inputs_) values_.push_back(TensorValue{&t, nullptr});
    params_.device = device_;
    params_.op_kernel = kernel_.get();
    params_.inputs = values_;
  }
  const absl::Status& status() const { return status_; }
  // Replaces input i (same dtype; a chain feeds each kernel the previous output).
  void SetInput(int i, Tensor t) { inputs_[i] = std::move(t); }
  // One Compute; the outputs are freed when it returns (fills `out` if given).
  absl::Status Run(std::vector<Tensor>* out = nullptr) {
    OpKernelContext ctx(&params_);
    kernel_->Compute(&ctx);
    if (out != nullptr) {
      out->clear();
      for (int i = 0; i < ctx.num_outputs(); ++i) out->push_back(ctx.mutable_output(i)->value);
    }
    return ctx.status();
  }

 private:
  Device* device_;
  std::vector<Tensor> inputs_;
  std::vector<TensorValue> values_;
  std::unique_ptr<OpKernel> kernel_;
  OpKernelContext::Params params_;
  absl::Status status_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_BENCH_KERNEL_RUNNER_H_
