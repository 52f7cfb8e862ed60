// NodeDef parsing, attr validation and typed attr access.
#include "engine/framework/node_def_util.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace sluice {

std::string TensorId::ToString() const {
  if (IsControl()) return absl::StrCat("^", node);
  if (index == 0) return node;
  return absl::StrCat(node, ":", index);
}

absl::StatusOr<TensorId> ParseTensorName(absl::string_view name) {
  TensorId id;
  absl::string_view rest = name;
  if (!rest.empty() && rest[0] == '^') {
    rest.remove_prefix(1);
    if (rest.empty() || rest.find(':') != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("malformed control input '", name, "'"));
    }
    id.node = std::string(rest);
    id.index = kControlSlot;
    return id;
  }
  size_t colon = rest.rfind(':');
  if (colon == absl::string_view::npos) {
    if (rest.empty()) return absl::InvalidArgumentError("empty input name");
    id.node = std::string(rest);
    return id;
  }
  absl::string_view port = rest.substr(colon + 1);
  int index;
  if (colon == 0 || port.empty() || !absl::ascii_isdigit(port[0]) || !absl::SimpleAtoi(port, &index) ||
      index < 0) {
    return absl::InvalidArgumentError(absl::StrCat("malformed input '", name,
                                                   "': expected 'node', 'node:port' or '^node'"));
  }
  id.node = std::string(rest.substr(0, colon));
  id.index = index;
  return id;
}

absl::Status ValidateNodeName(absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("invalid node name '", name, "': ", why));
  };
  if (name.empty()) return bad("empty");
  char c0 = name[0];
  if (!(absl::ascii_isalnum(c0) || c0 == '.')) return bad("must start with a letter, digit or '.'");
  for (char c : name) {
    if (!(absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '/' || c == '>' || c == '-')) {
      return bad(absl::StrCat("character '", std::string(1, c), "' is not allowed"));
    }
  }
  return absl::OkStatus();
}

namespace {

// Resource handles are not values: an op whose type attr admits any type may
// take them only if it just forwards its input (TensorFlow's v1 loops pass a
// TensorArray's handle through Enter, Switch, Merge, NextIteration, Exit and
// Identity). Kernels of other ops copy elements by size or fill them with
// zero bytes, which a handle is not.
absl::Status CheckResourceTypeAttr(const OpDef& op_def, const AttrDef& def, const AttrValue& value) {
  if (!def.allowed_types.empty()) return absl::OkStatus();  // a declared list says itself
  bool resource = false;
  if (def.type == "type") resource = value.type() == DT_RESOURCE;
  if (def.type == "list(type)") {
    for (int t : value.list().type()) resource |= t == DT_RESOURCE;
  }
  if (!resource) return absl::OkStatus();
  static const char* const kForwarding[] = {"Identity", "IdentityN", "Enter",     "Exit",  "Switch",
                                            "Merge",    "NextIteration", "Placeholder", "_Send", "_Recv"};
  for (const char* op : kForwarding) {
    if (op_def.name == op) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("attr '", def.name, "' is resource, but op ", op_def.name,
                                                 " takes no resource handles (only ops that forward a tensor do)"));
}

}  // namespace

std::string NodeContext(const NodeDef& node_def) {
  return absl::StrCat("node '", node_def.name(), "' (op ", node_def.op(), "): ");
}

