// Spec for op definitions and NodeDef helpers: TensorFlow's spec syntax for
// args and attrs, attr validation with messages that name the node and attr,
// the dtypes a node's attrs imply, tensor-name parsing, node-name rules,
// did-you-mean suggestions, and kernel lookup by type constraint.
#include "engine/framework/op_def.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/framework/device.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {

// Test ops and kernels. Names start with TestOpDef so they cannot collide with
// real ops.
REGISTER_OP("TestOpDefFoo").Input("x: T").Output("y: T").Attr("T: {float, int32} = DT_FLOAT");

REGISTER_OP("TestOpDefKernelOp").Input("x: T").Output("y: T").Attr("T: {float, double, int32}");

REGISTER_OP("TestOpDefNoKernel").Output("y: float");

REGISTER_OP("TestOpDefFailingCtor").Output("y: float").Attr("fail: bool = true");

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class PassThroughKernel : public OpKernel {
 public:
  explicit PassThroughKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {}
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
};

class FailingCtorKernel : public OpKernel {
 public:
  explicit FailingCtorKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    bool fail = false;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("fail", &fail));
    OP_REQUIRES(ctx, !fail, absl::FailedPreconditionError("told to fail"));
  }
  void Compute(OpKernelContext*) override {}
};

}  // namespace

REGISTER_KERNEL_BUILDER(Name("TestOpDefKernelOp").Device(kDeviceCpu).TypeConstraint<float>("T"), PassThroughKernel);
REGISTER_KERNEL_BUILDER(Name("TestOpDefKernelOp").Device(kDeviceGpu).TypeConstraint("T", {DT_INT32, DT_DOUBLE}),
                        PassThroughKernel);
REGISTER_KERNEL_BUILDER(Name("TestOpDefFailingCtor").Device(kDeviceCpu), FailingCtorKernel);

namespace {

// ---- OpDefBuilder: arg specs ----

TEST(OpDefBuilder, TypeAttrArg) {
  auto def = OpDefBuilder("TestOpDefA").Input("x: T").Output("y: T").Attr("T: type").Finalize();
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->name, "TestOpDefA");
  ASSERT_EQ(def->inputs.size(), 1u);
  EXPECT_EQ(def->inputs[0].name, "x");
  EXPECT_EQ(def->inputs[0].type, DT_INVALID);
  EXPECT_EQ(def->inputs[0].type_attr, "T");
  EXPECT_TRUE(def->inputs[0].number_attr.empty());
  EXPECT_TRUE(def->inputs[0].type_list_attr.empty());
  EXPECT_FALSE(def->inputs[0].is_ref);
  ASSERT_EQ(def->outputs.size(), 1u);
  EXPECT_EQ(def->outputs[0].type_attr, "T");
  ASSERT_EQ(def->attrs.size(), 1u);
  EXPECT_EQ(def->attrs[0].type, "type");
  EXPECT_TRUE(def->attrs[0].allowed_types.empty());
  EXPECT_FALSE(def->attrs[0].default_value.has_value());
  EXPECT_FALSE(def->is_stateful);
}

TEST(OpDefBuilder, NumberTimesTypeArg) {
  auto def = OpDefBuilder("TestOpDefA").Input("xs: N * T").Attr("T: type").Attr("N: int >= 1").Finalize();
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->inputs[0].number_attr, "N");
  EXPECT_EQ(def->inputs[0].type_attr, "T");
  const AttrDef* n = def->FindAttr("N");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->type, "int");
  EXPECT_TRUE(n->has_minimum);
  EXPECT_EQ(n->minimum, 1);
  EXPECT_EQ(def->FindAttr("M"), nullptr);
}

TEST(OpDefBuilder, NumberTimesFixedTypeArg) {
  auto def = OpDefBuilder("TestOpDefA").Input("xs: N*float").Attr("N: int").Finalize();
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->inputs[0].number_attr, "N");
  EXPECT_EQ(def->inputs[0].type, DT_FLOAT);
  EXPECT_TRUE(def->inputs[0].type_attr.empty());
}

TEST(OpDefBuilder, RefArg) {
  auto def = OpDefBuilder("TestOpDefA").Input("ref: Ref(T)").Output("out: Ref(float)").Attr("T: type").Finalize();
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_TRUE(def->inputs[0].is_ref);
  EXPECT_EQ(def->inputs[0].type_attr, "T");
  EXPECT_TRUE(def->outputs[0].is_ref);
  EXPECT_EQ(def->outputs[0].type, DT_FLOAT);
}

TEST(OpDefBuilder, FixedTypeArg) {
  auto def = OpDefBuilder("TestOpDefA").Input("x: float").Input("y:int64").Output("z: bool").Finalize();
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->inputs[0].type, DT_FLOAT);
  EXPECT_EQ(def->inputs[1].type, DT_INT64);
  EXPECT_EQ(def->outputs[0].type, DT_BOOL);
  EXPECT_TRUE(def->inputs[0].type_attr.empty());
}

