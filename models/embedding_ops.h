// Graph construction for large tables (OSDI §4.2 sparse embeddings, §6.4
// sampled softmax): row lookups in a table split into parts by row modulo
// the number of parts (TensorFlow's partition_strategy="mod"), the whole
// table reassembled from its parts, and TensorFlow's sampled softmax loss
// (tf.nn.sampled_softmax_loss: log-uniform candidates, subtract_log_q,
// accidental hits removed) with the full softmax for evaluation.
//
// A table of R rows in N parts: part p holds rows p, p + N, p + 2N, ..., row
// r at position r / N, so part p has (R - p + N - 1) / N rows. Lookups
// gather from each part only the rows asked for, so their gradients stay
// sparse (IndexedSlices of each part). With one part a lookup is a plain
// Gather.
//
// Thread safety: graph construction; one builder per graph.
#ifndef SLUICE_MODELS_EMBEDDING_OPS_H_
#define SLUICE_MODELS_EMBEDDING_OPS_H_

#include <cstdint>
#include <vector>

#include "engine/graph/graph_builder.h"

namespace sluice {
namespace models {

// Rows of part p of a table of `rows` rows in `num_parts` parts.
int64_t PartRows(int64_t rows, int num_parts, int part);

// The rows `ids` (int32 or int64, any shape) of the table held in `parts`:
// ids.shape + the rows' shape. DynamicPartition by id mod N, Gather of id / N
// in each part, DynamicStitch back into the order of `ids`.
Output PartitionedLookup(GraphBuilder* b, const std::vector<Output>& parts, Output ids);

// The whole table [rows, ...] from its parts (DynamicStitch of each part at
// rows p, p + N, ...). One part: that part itself.
Output StitchParts(GraphBuilder* b, const std::vector<Output>& parts, int64_t rows);

// Rows p, p + N, ... of a whole table `whole` (the initial value or the
// restored value of part p): Gather of Range(p, rows, N).
Output PartOfWhole(GraphBuilder* b, Output whole, int64_t rows, int num_parts, int part);

struct SampledSoftmaxOptions {
  int64_t num_classes = 0;
  int64_t num_sampled = 0;
  bool remove_accidental_hits = true;
  // Of the LogUniformCandidateSampler (unique = true).
  int64_t seed = 0;
  int64_t seed2 = 0;
  // The global step (int64 scalar): when valid, the classes are drawn at it
  // (LogUniformCandidateSamplerAtStep), so a resumed run samples the ones an
  // uninterrupted run would; invalid: TensorFlow's sampler, numbered by run.
  Output step;
};

// The per-example sampled softmax loss [batch] of `inputs` [batch, dim]
// (float) for `labels` [batch] (int32 or int64 class ids), with output
// weights [num_classes, dim] and biases [num_classes] held in parts (as
// above). The sampler is the node "<prefix>sampler" (outputs: sampled
// candidates, true and sampled expected counts); tests feed it.
Output SampledSoftmaxLoss(GraphBuilder* b, const std::vector<Output>& weights, const std::vector<Output>& biases,
                          Output inputs, Output labels, const SampledSoftmaxOptions& options);

// The logits [batch, num_classes] over all classes: inputs . weights^T +
// biases (the parts stitched whole).
Output FullSoftmaxLogits(GraphBuilder* b, const std::vector<Output>& weights, const std::vector<Output>& biases,
                         Output inputs, int64_t num_classes);

// The per-example full softmax cross-entropy [batch] of FullSoftmaxLogits.
Output FullSoftmaxLoss(GraphBuilder* b, const std::vector<Output>& weights, const std::vector<Output>& biases,
                       Output inputs, Output labels, int64_t num_classes);

}  // namespace models
}  // namespace sluice

#endif  // SLUICE_MODELS_EMBEDDING_OPS_H_
