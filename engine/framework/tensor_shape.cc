// TensorShape: construction, validation and proto conversion.
#include "engine/framework/tensor_shape.h"

#include "engine/platform/logging.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {

TensorShape::TensorShape(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) AddDim(d);
}

TensorShape::TensorShape(absl::Span<const int64_t> dims) {
  for (int64_t d : dims) AddDim(d);
}

absl::StatusOr<TensorShape> TensorShape::Build(absl::Span<const int64_t> dims) {
  TensorShape shape;
  for (int64_t d : dims) {
    absl::Status s = shape.TryAddDim(d);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid shape [", absl::StrJoin(dims, ","), "]: ", s.message()));
    }
  }
  return shape;
}

absl::StatusOr<TensorShape> TensorShape::FromProto(const TensorShapeProto& proto) {
  if (proto.unknown_rank()) {
    return absl::InvalidArgumentError("shape has unknown rank where a full shape is required");
  }
  absl::InlinedVector<int64_t, 4> dims;
  for (const auto& d : proto.dim()) dims.push_back(d.size());
  return Build(dims);
}

void TensorShape::AsProto(TensorShapeProto* proto) const {
  proto->Clear();
  for (int64_t d : dims_) proto->add_dim()->set_size(d);
}

absl::Status TensorShape::TryAddDim(int64_t size) {
  if (dims_.size() >= static_cast<size_t>(kMaxTensorRank)) {
    return absl::InvalidArgumentError(absl::StrCat("more than ", kMaxTensorRank, " dimensions"));
  }
  if (size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("dimension ", dims_.size(), " is negative (", size, ")"));
  }
  // Checked even after a 0 dim (see the header): nonzero_product_ <= 2^62, so
  // the division below is exact and nothing here overflows.
  if (size > 0 && nonzero_product_ > kMaxTensorElements / size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "size overflows: the product of the non-zero dimensions exceeds 2^62 at dimension ", dims_.size(), " (",
        size, ")"));
  }
  dims_.push_back(size);
  if (size > 0) nonzero_product_ *= size;
  num_elements_ *= size;
  return absl::OkStatus();
}

void TensorShape::AddDim(int64_t size) {
  absl::Status s = TryAddDim(size);
  CHECK(s.ok()) << s.ToString();
}

std::string TensorShape::DebugString() const {
  return absl::StrCat("[", absl::StrJoin(dims_, ","), "]");
}

}  // namespace sluice
