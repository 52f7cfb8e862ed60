// Graph-free validation of an experiment: every problem is reported with the
// location of the offending field.
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "configs/eval_values.h"
#include "configs/load.h"
#include "engine/distributed/cluster_spec.h"
#include "engine/framework/device_name.h"
#include "engine/framework/local_devices.h"
#include "engine/framework/op_def.h"

namespace sluice {
namespace config {
namespace {

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool GlobMatchesAny(const std::string& pattern) {
  glob_t g;
  int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  bool any = rc == 0 && g.gl_pathc > 0;
  globfree(&g);
  return any;
}

bool ValidName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(absl::ascii_isalnum(c) || c == '_' || c == '-' || c == '.')) return false;
  }
  return true;
}

class Validator {
 public:
  Validator(const LoadedExperiment& loaded, ConfigErrors* errors)
      : loaded_(loaded), e_(loaded.experiment), errors_(errors) {}

  void Run() {
    CheckName();
    CollectFeatures();
    CheckModel();
    CheckInput();
    CheckOptimizer();
    CheckTrain();
    CheckCheckpointSummariesMonitoring();
    CheckCluster();
  }

 private:
  void Error(const google::protobuf::Message& m, const std::string& field, int index, std::string message) {
    errors_->Add(loaded_.Where(m, field, index), std::move(message));
  }
  // An error about `field` of `m` that may be unwritten (0: unset): located at
  // the field if the file writes it, else at `parent_field` of `parent`; a
  // --set of the field itself is named either way.
  void ErrorAtFieldOrParent(const google::protobuf::Message& m, const std::string& field,
                            const google::protobuf::Message& parent, const std::string& parent_field, std::string message) {
    config::Location where = loaded_.Where(m, field);
    if (where.line == 0) {
      const config::Location at_parent = loaded_.Where(parent, parent_field);
      where.line = at_parent.line;
      where.column = at_parent.column;
      if (where.set_by.empty()) where.set_by = at_parent.set_by;
    }
    errors_->Add(where, std::move(message));
  }
  std::string DidYouMean(const std::string& word, const std::vector<std::string>& known) {
    std::string guess = ClosestMatch(word, known);
    return guess.empty() ? "" : absl::StrCat(" (did you mean '", guess, "'?)");
  }

  void CheckName() {
    if (e_.name().empty()) {
      errors_->Add({}, "the experiment needs a 'name'");
    } else if (!ValidName(e_.name())) {
      Error(e_, "name", -1, absl::StrCat("name '", e_.name(), "' may only hold letters, digits, '_', '-' and '.'"));
    }
  }

  void CollectFeatures() {
    const Input::Pipeline& p = e_.input().train();
    if (p.has_idx()) {
      features_ = {"image", "label"};
    } else if (p.has_tfrecord()) {
      for (const auto& f : p.tfrecord().feature()) features_.push_back(f.name());
    } else if (p.has_csv()) {
      for (const auto& f : p.csv().column()) features_.push_back(f.name());
    } else if (p.has_text()) {
      features_ = {"tokens", "targets"};
    }
  }

  // Names a layer input, loss or metric may refer to.
  std::vector<std::string> KnownSources(int before_layer) {
    std::vector<std::string> names = features_;
    for (int i = 0; i < before_layer && i < e_.model().layer_size(); ++i) names.push_back(e_.model().layer(i).name());
    return names;
  }

