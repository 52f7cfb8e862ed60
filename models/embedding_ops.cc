// Partitioned lookups and sampled softmax as graph nodes (see embedding_ops.h).
#include "models/embedding_ops.h"

#include "absl/strings/str_cat.h"
#include "engine/framework/node_def_util.h"

namespace sluice {
namespace models {
namespace {

Output IntVector(GraphBuilder* b, const std::string& name, std::vector<int32_t> values) {
  return b->Const(name, Tensor::FromVector<int32_t>(values));
}

Output Cast(GraphBuilder* b, const std::string& name, Output x, DataType to) {
  if (!x.valid() || x.dtype() == to) return x;
  return b->Op(name, "Cast", {x}, {{"SrcT", MakeAttr(x.dtype())}, {"DstT", MakeAttr(to)}});
}

// int32 Range(start, limit, delta) as a node (not a constant: a constant of
// a million-row table's row numbers would sit in the GraphDef).
Output RowRange(GraphBuilder* b, const std::string& name, int64_t start, int64_t limit, int64_t delta) {
  GraphBuilder rb = b->WithSubPrefix(name);
  return rb.Op("range", "Range",
               {rb.Scalar<int32_t>("start", static_cast<int32_t>(start)),
                rb.Scalar<int32_t>("limit", static_cast<int32_t>(limit)),
                rb.Scalar<int32_t>("delta", static_cast<int32_t>(delta))});
}

}  // namespace

int64_t PartRows(int64_t rows, int num_parts, int part) {
  if (num_parts <= 1) return rows;
  return part >= rows ? 0 : (rows - part + num_parts - 1) / num_parts;
}

namespace {

// Gathers rows of `table` where the table lives (TensorFlow colocates an
// embedding lookup with its parameters): in a cluster only the rows cross
// to the worker, not the whole part.
Output ColocatedGather(GraphBuilder* b, const std::string& name, Output table, Output ids) {
  AttrList attrs;
  if (table.valid()) {
    AttrValue where;
    where.mutable_list()->add_s(absl::StrCat("loc:@", table.node->name()));
    attrs["_class"] = where;
  }
  return b->Op(name, "Gather", {table, ids}, attrs);
}

}  // namespace

Output PartitionedLookup(GraphBuilder* b, const std::vector<Output>& parts, Output ids) {
  if (parts.size() == 1) return ColocatedGather(b, "Gather", parts[0], ids);
  const int n = static_cast<int>(parts.size());
  GraphBuilder lb = b->WithSubPrefix("lookup");
  const DataType it = ids.valid() ? ids.dtype() : DT_INT64;
  Output flat = lb.Op("flat_ids", "Reshape", {ids, IntVector(&lb, "minus_one", {-1})});
  Output num_parts = lb.ScalarOfType("num_parts", it, n);
  Output which = Cast(&lb, "part_of_id", lb.Op("id_mod_parts", "FloorMod", {flat, num_parts}), DT_INT32);
  Output local = lb.Op("id_div_parts", "FloorDiv", {flat, num_parts});
  Output positions = lb.Op("positions", "Range",
                           {lb.Scalar<int32_t>("zero", 0), lb.Op("count", "Size", {flat}), lb.Scalar<int32_t>("one", 1)});
  const AttrList n_parts = {{"num_partitions", MakeAttr(int64_t{n})}};
  Node* local_parts = lb.AddNode("local_ids", "DynamicPartition", {local, which}, n_parts);
  Node* position_parts = lb.AddNode("positions_by_part", "DynamicPartition", {positions, which}, n_parts);
  if (local_parts == nullptr || position_parts == nullptr) return Output();
  std::vector<Output> inputs;
  for (int p = 0; p < n; ++p) inputs.push_back(Output{position_parts, p});
  for (int p = 0; p < n; ++p) {
    inputs.push_back(ColocatedGather(&lb, absl::StrCat("gather_", p), parts[p], Output{local_parts, p}));
  }
  Output rows = lb.Op("stitch", "DynamicStitch", inputs, {{"N", MakeAttr(int64_t{n})}});
  // ids.shape + the shape of one row.
  Output row_shape = lb.Op("row_shape", "Slice",
                           {lb.Op("rows_shape", "Shape", {rows}), IntVector(&lb, "begin", {1}), IntVector(&lb, "size", {-1})});
  Output shape = lb.Op("shape", "ConcatV2", {lb.Op("ids_shape", "Shape", {ids}), row_shape, lb.Scalar<int32_t>("axis", 0)});
  return b->Op("Gather", "Reshape", {rows, shape});
}

Output StitchParts(GraphBuilder* b, const std::vector<Output>& parts, int64_t rows) {
  if (parts.size() == 1) return parts[0];
  const int n = static_cast<int>(parts.size());
  GraphBuilder sb = b->WithSubPrefix("whole");
  std::vector<Output> inputs;
  for (int p = 0; p < n; ++p) inputs.push_back(RowRange(&sb, absl::StrCat("rows_", p), p, rows, n));
  for (int p = 0; p < n; ++p) inputs.push_back(parts[p]);
  return sb.Op("stitch", "DynamicStitch", inputs, {{"N", MakeAttr(int64_t{n})}});
}

Output PartOfWhole(GraphBuilder* b, Output whole, int64_t rows, int num_parts, int part) {
  if (num_parts <= 1) return whole;
  GraphBuilder pb = b->WithSubPrefix(absl::StrCat("part_", part));
  return pb.Op("rows", "Gather", {whole, RowRange(&pb, "row_ids", part, rows, num_parts)});
}

Output SampledSoftmaxLoss(GraphBuilder* b, const std::vector<Output>& weights, const std::vector<Output>& biases,
                          Output inputs, Output labels, const SampledSoftmaxOptions& o) {
  Output labels64 = Cast(b, "labels_int64", labels, DT_INT64);
  Output flat_labels = b->Op("flat_labels", "Reshape", {labels64, IntVector(b, "minus_one", {-1})});
  Output true_classes = b->Op("true_classes", "Reshape", {labels64, IntVector(b, "column", {-1, 1})});
  std::vector<Output> sampler_inputs = {true_classes};
  if (o.step.valid()) sampler_inputs.push_back(o.step);
  Node* sampler = b->AddNode("sampler", o.step.valid() ? "LogUniformCandidateSamplerAtStep" : "LogUniformCandidateSampler",
                             sampler_inputs,
                             {{"num_true", MakeAttr(int64_t{1})},
                              {"num_sampled", MakeAttr(o.num_sampled)},
                              {"unique", MakeAttr(true)},
                              {"range_max", MakeAttr(o.num_classes)},
                              {"seed", MakeAttr(o.seed)},
                              {"seed2", MakeAttr(o.seed2)}});
  if (sampler == nullptr) return Output();
  const Output sampled{sampler, 0}, true_expected{sampler, 1}, sampled_expected{sampler, 2};
  // The true class of each example: w_y . x + b_y - log Q(y).
  GraphBuilder tb = b->WithSubPrefix("true");
  Output true_w = PartitionedLookup(&tb, weights, flat_labels);
  Output true_b = PartitionedLookup(&tb, biases, flat_labels);
  Output dots = tb.Op("dots", "Sum", {tb.Op("products", "Mul", {inputs, true_w}), tb.Scalar<int32_t>("axis", 1)});
  Output true_logits = tb.Op("logits", "Add", {dots, true_b});
  Output log_q_true = tb.Op("log_expected", "Log",
                            {tb.Op("expected", "Reshape", {true_expected, IntVector(&tb, "minus_one", {-1})})});
  true_logits = tb.Op("logits_minus_log_q", "Sub", {true_logits, log_q_true});
  // The sampled classes: [batch, num_sampled].
  GraphBuilder sb = b->WithSubPrefix("sampled");
  Output sampled_w = PartitionedLookup(&sb, weights, sampled);
  Output sampled_b = PartitionedLookup(&sb, biases, sampled);
  Output sampled_logits = sb.Op("logits", "Add",
                                {sb.Op("matmul", "MatMul", {inputs, sampled_w}, {{"transpose_b", MakeAttr(true)}}),
                                 sampled_b});
  if (o.remove_accidental_hits) {
    // A sampled class equal to the example's true class gets -FLT_MAX added.
    GraphBuilder hb = b->WithSubPrefix("accidental_hits");
    Node* hits = hb.AddNode("hits", "ComputeAccidentalHits", {true_classes, sampled},
                            {{"num_true", MakeAttr(int64_t{1})}, {"seed", MakeAttr(o.seed)}, {"seed2", MakeAttr(o.seed2)}});
    if (hits == nullptr) return Output();
    Output column = IntVector(&hb, "column", {-1, 1});
    Output rows = hb.Op("rows", "Reshape", {Cast(&hb, "rows_int64", Output{hits, 0}, DT_INT64), column});
    Output cols = hb.Op("cols", "Reshape", {Output{hits, 1}, column});
    Output where = hb.Op("indices", "ConcatV2", {rows, cols, hb.Scalar<int32_t>("axis", 1)});
    Output shape = hb.Op("shape", "Shape", {sampled_logits}, {{"out_type", MakeAttr(DT_INT64)}});
    Output mask = hb.Op("mask", "SparseToDense", {where, shape, Output{hits, 2}, hb.Scalar<float>("zero", 0.0f)},
                        {{"validate_indices", MakeAttr(false)}});
    sampled_logits = sb.Op("logits_masked", "Add", {sampled_logits, mask});
  }
  sampled_logits = sb.Op("logits_minus_log_q", "Sub", {sampled_logits, sb.Op("log_expected", "Log", {sampled_expected})});
  // Column 0 holds the true class: a sparse label of 0 for every example.
  Output logits = b->Op("logits", "ConcatV2",
                        {b->Op("true_column", "Reshape", {true_logits, IntVector(b, "column", {-1, 1})}), sampled_logits,
                         b->Scalar<int32_t>("axis", 1)});
  Output zeros = b->Op("true_position", "ZerosLike", {flat_labels});
  Node* xent = b->AddNode("xent", "SparseSoftmaxCrossEntropyWithLogits", {logits, zeros});
  return xent == nullptr ? Output() : Output{xent, 0};
}

Output FullSoftmaxLogits(GraphBuilder* b, const std::vector<Output>& weights, const std::vector<Output>& biases,
                         Output inputs, int64_t num_classes) {
  Output w = StitchParts(b, weights, num_classes);
  Output bias = StitchParts(b, biases, num_classes);
  return b->Op("logits", "Add", {b->Op("matmul", "MatMul", {inputs, w}, {{"transpose_b", MakeAttr(true)}}), bias});
}

Output FullSoftmaxLoss(GraphBuilder* b, const std::vector<Output>& weights, const std::vector<Output>& biases,
                       Output inputs, Output labels, int64_t num_classes) {
  Output logits = FullSoftmaxLogits(b, weights, biases, inputs, num_classes);
  Node* xent = b->AddNode("xent", "SparseSoftmaxCrossEntropyWithLogits", {logits, labels});
  return xent == nullptr ? Output() : Output{xent, 0};
}

}  // namespace models
}  // namespace sluice
