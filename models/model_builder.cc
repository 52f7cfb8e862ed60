// Layers, initializers, losses and metrics as graph nodes.
#include "models/model_builder.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "configs/eval_values.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/framework/node_def_util.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/shape_refiner.h"
#include "models/embedding_ops.h"
#include "models/gru_layer.h"
#include "models/lstm_layer.h"

namespace sluice {
namespace models {

int64_t ModelOutputs::parameters() const {
  int64_t n = 0;
  for (const VariableInfo& v : variables) {
    if (v.trainable) n += v.shape.num_elements();
  }
  return n;
}

namespace {

using config::Experiment;
using config::Initializer;
using config::Layer;

Tensor ShapeTensor(const std::vector<int64_t>& dims) {
  std::vector<int32_t> d(dims.begin(), dims.end());
  return Tensor::FromVector<int32_t>(d);
}

std::string ShapeString(const PartialShape& s) {
  if (!s.rank_known()) return "<unknown>";
  std::vector<std::string> parts;
  for (int i = 0; i < s.rank(); ++i) parts.push_back(s.dim(i) < 0 ? (i == 0 ? "batch" : "?") : absl::StrCat(s.dim(i)));
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

// "[3,3,1,64]"; an unknown dim is "batch" first, "?" elsewhere.
std::string DimsString(const std::vector<int64_t>& dims) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < dims.size(); ++i) {
    parts.push_back(dims[i] >= 0 ? absl::StrCat(dims[i]) : i == 0 ? "batch" : "?");
  }
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

// The product of the known (non-negative) dims in double, where it cannot
// overflow: config sizes are each at most 2^31 - 1 but their products are
// not bounded. With `skip_zeros`, 0 dims count as 1: TensorShape rejects
// (CHECKs, in its constructor) a shape whose non-zero dims overflow even
// when a 0 dim makes it empty.
double KnownProduct(const std::vector<int64_t>& dims, bool skip_zeros = false) {
  double n = 1;
  for (int64_t d : dims) n *= d < 0 || (skip_zeros && d == 0) ? 1.0 : static_cast<double>(d);
  return n;
}

class ModelCompiler {
 public:
  ModelCompiler(const config::LoadedExperiment& loaded, const ModelOptions& options, GraphBuilder* b,
                ModelOutputs* out, config::ConfigErrors* errors)
      : loaded_(loaded), e_(loaded.experiment), options_(options), root_(*b), out_(out), errors_(errors) {}

  absl::Status Build(const std::map<std::string, Feature>& features) {
    out_->named = features;
    for (int i = 0; i < e_.model().layer_size(); ++i) {
      const Layer& l = e_.model().layer(i);
      Feature result;
      if (!BuildLayer(l, &result)) {  // config error recorded
        failed_.insert(l.name());
        continue;
      }
      if (!root_.ok()) return root_.status();
      // The layer's output under its own name, so raw nodes can read it.
      GraphBuilder nb = root_.WithSubPrefix(options_.tower);
      result.tensor = nb.Op(l.name(), "Identity", {result.tensor});
      out_->named[l.name()] = result;
    }
    CheckVariablesFitInMemory();
    for (int i = 0; i < e_.model().node_size(); ++i) {
      const size_t before = errors_->size();
      AddRawNode(e_.model().node(i));
      if (errors_->size() > before) failed_.insert(e_.model().node(i).name());
    }
    if (errors_->empty()) CheckRawNodeShapes();
    if (!root_.ok()) return root_.status();
    if (!errors_->empty()) return absl::OkStatus();
    BuildLosses();
    BuildMetrics();
    return root_.status();
  }

 private:
  void LayerError(const Layer& l, const std::string& message) {
    errors_->Add(loaded_.Where(l, "name"), absl::StrCat("layer '", l.name(), "': ", message));
  }

  GraphBuilder LayerBuilder(const Layer& l) {
    std::string scope = options_.tower.empty() ? l.name() : absl::StrCat(options_.tower, "/", l.name());
    return root_.WithSubPrefix(scope).WithDevice(l.device());
  }

  // Layers multiply sizes that validate.cc bounds one by one (a kernel's
  // k * k * channels * filters, a dense layer's inputs * units): a product
  // past this machine's memory is a config error located at the layer, found
  // before a TensorShape or an int64 FLOP count could overflow on it. `what`
  // is "kernel", "output" (per example), ...
  bool CheckFloats(const Layer& l, const std::string& what, const std::vector<int64_t>& dims) {
    const double count = KnownProduct(dims, /*skip_zeros=*/true);
    const double bytes = 4.0 * count, memory = MachineMemoryBytes();
    // Without a memory figure, the element-count limit of a TensorShape.
    if (memory > 0 ? bytes <= memory : count <= static_cast<double>(kMaxTensorElements)) return true;
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    const bool per_example = !dims.empty() && dims[0] < 0;
    const bool has_zero = std::find(dims.begin(), dims.end(), 0) != dims.end();
    LayerError(l, absl::StrFormat("its %s %s has %s%.3g float32 values (%.1f GiB%s), more than this machine's %.1f "
                                  "GiB of memory",
                                  what, DimsString(dims), has_zero ? "(its 0 dims aside) " : "", count, bytes / kGiB,
                                  per_example ? " per example" : "", memory / kGiB));
    return false;
  }

  // FLOPs accumulate in double and saturate at int64's maximum.
  void AddFlops(double flops) {
    const double total = static_cast<double>(out_->forward_flops_per_example) + flops;
    constexpr double kMax = 9.0e18;
    out_->forward_flops_per_example = total >= kMax ? static_cast<int64_t>(kMax) : static_cast<int64_t>(total);
  }

  // A stable hash (FNV-1a 64) of the op's name: absl::Hash is salted per
  // process, which made every run draw different initial weights for the same
  // train.seed.
  int64_t OpSeed(const std::string& name) const {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : name) {
      h ^= c;
      h *= 1099511628211ull;
    }
    return static_cast<int64_t>(h & 0x7fffffff) + 1;
  }

  // Creates (or, in a reusing tower, looks up) a variable and its initial value.
  Output Variable(GraphBuilder* b, const std::string& layer, const std::string& name, const TensorShape& shape,
                  const Initializer& init, bool default_glorot, int64_t fan_in, int64_t fan_out, float l2_weight) {
    const std::string canonical = absl::StrCat(layer, "/", name);
    layer_bytes_[layer] += 4.0 * static_cast<double>(shape.num_elements());
    AttrList attrs = {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(shape)}};
    if (options_.reuse_variables) attrs["shared_name"] = MakeAttr(canonical);
    Node* var = b->AddNode(name, "VariableV2", {}, attrs);
    if (var == nullptr) return Output();
    Output ref{var, 0};
    if (options_.reuse_variables) return ref;
    VariableInfo info;
    info.name = var->name();
    info.variable = var;
    info.shape = shape;
    info.l2_weight = l2_weight;
    info.regularized = l2_weight > 0 && name == "kernel";
    GraphBuilder ib = b->WithSubPrefix(name + "_init");
    info.initial_value = InitialValue(&ib, canonical, shape, init, default_glorot, fan_in, fan_out);
    out_->variables.push_back(info);
    return ref;
  }

  // A variable no gradient trains (trainable false), starting at `value`
  // everywhere: a batch_norm layer's moving statistics.
  Output StateVariable(GraphBuilder* b, const std::string& layer, const std::string& name, const TensorShape& shape,
                       float value) {
    Initializer init;
    init.mutable_constant()->set_value(value);
    const size_t before = out_->variables.size();
    Output v = Variable(b, layer, name, shape, init, false, 0, 0, 0);
    if (out_->variables.size() > before) out_->variables.back().trainable = false;
    return v;
  }

