// Shape no-ops: a node whose result is its input, which a graph's static
// shapes prove, becomes an Identity (and identity-chain removal, which runs
// after it, then drops it). Gradients are full of them: the gradient of
// x + y for tensors of one shape is Reshape(Sum(dz, axes), shape_x), where
// constant folding turns axes into an empty vector and shape_x into x's own
// shape; TensorFlow's GraphDefs carry the same nodes.
//
// The ops, with their input 0 and output 0 statically fully defined and equal
// in shape (and of one type), and their input 1 (a shape, multiples, axes)
// known whole statically (a Const, or Shape(x) of a fully defined x: a value
// fed or computed at run time could be one the kernel refuses):
//  - Reshape, BroadcastTo, Tile (every multiple is then 1, or the tensor is
//    empty), Squeeze: each element stays where it is;
//  - Sum, Mean, Prod, Max, Min: a reduction over no axes, or over axes of size
//    1 with keep_dims, of one element each.
// The Identity keeps the node's name, devices and control edges, and its
// input 0; the other inputs (shapes, axes, multiples) lose a reader. Left
// alone: ref inputs, nodes a Switch reaches (dead when any input is, where
// the Identity would follow input 0 only), nodes `keep` protects, nodes
// whose device has no Identity kernel for the type. Static shapes take a
// variable at its declared shape, as constant folding does (an Assign with
// validate_shape false to another shape is outside what they prove).
//
// The data format pass relies on it: an Identity is an element-wise node it
// moves into the converted format, where a Reshape or a Sum would keep a
// Transpose on each side (engine/graph/optimizer_layout.h).
//
// Thread safety: a free function over the caller's graph.
#ifndef SLUICE_ENGINE_GRAPH_OPTIMIZER_SHAPE_NOOPS_H_
#define SLUICE_ENGINE_GRAPH_OPTIMIZER_SHAPE_NOOPS_H_

#include <functional>

#include "engine/graph/graph.h"

namespace sluice {

struct ShapeNoOpOptions {
  // Nodes for which this returns true are left as they are.
  std::function<bool(const Node*)> keep;
};

// Returns how many nodes became Identities.
int ReplaceShapeNoOpsWithIdentities(const ShapeNoOpOptions& options, Graph* graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_OPTIMIZER_SHAPE_NOOPS_H_
