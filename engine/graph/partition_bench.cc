// Partition of a 100,000-node graph: 100 chains of 1,000 layers, each node an
// Add of its chain predecessor and a random node of the previous layer,
// placed round-robin by layer on 2 or 4 devices, so every data edge crosses
// devices (about 100,000 Send/Recv pairs, 300,000 nodes in the partitions);
// for comparison, "blocked" places contiguous blocks of layers instead (a few
// hundred pairs), which times copying the nodes. Arguments: devices, whether
// Recvs are scheduled ALAP, blocked. The graph is built once and the
// partitions freed outside the timing.
//   bazel run -c opt //engine/graph:partition_bench
#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "engine/graph/graph.h"
#include "engine/graph/partition.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace {

constexpr int kWidth = 100;
constexpr int kLayers = 1000;

struct Layered {
  std::unique_ptr<Graph> graph;
  std::vector<int> layer;  // by node id
};

const Layered& LayeredGraph() {
  static const Layered* layered = [] {
    auto* l = new Layered;
    l->graph = std::make_unique<Graph>();
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> pick(0, kWidth - 1);
    std::vector<Node*> prev, cur;
    for (int layer = 0; layer < kLayers; ++layer) {
      cur.clear();
      for (int i = 0; i < kWidth; ++i) {
        NodeDef def;
        def.set_name(absl::StrCat("l", layer, "/n", i));
        if (layer == 0) {
          def.set_op("Const");
          (*def.mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
          (*def.mutable_attr())["value"] = MakeAttr(Tensor::Scalar<float>(1));
        } else {
          def.set_op("Add");
          (*def.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
        }
        auto node = l->graph->AddNode(std::move(def));
        CHECK(node.ok()) << node.status();
        if (layer > 0) {
          l->graph->AddEdge(prev[i], 0, *node, 0);
          l->graph->AddEdge(prev[pick(rng)], 0, *node, 1);
        }
        cur.push_back(*node);
        l->layer.push_back(layer);
      }
      prev.swap(cur);
    }
    return l;
  }();
  return *layered;
}

void BM_Partition(benchmark::State& state) {
  const Layered& layered = LayeredGraph();
  const int devices = static_cast<int>(state.range(0));
  PartitionOptions options;
  for (int d = 0; d < devices; ++d) {
    options.device_names.push_back(absl::StrCat("/job:localhost/replica:0/task:0/device:CPU:", d));
    options.incarnations.push_back(1);
  }
  options.node_device.resize(layered.graph->num_node_ids());
  const bool blocked = state.range(2) != 0;
  for (int id = 0; id < layered.graph->num_node_ids(); ++id) {
    const int layer = layered.layer[id];
    options.node_device[id] = blocked ? layer * devices / kLayers : layer % devices;
  }
  options.schedule_recvs_alap = state.range(1) != 0;
  PartitionStats stats;
  for (auto _ : state) {
    std::vector<std::unique_ptr<Graph>> partitions;
    absl::Status s = Partition(options, *layered.graph, &partitions, &stats);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(partitions.data());
    state.PauseTiming();
    partitions.clear();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * layered.graph->num_nodes());
  state.counters["pairs"] = stats.send_recv_pairs;
  state.counters["scheduled"] = stats.recvs_scheduled;
}

BENCHMARK(BM_Partition)
    ->ArgNames({"devices", "alap", "blocked"})
    ->Args({2, 0, 0})
    ->Args({2, 1, 0})
    ->Args({4, 0, 0})
    ->Args({4, 1, 0})
    ->Args({2, 1, 1})
    ->Args({4, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
