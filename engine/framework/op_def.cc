// OpDef spec parsing, attr validation and the op registry.
#include "engine/framework/op_def.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/platform/logging.h"
#include "google/protobuf/text_format.h"

namespace sluice {

const AttrDef* OpDef::FindAttr(absl::string_view attr_name) const {
  for (const AttrDef& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

namespace {

bool IsValidIdentifier(absl::string_view s) {
  if (s.empty() || !(absl::ascii_isalpha(s[0]) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(absl::ascii_isalnum(c) || c == '_')) return false;
  }
  return true;
}

absl::Status SpecError(absl::string_view op, absl::string_view spec, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("op ", op, ": bad spec '", spec, "': ", why));
}

absl::StatusOr<ArgDef> ParseArgSpec(absl::string_view op, absl::string_view spec) {
  std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  ArgDef arg;
  arg.name = std::string(absl::StripAsciiWhitespace(parts.first));
  absl::string_view type = absl::StripAsciiWhitespace(parts.second);
  if (!IsValidIdentifier(arg.name)) return SpecError(op, spec, "bad argument name");
  if (absl::ConsumePrefix(&type, "Ref(")) {
    if (!absl::ConsumeSuffix(&type, ")")) return SpecError(op, spec, "unterminated Ref(");
    arg.is_ref = true;
    type = absl::StripAsciiWhitespace(type);
  }
  size_t star = type.find('*');
  if (star != absl::string_view::npos) {
    arg.number_attr = std::string(absl::StripAsciiWhitespace(type.substr(0, star)));
    type = absl::StripAsciiWhitespace(type.substr(star + 1));
    if (!IsValidIdentifier(arg.number_attr)) return SpecError(op, spec, "bad number attr");
  }
  if (!IsValidIdentifier(type)) return SpecError(op, spec, "bad type");
  auto fixed = DataTypeFromString(type);
  if (fixed.ok()) {
    arg.type = *fixed;
  } else {
    arg.type_attr = std::string(type);  // resolved against the attrs in Finalize
  }
  return arg;
}

absl::StatusOr<AttrValue> ParseDefault(absl::string_view type, absl::string_view text) {
  AttrValue v;
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("bad default '", text, "' for ", type));
  };
  if (type == "string") {
    if (text.size() < 2 || (text.front() != '\'' && text.front() != '"') || text.back() != text.front()) {
      return bad();
    }
    v.set_s(std::string(text.substr(1, text.size() - 2)));
  } else if (type == "int") {
    int64_t i;
    if (!absl::SimpleAtoi(text, &i)) return bad();
    v.set_i(i);
  } else if (type == "float") {
    float f;
    if (!absl::SimpleAtof(text, &f)) return bad();
    v.set_f(f);
  } else if (type == "bool") {
    if (text == "true") v.set_b(true);
    else if (text == "false") v.set_b(false);
    else return bad();
  } else if (type == "type") {
    absl::string_view name = text;
    absl::ConsumePrefix(&name, "DT_");
    auto dt = DataTypeFromString(absl::AsciiStrToLower(name));
    if (!dt.ok()) return bad();
    v.set_type(*dt);
  } else if (type == "shape") {
    if (text.size() < 2 || text.front() != '{' || text.back() != '}') return bad();
    if (!google::protobuf::TextFormat::ParseFromString(std::string(text.substr(1, text.size() - 2)),
                                                       v.mutable_shape())) {
      return bad();
    }
  } else if (absl::StartsWith(type, "list(")) {
    if (text.size() < 2 || text.front() != '[' || text.back() != ']') return bad();
    absl::string_view body = absl::StripAsciiWhitespace(text.substr(1, text.size() - 2));
    AttrValue::ListValue* list = v.mutable_list();
    if (!body.empty()) {
      absl::string_view elem_type = type.substr(5, type.size() - 6);
      for (absl::string_view item : absl::StrSplit(body, ',')) {
        auto elem = ParseDefault(elem_type, absl::StripAsciiWhitespace(item));
        if (!elem.ok()) return elem.status();
        if (elem_type == "int") list->add_i(elem->i());
        else if (elem_type == "string") list->add_s(elem->s());
        else if (elem_type == "float") list->add_f(elem->f());
        else if (elem_type == "type") list->add_type(elem->type());
        else if (elem_type == "bool") list->add_b(elem->b());
        else return bad();
      }
    }
  } else {
    return bad();
  }
  return v;
}

absl::StatusOr<AttrDef> ParseAttrSpec(absl::string_view op, absl::string_view spec) {
  std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  AttrDef attr;
  attr.name = std::string(absl::StripAsciiWhitespace(parts.first));
  if (!IsValidIdentifier(attr.name)) return SpecError(op, spec, "bad attr name");
  absl::string_view rest = absl::StripAsciiWhitespace(parts.second);
  absl::string_view default_text;
  bool has_default = false;
  size_t eq = rest.find('=');
  if (eq != absl::string_view::npos && rest.substr(0, eq).find(">") == absl::string_view::npos) {
    has_default = true;
    default_text = absl::StripAsciiWhitespace(rest.substr(eq + 1));
    rest = absl::StripAsciiWhitespace(rest.substr(0, eq));
  } else if (eq != absl::string_view::npos) {
    // "int >= 2 = 3" : the first '=' belongs to ">=".
    size_t eq2 = rest.find('=', eq + 1);
    if (eq2 != absl::string_view::npos) {
      has_default = true;
      default_text = absl::StripAsciiWhitespace(rest.substr(eq2 + 1));
      rest = absl::StripAsciiWhitespace(rest.substr(0, eq2));
    }
  }
  if (has_default && default_text.empty()) return SpecError(op, spec, "'=' without a default value");
  size_t ge = rest.find(">=");
  if (ge != absl::string_view::npos) {
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(rest.substr(ge + 2)), &attr.minimum)) {
      return SpecError(op, spec, "bad minimum");
    }
    attr.has_minimum = true;
    rest = absl::StripAsciiWhitespace(rest.substr(0, ge));
  }
  auto parse_allowed = [&](absl::string_view braces) -> absl::Status {
    absl::string_view body = braces.substr(1, braces.size() - 2);
    for (absl::string_view t : absl::StrSplit(body, ',')) {
      auto dt = DataTypeFromString(absl::StripAsciiWhitespace(t));
      if (!dt.ok()) return SpecError(op, spec, dt.status().message());
      attr.allowed_types.push_back(*dt);
    }
    return absl::OkStatus();
  };
  if (!rest.empty() && rest.front() == '{') {
    if (rest.back() != '}') return SpecError(op, spec, "unterminated {");
    absl::Status s = parse_allowed(rest);
    if (!s.ok()) return s;
    attr.type = "type";
  } else if (absl::StartsWith(rest, "list({")) {
    if (!absl::EndsWith(rest, "})")) return SpecError(op, spec, "unterminated list({");
    absl::Status s = parse_allowed(rest.substr(5, rest.size() - 6));
    if (!s.ok()) return s;
    attr.type = "list(type)";
  } else {
    static const char* kTypes[] = {"string", "int", "float", "bool", "type", "shape",
                                   "tensor", "func", "list(string)", "list(int)",
                                   "list(float)", "list(bool)", "list(type)",
                                   "list(shape)", "list(tensor)"};
    if (std::find(std::begin(kTypes), std::end(kTypes), rest) == std::end(kTypes)) {
      return SpecError(op, spec, absl::StrCat("unknown attr type '", rest, "'"));
    }
    attr.type = std::string(rest);
  }
  if (attr.has_minimum && attr.type != "int" && !absl::StartsWith(attr.type, "list(")) {
    return SpecError(op, spec, absl::StrCat("a minimum needs an int or list attr, not ", attr.type));
  }
  if (has_default) {
    auto v = ParseDefault(attr.type, default_text);
    if (!v.ok()) return SpecError(op, spec, v.status().message());
    // The default must satisfy the attr's own allowed types and minimum:
    // nodes get it without further validation.
    absl::Status s = ValidateAttrValue(*v, attr);
    if (!s.ok()) return SpecError(op, spec, absl::StrCat("default: ", s.message()));
    attr.default_value = *v;
  }
  return attr;
}

}  // namespace

