// Symbolic differentiation by graph extension (whitepaper §4.1): for y = f(x)
// the gradient dy/dx is built as more nodes in the same graph, walking back
// from the ys, applying each op's registered gradient function
// (OpDefBuilder::SetGradient, beside the op's registration) and summing the
// contributions of every path with AddN. Gradients of Gather-like ops stay
// sparse (IndexedSlices) until they meet a dense consumer.
//
// Control flow: conds and while loops built by engine/graph/
// control_flow_builders.h are differentiated (Switch and Merge have gradients;
// each loop is differentiated as a unit by engine/graph/while_gradient.h).
// Other Enter/Exit/NextIteration structures on a path are Unimplemented.
// Thread safety: mutates the graph; one caller at a time.
#ifndef SLUICE_ENGINE_GRAPH_GRADIENTS_H_
#define SLUICE_ENGINE_GRAPH_GRADIENTS_H_

#include <initializer_list>
#include <vector>

#include "absl/status/status.h"
#include "engine/graph/graph_builder.h"

namespace sluice {

// A sparse gradient: rows `indices` of a tensor of shape `dense_shape` hold
// `values` (TensorFlow's IndexedSlices).
struct IndexedSlices {
  Output values;
  Output indices;
  Output dense_shape;
};

// One gradient: dense, sparse, or absent (no path from the ys).
struct Gradient {
  Output dense;
  IndexedSlices sparse;
  bool is_sparse = false;
  bool present() const { return is_sparse ? sparse.values.valid() : dense.valid(); }
};

// What an op's gradient function sees: the forward node, its inputs and
// outputs, the incoming gradient of each output, and a builder for new nodes.
class GradientBuilder {
 public:
  GradientBuilder(const Node* node, std::vector<Output> inputs, std::vector<Output> grads, GraphBuilder builder);

  const Node& node() const { return *node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return node_->num_outputs(); }
  Output input(int i) const { return inputs_[i]; }
  Output output(int i) const { return Output{const_cast<Node*>(node_), i}; }
  // dL/d(output i); a zeros tensor shaped like the output when no gradient
  // reached it (built on first use).
  Output grad(int i);
  bool has_grad(int i) const { return grads_[i].valid(); }
  template <typename T>
  absl::Status GetAttr(absl::string_view name, T* value) const {
    return GetNodeAttr(node_->def(), name, value);
  }
  GraphBuilder& b() { return builder_; }
  // The listed attrs of the forward node (those it has), for a gradient op
  // that takes the same settings (data_format, epsilon, ...).
  AttrList ForwardAttrs(std::initializer_list<const char*> names) const;

  // Results: the gradient for each input (unset inputs get none).
  void SetInputGrad(int i, Output grad);
  void SetInputGradSparse(int i, IndexedSlices grad);
  const std::vector<Gradient>& input_grads() const { return input_grads_; }

 private:
  const Node* node_;
  std::vector<Output> inputs_;
  std::vector<Output> grads_;
  GraphBuilder builder_;
  std::vector<Gradient> input_grads_;
};

// Adds the nodes computing d(sum_i <grad_ys[i], ys[i]>)/d(xs[j]) for each j.
// `grad_ys` empty means ones for every y. `grads` is parallel to `xs`; an x
// no y depends on gets an absent Gradient. Errors: an op on a path without a
// gradient (naming it), control flow on a path (Unimplemented), mismatched
// grad_ys.
absl::Status AddSymbolicGradients(Graph* graph, const std::vector<Output>& ys, const std::vector<Output>& xs,
                                  const std::vector<Output>& grad_ys, std::vector<Gradient>* grads,
                                  const std::string& name_prefix = "gradients");

// Converts a sparse gradient to a dense one (UnsortedSegmentSum-free form:
// ScatterNd-style via the op library's "IndexedSlicesToDense" composition).
// Returns the dense gradient unchanged.
Output DenseGradient(GraphBuilder* b, const Gradient& g);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_GRADIENTS_H_