TEST(OpDefBuilder, TypeListArg) {
  auto def = OpDefBuilder("TestOpDefA").Input("xs: Tin").Output("ys: Tout").Attr("Tin: list(type)")
                 .Attr("Tout: list({float, int32}) >= 1").Finalize();
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->inputs[0].type_list_attr, "Tin");
  EXPECT_TRUE(def->inputs[0].type_attr.empty());
  EXPECT_EQ(def->outputs[0].type_list_attr, "Tout");
  const AttrDef* tout = def->FindAttr("Tout");
  ASSERT_NE(tout, nullptr);
  EXPECT_EQ(tout->type, "list(type)");
  EXPECT_THAT(tout->allowed_types, ElementsAre(DT_FLOAT, DT_INT32));
  EXPECT_TRUE(tout->has_minimum);
  EXPECT_EQ(tout->minimum, 1);
}

TEST(OpDefBuilder, StatefulAndUninitializedInputFlags) {
  auto def = OpDefBuilder("TestOpDefA").SetIsStateful().SetAllowsUninitializedInput().Finalize();
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_TRUE(def->is_stateful);
  EXPECT_TRUE(def->allows_uninitialized_input);
  EXPECT_TRUE(def->inputs.empty());
  EXPECT_FALSE(def->shape_fn);
  auto with_fn = OpDefBuilder("TestOpDefB").SetShapeFn(shape_fns::Scalar).Finalize();
  ASSERT_TRUE(with_fn.ok());
  EXPECT_TRUE(with_fn->shape_fn);
}

// ---- OpDefBuilder: attr specs ----

TEST(OpDefBuilder, AllowedTypesWithDefault) {
  auto def = OpDefBuilder("TestOpDefA").Attr("T: {float, int32} = DT_FLOAT").Finalize();
  ASSERT_TRUE(def.ok()) << def.status();
  const AttrDef& t = def->attrs[0];
  EXPECT_EQ(t.name, "T");
  EXPECT_EQ(t.type, "type");
  EXPECT_THAT(t.allowed_types, ElementsAre(DT_FLOAT, DT_INT32));
  ASSERT_TRUE(t.default_value.has_value());
  EXPECT_EQ(t.default_value->type(), DT_FLOAT);
}

TEST(OpDefBuilder, ScalarDefaults) {
  auto def = OpDefBuilder("TestOpDefA")
                 .Attr("s: string = 'hello'")
                 .Attr("dq: string = \"dq\"")
                 .Attr("empty: string = ''")
                 .Attr("b: bool = true")
                 .Attr("nb: bool = false")
                 .Attr("i: int = -5")
                 .Attr("f: float = 0.25")
                 .Attr("t: type = int64")
                 .Attr("m: int >= 2 = 3")
                 .Finalize();
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->FindAttr("s")->default_value->s(), "hello");
  EXPECT_EQ(def->FindAttr("dq")->default_value->s(), "dq");
  EXPECT_EQ(def->FindAttr("empty")->default_value->value_case(), AttrValue::kS);
  EXPECT_EQ(def->FindAttr("empty")->default_value->s(), "");
  EXPECT_TRUE(def->FindAttr("b")->default_value->b());
  EXPECT_EQ(def->FindAttr("nb")->default_value->value_case(), AttrValue::kB);
  EXPECT_FALSE(def->FindAttr("nb")->default_value->b());
  EXPECT_EQ(def->FindAttr("i")->default_value->i(), -5);
  EXPECT_EQ(def->FindAttr("f")->default_value->f(), 0.25f);
  EXPECT_EQ(def->FindAttr("t")->default_value->type(), DT_INT64);
  const AttrDef* m = def->FindAttr("m");
  EXPECT_EQ(m->minimum, 2);
  EXPECT_EQ(m->default_value->i(), 3);
}

TEST(OpDefBuilder, ShapeAndListDefaults) {
  auto def = OpDefBuilder("TestOpDefA")
                 .Attr("shape: shape = { dim { size: 2 } dim { size: -1 } }")
                 .Attr("unknown: shape = { unknown_rank: true }")
                 .Attr("ints: list(int) = [1, 2, 3]")
                 .Attr("types: list(type) = [DT_FLOAT, int32]")
                 .Attr("strs: list(string) = ['a', \"b\"]")
                 .Attr("none: list(float) = []")
                 .Finalize();
  ASSERT_TRUE(def.ok()) << def.status();
  const TensorShapeProto& shape = def->FindAttr("shape")->default_value->shape();
  ASSERT_EQ(shape.dim_size(), 2);
  EXPECT_EQ(shape.dim(0).size(), 2);
  EXPECT_EQ(shape.dim(1).size(), -1);
  EXPECT_TRUE(def->FindAttr("unknown")->default_value->shape().unknown_rank());
  EXPECT_THAT(def->FindAttr("ints")->default_value->list().i(), ElementsAre(1, 2, 3));
  EXPECT_THAT(def->FindAttr("types")->default_value->list().type(), ElementsAre(DT_FLOAT, DT_INT32));
  EXPECT_THAT(def->FindAttr("strs")->default_value->list().s(), ElementsAre("a", "b"));
  const AttrValue& none = *def->FindAttr("none")->default_value;
  EXPECT_EQ(none.value_case(), AttrValue::kList);
  EXPECT_EQ(none.list().f_size(), 0);
}