std::string AttrValueKindName(const AttrValue& value) {
  switch (value.value_case()) {
    case AttrValue::kS: return "string";
    case AttrValue::kI: return "int";
    case AttrValue::kF: return "float";
    case AttrValue::kB: return "bool";
    case AttrValue::kType: return "type";
    case AttrValue::kShape: return "shape";
    case AttrValue::kTensor: return "tensor";
    case AttrValue::kFunc: return "func";
    case AttrValue::kPlaceholder: return "placeholder";
    case AttrValue::kList: {
      const auto& l = value.list();
      if (l.s_size()) return "list(string)";
      if (l.i_size()) return "list(int)";
      if (l.f_size()) return "list(float)";
      if (l.b_size()) return "list(bool)";
      if (l.type_size()) return "list(type)";
      if (l.shape_size()) return "list(shape)";
      if (l.tensor_size()) return "list(tensor)";
      if (l.func_size()) return "list(func)";
      return "list()";  // an empty list matches every list type
    }
    case AttrValue::VALUE_NOT_SET: return "empty";
  }
  return "unknown";
}

absl::Status ValidateAttrValue(const AttrValue& value, const AttrDef& def) {
  std::string kind = AttrValueKindName(value);
  bool matches = kind == def.type || (kind == "list()" && absl::StartsWith(def.type, "list("));
  if (!matches) {
    return absl::InvalidArgumentError(absl::StrCat("attr '", def.name, "' expects a value of type ",
                                                   def.type, " but got ", kind));
  }
  // Any type an edge may carry: resource handles too (an Enter, Switch or
  // Identity forwarding a TensorArray's handle through a loop has T=resource).
  auto check_type = [&](DataType dt) -> absl::Status {
    if (!DataTypeCanFlow(dt)) {
      return absl::InvalidArgumentError(absl::StrCat("attr '", def.name, "' has unsupported type ",
                                                     DataTypeString(dt)));
    }
    if (!def.allowed_types.empty() &&
        std::find(def.allowed_types.begin(), def.allowed_types.end(), dt) == def.allowed_types.end()) {
      std::vector<std::string> names;
      for (DataType a : def.allowed_types) names.push_back(DataTypeString(a));
      return absl::InvalidArgumentError(absl::StrCat("attr '", def.name, "' is ", DataTypeString(dt),
                                                     ", not one of the allowed types {",
                                                     absl::StrJoin(names, ", "), "}"));
    }
    return absl::OkStatus();
  };
  if (def.type == "type") {
    absl::Status s = check_type(value.type());
    if (!s.ok()) return s;
  } else if (def.type == "list(type)") {
    for (int t : value.list().type()) {
      absl::Status s = check_type(static_cast<DataType>(t));
      if (!s.ok()) return s;
    }
  }
  if (def.has_minimum) {
    int64_t actual = 0;
    if (def.type == "int") {
      actual = value.i();
    } else {
      const auto& l = value.list();
      actual = l.s_size() + l.i_size() + l.f_size() + l.b_size() + l.type_size() + l.shape_size() +
               l.tensor_size() + l.func_size();
    }
    if (actual < def.minimum) {
      return absl::InvalidArgumentError(absl::StrCat("attr '", def.name, "' is ", actual,
                                                     ", below its minimum of ", def.minimum));
    }
  }
  return absl::OkStatus();
}

