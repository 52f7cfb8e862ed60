// sparse_embedding_bench (issue 19): the training step time of an embedding
// model whose table has 1,000,000 rows against the same model with 10,000
// rows, and the 1,000,000-row table in 4 partitions. With sparse updates a
// step reads and writes only the rows its batch looks up, so the step time
// should not grow with the table (goal: ratio <= 1.2).
//
// Model (the experiment's own builders, models/): ids [128, 20] int64 ->
// embedding (dimension 64) -> flatten -> dense 10 -> softmax cross-entropy
// against labels; Adagrad (a slot as large as the table). Three id streams:
// the same ids for every table (log-uniform over the first 10,000 rows: the
// same rows touched, only the table's size differs; the goal applies here),
// log-uniform (Zipf-like, as word ids; the sampled softmax sampler's) over
// each whole table (more distinct rows per batch in the larger one), and
// uniform over each whole table (nearly every lookup a cache miss in the
// large one). Each model has its own Session over the process's
// devices; variables of distinct names.
//
// Per round and id stream, in alternating order: WARMUP steps, then STEPS
// timed steps of each model; the per-round ratio (large / small) is
// reported as median [min, max] over ROUNDS rounds, with the load average.
// The empty-call overhead (a Session::Run fetching the global step) is
// reported beside the step times.
//
// Usage: sparse_embedding_bench [--rounds=5] [--steps=200] [--warmup=20] [--profile]
// (--profile: also the slowest nodes of each model, from step stats)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "configs/load.h"
#include "engine/graph/gradients.h"
#include "engine/runtime/session.h"
#include "models/model_builder.h"
#include "models/optimizer.h"