  void CheckModel() {
    const Model& m = e_.model();
    if (m.layer_size() == 0 && m.node_size() == 0) {
      errors_->Add(loaded_.Where(e_, "model"), "the model has no layers and no nodes");
    }
    std::set<std::string> names;
    for (int i = 0; i < m.layer_size(); ++i) {
      const Layer& l = m.layer(i);
      if (l.name().empty()) {
        Error(m, "layer", i, absl::StrCat("layer ", i, " needs a 'name'"));
      } else if (!names.insert(l.name()).second) {
        Error(l, "name", -1, absl::StrCat("layer name '", l.name(), "' is used twice"));
      } else if (std::find(features_.begin(), features_.end(), l.name()) != features_.end()) {
        Error(l, "name", -1, absl::StrCat("layer name '", l.name(), "' hides the input feature of that name"));
      }
      if (l.kind_case() == Layer::KIND_NOT_SET) {
        Error(m, "layer", i, absl::StrCat("layer '", l.name(), "' needs a kind (dense, conv2d, max_pool, batch_norm, add, ...)"));
      }
      if (l.input_size() == 0) Error(m, "layer", i, absl::StrCat("layer '", l.name(), "' needs an 'input'"));
      const bool joins = l.has_add() || l.has_concat();
      if (joins && l.input_size() == 1) {
        Error(l, "input", 0, absl::StrCat("layer '", l.name(), "' (", l.has_add() ? "add" : "concat",
                                          ") joins two or more inputs, but lists one"));
      } else if (!joins && l.input_size() > 1) {
        Error(l, "input", 1, absl::StrCat("layer '", l.name(), "' takes one input, but lists ", l.input_size(),
                                          " (add and concat join several)"));
      }
      std::vector<std::string> known = KnownSources(i);
      for (int j = 0; j < l.input_size(); ++j) {
        if (std::find(known.begin(), known.end(), l.input(j)) == known.end()) {
          std::vector<std::string> later;
          for (int k = i; k < m.layer_size(); ++k) later.push_back(m.layer(k).name());
          bool is_later = std::find(later.begin(), later.end(), l.input(j)) != later.end();
          Error(l, "input", j,
                is_later ? absl::StrCat("layer '", l.name(), "' reads '", l.input(j),
                                        "', which is defined later (layers run in order)")
                         : absl::StrCat("layer '", l.name(), "' reads unknown input '", l.input(j), "'",
                                        DidYouMean(l.input(j), known)));
        }
      }
      if (l.l2_weight() < 0 || !std::isfinite(l.l2_weight())) {
        Error(l, "l2_weight", -1, absl::StrCat("l2_weight must be >= 0, got ", l.l2_weight()));
      }
      CheckLayerParams(l);
      CheckDevice(l, l.device());
    }
    for (int i = 0; i < m.node_size(); ++i) {
      CheckDevice(m.node(i), m.node(i).device());
      const std::string& n = m.node(i).name();
      if (!n.empty() && !names.insert(n).second) {
        Error(m.node(i), "name", -1, absl::StrCat("node name '", n, "' is also used by a layer or another node"));
      }
    }
    std::vector<std::string> outputs = KnownSources(m.layer_size());
    for (const auto& node : m.node()) outputs.push_back(node.name());
    if (m.loss_size() == 0) errors_->Add(loaded_.Where(e_, "model"), "the model needs at least one 'loss'");
    for (const Loss& loss : m.loss()) {
      if (loss.has_softmax_cross_entropy()) {
        CheckRef(loss.softmax_cross_entropy(), "logits", loss.softmax_cross_entropy().logits(), outputs);
        CheckRef(loss.softmax_cross_entropy(), "labels", loss.softmax_cross_entropy().labels(), outputs);
      } else if (loss.has_mean_squared_error()) {
        CheckRef(loss.mean_squared_error(), "predictions", loss.mean_squared_error().predictions(), outputs);
        CheckRef(loss.mean_squared_error(), "targets", loss.mean_squared_error().targets(), outputs);
      } else if (loss.has_sampled_softmax()) {
        CheckSampledSoftmax(loss, outputs, names);
      } else {
        errors_->Add(loaded_.Where(m, "loss", 0),
                     "a loss needs a kind (softmax_cross_entropy, mean_squared_error or sampled_softmax)");
      }
      if (loss.weight() < 0 || !std::isfinite(loss.weight())) {
        Error(loss, "weight", -1, absl::StrCat("loss weight must be >= 0, got ", loss.weight()));
      }
    }
    for (const Metric& metric : m.metric()) {
      if (metric.has_accuracy()) {
        CheckRef(metric.accuracy(), "logits", metric.accuracy().logits(), outputs);
        CheckRef(metric.accuracy(), "labels", metric.accuracy().labels(), outputs);
      } else if (metric.has_top_k_accuracy()) {
        CheckRef(metric.top_k_accuracy(), "logits", metric.top_k_accuracy().logits(), outputs);
        CheckRef(metric.top_k_accuracy(), "labels", metric.top_k_accuracy().labels(), outputs);
        if (metric.top_k_accuracy().k() <= 0) {
          Error(metric.top_k_accuracy(), "k", -1, absl::StrCat("k must be > 0, got ", metric.top_k_accuracy().k()));
        }
      }
    }
  }

  // The --local_cluster the model's devices need: as many ps and worker
  // tasks as the highest task each job's devices name (at least one each).
  std::string LocalClusterHint() const {
    int ps = 1, worker = 1;
    auto count = [&](const std::string& device) {
      auto parsed = ParseDeviceName(device);
      if (device.empty() || !parsed.ok() || !parsed->has_job || !parsed->has_task || parsed->task < 0) return;
      if (parsed->job == "ps") ps = std::max(ps, parsed->task + 1);
      if (parsed->job == "worker") worker = std::max(worker, parsed->task + 1);
    };
    for (const auto& layer : e_.model().layer()) count(layer.device());
    for (const auto& node : e_.model().node()) count(node.device());
    return absl::StrCat("ps=", ps, ",worker=", worker);
  }

