// Helpers of the fusion passes' tests (optimizer_fusion_test.cc,
// optimizer_pool_grad_fusion_test.cc): build a graph on one device, and read
// a node's def, inputs and the count of an op back from it; a stand-in
// kernel for a device type other than the CPU.
// Thread safety: functions of their arguments.
#ifndef SLUICE_ENGINE_GRAPH_FUSION_TEST_UTIL_H_
#define SLUICE_ENGINE_GRAPH_FUSION_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "engine/framework/op_kernel.h"
#include "engine/graph/graph_constructor.h"
#include "gtest/gtest.h"

namespace sluice {
namespace fusion_test {

constexpr char kCpu[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr char kGpu[] = "/job:localhost/replica:0/task:0/device:GPU:0";
// A device type for which the tests register stand-in kernels of the fused
// ops (the GPU's are not linked into these tests): chains on it fuse.
constexpr char kXpuType[] = "XPU";
constexpr char kXpu[] = "/job:localhost/replica:0/task:0/device:XPU:0";

// The kernel the tests register for kXpuType; the passes only ask whether one
// exists, nothing runs it.
class StandInKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
};

// Builds the graph with every node on `device`.
inline std::unique_ptr<Graph> MustBuild(const GraphDef& def, const std::string& device = kCpu) {
  auto g = GraphFromGraphDef(def);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return nullptr;
  for (Node* n : (*g)->nodes()) n->set_assigned_device(device);
  return std::move(g).value();
}

inline NodeDef DefOf(const Graph& g, const std::string& node) {
  GraphDef def;
  g.ToGraphDef(&def);
  for (const NodeDef& n : def.node()) {
    if (n.name() == node) return n;
  }
  ADD_FAILURE() << "no node " << node;
  return NodeDef();
}

inline std::vector<std::string> InputsOf(const Graph& g, const std::string& node) {
  NodeDef n = DefOf(g, node);
  return {n.input().begin(), n.input().end()};
}

inline int CountOps(const Graph& g, const std::string& op) {
  int n = 0;
  for (Node* node : g.nodes()) n += node->type_string() == op;
  return n;
}

}  // namespace fusion_test
}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_FUSION_TEST_UTIL_H_