  // A [rows, ...] variable split into `num_parts` parts by row modulo
  // num_parts (embedding_ops.h): nodes `name`/part_<p>. Each part's initial
  // value is its rows of the whole's (drawn as one tensor under the whole's
  // name), so every row starts as it would in one variable. One part: a
  // plain Variable.
  std::vector<Output> PartitionedVariable(GraphBuilder* b, const std::string& layer, const std::string& name,
                                          const TensorShape& shape, int64_t num_parts, const Initializer& init,
                                          bool default_glorot, int64_t fan_in, int64_t fan_out, float l2_weight) {
    if (num_parts <= 1) {
      return {Variable(b, layer, name, shape, init, default_glorot, fan_in, fan_out, l2_weight)};
    }
    const std::string canonical = absl::StrCat(layer, "/", name);
    const int n = static_cast<int>(num_parts);
    const int64_t rows = shape.dim_size(0);
    layer_bytes_[layer] += 4.0 * static_cast<double>(shape.num_elements());
    Output whole_init;
    if (!options_.reuse_variables) {
      GraphBuilder ib = b->WithSubPrefix(name + "_init");
      whole_init = InitialValue(&ib, canonical, shape, init, default_glorot, fan_in, fan_out);
    }
    std::vector<Output> parts;
    for (int p = 0; p < n; ++p) {
      std::vector<int64_t> dims(shape.dim_sizes().begin(), shape.dim_sizes().end());
      dims[0] = PartRows(rows, n, p);
      const TensorShape part_shape(dims);
      const std::string part_name = absl::StrCat(name, "/part_", p);
      AttrList attrs = {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(part_shape)}};
      if (options_.reuse_variables) attrs["shared_name"] = MakeAttr(absl::StrCat(canonical, "/part_", p));
      Node* var = b->AddNode(part_name, "VariableV2", {}, attrs);
      if (var == nullptr) return {};
      parts.push_back(Output{var, 0});
      if (options_.reuse_variables) continue;
      VariableInfo info;
      info.name = var->name();
      info.variable = var;
      info.shape = part_shape;
      info.l2_weight = l2_weight;
      info.regularized = l2_weight > 0 && name == "kernel";
      GraphBuilder ib = b->WithSubPrefix(name + "_init");
      info.initial_value = PartOfWhole(&ib, whole_init, rows, n, p);
      info.logical = absl::StrCat(b->prefix().empty() ? "" : b->prefix() + "/", name);
      info.part = p;
      info.num_parts = n;
      info.logical_shape = shape;
      out_->variables.push_back(info);
    }
    return parts;
  }

  Output InitialValue(GraphBuilder* b, const std::string& name, const TensorShape& shape, const Initializer& init,
                      bool default_glorot, int64_t fan_in, int64_t fan_out) {
    std::vector<int64_t> dims(shape.dim_sizes().begin(), shape.dim_sizes().end());
    Output shape_t = b->Const("shape", ShapeTensor(dims));
    AttrList seeds = {{"dtype", MakeAttr(DT_FLOAT)}, {"seed", MakeAttr(options_.seed)}, {"seed2", MakeAttr(OpSeed(name))}};
    Initializer::KindCase kind = init.kind_case();
    if (kind == Initializer::KIND_NOT_SET) kind = default_glorot ? Initializer::kGlorotUniform : Initializer::kZeros;
    switch (kind) {
      case Initializer::kGlorotUniform: {
        const float limit = std::sqrt(6.0f / static_cast<float>(std::max<int64_t>(1, fan_in + fan_out)));
        Output u = b->Op("uniform", "RandomUniform", {shape_t}, seeds);
        Output scaled = b->Op("scale", "Mul", {u, b->Scalar<float>("two_limit", 2 * limit)});
        return b->Op("shift", "Sub", {scaled, b->Scalar<float>("limit", limit)});
      }
      case Initializer::kTruncatedNormal: {
        const float stddev = init.truncated_normal().stddev() == 0 ? 0.1f : init.truncated_normal().stddev();
        Output n = b->Op("normal", "TruncatedNormal", {shape_t}, seeds);
        Output scaled = b->Op("scale", "Mul", {n, b->Scalar<float>("stddev", stddev)});
        return b->Op("shift", "Add", {scaled, b->Scalar<float>("mean", init.truncated_normal().mean())});
      }
      case Initializer::kConstant:
        return b->Op("fill", "Fill", {shape_t, b->Scalar<float>("value", init.constant().value())});
      default:
        return b->Op("fill", "Fill", {shape_t, b->Scalar<float>("zero", 0.0f)});
    }
  }

  Output Activate(GraphBuilder* b, Output x, config::Activation a) {
    switch (a) {
      case config::RELU: return b->Op("Relu", "Relu", {x});
      case config::ELU: return b->Op("Elu", "Elu", {x});
      case config::TANH: return b->Op("Tanh", "Tanh", {x});
      case config::SIGMOID: return b->Op("Sigmoid", "Sigmoid", {x});
      case config::SOFTMAX: return b->Op("Softmax", "Softmax", {x});
      default: return x;
    }
  }

  bool Input(const Layer& l, int i, Feature* f) {
    auto it = out_->named.find(l.input(i));
    if (it == out_->named.end()) {
      // An input that failed to build has its own error already: one error
      // per mistake, not one per layer downstream of it.
      if (failed_.count(l.input(i)) == 0) LayerError(l, absl::StrCat("unknown input '", l.input(i), "'"));
      return false;
    }
    *f = it->second;
    return true;
  }

  // What the recurrent layers (lstm: 4 gates, gru: 3) check of their input
  // [batch, time, features] and their sizes; false after a located error.
  bool CheckRecurrent(const Layer& l, const std::string& kind, const PartialShape& s, int64_t units, int64_t gates) {
    if (s.rank() != 3 || s.dim(2) < 0) {
      LayerError(l, absl::StrCat(kind, " needs a [batch, time, features] input with known features, but '", l.input(0),
                                 "' is ", ShapeString(s)));
      return false;
    }
    if (units <= 0) {
      LayerError(l, absl::StrCat(kind, " needs units > 0"));
      return false;
    }
    return CheckFloats(l, "kernel", {s.dim(2), gates * units}) && CheckFloats(l, "recurrent kernel", {units, gates * units});
  }

  // A recurrent layer's output and its FLOPs per example: per step the input
  // and recurrent products and the gates.
  void RecurrentResult(const Output& out, const PartialShape& s, int64_t units, int64_t gates, bool last_only,
                       Feature* result) {
    result->tensor = out;
    result->shape = last_only ? PartialShape::FromDims({kUnknownDim, units})
                              : PartialShape::FromDims({kUnknownDim, s.dim(1), units});
    const double steps = s.dim(1) > 0 ? static_cast<double>(s.dim(1)) : 1.0;
    AddFlops(steps * (2.0 * static_cast<double>(s.dim(2) + units) * static_cast<double>(gates * units) + 10.0 * units));
  }