  // A layer's or raw node's `device`: its syntax, and that this process has a
  // device it can name (the devices of one process: /job:localhost, CPU:0 to
  // CPU:<cpu_devices - 1>). Colocation and kernel conflicts need the graph:
  // the placer reports them when the trainer builds it (also at --validate).
  void CheckDevice(const google::protobuf::Message& m, const std::string& device) {
    if (device.empty()) return;
    auto parsed = ParseDeviceName(device);
    if (!parsed.ok()) {
      Error(m, "device", -1, std::string(parsed.status().message()));
      return;
    }
    const int cpus = std::max(1, e_.devices().cpu_devices());
    const bool remote_job = parsed->has_job && parsed->job != "localhost";
    if (remote_job && parsed->job != "ps" && parsed->job != "worker") {
      Error(m, "device", -1, absl::StrCat("device '", device, "': no job '", parsed->job,
                                          "' (a cluster's jobs are ps and worker; one process is /job:localhost)",
                                          DidYouMean(parsed->job, {"ps", "worker", "localhost"})));
    } else if (remote_job && e_.cluster().job().empty() && std::getenv("TF_CONFIG") == nullptr &&
               std::getenv("SLURM_PROCID") == nullptr) {
      // No cluster anywhere (TF_CONFIG and Slurm are the other sources): one process.
      Error(m, "device", -1, absl::StrCat("device '", device, "': no job '", parsed->job,
                                          "': this run has no cluster (run it with --local_cluster ",
                                          LocalClusterHint(), ", or give cluster {}, TF_CONFIG or Slurm's "
                                          "environment)"));
    } else if (remote_job && !e_.cluster().job().empty() && ClusterTasks(parsed->job) < 0) {
      Error(m, "device", -1, absl::StrCat("device '", device, "': the cluster {} has no job '", parsed->job, "'"));
    } else if (remote_job && parsed->has_task && ClusterTasks(parsed->job) > 0 &&
               parsed->task >= ClusterTasks(parsed->job)) {
      Error(m, "device", -1, absl::StrCat("device '", device, "': job '", parsed->job, "' has ",
                                          ClusterTasks(parsed->job), " task(s) in cluster {}"));
    } else if (remote_job && parsed->has_replica && parsed->replica != 0) {
      Error(m, "device", -1, absl::StrCat("device '", device, "': every task is replica 0"));
    } else if (!remote_job && ((parsed->has_replica && parsed->replica != 0) || (parsed->has_task && parsed->task != 0))) {
      Error(m, "device", -1, absl::StrCat("device '", device,
                                          "': this run has one task, /job:localhost/replica:0/task:0 (a device of "
                                          "a cluster names its job: /job:ps/task:1)"));
    } else if (parsed->has_type && parsed->type != "CPU" && !e_.devices().allow_soft_placement()) {
      Error(m, "device", -1, absl::StrCat("device '", device, "': this process has no ", parsed->type,
                                          " devices (set devices { allow_soft_placement: true } to use a CPU instead)"));
    } else if (parsed->has_type && parsed->type == "CPU" && parsed->has_id && parsed->id >= cpus) {
      Error(m, "device", -1, absl::StrCat("device '", device, "': this process has ", cpus, " CPU device(s), CPU:0",
                                          cpus > 1 ? absl::StrCat(" to CPU:", cpus - 1) : std::string(),
                                          " (devices { cpu_devices: N } makes more)"));
    }
  }

  // `taken`: the names of layers and raw nodes (the loss's variable scope
  // must differ from them); a second sampled_softmax adds its name.
  // Unset sizes are located at the loss's `sampled_softmax`.
  void CheckSampledSoftmax(const Loss& loss, const std::vector<std::string>& outputs, std::set<std::string>& taken) {
    const Loss::SampledSoftmax& ss = loss.sampled_softmax();
    CheckRef(ss, "inputs", ss.inputs(), outputs);
    CheckRef(ss, "labels", ss.labels(), outputs);
    if (ss.num_classes() == 0) {
      ErrorAtFieldOrParent(ss, "num_classes", loss, "sampled_softmax",
                           "sampled_softmax: num_classes must be > 0, got 0 (it is required)");
    } else {
      Size(ss, "num_classes", ss.num_classes(), "sampled_softmax: num_classes");
    }
    if (ss.num_sampled() == 0) {
      ErrorAtFieldOrParent(ss, "num_sampled", loss, "sampled_softmax",
                           "sampled_softmax: num_sampled must be >= 1, got 0 (it is required)");
    } else if (ss.num_sampled() < 1 || (ss.num_classes() > 0 && ss.num_sampled() > ss.num_classes())) {
      Error(ss, "num_sampled", -1,
            absl::StrCat("sampled_softmax: num_sampled must be in [1, num_classes = ", ss.num_classes(), "], got ",
                         ss.num_sampled()));
    }
    if (ss.partitions() < 0 || (ss.num_classes() > 0 && ss.partitions() > ss.num_classes())) {
      Error(ss, "partitions", -1,
            absl::StrCat("sampled_softmax: partitions must be in [0, num_classes = ", ss.num_classes(), "], got ",
                         ss.partitions()));
    }
    const std::string name = ss.name().empty() ? "sampled_softmax" : ss.name();
    if (!taken.insert(name).second) {
      Error(ss, "name", -1,
            absl::StrCat("sampled_softmax: its variable scope '", name,
                         "' is also the name of a layer, a node or another loss; set a different 'name'"));
    }
  }

  void CheckRef(const google::protobuf::Message& m, const std::string& field, const std::string& value,
                const std::vector<std::string>& known) {
    if (value.empty()) {
      Error(m, field, -1, absl::StrCat("'", field, "' is required"));
    } else if (std::find(known.begin(), known.end(), value) == known.end()) {
      Error(m, field, -1, absl::StrCat("'", field, "' names unknown layer or feature '", value, "'", DidYouMean(value, known)));
    }
  }

  void Positive(const google::protobuf::Message& m, const std::string& field, int64_t v, const std::string& what) {
    if (v <= 0) Error(m, field, -1, absl::StrCat(what, " must be > 0, got ", v));
  }
  void NonNegative(const google::protobuf::Message& m, const std::string& field, int64_t v, const std::string& what) {
    if (v < 0) Error(m, field, -1, absl::StrCat(what, " must be >= 0, got ", v));
  }
  // A dimension or count: > 0, and small enough for the int32 shapes and attrs
  // the graph holds it in.
  void Size(const google::protobuf::Message& m, const std::string& field, int64_t v, const std::string& what) {
    constexpr int64_t kMax = 2147483647;
    if (v <= 0) {
      Error(m, field, -1, absl::StrCat(what, " must be > 0, got ", v));
    } else if (v > kMax) {
      Error(m, field, -1, absl::StrCat(what, " must be at most ", kMax, ", got ", v));
    }
  }

