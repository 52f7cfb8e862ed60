// PartialShape algebra and the common shape functions.
#include "engine/framework/shape_inference.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {

PartialShape PartialShape::FromDims(absl::Span<const int64_t> dims) {
  PartialShape s;
  s.rank_ = static_cast<int>(dims.size());
  s.dims_.assign(dims.begin(), dims.end());
  return s;
}

PartialShape PartialShape::UnknownOfRank(int64_t rank) {
  if (rank < 0 || rank > kMaxTensorRank) return PartialShape();
  PartialShape s;
  s.rank_ = static_cast<int>(rank);
  s.dims_.assign(s.rank_, kUnknownDim);
  return s;
}

absl::StatusOr<PartialShape> PartialShape::WithUnknownDims(int64_t rank) {
  if (rank < 0 || rank > kMaxTensorRank) {
    return absl::InvalidArgumentError(
        absl::StrCat("a shape of rank ", rank, " (a tensor has at most ", kMaxTensorRank, " dimensions)"));
  }
  return UnknownOfRank(rank);
}

absl::StatusOr<PartialShape> PartialShape::Build(absl::Span<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxTensorRank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a shape of ", dims.size(), " dimensions (a tensor has at most ", kMaxTensorRank, ")"));
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < kUnknownDim) {
      return absl::InvalidArgumentError(absl::StrCat("shape has invalid dimension ", dims[i], " at ", i));
    }
  }
  PartialShape s = FromDims(dims);
  absl::Status st = s.CheckBounds();
  if (!st.ok()) return st;
  return s;
}

absl::StatusOr<PartialShape> PartialShape::FromProto(const TensorShapeProto& proto) {
  if (proto.unknown_rank()) {
    if (proto.dim_size() > 0) return absl::InvalidArgumentError("shape has unknown_rank and dims");
    return PartialShape();
  }
  if (proto.dim_size() > kMaxTensorRank) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape has ", proto.dim_size(), " dimensions (a tensor has at most ", kMaxTensorRank, ")"));
  }
  std::vector<int64_t> dims;
  for (const auto& d : proto.dim()) {
    if (d.size() < -1) {
      return absl::InvalidArgumentError(absl::StrCat("shape has invalid dimension ", d.size()));
    }
    dims.push_back(d.size());
  }
  return Build(dims);
}

absl::Status PartialShape::CheckBounds() const {
  if (!rank_known()) return absl::OkStatus();
  if (rank_ > kMaxTensorRank) {
    return absl::InvalidArgumentError(
        absl::StrCat("a shape of rank ", rank_, " (a tensor has at most ", kMaxTensorRank, " dimensions)"));
  }
  int64_t product = 1;  // of the known non-zero dims, at most 2^62 throughout
  for (int i = 0; i < rank_; ++i) {
    const int64_t d = dims_[i];
    if (d == kUnknownDim || d == 0) continue;
    if (d < 0 || product > kMaxTensorElements / d) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", DebugString(), " is too large: the product of its non-zero dimensions exceeds 2^62"));
    }
    product *= d;
  }
  return absl::OkStatus();
}

void PartialShape::AsProto(TensorShapeProto* proto) const {
  proto->Clear();
  if (!rank_known()) {
    proto->set_unknown_rank(true);
    return;
  }
  for (int64_t d : dims_) proto->add_dim()->set_size(d);
}

bool PartialShape::IsFullyDefined() const {
  if (!rank_known()) return false;
  for (int64_t d : dims_) {
    if (d == kUnknownDim) return false;
  }
  return true;
}

bool PartialShape::IsCompatibleWith(const TensorShape& shape) const {
  return IsCompatibleWith(FromShape(shape));
}

bool PartialShape::IsCompatibleWith(const PartialShape& other) const { return Merge(other).ok(); }

absl::StatusOr<PartialShape> PartialShape::Merge(const PartialShape& other) const {
  if (!rank_known()) return other;
  if (!other.rank_known()) return *this;
  if (rank_ != other.rank_) {
    return absl::InvalidArgumentError(
        absl::StrCat("shapes ", DebugString(), " and ", other.DebugString(), " have different ranks"));
  }
  PartialShape out = *this;
  for (int i = 0; i < rank_; ++i) {
    int64_t a = dims_[i], b = other.dims_[i];
    if (a == kUnknownDim) {
      out.dims_[i] = b;
    } else if (b != kUnknownDim && a != b) {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", DebugString(), " and ", other.DebugString(),
                                                     " differ in dimension ", i));
    }
  }
  return out;
}

PartialShape PartialShape::Widen(const PartialShape& other) const {
  if (!rank_known() || !other.rank_known() || rank_ != other.rank_) return Unknown();
  PartialShape out = *this;
  for (int d = 0; d < rank_; ++d) {
    if (other.dims_[d] != dims_[d]) out.dims_[d] = kUnknownDim;
  }
  return out;
}

