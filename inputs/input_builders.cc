// Input-pipeline graph builders.
#include "inputs/input_builders.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"  // kOrdersItsInputCopiesAttr

namespace sluice {
namespace {

AttrValue TypeList(const std::vector<DataType>& types) { return MakeAttr(types); }

AttrValue ShapeList(const std::vector<TensorShape>& shapes) {
  AttrValue v;
  auto* list = v.mutable_list();
  for (const TensorShape& s : shapes) s.AsProto(list->add_shape());
  return v;
}

}  // namespace

std::string InputGraph::AddNode(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                                const std::map<std::string, AttrValue>& attrs) {
  NodeDef* n = graph->add_node();
  n->set_name(name);
  n->set_op(op);
  for (const std::string& i : inputs) n->add_input(i);
  for (const auto& [k, v] : attrs) (*n->mutable_attr())[k] = v;
  return name;
}

std::string InputGraph::AddConst(const std::string& name, const Tensor& value) {
  return AddNode(name, "Const", {}, {{"dtype", MakeAttr(value.dtype())}, {"value", MakeAttr(value)}});
}

absl::StatusOr<std::string> AddStringInputProducer(InputGraph* in, const std::vector<std::string>& files,
                                                   const ProducerOptions& o) {
  if (files.empty()) return absl::InvalidArgumentError(absl::StrCat(o.scope, ": no input files"));
  if (o.num_epochs < 0) return absl::InvalidArgumentError(absl::StrCat(o.scope, ": num_epochs must be >= 0"));
  const std::string& s = o.scope;
  std::vector<tstring> names(files.begin(), files.end());
  std::string list = in->AddConst(s + "/files", Tensor::FromVector<tstring>(names));
  std::string queue = in->AddNode(s + "/queue", "FIFOQueue", {},
                                  {{"component_types", TypeList({DT_STRING})},
                                   {"shapes", ShapeList({TensorShape()})},
                                   {"capacity", MakeAttr(static_cast<int64_t>(o.capacity))},
                                   {"container", MakeAttr(in->container)}});
  // The epoch counter counts the epochs enqueued; a resumed run sets it
  // (input_builders.h). Its value before the increment keys the epoch's
  // file order.
  std::string epochs = in->AddNode(s + "/epochs", "VariableV2", {},
                                   {{"shape", MakeAttr(TensorShape())},
                                    {"dtype", MakeAttr(DT_INT64)},
                                    {"container", MakeAttr(in->container)}});
  std::string zero = in->AddConst(s + "/epochs/zero", Tensor::Scalar<int64_t>(0));
  in->init_ops.push_back(in->AddNode(s + "/epochs/init", "Assign", {epochs, zero}, {{"T", MakeAttr(DT_INT64)}}));
  const int64_t limit = o.num_epochs > 0 ? o.num_epochs : std::numeric_limits<int64_t>::max();
  std::string epoch = in->AddNode(s + "/epochs/count", "CountUpTo", {epochs},
                                  {{"limit", MakeAttr(limit)}, {"T", MakeAttr(DT_INT64)}});
  std::vector<std::string> deps;
  std::string source = list;
  if (o.shuffle) {
    source = in->AddNode(s + "/shuffle", "ShuffleForEpoch", {list, epoch},
                         {{"T", MakeAttr(DT_STRING)}, {"seed", MakeAttr(o.seed)}});
  } else {
    deps.push_back("^" + epoch);
  }
  std::vector<std::string> enqueue_inputs = {queue, source};
  enqueue_inputs.insert(enqueue_inputs.end(), deps.begin(), deps.end());
  std::string enqueue =
      in->AddNode(s + "/enqueue", "QueueEnqueueMany", enqueue_inputs, {{"Tcomponents", TypeList({DT_STRING})}});
  std::string close = in->AddNode(s + "/close", "QueueClose", {queue}, {{"cancel_pending_enqueues", MakeAttr(false)}});
  std::string cancel =
      in->AddNode(s + "/cancel", "QueueClose", {queue}, {{"cancel_pending_enqueues", MakeAttr(true)}});
  in->runners.push_back({queue, {enqueue}, close, cancel});
  return queue;
}

std::pair<std::string, std::string> AddReaderRead(InputGraph* in, const std::string& reader_op,
                                                  const std::string& filename_queue, const std::string& scope,
                                                  const std::map<std::string, AttrValue>& reader_attrs) {
  std::map<std::string, AttrValue> attrs = reader_attrs;
  attrs["container"] = MakeAttr(in->container);
  std::string reader = in->AddNode(scope + "/reader", reader_op, {}, attrs);
  std::string read = in->AddNode(scope + "/read", "ReaderRead", {reader, filename_queue});
  return {read + ":0", read + ":1"};
}

std::pair<std::string, std::string> AddReaderReadUpTo(InputGraph* in, const std::string& reader_op,
                                                      const std::string& filename_queue, int64_t num_records,
                                                      const std::string& scope,
                                                      const std::map<std::string, AttrValue>& reader_attrs) {
  std::map<std::string, AttrValue> attrs = reader_attrs;
  attrs["container"] = MakeAttr(in->container);
  std::string reader = in->AddNode(scope + "/reader", reader_op, {}, attrs);
  std::string n = in->AddConst(scope + "/num_records", Tensor::Scalar<int64_t>(num_records));
  std::string read = in->AddNode(scope + "/read", "ReaderReadUpTo", {reader, filename_queue, n});
  return {read + ":0", read + ":1"};
}

std::vector<std::string> AddParseSingleExample(InputGraph* in, const std::string& serialized,
                                               const std::vector<FeatureSpec>& features, const std::string& scope) {
  std::vector<std::string> inputs = {serialized, in->AddConst(scope + "/names", Tensor(DT_STRING, TensorShape({0})))};
  std::vector<std::string> defaults;
  std::vector<DataType> types;
  std::vector<TensorShape> shapes;
  for (size_t i = 0; i < features.size(); ++i) {
    inputs.push_back(in->AddConst(absl::StrCat(scope, "/key_", i), Tensor::Scalar<tstring>(features[i].key)));
    defaults.push_back(in->AddConst(absl::StrCat(scope, "/default_", i), Tensor(features[i].dtype, TensorShape({0}))));
    types.push_back(features[i].dtype);
    shapes.push_back(features[i].shape);
  }
  inputs.insert(inputs.end(), defaults.begin(), defaults.end());
  std::string parse = in->AddNode(scope + "/parse", "ParseExample", inputs,
                                  {{"Nsparse", MakeAttr(int64_t{0})},
                                   {"Ndense", MakeAttr(static_cast<int64_t>(features.size()))},
                                   {"sparse_types", TypeList({})},
                                   {"Tdense", TypeList(types)},
                                   {"dense_shapes", ShapeList(shapes)}});
  std::vector<std::string> out;
  for (size_t i = 0; i < features.size(); ++i) out.push_back(absl::StrCat(parse, ":", i));
  return out;
}

absl::StatusOr<std::vector<std::string>> AddBatch(InputGraph* in, const std::vector<TensorSpec>& tensors,
                                                  const BatchOptions& o) {
  if (tensors.empty()) return absl::InvalidArgumentError(absl::StrCat(o.scope, ": nothing to batch"));
  if (o.batch_size <= 0 || o.num_threads <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(o.scope, ": batch_size and num_threads must be positive"));
  }
  if (o.shuffle && o.min_after_dequeue >= o.capacity) {
    return absl::InvalidArgumentError(absl::StrCat(o.scope, ": min_after_dequeue (", o.min_after_dequeue,
                                                   ") must be below the capacity (", o.capacity, ")"));
  }
  std::vector<DataType> types;
  std::vector<TensorShape> shapes;
  std::vector<std::string> enqueue_inputs = {""};
  for (const TensorSpec& t : tensors) {
    types.push_back(t.dtype);
    shapes.push_back(t.shape);
    enqueue_inputs.push_back(t.tensor);
  }
  std::map<std::string, AttrValue> attrs = {{"component_types", TypeList(types)},
                                            {"shapes", ShapeList(shapes)},
                                            {"capacity", MakeAttr(static_cast<int64_t>(o.capacity))},
                                            {"container", MakeAttr(in->container)}};
  if (o.shuffle) {
    attrs["min_after_dequeue"] = MakeAttr(static_cast<int64_t>(o.min_after_dequeue));
    attrs["seed"] = MakeAttr(o.seed);
    attrs["seed2"] = MakeAttr(int64_t{2});
  }
  std::string queue = in->AddNode(o.scope + "/queue", o.shuffle ? "RandomShuffleQueue" : "FIFOQueue", {}, attrs);
  enqueue_inputs[0] = queue;
  std::string enqueue = in->AddNode(o.scope + "/enqueue", o.enqueue_many ? "QueueEnqueueMany" : "QueueEnqueue",
                                    enqueue_inputs,
                                    {{"Tcomponents", TypeList(types)}});
  std::string n = in->AddConst(o.scope + "/n", Tensor::Scalar<int32_t>(o.batch_size));
  std::string dequeue = in->AddNode(o.scope + "/dequeue",
                                    o.allow_smaller_final_batch ? "QueueDequeueUpTo" : "QueueDequeueMany", {queue, n},
                                    {{"component_types", TypeList(types)}});
  std::string close = in->AddNode(o.scope + "/close", "QueueClose", {queue}, {{"cancel_pending_enqueues", MakeAttr(false)}});
  std::string cancel =
      in->AddNode(o.scope + "/cancel", "QueueClose", {queue}, {{"cancel_pending_enqueues", MakeAttr(true)}});
  in->runners.push_back({queue, std::vector<std::string>(o.num_threads, enqueue), close, cancel});
  std::vector<std::string> out;
  for (size_t i = 0; i < tensors.size(); ++i) out.push_back(absl::StrCat(dequeue, ":", i));
  if (!o.stage) return out;
  // The Unstage's shapes: the dequeued batch's (the batch dimension unknown
  // when the last batch may be smaller).
  AttrValue batch_shapes;
  for (const TensorShape& element : shapes) {
    TensorShapeProto* shape = batch_shapes.mutable_list()->add_shape();
    shape->add_dim()->set_size(o.allow_smaller_final_batch ? -1 : o.batch_size);
    for (int64_t d : element.dim_sizes()) shape->add_dim()->set_size(d);
  }
  const std::string area = o.scope + "/staged";
  // Every Stage kernel keeps its promise (kOrdersItsInputCopiesAttr): the
  // CPU's has no copies to order, a GPU's tuples carry their copies' event.
  const std::string stage = in->AddNode(o.scope + "/stage", "Stage", out,
                                        {{"dtypes", TypeList(types)},
                                         {"capacity", MakeAttr(int64_t{2})},
                                         {"container", MakeAttr(in->container)},
                                         {"shared_name", MakeAttr(area)},
                                         {kOrdersItsInputCopiesAttr, MakeAttr(true)}});
  const std::string unstage = in->AddNode(o.scope + "/unstage", "Unstage", {},
                                          {{"dtypes", TypeList(types)},
                                           {"shapes", batch_shapes},
                                           {"container", MakeAttr(in->container)},
                                           {"shared_name", MakeAttr(area)},
                                           {"_class", MakeAttr(absl::StrCat("loc:@", stage))}});
  in->stage_ops.push_back(stage);
  out.clear();
  for (size_t i = 0; i < tensors.size(); ++i) out.push_back(absl::StrCat(unstage, ":", i));
  return out;
}

}  // namespace sluice
