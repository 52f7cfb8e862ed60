// Partitioned graphs run end to end: a graph is rewritten for its fetches as
// a session would, partitioned over two CPU devices (with Recv scheduling on),
// run with one executor per device sharing one LocalRendezvous, and the
// fetched values must equal, bit for bit, those of the whole graph run on one
// device. Covers data and control edges in both directions, a dead value
// crossing devices, a loop fed from and read by another device, a variable
// staying in its device's container, a round trip that Recv scheduling must
// not turn into a deadlock, and the bfloat16 cast hook.
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "absl/synchronization/notification.h"
#include "engine/framework/device.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/graph/partition.h"
#include "engine/graph/subgraph.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/local_rendezvous.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

class PartitionRunTest : public ::testing::Test {
 protected:
  PartitionRunTest() : pool_(2) {
    devices_.push_back(std::make_unique<Device>(kCpu0, kDeviceCpu, CpuAllocator(), 1));
    devices_.push_back(std::make_unique<Device>(kCpu1, kDeviceCpu, CpuAllocator(), 1));
  }

  // The graph of `def` rewritten to fetch `fetches`; fills fetch_keys_.
  std::unique_ptr<Graph> Rewritten(const GraphDef& def, const std::vector<std::string>& fetches) {
    auto graph = GraphFromGraphDef(def);
    EXPECT_TRUE(graph.ok()) << graph.status();
    if (!graph.ok()) return nullptr;
    RewriteOptions rewrite;
    rewrite.device_name = kCpu0;
    RewriteResult result;
    absl::Status s = RewriteGraphForExecution(rewrite, {}, fetches, targets_, graph->get(), &result);
    EXPECT_TRUE(s.ok()) << s;
    fetch_keys_ = result.fetch_keys;
    return std::move(graph).value();
  }

  // Runs the graphs (one per device; nullptr for none) as one step and
  // returns the fetched values.
  std::vector<Tensor> Step(std::vector<std::unique_ptr<Graph>> graphs) {
    std::vector<std::unique_ptr<Executor>> executors;
    for (size_t d = 0; d < graphs.size(); ++d) {
      if (graphs[d] == nullptr) continue;
      ExecutorParams params;
      params.device = devices_[d].get();
      params.runner = [this](std::function<void()> fn) { pool_.Schedule(std::move(fn)); };
      auto executor = NewLocalExecutor(params, std::move(graphs[d]));
      EXPECT_TRUE(executor.ok()) << executor.status();
      if (!executor.ok()) return {};
      executors.push_back(std::move(executor).value());
    }
    LocalRendezvous rendezvous;
    std::vector<absl::Notification> done(executors.size());
    std::vector<absl::Status> status(executors.size());
    for (size_t i = 0; i < executors.size(); ++i) {
      Executor::Args args;
      args.rendezvous = &rendezvous;
      executors[i]->RunAsync(args, [&, i](const absl::Status& s) {
        status[i] = s;
        done[i].Notify();
      });
    }
    bool hung = false;
    for (size_t i = 0; i < executors.size(); ++i) {
      if (!done[i].WaitForNotificationWithTimeout(absl::Seconds(30))) {
        hung = true;
        rendezvous.StartAbort(absl::DeadlineExceededError("the step hung"));
        done[i].WaitForNotification();
      }
    }
    EXPECT_FALSE(hung) << "the partitions deadlocked";
    for (const absl::Status& s : status) EXPECT_TRUE(s.ok()) << s;
    std::vector<Tensor> out;
    for (const std::string& key : fetch_keys_) {
      Tensor t;
      bool is_dead = true;
      absl::Status s = rendezvous.Recv(key, &t, &is_dead, absl::ZeroDuration());
      EXPECT_TRUE(s.ok()) << key << ": " << s;
      EXPECT_FALSE(is_dead) << key;
      out.push_back(t);
    }
    return out;
  }

  std::vector<Tensor> RunWhole(const GraphDef& def, const std::vector<std::string>& fetches) {
    std::vector<std::unique_ptr<Graph>> graphs;
    graphs.push_back(Rewritten(def, fetches));
    return Step(std::move(graphs));
  }

  // Nodes named in `on_cpu1` go to CPU:1, the rest to CPU:0; each fetch's
  // _Send goes with the node it reads.
  std::vector<Tensor> RunSplit(const GraphDef& def, const std::vector<std::string>& fetches,
                               const std::set<std::string>& on_cpu1, PartitionOptions options = PartitionOptions()) {
    std::unique_ptr<Graph> graph = Rewritten(def, fetches);
    if (graph == nullptr) return {};
    options.device_names = {kCpu0, kCpu1};
    options.incarnations = {7, 9};
    options.node_device.assign(graph->num_node_ids(), -1);
    for (Node* n : graph->nodes()) options.node_device[n->id()] = on_cpu1.count(n->name()) ? 1 : 0;
    for (Node* n : graph->nodes()) {
      if (n->type_string() == "_Send") options.node_device[n->id()] = options.node_device[n->input_edge(0)->src->id()];
    }
    std::vector<std::unique_ptr<Graph>> parts;
    absl::Status s = Partition(options, *graph, &parts, &stats_);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return {};
    return Step(std::move(parts));
  }