std::string PartialShape::DebugString() const {
  if (!rank_known()) return "<unknown>";
  std::vector<std::string> parts;
  for (int64_t d : dims_) parts.push_back(d == kUnknownDim ? "?" : absl::StrCat(d));
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

const std::vector<PartialShape>& InferenceContext::input_handle_shapes(int i) const {
  static const std::vector<PartialShape>* none = new std::vector<PartialShape>();
  if (i < 0 || i >= static_cast<int>(input_handle_shapes_.size())) return *none;
  return input_handle_shapes_[i];
}

std::optional<std::vector<int64_t>> IndexValues(const Tensor& t) {
  if (t.dtype() != DT_INT32 && t.dtype() != DT_INT64) return std::nullopt;
  std::vector<int64_t> v(t.NumElements());
  for (int64_t k = 0; k < t.NumElements(); ++k) {
    v[k] = t.dtype() == DT_INT32 ? t.data<int32_t>()[k] : t.data<int64_t>()[k];
  }
  return v;
}

std::optional<std::vector<int64_t>> InferenceContext::input_index_values(int i) const {
  const Tensor* t = input_tensor(i);
  if (t == nullptr) return std::nullopt;
  return IndexValues(*t);
}

const PartialShape& InferenceContext::input_as_shape(int i) const {
  static const PartialShape* unknown = new PartialShape(PartialShape::Unknown());
  if (i < 0 || i >= static_cast<int>(inputs_as_shapes_.size())) return *unknown;
  return inputs_as_shapes_[i];
}

InferenceContext::InferenceContext(const NodeDef* node_def, const OpDef* op_def,
                                   std::vector<PartialShape> input_shapes,
                                   std::vector<const Tensor*> input_tensors, int num_outputs)
    : node_def_(node_def),
      op_def_(op_def),
      inputs_(std::move(input_shapes)),
      input_tensors_(std::move(input_tensors)),
      outputs_(num_outputs),
      output_handle_shapes_(num_outputs) {
  input_tensors_.resize(inputs_.size(), nullptr);
}

absl::Status InferenceContext::WithRank(int input, int rank, PartialShape* out) const {
  const PartialShape& s = inputs_[input];
  if (!s.rank_known()) {
    *out = PartialShape::UnknownOfRank(rank);
    return absl::OkStatus();
  }
  if (s.rank() != rank) {
    return Error(absl::StrCat("input ", input, " must have rank ", rank, " but has shape ", s.DebugString()));
  }
  *out = s;
  return absl::OkStatus();
}

absl::Status InferenceContext::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(NodeContext(*node_def_), message));
}

namespace shape_fns {

absl::Status Unknown(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialShape::Unknown());
  return absl::OkStatus();
}

absl::Status Unchanged(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) {
    c->set_output(i, c->input(0));
    c->set_output_handle_shapes(i, c->input_handle_shapes(0));
  }
  return absl::OkStatus();
}

absl::Status Scalar(InferenceContext* c) {
  c->set_output(0, PartialShape::Scalar());
  return absl::OkStatus();
}

absl::StatusOr<PartialShape> Broadcast(const PartialShape& a, const PartialShape& b) {
  if (!a.rank_known() || !b.rank_known()) return PartialShape::Unknown();
  int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a.dim(ia) : 1;
    int64_t db = ib >= 0 ? b.dim(ib) : 1;
    if (da == 1) {
      dims[i] = db;
    } else if (db == 1) {
      dims[i] = da;
    } else if (da == kUnknownDim || db == kUnknownDim) {
      dims[i] = da == kUnknownDim ? db : da;
    } else if (da != db) {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", a.DebugString(), " and ", b.DebugString(),
                                                     " are not broadcast-compatible"));
    } else {
      dims[i] = da;
    }
  }
  return PartialShape::FromDims(dims);
}

absl::Status BroadcastBinary(InferenceContext* c) {
  auto out = Broadcast(c->input(0), c->input(1));
  if (!out.ok()) return c->Error(out.status().message());
  c->set_output(0, *out);
  return absl::OkStatus();
}

absl::Status ShapeFromInput(InferenceContext* c, int input) {
  // A known matrix (static shape values follow small ones) is no shape: the
  // kernel rejects it, so nothing is inferred from its values.
  const Tensor* t = c->input_tensor(input);
  auto v = t != nullptr && t->dims() > 1 ? std::nullopt : c->input_index_values(input);
  if (v) {
    for (size_t i = 0; i < v->size(); ++i) {
      if ((*v)[i] < -1) return c->Error(absl::StrCat("dimension ", i, " is negative (", (*v)[i], ")"));
    }
    c->set_output(0, PartialShape::FromDims(*v));
    return absl::OkStatus();
  }
  if (c->input_as_shape(input).rank_known()) {  // a Shape(x) computed at run time: x's partial shape
    c->set_output(0, c->input_as_shape(input));
    return absl::OkStatus();
  }
  const PartialShape& s = c->input(input);
  if (s.rank_known() && s.rank() == 1 && s.dim(0) >= 0) {
    // The length of the shape vector is the output's rank: a vector of 2^31
    // (a Placeholder's declared dim) names no shape a tensor can have.
    auto out = PartialShape::WithUnknownDims(s.dim(0));
    if (!out.ok()) return c->Error(absl::StrCat("input ", input, " of shape ", s.DebugString(), " gives ", out.status().message()));
    c->set_output(0, *out);
  } else {
    c->set_output(0, PartialShape::Unknown());
  }
  return absl::OkStatus();
}

absl::Status FromShapeAttr(InferenceContext* c) {
  TensorShapeProto proto;
  absl::Status s = c->GetAttr("shape", &proto);
  if (!s.ok()) return s;
  auto shape = PartialShape::FromProto(proto);
  if (!shape.ok()) return c->Error(absl::StrCat("attr 'shape': ", shape.status().message()));
  c->set_output(0, *shape);
  return absl::OkStatus();
}

}  // namespace shape_fns
}  // namespace sluice
