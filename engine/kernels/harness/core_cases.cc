// Harness entries for the engine core's ops: Const, Identity (the math ops'
// entries are in math_cases.cc); and pointers to the tests that cover the stateful,
// control-flow and rendezvous ops.
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
SLUICE_COVERED_ELSEWHERE_("_Send", "//engine/runtime:executor_test");
SLUICE_COVERED_ELSEWHERE_("_Recv", "//engine/runtime:executor_test");
#undef SLUICE_COVERED_ELSEWHERE_

}  // namespace
}  // namespace harness
}  // namespace sluice