  void CheckLayerParams(const Layer& l) {
    const std::string who = absl::StrCat("layer '", l.name(), "': ");
    if (l.has_dense()) Size(l.dense(), "units", l.dense().units(), who + "units");
    if (l.has_conv2d()) {
      Size(l.conv2d(), "filters", l.conv2d().filters(), who + "filters");
      Size(l.conv2d(), "kernel_size", l.conv2d().kernel_size(), who + "kernel_size");
      Size(l.conv2d(), "stride", l.conv2d().stride(), who + "stride");
    }
    for (const Layer::Pool* p : {l.has_max_pool() ? &l.max_pool() : nullptr, l.has_avg_pool() ? &l.avg_pool() : nullptr}) {
      if (p == nullptr) continue;
      Size(*p, "size", p->size(), who + "pool size");
      // An unset stride defaults to the size: one error for a bad size.
      if (p->size() > 0) Size(*p, "stride", p->stride(), who + "pool stride");
    }
    // Recurrent layers: units, and how many time steps' iterations may run at
    // once (0 or unset: 1; each allowed iteration holds a slot of its own).
    constexpr int kMaxParallelIterations = 1024;
    auto recurrent = [&](const google::protobuf::Message& m, int64_t units, int64_t parallel) {
      Size(m, "units", units, who + "units");
      if (parallel < 0 || parallel > kMaxParallelIterations) {
        Error(m, "parallel_iterations", -1,
              absl::StrCat(who, "parallel_iterations must be in [0, ", kMaxParallelIterations, "] (0: 1), got ", parallel));
      }
    };
    if (l.has_lstm()) recurrent(l.lstm(), l.lstm().units(), l.lstm().parallel_iterations());
    if (l.has_gru()) recurrent(l.gru(), l.gru().units(), l.gru().parallel_iterations());
    if (l.has_dropout() && !(l.dropout().rate() >= 0 && l.dropout().rate() < 1)) {
      Error(l.dropout(), "rate", -1, absl::StrCat(who, "dropout rate must be in [0, 1), got ", l.dropout().rate()));
    }
    if (l.has_embedding()) {
      Size(l.embedding(), "vocabulary_size", l.embedding().vocabulary_size(), who + "vocabulary_size");
      Size(l.embedding(), "dimension", l.embedding().dimension(), who + "dimension");
      const int64_t parts = l.embedding().partitions();
      if (parts < 0 || (l.embedding().vocabulary_size() > 0 && parts > l.embedding().vocabulary_size())) {
        Error(l.embedding(), "partitions", -1,
              absl::StrCat(who, "partitions must be in [0, vocabulary_size = ", l.embedding().vocabulary_size(),
                           "], got ", parts));
      }
    }
    if (l.has_augment()) {
      const Layer::Augment& a = l.augment();
      if (a.max_shift() < 0) {
        Error(a, "max_shift", -1, absl::StrCat(who, "augment max_shift must be >= 0, got ", a.max_shift()));
      } else if (a.max_shift() == 0 && !a.flip_left_right()) {
        Error(l, "augment", -1, absl::StrCat(who, "augment changes nothing: set flip_left_right, max_shift or both"));
      }
      const auto& layers = e_.model().layer();
      const bool reads_a_layer =
          l.input_size() > 0 && std::any_of(layers.begin(), layers.end(), [&](const Layer& other) {
            return other.name() == l.input(0) && &other != &l;
          });
      if (reads_a_layer) {
        Error(l, "input", 0, absl::StrCat(who, "augment takes an input feature (", absl::StrJoin(features_, ", "),
                                          "), not the layer '", l.input(0),
                                          "': no gradient flows through it"));
      }
    }
    if (l.has_batch_norm()) {
      const Layer::BatchNorm& bn = l.batch_norm();
      if (bn.has_momentum() && !(bn.momentum() >= 0 && bn.momentum() < 1)) {
        Error(bn, "momentum", -1, absl::StrCat(who, "batch_norm momentum must be in [0, 1), got ", bn.momentum()));
      }
      if (bn.has_epsilon() && !(bn.epsilon() > 0 && std::isfinite(bn.epsilon()))) {
        Error(bn, "epsilon", -1, absl::StrCat(who, "batch_norm epsilon must be > 0, got ", bn.epsilon()));
      }
    }
    if (l.has_reshape()) {
      int unknown = 0;
      for (int64_t d : l.reshape().shape()) {
        if (d == -1) ++unknown;
        else if (d <= 0) Error(l.reshape(), "shape", -1, absl::StrCat(who, "reshape dims must be > 0 or -1, got ", d));
      }
      if (unknown > 1) Error(l.reshape(), "shape", -1, who + "at most one reshape dim may be -1");
    }
  }