namespace sluice {
namespace {

constexpr int64_t kBatch = 128, kIdsPerExample = 20, kDim = 64;

struct Model {
  std::string label;
  int64_t rows = 0;
  std::unique_ptr<Session> session;
  std::string train_op, learning_rate, global_step, ids, labels;
};

// With `dense`, the update is what it was before sparse updates: every
// gradient densified (the table's zeros plus the looked-up rows), then
// ApplyAdagrad over the whole table and slot.
absl::Status Build(const std::string& label, int64_t rows, int partitions, bool dense, Model* m) {
  const std::string tag = absl::StrCat("t", rows, "_p", partitions, dense ? "_dense" : "");
  const std::string text = absl::StrCat(
      "model {\n"
      "  layer { name: \"emb_", tag, "\" input: \"ids\" embedding { vocabulary_size: ", rows, " dimension: ", kDim,
      " partitions: ", partitions, " initializer { truncated_normal { stddev: 0.05 } } } }\n",
      "  layer { name: \"flat_", tag, "\" input: \"emb_", tag, "\" flatten {} }\n",
      "  layer { name: \"logits_", tag, "\" input: \"flat_", tag, "\" dense { units: 10 } }\n",
      "  loss { softmax_cross_entropy { logits: \"logits_", tag, "\" labels: \"label\" } }\n",
      "}\n",
      "optimizer { adagrad { learning_rate: 0.05 } }\n");
  auto loaded = config::ParseExperiment("bench.pbtxt", text);
  if (!loaded.ok()) return loaded.status();
  config::ApplyDefaults(&(*loaded)->experiment);
  Graph graph;
  GraphBuilder b(&graph);
  GraphBuilder fb = b.WithSubPrefix(tag);
  std::map<std::string, models::Feature> features;
  Output ids = fb.Op("ids", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT64)}});
  Output labels = fb.Op("label", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT64)}});
  features["ids"] = {ids, PartialShape::FromDims({kUnknownDim, kIdsPerExample})};
  features["label"] = {labels, PartialShape::FromDims({kUnknownDim})};
  models::VariableInfo step_info;
  Node* step = fb.AddNode("global_step", "VariableV2", {},
                          {{"dtype", MakeAttr(DT_INT64)}, {"shape", MakeAttr(TensorShape({}))}});
  if (step == nullptr) return fb.status();
  step_info.name = step->name();
  step_info.variable = step;
  step_info.initial_value = fb.Const("global_step_init", Tensor::Scalar<int64_t>(0));
  models::ModelOptions mo;
  mo.global_step = Output{step, 0};
  models::ModelOutputs out;
  config::ConfigErrors errors("bench.pbtxt");
  absl::Status s = models::BuildModel(**loaded, mo, features, &b, &out, &errors);
  if (!s.ok()) return s;
  if (!errors.empty()) return absl::InvalidArgumentError(errors.lines()[0]);
  models::TrainingOps ops;
  std::vector<models::VariableInfo> all = out.variables;
  if (!dense) {
    s = models::BuildTrainingOps((*loaded)->experiment.optimizer(), out.variables, out.total_loss, step, step_info,
                                 &fb, &ops);
    if (!s.ok()) return s;
  } else {
    std::vector<Output> xs;
    for (const models::VariableInfo& v : out.variables) xs.push_back(Output{v.variable, 0});
    std::vector<Gradient> grads;
    s = AddSymbolicGradients(&graph, {out.total_loss}, xs, {}, &grads, tag + "/gradients");
    if (!s.ok()) return s;
    GraphBuilder db = fb.WithSubPrefix("densify");
    for (Gradient& g : grads) {
      g.dense = DenseGradient(&db, g);
      g.is_sparse = false;
    }
    ops.learning_rate = fb.Op("learning_rate", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
    std::vector<Node*> updates;
    s = models::BuildApplyOps((*loaded)->experiment.optimizer(), out.variables, grads, ops.learning_rate, step, &fb,
                              fb.WithSubPrefix("train"), &ops.slots, &updates);
    if (!s.ok()) return s;
    ops.train_op = fb.WithControlDependencies(updates).AddNode("step", "NoOp", {});
  }
  all.insert(all.end(), ops.slots.begin(), ops.slots.end());
  Node* init = models::BuildInitOp(all, &fb);
  if (!b.ok()) return b.status();
  GraphDef def;
  graph.ToGraphDef(&def);
  auto session = NewSession();
  if (!session.ok()) return session.status();
  m->session = std::move(session).value();
  s = m->session->Create(def);
  if (!s.ok()) return s;
  std::vector<Tensor> unused;
  s = m->session->Run({}, {}, {init->name()}, &unused);
  if (!s.ok()) return s;
  m->label = label;
  m->rows = rows;
  m->train_op = ops.train_op->name();
  m->learning_rate = ops.learning_rate.node->name();
  m->global_step = step->name();
  m->ids = ids.node->name();
  m->labels = labels.node->name();
  return absl::OkStatus();
}

// Batches of ids in [0, rows): log-uniform (P(k) ~ log((k + 2) / (k + 1))) or uniform.
std::vector<Tensor> IdBatches(int64_t rows, bool zipf, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Tensor> out;
  for (int i = 0; i < count; ++i) {
    std::vector<int64_t> ids(kBatch * kIdsPerExample);
    for (int64_t& id : ids) {
      id = zipf ? static_cast<int64_t>(std::floor(std::exp(u(rng) * std::log1p(static_cast<double>(rows))))) - 1
                : static_cast<int64_t>(u(rng) * static_cast<double>(rows));
      id = std::min(std::max<int64_t>(id, 0), rows - 1);
    }
    out.push_back(Tensor::FromVector<int64_t>(ids, TensorShape({kBatch, kIdsPerExample})));
  }
  return out;
}

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Runs `count` training steps, batches from `first` on.
void RunSteps(Model& m, const std::vector<Tensor>& batches, const Tensor& labels, int first, int count) {
  std::vector<Tensor> unused;
  for (int i = first; i < first + count; ++i) {
    absl::Status s = m.session->Run({{m.ids, batches[i % batches.size()]},
                                     {m.labels, labels},
                                     {m.learning_rate, Tensor::Scalar<float>(0.05f)}},
                                    {}, {m.train_op}, &unused);
    if (!s.ok()) {
      std::fprintf(stderr, "%s: step failed: %s\n", m.label.c_str(), std::string(s.message()).c_str());
      std::exit(1);
    }
  }
}