OpDefBuilder::OpDefBuilder(std::string op_name) : name_(std::move(op_name)) {}
OpDefBuilder& OpDefBuilder::Input(std::string spec) { inputs_.push_back(std::move(spec)); return *this; }
OpDefBuilder& OpDefBuilder::Output(std::string spec) { outputs_.push_back(std::move(spec)); return *this; }
OpDefBuilder& OpDefBuilder::Attr(std::string spec) { attrs_.push_back(std::move(spec)); return *this; }
OpDefBuilder& OpDefBuilder::SetIsStateful() { is_stateful_ = true; return *this; }
OpDefBuilder& OpDefBuilder::SetSluiceOnly() { sluice_only_ = true; return *this; }
OpDefBuilder& OpDefBuilder::SetAllowsUninitializedInput() {
  allows_uninitialized_input_ = true;
  return *this;
}
OpDefBuilder& OpDefBuilder::SetShapeFn(ShapeFn fn) { shape_fn_ = std::move(fn); return *this; }
OpDefBuilder& OpDefBuilder::SetGradient(GradientFn fn) { gradient_ = std::move(fn); return *this; }
OpDefBuilder& OpDefBuilder::SetNotDifferentiable() { not_differentiable_ = true; return *this; }

absl::StatusOr<OpDef> OpDefBuilder::Finalize() const {
  OpDef def;
  def.name = name_;
  def.is_stateful = is_stateful_;
  def.sluice_only = sluice_only_;
  def.allows_uninitialized_input = allows_uninitialized_input_;
  def.shape_fn = shape_fn_;
  def.gradient = gradient_;
  def.not_differentiable = not_differentiable_;
  if (gradient_ && not_differentiable_) {
    return absl::InvalidArgumentError(absl::StrCat("op ", name_, ": has a gradient and is marked not differentiable"));
  }
  for (const std::string& spec : attrs_) {
    auto a = ParseAttrSpec(name_, spec);
    if (!a.ok()) return a.status();
    if (def.FindAttr(a->name) != nullptr) return SpecError(name_, spec, "duplicate attr");
    def.attrs.push_back(std::move(a).value());
  }
  auto resolve = [&](const std::string& spec, std::vector<ArgDef>* out) -> absl::Status {
    auto arg = ParseArgSpec(name_, spec);
    if (!arg.ok()) return arg.status();
    if (!arg->type_attr.empty()) {
      const AttrDef* a = def.FindAttr(arg->type_attr);
      if (a == nullptr) return SpecError(name_, spec, "type attr is not declared");
      if (a->type == "list(type)") {
        if (!arg->number_attr.empty()) return SpecError(name_, spec, "N * list(type)");
        arg->type_list_attr = arg->type_attr;
        arg->type_attr.clear();
      } else if (a->type != "type") {
        return SpecError(name_, spec, "type attr must have type 'type' or 'list(type)'");
      }
    }
    if (!arg->number_attr.empty()) {
      const AttrDef* n = def.FindAttr(arg->number_attr);
      if (n == nullptr || n->type != "int") return SpecError(name_, spec, "number attr must be an int attr");
    }
    out->push_back(std::move(arg).value());
    return absl::OkStatus();
  };
  for (const std::string& spec : inputs_) {
    absl::Status s = resolve(spec, &def.inputs);
    if (!s.ok()) return s;
  }
  for (const std::string& spec : outputs_) {
    absl::Status s = resolve(spec, &def.outputs);
    if (!s.ok()) return s;
  }
  return def;
}