  bool BuildLayer(const Layer& l, Feature* result) {
    if (l.input_size() == 0) return false;
    Feature in;
    if (!Input(l, 0, &in)) return false;
    GraphBuilder b = LayerBuilder(l);
    const PartialShape& s = in.shape;
    if (!s.rank_known()) {
      LayerError(l, absl::StrCat("input '", l.input(0), "' has an unknown shape"));
      return false;
    }
    // Every input shape was checked when its layer (or the input pipeline)
    // built it, so the product of its known dims fits.
    int64_t per_example = 1;
    for (int i = 1; i < s.rank(); ++i) per_example *= s.dim(i) < 0 ? 1 : s.dim(i);
    switch (l.kind_case()) {
      case Layer::kFlatten: {
        for (int i = 1; i < s.rank(); ++i) {
          if (s.dim(i) < 0) {
            LayerError(l, absl::StrCat("cannot flatten ", ShapeString(s), ": per-example dims must be known"));
            return false;
          }
        }
        result->tensor = b.Op("Reshape", "Reshape", {in.tensor, b.Const("shape", ShapeTensor({-1, per_example}))});
        result->shape = PartialShape::FromDims({kUnknownDim, per_example});
        return true;
      }
      case Layer::kDense: {
        // [batch, features], or [batch, time, features] with the product
        // applied at every step (an LSTM's outputs). Images need a flatten.
        if (s.rank() < 2 || s.rank() > 3) {
          LayerError(l, absl::StrCat("dense needs a [batch, features] input, but '", l.input(0), "' is ",
                                     ShapeString(s), "; add a flatten layer before it"));
          return false;
        }
        const auto& d = l.dense();
        const int64_t n_in = s.dim(s.rank() - 1);
        if (n_in < 0) {
          LayerError(l, absl::StrCat("dense needs a known number of features, but '", l.input(0), "' is ",
                                     ShapeString(s)));
          return false;
        }
        if (!CheckFloats(l, "kernel", {n_in, d.units()})) return false;
        Output w = Variable(&b, l.name(), "kernel", TensorShape({n_in, d.units()}), d.kernel_initializer(), true, n_in,
                            d.units(), l.l2_weight());
        Output x = in.tensor;
        if (s.rank() > 2) x = b.Op("flat", "Reshape", {x, b.Const("flat_shape", ShapeTensor({-1, n_in}))});
        Output y = b.Op("MatMul", "MatMul", {x, w});
        if (!d.no_bias()) {
          Output bias = Variable(&b, l.name(), "bias", TensorShape({d.units()}), d.bias_initializer(), false, n_in,
                                 d.units(), 0);
          y = b.Op("BiasAdd", "BiasAdd", {y, bias});
        }
        y = Activate(&b, y, d.activation());
        std::vector<int64_t> dims(s.dims().begin(), s.dims().end());
        dims.back() = d.units();
        double positions = 1;
        if (s.rank() > 2) {
          Output leading = b.Op("leading", "Slice", {b.Op("in_shape", "Shape", {in.tensor}),
                                                     b.Const("begin", Tensor::FromVector<int32_t>({0})),
                                                     b.Const("size", Tensor::FromVector<int32_t>({s.rank() - 1}))});
          Output shape = b.Op("out_shape", "ConcatV2", {leading, b.Const("units", Tensor::FromVector<int32_t>(
                                                                                    {static_cast<int32_t>(d.units())})),
                                                        b.Scalar<int32_t>("axis", 0)});
          y = b.Op("unflat", "Reshape", {y, shape});
          for (int i = 1; i + 1 < s.rank(); ++i) positions *= s.dim(i) > 0 ? static_cast<double>(s.dim(i)) : 1.0;
        }
        result->tensor = y;
        dims[0] = kUnknownDim;
        result->shape = PartialShape::FromDims(dims);
        AddFlops(positions * 2.0 * static_cast<double>(n_in) * static_cast<double>(d.units()));
        return true;
      }
      case Layer::kConv2D: {
        if (s.rank() != 4) {
          LayerError(l, absl::StrCat("conv2d needs a [batch, height, width, channels] input, but '", l.input(0),
                                     "' is ", ShapeString(s)));
          return false;
        }
        const auto& c = l.conv2d();
        const int64_t k = c.kernel_size(), st = c.stride(), in_c = s.dim(3);
        const bool same = c.padding() == config::SAME;
        if (!same && (s.dim(1) < k || s.dim(2) < k)) {
          LayerError(l, absl::StrCat("a ", k, "x", k, " VALID window does not fit the ", ShapeString(s), " input"));
          return false;
        }
        if (in_c < 0) {
          LayerError(l, absl::StrCat("conv2d needs a known number of channels, but '", l.input(0), "' is ",
                                     ShapeString(s)));
          return false;
        }
        const int64_t h = s.dim(1) < 0 ? kUnknownDim : same ? (s.dim(1) + st - 1) / st : (s.dim(1) - k) / st + 1;
        const int64_t w_out = s.dim(2) < 0 ? kUnknownDim : same ? (s.dim(2) + st - 1) / st : (s.dim(2) - k) / st + 1;
        if (!CheckFloats(l, "kernel", {k, k, in_c, c.filters()})) return false;
        if (!CheckFloats(l, "output", {kUnknownDim, h, w_out, c.filters()})) return false;
        Output w = Variable(&b, l.name(), "kernel", TensorShape({k, k, in_c, c.filters()}), c.kernel_initializer(), true,
                            k * k * in_c, k * k * c.filters(), l.l2_weight());
        Output y = b.Op("Conv2D", "Conv2D", {in.tensor, w},
                        {{"strides", MakeAttr(std::vector<int64_t>{1, st, st, 1})},
                         {"padding", MakeAttr(same ? "SAME" : "VALID")}});
        if (!c.no_bias()) {
          Output bias = Variable(&b, l.name(), "bias", TensorShape({c.filters()}), c.bias_initializer(), false, 0, 0, 0);
          y = b.Op("BiasAdd", "BiasAdd", {y, bias});
        }
        result->tensor = Activate(&b, y, c.activation());
        result->shape = PartialShape::FromDims({kUnknownDim, h, w_out, c.filters()});
        AddFlops(2.0 * KnownProduct({k, k, in_c, c.filters(), h, w_out}));
        return true;
      }
      case Layer::kMaxPool:
      case Layer::kAvgPool: {
        if (s.rank() != 4) {
          LayerError(l, absl::StrCat("pooling needs a [batch, height, width, channels] input, but '", l.input(0),
                                     "' is ", ShapeString(s)));
          return false;
        }
        const auto& p = l.has_max_pool() ? l.max_pool() : l.avg_pool();
        const bool same = p.padding() == config::SAME;
        const int64_t k = p.size(), st = p.stride();
        if (!same && (s.dim(1) < k || s.dim(2) < k)) {
          LayerError(l, absl::StrCat("a ", k, "x", k, " VALID pool does not fit the ", ShapeString(s), " input"));
          return false;
        }
        const int64_t h = same ? (s.dim(1) + st - 1) / st : (s.dim(1) - k) / st + 1;
        const int64_t w_out = same ? (s.dim(2) + st - 1) / st : (s.dim(2) - k) / st + 1;
        result->tensor = b.Op(l.has_max_pool() ? "MaxPool" : "AvgPool", l.has_max_pool() ? "MaxPool" : "AvgPool",
                              {in.tensor},
                              {{"ksize", MakeAttr(std::vector<int64_t>{1, k, k, 1})},
                               {"strides", MakeAttr(std::vector<int64_t>{1, st, st, 1})},
                               {"padding", MakeAttr(same ? "SAME" : "VALID")}});
        result->shape = PartialShape::FromDims({kUnknownDim, h, w_out, s.dim(3)});
        return true;
      }
      case Layer::kDropout: {
        result->shape = s;
        if (!options_.training || l.dropout().rate() == 0) {
          result->tensor = in.tensor;
          return true;
        }
        if (!options_.global_step.valid()) {
          LayerError(l, "dropout needs the training graph's global step (internal error)");
          return false;
        }
        result->tensor = b.Op("Dropout", "Dropout",
                              {in.tensor, b.Scalar<float>("rate", l.dropout().rate()), options_.global_step},
                              {{"seed", MakeAttr(options_.seed)}, {"seed2", MakeAttr(OpSeed(l.name()))}});
        return true;
      }
      case Layer::kActivation:
        result->tensor = Activate(&b, in.tensor, l.activation().activation());
        result->shape = s;
        return true;
      case Layer::kEmbedding: {
        const auto& em = l.embedding();
        if (!DataTypeIsInteger(BaseType(in.tensor.dtype()))) {
          LayerError(l, absl::StrCat("embedding needs integer ids, but '", l.input(0), "' is ",
                                     DataTypeString(BaseType(in.tensor.dtype()))));
          return false;
        }
        std::vector<int64_t> dims(s.dims().begin(), s.dims().end());
        dims.push_back(em.dimension());
        if (!CheckFloats(l, "embedding table", {em.vocabulary_size(), em.dimension()})) return false;
        if (!CheckFloats(l, "output", dims)) return false;
        if (in.id_limit > em.vocabulary_size()) {
          errors_->Add(loaded_.Where(em, "vocabulary_size"),
                       absl::StrCat("embedding '", l.name(), "': vocabulary_size ", em.vocabulary_size(),
                                    " is smaller than the ids of its input '", l.input(0), "', which go up to ",
                                    in.id_limit - 1, " (the text vocabulary has ", in.id_limit,
                                    " ids); set vocabulary_size: ", in.id_limit, " or the vocabulary's max_size"));
          return false;
        }
        if (em.partitions() < 0 || em.partitions() > em.vocabulary_size()) {  // validate.cc says so first
          LayerError(l, absl::StrCat("partitions must be in [0, vocabulary_size = ", em.vocabulary_size(), "], got ",
                                     em.partitions()));
          return false;
        }
        std::vector<Output> table =
            PartitionedVariable(&b, l.name(), "embeddings", TensorShape({em.vocabulary_size(), em.dimension()}),
                                em.partitions(), em.initializer(), true, em.vocabulary_size(), em.dimension(),
                                l.l2_weight());
        if (table.empty()) return false;
        result->tensor = PartitionedLookup(&b, table, in.tensor);
        result->shape = PartialShape::FromDims(dims);
        return true;
      }
      case Layer::kReshape: {
        std::vector<int64_t> dims = {-1};
        int64_t known = 1;
        int unknown_at = -1;
        // The known dims' product must divide (or, without a -1, equal) the
        // input's values per example; it is multiplied with overflow checks,
        // as a product that wraps (to 0, say) would pass as a match.
        bool fits = true;
        for (int i = 0; i < l.reshape().shape_size(); ++i) {
          int64_t d = l.reshape().shape(i);
          dims.push_back(d);
          if (d == -1) unknown_at = i + 1;
          else if (d <= 0 || __builtin_mul_overflow(known, d, &known)) fits = false;
        }
        if (!fits || (unknown_at < 0 ? known != per_example : per_example % known != 0)) {
          LayerError(l, absl::StrCat("cannot reshape ", ShapeString(s), " (", per_example, " values per example) to [batch,",
                                     absl::StrJoin(l.reshape().shape(), ","), "]"));
          return false;
        }
        std::vector<int64_t> out_dims = dims;
        out_dims[0] = kUnknownDim;
        if (unknown_at > 0) out_dims[unknown_at] = per_example / known;
        result->tensor = b.Op("Reshape", "Reshape", {in.tensor, b.Const("shape", ShapeTensor(dims))});
        result->shape = PartialShape::FromDims(out_dims);
        return true;
      }
      case Layer::kLstm: {
        const auto& lstm = l.lstm();
        if (!CheckRecurrent(l, "lstm", s, lstm.units(), 4)) return false;
        const int64_t n_in = s.dim(2), units = lstm.units();
        LstmWeights weights;
        weights.kernel = Variable(&b, l.name(), "kernel", TensorShape({n_in, 4 * units}), lstm.kernel_initializer(), true,
                                  n_in, 4 * units, l.l2_weight());
        weights.recurrent = Variable(&b, l.name(), "recurrent_kernel", TensorShape({units, 4 * units}),
                                     lstm.recurrent_initializer(), true, units, 4 * units, 0);
        weights.bias = Variable(&b, l.name(), "bias", TensorShape({4 * units}), lstm.bias_initializer(), false, n_in,
                                4 * units, 0);
        LstmOptions options;
        options.features = n_in;
        options.units = units;
        options.forget_bias = lstm.has_forget_bias() ? lstm.forget_bias() : 1.0f;
        options.last_only = lstm.last_only();
        options.parallel_iterations = lstm.parallel_iterations() > 0 ? lstm.parallel_iterations() : 1;
        auto out = BuildLstm(&b, in.tensor, weights, options);
        if (!out.ok()) {
          LayerError(l, std::string(out.status().message()));
          return false;
        }
        RecurrentResult(*out, s, units, 4, options.last_only, result);
        return true;
      }
      case Layer::kGru: {
        const auto& gru = l.gru();
        if (!CheckRecurrent(l, "gru", s, gru.units(), 3)) return false;
        const int64_t n_in = s.dim(2), units = gru.units();
        GruWeights weights;
        weights.kernel = Variable(&b, l.name(), "kernel", TensorShape({n_in, 3 * units}), gru.kernel_initializer(), true,
                                  n_in, 3 * units, l.l2_weight());
        weights.recurrent = Variable(&b, l.name(), "recurrent_kernel", TensorShape({units, 3 * units}),
                                     gru.recurrent_initializer(), true, units, 3 * units, 0);
        weights.bias = Variable(&b, l.name(), "bias", TensorShape({3 * units}), gru.bias_initializer(), false, n_in,
                                3 * units, 0);
        weights.recurrent_bias = Variable(&b, l.name(), "recurrent_bias", TensorShape({3 * units}),
                                          gru.bias_initializer(), false, units, 3 * units, 0);
        GruOptions options;
        options.features = n_in;
        options.units = units;
        options.last_only = gru.last_only();
        options.parallel_iterations = gru.parallel_iterations() > 0 ? gru.parallel_iterations() : 1;
        auto out = BuildGru(&b, in.tensor, weights, options);
        if (!out.ok()) {
          LayerError(l, std::string(out.status().message()));
          return false;
        }
        RecurrentResult(*out, s, units, 3, options.last_only, result);
        return true;
      }
      case Layer::kAugment:
        return AugmentLayer(l, in, &b, result);
      case Layer::kBatchNorm:
        return BatchNormLayer(l, in, &b, result);
      case Layer::kAdd:
      case Layer::kConcat:
        return JoinLayer(l, in, &b, result);
      case Layer::KIND_NOT_SET:
        return false;
    }
    return false;
  }