  static void ExpectSameBits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].dtype(), b[i].dtype()) << i;
      ASSERT_EQ(a[i].shape(), b[i].shape()) << i;
      EXPECT_EQ(std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].TotalBytes()), 0) << "fetch " << i;
    }
  }

  Eigen::ThreadPool pool_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<std::string> targets_;  // run as well as the fetches
  std::vector<std::string> fetch_keys_;
  PartitionStats stats_;
};

TEST_F(PartitionRunTest, DataAndControlEdgesBothWaysGiveTheSameValues) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::FromVector<float>({1.5f, -2, 3.25f}));
  std::string y = b.Binary("Mul", "y", x, x, DT_FLOAT);       // CPU:1
  std::string z = b.Binary("Add", "z", y, x, DT_FLOAT);       // CPU:0
  std::string w = b.Binary("Sub", "w", z, y, DT_FLOAT);       // CPU:1
  std::string v = b.Identity("v", w, DT_FLOAT, {x, y});      // CPU:0, control from both
  std::string u = b.Binary("Mul", "u", v, y, DT_FLOAT);       // CPU:1
  const std::vector<std::string> fetches = {z, w, v, u};
  std::vector<Tensor> whole = RunWhole(b.graph(), fetches);
  std::vector<Tensor> split = RunSplit(b.graph(), fetches, {"y", "w", "u"});
  ExpectSameBits(whole, split);
  EXPECT_GT(stats_.send_recv_pairs, 0);
  EXPECT_EQ(stats_.control_send_recv_pairs, 1);  // ^y into v
}

TEST_F(PartitionRunTest, ADeadValueCrossesAsDead) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::FromVector<float>({4, 5}));
  std::string pred = b.Const("pred", Tensor::Scalar<bool>(false));
  std::string sw = b.Switch("sw", x, pred, DT_FLOAT);                // CPU:0
  std::string taken = b.Binary("Add", "taken", sw + ":0", x, DT_FLOAT);  // CPU:1
  std::string untaken = b.Binary("Mul", "untaken", sw + ":1", x, DT_FLOAT);  // CPU:1, dead
  b.NoOp("after_untaken", {untaken});                                // CPU:0: dead control crossing back
  std::string merged = b.Merge("merged", {untaken, taken}, DT_FLOAT);  // CPU:0
  targets_ = {"after_untaken"};
  std::vector<Tensor> whole = RunWhole(b.graph(), {merged});
  std::vector<Tensor> split = RunSplit(b.graph(), {merged}, {"taken", "untaken"});
  ExpectSameBits(whole, split);
  ASSERT_EQ(split.size(), 1u);
  EXPECT_EQ(split[0].data<float>()[1], 10.0f);
}

TEST_F(PartitionRunTest, ALoopOnOneDeviceFedAndReadFromTheOther) {
  GraphDefBuilder b;
  std::string limit = b.Const("limit", Tensor::Scalar<int32_t>(7));  // CPU:0
  std::string zero = b.Const("zero", Tensor::Scalar<int32_t>(0));
  std::string one = b.Const("one", Tensor::Scalar<int32_t>(1));
  std::string limit_e = b.Enter("limit_e", limit, DT_INT32, "loop", true);
  std::string one_e = b.Enter("one_e", one, DT_INT32, "loop", true);
  std::string i_e = b.Enter("i_e", zero, DT_INT32, "loop");
  std::string i_m = b.Merge("i_m", {i_e, "i_next"}, DT_INT32);
  std::string cond = b.LoopCond("cond", b.Binary("Less", "less", i_m, limit_e, DT_INT32));
  std::string sw = b.Switch("sw", i_m, cond, DT_INT32);
  std::string exit = b.Exit("exit", sw + ":0", DT_INT32);
  std::string body = b.Identity("body", sw + ":1", DT_INT32);
  b.NextIteration("i_next", b.Binary("Add", "add", body, one_e, DT_INT32), DT_INT32);
  std::string result = b.Binary("Mul", "result", exit, limit, DT_INT32);  // CPU:0
  std::set<std::string> on_cpu1;
  for (const NodeDef& n : b.graph().node()) {
    if (n.name() != "limit" && n.name() != "result") on_cpu1.insert(n.name());
  }
  std::vector<Tensor> whole = RunWhole(b.graph(), {result});
  std::vector<Tensor> split = RunSplit(b.graph(), {result}, on_cpu1);
  ExpectSameBits(whole, split);
  ASSERT_EQ(split.size(), 1u);
  EXPECT_EQ(split[0].scalar<int32_t>(), 49);
}

