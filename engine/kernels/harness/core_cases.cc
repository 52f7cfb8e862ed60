// Harness entries for the engine core's ops: Const, Identity,
// PlaceholderWithDefault (the math ops' entries are in math_cases.cc); and
// pointers to the tests that cover the stateful, control-flow and rendezvous
// ops.
#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

REGISTER_OP_HARNESS(OpHarnessEntry{"Identity", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_BOOL, DT_HALF},
                                   [](DataType dtype, Rng* rng) {
                                     std::vector<OpCase> cases;
                                     for (int rank = 0; rank < 4; ++rank) {
                                       OpCase c;
                                       c.description = "rank " + std::to_string(rank);
                                       c.inputs = {RandomTensor(dtype, RandomShape(rng, rank, 0, 3), rng)};
                                       c.expected = {c.inputs[0]};
                                       c.check_gradient = dtype == DT_DOUBLE;
                                       cases.push_back(std::move(c));
                                     }
                                     return cases;
                                   }});

REGISTER_OP_HARNESS(OpHarnessEntry{"Const", {DT_FLOAT, DT_INT64, DT_STRING, DT_BOOL}, [](DataType dtype, Rng* rng) {
                                     Tensor value(dtype, TensorShape({2, 2}));
                                     if (dtype == DT_STRING) {
                                       for (int i = 0; i < 4; ++i) value.data<tstring>()[i] = std::string(i, 'x');
                                     } else {
                                       value = RandomTensor(dtype, TensorShape({2, 2}), rng);
                                     }
                                     OpCase c;
                                     c.description = "2x2";
                                     c.attrs = {{"value", MakeAttr(value)}, {"dtype", MakeAttr(dtype)}};
                                     c.expected = {value};
                                     return std::vector<OpCase>{c};
                                   }});

// Unfed, PlaceholderWithDefault forwards its default (feeding it is
// //engine/runtime:session_test's).
REGISTER_OP_HARNESS(OpHarnessEntry{"PlaceholderWithDefault", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_BOOL, DT_STRING},
                                   [](DataType dtype, Rng* rng) {
                                     auto shape_attr = [](std::vector<int64_t> dims, bool unknown_rank = false) {
                                       TensorShapeProto proto;
                                       if (unknown_rank) proto.set_unknown_rank(true);
                                       for (int64_t d : dims) proto.add_dim()->set_size(d);
                                       return MakeAttr(proto);
                                     };
                                     auto value = [&](const TensorShape& shape) {
                                       if (dtype != DT_STRING) return RandomTensor(dtype, shape, rng);
                                       Tensor t(DT_STRING, shape);
                                       for (int64_t i = 0; i < t.NumElements(); ++i) t.data<tstring>()[i] = "v";
                                       return t;
                                     };
                                     std::vector<OpCase> cases;
                                     struct Spec {
                                       TensorShape shape;
                                       std::vector<int64_t> attr;
                                       bool unknown_rank;
                                     };
                                     for (const Spec& spec : {Spec{TensorShape({2, 3}), {2, 3}, false},
                                                              Spec{TensorShape({2, 3}), {-1, 3}, false},
                                                              Spec{TensorShape({}), {}, false},
                                                              Spec{TensorShape({4}), {}, true}}) {
                                       OpCase c;
                                       c.description = spec.shape.DebugString() + (spec.unknown_rank ? " unknown rank" : "");
                                       c.inputs = {value(spec.shape)};
                                       c.attrs = {{"shape", shape_attr(spec.attr, spec.unknown_rank)}};
                                       c.expected = {c.inputs[0]};
                                       c.check_gradient = dtype == DT_DOUBLE;
                                       cases.push_back(std::move(c));
                                     }
                                     cases.push_back(ErrorCase("incompatible default", {value(TensorShape({2, 3}))},
                                                               {{"shape", shape_attr({3, -1})}}, "incompatible"));
                                     return cases;
                                   }});

// Ops whose behaviour is state, control flow or communication: covered by
// the engine's session, executor and control-flow tests.
#define SLUICE_COVERED_ELSEWHERE_(OP, TEST) REGISTER_OP_HARNESS(OpHarnessEntry{OP, {}, nullptr, TEST})
SLUICE_COVERED_ELSEWHERE_("Placeholder", "//engine/runtime:session_test");
SLUICE_COVERED_ELSEWHERE_("NoOp", "//engine/runtime:executor_bench, //engine/runtime:session_test");
SLUICE_COVERED_ELSEWHERE_("Variable", "//engine/runtime:session_test");
SLUICE_COVERED_ELSEWHERE_("VariableV2", "//engine/runtime:session_test");
SLUICE_COVERED_ELSEWHERE_("Assign", "//engine/runtime:session_test");
SLUICE_COVERED_ELSEWHERE_("AssignAdd", "//engine/runtime:session_test");
SLUICE_COVERED_ELSEWHERE_("IsVariableInitialized", "//engine/runtime:session_test");
SLUICE_COVERED_ELSEWHERE_("Switch", "//engine/runtime:control_flow_test");
SLUICE_COVERED_ELSEWHERE_("Merge", "//engine/runtime:control_flow_test");
SLUICE_COVERED_ELSEWHERE_("Enter", "//engine/runtime:control_flow_test");
SLUICE_COVERED_ELSEWHERE_("Exit", "//engine/runtime:control_flow_test");
SLUICE_COVERED_ELSEWHERE_("NextIteration", "//engine/runtime:control_flow_test");
SLUICE_COVERED_ELSEWHERE_("LoopCond", "//engine/runtime:control_flow_test");
SLUICE_COVERED_ELSEWHERE_("ControlTrigger", "//engine/runtime:control_flow_test");
SLUICE_COVERED_ELSEWHERE_("Assert", "//engine/runtime:control_flow_test");
SLUICE_COVERED_ELSEWHERE_("_Send", "//engine/runtime:executor_test");
SLUICE_COVERED_ELSEWHERE_("_Recv", "//engine/runtime:executor_test");
#undef SLUICE_COVERED_ELSEWHERE_

}  // namespace
}  // namespace harness
}  // namespace sluice
