// OpKernel, OpKernelContext and the kernel registry.
#include "engine/framework/op_kernel.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"

namespace sluice {

StepContainer::StepContainer(ResourceMgr* resource_mgr) : resource_mgr_(resource_mgr) {
  static std::atomic<int64_t> next_id{0};
  name_ = absl::StrCat("__per_step_", next_id.fetch_add(1, std::memory_order_relaxed));
}

StepContainer::~StepContainer() {
  if (used_.load(std::memory_order_relaxed)) resource_mgr_->Cleanup(name_);
}

OpKernel::OpKernel(OpKernelConstruction* ctx)
    : def_(ctx->def()), input_types_(ctx->input_types()), output_types_(ctx->output_types()) {}

void AsyncOpKernel::Compute(OpKernelContext* ctx) {
  absl::Notification n;
  ComputeAsync(ctx, [&n] { n.Notify(); });
  n.WaitForNotification();
}

OpKernelContext::OpKernelContext(const Params* params)
    : params_(params), outputs_(params->op_kernel->num_outputs()) {}

void OpKernelContext::forward_ref_input_to_ref_output(int input, int output) {
  std::shared_ptr<ResourceBase> owner;
  if (static_cast<size_t>(input) < params_->input_ref_owners.size()) owner = params_->input_ref_owners[input];
  set_output_ref(output, params_->inputs[input].mutex_if_ref, params_->inputs[input].tensor, std::move(owner));
}

absl::Status OpKernelContext::allocate_output(int i, const TensorShape& shape, Tensor** out) {
  auto t = Tensor::Allocate(params_->device->GetAllocator(params_->op_kernel->output_type(i)),
                            params_->op_kernel->output_type(i), shape);
  if (!t.ok()) return t.status();
  KernelOutput& o = outputs_[i];
  o.value = std::move(t).value();
  o.is_set = true;
  *out = &o.value;
  return absl::OkStatus();
}

absl::Status OpKernelContext::allocate_temp(DataType dtype, const TensorShape& shape, Tensor* out) {
  auto t = Tensor::Allocate(params_->device->GetAllocator(dtype), dtype, shape);
  if (!t.ok()) return t.status();
  *out = std::move(t).value();
  return absl::OkStatus();
}

void OpKernelContext::set_output(int i, Tensor value) {
  KernelOutput& o = outputs_[i];
  o.value = std::move(value);
  o.is_set = true;
}

void OpKernelContext::set_output_ref(int i, absl::Mutex* mu, Tensor* ref, std::shared_ptr<ResourceBase> owner) {
  KernelOutput& o = outputs_[i];
  o.ref = ref;
  o.ref_mu = mu;
  o.ref_owner = std::move(owner);
  o.is_set = true;
}

KernelRegistry* KernelRegistry::Global() {
  static KernelRegistry* registry = new KernelRegistry;
  return registry;
}

void KernelRegistry::Register(const KernelDefBuilder& def, KernelFactory factory) {
  registrations_.push_back({def, std::move(factory)});
}

const KernelRegistry::Registration* KernelRegistry::Find(absl::string_view device_type, const NodeDef& def,
                                                         std::string* why) const {
  std::vector<std::string> candidates;
  const AttrValue* label_attr = FindAttr(def, kKernelLabelAttr);
  const std::string label = label_attr != nullptr ? label_attr->s() : "";
  for (const Registration& r : registrations_) {
    if (r.def.op_ != def.op() || r.def.device_type_ != device_type) continue;
    bool match = r.def.label_ == label;
    std::vector<std::string> desc;
    if (!r.def.label_.empty()) desc.push_back(absl::StrCat(kKernelLabelAttr, " = \"", r.def.label_, "\""));
    for (const auto& [attr, allowed] : r.def.constraints_) {
      std::vector<std::string> names;
      for (DataType t : allowed) names.push_back(DataTypeString(t));
      desc.push_back(absl::StrCat(attr, " in {", absl::StrJoin(names, ","), "}"));
      const AttrValue* v = FindAttr(def, attr);
      if (v == nullptr) {
        match = false;
        continue;
      }
      // Captures a named reference: clang 14 (C++17) cannot capture a structured binding.
      const auto& allowed_types = allowed;
      auto ok = [&](DataType t) { return std::find(allowed_types.begin(), allowed_types.end(), t) != allowed_types.end(); };
      if (v->value_case() == AttrValue::kType) {
        if (!ok(v->type())) match = false;
      } else if (v->value_case() == AttrValue::kList) {
        for (int t : v->list().type()) {
          if (!ok(static_cast<DataType>(t))) match = false;
        }
      } else {
        match = false;
      }
    }
    if (match) return &r;
    candidates.push_back(desc.empty() ? "(any)" : absl::StrJoin(desc, ", "));
  }
  if (why != nullptr) {
    *why = candidates.empty()
               ? absl::StrCat("no ", device_type, " kernel is registered for op ", def.op())
               : absl::StrCat("no ", device_type, " kernel of op ", def.op(),
                              " matches the node's attrs; registered: ", absl::StrJoin(candidates, "; "));
  }
  return nullptr;
}

bool KernelRegistry::HasKernel(absl::string_view device_type, const NodeDef& def) const {
  return Find(device_type, def, nullptr) != nullptr;
}

absl::StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::CreateKernel(Device* device, const NodeDef& def,
                                                                         const OpDef& op_def) const {
  std::string why;
  const Registration* r = Find(device->device_type(), def, &why);
  if (r == nullptr) return absl::NotFoundError(absl::StrCat(NodeContext(def), why));
  DataTypeVector inputs, outputs;
  absl::Status s = InOutTypesForNode(def, op_def, &inputs, &outputs);
  if (!s.ok()) return s;
  OpKernelConstruction construction(device, &def, &op_def, &inputs, &outputs);
  std::unique_ptr<OpKernel> kernel(r->factory(&construction));
  if (!construction.status().ok()) {
    const absl::Status& cs = construction.status();
    return absl::Status(cs.code(), absl::StrCat(NodeContext(def), cs.message()));
  }
  return kernel;
}

std::vector<std::string> KernelRegistry::RegisteredOps() const {
  std::set<std::string> ops;
  for (const Registration& r : registrations_) ops.insert(r.def.op_);
  return {ops.begin(), ops.end()};
}

}  // namespace sluice