  void CheckPipeline(const Input& input, const std::string& field, const Input::Pipeline& p) {
    if (p.source_case() == Input::Pipeline::SOURCE_NOT_SET) {
      Error(input, field, -1, absl::StrCat("input '", field, "' needs a source (idx, tfrecord, csv or text)"));
    }
    if (p.has_idx()) {
      for (const char* which : {"images", "labels"}) {
        const std::string& path = which == std::string("images") ? p.idx().images() : p.idx().labels();
        if (path.empty()) {
          Error(p.idx(), which, -1, absl::StrCat("'", which, "' is required"));
        } else if (!FileExists(path)) {
          struct stat st;
          Error(p.idx(), which, -1,
                absl::StrCat("file '", path, "' ",
                             ::stat(path.c_str(), &st) == 0 ? "is not a regular file" : "does not exist"));
        }
      }
    }
    if (p.has_tfrecord()) {
      if (p.tfrecord().files_size() == 0) Error(p.tfrecord(), "files", -1, "'files' needs at least one pattern");
      for (int i = 0; i < p.tfrecord().files_size(); ++i) {
        if (!GlobMatchesAny(p.tfrecord().files(i))) {
          Error(p.tfrecord(), "files", i, absl::StrCat("no file matches '", p.tfrecord().files(i), "'"));
        }
      }
      if (p.tfrecord().feature_size() == 0) Error(p.tfrecord(), "feature", -1, "list the features to parse");
    }
    if (p.has_csv()) {
      for (int i = 0; i < p.csv().files_size(); ++i) {
        if (!GlobMatchesAny(p.csv().files(i))) Error(p.csv(), "files", i, absl::StrCat("no file matches '", p.csv().files(i), "'"));
      }
    }
    if (p.has_text()) CheckText(p.text());
    if (field == "eval" && p.stage_next_batch()) {
      Error(p, "stage_next_batch", -1, "stage_next_batch is for input.train (evaluation does not stage its batches)");
    }
    Size(p, "batch_size", p.batch_size(), "batch_size");
    Size(p, "reader_threads", p.reader_threads(), "reader_threads");
    NonNegative(p, "epochs", p.epochs(), "epochs");
    if (p.has_shuffle()) {
      NonNegative(p.shuffle(), "min_after_dequeue", p.shuffle().min_after_dequeue(), "min_after_dequeue");
      if (p.shuffle().capacity() <= p.shuffle().min_after_dequeue()) {
        Error(p.shuffle(), "capacity", -1,
              absl::StrCat("shuffle capacity (", p.shuffle().capacity(), ") must exceed min_after_dequeue (",
                           p.shuffle().min_after_dequeue(), ")"));
      }
    }
  }

  void CheckText(const Input::Text& t) {
    if (t.files_size() == 0) Error(t, "files", -1, "'files' needs at least one pattern");
    for (int i = 0; i < t.files_size(); ++i) {
      if (!GlobMatchesAny(t.files(i))) Error(t, "files", i, absl::StrCat("no file matches '", t.files(i), "'"));
    }
    if (t.seq_len() <= 0 || t.seq_len() > (int64_t{1} << 24)) {
      Error(t, "seq_len", -1, absl::StrCat("seq_len must be in [1, 16777216], got ", t.seq_len()));
    }
    const Input::Text::Vocabulary& v = t.vocabulary();
    if (!v.file().empty()) {
      if (v.max_size() != 0 || v.min_count() != 0) {
        Error(v, "file", -1, "a vocabulary 'file' leaves no room for max_size or min_count (they build one)");
      } else if (!FileExists(v.file())) {
        Error(v, "file", -1, absl::StrCat("file '", v.file(), "' does not exist or is not a regular file"));
      }
    } else {
      if (v.max_size() != 0 && v.max_size() < 3) {
        Error(v, "max_size", -1, absl::StrCat("max_size must be >= 3 (<unk>, <eos> and a word) or 0 (no limit), got ",
                                              v.max_size()));
      }
      if (v.max_size() > 2147483647) Error(v, "max_size", -1, absl::StrCat("max_size must fit int32, got ", v.max_size()));
      if (v.min_count() < 1) Error(v, "min_count", -1, absl::StrCat("min_count must be >= 1, got ", v.min_count()));
    }
  }

  // The eval input maps words with the train input's vocabulary, so its
  // vocabulary options and case must be train's.
  void CheckTextPair(const Input& input) {
    if (!input.train().has_text() || !input.has_eval() || !input.eval().has_text()) return;
    const Input::Text& train = input.train().text();
    const Input::Text& eval = input.eval().text();
    if (eval.vocabulary().SerializeAsString() != train.vocabulary().SerializeAsString()) {
      Error(eval, "vocabulary", -1,
            "eval's vocabulary differs from train's: the eval input uses the train input's vocabulary, so give both "
            "the same (or copy train's)");
    }
    if (eval.keep_case() != train.keep_case()) {
      Error(eval, "keep_case", -1, "eval's keep_case differs from train's: its words would miss the train vocabulary");
    }
  }

  void CheckInput() {
    if (!e_.input().has_train()) {
      errors_->Add(loaded_.Where(e_, "input"), "the experiment needs 'input { train { ... } }'");
      return;
    }
    CheckPipeline(e_.input(), "train", e_.input().train());
    if (e_.input().has_eval()) CheckPipeline(e_.input(), "eval", e_.input().eval());
    CheckTextPair(e_.input());
  }

  void LearningRate(const google::protobuf::Message& m, float lr) {
    if (!(lr > 0) || !std::isfinite(lr)) {
      Error(m, "learning_rate", -1, absl::StrCat("learning_rate must be a positive number, got ", lr));
    }
  }

  void UnitInterval(const google::protobuf::Message& m, const char* field, float v) {
    if (!(v >= 0 && v < 1)) Error(m, field, -1, absl::StrCat(field, " must be in [0, 1), got ", v));
  }

