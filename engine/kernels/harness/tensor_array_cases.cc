// Op harness entries for the TensorArray and Stack ops: they keep per-step
// state behind resource handles, so they are not pure functions of their
// inputs and are covered by session-level tests instead (values, per-step
// lifetime, bad input, and the gradients of Read/Write/Gather/Scatter/Split/
// Concat), and by TensorFlow's own while_loop graphs in tests/tf_interop.
#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

#define SLUICE_TENSOR_ARRAY_ENTRY_(OP) \
  REGISTER_OP_HARNESS(OpHarnessEntry{OP, {}, nullptr, "//engine/kernels:tensor_array_ops_test"})
SLUICE_TENSOR_ARRAY_ENTRY_("TensorArrayV3");
SLUICE_TENSOR_ARRAY_ENTRY_("TensorArrayGradV3");
SLUICE_TENSOR_ARRAY_ENTRY_("TensorArrayWriteV3");
SLUICE_TENSOR_ARRAY_ENTRY_("TensorArrayReadV3");
SLUICE_TENSOR_ARRAY_ENTRY_("TensorArrayGatherV3");
SLUICE_TENSOR_ARRAY_ENTRY_("TensorArrayScatterV3");
SLUICE_TENSOR_ARRAY_ENTRY_("TensorArrayConcatV3");
SLUICE_TENSOR_ARRAY_ENTRY_("TensorArraySplitV3");
SLUICE_TENSOR_ARRAY_ENTRY_("TensorArraySizeV3");
SLUICE_TENSOR_ARRAY_ENTRY_("TensorArrayCloseV3");
SLUICE_TENSOR_ARRAY_ENTRY_("StackV2");
SLUICE_TENSOR_ARRAY_ENTRY_("StackPushV2");
SLUICE_TENSOR_ARRAY_ENTRY_("StackPopV2");
SLUICE_TENSOR_ARRAY_ENTRY_("StackCloseV2");
#undef SLUICE_TENSOR_ARRAY_ENTRY_

}  // namespace
}  // namespace harness
}  // namespace sluice
