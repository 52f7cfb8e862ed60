// Sparse embeddings as specs (issue 19): sparse and dense optimizer updates
// agree on the rows a gradient touches and leave the others alone;
// duplicate ids are summed; a table split into partitions looks up, trains
// and places as one table; sampled softmax equals a float64 reference
// computed here from the same sampled classes, and its evaluation form is
// the full softmax cross-entropy.
#include <cfloat>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "configs/load.h"
#include "engine/graph/gradients.h"
#include "engine/runtime/session.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "models/embedding_ops.h"
#include "models/model_builder.h"
#include "models/optimizer.h"
#include "models/replication/replica_devices.h"

namespace sluice {
namespace models {
namespace {

std::vector<float> Floats(const Tensor& t) {
  const float* p = t.data<float>();
  return std::vector<float>(p, p + t.NumElements());
}

std::unique_ptr<Session> OpenSession(const GraphDef& def) {
  Session::Reset({""});  // variables live in the process's default container
  auto s = NewSession();
  EXPECT_TRUE(s.ok()) << s.status();
  absl::Status created = (*s)->Create(def);
  EXPECT_TRUE(created.ok()) << created;
  return *std::move(s);
}

std::vector<Tensor> RunGraph(Session* s, const std::vector<std::pair<std::string, Tensor>>& feeds,
                        const std::vector<std::string>& fetches, const std::vector<std::string>& targets = {}) {
  std::vector<Tensor> out;
  absl::Status st = s->Run(feeds, fetches, targets, &out);
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

// ---- Sparse updates, optimizer by optimizer ----

// Two [6, 2] variables with equal initial values; one gets a dense
// gradient (the IndexedSlices densified), the other the IndexedSlices.
struct DenseAndSparse {
  explicit DenseAndSparse(const std::string& optimizer_text) {
    config::Optimizer o;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(optimizer_text, &o)) << optimizer_text;
    Graph graph;
    GraphBuilder b(&graph);
    VariableInfo step_info;
    Node* step = AddGlobalStep(&b, &step_info);
    const TensorShape shape({6, 2});
    const Tensor init = Tensor::FromVector<float>({1, -2, 3, 0.5f, -1, 2, 0.25f, 4, -3, 1, 2, -0.5f}, shape);
    std::vector<VariableInfo> vars;
    for (const std::string name : {"dense", "sparse"}) {
      VariableInfo v;
      v.variable = b.AddNode(name, "VariableV2", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(shape)}});
      v.name = name;
      v.shape = shape;
      v.initial_value = b.Const(name + "_init", init);
      vars.push_back(v);
    }
    Output values = b.Op("values", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
    Output indices = b.Op("indices", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT64)}});
    Output lr = b.Op("lr", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
    Gradient dense, sparse;
    dense.dense = b.Op("densify", "_IndexedSlicesToDense",
                       {values, indices, b.Const("dense_shape", Tensor::FromVector<int64_t>({6, 2}))});
    sparse.is_sparse = true;
    sparse.sparse = IndexedSlices{values, indices, Output()};
    std::vector<VariableInfo> slots;
    std::vector<Node*> updates;
    absl::Status s = BuildApplyOps(o, vars, {dense, sparse}, lr, step, &b, b.WithSubPrefix("train"), &slots, &updates);
    EXPECT_TRUE(s.ok()) << s;
    Node* increment = b.WithControlDependencies(updates).AddNode("increment", "AssignAdd", {Output{step, 0}, b.Scalar<int64_t>("one", 1)});
    b.WithControlDependencies({increment}).AddNode("step", "NoOp", {});
    std::vector<VariableInfo> all = vars;
    all.insert(all.end(), slots.begin(), slots.end());
    all.push_back(step_info);
    BuildInitOp(all, &b);
    EXPECT_TRUE(b.ok()) << b.status();
    for (const VariableInfo& v : slots) slot_names.push_back(v.name);
    graph.ToGraphDef(&def);
    session = OpenSession(def);
    RunGraph(session.get(), {}, {}, {"init"});
  }
  // One step with distinct `rows` getting gradient rows `g` (2 per row).
  void Step(const std::vector<int64_t>& rows, const std::vector<float>& g, float lr = 0.1f) {
    const int64_t n = static_cast<int64_t>(rows.size());
    RunGraph(session.get(),
        {{"values", Tensor::FromVector<float>(g, TensorShape({n, 2}))},
         {"indices", Tensor::FromVector<int64_t>(rows)},
         {"lr", Tensor::Scalar<float>(lr)}},
        {}, {"step"});
  }
  std::vector<float> Value(const std::string& node) { return Floats(RunGraph(session.get(), {}, {node})[0]); }
  GraphDef def;
  std::vector<std::string> slot_names;
  std::unique_ptr<Session> session;
};

// The slot of `var` ("dense"/"sparse") named `slot` ("accumulator").
std::string SlotOf(const DenseAndSparse& m, const std::string& var, const std::string& slot) {
  for (const std::string& n : m.slot_names) {
    if (n == absl::StrCat(var, "/", slot, "/var")) return n;
  }
  ADD_FAILURE() << "no slot " << slot << " of " << var;
  return "";
}

const std::vector<float> kInitial = {1, -2, 3, 0.5f, -1, 2, 0.25f, 4, -3, 1, 2, -0.5f};