struct BadSpec {
  std::vector<std::string> inputs;
  std::vector<std::string> attrs;
  std::string message;  // expected substring
};

class OpDefBuilderBadSpec : public ::testing::TestWithParam<BadSpec> {};

TEST_P(OpDefBuilderBadSpec, IsRejectedWithAMessage) {
  const BadSpec& c = GetParam();
  OpDefBuilder b("TestOpDefBad");
  for (const std::string& a : c.attrs) b.Attr(a);
  for (const std::string& i : c.inputs) b.Input(i);
  auto def = b.Finalize();
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(), HasSubstr("op TestOpDefBad: bad spec '"));
  EXPECT_THAT(def.status().message(), HasSubstr(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    Specs, OpDefBuilderBadSpec,
    ::testing::Values(
        BadSpec{{"x"}, {}, "bad type"},
        BadSpec{{"1x: float"}, {}, "bad argument name"},
        BadSpec{{"x y: float"}, {}, "bad argument name"},
        BadSpec{{"x: U"}, {"T: type"}, "type attr is not declared"},
        BadSpec{{"x: Ref(T"}, {"T: type"}, "unterminated Ref("},
        BadSpec{{"x: N * T"}, {"T: type"}, "number attr must be an int attr"},
        BadSpec{{"x: N * T"}, {"T: type", "N: string"}, "number attr must be an int attr"},
        BadSpec{{"x: N * L"}, {"L: list(type)", "N: int"}, "N * list(type)"},
        BadSpec{{"x: s"}, {"s: string"}, "type attr must have type 'type' or 'list(type)'"},
        BadSpec{{"x: 3 * T"}, {"T: type"}, "bad number attr"},
        BadSpec{{}, {"T: {float, foo}"}, "unknown data type 'foo'"},
        BadSpec{{}, {"T: {float, int32"}, "unterminated {"},
        BadSpec{{}, {"T: list({float)"}, "unterminated list({"},
        BadSpec{{}, {"x: integer"}, "unknown attr type 'integer'"},
        BadSpec{{}, {"x"}, "unknown attr type ''"},
        BadSpec{{}, {"9x: int"}, "bad attr name"},
        BadSpec{{}, {"x: int = abc"}, "bad default 'abc' for int"},
        BadSpec{{}, {"x: bool = yes"}, "bad default 'yes' for bool"},
        BadSpec{{}, {"x: string = hello"}, "bad default 'hello' for string"},
        BadSpec{{}, {"x: string = 'hello\""}, "bad default"},
        BadSpec{{}, {"x: float = fast"}, "bad default 'fast' for float"},
        BadSpec{{}, {"x: type = DT_NOPE"}, "bad default"},
        BadSpec{{}, {"x: shape = [2, 3]"}, "bad default"},
        BadSpec{{}, {"x: list(int) = [1, b]"}, "bad default 'b' for int"},
        BadSpec{{}, {"x: tensor = 3"}, "bad default"},
        BadSpec{{}, {"N: int >= x"}, "bad minimum"},
        BadSpec{{}, {"T: type", "T: int"}, "duplicate attr"},
        // A default must satisfy the attr's own constraints, because nodes
        // receive defaults without validation.
        BadSpec{{}, {"T: {float, int32} = DT_DOUBLE"}, "not one of the allowed types"},
        BadSpec{{}, {"N: int >= 2 = 1"}, "below its minimum of 2"},
        BadSpec{{}, {"L: list(int) >= 1 = []"}, "below its minimum of 1"},
        // '=' with nothing after it is not "no default".
        BadSpec{{}, {"x: int ="}, "without a default"},
        // A minimum only means something for ints and lists.
        BadSpec{{}, {"s: string >= 1"}, "minimum"}));

TEST(OpDefBuilder, ErrorNamesTheSpec) {
  auto def = OpDefBuilder("TestOpDefBad").Input("x: U").Finalize();
  ASSERT_FALSE(def.ok());
  EXPECT_THAT(def.status().message(), HasSubstr("'x: U'"));
}

// ---- ValidateAttrValue ----

AttrDef AttrDefOf(const std::string& spec) {
  auto def = OpDefBuilder("TestOpDefAttr").Attr(spec).Finalize();
  EXPECT_TRUE(def.ok()) << def.status();
  return def.ok() ? def->attrs[0] : AttrDef();
}

TEST(ValidateAttrValue, AcceptsValuesOfTheRightKind) {
  EXPECT_TRUE(ValidateAttrValue(MakeAttr(3), AttrDefOf("x: int")).ok());
  EXPECT_TRUE(ValidateAttrValue(MakeAttr("s"), AttrDefOf("x: string")).ok());
  EXPECT_TRUE(ValidateAttrValue(MakeAttr(1.5f), AttrDefOf("x: float")).ok());
  EXPECT_TRUE(ValidateAttrValue(MakeAttr(true), AttrDefOf("x: bool")).ok());
  EXPECT_TRUE(ValidateAttrValue(MakeAttr(DT_INT32), AttrDefOf("x: {float, int32}")).ok());
  EXPECT_TRUE(ValidateAttrValue(MakeAttr(TensorShape{2}), AttrDefOf("x: shape")).ok());
  EXPECT_TRUE(ValidateAttrValue(MakeAttr(std::vector<int64_t>{1, 2}), AttrDefOf("x: list(int)")).ok());
  EXPECT_TRUE(ValidateAttrValue(MakeAttr(Tensor::Scalar<float>(1)), AttrDefOf("x: tensor")).ok());
}

TEST(ValidateAttrValue, AnEmptyListMatchesEveryListType) {
  AttrValue empty;
  empty.mutable_list();
  EXPECT_TRUE(ValidateAttrValue(empty, AttrDefOf("x: list(int)")).ok());
  EXPECT_TRUE(ValidateAttrValue(empty, AttrDefOf("x: list(type)")).ok());
  EXPECT_FALSE(ValidateAttrValue(empty, AttrDefOf("x: int")).ok());
}

TEST(ValidateAttrValue, WrongKind) {
  absl::Status s = ValidateAttrValue(MakeAttr("three"), AttrDefOf("x: int"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("attr 'x' expects a value of type int but got string"));
  s = ValidateAttrValue(MakeAttr(std::vector<int64_t>{1}), AttrDefOf("x: list(string)"));
  EXPECT_THAT(s.message(), HasSubstr("expects a value of type list(string) but got list(int)"));
  s = ValidateAttrValue(AttrValue(), AttrDefOf("x: bool"));
  EXPECT_THAT(s.message(), HasSubstr("got empty"));
  s = ValidateAttrValue(MakeAttr(DT_FLOAT), AttrDefOf("x: int"));
  EXPECT_THAT(s.message(), HasSubstr("but got type"));
}

TEST(ValidateAttrValue, DisallowedType) {
  absl::Status s = ValidateAttrValue(MakeAttr(DT_DOUBLE), AttrDefOf("T: {float, int32}"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("attr 'T' is double, not one of the allowed types {float, int32}"));
  s = ValidateAttrValue(MakeAttr(std::vector<DataType>{DT_FLOAT, DT_BOOL}), AttrDefOf("T: list({float, int32})"));
  EXPECT_THAT(s.message(), HasSubstr("attr 'T' is bool"));
}

TEST(ValidateAttrValue, UnsupportedTypesAreRejectedEvenWithoutAnAllowedList) {
  absl::Status s = ValidateAttrValue(MakeAttr(DT_QINT8), AttrDefOf("T: type"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("unsupported type"));
  s = ValidateAttrValue(MakeAttr(DT_FLOAT_REF), AttrDefOf("T: type"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = ValidateAttrValue(MakeAttr(std::vector<DataType>{DT_FLOAT, DT_QINT8}), AttrDefOf("T: list(type)"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValidateAttrValue, ResourceHandlesAreATypeAnEdgeMayCarry) {
  // TensorFlow's while loops pass TensorArray handles through Enter/Switch/Merge.
  EXPECT_TRUE(ValidateAttrValue(MakeAttr(DT_RESOURCE), AttrDefOf("T: type")).ok());
  EXPECT_TRUE(ValidateAttrValue(MakeAttr(std::vector<DataType>{DT_FLOAT, DT_RESOURCE}), AttrDefOf("T: list(type)")).ok());
  EXPECT_FALSE(ValidateAttrValue(MakeAttr(DT_RESOURCE), AttrDefOf("T: {float, int32}")).ok());
}

TEST(ValidateAttrValue, BelowMinimum) {
  AttrDef n = AttrDefOf("N: int >= 1");
  EXPECT_TRUE(ValidateAttrValue(MakeAttr(1), n).ok());
  absl::Status s = ValidateAttrValue(MakeAttr(0), n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("attr 'N' is 0, below its minimum of 1"));
  AttrDef l = AttrDefOf("L: list(int) >= 2");
  EXPECT_TRUE(ValidateAttrValue(MakeAttr(std::vector<int64_t>{4, 5}), l).ok());
  s = ValidateAttrValue(MakeAttr(std::vector<int64_t>{4}), l);
  EXPECT_THAT(s.message(), HasSubstr("is 1, below its minimum of 2"));
}

TEST(AttrValueKindName, NamesEveryKind) {
  EXPECT_EQ(AttrValueKindName(MakeAttr(1)), "int");
  EXPECT_EQ(AttrValueKindName(MakeAttr(std::vector<std::string>{"a"})), "list(string)");
  EXPECT_EQ(AttrValueKindName(MakeAttr(std::vector<DataType>{DT_FLOAT})), "list(type)");
  AttrValue empty_list;
  empty_list.mutable_list();
  EXPECT_EQ(AttrValueKindName(empty_list), "list()");
  EXPECT_EQ(AttrValueKindName(AttrValue()), "empty");
}

// ---- AddDefaultsAndValidateAttrs ----

OpDef TestOp() {
  auto def = OpDefBuilder("TestOpDefNode")
                 .Input("x: T")
                 .Output("y: T")
                 .Attr("T: {float, int32}")
                 .Attr("alpha: float = 0.5")
                 .Attr("mode: string = 'fast'")
                 .Finalize();
  EXPECT_TRUE(def.ok()) << def.status();
  return *def;
}

NodeDef NodeOf(const std::string& name, const std::string& op, const std::map<std::string, AttrValue>& attrs) {
  NodeDef n;
  n.set_name(name);
  n.set_op(op);
  for (const auto& [k, v] : attrs) (*n.mutable_attr())[k] = v;
  return n;
}

TEST(AddDefaultsAndValidateAttrs, FillsDefaults) {
  NodeDef n = NodeOf("n", "TestOpDefNode", {{"T", MakeAttr(DT_INT32)}});
  ASSERT_TRUE(AddDefaultsAndValidateAttrs(TestOp(), &n).ok());
  ASSERT_EQ(n.attr().size(), 3u);
  EXPECT_EQ(n.attr().at("alpha").f(), 0.5f);
  EXPECT_EQ(n.attr().at("mode").s(), "fast");
  EXPECT_EQ(n.attr().at("T").type(), DT_INT32);
}

// A handle may pass through an op that forwards its input, not into one whose
// kernel would copy or zero its elements by size.
TEST(AddDefaultsAndValidateAttrs, ResourceTypeOnlyForForwardingOps) {
  auto make = [](const std::string& name) {
    auto def = OpDefBuilder(name).Input("x: T").Output("y: T").Attr("T: type").Finalize();
    EXPECT_TRUE(def.ok()) << def.status();
    return *def;
  };
  NodeDef forward = NodeOf("f", "Identity", {{"T", MakeAttr(DT_RESOURCE)}});
  EXPECT_TRUE(AddDefaultsAndValidateAttrs(make("Identity"), &forward).ok());
  NodeDef other = NodeOf("z", "ZerosLike", {{"T", MakeAttr(DT_RESOURCE)}});
  absl::Status s = AddDefaultsAndValidateAttrs(make("ZerosLike"), &other);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("node 'z'"));
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("takes no resource handles"));
  NodeDef values = NodeOf("v", "ZerosLike", {{"T", MakeAttr(DT_FLOAT)}});
  EXPECT_TRUE(AddDefaultsAndValidateAttrs(make("ZerosLike"), &values).ok());
}

TEST(AddDefaultsAndValidateAttrs, KeepsGivenValuesOverDefaults) {
  NodeDef n = NodeOf("n", "TestOpDefNode", {{"T", MakeAttr(DT_FLOAT)}, {"alpha", MakeAttr(2.0f)}});
  ASSERT_TRUE(AddDefaultsAndValidateAttrs(TestOp(), &n).ok());
  EXPECT_EQ(n.attr().at("alpha").f(), 2.0f);
}

TEST(AddDefaultsAndValidateAttrs, UnknownAttrSuggestsTheClosestName) {
  NodeDef n = NodeOf("my_node", "TestOpDefNode", {{"T", MakeAttr(DT_FLOAT)}, {"alpah", MakeAttr(1.0f)}});
  absl::Status s = AddDefaultsAndValidateAttrs(TestOp(), &n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'my_node' (op TestOpDefNode): unknown attr 'alpah'"));
  EXPECT_THAT(s.message(), HasSubstr("did you mean 'alpha'?"));
}

TEST(AddDefaultsAndValidateAttrs, UnknownAttrWithNothingCloseHasNoSuggestion) {
  NodeDef n = NodeOf("n", "TestOpDefNode", {{"T", MakeAttr(DT_FLOAT)}, {"completely_different", MakeAttr(1)}});
  absl::Status s = AddDefaultsAndValidateAttrs(TestOp(), &n);
  EXPECT_THAT(s.message(), HasSubstr("unknown attr 'completely_different'"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("did you mean")));
}

TEST(AddDefaultsAndValidateAttrs, InternalAttrsAreAllowed) {
  NodeDef n = NodeOf("n", "TestOpDefNode", {{"T", MakeAttr(DT_FLOAT)}, {"_class", MakeAttr("loc:@v")}});
  EXPECT_TRUE(AddDefaultsAndValidateAttrs(TestOp(), &n).ok());
}

TEST(AddDefaultsAndValidateAttrs, MissingAttrWithoutDefault) {
  NodeDef n = NodeOf("n", "TestOpDefNode", {});
  absl::Status s = AddDefaultsAndValidateAttrs(TestOp(), &n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'n' (op TestOpDefNode): missing attr 'T' of type type"));
}

TEST(AddDefaultsAndValidateAttrs, BadValueNamesTheNode) {
  NodeDef n = NodeOf("n", "TestOpDefNode", {{"T", MakeAttr(DT_DOUBLE)}});
  absl::Status s = AddDefaultsAndValidateAttrs(TestOp(), &n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'n' (op TestOpDefNode): attr 'T' is double"));
}

// ---- InOutTypesForNode ----

TEST(InOutTypesForNode, ExpandsEveryArgForm) {
  auto op = OpDefBuilder("TestOpDefTypes")
                .Input("a: T")
                .Input("b: N * float")
                .Input("c: Tlist")
                .Input("d: Ref(T)")
                .Input("e: N * T")
                .Output("o: T")
                .Output("p: int64")
                .Output("q: Ref(int32)")
                .Attr("T: type")
                .Attr("N: int >= 0")
                .Attr("Tlist: list(type)")
                .Finalize();
  ASSERT_TRUE(op.ok()) << op.status();
  NodeDef n = NodeOf("n", "TestOpDefTypes",
                     {{"T", MakeAttr(DT_DOUBLE)},
                      {"N", MakeAttr(3)},
                      {"Tlist", MakeAttr(std::vector<DataType>{DT_INT32, DT_BOOL})}});
  DataTypeVector in, out;
  ASSERT_TRUE(InOutTypesForNode(n, *op, &in, &out).ok());
  EXPECT_THAT(in, ElementsAre(DT_DOUBLE, DT_FLOAT, DT_FLOAT, DT_FLOAT, DT_INT32, DT_BOOL, DT_DOUBLE_REF, DT_DOUBLE,
                              DT_DOUBLE, DT_DOUBLE));
  EXPECT_THAT(out, ElementsAre(DT_DOUBLE, DT_INT64, DT_INT32_REF));

  (*n.mutable_attr())["N"] = MakeAttr(0);
  (*n.mutable_attr())["Tlist"] = MakeAttr(std::vector<DataType>{});
  ASSERT_TRUE(InOutTypesForNode(n, *op, &in, &out).ok());
  EXPECT_THAT(in, ElementsAre(DT_DOUBLE, DT_DOUBLE_REF));
}

TEST(InOutTypesForNode, RejectsAbsurdRepeatCounts) {
  auto op = OpDefBuilder("TestOpDefTypes").Input("xs: N * float").Attr("N: int").Finalize();
  ASSERT_TRUE(op.ok());
  DataTypeVector in, out;
  for (int64_t n : {int64_t{-1}, int64_t{1} << 40}) {
    NodeDef node = NodeOf("big", "TestOpDefTypes", {{"N", MakeAttr(n)}});
    absl::Status s = InOutTypesForNode(node, *op, &in, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << n;
    EXPECT_THAT(s.message(), HasSubstr("node 'big'"));
  }
}

TEST(InOutTypesForNode, MissingAttrNamesNodeAndAttr) {
  auto op = OpDefBuilder("TestOpDefTypes").Input("x: T").Attr("T: type").Finalize();
  ASSERT_TRUE(op.ok());
  DataTypeVector in, out;
  absl::Status s = InOutTypesForNode(NodeOf("n", "TestOpDefTypes", {}), *op, &in, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 'n'"));
  EXPECT_THAT(s.message(), HasSubstr("'T'"));
}

// ---- ParseTensorName ----

TEST(ParseTensorName, ValidNames) {
  struct Case {
    std::string name;
    std::string node;
    int index;
  };
  for (const Case& c : std::vector<Case>{{"a", "a", 0},
                                         {"a:0", "a", 0},
                                         {"a:3", "a", 3},
                                         {"scope/sub-x.y_1:12", "scope/sub-x.y_1", 12},
                                         {"^a", "a", kControlSlot},
                                         {"^scope/b", "scope/b", kControlSlot}}) {
    SCOPED_TRACE(c.name);
    auto id = ParseTensorName(c.name);
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(id->node, c.node);
    EXPECT_EQ(id->index, c.index);
    EXPECT_EQ(id->IsControl(), c.index == kControlSlot);
  }
}

TEST(ParseTensorName, MalformedNames) {
  for (const char* bad : {"", "a:", "a:-1", "a:x", "a:1x", "a:+1", ":1", "^", "^a:1", "a:99999999999"}) {
    SCOPED_TRACE(bad);
    auto id = ParseTensorName(bad);
    ASSERT_FALSE(id.ok()) << id->node << ":" << id->index;
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(ParseTensorName, ToStringIsCanonical) {
  EXPECT_EQ(ParseTensorName("a:0")->ToString(), "a");
  EXPECT_EQ(ParseTensorName("a:2")->ToString(), "a:2");
  EXPECT_EQ(ParseTensorName("^a")->ToString(), "^a");
}

// ---- ValidateNodeName ----

TEST(ValidateNodeName, AcceptsTensorFlowNames) {
  for (const char* ok : {"a", "A1", "1abc", ".hidden", "scope/sub-name_2.x>y", "a/b/c"}) {
    EXPECT_TRUE(ValidateNodeName(ok).ok()) << ok;
  }
}

TEST(ValidateNodeName, RejectsOthers) {
  for (const char* bad : {"", "_a", "-a", "/a", ">a", "a b", "a:0", "a^", "a\n", "caf\xc3\xa9"}) {
    absl::Status s = ValidateNodeName(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("invalid node name")) << bad;
  }
  EXPECT_THAT(ValidateNodeName("a b").message(), HasSubstr("' '"));
}

// ---- ClosestMatch ----

TEST(ClosestMatch, SuggestsTheNearestCloseEnoughCandidate) {
  const std::vector<std::string> ops = {"MatMul", "Add", "AddN", "Identity", "Placeholder"};
  EXPECT_EQ(ClosestMatch("MatMull", ops), "MatMul");
  EXPECT_EQ(ClosestMatch("matmul", ops), "MatMul");  // case-insensitive
  EXPECT_EQ(ClosestMatch("Idnetity", ops), "Identity");
  EXPECT_EQ(ClosestMatch("AddN", ops), "AddN");
  EXPECT_EQ(ClosestMatch("Placehodler", ops), "Placeholder");
  EXPECT_EQ(ClosestMatch("Conv2D", ops), "");
  EXPECT_EQ(ClosestMatch("x", {}), "");
}

// ---- OpRegistry ----

TEST(OpRegistry, GlobalHoldsRegisteredOps) {
  const OpDef* foo = OpRegistry::Global()->LookUp("TestOpDefFoo");
  ASSERT_NE(foo, nullptr);
  EXPECT_EQ(foo->FindAttr("T")->default_value->type(), DT_FLOAT);
  EXPECT_EQ(OpRegistry::Global()->LookUp("TestOpDefNope"), nullptr);
  std::vector<std::string> names = OpRegistry::Global()->ListOpNames();
  EXPECT_THAT(names, ::testing::Contains("TestOpDefFoo"));
}

TEST(OpRegistry, LookUpOrErrorSuggestsAName) {
  auto found = OpRegistry::Global()->LookUpOrError("TestOpDefFoo");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ((*found)->name, "TestOpDefFoo");
  auto missing = OpRegistry::Global()->LookUpOrError("TestOpDefFo");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("unknown op 'TestOpDefFo' (did you mean 'TestOpDefFoo'?)"));
  auto far = OpRegistry::Global()->LookUpOrError("Zzzzzzzzzzzzzzzzzzzz");
  EXPECT_THAT(far.status().message(), ::testing::Not(HasSubstr("did you mean")));
}

TEST(OpRegistry, RegisteringTwiceIsAlreadyExists) {
  OpRegistry registry;
  auto def = OpDefBuilder("TestOpDefTwice").Finalize();
  ASSERT_TRUE(def.ok());
  EXPECT_TRUE(registry.Register(*def).ok());
  absl::Status s = registry.Register(*def);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(registry.ListOpNames(), ElementsAre("TestOpDefTwice"));
}

// ---- KernelRegistry ----

class KernelRegistryTest : public ::testing::Test {
 protected:
  KernelRegistryTest()
      : cpu_("/job:localhost/replica:0/task:0/device:CPU:0", kDeviceCpu, CpuAllocator(), 1),
        gpu_("/job:localhost/replica:0/task:0/device:GPU:0", kDeviceGpu, CpuAllocator(), 1) {}

  NodeDef KernelNode(DataType t) {
    NodeDef n = NodeOf("k", "TestOpDefKernelOp", {{"T", MakeAttr(t)}});
    EXPECT_TRUE(AddDefaultsAndValidateAttrs(OpDefNamed("TestOpDefKernelOp"), &n).ok());
    return n;
  }
  static const OpDef& OpDefNamed(const std::string& name) { return *OpRegistry::Global()->LookUp(name); }

  Device cpu_;
  Device gpu_;
};

TEST_F(KernelRegistryTest, CreatesTheKernelMatchingTheTypeConstraint) {
  NodeDef n = KernelNode(DT_FLOAT);
  auto kernel = KernelRegistry::Global()->CreateKernel(&cpu_, n, OpDefNamed("TestOpDefKernelOp"));
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_EQ((*kernel)->name(), "k");
  EXPECT_EQ((*kernel)->type_string(), "TestOpDefKernelOp");
  EXPECT_EQ((*kernel)->num_inputs(), 1);
  EXPECT_EQ((*kernel)->input_type(0), DT_FLOAT);
  EXPECT_EQ((*kernel)->output_type(0), DT_FLOAT);
  EXPECT_TRUE(KernelRegistry::Global()->HasKernel(kDeviceCpu, n));
}

TEST_F(KernelRegistryTest, NoKernelForTheTypeListsWhatIsRegistered) {
  NodeDef n = KernelNode(DT_DOUBLE);
  EXPECT_FALSE(KernelRegistry::Global()->HasKernel(kDeviceCpu, n));
  auto kernel = KernelRegistry::Global()->CreateKernel(&cpu_, n, OpDefNamed("TestOpDefKernelOp"));
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(kernel.status().message(), HasSubstr("node 'k' (op TestOpDefKernelOp)"));
  EXPECT_THAT(kernel.status().message(), HasSubstr("no CPU kernel of op TestOpDefKernelOp matches"));
  EXPECT_THAT(kernel.status().message(), HasSubstr("T in {float}"));
}

TEST_F(KernelRegistryTest, ConstraintsArePerDevice) {
  EXPECT_TRUE(KernelRegistry::Global()->HasKernel(kDeviceGpu, KernelNode(DT_INT32)));
  EXPECT_TRUE(KernelRegistry::Global()->HasKernel(kDeviceGpu, KernelNode(DT_DOUBLE)));
  EXPECT_FALSE(KernelRegistry::Global()->HasKernel(kDeviceGpu, KernelNode(DT_FLOAT)));
  EXPECT_FALSE(KernelRegistry::Global()->HasKernel(kDeviceCpu, KernelNode(DT_INT32)));
  auto gpu_kernel = KernelRegistry::Global()->CreateKernel(&gpu_, KernelNode(DT_FLOAT), OpDefNamed("TestOpDefKernelOp"));
  ASSERT_FALSE(gpu_kernel.ok());
  EXPECT_THAT(gpu_kernel.status().message(), HasSubstr("T in {int32,double}"));
}

TEST_F(KernelRegistryTest, NodeWithoutTheConstrainedAttrDoesNotMatch) {
  NodeDef n = NodeOf("k", "TestOpDefKernelOp", {});
  EXPECT_FALSE(KernelRegistry::Global()->HasKernel(kDeviceCpu, n));
}

TEST_F(KernelRegistryTest, OpWithoutAnyKernel) {
  NodeDef n = NodeOf("lonely", "TestOpDefNoKernel", {});
  auto kernel = KernelRegistry::Global()->CreateKernel(&cpu_, n, OpDefNamed("TestOpDefNoKernel"));
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(kernel.status().message(), HasSubstr("no CPU kernel is registered for op TestOpDefNoKernel"));
}

TEST_F(KernelRegistryTest, ConstructorErrorsKeepTheirCodeAndNameTheNode) {
  NodeDef n = NodeOf("bad_ctor", "TestOpDefFailingCtor", {});
  ASSERT_TRUE(AddDefaultsAndValidateAttrs(OpDefNamed("TestOpDefFailingCtor"), &n).ok());
  auto kernel = KernelRegistry::Global()->CreateKernel(&cpu_, n, OpDefNamed("TestOpDefFailingCtor"));
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(kernel.status().message(), HasSubstr("node 'bad_ctor' (op TestOpDefFailingCtor): told to fail"));

  (*n.mutable_attr())["fail"] = MakeAttr(false);
  EXPECT_TRUE(KernelRegistry::Global()->CreateKernel(&cpu_, n, OpDefNamed("TestOpDefFailingCtor")).ok());
}

TEST_F(KernelRegistryTest, RegisteredOpsListsEachOpOnce) {
  std::vector<std::string> ops = KernelRegistry::Global()->RegisteredOps();
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "TestOpDefKernelOp"), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "TestOpDefNoKernel"), 0);
}

}  // namespace
}  // namespace sluice