absl::Status AddDefaultsAndValidateAttrs(const OpDef& op_def, NodeDef* node_def) {
  auto* attrs = node_def->mutable_attr();
  for (const auto& [name, value] : *attrs) {
    // Attrs starting with '_' are internal annotations (e.g. _class) and allowed.
    if (!name.empty() && name[0] == '_') continue;
    if (op_def.FindAttr(name) == nullptr) {
      std::vector<std::string> names;
      for (const AttrDef& a : op_def.attrs) names.push_back(a.name);
      std::string suggestion = ClosestMatch(name, names);
      return absl::InvalidArgumentError(absl::StrCat(
          NodeContext(*node_def), "unknown attr '", name, "'",
          suggestion.empty() ? "" : absl::StrCat(" (did you mean '", suggestion, "'?)")));
    }
  }
  for (const AttrDef& def : op_def.attrs) {
    auto it = attrs->find(def.name);
    if (it == attrs->end()) {
      if (!def.default_value.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeContext(*node_def), "missing attr '", def.name, "' of type ", def.type));
      }
      (*attrs)[def.name] = *def.default_value;
      continue;
    }
    absl::Status s = ValidateAttrValue(it->second, def);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(NodeContext(*node_def), s.message()));
    s = CheckResourceTypeAttr(op_def, def, it->second);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(NodeContext(*node_def), s.message()));
  }
  return absl::OkStatus();
}

namespace {

// Appends the types of `arg`; `types` holds at most kMaxNodeArgs entries
// after (a few bytes of attr must not size a huge vector per node).
absl::Status AddArgTypes(const NodeDef& node_def, const ArgDef& arg, DataTypeVector* types) {
  int64_t repeats = 1;
  const int64_t room = kMaxNodeArgs - static_cast<int64_t>(types->size());
  if (!arg.number_attr.empty()) {
    absl::Status s = GetNodeAttr(node_def, arg.number_attr, &repeats);
    if (!s.ok()) return s;
    if (repeats < 0 || repeats > room) {
      return absl::InvalidArgumentError(absl::StrCat(NodeContext(node_def), "attr '", arg.number_attr, "' = ", repeats,
                                                     " is out of range (a node has at most ", kMaxNodeArgs,
                                                     " inputs and as many outputs)"));
    }
  }
  if (!arg.type_list_attr.empty()) {
    std::vector<DataType> list;
    absl::Status s = GetNodeAttr(node_def, arg.type_list_attr, &list);
    if (!s.ok()) return s;
    if (static_cast<int64_t>(list.size()) > room) {
      return absl::InvalidArgumentError(absl::StrCat(NodeContext(node_def), "attr '", arg.type_list_attr, "' lists ",
                                                     list.size(), " types (a node has at most ", kMaxNodeArgs,
                                                     " inputs and as many outputs)"));
    }
    for (DataType t : list) types->push_back(arg.is_ref ? MakeRefType(t) : t);
    return absl::OkStatus();
  }
  DataType t = arg.type;
  if (!arg.type_attr.empty()) {
    absl::Status s = GetNodeAttr(node_def, arg.type_attr, &t);
    if (!s.ok()) return s;
  }
  if (arg.is_ref) t = MakeRefType(t);
  for (int64_t i = 0; i < repeats; ++i) types->push_back(t);
  return absl::OkStatus();
}

}  // namespace

absl::Status InOutTypesForNode(const NodeDef& node_def, const OpDef& op_def, DataTypeVector* inputs,
                               DataTypeVector* outputs) {
  inputs->clear();
  outputs->clear();
  for (const ArgDef& arg : op_def.inputs) {
    absl::Status s = AddArgTypes(node_def, arg, inputs);
    if (!s.ok()) return s;
  }
  for (const ArgDef& arg : op_def.outputs) {
    absl::Status s = AddArgTypes(node_def, arg, outputs);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

const AttrValue* FindAttr(const NodeDef& def, absl::string_view name) {
  auto it = def.attr().find(std::string(name));
  return it == def.attr().end() ? nullptr : &it->second;
}

namespace {

absl::StatusOr<const AttrValue*> GetAttrOfKind(const NodeDef& def, absl::string_view name,
                                               AttrValue::ValueCase kind, const char* kind_name) {
  const AttrValue* v = FindAttr(def, name);
  if (v == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(NodeContext(def), "missing attr '", name, "'"));
  }
  if (v->value_case() != kind) {
    return absl::InvalidArgumentError(absl::StrCat(NodeContext(def), "attr '", name, "' should be ",
                                                   kind_name, " but is ", AttrValueKindName(*v)));
  }
  return v;
}

}  // namespace

#define SLUICE_GET_ATTR_(CPP, KIND, KIND_NAME, EXPR)                          \
  absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, CPP* value) { \
    auto v = GetAttrOfKind(def, name, AttrValue::KIND, KIND_NAME);             \
    if (!v.ok()) return v.status();                                            \
    const AttrValue& attr = **v;                                               \
    EXPR;                                                                      \
    return absl::OkStatus();                                                   \
  }