  void PositiveFloat(const google::protobuf::Message& m, const char* field, float v, const char* why) {
    if (!(v > 0) || !std::isfinite(v)) Error(m, field, -1, absl::StrCat(field, " must be > 0 (", why, "), got ", v));
  }

  void CheckOptimizer() {
    const Optimizer& o = e_.optimizer();
    switch (o.kind_case()) {
      case Optimizer::kSgd: LearningRate(o.sgd(), o.sgd().learning_rate()); break;
      case Optimizer::kMomentum:
        LearningRate(o.momentum(), o.momentum().learning_rate());
        UnitInterval(o.momentum(), "momentum", o.momentum().momentum());
        break;
      case Optimizer::kAdagrad:
        LearningRate(o.adagrad(), o.adagrad().learning_rate());
        PositiveFloat(o.adagrad(), "initial_accumulator", o.adagrad().initial_accumulator(),
                      "it divides the first update");
        break;
      case Optimizer::kRmsprop:
        LearningRate(o.rmsprop(), o.rmsprop().learning_rate());
        UnitInterval(o.rmsprop(), "decay", o.rmsprop().decay());
        UnitInterval(o.rmsprop(), "momentum", o.rmsprop().momentum());
        PositiveFloat(o.rmsprop(), "epsilon", o.rmsprop().epsilon(), "it keeps updates finite where a gradient is 0");
        break;
      case Optimizer::kAdam:
        LearningRate(o.adam(), o.adam().learning_rate());
        UnitInterval(o.adam(), "beta1", o.adam().beta1());
        UnitInterval(o.adam(), "beta2", o.adam().beta2());
        PositiveFloat(o.adam(), "epsilon", o.adam().epsilon(), "it keeps updates finite where a gradient is 0");
        break;
      case Optimizer::KIND_NOT_SET:
        errors_->Add(loaded_.Where(e_, "optimizer"), "the experiment needs an optimizer (sgd, momentum, adagrad, rmsprop or adam)");
        break;
    }
    if (o.clip_global_norm() < 0 || !std::isfinite(o.clip_global_norm())) {
      Error(o, "clip_global_norm", -1, absl::StrCat("clip_global_norm must be >= 0, got ", o.clip_global_norm()));
    }
    const Schedule& s = o.schedule();
    if (s.has_exponential_decay()) {
      Positive(s.exponential_decay(), "decay_steps", s.exponential_decay().decay_steps(), "decay_steps");
      if (!(s.exponential_decay().decay_rate() > 0)) {
        Error(s.exponential_decay(), "decay_rate", -1, absl::StrCat("decay_rate must be > 0, got ", s.exponential_decay().decay_rate()));
      }
    }
    if (s.has_piecewise()) {
      const auto& pw = s.piecewise();
      if (pw.values_size() != pw.boundaries_size() + 1) {
        Error(pw, "values", -1, absl::StrCat("piecewise needs one more value than boundaries: ", pw.values_size(),
                                             " values, ", pw.boundaries_size(), " boundaries"));
      }
      for (int i = 1; i < pw.boundaries_size(); ++i) {
        if (pw.boundaries(i) <= pw.boundaries(i - 1)) Error(pw, "boundaries", i, "boundaries must increase");
      }
    }
    if (s.has_warmup_cosine()) {
      NonNegative(s.warmup_cosine(), "warmup_steps", s.warmup_cosine().warmup_steps(), "warmup_steps");
      if (s.warmup_cosine().warmup_steps() >= e_.train().steps() && e_.train().steps() > 0) {
        Error(s.warmup_cosine(), "warmup_steps", -1,
              absl::StrCat("warmup_steps (", s.warmup_cosine().warmup_steps(), ") must be below train.steps (",
                           e_.train().steps(), "); for a shorter run also set "
                           "optimizer.schedule.warmup_cosine.warmup_steps, e.g. --set "
                           "optimizer.schedule.warmup_cosine.warmup_steps=",
                           std::max<int64_t>(1, e_.train().steps() / 10)));
      }
    }
  }

  void CheckTrain() {
    const Train& t = e_.train();
    if (t.steps() <= 0) {
      errors_->Add(t.steps() == 0 ? loaded_.Where(e_, "train") : loaded_.Where(t, "steps"),
                   absl::StrCat("train.steps must be > 0, got ", t.steps()));
    }
    NonNegative(t, "eval_every_steps", t.eval_every_steps(), "eval_every_steps");
    NonNegative(t, "log_every_steps", t.log_every_steps(), "log_every_steps");
    if (t.has_best_model()) CheckBestModel(t);
  }

  void CheckBestModel(const Train& t) {
    const BestModel& b = t.best_model();
    if (!e_.input().has_eval()) {
      Error(t, "best_model", -1, "best_model needs evaluations: add an input.eval section");
    }
    const std::vector<std::string> names = EvalValueNames(e_);
    const std::string metric = b.metric().empty() ? "loss" : b.metric();
    if (std::find(names.begin(), names.end(), metric) == names.end()) {
      ErrorAtFieldOrParent(b, "metric", t, "best_model",
                           absl::StrCat("best_model.metric '", metric, "' is not a value this model's evaluation reports (",
                                        absl::StrJoin(names, ", "), ")", DidYouMean(metric, names)));
    }
    if (!(b.min_delta() >= 0) || !std::isfinite(b.min_delta())) {
      Error(b, "min_delta", -1, absl::StrCat("best_model.min_delta must be >= 0, got ", b.min_delta()));
    }
    if (b.patience() < 0) {
      Error(b, "patience", -1, absl::StrCat("best_model.patience must be >= 0 (0: never stop early), got ", b.patience()));
    } else if (b.patience() > 0 && t.eval_every_steps() == 0) {
      Error(b, "patience", -1,
            "best_model.patience counts periodic evaluations: set train.eval_every_steps (0 evaluates only at the end)");
    }
  }

