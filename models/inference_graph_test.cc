// Spec for the inference graph and freezing: placeholders for the features
// the outputs read (not the labels), the default outputs of each loss kind,
// named outputs with a did-you-mean, the variables the outputs need, and
// FreezeVariables' checks; the frozen graph runs and gives the same outputs
// as the variables did.
#include "models/inference_graph.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/node_def_util.h"
#include "engine/runtime/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace models {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kInput[] = R"(
input {
  train {
    idx {
      images: "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
      labels: "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"
    }
    scale_to_unit: true
    batch_size: 4
  }
}
)";

std::unique_ptr<config::LoadedExperiment> Load(const std::string& model) {
  auto loaded = config::ParseExperiment("test.pbtxt", absl::StrCat("name: \"t\" run_dir: \"/tmp/t\"\n", model, kInput));
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return nullptr;
  config::ApplyDefaults(&(*loaded)->experiment);
  return std::move(loaded).value();
}

absl::Status Build(const std::string& model, InferenceGraph* out, const std::vector<std::string>& outputs = {},
                   bool tensorflow_ops = true) {
  auto loaded = Load(model);
  if (loaded == nullptr) return absl::InternalError("not loaded");
  config::ConfigErrors errors("test.pbtxt");
  InferenceOptions options;
  options.outputs = outputs;
  options.tensorflow_ops = tensorflow_ops;
  absl::Status s = BuildInferenceGraph(*loaded, options, out, &errors);
  for (const std::string& e : errors.lines()) ADD_FAILURE() << e;
  return s;
}

std::vector<std::string> Nodes(const std::vector<InferenceEndpoint>& endpoints) {
  std::vector<std::string> names;
  for (const auto& e : endpoints) names.push_back(e.node);
  return names;
}

std::set<std::string> Ops(const GraphDef& graph) {
  std::set<std::string> ops;
  for (const NodeDef& n : graph.node()) ops.insert(n.op());
  return ops;
}

constexpr char kMlp[] = R"(
model {
  layer { name: "flat" input: "image" flatten {} }
  layer { name: "fc1" input: "flat" dense { units: 6 activation: RELU } }
  layer { name: "drop" input: "fc1" dropout { rate: 0.5 } }
  layer { name: "logits" input: "drop" dense { units: 3 } }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
  metric { accuracy { logits: "logits" labels: "label" } }
}
)";

TEST(InferenceGraphTest, ClassifierExportsLogitsProbabilitiesAndClassesFromTheImageAlone) {
  InferenceGraph ig;
  ASSERT_TRUE(Build(kMlp, &ig).ok());
  EXPECT_THAT(Nodes(ig.inputs), ElementsAre("image"));
  EXPECT_EQ(ig.inputs[0].dtype, DT_FLOAT);
  EXPECT_EQ(ig.inputs[0].shape.DebugString(), "[?,28,28,1]");
  EXPECT_THAT(Nodes(ig.outputs),
              ElementsAre("outputs/logits", "outputs/logits/probabilities", "outputs/logits/classes"));
  EXPECT_EQ(ig.outputs[0].shape.DebugString(), "[?,3]");
  EXPECT_EQ(ig.outputs[2].dtype, DT_INT64);
  EXPECT_EQ(ig.outputs[2].shape.DebugString(), "[?]");
  std::vector<std::string> variables;
  for (const auto& v : ig.variables) variables.push_back(v.name);
  EXPECT_EQ(variables.size(), 4u);  // fc1's and logits' weights and biases
  // Labels, losses, metrics, the input pipeline and dropout's randomness are gone.
  const std::set<std::string> ops = Ops(ig.graph);
  for (const char* gone : {"SparseSoftmaxCrossEntropyWithLogits", "Equal", "RandomUniform", "QueueDequeueManyV2",
                           "ImageToFloat", "Assign"}) {
    EXPECT_EQ(ops.count(gone), 0u) << gone;
  }
  for (const NodeDef& n : ig.graph.node()) EXPECT_NE(n.name(), "label");
}