TEST(SparseUpdates, SgdAndAdagradAgreeExactlyWithDenseAndLeaveOtherRowsAlone) {
  for (const std::string opt : {"sgd { learning_rate: 0.1 }", "adagrad { learning_rate: 0.1 initial_accumulator: 0.1 }"}) {
    SCOPED_TRACE(opt);
    DenseAndSparse m(opt);
    m.Step({4, 1}, {0.5f, -1, 2, 0.125f});
    m.Step({0, 4, 5}, {1, 1, -0.25f, 3, 0.75f, -2});
    m.Step({2}, {-1.5f, 0.3f});
    const std::vector<float> dense = m.Value("dense"), sparse = m.Value("sparse");
    for (size_t i = 0; i < dense.size(); ++i) EXPECT_EQ(dense[i], sparse[i]) << "element " << i;
    // Row 3 was never touched.
    EXPECT_EQ(sparse[6], kInitial[6]);
    EXPECT_EQ(sparse[7], kInitial[7]);
    if (opt.rfind("adagrad", 0) == 0) {
      EXPECT_EQ(m.Value(SlotOf(m, "dense", "accumulator")), m.Value(SlotOf(m, "sparse", "accumulator")));
    }
  }
}

TEST(SparseUpdates, MomentumRmsPropAndAdamMatchDenseOnAFixedSetOfRows) {
  // With the same rows touched every step the other rows' slots stay at
  // their initial values in the dense update too, so both must agree.
  for (const std::string opt : {"momentum { learning_rate: 0.1 momentum: 0.9 }",
                                "momentum { learning_rate: 0.1 momentum: 0.9 nesterov: true }",
                                "adam { learning_rate: 0.01 beta1: 0.9 beta2: 0.999 epsilon: 1e-8 }"}) {
    SCOPED_TRACE(opt);
    DenseAndSparse m(opt);
    for (int i = 0; i < 4; ++i) m.Step({1, 4}, {0.5f * i, -1, 2, 0.125f + i});
    const std::vector<float> dense = m.Value("dense"), sparse = m.Value("sparse");
    for (size_t i = 0; i < dense.size(); ++i) EXPECT_NEAR(dense[i], sparse[i], 1e-6) << "element " << i;
    for (int i : {0, 1, 4, 5, 6, 7, 10, 11}) EXPECT_EQ(sparse[i], kInitial[i]) << "untouched element " << i;
  }
  // RMSProp: the dense update decays ms on every row (ms starts at 1), the
  // sparse one only on touched rows (TensorFlow's SparseApplyRMSProp); the
  // touched rows agree, the others do not move.
  DenseAndSparse m("rmsprop { learning_rate: 0.01 decay: 0.9 momentum: 0.5 epsilon: 1e-10 }");
  for (int i = 0; i < 4; ++i) m.Step({1, 4}, {0.5f * i, -1, 2, 0.125f + i});
  const std::vector<float> dense = m.Value("dense"), sparse = m.Value("sparse");
  for (size_t i = 0; i < dense.size(); ++i) EXPECT_NEAR(dense[i], sparse[i], 1e-6) << "element " << i;
  const std::vector<float> ms = m.Value(SlotOf(m, "sparse", "rms"));
  EXPECT_EQ(ms[0], 1.0f);
  EXPECT_NE(m.Value(SlotOf(m, "dense", "rms"))[0], 1.0f);
}

TEST(SparseUpdates, AdamIsLazyOnRowsAGradientSkips) {
  DenseAndSparse m("adam { learning_rate: 0.01 beta1: 0.9 beta2: 0.999 epsilon: 1e-8 }");
  m.Step({2}, {1, -1});
  const std::vector<float> m_after_1 = m.Value(SlotOf(m, "sparse", "m"));
  const std::vector<float> var_after_1 = m.Value("sparse");
  m.Step({3}, {0.5f, 0.5f});
  // Row 2's m and value stay as step 1 left them; dense Adam moves them.
  const std::vector<float> m_after_2 = m.Value(SlotOf(m, "sparse", "m"));
  EXPECT_EQ(m_after_2[4], m_after_1[4]);
  EXPECT_EQ(m.Value("sparse")[4], var_after_1[4]);
  EXPECT_NE(m.Value("dense")[4], var_after_1[4]);
  // m of row 2 after step 1: (1 - beta1) * g.
  EXPECT_FLOAT_EQ(m_after_1[4], 0.1f);
}

// ---- Models: embedding tables through BuildModel and BuildTrainingOps ----

struct FeatureSpec {
  std::string name;
  DataType dtype;
  std::vector<int64_t> dims;  // -1 for the batch
};

struct BuiltModel {
  GraphDef def;
  std::vector<VariableInfo> variables;  // model variables, then slots
  std::vector<Node*> updates;
  std::string loss;
  std::map<std::string, std::string> update_op;  // variable -> op of its update
  std::map<std::string, std::string> named;      // layer -> tensor
  std::set<std::string> accumulators;            // ops of sync replication's accumulators
  std::string learning_rate;                     // placeholder
  float learning_rate_value = 0;                 // the optimizer's

  // `feeds` plus the learning rate.
  std::vector<std::pair<std::string, Tensor>> Train(std::vector<std::pair<std::string, Tensor>> feeds) const {
    feeds.push_back({learning_rate, Tensor::Scalar<float>(learning_rate_value)});
    return feeds;
  }
};