  void CheckCheckpointSummariesMonitoring() {
    NonNegative(e_.checkpoint(), "every_steps", e_.checkpoint().every_steps(), "checkpoint every_steps");
    NonNegative(e_.checkpoint(), "every_seconds", e_.checkpoint().every_seconds(), "checkpoint every_seconds");
    NonNegative(e_.checkpoint(), "keep", e_.checkpoint().keep(), "checkpoint keep");
    if (e_.checkpoint().keep_every_hours() < 0) Error(e_.checkpoint(), "keep_every_hours", -1, "keep_every_hours must be >= 0");
    if (e_.checkpoint().has_warm_start()) {
      const auto& w = e_.checkpoint().warm_start();
      if (w.from().empty()) {
        Error(e_.checkpoint(), "warm_start",
              -1, "warm_start needs 'from': a run directory, a ckpt-<step> directory or a TensorFlow checkpoint prefix");
      } else if (std::FILE* f = std::fopen(w.from().c_str(), "r")) {
        std::fclose(f);
      } else if (std::FILE* index = std::fopen((w.from() + ".index").c_str(), "r")) {
        std::fclose(index);  // a TensorFlow checkpoint prefix
      } else {
        Error(w, "from", -1, "warm_start.from '" + w.from() + "' does not exist (nor '" + w.from() +
                                 ".index', a TensorFlow checkpoint)");
      }
    }
    NonNegative(e_.summaries(), "every_steps", e_.summaries().every_steps(), "summaries every_steps");
    for (int i = 0; i < e_.summaries().histograms_size(); ++i) {
      if (e_.summaries().histograms(i).empty()) Error(e_.summaries(), "histograms", i, "empty histogram pattern");
    }
    CheckSummariesAndMonitoring();
    const int port = e_.monitoring().metrics_port();
    if (port < -1 || port > 65535) {
      Error(e_.monitoring(), "metrics_port", -1, absl::StrCat("metrics_port must be in [-1, 65535], got ", port));
    }
    // A pool of 100,000 threads fails to start (std::system_error): a typo,
    // caught here with the field's location.
    constexpr int kMaxPoolThreads = 1024;
    for (const auto& [field, value] : {std::pair<const char*, int>{"intra_op_threads", e_.devices().intra_op_threads()},
                                       std::pair<const char*, int>{"inter_op_threads", e_.devices().inter_op_threads()}}) {
      if (value < 0 || value > kMaxPoolThreads) {
        Error(e_.devices(), field, -1,
              absl::StrCat(field, " must be in [0, ", kMaxPoolThreads, "] (0 means the default: one per core), got ", value));
      }
    }
    if (e_.devices().cpu_devices() < 0 || e_.devices().cpu_devices() > kMaxLocalCpuDevices) {
      Error(e_.devices(), "cpu_devices", -1,
            absl::StrCat("cpu_devices must be in [0, ", kMaxLocalCpuDevices, "] (0 means 1), got ",
                         e_.devices().cpu_devices()));
    }
    if (!Devices::Placer_IsValid(e_.devices().placer())) {
      Error(e_.devices(), "placer", -1,
            absl::StrCat("placer must be SIMPLE or COST_MODEL, got ", e_.devices().placer()));
    }
    if (!e_.devices().measured_costs().empty() && e_.devices().placer() != Devices::COST_MODEL) {
      Error(e_.devices(), "measured_costs", -1, "measured_costs needs devices { placer: COST_MODEL }");
    }
  }

  // summaries.input_images, monitoring.metrics_address and monitoring.pushgateway_url (issue 7).
  void CheckSummariesAndMonitoring() {
    const Summaries& sum = e_.summaries();
    if (sum.input_images() < 0 || sum.input_images() > 64) {
      Error(sum, "input_images", -1, absl::StrCat("input_images must be in [0, 64], got ", sum.input_images()));
    } else if (sum.input_images() > 0 && std::find(features_.begin(), features_.end(), "image") == features_.end()) {
      Error(sum, "input_images", -1,
            absl::StrCat("input_images needs an input feature named 'image' (features: ", absl::StrJoin(features_, ", "),
                         ")"));
    }
    const Monitoring& m = e_.monitoring();
    if (!m.metrics_address().empty() && !IsIpv4Address(m.metrics_address())) {
      Error(m, "metrics_address", -1,
            absl::StrCat("metrics_address '", m.metrics_address(),
                         "' is not an IPv4 address; use e.g. \"127.0.0.1\" or \"0.0.0.0\""));
    }
    if (!m.pushgateway_url().empty()) {
      std::string why = PushgatewayUrlProblem(m.pushgateway_url());
      if (!why.empty()) {
        Error(m, "pushgateway_url", -1,
              absl::StrCat("pushgateway_url '", m.pushgateway_url(), "' ", why,
                           "; use \"http://HOST:PORT\", e.g. \"http://127.0.0.1:9091\""));
      }
    }
  }