TEST(InferenceGraphTest, NamedOutputsAndTheirErrors) {
  InferenceGraph ig;
  ASSERT_TRUE(Build(kMlp, &ig, {"fc1", "fc1", "flat"}).ok());
  EXPECT_THAT(Nodes(ig.outputs), ElementsAre("outputs/fc1", "outputs/flat"));
  EXPECT_EQ(ig.outputs[0].shape.DebugString(), "[?,6]");
  EXPECT_EQ(ig.variables.size(), 2u);  // fc1's only

  InferenceGraph bad;
  absl::Status s = Build(kMlp, &bad, {"fc3"});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("'fc3' is not a layer, feature or node of the model (did you mean 'fc1'?)"));
}

TEST(InferenceGraphTest, RegressionAndSampledSoftmaxOutputs) {
  InferenceGraph mse;
  ASSERT_TRUE(Build(R"(
model {
  layer { name: "flat" input: "image" flatten {} }
  layer { name: "code" input: "flat" dense { units: 784 } }
  loss { mean_squared_error { predictions: "code" targets: "flat" } }
}
)",
                    &mse)
                  .ok());
  EXPECT_THAT(Nodes(mse.outputs), ElementsAre("outputs/code"));
  EXPECT_EQ(mse.outputs[0].shape.DebugString(), "[?,784]");

  InferenceGraph sampled;
  ASSERT_TRUE(Build(R"(
model {
  layer { name: "flat" input: "image" flatten {} }
  layer { name: "hidden" input: "flat" dense { units: 5 activation: RELU } }
  loss { sampled_softmax { inputs: "hidden" labels: "label" num_classes: 10 num_sampled: 3 partitions: 2 } }
}
)",
                    &sampled)
                  .ok());
  EXPECT_THAT(Nodes(sampled.outputs),
              ElementsAre("outputs/sampled_softmax/logits", "outputs/sampled_softmax/logits/probabilities",
                          "outputs/sampled_softmax/logits/classes"));
  EXPECT_EQ(sampled.outputs[0].shape.DebugString(), "[?,10]");
  int parts = 0;
  for (const auto& v : sampled.variables) parts += v.num_parts == 2 ? 1 : 0;
  EXPECT_EQ(parts, 4);  // two parts each of the weights and the biases
  EXPECT_EQ(Ops(sampled.graph).count("LogUniformCandidateSampler"), 0u);
}