  // augment (experiment.proto): AugmentImages in a training tower, keyed by
  // the seed, the layer's name and the global step (as dropout); any other
  // tower passes the images through.
  bool AugmentLayer(const Layer& l, const Feature& in, GraphBuilder* b, Feature* result) {
    const PartialShape& s = in.shape;
    const auto& a = l.augment();
    if (s.rank() != 4) {
      LayerError(l, absl::StrCat("augment needs images [batch, height, width, channels], but '", l.input(0), "' is ",
                                 ShapeString(s)));
      return false;
    }
    const DataType type = BaseType(in.tensor.dtype());
    if (type != DT_FLOAT && type != DT_UINT8) {
      LayerError(l, absl::StrCat("augment needs float or uint8 images, but '", l.input(0), "' is ",
                                 DataTypeString(type)));
      return false;
    }
    for (int d : {1, 2}) {
      if (s.dim(d) >= 0 && a.max_shift() >= s.dim(d)) {
        LayerError(l, absl::StrCat("augment max_shift ", a.max_shift(), " must be below the images' ",
                                   d == 1 ? "height" : "width", " (", s.dim(d), ")"));
        return false;
      }
    }
    result->shape = s;
    if (!options_.training) {
      result->tensor = in.tensor;
      return true;
    }
    if (!options_.global_step.valid()) {
      LayerError(l, "augment needs the training graph's global step (internal error)");
      return false;
    }
    result->tensor = b->Op("AugmentImages", "AugmentImages", {in.tensor, options_.global_step},
                           {{"flip_left_right", MakeAttr(a.flip_left_right())},
                            {"max_shift", MakeAttr(int64_t{a.max_shift()})},
                            {"seed", MakeAttr(options_.seed)},
                            {"seed2", MakeAttr(OpSeed(l.name()))}});
    return true;
  }