// With `sync`, the training ops of a synchronous replica (one of one):
// "train_step" runs the chief's step, "sync_init" prepares it.
BuiltModel BuildFrom(const std::string& text, const std::vector<FeatureSpec>& features, bool training = true,
                     bool sync = false) {
  BuiltModel r;
  auto loaded = config::ParseExperiment("test.pbtxt", text);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return r;
  config::ApplyDefaults(&(*loaded)->experiment);
  Graph graph;
  GraphBuilder b(&graph);
  std::map<std::string, Feature> feats;
  for (const FeatureSpec& f : features) {
    Output p = b.Op(f.name, "Placeholder", {}, {{"dtype", MakeAttr(f.dtype)}});
    feats[f.name] = Feature{p, PartialShape::FromDims(f.dims)};
  }
  VariableInfo step_info;
  Node* step = AddGlobalStep(&b, &step_info);
  ModelOptions mo;
  mo.seed = 7;
  mo.training = training;
  mo.global_step = Output{step, 0};
  ModelOutputs model;
  config::ConfigErrors errors("test.pbtxt");
  absl::Status s = BuildModel(**loaded, mo, feats, &b, &model, &errors);
  EXPECT_TRUE(s.ok()) << s;
  for (const std::string& e : errors.lines()) ADD_FAILURE() << e;
  if (!s.ok() || !errors.empty()) return r;
  r.loss = model.total_loss.name();
  for (const auto& [name, f] : model.named) r.named[name] = f.tensor.name();
  std::vector<VariableInfo> all = model.variables;
  if (training) {
    TrainingOps ops;
    SyncReplicas one;
    s = BuildTrainingOps((*loaded)->experiment.optimizer(), model.variables, model.total_loss, step, step_info, &b, &ops,
                         sync ? &one : nullptr);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return r;
    if (sync) {
      ops.train_op = ops.sync.chief_step;
      b.WithControlDependencies({ops.sync.chief_init, ops.sync.local_init}).AddNode("sync_init", "NoOp", {});
      all.push_back(VariableInfo{ops.sync.local_step->name(), ops.sync.local_step,
                                 b.Const("local_step_init", Tensor::Scalar<int64_t>(0)), TensorShape({})});
    }
    all.insert(all.end(), ops.slots.begin(), ops.slots.end());
    r.learning_rate = ops.learning_rate.name();
    const config::Optimizer& o = (*loaded)->experiment.optimizer();
    r.learning_rate_value = o.has_sgd() ? o.sgd().learning_rate() : o.adagrad().learning_rate();
    b.WithControlDependencies({ops.train_op}).AddNode("train_step", "NoOp", {});
  } else {
    all.push_back(step_info);
  }
  BuildInitOp(all, &b);
  EXPECT_TRUE(b.ok()) << b.status();
  r.variables = all;
  graph.ToGraphDef(&r.def);
  for (const NodeDef& n : r.def.node()) {
    if (n.op().find("Accumulator") != std::string::npos) r.accumulators.insert(n.op());
    if (n.input_size() > 0 && (n.op().rfind("Apply", 0) == 0 || n.op().rfind("SparseApply", 0) == 0 ||
                               n.op().rfind("Scatter", 0) == 0)) {
      r.update_op[n.input(0)] = n.op();
    }
  }
  return r;
}

