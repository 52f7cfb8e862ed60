// See sendrecv_util.h.
#include "engine/kernels/sendrecv_util.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice {

absl::Status RendezvousAttrs::Read(OpKernelConstruction* ctx) {
  absl::Status s = ctx->GetAttr("tensor_name", &tensor_name);
  if (s.ok()) s = ctx->GetAttr("send_device", &send_device);
  if (s.ok()) s = ctx->GetAttr("recv_device", &recv_device);
  if (s.ok()) s = ctx->GetAttr("send_device_incarnation", &send_device_incarnation);
  if (s.ok()) root_key = MakeKey(0, 0);
  return s;
}

std::string RendezvousAttrs::MakeKey(int64_t frame_id, int64_t iter_id) const {
  return Rendezvous::CreateKey(send_device, static_cast<uint64_t>(send_device_incarnation), recv_device, tensor_name,
                               frame_id, iter_id);
}

const std::string& RendezvousAttrs::Key(const OpKernelContext* ctx, std::string* loop_key) const {
  const int64_t frame_id = ctx->params().frame_id;
  const int64_t iter_id = ctx->params().iter_id;
  if (frame_id == 0 && iter_id == 0) return root_key;
  *loop_key = MakeKey(frame_id, iter_id);
  return *loop_key;
}

void RecvFromRendezvous(OpKernelContext* ctx, const RendezvousAttrs& attrs, DataType expected,
                        std::function<absl::Status(const Tensor&)> deliver, AsyncOpKernel::DoneCallback done) {
  OP_REQUIRES_ASYNC(ctx, ctx->rendezvous() != nullptr, absl::InternalError("_Recv ran without a rendezvous"), done);
  CancellationManager* cm = ctx->cancellation_manager();
  Rendezvous* rendezvous = ctx->rendezvous();
  CancellationManager::Token token = cm->NewToken();
  if (!cm->RegisterCallback(token, [rendezvous] { rendezvous->StartAbort(absl::CancelledError("step cancelled")); })) {
    ctx->CtxFailure(absl::CancelledError("step cancelled before the value arrived"));
    done();
    return;
  }
  std::string loop_key;
  rendezvous->RecvAsync(
      attrs.Key(ctx, &loop_key), [ctx, cm, token, &attrs, expected, deliver = std::move(deliver),
                                  done = std::move(done)](const absl::Status& s, const Tensor& value, bool is_dead) {
        cm->DeregisterCallback(token);
        if (!s.ok()) {
          ctx->CtxFailure(absl::Status(s.code(), absl::StrCat("receiving '", attrs.tensor_name, "': ", s.message())));
        } else if (!is_dead) {
          if (value.dtype() != expected) {
            ctx->CtxFailure(absl::InvalidArgumentError(absl::StrCat("value for '", attrs.tensor_name, "' has type ",
                                                                    DataTypeString(value.dtype()), ", expected ",
                                                                    DataTypeString(expected))));
          } else {
            ctx->SetStatus(deliver(value));
          }
        }
        done();
      });
}

}  // namespace sluice
