// OpKernel: the code that runs one node on one device type. A kernel is built
// once per node (attrs read and checked in its constructor) and then Compute
// runs it once per step, possibly concurrently from several steps, so kernels
// keep no per-step state in members. AsyncOpKernel::ComputeAsync may return
// before it is done and calls `done` later; it must never block a thread.
//
// Kernels register per (op, device type, type constraints):
//   REGISTER_KERNEL_BUILDER(Name("Add").Device(kDeviceCpu).TypeConstraint<float>("T"),
//                           AddOp<float>);
// Thread safety: Compute/ComputeAsync may run concurrently (different steps);
// an OpKernelContext belongs to one node execution.
#ifndef SLUICE_ENGINE_FRAMEWORK_OP_KERNEL_H_
#define SLUICE_ENGINE_FRAMEWORK_OP_KERNEL_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "engine/framework/cancellation.h"
#include "engine/framework/device.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/rendezvous.h"
#include "engine/framework/tensor.h"

namespace sluice {

class AsyncOpKernel;
class OpKernelContext;

// A step's own container in a device's ResourceMgr (TensorFlow's per-step
// container): resources that live for one step of one executor (TensorArrays,
// stacks) go under name(), unique in the process, and are dropped when the
// StepContainer is destroyed at the end of the step (only when name() was
// asked for, so steps without such resources pay nothing more).
// Thread safety: name() may be called concurrently.
class StepContainer {
 public:
  explicit StepContainer(ResourceMgr* resource_mgr);
  ~StepContainer();
  StepContainer(const StepContainer&) = delete;
  StepContainer& operator=(const StepContainer&) = delete;
  const std::string& name() const {
    used_.store(true, std::memory_order_relaxed);
    return name_;
  }

 private:
  ResourceMgr* resource_mgr_;
  std::string name_;
  mutable std::atomic<bool> used_{false};
};

class OpKernelConstruction {
 public:
  OpKernelConstruction(Device* device, const NodeDef* def, const OpDef* op_def, const DataTypeVector* input_types,
                       const DataTypeVector* output_types)
      : device_(device), def_(def), op_def_(op_def), input_types_(input_types), output_types_(output_types) {}

  Device* device() const { return device_; }
  const NodeDef& def() const { return *def_; }
  const OpDef& op_def() const { return *op_def_; }
  const DataTypeVector& input_types() const { return *input_types_; }
  const DataTypeVector& output_types() const { return *output_types_; }
  template <typename T>
  absl::Status GetAttr(absl::string_view name, T* value) const {
    return GetNodeAttr(*def_, name, value);
  }
  void CtxFailure(const absl::Status& s) {
    if (status_.ok()) status_ = s;
  }
  const absl::Status& status() const { return status_; }

 private:
  Device* device_;
  const NodeDef* def_;
  const OpDef* op_def_;
  const DataTypeVector* input_types_;
  const DataTypeVector* output_types_;
  absl::Status status_;
};

class OpKernel {
 public:
  explicit OpKernel(OpKernelConstruction* ctx);
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  virtual void Compute(OpKernelContext* ctx) = 0;
  virtual AsyncOpKernel* AsAsync() { return nullptr; }
  // Cheap kernels run inline on the thread that made them ready; expensive
  // ones go to the inter-op pool. Kernels are expensive unless they say not.
  virtual bool IsExpensive() const { return true; }

  const NodeDef& def() const { return def_; }
  const std::string& name() const { return def_.name(); }
  const std::string& type_string() const { return def_.op(); }
  int num_inputs() const { return static_cast<int>(input_types_.size()); }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }

 private:
  const NodeDef def_;
  const DataTypeVector input_types_;
  const DataTypeVector output_types_;
};

class AsyncOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  using DoneCallback = std::function<void()>;
  // Must call `done` exactly once, on any thread, after setting outputs or
  // status on `ctx`. `ctx` stays valid until `done` is called.
  virtual void ComputeAsync(OpKernelContext* ctx, DoneCallback done) = 0;
  AsyncOpKernel* AsAsync() final { return this; }
  // Blocks until ComputeAsync finishes (for callers outside the executor).
  void Compute(OpKernelContext* ctx) final;
};

// One input as the executor hands it to a kernel: a value, or (for ref
// inputs) the variable's tensor and its mutex.
struct TensorValue {
  Tensor* tensor = nullptr;
  absl::Mutex* mutex_if_ref = nullptr;
  bool is_ref() const { return mutex_if_ref != nullptr; }
};

// What a kernel produced on one output port.
struct KernelOutput {
  Tensor value;
  Tensor* ref = nullptr;           // set for ref outputs
  absl::Mutex* ref_mu = nullptr;   // the ref's mutex
  std::shared_ptr<ResourceBase> ref_owner;  // keeps the ref's resource alive
  bool is_set = false;
};