// Creates a session on `graph` and runs `fetches` once; EXPECTs that both work.
std::vector<Tensor> RunOnce(const GraphDef& graph, const std::vector<std::pair<std::string, Tensor>>& feeds,
                            const std::vector<std::string>& fetches) {
  std::vector<Tensor> out;
  auto session = NewSession();
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return out;
  absl::Status s = (*session)->Create(graph);
  if (s.ok()) s = (*session)->Run(feeds, fetches, {}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// Values for every variable of `ig`, from a seeded generator.
std::map<std::string, Tensor> SomeValues(const InferenceGraph& ig) {
  std::map<std::string, Tensor> values;
  float x = 0.25f;
  for (const auto& v : ig.variables) {
    Tensor t(DT_FLOAT, v.shape);
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      x = x * 3.7f - static_cast<float>(static_cast<int>(x * 3.7f));  // in [0, 1)
      t.data<float>()[i] = x - 0.5f;
    }
    values[v.name] = t;
  }
  return values;
}

TEST(InferenceGraphTest, FrozenGraphGivesTheVariablesOutputs) {
  InferenceGraph ig;
  ASSERT_TRUE(Build(kMlp, &ig).ok());
  const std::map<std::string, Tensor> values = SomeValues(ig);
  Tensor image(DT_FLOAT, TensorShape({2, 28, 28, 1}));
  for (int64_t i = 0; i < image.NumElements(); ++i) image.data<float>()[i] = static_cast<float>(i % 17) / 17.0f;
  const std::vector<std::string> fetches = Nodes(ig.outputs);

  // The variables assigned those values, then run.
  std::vector<Tensor> want;
  {
    auto session = NewSession();
    ASSERT_TRUE(session.ok());
    GraphDef g = ig.graph;
    std::vector<std::string> assigns;
    for (const auto& [name, value] : values) {
      NodeDef* c = g.add_node();
      c->set_name(name + "/value");
      c->set_op("Const");
      (*c->mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
      (*c->mutable_attr())["value"] = MakeAttr(value);
      NodeDef* a = g.add_node();
      a->set_name(name + "/assign");
      a->set_op("Assign");
      a->add_input(name);
      a->add_input(name + "/value");
      (*a->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
      assigns.push_back(a->name());
    }
    ASSERT_TRUE((*session)->Create(g).ok());
    std::vector<Tensor> unused;
    ASSERT_TRUE((*session)->Run({}, {}, assigns, &unused).ok());
    absl::Status s = (*session)->Run({{"image", image}}, fetches, {}, &want);
    ASSERT_TRUE(s.ok()) << s;
  }

  GraphDef frozen = ig.graph;
  ASSERT_TRUE(FreezeVariables(values, &frozen).ok());
  for (const NodeDef& n : frozen.node()) EXPECT_NE(n.op(), "VariableV2") << n.name();
  const std::vector<Tensor> got = RunOnce(frozen, {{"image", image}}, fetches);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape()) << fetches[k];
    ASSERT_EQ(got[k].TotalBytes(), want[k].TotalBytes()) << fetches[k];
    EXPECT_EQ(std::memcmp(got[k].raw_data(), want[k].raw_data(), got[k].TotalBytes()), 0) << fetches[k];
  }
  // Not all zeros: the values reached the outputs.
  float most = 0;
  for (int64_t i = 0; i < got[0].NumElements(); ++i) most = std::max(most, std::abs(got[0].data<float>()[i]));
  EXPECT_GT(most, 0.0f);
}

TEST(InferenceGraphTest, FreezeRejectsWhatDoesNotFit) {
  InferenceGraph ig;
  ASSERT_TRUE(Build(kMlp, &ig).ok());
  std::map<std::string, Tensor> values = SomeValues(ig);
  const std::string first = values.begin()->first;

  std::map<std::string, Tensor> missing = values;
  missing.erase(first);
  GraphDef g = ig.graph;
  absl::Status s = FreezeVariables(missing, &g);
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("variable '", first, "' has no value to freeze")));

  std::map<std::string, Tensor> wrong_shape = values;
  wrong_shape[first] = Tensor(DT_FLOAT, TensorShape({1, 2, 3}));
  g = ig.graph;
  s = FreezeVariables(wrong_shape, &g);
  EXPECT_THAT(s.message(), HasSubstr("does not have the value's shape [1,2,3]"));

  std::map<std::string, Tensor> wrong_type = values;
  wrong_type[first] = Tensor(DT_INT32, values[first].shape());
  g = ig.graph;
  s = FreezeVariables(wrong_type, &g);
  EXPECT_THAT(s.message(), HasSubstr("is not of the value's type int32"));

  std::map<std::string, Tensor> not_a_variable = values;
  not_a_variable["image"] = Tensor(DT_FLOAT, TensorShape({1}));
  g = ig.graph;
  s = FreezeVariables(not_a_variable, &g);
  EXPECT_THAT(s.message(), HasSubstr("node 'image' is a Placeholder, not a variable"));

  std::map<std::string, Tensor> extra = values;
  extra["nowhere"] = Tensor(DT_FLOAT, TensorShape({1}));
  g = ig.graph;
  s = FreezeVariables(extra, &g);
  EXPECT_THAT(s.message(), HasSubstr("variable 'nowhere' is not in the graph"));
}