std::string EmbeddingModel(int partitions, const std::string& optimizer) {
  return absl::StrCat(R"(
model {
  layer { name: "emb" input: "ids" embedding { vocabulary_size: 11 dimension: 3 partitions: )",
                      partitions, R"( initializer { truncated_normal { stddev: 0.5 } } } }
  layer { name: "flat" input: "emb" flatten {} }
  layer { name: "out" input: "flat" dense { units: 2 } }
  loss { mean_squared_error { predictions: "out" targets: "y" } }
}
optimizer { )",
                      optimizer, " }\n");
}

const std::vector<FeatureSpec> kIdsAndTargets = {{"ids", DT_INT64, {-1, 3}}, {"y", DT_FLOAT, {-1, 2}}};

// The table as [rows, 3] values per id, from its parts.
std::vector<float> WholeTable(Session* s, const BuiltModel& m, int64_t rows) {
  std::vector<float> whole(rows * 3);
  for (const VariableInfo& v : m.variables) {
    if (v.name.rfind("emb/embeddings", 0) != 0 || v.name.find("/accumulator") != std::string::npos) continue;
    const std::vector<float> part = Floats(RunGraph(s, {}, {v.name})[0]);
    const int n = v.num_parts;
    for (int64_t r = 0; r * 3 < static_cast<int64_t>(part.size()); ++r) {
      const int64_t id = n > 1 ? r * n + v.part : r;
      for (int j = 0; j < 3; ++j) whole[id * 3 + j] = part[r * 3 + j];
    }
  }
  return whole;
}

std::vector<std::pair<std::string, Tensor>> Batch(int step) {
  // Ids with repeats within and across examples.
  const std::vector<std::vector<int64_t>> ids = {{3, 7, 3, 10, 0, 7}, {5, 5, 5, 1, 8, 2}, {4, 9, 6, 3, 3, 10}};
  std::vector<float> y;
  for (int i = 0; i < 4; ++i) y.push_back(0.25f * (i + step) - 0.5f);
  return {{"ids", Tensor::FromVector<int64_t>(ids[step % 3], TensorShape({2, 3}))},
          {"y", Tensor::FromVector<float>(y, TensorShape({2, 2}))}};
}

TEST(PartitionedEmbedding, LooksUpTrainsAndUpdatesSparselyAsOneTable) {
  for (const std::string opt : {"sgd { learning_rate: 0.1 }", "adagrad { learning_rate: 0.2 }"}) {
    SCOPED_TRACE(opt);
    std::vector<float> reference_lookup, reference_table;
    std::vector<float> reference_losses;
    for (int parts : {1, 3, 4, 11}) {
      SCOPED_TRACE(absl::StrCat("partitions ", parts));
      BuiltModel m = BuildFrom(EmbeddingModel(parts, opt), kIdsAndTargets);
      ASSERT_FALSE(m.loss.empty());
      int part_count = 0;
      for (const VariableInfo& v : m.variables) {
        if (v.name.rfind("emb/embeddings", 0) != 0 || v.name.find("/accumulator") != std::string::npos) continue;
        ++part_count;
        // Each part is updated sparsely.
        EXPECT_EQ(m.update_op[v.name], opt[0] == 's' ? "ScatterSub" : "SparseApplyAdagrad") << v.name;
        EXPECT_EQ(v.num_parts, parts);
        if (parts > 1) {
          EXPECT_EQ(v.logical, "emb/embeddings");
        }
      }
      EXPECT_EQ(part_count, parts);
      auto s = OpenSession(m.def);
      RunGraph(s.get(), {}, {}, {"init"});
      const std::vector<float> initial = WholeTable(s.get(), m, 11);
      const std::vector<float> lookup = Floats(RunGraph(s.get(), Batch(0), {m.named["emb"]})[0]);
      std::vector<float> losses;
      for (int step = 0; step < 3; ++step) {
        losses.push_back(RunGraph(s.get(), m.Train(Batch(step)), {m.loss}, {"train_step"})[0].scalar<float>());
      }
      const std::vector<float> table = WholeTable(s.get(), m, 11);
      if (parts == 1) {
        reference_lookup = lookup;
        reference_table = table;
        reference_losses = losses;
        // The lookup is the table's rows.
        EXPECT_EQ(lookup[0], initial[3 * 3]);
        EXPECT_EQ(lookup[5 * 3 + 2], initial[7 * 3 + 2]);
        continue;
      }
      EXPECT_EQ(lookup, reference_lookup);
      for (size_t i = 0; i < losses.size(); ++i) EXPECT_NEAR(losses[i], reference_losses[i], 1e-6);
      for (size_t i = 0; i < table.size(); ++i) EXPECT_NEAR(table[i], reference_table[i], 1e-6) << "element " << i;
    }
  }
}

TEST(PartitionedEmbedding, SgdStepIsTheDenseStepWithDuplicateIdsSummed) {
  BuiltModel m = BuildFrom(EmbeddingModel(3, "sgd { learning_rate: 0.5 }"), kIdsAndTargets);
  ASSERT_FALSE(m.loss.empty());
  // The dense gradient of the whole table, by hand from the lookup's
  // gradient: each id's rows summed over its occurrences.
  std::string out_kernel;
  for (const VariableInfo& v : m.variables) {
    if (v.name == "out/kernel") out_kernel = v.name;
  }
  auto s = OpenSession(m.def);
  RunGraph(s.get(), {}, {}, {"init"});
  const std::vector<float> before = WholeTable(s.get(), m, 11);
  // d loss / d lookup, from a separate gradient of the same graph would need
  // a rebuild; instead check with the model's own algebra: the step changes
  // exactly the rows of the batch's ids, and a row's change is -lr times the
  // sum of the gradients of its occurrences (checked for id 5, which occurs
  // three times in example 0 of Batch(1), against ids seen once).
  const std::vector<float> kernel = Floats(RunGraph(s.get(), {}, {out_kernel})[0]);  // [9, 2]
  const std::vector<float> lookup = Floats(RunGraph(s.get(), Batch(1), {m.named["out"]})[0]);  // [2, 2]
  RunGraph(s.get(), m.Train(Batch(1)), {}, {"train_step"});
  const std::vector<float> after = WholeTable(s.get(), m, 11);
  const std::vector<float> y = Floats(Batch(1)[1].second);
  // MSE over 4 values: d/d out[b][u] = 2 * (out - y) / 4.
  std::vector<double> dout(4);
  for (int i = 0; i < 4; ++i) dout[i] = 2.0 * (lookup[i] - y[i]) / 4.0;
  // flat[b][k*3 + j] -> grad = sum_u dout[b][u] * kernel[k*3 + j][u].
  const std::vector<std::vector<int64_t>> ids = {{5, 5, 5}, {1, 8, 2}};
  std::map<int64_t, std::vector<double>> want;
  for (int b = 0; b < 2; ++b) {
    for (int k = 0; k < 3; ++k) {
      auto& row = want[ids[b][k]];
      row.resize(3, 0.0);
      for (int j = 0; j < 3; ++j) {
        for (int u = 0; u < 2; ++u) row[j] += dout[b * 2 + u] * kernel[(k * 3 + j) * 2 + u];
      }
    }
  }
  for (int64_t id = 0; id < 11; ++id) {
    for (int j = 0; j < 3; ++j) {
      const double expected = want.count(id) ? before[id * 3 + j] - 0.5 * want[id][j] : before[id * 3 + j];
      if (want.count(id)) {
        EXPECT_NEAR(after[id * 3 + j], expected, 1e-6) << "id " << id;
      } else {
        EXPECT_EQ(after[id * 3 + j], before[id * 3 + j]) << "untouched id " << id;
      }
    }
  }
}

TEST(PartitionedEmbedding, SyncReplicaStepUpdatesOnlyTheRowsThroughSparseAccumulators) {
  // One replica of one: the chief's sync step applies the same update as a
  // plain step, and its embedding parts go through sparse accumulators.
  std::vector<float> plain;
  for (bool sync : {false, true}) {
    SCOPED_TRACE(sync ? "sync" : "plain");
    BuiltModel m = BuildFrom(EmbeddingModel(3, "adagrad { learning_rate: 0.2 }"), kIdsAndTargets, true, sync);
    ASSERT_FALSE(m.loss.empty());
    if (sync) {
      EXPECT_TRUE(m.accumulators.count("SparseConditionalAccumulator"));
      EXPECT_TRUE(m.accumulators.count("SparseAccumulatorTakeGradient"));
      EXPECT_TRUE(m.accumulators.count("ConditionalAccumulator"));  // the dense layer's
    }
    for (int p = 0; p < 3; ++p) {
      EXPECT_EQ(m.update_op[absl::StrCat("emb/embeddings/part_", p)], "SparseApplyAdagrad") << "part " << p;
    }
    auto s = OpenSession(m.def);
    RunGraph(s.get(), {}, {}, {"init"});
    if (sync) RunGraph(s.get(), {}, {}, {"sync_init"});
    const std::vector<float> before = WholeTable(s.get(), m, 11);
    for (int step = 0; step < 3; ++step) RunGraph(s.get(), m.Train(Batch(step)), {m.loss}, {"train_step"});
    const std::vector<float> after = WholeTable(s.get(), m, 11);
    if (!sync) {
      plain = after;
      continue;
    }
    for (size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i], plain[i]) << "element " << i;
    EXPECT_NE(after, before);
  }
}