class OpKernelContext {
 public:
  struct Params {
    int64_t step_id = 0;
    Device* device = nullptr;
    OpKernel* op_kernel = nullptr;
    // Inputs; `tensor == nullptr` marks a dead input (only Merge sees those).
    absl::Span<const TensorValue> inputs;
    // Owners of ref inputs, parallel to `inputs` (may be empty).
    absl::Span<const std::shared_ptr<ResourceBase>> input_ref_owners;
    Rendezvous* rendezvous = nullptr;
    CancellationManager* cancellation_manager = nullptr;
    // Frame and iteration of this execution, for rendezvous keys.
    int64_t frame_id = 0;
    int64_t iter_id = 0;
    // Set for kernels that run on dead inputs (_Send forwards the deadness).
    bool is_input_dead = false;
    // Runs a closure on the inter-op pool.
    const std::function<void(std::function<void()>)>* runner = nullptr;
    // The step's own container on `device` (null outside an executor).
    const StepContainer* step_container = nullptr;
  };

  explicit OpKernelContext(const Params* params);

  const Params& params() const { return *params_; }
  int64_t step_id() const { return params_->step_id; }
  Device* device() const { return params_->device; }
  const OpKernel& op_kernel() const { return *params_->op_kernel; }
  ResourceMgr* resource_manager() const { return params_->device->resource_manager(); }
  bool is_input_dead() const { return params_->is_input_dead; }
  const Eigen::ThreadPoolDevice& eigen_cpu_device() const { return *params_->device->eigen_cpu_device(); }
  Rendezvous* rendezvous() const { return params_->rendezvous; }
  CancellationManager* cancellation_manager() const { return params_->cancellation_manager; }
  // Null when the kernel runs outside an executor.
  const StepContainer* step_container() const { return params_->step_container; }

  int num_inputs() const { return static_cast<int>(params_->inputs.size()); }
  bool has_input(int i) const { return params_->inputs[i].tensor != nullptr; }
  // REQUIRES: has_input(i). For a ref input this is the variable's tensor.
  const Tensor& input(int i) const { return *params_->inputs[i].tensor; }
  DataType input_dtype(int i) const { return params_->op_kernel->input_type(i); }
  bool input_is_ref(int i) const { return params_->inputs[i].is_ref(); }
  // REQUIRES: input_is_ref(i). Writers hold input_ref_mutex(i).
  Tensor* mutable_input(int i) const { return params_->inputs[i].tensor; }
  absl::Mutex* input_ref_mutex(int i) const { return params_->inputs[i].mutex_if_ref; }
  // Passes a ref input through to a ref output (Assign returns its ref).
  void forward_ref_input_to_ref_output(int input, int output);

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  // Allocates output i from the device allocator. ResourceExhausted on OOM.
  absl::Status allocate_output(int i, const TensorShape& shape, Tensor** out);
  absl::Status allocate_temp(DataType dtype, const TensorShape& shape, Tensor* out);
  void set_output(int i, Tensor value);
  void set_output_ref(int i, absl::Mutex* mu, Tensor* ref, std::shared_ptr<ResourceBase> owner);
  KernelOutput* mutable_output(int i) { return &outputs_[i]; }

  void SetStatus(const absl::Status& status) {
    if (status_.ok()) status_ = status;
  }
  void CtxFailure(const absl::Status& status) { SetStatus(status); }
  const absl::Status& status() const { return status_; }

 private:
  const Params* params_;
  absl::InlinedVector<KernelOutput, 2> outputs_;
  absl::Status status_;
};

#define OP_REQUIRES(CTX, EXP, STATUS) \
  do {                                \
    if (!(EXP)) {                     \
      (CTX)->CtxFailure(STATUS);      \
      return;                         \
    }                                 \
  } while (0)

#define OP_REQUIRES_OK(CTX, EXPR)          \
  do {                                     \
    ::absl::Status sluice_op_s_ = (EXPR);  \
    if (!sluice_op_s_.ok()) {              \
      (CTX)->CtxFailure(sluice_op_s_);     \
      return;                              \
    }                                      \
  } while (0)

#define OP_REQUIRES_ASYNC(CTX, EXP, STATUS, DONE) \
  do {                                            \
    if (!(EXP)) {                                 \
      (CTX)->CtxFailure(STATUS);                  \
      (DONE)();                                   \
      return;                                     \
    }                                             \
  } while (0)

#define OP_REQUIRES_OK_ASYNC(CTX, EXPR, DONE) \
  do {                                        \
    ::absl::Status sluice_op_s_ = (EXPR);     \
    if (!sluice_op_s_.ok()) {                 \
      (CTX)->CtxFailure(sluice_op_s_);        \
      (DONE)();                               \
      return;                                 \
    }                                         \
  } while (0)