NodeDef* AddNode(GraphDef* g, const std::string& name, const std::string& op, const std::vector<std::string>& inputs) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  for (const std::string& in : inputs) n->add_input(in);
  return n;
}

TEST(InferenceGraphTest, ExpandedLstmGatesGiveTheFusedOpsValues) {
  // z [3, 4 * 5] and c_prev [3, 5] of varied signs; h and c read by Identities.
  GraphDef g;
  Tensor z(DT_FLOAT, TensorShape({3, 20})), c_prev(DT_FLOAT, TensorShape({3, 5}));
  for (int64_t i = 0; i < z.NumElements(); ++i) z.data<float>()[i] = static_cast<float>((i * 7) % 23 - 11) / 4.0f;
  for (int64_t i = 0; i < c_prev.NumElements(); ++i) c_prev.data<float>()[i] = static_cast<float>(i % 5 - 2) / 2.0f;
  for (auto [name, value] : {std::pair<const char*, Tensor*>{"z", &z}, {"c_prev", &c_prev}}) {
    NodeDef* n = AddNode(&g, name, "Const", {});
    (*n->mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
    (*n->mutable_attr())["value"] = MakeAttr(*value);
  }
  NodeDef* cell = AddNode(&g, "cell", "LstmGates", {"z", "c_prev"});
  (*cell->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  (*cell->mutable_attr())["forget_bias"] = MakeAttr(0.75f);
  (*AddNode(&g, "h_out", "Identity", {"cell"})->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  (*AddNode(&g, "c_out", "Identity", {"cell:1"})->mutable_attr())["T"] = MakeAttr(DT_FLOAT);

  const std::vector<Tensor> fused = RunOnce(g, {}, {"h_out", "c_out"});
  ASSERT_EQ(fused.size(), 2u);
  GraphDef e = g;
  ASSERT_TRUE(ExpandLstmGates(&e).ok());
  EXPECT_EQ(Ops(e).count("LstmGates"), 0u);
  const std::vector<Tensor> expanded = RunOnce(e, {}, {"h_out", "c_out"});
  ASSERT_EQ(expanded.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(fused[k].NumElements(), expanded[k].NumElements());
    for (int64_t i = 0; i < fused[k].NumElements(); ++i) {
      EXPECT_NEAR(expanded[k].data<float>()[i], fused[k].data<float>()[i], 2e-6f) << k << " " << i;
    }
  }

  // The gate activations (output 2) are for gradients: reading them is an error.
  GraphDef reads_activations = g;
  (*AddNode(&reads_activations, "a_out", "Identity", {"cell:2"})->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  absl::Status s = ExpandLstmGates(&reads_activations);
  EXPECT_THAT(s.message(), HasSubstr("node 'a_out' reads the gate activations of cell:2"));
}

TEST(InferenceGraphTest, RecurrentModelExportsWithoutSluiceOnlyOps) {
  constexpr char kLstm[] = R"(
model {
  layer { name: "rows" input: "image" reshape { shape: 28 shape: 28 } }
  layer { name: "lstm" input: "rows" lstm { units: 4 last_only: true forget_bias: 0.5 } }
  layer { name: "logits" input: "lstm" dense { units: 3 } }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
}
)";
  InferenceGraph ig, fused;
  ASSERT_TRUE(Build(kLstm, &ig).ok());
  ASSERT_TRUE(Build(kLstm, &fused, {}, /*tensorflow_ops=*/false).ok());
  const std::set<std::string> ops = Ops(ig.graph);
  EXPECT_EQ(ops.count("LstmGates"), 0u);
  EXPECT_EQ(ops.count("Split"), 1u);
  EXPECT_EQ(ops.count("Enter"), 1u);  // the loop is still there
  EXPECT_EQ(Ops(fused.graph).count("LstmGates"), 1u);
  // The loop over 28 rows gives the fused step's logits.
  Tensor image(DT_FLOAT, TensorShape({2, 28, 28, 1}));
  for (int64_t i = 0; i < image.NumElements(); ++i) image.data<float>()[i] = static_cast<float>(i % 13) / 13.0f;
  std::vector<Tensor> got[2];
  for (int k = 0; k < 2; ++k) {
    const InferenceGraph& g = k == 0 ? ig : fused;
    GraphDef frozen = g.graph;
    ASSERT_TRUE(FreezeVariables(SomeValues(g), &frozen).ok());
    got[k] = RunOnce(frozen, {{"image", image}}, {"outputs/logits"});
    ASSERT_EQ(got[k].size(), 1u);
  }
  ASSERT_EQ(got[0][0].shape(), TensorShape({2, 3}));
  ASSERT_EQ(got[1][0].shape(), TensorShape({2, 3}));
  float most = 0;
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(got[0][0].data<float>()[i], got[1][0].data<float>()[i], 1e-5f) << i;
    most = std::max(most, std::abs(got[1][0].data<float>()[i]));
  }
  EXPECT_GT(most, 1e-3f);
}

TEST(InferenceGraphTest, WhatCannotBeExported) {
  // A raw node with state (a random op) on the way to the outputs.
  InferenceGraph random;
  absl::Status s = Build(R"(
model {
  layer { name: "flat" input: "image" flatten {} }
  node { name: "noise_shape" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: 1 int_val: 784 } } } }
  node { name: "noise" op: "RandomUniform" input: "noise_shape" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "T" value { type: DT_INT32 } } }
  node { name: "noisy" op: "Add" input: "flat" input: "noise" attr { key: "T" value { type: DT_FLOAT } } }
  layer { name: "logits" input: "flat" dense { units: 3 } }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
}
)",
                         &random, {"noisy"});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("node 'noise' (RandomUniform) of the exported outputs keeps state"));

  // A raw node of Sluice's own op (TensorFlow has no PerImageStandardization op) exported;
  // for Sluice alone it may be.
  constexpr char kStandardized[] = R"(