// The count of gradients the chief's step averaged (/metrics'
// sluice_aggregated_gradients) is read after that step's take, not before it:
// it showed the previous step's count.
TEST(SyncReplicas, TheAggregatedCountIsReadAfterTheStepsTake) {
  BuiltModel m = BuildFrom(EmbeddingModel(1, "sgd { learning_rate: 0.1 }"), kIdsAndTargets, true, true);
  ASSERT_FALSE(m.loss.empty());
  const NodeDef* aggregated = nullptr;
  for (const NodeDef& n : m.def.node()) {
    if (n.op() == "AccumulatorLastTaken") aggregated = &n;
  }
  ASSERT_NE(aggregated, nullptr);
  bool after_take = false;
  for (const std::string& in : aggregated->input()) {
    after_take = after_take || (absl::StartsWith(in, "^") && absl::StrContains(in, "take_gradient"));
  }
  EXPECT_TRUE(after_take) << aggregated->DebugString();
}

// A chief restarted beside a live ps finds tokens its previous incarnation
// released and nobody took; its init drops them (else a replica would start a
// step ahead of the restored global step).
TEST(SyncReplicas, ChiefInitDropsTokensLeftInTheQueue) {
  BuiltModel m = BuildFrom(EmbeddingModel(1, "sgd { learning_rate: 0.1 }"), kIdsAndTargets, true, true);
  ASSERT_FALSE(m.loss.empty());
  std::string queue;
  for (const NodeDef& n : m.def.node()) {
    if (n.op() == "FIFOQueue" && n.name().find("token_queue") != std::string::npos) queue = n.name();
  }
  ASSERT_FALSE(queue.empty());
  GraphDef g = m.def;
  NodeDef* left = g.add_node();
  left->set_name("left_tokens");
  left->set_op("Const");
  (*left->mutable_attr())["dtype"].set_type(DT_INT64);
  Tensor::FromVector<int64_t>({5, 5}).AsProtoTensorContent((*left->mutable_attr())["value"].mutable_tensor());
  NodeDef* put = g.add_node();
  put->set_name("put_tokens");
  put->set_op("QueueEnqueueMany");
  put->add_input(queue);
  put->add_input("left_tokens");
  (*put->mutable_attr())["Tcomponents"].mutable_list()->add_type(DT_INT64);
  NodeDef* size = g.add_node();
  size->set_name("queued");
  size->set_op("QueueSize");
  size->add_input(queue);
  auto s = OpenSession(g);
  RunGraph(s.get(), {}, {}, {"init"});
  RunGraph(s.get(), {}, {}, {"put_tokens"});
  EXPECT_EQ(RunGraph(s.get(), {}, {"queued"})[0].scalar<int32_t>(), 2);
  RunGraph(s.get(), {}, {}, {"sync_init"});
  EXPECT_EQ(RunGraph(s.get(), {}, {"queued"})[0].scalar<int32_t>(), 0);
  // With an empty queue the init does not wait, and the steps run as before.
  RunGraph(s.get(), {}, {}, {"sync_init"});
  RunGraph(s.get(), m.Train(Batch(0)), {m.loss}, {"train_step"});
  EXPECT_EQ(RunGraph(s.get(), {}, {"queued"})[0].scalar<int32_t>(), 0);
}