// A consumer that orders the copies of its inputs itself: a node with this
// bool attr set to true promises that whatever uses its result waits for the
// copies that brought its inputs to its device (a GPU's Stage: its tuples
// carry an event that the Unstage makes the compute stream wait for,
// inputs/staging_kernels.h). The partitioner gives a _Recv whose every
// consumer on its device makes that promise kConsumerOrdersCopyAttr = true
// (engine/graph/partition.h), and the device's _Recv may then leave the copy
// out of its compute order (engine/kernels/gpu/sendrecv_ops_gpu.cc).
inline constexpr char kOrdersItsInputCopiesAttr[] = "_orders_its_input_copies";
inline constexpr char kConsumerOrdersCopyAttr[] = "_consumer_orders_copy";

// ---- Kernel registry ----

using KernelFactory = std::function<OpKernel*(OpKernelConstruction*)>;

// A node whose string attr `_kernel` is L gets the kernel registered with
// Label(L); a node without it gets an unlabeled one. So one op can have
// several kernels per device and dtype (ours, and one backed by a library
// such as oneDNN), chosen per node by a graph pass (engine/graph/
// kernel_selection.h) rather than per process.
inline constexpr char kKernelLabelAttr[] = "_kernel";
// A labeled kernel that takes only some shapes (the Winograd convolutions)
// hands the others to the kernel labeled with this string attr (none or
// empty: the unlabeled one).
inline constexpr char kKernelFallbackAttr[] = "_kernel_fallback";

class KernelDefBuilder {
 public:
  explicit KernelDefBuilder(std::string op) : op_(std::move(op)) {}
  KernelDefBuilder& Device(std::string device_type) {
    device_type_ = std::move(device_type);
    return *this;
  }
  template <typename T>
  KernelDefBuilder& TypeConstraint(std::string attr) {
    constraints_.push_back({std::move(attr), {DataTypeToEnum<T>::value}});
    return *this;
  }
  KernelDefBuilder& TypeConstraint(std::string attr, std::vector<DataType> allowed) {
    constraints_.push_back({std::move(attr), std::move(allowed)});
    return *this;
  }
  // Only nodes whose `_kernel` attr is `label` get this kernel.
  KernelDefBuilder& Label(std::string label) {
    label_ = std::move(label);
    return *this;
  }

  std::string op_;
  std::string device_type_ = kDeviceCpu;
  std::vector<std::pair<std::string, std::vector<DataType>>> constraints_;
  std::string label_;  // empty: for nodes without a `_kernel` attr
};
inline KernelDefBuilder Name(std::string op) { return KernelDefBuilder(std::move(op)); }

class KernelRegistry {
 public:
  static KernelRegistry* Global();
  void Register(const KernelDefBuilder& def, KernelFactory factory);
  // Builds the kernel for `def` on `device`: NotFound when no registration
  // matches (listing what is registered), or the constructor's error.
  absl::StatusOr<std::unique_ptr<OpKernel>> CreateKernel(Device* device, const NodeDef& def,
                                                         const OpDef& op_def) const;
  // Is there a kernel for this node on `device_type`?
  bool HasKernel(absl::string_view device_type, const NodeDef& def) const;
  // Registered (op name) set, for coverage tests.
  std::vector<std::string> RegisteredOps() const;

 private:
  struct Registration {
    KernelDefBuilder def;
    KernelFactory factory;
  };
  const Registration* Find(absl::string_view device_type, const NodeDef& def, std::string* why) const;
  std::vector<Registration> registrations_;
};

namespace kernel_registration {
struct KernelRegistrar {
  KernelRegistrar(const KernelDefBuilder& def, KernelFactory factory) {
    KernelRegistry::Global()->Register(def, std::move(factory));
  }
};
}  // namespace kernel_registration

#define SLUICE_REGISTER_KERNEL_UNIQ_(ctr, builder, ...)                                       \
  static ::sluice::kernel_registration::KernelRegistrar kernel_registrar_##ctr                \
      __attribute__((unused))(builder, [](::sluice::OpKernelConstruction* ctx) -> ::sluice::OpKernel* { \
        return new __VA_ARGS__(ctx);                                                         \
      })
#define SLUICE_REGISTER_KERNEL_HELPER_(ctr, builder, ...) SLUICE_REGISTER_KERNEL_UNIQ_(ctr, builder, __VA_ARGS__)
#define REGISTER_KERNEL_BUILDER(builder, ...) SLUICE_REGISTER_KERNEL_HELPER_(__COUNTER__, builder, __VA_ARGS__)

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_OP_KERNEL_H_