  // batch_norm (experiment.proto): FusedBatchNormV3 over the last dimension,
  // a rank-2 or rank-3 input viewed as [positions, 1, 1, features]. A
  // training tower normalizes by the batch's statistics and adds the moving
  // statistics' updates to update_ops; any other by the moving statistics.
  bool BatchNormLayer(const Layer& l, const Feature& in, GraphBuilder* b, Feature* result) {
    const PartialShape& s = in.shape;
    const auto& bn = l.batch_norm();
    if (s.rank() < 2 || s.rank() > 4 || s.dim(s.rank() - 1) < 0) {
      LayerError(l, absl::StrCat("batch_norm needs a [batch, features], [batch, time, features] or [batch, height, "
                                 "width, channels] input with a known last dimension, but '",
                                 l.input(0), "' is ", ShapeString(s)));
      return false;
    }
    if (in.tensor.dtype() != DT_FLOAT) {
      LayerError(l, absl::StrCat("batch_norm needs float values, but '", l.input(0), "' is ",
                                 DataTypeString(BaseType(in.tensor.dtype()))));
      return false;
    }
    const int64_t c = s.dim(s.rank() - 1);
    const TensorShape per_channel({c});
    // The defaults (configs/load.cc) also where a caller built the model
    // without applying them.
    const float momentum = bn.has_momentum() ? bn.momentum() : 0.99f;
    const float epsilon = bn.has_epsilon() ? bn.epsilon() : 0.001f;
    auto filled = [&](const std::string& name, float value) {
      return b->Const(name, Tensor::FromVector<float>(std::vector<float>(static_cast<size_t>(c), value)));
    };
    Initializer ones;
    ones.mutable_constant()->set_value(1.0f);
    Output gamma = bn.no_scale() ? filled("unit_scale", 1.0f)
                                 : Variable(b, l.name(), "gamma", per_channel, ones, false, 0, 0, 0);
    Output beta = bn.no_center() ? filled("zero_offset", 0.0f)
                                 : Variable(b, l.name(), "beta", per_channel, Initializer(), false, 0, 0, 0);
    Output moving_mean = StateVariable(b, l.name(), "moving_mean", per_channel, 0.0f);
    Output moving_variance = StateVariable(b, l.name(), "moving_variance", per_channel, 1.0f);
    Output x = in.tensor;
    if (s.rank() != 4) x = b->Op("as_4d", "Reshape", {x, b->Const("shape_4d", ShapeTensor({-1, 1, 1, c}))});
    const bool training = options_.training;
    AttrList attrs = {{"T", MakeAttr(DT_FLOAT)},
                      {"U", MakeAttr(DT_FLOAT)},
                      {"epsilon", MakeAttr(epsilon)},
                      {"data_format", MakeAttr("NHWC")},
                      {"is_training", MakeAttr(training)}};
    // Training reads no running statistics (exponential_avg_factor 1): they
    // are given empty, as tf.nn.fused_batch_norm gives them.
    Output empty = training ? b->Const("no_statistics", Tensor(DT_FLOAT, TensorShape({0}))) : Output();
    Node* norm = b->AddNode("FusedBatchNormV3", "FusedBatchNormV3",
                            {x, gamma, beta, training ? empty : moving_mean, training ? empty : moving_variance}, attrs);
    if (norm == nullptr) return false;
    Output y{norm, 0};
    if (s.rank() == 3) y = b->Op("as_input", "Reshape", {y, b->Op("input_shape", "Shape", {in.tensor})});
    if (s.rank() == 2) y = b->Op("as_input", "Reshape", {y, b->Const("input_shape", ShapeTensor({-1, c}))});
    if (training) {
      // moving += (batch - moving) * (1 - momentum), with the batch's
      // unbiased variance (FusedBatchNormV3's outputs 1 and 2).
      GraphBuilder ub = b->WithSubPrefix("update");
      Output rate = ub.Scalar<float>("rate", 1.0f - momentum);
      const std::pair<Output, int> stats[] = {{moving_mean, 1}, {moving_variance, 2}};
      for (const auto& [moving, output] : stats) {
        const std::string name = output == 1 ? "moving_mean" : "moving_variance";
        Output gap = ub.Op(name + "_gap", "Sub", {Output{norm, output}, moving});
        Node* update = ub.AddNode(name, "AssignAdd", {moving, ub.Op(name + "_delta", "Mul", {gap, rate})});
        if (update == nullptr) return false;
        out_->update_ops.push_back(update);
      }
    }
    result->tensor = Activate(b, y, bn.activation());
    result->shape = s;
    AddFlops(4.0 * KnownProduct(std::vector<int64_t>(s.dims().begin() + 1, s.dims().end())));
    return true;
  }