model {
  layer { name: "flat" input: "image" flatten {} }
  node { name: "standardized" op: "PerImageStandardization" input: "flat" }
  layer { name: "logits" input: "flat" dense { units: 3 } }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
}
)";
  InferenceGraph sluice_op;
  s = Build(kStandardized, &sluice_op, {"standardized"});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("node 'standardized' of the exported outputs is Sluice's own op "
                                     "PerImageStandardization, which TensorFlow does not have"));
  InferenceGraph for_sluice;  // for Sluice alone (tensorflow_ops false): kept
  s = Build(kStandardized, &for_sluice, {"standardized"}, /*tensorflow_ops=*/false);
  EXPECT_TRUE(s.ok()) << s;

  // A layer named "outputs" owns names under outputs/: its weights are
  // outputs/kernel, so a layer named "kernel" cannot be exported.
  constexpr char kClash[] = R"(
model {
  layer { name: "kernel" input: "image" flatten {} }
  layer { name: "outputs" input: "kernel" dense { units: 3 } }
  loss { softmax_cross_entropy { logits: "outputs" labels: "label" } }
}
)";
  InferenceGraph clash;
  s = Build(kClash, &clash);
  EXPECT_TRUE(s.ok()) << s;  // outputs/outputs is free
  s = Build(kClash, &clash, {"kernel"});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("cannot name an exported output 'outputs/kernel': the model has a node"));
}

TEST(InferenceGraphTest, NodesCarryNoDevice) {
  InferenceGraph ig;
  ASSERT_TRUE(Build(R"(
model {
  layer { name: "flat" input: "image" flatten {} }
  layer { name: "logits" input: "flat" dense { units: 3 } device: "/device:CPU:0" }
  loss { softmax_cross_entropy { logits: "logits" labels: "label" } }
}
)",
                    &ig)
                  .ok());
  for (const NodeDef& n : ig.graph.node()) EXPECT_EQ(n.device(), "") << n.name();
}

}  // namespace
}  // namespace models
}  // namespace sluice