TEST(PartitionedEmbedding, PartsSpreadOverPsTasksOnePerTask) {
  BuiltModel m = BuildFrom(EmbeddingModel(4, "adagrad { learning_rate: 0.2 }"), kIdsAndTargets);
  ASSERT_FALSE(m.loss.empty());
  ReplicaDeviceOptions o;
  o.worker_task = "/job:worker/replica:0/task:0";
  o.ps_tasks = {"/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1", "/job:ps/replica:0/task:2"};
  o.global_step = "global_step";
  for (const VariableInfo& v : m.variables) {
    if (v.num_parts > 1) o.partition_of[v.name] = v.part;
  }
  auto assigned = AssignReplicaDevices(o, &m.def);
  ASSERT_TRUE(assigned.ok()) << assigned.status();
  for (int p = 0; p < 4; ++p) {
    const std::string part = absl::StrCat("emb/embeddings/part_", p);
    EXPECT_EQ(assigned->variable_task[part], o.ps_tasks[p % 3]) << part;
    // Its optimizer slot goes with it.
    EXPECT_EQ(assigned->variable_task[part + "/accumulator/var"], o.ps_tasks[p % 3]);
  }
  EXPECT_EQ(assigned->variable_task["global_step"], o.ps_tasks[0]);
}

TEST(PartitionedEmbedding, LookupOfPartsEqualsGatherForIdsOfAnyShape) {
  Graph graph;
  GraphBuilder b(&graph);
  const Tensor table = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, TensorShape({7, 2}));
  std::vector<Output> parts;
  for (int p = 0; p < 3; ++p) {
    std::vector<float> rows;
    for (int64_t r = p; r < 7; r += 3) rows.insert(rows.end(), {static_cast<float>(2 * r), static_cast<float>(2 * r + 1)});
    parts.push_back(b.Const(absl::StrCat("part", p), Tensor::FromVector<float>(rows, TensorShape({PartRows(7, 3, p), 2}))));
    EXPECT_EQ(PartRows(7, 3, p), p == 0 ? 3 : 2);
  }
  Output ids = b.Op("ids", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT32)}});
  Output got = PartitionedLookup(&b, parts, ids);
  Output want = b.Op("want", "Gather", {b.Const("table", table), ids});
  Output whole = StitchParts(&b, parts, 7);
  ASSERT_TRUE(b.ok()) << b.status();
  GraphDef def;
  graph.ToGraphDef(&def);
  auto s = OpenSession(def);
  const Tensor id_values = Tensor::FromVector<int32_t>({6, 0, 4, 4, 2, 5}, TensorShape({2, 3}));
  std::vector<Tensor> out = RunGraph(s.get(), {{"ids", id_values}}, {got.name(), want.name(), whole.name()});
  EXPECT_EQ(out[0].shape(), TensorShape({2, 3, 2}));
  EXPECT_EQ(Floats(out[0]), Floats(out[1]));
  EXPECT_EQ(Floats(out[2]), Floats(table));
  // An id past the table is an error, not a crash.
  std::vector<Tensor> unused;
  EXPECT_FALSE(s->Run({{"ids", Tensor::FromVector<int32_t>({7})}}, {got.name()}, {}, &unused).ok());
}

// ---- Sampled softmax ----

