// Op harness entries for the resource-variable ops: they read and mutate
// variables behind handles, so they are not pure functions of their inputs
// and are covered by session-level tests instead (values, copy-on-write,
// gradients of ReadVariableOp and ResourceGather, bad input); the
// ResourceApply* optimizers and ResourceScatter* share their cases and
// float64 references with the Apply* and Scatter* ones.
#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

#define SLUICE_RESOURCE_ENTRY_(OP, TEST) REGISTER_OP_HARNESS(OpHarnessEntry{OP, {}, nullptr, TEST})
SLUICE_RESOURCE_ENTRY_("VarHandleOp", "//engine/kernels:resource_variable_ops_test");
SLUICE_RESOURCE_ENTRY_("ReadVariableOp", "//engine/kernels:resource_variable_ops_test");
SLUICE_RESOURCE_ENTRY_("AssignVariableOp", "//engine/kernels:resource_variable_ops_test");
SLUICE_RESOURCE_ENTRY_("AssignAddVariableOp", "//engine/kernels:resource_variable_ops_test");
SLUICE_RESOURCE_ENTRY_("AssignSubVariableOp", "//engine/kernels:resource_variable_ops_test");
SLUICE_RESOURCE_ENTRY_("VarIsInitializedOp", "//engine/kernels:resource_variable_ops_test");
SLUICE_RESOURCE_ENTRY_("DestroyResourceOp", "//engine/kernels:resource_variable_ops_test");
SLUICE_RESOURCE_ENTRY_("VariableShape", "//engine/kernels:resource_variable_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceGather", "//engine/kernels:resource_variable_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceApplyGradientDescent", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceApplyMomentum", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceApplyAdam", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceSparseApplyMomentum", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceApplyAdagrad", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceApplyRMSProp", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceApplyFtrl", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceApplyFtrlV2", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceSparseApplyAdagrad", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceSparseApplyFtrl", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceSparseApplyFtrlV2", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceScatterAdd", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceScatterSub", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("ResourceScatterUpdate", "//engine/kernels:training_ops_test");
SLUICE_RESOURCE_ENTRY_("DisableCopyOnRead", "//engine/kernels:resource_variable_ops_test");
#undef SLUICE_RESOURCE_ENTRY_

}  // namespace
}  // namespace harness
}  // namespace sluice
