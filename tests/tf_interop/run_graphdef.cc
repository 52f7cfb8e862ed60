// run_graphdef: runs a binary GraphDef (e.g. one serialized by TensorFlow) in
// a Sluice Session and writes the fetched tensors, so tests and benchmarks can
// compare Sluice with TensorFlow on the very same graph.
//
//   run_graphdef --graph=G.pb [--feed=NAME=FILE]... [--fetch=NAME=FILE]...
//                [--grad_y=NAME --grad_x=NAME... [--grad_dy=NAME]]
//                [--iters=N] [--warmup=W] [--max_seconds=S]
//                [--init=NODE] [--train=NODE --steps=N [--op_counts=FILE]
//                [--op_times=FILE]] [--as_train]
//
// Files are serialized TensorProtos (TensorFlow's field numbers, so
// tf.make_tensor_proto(...).SerializeToString() writes a feed and
// tf.make_ndarray reads a fetch). NAME is a tensor name ("node" or "node:1").
// --grad_y/--grad_x/--grad_dy add Sluice's own symbolic gradients
// (AddSymbolicGradients) of <dy, y> with respect to each x before the graph
// is handed to the session; fetch them as "@grad:0", "@grad:1", ... in the
// order of --grad_x. With --iters=N the fetches are run W times untimed, then
// N times timed (or fewer, at least 3, once the timed runs took --max_seconds),
// and one line is printed on stdout:
//   timing: iters=N mean_us=... min_us=... median_us=...
// --init runs NODE once as a target before anything else (no feeds: an
// initializer); --train runs NODE as a target N times with the feeds before
// the fetches are run, so a training graph's variables can be fetched after
// N steps; --op_counts writes how many nodes of each op type the last of them
// ran ("Conv2D 3" per line, sorted), which shows what the step's graph
// passes left (the data format pass's Transposes, say); --op_times writes,
// per op type of that step, its nodes and their summed time ("MatMul 90
// 412.5": microseconds from each node's start to its end, sorted by time).
// With --train, --iters times training steps (NODE as a target with the
// feeds) instead of the fetches. --as_train runs the session as `train`
// does in a single process:
// nodes on the intra-op pool, oneDNN and Winograd convolutions (a plain
// SessionOptions has neither).
// Every failure (unreadable file, malformed proto, graph rejected, kernel
// error) prints the status on stderr and exits 1; nothing crashes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/graph.pb.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/tensor.h"
#include "engine/framework/tensor.pb.h"
#include "engine/graph/gradients.h"
#include "engine/graph/graph.h"
#include "engine/graph/graph_builder.h"
#include "engine/graph/graph_constructor.h"
#include "engine/runtime/session.h"

namespace sluice {
namespace {

struct Args {
  std::string graph;
  std::vector<std::pair<std::string, std::string>> feeds;    // tensor name, file
  std::vector<std::pair<std::string, std::string>> fetches;  // tensor name, file ("" = none)
  std::string grad_y;
  std::vector<std::string> grad_xs;
  std::string grad_dy;
  int iters = 0;
  int warmup = 2;
  double max_seconds = 0;  // 0: no limit
  std::string init;        // run once first, as a target
  std::string train;       // run `steps` times, as a target, before the fetches
  int steps = 0;
  std::string op_counts;   // the last training step's op types and node counts
  std::string op_times;    // the same with each type's summed node time
  bool as_train = false;   // SessionOptions as `train` sets them
};

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::ostringstream data;
  data << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading '", path, "'"));
  return data.str();
}

absl::Status WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot create '", path, "'"));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat("error writing '", path, "'"));
  return absl::OkStatus();
}

// "NAME=FILE" (the file may be absent for fetches: "NAME").
std::pair<std::string, std::string> SplitAssignment(const std::string& value) {
  size_t eq = value.rfind('=');
  if (eq == std::string::npos) return {value, ""};
  return {value.substr(0, eq), value.substr(eq + 1)};
}