OpRegistry* OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry;
  return registry;
}

absl::Status OpRegistry::Register(OpDef op_def) {
  if (ops_.count(op_def.name)) {
    return absl::AlreadyExistsError(absl::StrCat("op ", op_def.name, " is registered twice"));
  }
  std::string name = op_def.name;
  ops_.emplace(std::move(name), std::make_unique<OpDef>(std::move(op_def)));
  return absl::OkStatus();
}

const OpDef* OpRegistry::LookUp(absl::string_view op_name) const {
  auto it = ops_.find(op_name);
  return it == ops_.end() ? nullptr : it->second.get();
}

absl::StatusOr<const OpDef*> OpRegistry::LookUpOrError(absl::string_view op_name) const {
  if (const OpDef* def = LookUp(op_name)) return def;
  std::string suggestion = ClosestMatch(op_name, ListOpNames());
  return absl::NotFoundError(absl::StrCat(
      "unknown op '", op_name, "'",
      suggestion.empty() ? "" : absl::StrCat(" (did you mean '", suggestion, "'?)")));
}

std::vector<std::string> OpRegistry::ListOpNames() const {
  std::vector<std::string> names;
  for (const auto& [name, def] : ops_) names.push_back(name);
  return names;
}

namespace register_op {
OpDefBuilderReceiver::OpDefBuilderReceiver(const OpDefBuilder& builder) {
  auto def = builder.Finalize();
  CHECK(def.ok()) << def.status().ToString();
  absl::Status s = OpRegistry::Global()->Register(std::move(def).value());
  CHECK(s.ok()) << s.ToString();
}
}  // namespace register_op

std::string ClosestMatch(absl::string_view word, const std::vector<std::string>& candidates) {
  auto distance = [](absl::string_view a, absl::string_view b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t sub = prev[j - 1] + (absl::ascii_tolower(a[i - 1]) == absl::ascii_tolower(b[j - 1]) ? 0 : 1);
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      }
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    size_t d = distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

}  // namespace sluice