// Mean seconds per training step over `steps` steps after `warmup`.
double TimedSteps(Model& m, const std::vector<Tensor>& batches, const Tensor& labels, int warmup, int steps) {
  RunSteps(m, batches, labels, 0, warmup);
  const auto start = std::chrono::steady_clock::now();
  RunSteps(m, batches, labels, warmup, steps);
  return Seconds(start, std::chrono::steady_clock::now()) / steps;
}

// The nodes that took longest, summed over `steps` steps (--profile).
void Profile(Model& m, const std::vector<Tensor>& batches, const Tensor& labels, int steps) {
  std::map<std::string, double> total;
  for (int i = 0; i < steps; ++i) {
    RunOptions options;
    options.collect_step_stats = true;
    RunMetadata metadata;
    std::vector<Tensor> unused;
    absl::Status s = m.session->Run(options,
                                    {{m.ids, batches[i % batches.size()]},
                                     {m.labels, labels},
                                     {m.learning_rate, Tensor::Scalar<float>(0.05f)}},
                                    {}, {m.train_op}, &unused, &metadata);
    if (!s.ok()) std::exit(1);
    for (const NodeExecStats& n : metadata.step_stats) total[n.op + " " + n.node_name] += (n.end_ns - n.start_ns) * 1e-6;
  }
  std::vector<std::pair<double, std::string>> sorted;
  for (const auto& [name, ms] : total) sorted.push_back({ms / steps, name});
  std::sort(sorted.rbegin(), sorted.rend());
  std::printf("  %s: slowest nodes (ms per step)\n", m.label.c_str());
  for (size_t i = 0; i < sorted.size() && i < 12; ++i) std::printf("    %.4f %s\n", sorted[i].first, sorted[i].second.c_str());
}

// Mean seconds of a Session::Run that only fetches the global step.
double EmptyCall(Model& m, int calls) {
  std::vector<Tensor> out;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    if (!m.session->Run({}, {m.global_step}, {}, &out).ok()) std::exit(1);
  }
  return Seconds(start, std::chrono::steady_clock::now()) / calls;
}

std::string LoadAverage() {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) < 0) return "?";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f %.2f %.2f", l[0], l[1], l[2]);
  return buf;
}

struct Summary {
  double median, min, max;
};

Summary Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {median, v.front(), v.back()};
}

