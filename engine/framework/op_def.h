// OpDef: what an op is (inputs, outputs, attrs with defaults and type
// constraints, statefulness, shape function), declared once with REGISTER_OP
// in TensorFlow's spec syntax:
//
//   REGISTER_OP("MatMul")
//       .Input("a: T").Input("b: T").Output("product: T")
//       .Attr("transpose_a: bool = false").Attr("T: {float, double}")
//       .SetShapeFn(shape_fns::MatMul);
//
// Arg specs: "name: float" (fixed type), "name: T" (type attr), "name: N * T"
// (N inputs of type T), "name: Tlist" (a list(type) attr), "name: Ref(T)".
// Attr specs: "name: type[ = default]" with types string, int, float, bool,
// type, shape, tensor, func, list(...), "{float, int32}" (a type attr with
// allowed values) and "int >= 1" minimums.
// Thread safety: the registry is written during static initialization and read
// concurrently afterwards.
#ifndef SLUICE_ENGINE_FRAMEWORK_OP_DEF_H_
#define SLUICE_ENGINE_FRAMEWORK_OP_DEF_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/framework/attr_value.pb.h"
#include "engine/framework/types.h"

namespace sluice {

class InferenceContext;
using ShapeFn = std::function<absl::Status(InferenceContext*)>;
// Gradient functions add the backward nodes of one op to a graph; the builder
// they receive is defined in engine/graph/gradients.h.
class GradientBuilder;
using GradientFn = std::function<absl::Status(GradientBuilder*)>;

struct ArgDef {
  std::string name;
  DataType type = DT_INVALID;  // a fixed type, or DT_INVALID when from an attr
  std::string type_attr;       // "T" in "x: T"
  std::string number_attr;     // "N" in "x: N * T"
  std::string type_list_attr;  // "Tlist" in "x: Tlist"
  bool is_ref = false;
};

struct AttrDef {
  std::string name;
  std::string type;  // "int", "type", "list(type)", ...
  std::optional<AttrValue> default_value;
  std::vector<DataType> allowed_types;  // empty: any supported type
  bool has_minimum = false;
  int64_t minimum = 0;
};

struct OpDef {
  std::string name;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  std::vector<AttrDef> attrs;
  bool is_stateful = false;
  // Ref inputs of this op may be uninitialized variables (Assign).
  bool allows_uninitialized_input = false;
  ShapeFn shape_fn;
  // How to differentiate the op: a gradient function, or explicitly none
  // (`not_differentiable`: integer outputs, shapes, comparisons...). An op with
  // neither cannot appear between a loss and a variable being differentiated.
  GradientFn gradient;
  bool not_differentiable = false;
  // TensorFlow has no op of this name: one of Sluice's own (ImageToFloat,
  // LstmGates, ...). A graph exported for TensorFlow must not hold it.
  bool sluice_only = false;

  const AttrDef* FindAttr(absl::string_view attr_name) const;
};

// Checks that `value` has the kind `def.type` names and satisfies the def's
// allowed types and minimum. The message names the attr but not the node.
absl::Status ValidateAttrValue(const AttrValue& value, const AttrDef& def);
// "int", "list(type)"... : which oneof field an AttrValue of `type` sets.
std::string AttrValueKindName(const AttrValue& value);

class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string op_name);
  OpDefBuilder& Input(std::string spec);
  OpDefBuilder& Output(std::string spec);
  OpDefBuilder& Attr(std::string spec);
  OpDefBuilder& SetIsStateful();
  OpDefBuilder& SetAllowsUninitializedInput();
  OpDefBuilder& SetShapeFn(ShapeFn fn);
  OpDefBuilder& SetGradient(GradientFn fn);
  // No gradient flows through this op (its outputs are constant with respect
  // to its inputs, or not differentiable).
  OpDefBuilder& SetNotDifferentiable();
  // TensorFlow has no such op (OpDef::sluice_only). The op census
  // (tests/tf_graphs/census.py) checks the marks against TensorFlow's ops.
  OpDefBuilder& SetSluiceOnly();
  // Parses the specs. InvalidArgument names the op and the bad spec.
  absl::StatusOr<OpDef> Finalize() const;

 private:
  std::string name_;
  std::vector<std::string> inputs_, outputs_, attrs_;
  bool is_stateful_ = false;
  bool allows_uninitialized_input_ = false;
  ShapeFn shape_fn_;
  GradientFn gradient_;
  bool not_differentiable_ = false;
  bool sluice_only_ = false;
};

class OpRegistry {
 public:
  // The process-wide registry that REGISTER_OP writes to.
  static OpRegistry* Global();

  // AlreadyExists when an op of that name is registered.
  absl::Status Register(OpDef op_def);
  // nullptr when unknown.
  const OpDef* LookUp(absl::string_view op_name) const;
  // NotFound with a did-you-mean suggestion.
  absl::StatusOr<const OpDef*> LookUpOrError(absl::string_view op_name) const;
  std::vector<std::string> ListOpNames() const;

 private:
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
};

namespace register_op {
// Finalizes and registers at static-initialization time; a malformed spec is a
// programming error in Sluice and aborts with its message.
struct OpDefBuilderReceiver {
  OpDefBuilderReceiver(const OpDefBuilder& builder);  // NOLINT: implicit by design
};
}  // namespace register_op

#define SLUICE_REGISTER_OP_UNIQ_(ctr, name)                                  \
  static ::sluice::register_op::OpDefBuilderReceiver register_op_##ctr \
      __attribute__((unused)) = ::sluice::OpDefBuilder(name)
#define SLUICE_REGISTER_OP_HELPER_(ctr, name) SLUICE_REGISTER_OP_UNIQ_(ctr, name)
#define REGISTER_OP(name) SLUICE_REGISTER_OP_HELPER_(__COUNTER__, name)

// The closest of `candidates` to `word` by edit distance, or "" when none is
// close enough to suggest.
std::string ClosestMatch(absl::string_view word, const std::vector<std::string>& candidates);

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_OP_DEF_H_