std::string SampledSoftmaxModel(int partitions, bool keep_hits = false) {
  return absl::StrCat(R"(
model {
  loss { sampled_softmax { inputs: "x" labels: "label" num_classes: 7 num_sampled: 4 partitions: )",
                      partitions, keep_hits ? " keep_accidental_hits: true" : "",
                      R"( weights_initializer { truncated_normal { stddev: 0.7 } } } }
}
optimizer { sgd { learning_rate: 0.5 } }
)");
}

const std::vector<FeatureSpec> kHiddenAndLabels = {{"x", DT_FLOAT, {-1, 3}}, {"label", DT_INT64, {-1}}};
const std::vector<float> kX = {0.5f, -1.0f, 0.25f, 1.5f, 0.75f, -0.5f, -0.3f, 0.2f, 0.9f};
const std::vector<int64_t> kLabels = {2, 5, 0};
const std::vector<int64_t> kSampled = {4, 5, 0, 6};  // 5 and 0 are accidental hits of examples 1 and 2
const std::vector<float> kTrueQ = {0.5f, 0.25f, 0.9f};
const std::vector<float> kSampledQ = {0.3f, 0.25f, 0.9f, 0.2f};

// Rows of weights [7, 3] and biases [7] from the model's parts.
void WeightsAndBiases(Session* s, const BuiltModel& m, std::vector<double>* w, std::vector<double>* bias) {
  w->assign(21, 0.0);
  bias->assign(7, 0.0);
  for (const VariableInfo& v : m.variables) {
    const bool is_w = v.name.rfind("sampled_softmax/weights", 0) == 0;
    const bool is_b = v.name.rfind("sampled_softmax/biases", 0) == 0;
    if (!is_w && !is_b) continue;
    const std::vector<float> part = Floats(RunGraph(s, {}, {v.name})[0]);
    const int width = is_w ? 3 : 1;
    for (int64_t r = 0; r * width < static_cast<int64_t>(part.size()); ++r) {
      const int64_t id = v.num_parts > 1 ? r * v.num_parts + v.part : r;
      for (int j = 0; j < width; ++j) (is_w ? *w : *bias)[id * width + j] = part[r * width + j];
    }
  }
}

struct Reference {
  double loss = 0;
  std::vector<double> dw, db, dx;  // gradients of the mean loss
};

// TensorFlow's _compute_sampled_logits + softmax cross-entropy, in double,
// on inputs x [3, 3] (kX by default).
Reference SampledReference(const std::vector<double>& w, const std::vector<double>& bias, bool remove_hits,
                           std::vector<double> x = std::vector<double>(kX.begin(), kX.end())) {
  Reference r;
  r.dw.assign(21, 0.0);
  r.db.assign(7, 0.0);
  r.dx.assign(9, 0.0);
  const int batch = 3;
  for (int i = 0; i < batch; ++i) {
    std::vector<int64_t> cls = {kLabels[i]};
    std::vector<double> logits, q = {kTrueQ[i]};
    for (size_t j = 0; j < kSampled.size(); ++j) {
      cls.push_back(kSampled[j]);
      q.push_back(kSampledQ[j]);
    }
    for (size_t c = 0; c < cls.size(); ++c) {
      double z = bias[cls[c]];
      for (int d = 0; d < 3; ++d) z += w[cls[c] * 3 + d] * x[i * 3 + d];
      z -= std::log(q[c]);
      if (c > 0 && remove_hits && cls[c] == kLabels[i]) z += -FLT_MAX;
      logits.push_back(z);
    }
    double top = logits[0];
    for (double z : logits) top = std::max(top, z);
    double sum = 0;
    for (double z : logits) sum += std::exp(z - top);
    r.loss += (top + std::log(sum) - logits[0]) / batch;
    for (size_t c = 0; c < cls.size(); ++c) {
      const double dz = (std::exp(logits[c] - top) / sum - (c == 0 ? 1.0 : 0.0)) / batch;
      r.db[cls[c]] += dz;
      for (int d = 0; d < 3; ++d) {
        r.dw[cls[c] * 3 + d] += dz * x[i * 3 + d];
        r.dx[i * 3 + d] += dz * w[cls[c] * 3 + d];
      }
    }
  }
  return r;
}

std::vector<std::pair<std::string, Tensor>> SampledFeeds(const std::string& sampler) {
  return {{"x", Tensor::FromVector<float>(kX, TensorShape({3, 3}))},
          {"label", Tensor::FromVector<int64_t>(kLabels)},
          {sampler + ":0", Tensor::FromVector<int64_t>(kSampled)},
          {sampler + ":1", Tensor::FromVector<float>(kTrueQ, TensorShape({3, 1}))},
          {sampler + ":2", Tensor::FromVector<float>(kSampledQ)}};
}

std::string SamplerOf(const BuiltModel& m) {
  for (const NodeDef& n : m.def.node()) {
    if (absl::StartsWith(n.op(), "LogUniformCandidateSampler")) return n.name();  // or ...AtStep
  }
  ADD_FAILURE() << "no sampler";
  return "";
}

TEST(SampledSoftmax, LossAndSparseStepEqualAFloat64ReferenceWithTheSameCandidates) {
  for (bool keep_hits : {false, true}) {
    for (int parts : {1, 3}) {
      SCOPED_TRACE(absl::StrCat("partitions ", parts, keep_hits ? " keeping accidental hits" : ""));
      BuiltModel m = BuildFrom(SampledSoftmaxModel(parts, keep_hits), kHiddenAndLabels);
      ASSERT_FALSE(m.loss.empty());
      for (const VariableInfo& v : m.variables) {
        if (v.name.rfind("sampled_softmax/", 0) == 0) {
          EXPECT_EQ(m.update_op[v.name], "ScatterSub") << v.name;
        }
      }
      auto s = OpenSession(m.def);
      RunGraph(s.get(), {}, {}, {"init"});
      std::vector<double> w, bias;
      WeightsAndBiases(s.get(), m, &w, &bias);
      const Reference ref = SampledReference(w, bias, !keep_hits);
      const float loss = RunGraph(s.get(), m.Train(SampledFeeds(SamplerOf(m))), {m.loss}, {"train_step"})[0].scalar<float>();
      EXPECT_NEAR(loss, ref.loss, 1e-5 * std::max(1.0, std::fabs(ref.loss)));
      std::vector<double> w2, bias2;
      WeightsAndBiases(s.get(), m, &w2, &bias2);
      const std::set<int64_t> touched = {2, 5, 0, 4, 6};
      for (int64_t c = 0; c < 7; ++c) {
        if (!touched.count(c)) {
          EXPECT_EQ(bias2[c], bias[c]) << "class " << c << " was neither true nor sampled";
          for (int d = 0; d < 3; ++d) EXPECT_EQ(w2[c * 3 + d], w[c * 3 + d]);
          continue;
        }
        EXPECT_NEAR(bias2[c], bias[c] - 0.5 * ref.db[c], 1e-5) << "class " << c;
        for (int d = 0; d < 3; ++d) EXPECT_NEAR(w2[c * 3 + d], w[c * 3 + d] - 0.5 * ref.dw[c * 3 + d], 1e-5);
      }
    }
  }
}

// The gradient that reaches the layer below (an LSTM's outputs, say): a
// dense layer h = x K with K all 0.3 feeds the loss; one SGD step must move K
// by x^T dh, with dh the reference's gradient with respect to h.
TEST(SampledSoftmax, GradientReachesTheLayerBelow) {
  for (int parts : {1, 3}) {
    SCOPED_TRACE(absl::StrCat("partitions ", parts));
    std::string text = absl::StrReplaceAll(SampledSoftmaxModel(parts), {{"inputs: \"x\"", "inputs: \"h\""}});
    text = absl::StrReplaceAll(text, {{"model {\n", "model {\n  layer { name: \"h\" input: \"x\" dense { units: 3 no_bias: true "
                                                      "kernel_initializer { constant { value: 0.3 } } } }\n"}});
    BuiltModel m = BuildFrom(text, kHiddenAndLabels);
    ASSERT_FALSE(m.loss.empty());
    auto s = OpenSession(m.def);
    RunGraph(s.get(), {}, {}, {"init"});
    std::vector<double> w, bias;
    WeightsAndBiases(s.get(), m, &w, &bias);
    std::vector<double> h(9, 0.0);
    for (int i = 0; i < 3; ++i) {
      for (int d = 0; d < 3; ++d) {
        for (int e = 0; e < 3; ++e) h[i * 3 + d] += kX[i * 3 + e] * 0.3;
      }
    }
    const Reference ref = SampledReference(w, bias, /*remove_hits=*/true, h);
    RunGraph(s.get(), m.Train(SampledFeeds(SamplerOf(m))), {m.loss}, {"train_step"});
    const std::vector<float> kernel = Floats(RunGraph(s.get(), {}, {"h/kernel"})[0]);
    ASSERT_EQ(kernel.size(), 9u);
    for (int e = 0; e < 3; ++e) {
      for (int d = 0; d < 3; ++d) {
        double dk = 0;
        for (int i = 0; i < 3; ++i) dk += kX[i * 3 + e] * ref.dx[i * 3 + d];
        EXPECT_NEAR(kernel[e * 3 + d], 0.3 - 0.5 * dk, 1e-5) << "kernel[" << e << "][" << d << "]";
      }
    }
  }
}

TEST(SampledSoftmax, EvaluationIsTheFullSoftmaxCrossEntropy) {
  for (int parts : {1, 3}) {
    BuiltModel m = BuildFrom(SampledSoftmaxModel(parts), kHiddenAndLabels, /*training=*/false);
    ASSERT_FALSE(m.loss.empty());
    for (const NodeDef& n : m.def.node()) EXPECT_FALSE(absl::StartsWith(n.op(), "LogUniformCandidateSampler")) << n.op();
    auto s = OpenSession(m.def);
    RunGraph(s.get(), {}, {}, {"init"});
    std::vector<double> w, bias;
    WeightsAndBiases(s.get(), m, &w, &bias);
    double want = 0;
    for (int i = 0; i < 3; ++i) {
      std::vector<double> z(7);
      double top = -1e300, sum = 0;
      for (int c = 0; c < 7; ++c) {
        z[c] = bias[c];
        for (int d = 0; d < 3; ++d) z[c] += w[c * 3 + d] * kX[i * 3 + d];
        top = std::max(top, z[c]);
      }
      for (int c = 0; c < 7; ++c) sum += std::exp(z[c] - top);
      want += (top + std::log(sum) - z[kLabels[i]]) / 3;
    }
    const float got = RunGraph(s.get(),
                          {{"x", Tensor::FromVector<float>(kX, TensorShape({3, 3}))},
                           {"label", Tensor::FromVector<int64_t>(kLabels)}},
                          {m.loss})[0]
                          .scalar<float>();
    EXPECT_NEAR(got, want, 1e-5) << "partitions " << parts;
  }
}

TEST(SampledSoftmax, TrainsWithTheSamplerDrawingEachStep) {
  BuiltModel m = BuildFrom(SampledSoftmaxModel(2), kHiddenAndLabels);
  ASSERT_FALSE(m.loss.empty());
  auto s = OpenSession(m.def);
  RunGraph(s.get(), {}, {}, {"init"});
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", Tensor::FromVector<float>(kX, TensorShape({3, 3}))}, {"label", Tensor::FromVector<int64_t>(kLabels)}};
  float first = 0, last = 0;
  for (int i = 0; i < 60; ++i) {
    last = RunGraph(s.get(), m.Train(feeds), {m.loss}, {"train_step"})[0].scalar<float>();
    if (i == 0) first = last;
    ASSERT_TRUE(std::isfinite(last));
  }
  EXPECT_LT(last, first);
}

TEST(SampledSoftmax, BadInputsAreLocatedConfigErrors) {
  auto loaded = config::ParseExperiment("test.pbtxt", R"(
model { loss { sampled_softmax { inputs: "label" labels: "x" num_classes: 7 num_sampled: 4 } } }
optimizer { sgd { learning_rate: 0.5 } }
)");
  ASSERT_TRUE(loaded.ok());
  Graph graph;
  GraphBuilder b(&graph);
  std::map<std::string, Feature> feats;
  for (const FeatureSpec& f : kHiddenAndLabels) {
    feats[f.name] = Feature{b.Op(f.name, "Placeholder", {}, {{"dtype", MakeAttr(f.dtype)}}), PartialShape::FromDims(f.dims)};
  }
  ModelOutputs model;
  config::ConfigErrors errors("test.pbtxt");
  ASSERT_TRUE(BuildModel(**loaded, ModelOptions(), feats, &b, &model, &errors).ok());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors.lines()[0].find("test.pbtxt:2:"), std::string::npos) << errors.lines()[0];
  EXPECT_NE(errors.lines()[0].find("they must be float32 [batch, dim]"), std::string::npos) << errors.lines()[0];
}

}  // namespace
}  // namespace models
}  // namespace sluice