absl::StatusOr<Args> ParseArgs(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--as_train") {
      args.as_train = true;
      continue;
    }
    size_t eq = a.find('=');
    if (!absl::StartsWith(a, "--") || eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("expected --flag=value, got '", a, "'"));
    }
    std::string flag = a.substr(2, eq - 2);
    std::string value = a.substr(eq + 1);
    if (flag == "graph") {
      args.graph = value;
    } else if (flag == "feed") {
      auto kv = SplitAssignment(value);
      if (kv.second.empty()) return absl::InvalidArgumentError(absl::StrCat("--feed needs NAME=FILE, got '", value, "'"));
      args.feeds.push_back(kv);
    } else if (flag == "fetch") {
      args.fetches.push_back(SplitAssignment(value));
    } else if (flag == "grad_y") {
      args.grad_y = value;
    } else if (flag == "grad_x") {
      args.grad_xs.push_back(value);
    } else if (flag == "grad_dy") {
      args.grad_dy = value;
    } else if (flag == "iters" || flag == "warmup" || flag == "steps") {
      int n = 0;
      if (!absl::SimpleAtoi(value, &n) || n < 0) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag, " needs a count >= 0, got '", value, "'"));
      }
      (flag == "iters" ? args.iters : flag == "warmup" ? args.warmup : args.steps) = n;
    } else if (flag == "init") {
      args.init = value;
    } else if (flag == "op_counts") {
      args.op_counts = value;
    } else if (flag == "op_times") {
      args.op_times = value;
    } else if (flag == "train") {
      args.train = value;
    } else if (flag == "max_seconds") {
      if (!absl::SimpleAtod(value, &args.max_seconds) || !(args.max_seconds >= 0)) {
        return absl::InvalidArgumentError(absl::StrCat("--max_seconds needs seconds >= 0, got '", value, "'"));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", flag));
    }
  }
  if (args.graph.empty()) return absl::InvalidArgumentError("--graph is required");
  if (args.fetches.empty()) return absl::InvalidArgumentError("at least one --fetch is required");
  if (args.train.empty() != (args.steps == 0)) {
    return absl::InvalidArgumentError("--train and --steps (> 0) go together");
  }
  if ((!args.op_counts.empty() || !args.op_times.empty()) && args.train.empty()) {
    return absl::InvalidArgumentError("--op_counts and --op_times count the last --train step: give --train and --steps");
  }
  if (args.grad_y.empty() != args.grad_xs.empty()) {
    return absl::InvalidArgumentError("--grad_y and --grad_x go together");
  }
  return args;
}

absl::StatusOr<Output> FindOutput(const Graph& graph, const std::string& name) {
  auto id = ParseTensorName(name);
  if (!id.ok()) return id.status();
  Node* n = graph.FindNode(id->node);
  if (n == nullptr) return absl::InvalidArgumentError(absl::StrCat("no node '", id->node, "' in the graph"));
  if (id->index < 0 || id->index >= n->num_outputs()) {
    return absl::InvalidArgumentError(absl::StrCat("node '", id->node, "' has no output ", id->index));
  }
  return Output{n, id->index};
}

// Adds symbolic gradients to `graph_def`; `grad_names` receives the tensor
// name of each gradient (parallel to args.grad_xs).
absl::Status AddGradients(const Args& args, GraphDef* graph_def, std::vector<std::string>* grad_names) {
  auto graph_or = GraphFromGraphDef(*graph_def);
  if (!graph_or.ok()) return graph_or.status();
  Graph* graph = graph_or->get();
  auto y = FindOutput(*graph, args.grad_y);
  if (!y.ok()) return y.status();
  std::vector<Output> xs;
  for (const std::string& x : args.grad_xs) {
    auto out = FindOutput(*graph, x);
    if (!out.ok()) return out.status();
    xs.push_back(*out);
  }
  std::vector<Output> dys;
  if (!args.grad_dy.empty()) {
    auto dy = FindOutput(*graph, args.grad_dy);
    if (!dy.ok()) return dy.status();
    dys.push_back(*dy);
  }
  std::vector<Gradient> grads;
  absl::Status s = AddSymbolicGradients(graph, {*y}, xs, dys, &grads, "sluice_gradients");
  if (!s.ok()) return s;
  GraphBuilder b(graph, "sluice_gradients");
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].present()) {
      return absl::InvalidArgumentError(absl::StrCat("'", args.grad_y, "' does not depend on '", args.grad_xs[i], "'"));
    }
    grad_names->push_back(DenseGradient(&b, grads[i]).name());
  }
  if (!b.ok()) return b.status();
  graph_def->Clear();
  graph->ToGraphDef(graph_def);
  return absl::OkStatus();
}

