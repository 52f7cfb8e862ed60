// Stage, Unstage and their StagingArea (staging_kernels.h); registers the CPU
// kernels.
#include "inputs/staging_kernels.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {
namespace {

std::string DtypeList(const DataTypeVector& dtypes) {
  std::vector<std::string> names;
  for (DataType t : dtypes) names.push_back(DataTypeString(t));
  return absl::StrCat("(", absl::StrJoin(names, ", "), ")");
}

absl::Status EmptyAreaError(const std::string& name) {
  return absl::FailedPreconditionError(
      absl::StrCat("staging area '", name, "' is empty: its Stage op must run (in an earlier Run) before each Unstage"));
}

}  // namespace

absl::Status StagingArea::CheckDtypes(const DataTypeVector& dtypes, const std::string& node) const {
  if (dtypes == dtypes_) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(node.empty() ? "" : absl::StrCat("node '", node, "': "),
                                                 "staging area '", name_, "' holds ", DtypeList(dtypes_), ", not ",
                                                 DtypeList(dtypes)));
}

absl::Status StagingArea::Put(std::vector<Tensor> values, StagedTupleFence before_use) {
  DataTypeVector dtypes;
  for (const Tensor& t : values) dtypes.push_back(t.dtype());
  absl::Status s = CheckDtypes(dtypes, "");
  if (!s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (static_cast<int64_t>(tuples_.size()) >= capacity_) {
    return absl::FailedPreconditionError(absl::StrCat("staging area '", name_, "' already holds its capacity of ",
                                                      capacity_, " staged tuples: nothing unstaged them"));
  }
  tuples_.push_back(StagedTuple{std::move(values), std::move(before_use)});
  return absl::OkStatus();
}

absl::StatusOr<StagedTuple> StagingArea::Take() {
  absl::MutexLock lock(&mu_);
  if (tuples_.empty()) return EmptyAreaError(name_);
  StagedTuple tuple = std::move(tuples_.front());
  tuples_.pop_front();
  return tuple;
}

int64_t StagingArea::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(tuples_.size());
}

std::string StagingArea::DebugString() const {
  return absl::StrCat("StagingArea '", name_, "' of ", DtypeList(dtypes_), ", ", size(), " of ", capacity_, " staged");
}

StagingOpBase::StagingOpBase(OpKernelConstruction* ctx) : OpKernel(ctx) {
  OP_REQUIRES_OK(ctx, rn_.Read(ctx));
  std::string shared_name;
  OP_REQUIRES_OK(ctx, ctx->GetAttr("shared_name", &shared_name));
  OP_REQUIRES(ctx, !shared_name.empty(),
              absl::InvalidArgumentError(absl::StrCat(NodeContext(ctx->def()),
                                                      "attr 'shared_name' must name the staging area (its Stage and "
                                                      "Unstage nodes are different nodes)")));
  std::vector<DataType> dtypes;
  OP_REQUIRES_OK(ctx, ctx->GetAttr("dtypes", &dtypes));
  dtypes_.assign(dtypes.begin(), dtypes.end());
  OP_REQUIRES_OK(ctx, GetShapesAttr(ctx->def(), "shapes", &shapes_));
  OP_REQUIRES(ctx, shapes_.empty() || shapes_.size() == dtypes_.size(),
              absl::InvalidArgumentError(absl::StrCat(NodeContext(ctx->def()), "attr 'shapes' has ", shapes_.size(),
                                                      " entries for ", dtypes_.size(), " dtypes")));
  if (FindAttr(ctx->def(), "capacity") != nullptr) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("capacity", &capacity_));
    OP_REQUIRES(ctx, capacity_ >= 1,
                absl::InvalidArgumentError(absl::StrCat(NodeContext(ctx->def()), "attr 'capacity' must be at least 1, got ",
                                                        capacity_)));
  }
}

absl::StatusOr<std::shared_ptr<StagingArea>> StagingOpBase::Area(OpKernelContext* ctx, bool create) const {
  absl::StatusOr<std::shared_ptr<StagingArea>> area;
  if (create) {
    area = ctx->resource_manager()->LookupOrCreate<StagingArea>(
        rn_.container, rn_.name, [this]() -> absl::StatusOr<std::shared_ptr<StagingArea>> {
          return std::make_shared<StagingArea>(rn_.name, dtypes_, capacity_);
        });
  } else {
    area = ctx->resource_manager()->Lookup<StagingArea>(rn_.container, rn_.name);
    if (absl::IsNotFound(area.status())) return EmptyAreaError(rn_.name);
  }
  if (!area.ok()) return area.status();
  absl::Status s = (*area)->CheckDtypes(dtypes_, name());
  if (!s.ok()) return s;
  return area;
}

void StageOp::Compute(OpKernelContext* ctx) {
  auto area = Area(ctx, /*create=*/true);
  OP_REQUIRES_OK(ctx, area.status());
  std::vector<Tensor> values;
  values.reserve(ctx->num_inputs());
  for (int i = 0; i < ctx->num_inputs(); ++i) values.push_back(ctx->input(i));
  auto fence = Fence(ctx);
  OP_REQUIRES_OK(ctx, fence.status());
  OP_REQUIRES_OK(ctx, (*area)->Put(std::move(values), *std::move(fence)));
}

void UnstageOp::Compute(OpKernelContext* ctx) {
  auto area = Area(ctx, /*create=*/false);
  OP_REQUIRES_OK(ctx, area.status());
  auto tuple = (*area)->Take();
  OP_REQUIRES_OK(ctx, tuple.status());
  std::vector<Tensor>& values = tuple->values;
  // Shape inference took the outputs' shapes from `shapes`: a tuple that
  // breaks them is an error here, not a wrong shape later.
  for (size_t i = 0; i < shapes_.size(); ++i) {
    OP_REQUIRES(ctx, shapes_[i].IsCompatibleWith(values[i].shape()),
                absl::InvalidArgumentError(absl::StrCat(NodeContext(def()), "staged value ", i, " has shape ",
                                                        values[i].shape().DebugString(), ", not ",
                                                        shapes_[i].DebugString(), " (attr 'shapes')")));
  }
  if (tuple->before_use) OP_REQUIRES_OK(ctx, tuple->before_use(ctx));
  for (int i = 0; i < ctx->num_outputs(); ++i) ctx->set_output(i, std::move(values[i]));
}

REGISTER_KERNEL_BUILDER(Name("Stage").Device(kDeviceCpu), StageOp);
REGISTER_KERNEL_BUILDER(Name("Unstage").Device(kDeviceCpu), UnstageOp);

}  // namespace sluice