SLUICE_GET_ATTR_(std::string, kS, "string", *value = attr.s())
SLUICE_GET_ATTR_(int64_t, kI, "int", *value = attr.i())
SLUICE_GET_ATTR_(float, kF, "float", *value = attr.f())
SLUICE_GET_ATTR_(bool, kB, "bool", *value = attr.b())
SLUICE_GET_ATTR_(DataType, kType, "type", *value = attr.type())
SLUICE_GET_ATTR_(TensorShapeProto, kShape, "shape", *value = attr.shape())
SLUICE_GET_ATTR_(TensorProto, kTensor, "tensor", *value = attr.tensor())
SLUICE_GET_ATTR_(std::vector<int64_t>, kList, "list(int)",
                 value->assign(attr.list().i().begin(), attr.list().i().end()))
SLUICE_GET_ATTR_(std::vector<std::string>, kList, "list(string)",
                 value->assign(attr.list().s().begin(), attr.list().s().end()))
#undef SLUICE_GET_ATTR_

absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, int32_t* value) {
  int64_t v;
  absl::Status s = GetNodeAttr(def, name, &v);
  if (!s.ok()) return s;
  if (v < INT32_MIN || v > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(NodeContext(def), "attr '", name, "' = ", v, " does not fit in int32"));
  }
  *value = static_cast<int32_t>(v);
  return absl::OkStatus();
}

absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, std::vector<DataType>* value) {
  auto v = GetAttrOfKind(def, name, AttrValue::kList, "list(type)");
  if (!v.ok()) return v.status();
  value->clear();
  for (int t : (*v)->list().type()) value->push_back(static_cast<DataType>(t));
  return absl::OkStatus();
}

AttrValue MakeAttr(absl::string_view s) { AttrValue v; v.set_s(std::string(s)); return v; }
AttrValue MakeAttr(const char* s) { return MakeAttr(absl::string_view(s)); }
AttrValue MakeAttr(int64_t i) { AttrValue v; v.set_i(i); return v; }
AttrValue MakeAttr(int i) { return MakeAttr(static_cast<int64_t>(i)); }
AttrValue MakeAttr(float f) { AttrValue v; v.set_f(f); return v; }
AttrValue MakeAttr(double f) { return MakeAttr(static_cast<float>(f)); }
AttrValue MakeAttr(bool b) { AttrValue v; v.set_b(b); return v; }
AttrValue MakeAttr(DataType t) { AttrValue v; v.set_type(t); return v; }
AttrValue MakeAttr(const TensorShape& shape) { AttrValue v; shape.AsProto(v.mutable_shape()); return v; }
AttrValue MakeAttr(const TensorShapeProto& shape) { AttrValue v; *v.mutable_shape() = shape; return v; }
AttrValue MakeAttr(const Tensor& tensor) { AttrValue v; tensor.AsProtoTensorContent(v.mutable_tensor()); return v; }
AttrValue MakeAttr(const std::vector<int64_t>& list) {
  AttrValue v;
  auto* l = v.mutable_list();
  for (int64_t i : list) l->add_i(i);
  return v;
}
AttrValue MakeAttr(const std::vector<DataType>& list) {
  AttrValue v;
  auto* l = v.mutable_list();
  for (DataType t : list) l->add_type(t);
  return v;
}
AttrValue MakeAttr(const std::vector<std::string>& list) {
  AttrValue v;
  auto* l = v.mutable_list();
  for (const std::string& s : list) l->add_s(s);
  return v;
}

}  // namespace sluice
