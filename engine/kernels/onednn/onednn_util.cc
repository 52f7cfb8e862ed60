// See onednn_util.h.
#include "engine/kernels/onednn/onednn_util.h"

#include <omp.h>

#include <atomic>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace onednn {

const dnnl::engine& CpuEngine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

namespace {
std::atomic<int64_t> g_primitive_runs{0};
}  // namespace

int64_t PrimitiveRuns() { return g_primitive_runs.load(std::memory_order_relaxed); }
void CountPrimitiveRuns(int64_t pieces) { g_primitive_runs.fetch_add(pieces, std::memory_order_relaxed); }

void RunInlineOnThisThread() {
  // OpenMP's nthreads-var is per thread: this changes nothing for other
  // threads (and nothing else in the process uses OpenMP).
  thread_local bool done = false;
  if (done) return;
  omp_set_num_threads(1);
  done = true;
}

absl::Status FromError(const dnnl::error& e, absl::string_view what) {
  const std::string message = absl::StrCat(what, ": oneDNN: ", e.what());
  if (e.status == dnnl_out_of_memory) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

dnnl::memory::desc FloatDesc(const dnnl::memory::dims& dims, dnnl::memory::format_tag tag) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, tag);
}

absl::StatusOr<std::unique_ptr<OpKernel>> MakeOwnKernel(OpKernelConstruction* ctx) {
  NodeDef def = ctx->def();
  def.mutable_attr()->erase(kKernelLabelAttr);
  return KernelRegistry::Global()->CreateKernel(ctx->device(), def, ctx->op_def());
}

absl::Status AllocateBytes(OpKernelContext* ctx, size_t bytes, Tensor* holder, void** data) {
  *data = nullptr;
  if (bytes == 0) return absl::OkStatus();
  const int64_t floats = static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float));
  absl::Status s = ctx->allocate_temp(DT_FLOAT, TensorShape({floats}), holder);
  if (!s.ok()) return s;
  *data = holder->data<float>();
  return absl::OkStatus();
}

void AddScratchpad(size_t bytes, void* data, Args* args) {
  if (bytes == 0) return;
  const dnnl::memory::desc desc({static_cast<int64_t>(bytes)}, dnnl::memory::data_type::u8,
                                dnnl::memory::format_tag::x);
  (*args)[DNNL_ARG_SCRATCHPAD] = dnnl::memory(desc, CpuEngine(), data);
}

Relayout Relayout::Make(const dnnl::memory::desc& user, const dnnl::memory::desc& inner, bool to_inner,
                        bool to_user) {
  Relayout r;
  r.user = user;
  r.inner = inner;
  if (r.same()) return r;
  const dnnl::engine& e = CpuEngine();
  if (to_inner) r.to_inner = dnnl::reorder(dnnl::reorder::primitive_desc(e, user, e, inner));
  if (to_user) r.to_user = dnnl::reorder(dnnl::reorder::primitive_desc(e, inner, e, user));
  return r;
}

Staged::Staged(const Relayout& r, void* user_data, void* temp)
    : r_(r),
      user_(r.user, CpuEngine(), user_data),
      inner_(r.same() ? user_ : dnnl::memory(r.inner, CpuEngine(), temp)) {}

void Staged::In(dnnl::stream& s) {
  if (!r_.same()) r_.to_inner.execute(s, user_, inner_);
}

void Staged::Out(dnnl::stream& s) {
  if (!r_.same()) r_.to_user.execute(s, inner_, user_);
}

}  // namespace onednn
}  // namespace sluice