TEST_F(PartitionRunTest, AVariableLivesInItsDevicesContainer) {
  GraphDefBuilder b;
  std::string v = b.Variable("v", DT_FLOAT, TensorShape({2}), "partition_run_test");  // CPU:1
  std::string init = b.Const("init", Tensor::FromVector<float>({3, 4}));             // CPU:0
  std::string assign = b.Assign("assign", v, init, DT_FLOAT);                        // CPU:1
  // The read sits with the variable: a Send of `v` itself would read it as
  // soon as v runs, whatever the consumer's control inputs say.
  std::string read = b.Identity("read", v, DT_FLOAT, {assign});                      // CPU:1
  std::string twice = b.Binary("Add", "twice", read, read, DT_FLOAT);                // CPU:0
  std::vector<Tensor> split = RunSplit(b.graph(), {twice}, {"v", "assign", "read"});
  ASSERT_EQ(split.size(), 1u);
  EXPECT_EQ(split[0].data<float>()[0], 6.0f);
  EXPECT_EQ(split[0].data<float>()[1], 8.0f);
  EXPECT_EQ(stats_.send_recv_pairs, 2);  // init to CPU:1, read to CPU:0
}

// x (CPU:0) is received on CPU:1 by y, which goes back to CPU:0 as z and
// returns to CPU:1 to start a long chain: gating x's Recv on that chain would
// deadlock.
TEST_F(PartitionRunTest, RecvSchedulingNeverDeadlocksARoundTrip) {
  GraphDefBuilder b;
  std::set<std::string> on_cpu1;
  std::string x = b.Const("x", Tensor::FromVector<float>({1, 2}));
  std::string c = b.Const("c0", Tensor::FromVector<float>({0.5f, 0.25f}));
  on_cpu1.insert(c);
  for (int i = 1; i <= 9; ++i) on_cpu1.insert(c = b.Binary("Add", "c" + std::to_string(i), c, c, DT_FLOAT));
  on_cpu1.insert(b.Binary("Add", "y", c, x, DT_FLOAT));
  b.Binary("Mul", "z", "y", x, DT_FLOAT);
  std::string w = b.Identity("w0", "z", DT_FLOAT);
  on_cpu1.insert(w);
  for (int i = 1; i <= 20; ++i) on_cpu1.insert(w = b.Binary("Add", "w" + std::to_string(i), w, c, DT_FLOAT));
  std::vector<Tensor> whole = RunWhole(b.graph(), {w});
  std::vector<Tensor> split = RunSplit(b.graph(), {w}, on_cpu1);
  ExpectSameBits(whole, split);
  EXPECT_GT(stats_.recvs_scheduled, 0);
}

TEST_F(PartitionRunTest, CastHookKeepsValuesExactInBfloat16) {
  GraphDefBuilder b;
  // Exactly representable in bfloat16 (8 significant bits).
  std::string x = b.Const("x", Tensor::FromVector<float>({1, -2.5f, 0.375f, 96}));
  std::string y = b.Binary("Mul", "y", x, x, DT_FLOAT);  // CPU:1
  PartitionOptions options;
  options.should_cast = [](const Edge*) { return true; };
  std::vector<Tensor> whole = RunWhole(b.graph(), {y});
  std::vector<Tensor> split = RunSplit(b.graph(), {y}, {"y"}, options);
  ExpectSameBits(whole, split);
}

TEST_F(PartitionRunTest, CastHookTruncatesOtherValuesToTheirUpper16Bits) {
  GraphDefBuilder b;
  // 1/3 rounds up in bfloat16 (0x3EAB) but truncates to 0x3EAA; -1000.1 too.
  const std::vector<float> values = {1.0f / 3, -1000.1f, 2.0f};
  std::string x = b.Const("x", Tensor::FromVector<float>(values));
  std::string y = b.Identity("y", x, DT_FLOAT);  // CPU:1
  PartitionOptions options;
  options.should_cast = [](const Edge*) { return true; };
  std::vector<Tensor> split = RunSplit(b.graph(), {y}, {"y"}, options);
  ASSERT_EQ(split.size(), 1u);
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t in_bits, out_bits;
    const float got = split[0].data<float>()[i];
    std::memcpy(&in_bits, &values[i], 4);
    std::memcpy(&out_bits, &got, 4);
    EXPECT_EQ(out_bits, in_bits & 0xffff0000u) << values[i] << " came back as " << got;
  }
  EXPECT_NE(split[0].data<float>()[0], 1.0f / 3) << "the value went through bfloat16";
}

TEST_F(PartitionRunTest, CastHookKeepsANaNWhosePayloadIsInTheLowBitsANaN) {
  GraphDefBuilder b;
  const uint32_t nan_bits = 0x7f800001u;  // cutting its low bits alone would give infinity
  float nan;
  std::memcpy(&nan, &nan_bits, 4);
  std::string x = b.Const("x", Tensor::FromVector<float>({nan, 1.0f}));
  std::string y = b.Identity("y", x, DT_FLOAT);  // CPU:1
  PartitionOptions options;
  options.should_cast = [](const Edge*) { return true; };
  std::vector<Tensor> split = RunSplit(b.graph(), {y}, {"y"}, options);
  ASSERT_EQ(split.size(), 1u);
  EXPECT_TRUE(std::isnan(split[0].data<float>()[0])) << split[0].data<float>()[0];
  EXPECT_EQ(split[0].data<float>()[1], 1.0f);
}

}  // namespace
}  // namespace sluice
