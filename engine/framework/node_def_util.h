// NodeDef helpers: tensor-name parsing ("node:port", "^node"), node-name
// validation, attr defaults and checks against an OpDef, the input and output
// dtypes a node's attrs imply, and typed attr access for kernels and passes.
// Every error names the node (and the attr or input) so a user can find it.
// Thread safety: pure functions.
#ifndef SLUICE_ENGINE_FRAMEWORK_NODE_DEF_UTIL_H_
#define SLUICE_ENGINE_FRAMEWORK_NODE_DEF_UTIL_H_

#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/framework/graph.pb.h"
#include "engine/framework/op_def.h"
#include "engine/framework/tensor.h"

namespace sluice {

using DataTypeVector = absl::InlinedVector<DataType, 4>;
using AttrMap = google::protobuf::Map<std::string, AttrValue>;

constexpr int kControlSlot = -1;

struct TensorId {
  std::string node;
  int index = 0;  // kControlSlot for "^node"
  bool IsControl() const { return index == kControlSlot; }
  std::string ToString() const;
};

// Parses "node", "node:3" or "^node". InvalidArgument for "", "a:", "a:-1",
// "a:x", "^", etc.
absl::StatusOr<TensorId> ParseTensorName(absl::string_view name);

// Names match [A-Za-z0-9.][A-Za-z0-9_./>-]* as in TensorFlow.
absl::Status ValidateNodeName(absl::string_view name);

// Adds missing attrs that have defaults, and rejects unknown attrs, missing
// attrs without defaults and values of the wrong kind or disallowed types.
absl::Status AddDefaultsAndValidateAttrs(const OpDef& op_def, NodeDef* node_def);

// The most inputs (and, separately, outputs) one node may have: number attrs
// (N of AddN, num_split of Split) and type lists are bounded by it, so a
// small NodeDef cannot size per-node vectors of millions of entries.
constexpr int64_t kMaxNodeArgs = int64_t{1} << 16;

// The dtypes of the node's inputs and outputs (ref types for Ref args).
// InvalidArgument naming the node and attr when they exceed kMaxNodeArgs.
// REQUIRES: attrs validated (AddDefaultsAndValidateAttrs).
absl::Status InOutTypesForNode(const NodeDef& node_def, const OpDef& op_def, DataTypeVector* inputs,
                               DataTypeVector* outputs);

// "node 'x' (op Add): " for error messages.
std::string NodeContext(const NodeDef& node_def);

// Typed attr access. InvalidArgument (naming the node and attr) when the attr
// is missing or of another kind.
absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, std::string* value);
absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, int64_t* value);
absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, int32_t* value);
absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, float* value);
absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, bool* value);
absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, DataType* value);
absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, TensorShapeProto* value);
absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, TensorProto* value);
absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, std::vector<int64_t>* value);
absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, std::vector<DataType>* value);
absl::Status GetNodeAttr(const NodeDef& def, absl::string_view name, std::vector<std::string>* value);
const AttrValue* FindAttr(const NodeDef& def, absl::string_view name);

// AttrValue constructors for building graphs in code.
AttrValue MakeAttr(absl::string_view s);
AttrValue MakeAttr(const char* s);
AttrValue MakeAttr(int64_t i);
AttrValue MakeAttr(int i);
AttrValue MakeAttr(float f);
AttrValue MakeAttr(double f);
AttrValue MakeAttr(bool b);
AttrValue MakeAttr(DataType t);
AttrValue MakeAttr(const TensorShape& shape);
AttrValue MakeAttr(const TensorShapeProto& shape);
AttrValue MakeAttr(const Tensor& tensor);
AttrValue MakeAttr(const std::vector<int64_t>& list);
AttrValue MakeAttr(const std::vector<DataType>& list);
AttrValue MakeAttr(const std::vector<std::string>& list);

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_NODE_DEF_UTIL_H_