  // add (the element-wise sum of inputs of one shape) and concat (inputs
  // joined along their last dimension).
  bool JoinLayer(const Layer& l, const Feature& first, GraphBuilder* b, Feature* result) {
    const bool add = l.has_add();
    const char* kind = add ? "add" : "concat";
    std::vector<Feature> inputs = {first};
    for (int i = 1; i < l.input_size(); ++i) {
      Feature f;
      if (!Input(l, i, &f)) return false;
      inputs.push_back(f);
    }
    if (inputs.size() < 2) {
      LayerError(l, absl::StrCat(kind, " joins two or more inputs, but lists one"));
      return false;
    }
    const PartialShape& s = first.shape;
    std::vector<int64_t> dims(s.dims().begin(), s.dims().end());
    std::vector<Output> tensors;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const PartialShape& si = inputs[i].shape;
      const DataType dtype = BaseType(inputs[i].tensor.dtype());
      auto mismatch = [&](const std::string& why) {
        LayerError(l, absl::StrCat(kind, " needs ", why, ", but '", l.input(0), "' is ", ShapeString(s), " ",
                                   DataTypeString(BaseType(first.tensor.dtype())), " and '", l.input(i), "' is ",
                                   ShapeString(si), " ", DataTypeString(dtype)));
        return false;
      };
      if (!si.rank_known()) {
        LayerError(l, absl::StrCat("input '", l.input(i), "' has an unknown shape"));
        return false;
      }
      if (dtype != BaseType(first.tensor.dtype())) return mismatch("inputs of one dtype");
      if (si.rank() != s.rank()) return mismatch("inputs of one rank");
      if (!add && s.rank() < 2) return mismatch("inputs with a feature dimension");
      // Dims after the batch must agree where both are known (add: all of
      // them; concat: all but the last, which add up).
      const int last = s.rank() - 1;
      for (int d = 1; d < s.rank(); ++d) {
        if (!add && d == last) continue;
        if (si.dim(d) >= 0 && dims[d] >= 0 && si.dim(d) != dims[d]) {
          return mismatch(add ? "inputs of one shape" : "inputs whose dimensions agree but for the last");
        }
        if (dims[d] < 0) dims[d] = si.dim(d);
      }
      if (!add && i > 0) dims[last] = dims[last] < 0 || si.dim(last) < 0 ? kUnknownDim : dims[last] + si.dim(last);
      tensors.push_back(inputs[i].tensor);
    }
    dims[0] = kUnknownDim;
    if (!add && !CheckFloats(l, "output", dims)) return false;
    if (add) {
      result->tensor = Activate(b, b->Op("AddN", "AddN", tensors), l.add().activation());
    } else {
      tensors.push_back(b->Scalar<int32_t>("axis", s.rank() - 1));
      result->tensor = b->Op("ConcatV2", "ConcatV2", tensors);
    }
    result->shape = PartialShape::FromDims(dims);
    return true;
  }

  void AddRawNode(const NodeDef& raw) {
    NodeDef def = raw;
    const std::string prefix = TowerPrefix();
    def.set_name(prefix + raw.name());
    def.clear_input();
    if ((def.op() == "VariableV2" || def.op() == "Variable") && options_.reuse_variables) {
      (*def.mutable_attr())["shared_name"] = MakeAttr(raw.name());
    }
    auto node = root_.graph()->AddNode(def);
    if (!node.ok()) {
      errors_->Add(loaded_.Where(raw, "op"), std::string(node.status().message()));
      return;
    }
    int data_index = 0;
    bool input_errors = false;
    for (int i = 0; i < raw.input_size(); ++i) {
      auto id = ParseTensorName(raw.input(i));
      if (!id.ok()) {
        errors_->Add(loaded_.Where(raw, "input", i), absl::StrCat("node '", raw.name(), "': ", id.status().message()));
        input_errors = true;
        continue;
      }
      Output src;
      auto named = out_->named.find(id->node);
      if (named != out_->named.end() && id->index <= 0) {
        src = named->second.tensor;
      } else if (Node* n = root_.graph()->FindNode(prefix + id->node)) {
        src = Output{n, std::max(id->index, 0)};
      } else {
        input_errors = true;
        if (failed_.count(id->node) > 0) continue;  // reported at that layer or node
        std::vector<std::string> known;
        for (const auto& [k, v] : out_->named) known.push_back(k);
        std::string guess = ClosestMatch(id->node, known);
        errors_->Add(loaded_.Where(raw, "input", i),
                     absl::StrCat("node '", raw.name(), "' reads unknown '", id->node, "'",
                                  guess.empty() ? "" : absl::StrCat(" (did you mean '", guess, "'?)")));
        continue;
      }
      if (id->IsControl()) {
        root_.graph()->AddControlEdge(src.node, *node);
        continue;
      }
      if (data_index >= (*node)->num_inputs() || src.index >= src.node->num_outputs()) {
        errors_->Add(loaded_.Where(raw, "input", i), absl::StrCat("node '", raw.name(), "' has too many inputs"));
        return;
      }
      DataType st = src.dtype(), dt = (*node)->input_type(data_index);
      if (!(st == dt || (IsRefType(st) && BaseType(st) == dt))) {
        errors_->Add(loaded_.Where(raw, "input", i), absl::StrCat("node '", raw.name(), "' input ", i, " ('", raw.input(i),
                                                                  "') is ", DataTypeString(st), ", expected ", DataTypeString(dt)));
        return;
      }
      root_.graph()->AddEdge(src.node, src.index, *node, data_index++);
    }
    if (input_errors) return;
    if (data_index != (*node)->num_inputs()) {
      errors_->Add(loaded_.Where(raw, "name"), absl::StrCat("node '", raw.name(), "' (op ", raw.op(), ") takes ",
                                                            (*node)->num_inputs(), " input(s) but lists ", data_index));
      return;
    }
    Output out{*node, 0};
    if ((*node)->num_outputs() == 0) return;
    if ((def.op() == "VariableV2" || def.op() == "Variable") && !options_.reuse_variables) {
      TensorShapeProto sp;
      auto shape = GetNodeAttr(def, "shape", &sp).ok() ? TensorShape::FromProto(sp) : absl::StatusOr<TensorShape>(TensorShape());
      if (!shape.ok()) {
        errors_->Add(loaded_.Where(raw, "attr"), absl::StrCat("variable '", raw.name(), "': ", shape.status().message()));
        return;
      }
      VariableInfo info;
      info.name = def.name();
      info.variable = *node;
      info.shape = *shape;
      GraphBuilder ib = root_.WithSubPrefix(def.name() + "_init");
      const int64_t fan_in = shape->dims() >= 2 ? shape->dim_size(0) : 1;
      const int64_t fan_out = shape->dims() >= 2 ? shape->dim_size(1) : 1;
      info.initial_value = InitialValue(&ib, raw.name(), *shape, Initializer(), shape->dims() >= 2, fan_in, fan_out);
      out_->variables.push_back(info);
    }
    out_->named[raw.name()] = Feature{out, PartialShape()};
  }

  // "<tower>/" before the names of the nodes this model adds; "" without a tower.
  std::string TowerPrefix() const { return options_.tower.empty() ? "" : options_.tower + "/"; }

  // Raw nodes get no shape checks as they are added; run shape inference over
  // the graph so far and put a failure at the raw node it names. On success,
  // each raw node's output 0 takes its inferred shape, which the losses and
  // metrics check (figure1_relu's logits are a raw Relu).
  void CheckRawNodeShapes() {
    if (e_.model().node_size() == 0) return;
    GraphDef def;
    root_.graph()->ToGraphDef(&def);
    Graph scratch;
    absl::Status s = ConvertGraphDefToGraph(GraphConstructorOptions(), def, &scratch);
    const std::string prefix = TowerPrefix();
    if (s.ok()) {
      ShapeRefiner refiner;
      if (!refiner.InferShapes(scratch).ok()) return;
      for (const NodeDef& raw : e_.model().node()) {
        const Node* node = scratch.FindNode(prefix + raw.name());
        auto it = out_->named.find(raw.name());
        if (node == nullptr || node->num_outputs() == 0 || it == out_->named.end()) continue;
        it->second.shape = refiner.OutputShape(node, 0);
      }
      return;
    }
    const std::string message(s.message());
    for (const NodeDef& raw : e_.model().node()) {
      if (message.find(absl::StrCat("node '", prefix, raw.name(), "'")) != std::string::npos) {
        errors_->Add(loaded_.Where(raw, "name"), message);
        return;
      }
    }
    // Not a raw node's fault: leave it to the full graph's validation.
  }

  // A model whose weights alone exceed this machine's memory is a config
  // error (a typo'd size), not an allocation failure minutes later.
  void CheckVariablesFitInMemory() {
    double total = 0, largest = 0;
    int largest_layer = -1;
    for (int i = 0; i < e_.model().layer_size(); ++i) {
      auto it = layer_bytes_.find(e_.model().layer(i).name());
      if (it == layer_bytes_.end()) continue;
      total += it->second;
      if (it->second > largest) {
        largest = it->second;
        largest_layer = i;
      }
    }
    const double memory = MachineMemoryBytes();
    if (largest_layer < 0 || memory <= 0) return;
    if (total <= memory) return;
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    LayerError(e_.model().layer(largest_layer),
               absl::StrFormat("the model's weights need %.1f GiB (this layer %.1f GiB), more than this machine's "
                               "%.1f GiB of memory",
                               total / kGiB, largest / kGiB, memory / kGiB));
  }

  // Located errors for loss inputs whose dtypes or (known) shapes cannot work,
  // instead of a graph error naming internal nodes.
  bool CheckCrossEntropy(const config::Loss::SoftmaxCrossEntropy& x, const Feature& logits, const Feature& labels) {
    const DataType lt = BaseType(logits.tensor.dtype()), yt = BaseType(labels.tensor.dtype());
    if (!DataTypeIsFloating(lt)) {
      errors_->Add(loaded_.Where(x, "logits"), absl::StrCat("softmax_cross_entropy: logits '", x.logits(), "' are ",
                                                             DataTypeString(lt), "; they must be floating point"));
      return false;
    }
    const PartialShape& ls = logits.shape;
    if (!ls.rank_known() || ls.rank() < 2 || ls.rank() > 3 || ls.dim(ls.rank() - 1) < 0) {
      errors_->Add(loaded_.Where(x, "logits"),
                   absl::StrCat("softmax_cross_entropy: logits '", x.logits(), "' are ", ShapeString(ls),
                                "; they must be [batch, classes] (or [batch, time, classes]) with known classes"));
      return false;
    }
    if (DataTypeIsInteger(yt)) {
      if (labels.shape.rank_known() && labels.shape.rank() != ls.rank() - 1) {
        errors_->Add(loaded_.Where(x, "labels"),
                     absl::StrCat("softmax_cross_entropy: integer labels '", x.labels(), "' are ",
                                  ShapeString(labels.shape), "; for logits ", ShapeString(ls),
                                  " they must be class ids of rank ", ls.rank() - 1));
        return false;
      }
      return true;
    }
    return CheckSameFloatShape(x, "logits", logits, "labels", labels);
  }

  bool CheckSameFloatShape(const google::protobuf::Message& m, const std::string& a_field, const Feature& a,
                           const std::string& b_field, const Feature& b) {
    const std::string who = m.GetDescriptor()->name() == "MeanSquaredError" ? "mean_squared_error" : "softmax_cross_entropy";
    for (const auto& [field, f] : {std::pair<std::string, const Feature*>{a_field, &a}, {b_field, &b}}) {
      const DataType dt = BaseType(f->tensor.dtype());
      if (!DataTypeIsFloating(dt)) {
        errors_->Add(loaded_.Where(m, field),
                     absl::StrCat(who, ": ", field, " is ", DataTypeString(dt), "; it must be floating point",
                                  DataTypeIsInteger(dt) && field != a_field && who == "mean_squared_error"
                                      ? " (integer class labels go with softmax_cross_entropy)"
                                      : ""));
        return false;
      }
    }
    if (a.shape.rank_known() && b.shape.rank_known()) {
      bool same = a.shape.rank() == b.shape.rank();
      for (int i = 1; same && i < a.shape.rank(); ++i) {
        same = a.shape.dim(i) < 0 || b.shape.dim(i) < 0 || a.shape.dim(i) == b.shape.dim(i);
      }
      if (!same) {
        errors_->Add(loaded_.Where(m, b_field), absl::StrCat(who, ": ", a_field, " ", ShapeString(a.shape), " and ",
                                                             b_field, " ", ShapeString(b.shape), " differ in shape"));
        return false;
      }
    }
    return true;
  }

  Output Scalarize(GraphBuilder* b, Output per_example) {
    return b->Op("mean", "Mean", {per_example, b->Const("axis", Tensor::FromVector<int32_t>({0}))});
  }

  // The mean sampled softmax loss (training) or full softmax cross-entropy
  // (evaluation), with its own weights and biases (embedding_ops.h); an
  // invalid Output after a located config error.
  Output SampledSoftmax(const config::Loss::SampledSoftmax& ss, GraphBuilder* lb) {
    const std::string who = "sampled_softmax";
    const Feature& inputs = out_->named[ss.inputs()];
    const Feature& labels = out_->named[ss.labels()];
    if (!inputs.tensor.valid() || !labels.tensor.valid()) return Output();
    const PartialShape& is = inputs.shape;
    // [batch, dim], or [batch, ..., dim] (an LSTM's outputs) with labels
    // [batch, ...]: every position is an example.
    if (BaseType(inputs.tensor.dtype()) != DT_FLOAT || !is.rank_known() || is.rank() < 2 || is.dim(is.rank() - 1) < 0) {
      errors_->Add(loaded_.Where(ss, "inputs"),
                   absl::StrCat(who, ": inputs '", ss.inputs(), "' are ", DataTypeString(BaseType(inputs.tensor.dtype())),
                                " ", ShapeString(is), "; they must be float32 [batch, dim] (or [batch, ..., dim]) with dim known"));
      return Output();
    }
    if (!DataTypeIsInteger(BaseType(labels.tensor.dtype())) ||
        (labels.shape.rank_known() && labels.shape.rank() != is.rank() - 1)) {
      errors_->Add(loaded_.Where(ss, "labels"),
                   absl::StrCat(who, ": labels '", ss.labels(), "' are ", DataTypeString(BaseType(labels.tensor.dtype())),
                                " ", ShapeString(labels.shape), "; for inputs ", ShapeString(is),
                                " they must be integer class ids of rank ", is.rank() - 1));
      return Output();
    }
    const int64_t dim = is.dim(is.rank() - 1), classes = ss.num_classes();
    if (labels.id_limit > classes) {
      errors_->Add(loaded_.Where(ss, "num_classes"),
                   absl::StrCat(who, ": num_classes ", classes, " is smaller than the ids of its labels '", ss.labels(),
                                "', which go up to ", labels.id_limit - 1, " (the text vocabulary has ", labels.id_limit,
                                " ids); set num_classes: ", labels.id_limit, " or the vocabulary's max_size"));
      return Output();
    }
    double positions = 1;
    for (int i = 1; i + 1 < is.rank(); ++i) positions *= is.dim(i) > 0 ? static_cast<double>(is.dim(i)) : 1.0;
    const double bytes = 4.0 * static_cast<double>(classes) * static_cast<double>(dim), memory = MachineMemoryBytes();
    if (memory > 0 ? bytes > memory : static_cast<double>(classes) * static_cast<double>(dim) > kMaxTensorElements) {
      errors_->Add(loaded_.Where(ss, "num_classes"),
                   absl::StrFormat("%s: its weights [%d,%d] need %.1f GiB, more than this machine's %.1f GiB of memory",
                                   who, classes, dim, bytes / (1024.0 * 1024 * 1024), memory / (1024.0 * 1024 * 1024)));
      return Output();
    }
    if (classes < 1 || ss.num_sampled() < 1 || ss.num_sampled() > classes || ss.partitions() < 0 ||
        ss.partitions() > classes) {  // validate.cc says which first
      errors_->Add(loaded_.Where(ss, "num_classes"),
                   absl::StrCat(who, ": num_classes ", classes, ", num_sampled ", ss.num_sampled(), " and partitions ",
                                ss.partitions(), " do not fit (1 <= num_sampled <= num_classes, partitions <= num_classes)"));
      return Output();
    }
    const std::string name = ss.name().empty() ? "sampled_softmax" : ss.name();
    GraphBuilder vb = root_.WithSubPrefix(options_.tower.empty() ? name : absl::StrCat(options_.tower, "/", name));
    std::vector<Output> weights = PartitionedVariable(&vb, name, "weights", TensorShape({classes, dim}), ss.partitions(),
                                                      ss.weights_initializer(), true, dim, classes, 0);
    std::vector<Output> biases = PartitionedVariable(&vb, name, "biases", TensorShape({classes}), ss.partitions(),
                                                     Initializer(), false, classes, 1, 0);
    if (weights.empty() || biases.empty()) return Output();
    AddFlops(positions * 2.0 * static_cast<double>(dim) *
             static_cast<double>(options_.training ? ss.num_sampled() + 1 : classes));
    GraphBuilder b = lb->WithSubPrefix(name);
    Output x = inputs.tensor, y = labels.tensor;
    if (is.rank() > 2) {
      x = b.Op("flat_inputs", "Reshape", {x, b.Const("shape", ShapeTensor({-1, dim}))});
      y = b.Op("flat_labels", "Reshape", {y, b.Const("shape", ShapeTensor({-1}))});
    }
    Output per_example;
    if (options_.training) {
      SampledSoftmaxOptions o;
      o.num_classes = classes;
      o.num_sampled = ss.num_sampled();
      o.remove_accidental_hits = !ss.keep_accidental_hits();
      o.seed = options_.seed;
      o.seed2 = OpSeed(name + "/sampler");
      // Classes drawn at the global step: a resumed run samples the ones an uninterrupted one would.
      o.step = options_.global_step;
      per_example = SampledSoftmaxLoss(&b, weights, biases, x, y, o);
    } else {
      Output logits = FullSoftmaxLogits(&b, weights, biases, x, classes);
      // Exported per position ([batch, ..., classes]) when those dims are known.
      std::vector<int64_t> dims(is.dims().begin(), is.dims().end() - 1);
      dims[0] = -1;
      dims.push_back(classes);
      Output per_position = logits;
      if (is.rank() > 2 && std::all_of(dims.begin() + 1, dims.end(), [](int64_t d) { return d >= 0; })) {
        per_position = b.Op("logits_per_position", "Reshape", {logits, b.Const("shape", ShapeTensor(dims))});
      } else {
        dims = {-1, classes};
      }
      out_->predictions.push_back({absl::StrCat(name, "/logits"), per_position, PartialShape::FromDims(dims), true,
                                   absl::StrCat("the logits of '", name, "' over all ", classes, " classes")});
      Node* xent = b.AddNode("xent", "SparseSoftmaxCrossEntropyWithLogits", {logits, y});
      if (xent != nullptr) per_example = Output{xent, 0};
    }
    return per_example.valid() ? Scalarize(&b, per_example) : Output();
  }

  void BuildLosses() {
    GraphBuilder b = root_.WithSubPrefix(options_.tower.empty() ? "loss" : options_.tower + "/loss");
    std::vector<Output> terms;
    for (const config::Loss& loss : e_.model().loss()) {
      Output value;
      std::string label;
      if (loss.has_softmax_cross_entropy()) {
        const auto& x = loss.softmax_cross_entropy();
        const Feature& logits = out_->named[x.logits()];
        const Feature& labels = out_->named[x.labels()];
        if (!CheckCrossEntropy(x, logits, labels)) continue;
        out_->predictions.push_back({x.logits(), logits.tensor, logits.shape, true, absl::StrCat("'", x.logits(), "'")});
        label = "cross_entropy";
        // [batch, ..., classes] logits: every position is an example.
        Output logits_2d = logits.tensor, labels_flat = labels.tensor;
        const bool sparse = DataTypeIsInteger(BaseType(labels.tensor.dtype()));
        if (logits.shape.rank() > 2) {
          const int64_t classes = logits.shape.dim(logits.shape.rank() - 1);
          logits_2d = b.Op("flat_logits", "Reshape", {logits_2d, b.Const("shape", ShapeTensor({-1, classes}))});
          labels_flat = b.Op("flat_labels", "Reshape",
                             {labels_flat, b.Const("shape", sparse ? ShapeTensor({-1}) : ShapeTensor({-1, classes}))});
        }
        Node* n = b.AddNode("xent", sparse ? "SparseSoftmaxCrossEntropyWithLogits" : "SoftmaxCrossEntropyWithLogits",
                            {logits_2d, labels_flat});
        if (n != nullptr) value = Scalarize(&b, Output{n, 0});
      } else if (loss.has_mean_squared_error()) {
        const auto& m = loss.mean_squared_error();
        if (!CheckSameFloatShape(m, "predictions", out_->named[m.predictions()], "targets", out_->named[m.targets()])) {
          continue;
        }
        const Feature& predictions = out_->named[m.predictions()];
        out_->predictions.push_back(
            {m.predictions(), predictions.tensor, predictions.shape, false, absl::StrCat("'", m.predictions(), "'")});
        label = "mean_squared_error";
        Output d = b.Op("sqdiff", "SquaredDifference", {out_->named[m.predictions()].tensor, out_->named[m.targets()].tensor});
        Output flat = b.Op("flat", "Reshape", {d, b.Const("shape", ShapeTensor({-1}))});
        value = b.Op("mse", "Mean", {flat, b.Const("axis", Tensor::FromVector<int32_t>({0}))});
      } else if (loss.has_sampled_softmax()) {
        label = "sampled_softmax";
        value = SampledSoftmax(loss.sampled_softmax(), &b);
      }
      if (!value.valid()) continue;
      if (loss.weight() != 1) value = b.Op("weighted", "Mul", {value, b.Scalar<float>("weight", loss.weight())});
      out_->losses.push_back({label, value});
      terms.push_back(value);
    }
    for (const VariableInfo& v : out_->variables) {
      if (!v.regularized) continue;
      Output l2 = b.Op("l2", "L2Loss", {Output{v.variable, 0}});
      terms.push_back(b.Op("l2_weighted", "Mul", {l2, b.Scalar<float>("l2_weight", v.l2_weight)}));
    }
    if (terms.empty()) return;
    out_->total_loss = terms.size() == 1 ? b.Op("total", "Identity", {terms[0]}) : b.Op("total", "AddN", terms);
  }

  // Logits [batch, ..., classes] and labels [batch, ...] as [examples,
  // classes] and [examples]: every position is an example.
  void FlatClassification(GraphBuilder* b, const std::string& logits_name, const std::string& labels_name,
                          Output* logits, Output* labels) {
    const Feature& lf = out_->named[logits_name];
    *logits = lf.tensor;
    *labels = out_->named[labels_name].tensor;
    if (!lf.shape.rank_known() || lf.shape.rank() <= 2 || lf.shape.dim(lf.shape.rank() - 1) < 0) return;
    *logits = b->Op("flat_logits", "Reshape",
                    {*logits, b->Const("shape", ShapeTensor({-1, lf.shape.dim(lf.shape.rank() - 1)}))});
    *labels = b->Op("flat_labels", "Reshape", {*labels, b->Const("shape", ShapeTensor({-1}))});
  }

  void BuildMetrics() {
    GraphBuilder b = root_.WithSubPrefix(options_.tower.empty() ? "metrics" : options_.tower + "/metrics");
    for (const config::Metric& m : e_.model().metric()) {
      if (m.has_accuracy()) {
        Output logits, labels;
        FlatClassification(&b, m.accuracy().logits(), m.accuracy().labels(), &logits, &labels);
        Output pred = b.Op("argmax", "ArgMax", {logits, b.Scalar<int32_t>("axis", 1)},
                           {{"output_type", MakeAttr(BaseType(labels.dtype()))}});
        Output eq = b.Op("correct", "Equal", {pred, labels});
        Output f = b.Op("as_float", "Cast", {eq}, {{"SrcT", MakeAttr(DT_BOOL)}, {"DstT", MakeAttr(DT_FLOAT)}});
        out_->metrics.push_back({config::MetricName(m), Scalarize(&b, f)});
      } else if (m.has_top_k_accuracy()) {
        Output logits, labels;
        FlatClassification(&b, m.top_k_accuracy().logits(), m.top_k_accuracy().labels(), &logits, &labels);
        Output hit = b.Op("in_top_k", "InTopKV2", {logits, labels, b.ScalarOfType("k", BaseType(labels.dtype()),
                                                                                   static_cast<double>(m.top_k_accuracy().k()))});
        Output f = b.Op("as_float", "Cast", {hit}, {{"SrcT", MakeAttr(DT_BOOL)}, {"DstT", MakeAttr(DT_FLOAT)}});
        out_->metrics.push_back({config::MetricName(m), Scalarize(&b, f)});
      }
    }
  }

  const config::LoadedExperiment& loaded_;
  const Experiment& e_;
  const ModelOptions& options_;
  GraphBuilder root_;
  ModelOutputs* out_;
  config::ConfigErrors* errors_;
  std::set<std::string> failed_;  // layers and raw nodes that did not build
  std::map<std::string, double> layer_bytes_;  // float32 variable bytes per layer
};

}  // namespace

double MachineMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<double>(pages) * static_cast<double>(page_size) : 0.0;
}

absl::Status BuildModel(const config::LoadedExperiment& loaded, const ModelOptions& options,
                        const std::map<std::string, Feature>& features, GraphBuilder* b, ModelOutputs* out,
                        config::ConfigErrors* errors) {
  ModelCompiler compiler(loaded, options, b, out, errors);
  return compiler.Build(features);
}

}  // namespace models
}  // namespace sluice