absl::Status Main(int argc, char** argv) {
  auto args_or = ParseArgs(argc, argv);
  if (!args_or.ok()) return args_or.status();
  const Args& args = *args_or;

  auto bytes = ReadFile(args.graph);
  if (!bytes.ok()) return bytes.status();
  GraphDef graph_def;
  if (!graph_def.ParseFromString(*bytes)) {
    return absl::InvalidArgumentError(absl::StrCat("'", args.graph, "' is not a binary GraphDef"));
  }
  std::vector<std::string> grad_names;
  if (!args.grad_y.empty()) {
    absl::Status s = AddGradients(args, &graph_def, &grad_names);
    if (!s.ok()) return s;
  }

  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [name, path] : args.feeds) {
    auto data = ReadFile(path);
    if (!data.ok()) return data.status();
    TensorProto proto;
    if (!proto.ParseFromString(*data)) {
      return absl::InvalidArgumentError(absl::StrCat("feed file '", path, "' is not a TensorProto"));
    }
    auto t = Tensor::FromProto(proto);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("feed '", name, "': ", t.status().message()));
    feeds.emplace_back(name, *std::move(t));
  }
  std::vector<std::string> fetches;
  for (const auto& fetch : args.fetches) {
    std::string name = fetch.first;
    if (absl::StartsWith(name, "@grad:")) {
      int i = -1;
      if (!absl::SimpleAtoi(name.substr(6), &i) || i < 0 || i >= static_cast<int>(grad_names.size())) {
        return absl::InvalidArgumentError(absl::StrCat("fetch '", name, "' names no requested gradient"));
      }
      name = grad_names[i];
    }
    fetches.push_back(name);
  }

  SessionOptions options;
  if (args.as_train) {
    options.ops_on_intra_op_pool = true;
    options.onednn_kernels = true;
    options.winograd_kernels = true;
  }
  auto session_or = NewSession(options);
  if (!session_or.ok()) return session_or.status();
  std::unique_ptr<Session> session = *std::move(session_or);
  absl::Status s = session->Create(graph_def);
  if (!s.ok()) return s;

  std::vector<Tensor> outputs;
  if (!args.init.empty()) {
    s = session->Run({}, {}, {args.init}, &outputs);
    if (!s.ok()) return s;
  }
  for (int i = 0; i < args.steps; ++i) {
    RunOptions run;
    RunMetadata metadata;
    run.collect_step_stats = i + 1 == args.steps && (!args.op_counts.empty() || !args.op_times.empty());
    s = session->Run(run, feeds, {}, {args.train}, &outputs, &metadata);
    if (!s.ok()) return s;
    if (!run.collect_step_stats) continue;
    std::map<std::string, std::pair<int, double>> per_op;  // nodes, microseconds
    for (const NodeExecStats& n : metadata.step_stats) {
      ++per_op[n.op].first;
      per_op[n.op].second += (n.end_ns - n.start_ns) / 1e3;
    }
    if (!args.op_counts.empty()) {
      std::ofstream out(args.op_counts);
      for (const auto& [op, stats] : per_op) out << op << " " << stats.first << "\n";
      if (!out.flush()) return absl::UnavailableError(absl::StrCat("cannot write --op_counts file ", args.op_counts));
    }
    if (!args.op_times.empty()) {
      std::vector<std::pair<std::string, std::pair<int, double>>> by_time(per_op.begin(), per_op.end());
      std::sort(by_time.begin(), by_time.end(),
                [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
      std::ofstream out(args.op_times);
      for (const auto& [op, stats] : by_time) out << op << " " << stats.first << " " << stats.second << "\n";
      if (!out.flush()) return absl::UnavailableError(absl::StrCat("cannot write --op_times file ", args.op_times));
    }
  }
  s = session->Run(feeds, fetches, {}, &outputs);
  if (!s.ok()) return s;
  for (size_t i = 0; i < fetches.size(); ++i) {
    const std::string& path = args.fetches[i].second;
    if (path.empty()) continue;
    TensorProto proto;
    outputs[i].AsProtoTensorContent(&proto);
    s = WriteFile(path, proto.SerializeAsString());
    if (!s.ok()) return s;
  }

  if (args.iters > 0) {
    // One timed unit: a training step when --train is given, else the fetches.
    auto run_once = [&]() {
      return args.train.empty() ? session->Run(feeds, fetches, {}, &outputs)
                                : session->Run(feeds, {}, {args.train}, &outputs);
    };
    for (int i = 0; i < args.warmup; ++i) {
      s = run_once();
      if (!s.ok()) return s;
    }
    std::vector<double> us;
    us.reserve(args.iters);
    double total_us = 0;
    for (int i = 0; i < args.iters; ++i) {
      if (args.max_seconds > 0 && i >= 3 && total_us > args.max_seconds * 1e6) break;
      auto start = std::chrono::steady_clock::now();
      s = run_once();
      auto end = std::chrono::steady_clock::now();
      if (!s.ok()) return s;
      us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
      total_us += us.back();
    }
    double sum = 0;
    for (double u : us) sum += u;
    std::vector<double> sorted = us;
    std::sort(sorted.begin(), sorted.end());
    std::printf("timing: iters=%d mean_us=%.1f min_us=%.1f median_us=%.1f\n", static_cast<int>(us.size()),
                sum / us.size(), sorted[0],
                sorted[sorted.size() / 2]);
  }
  return session->Close();
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  absl::Status s = sluice::Main(argc, argv);
  if (!s.ok()) {
    std::fprintf(stderr, "run_graphdef: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