int Main(int argc, char** argv) {
  int rounds = 5, steps = 200, warmup = 20;
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--profile") == 0) {
      profile = true;
      continue;
    }
    if (std::sscanf(argv[i], "--rounds=%d", &rounds) == 1 || std::sscanf(argv[i], "--steps=%d", &steps) == 1 ||
        std::sscanf(argv[i], "--warmup=%d", &warmup) == 1) {
      continue;
    }
    std::fprintf(stderr, "usage: %s [--rounds=5] [--steps=200] [--warmup=20] [--profile]\n", argv[0]);
    return 2;
  }
  if (rounds < 1 || steps < 1 || warmup < 0) {
    std::fprintf(stderr, "rounds and steps must be >= 1, warmup >= 0\n");
    return 2;
  }
  std::printf("sparse_embedding_bench: batch %lld x %lld ids, dimension %lld, Adagrad; %d rounds of %d steps "
              "(after %d warm-up); load average %s\n",
              static_cast<long long>(kBatch), static_cast<long long>(kIdsPerExample), static_cast<long long>(kDim),
              rounds, steps, warmup, LoadAverage().c_str());
  std::vector<Model> models(3);
  const struct {
    const char* label;
    int64_t rows;
    int partitions;
  } specs[] = {{"10k rows", 10000, 1}, {"1M rows", 1000000, 1}, {"1M rows, 4 parts", 1000000, 4}};
  for (int i = 0; i < 3; ++i) {
    absl::Status s = Build(specs[i].label, specs[i].rows, specs[i].partitions, /*dense=*/false, &models[i]);
    if (!s.ok()) {
      std::fprintf(stderr, "building %s: %s\n", specs[i].label, std::string(s.message()).c_str());
      return 1;
    }
  }
  std::vector<int64_t> label_values(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) label_values[i] = i % 10;
  const Tensor labels = Tensor::FromVector<int64_t>(label_values);
  const struct {
    const char* what;
    bool zipf;
    bool same_ids;
  } streams[] = {{"the same ids in every table (log-uniform over the first 10,000 rows)", true, true},
                 {"log-uniform (Zipf-like) over each table", true, false},
                 {"uniform over each table", false, false}};
  for (const auto& stream : streams) {
    std::printf("\nids: %s\n", stream.what);
    std::vector<std::vector<Tensor>> batches;
    for (const Model& m : models) batches.push_back(IdBatches(stream.same_ids ? 10000 : m.rows, stream.zipf, 64, 17));
    std::vector<std::vector<double>> times(models.size());
    std::vector<double> ratio, ratio_parts;
    for (int r = 0; r < rounds; ++r) {
      std::vector<size_t> order = {0, 1, 2};
      if (r % 2 == 1) std::reverse(order.begin(), order.end());
      std::vector<double> t(models.size());
      for (size_t i : order) t[i] = TimedSteps(models[i], batches[i], labels, warmup, steps);
      for (size_t i = 0; i < t.size(); ++i) times[i].push_back(t[i]);
      ratio.push_back(t[1] / t[0]);
      ratio_parts.push_back(t[2] / t[0]);
      std::printf("  round %d: %s %.3f ms, %s %.3f ms, %s %.3f ms; ratio %.3f, %.3f; load %s\n", r + 1,
                  models[0].label.c_str(), t[0] * 1e3, models[1].label.c_str(), t[1] * 1e3, models[2].label.c_str(),
                  t[2] * 1e3, ratio.back(), ratio_parts.back(), LoadAverage().c_str());
      std::fflush(stdout);
    }
    if (profile) {
      for (size_t i = 0; i < models.size(); ++i) Profile(models[i], batches[i], labels, 20);
    }
    for (size_t i = 0; i < models.size(); ++i) {
      const Summary s = Summarize(times[i]);
      std::printf("  %-18s step %.3f ms [%.3f, %.3f]; empty Session::Run %.3f ms\n", models[i].label.c_str(),
                  s.median * 1e3, s.min * 1e3, s.max * 1e3, EmptyCall(models[i], 200) * 1e3);
    }
    const Summary a = Summarize(ratio), p = Summarize(ratio_parts);
    std::printf("  ratio 1M / 10k rows:          %.3f [%.3f, %.3f] (goal <= 1.2)\n", a.median, a.min, a.max);
    std::printf("  ratio 1M in 4 parts / 10k:    %.3f [%.3f, %.3f]\n", p.median, p.min, p.max);
  }
  // The same model with dense updates (as before sparse updates), once:
  // few steps, as each reads and writes the whole table and slot.
  std::printf("\ndense updates (every gradient densified, ApplyAdagrad over the whole table), the same ids as above, "
              "%d steps after 2:\n", std::max(steps / 20, 3));
  const std::vector<Tensor> same = IdBatches(10000, true, 64, 17);
  double dense_small = 0;
  for (int i = 0; i < 2; ++i) {
    Model d;
    absl::Status s = Build(specs[i].label, specs[i].rows, 1, /*dense=*/true, &d);
    if (!s.ok()) {
      std::fprintf(stderr, "building the dense %s: %s\n", specs[i].label, std::string(s.message()).c_str());
      return 1;
    }
    const double t = TimedSteps(d, same, labels, 2, std::max(steps / 20, 3));
    if (i == 0) dense_small = t;
    std::printf("  %-18s step %.3f ms%s\n", specs[i].label, t * 1e3,
                i == 1 ? absl::StrCat("; ratio 1M / 10k rows ", absl::StrFormat("%.1f", t / dense_small)).c_str() : "");
  }
  std::printf("\nload average at the end: %s\n", LoadAverage().c_str());
  return 0;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