  static bool IsIpv4Address(const std::string& s) {
    std::vector<std::string> parts = absl::StrSplit(s, '.');
    if (parts.size() != 4) return false;
    for (const std::string& p : parts) {
      if (p.empty() || p.size() > 3) return false;
      for (char c : p) {
        if (!absl::ascii_isdigit(c)) return false;
      }
      if (std::stoi(p) > 255) return false;
    }
    return true;
  }

  // "" when `url` is http(s)://host[:port][/]; otherwise what is wrong with it.
  static std::string PushgatewayUrlProblem(std::string url) {
    const size_t scheme = url.find("://");
    if (scheme != std::string::npos) {
      const std::string s = url.substr(0, scheme);
      if (s != "http" && s != "https") return absl::StrCat("has scheme '", s, "' (only http and https)");
      url = url.substr(scheme + 3);
    }
    if (!url.empty() && url.back() == '/') url.pop_back();
    if (url.find('/') != std::string::npos) return "has a path (give only host and port)";
    const size_t colon = url.rfind(':');
    const std::string host = colon == std::string::npos ? url : url.substr(0, colon);
    if (host.empty()) return "has no host";
    if (colon != std::string::npos) {
      const std::string port = url.substr(colon + 1);
      if (port.empty() || port.size() > 5) return "has a bad port";
      for (char c : port) {
        if (!absl::ascii_isdigit(c)) return "has a bad port";
      }
      const int p = std::stoi(port);
      if (p < 1 || p > 65535) return "has a port outside 1-65535";
    }
    return "";
  }

  // The tasks of `job` in the config's cluster {}: -1 when the job is not
  // there, 0 when it lists no tasks.
  int ClusterTasks(const std::string& job) const {
    for (const auto& j : e_.cluster().job()) {
      if (j.name() == job) return j.task_size();
    }
    return -1;
  }

  void CheckCluster() {
    const Cluster& c = e_.cluster();
    const Cluster::Tls& tls = c.tls();
    const int tls_files = !tls.cert_file().empty() + !tls.key_file().empty() + !tls.ca_file().empty();
    if (tls_files != 0 && tls_files != 3) {
      errors_->Add(loaded_.Where(c, "tls"), "cluster.tls needs cert_file, key_file and ca_file together");
    }
    if (c.start_timeout_secs() < 0) Error(c, "start_timeout_secs", -1, "start_timeout_secs must be >= 0");
    if (c.max_recoveries() < 0) Error(c, "max_recoveries", -1, "max_recoveries must be >= 0 (0 means 5)");
    int workers = 0;
    std::set<std::string> jobs;
    for (const auto& job : e_.cluster().job()) {
      if (job.name() != "ps" && job.name() != "worker") {
        Error(job, "name", -1, absl::StrCat("job name '", job.name(), "' must be 'ps' or 'worker'", DidYouMean(job.name(), {"ps", "worker"})));
      }
      if (!jobs.insert(job.name()).second) Error(job, "name", -1, absl::StrCat("job '", job.name(), "' is listed twice"));
      for (int i = 0; i < job.task_size(); ++i) {
        // "" (every task of every job) gives only the job's size: Slurm gives the addresses.
        if (job.task(i).empty()) continue;
        if (absl::Status a = distributed::ValidateTaskAddress(job.task(i)); !a.ok()) {
          Error(job, "task", i, std::string(a.message()));
        }
      }
      if (job.name() == "worker") workers = job.task_size();
    }
    const Replication& r = e_.replication();
    int ps_tasks = 0;
    for (const auto& job : e_.cluster().job()) ps_tasks += job.name() == "ps" ? job.task_size() : 0;
    if ((r.has_sync() || r.has_async()) && e_.cluster().job_size() > 0 && ps_tasks == 0) {
      errors_->Add(loaded_.Where(e_, "replication"), "replication needs a 'ps' job in 'cluster': the variables live there");
    }
    if (r.has_sync()) {
      // (A cluster that comes from TF_CONFIG or Slurm is checked when the task starts.)
      if (workers == 0 && e_.cluster().job_size() > 0) {
        errors_->Add(loaded_.Where(e_, "replication"), "sync replication needs a 'worker' job in 'cluster'");
      }
      if (r.sync().replicas_to_aggregate() < 0) Error(r.sync(), "replicas_to_aggregate", -1, "replicas_to_aggregate must be >= 0");
      if (r.sync().backup_workers() < 0) Error(r.sync(), "backup_workers", -1, "backup_workers must be >= 0");
      if (workers > 0 && r.sync().replicas_to_aggregate() + r.sync().backup_workers() > workers) {
        Error(r.sync(), "replicas_to_aggregate", -1,
              absl::StrCat("replicas_to_aggregate + backup_workers (", r.sync().replicas_to_aggregate() + r.sync().backup_workers(),
                           ") exceeds the ", workers, " workers"));
      }
    }
  }

  const LoadedExperiment& loaded_;
  const Experiment& e_;
  ConfigErrors* errors_;
  std::vector<std::string> features_;
};

}  // namespace

void Validate(const LoadedExperiment& loaded, ConfigErrors* errors) { Validator(loaded, errors).Run(); }

}  // namespace config
}  // namespace sluice
