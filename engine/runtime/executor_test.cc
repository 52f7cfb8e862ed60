// Executor behaviour below the session: the first error aborts the step and
// cancels pending async kernels, async kernels hold no thread while waiting,
// ready nodes run in construction order, step stats, and errors name nodes.
#include <atomic>
#include <set>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "engine/framework/device.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/local_rendezvous.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {

// A kernel that breaks its op's contract on purpose: `set` = "none" leaves its
// output unset, "int32" sets an int32 where the op declares float.
REGISTER_OP("ExecutorTestBadOutput").Input("x: float").Output("y: float").Attr("set: string").SetShapeFn(
    shape_fns::Unchanged);

namespace {

class BadOutputOp : public OpKernel {
 public:
  explicit BadOutputOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, ctx->GetAttr("set", &set_)); }
  void Compute(OpKernelContext* ctx) override {
    if (set_ == "int32") ctx->set_output(0, Tensor::Scalar<int32_t>(7));
  }

 private:
  std::string set_;
};
REGISTER_KERNEL_BUILDER(Name("ExecutorTestBadOutput").Device(kDeviceCpu), BadOutputOp);

constexpr char kCpu[] = "/job:localhost/replica:0/task:0/device:CPU:0";

std::string RecvNode(GraphDefBuilder* b, const std::string& name, const std::string& tensor_name) {
  return b->Node(name, "_Recv", {},
                 {{"tensor_type", MakeAttr(DT_FLOAT)},
                  {"tensor_name", MakeAttr(tensor_name)},
                  {"send_device", MakeAttr(kCpu)},
                  {"send_device_incarnation", MakeAttr(1)},
                  {"recv_device", MakeAttr(kCpu)}});
}

std::string SendNode(GraphDefBuilder* b, const std::string& name, const std::string& input,
                     const std::string& tensor_name) {
  return b->Node(name, "_Send", {input},
                 {{"T", MakeAttr(DT_FLOAT)},
                  {"tensor_name", MakeAttr(tensor_name)},
                  {"send_device", MakeAttr(kCpu)},
                  {"send_device_incarnation", MakeAttr(1)},
                  {"recv_device", MakeAttr(kCpu)}});
}

std::string Key(const std::string& tensor_name) { return Rendezvous::CreateKey(kCpu, 1, kCpu, tensor_name); }

class ExecutorTest : public ::testing::Test {
 protected:
  // `runner_calls`, when set, counts the closures handed to the inter-op pool.
  std::unique_ptr<Executor> Build(const GraphDef& def, int threads, std::atomic<int>* runner_calls = nullptr,
                                  Device* device = nullptr) {
    pool_ = std::make_unique<Eigen::ThreadPool>(threads);
    auto graph = GraphFromGraphDef(def);
    EXPECT_TRUE(graph.ok()) << graph.status();
    ExecutorParams params;
    params.device = device != nullptr ? device : DeviceMgr::Local()->HostCpu();
    Eigen::ThreadPool* pool = pool_.get();
    params.runner = [pool, runner_calls](std::function<void()> fn) {
      if (runner_calls != nullptr) runner_calls->fetch_add(1);
      pool->Schedule(std::move(fn));
    };
    auto executor = NewLocalExecutor(params, std::move(graph).value());
    EXPECT_TRUE(executor.ok()) << executor.status();
    return std::move(executor).value();
  }
  std::unique_ptr<Eigen::ThreadPool> pool_;
};

TEST_F(ExecutorTest, FirstErrorAbortsStepAndCancelsPendingRecv) {
  GraphDefBuilder b;
  // Never sent: without cancellation this step would wait forever.
  std::string waiting = RecvNode(&b, "waiting", "never_sent");
  b.Identity("after_wait", waiting, DT_FLOAT);
  // x's shape is unknown until run time, so the graph validates.
  std::string x = RecvNode(&b, "x", "x_value");
  std::string y = b.Const("y", Tensor::FromVector<float>({1, 2, 3}));
  b.Binary("Add", "bad_add", x, y, DT_FLOAT);
  auto executor = Build(b.graph(), 2);
  LocalRendezvous rendezvous;
  ASSERT_TRUE(rendezvous.Send(Key("x_value"), Tensor::FromVector<float>({1, 2}), false).ok());
  Executor::Args args;
  args.rendezvous = &rendezvous;
  absl::Status s = executor->Run(args);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("node 'bad_add' (op Add)"), std::string::npos) << s;
  EXPECT_NE(s.message().find("[2]"), std::string::npos) << s;
  EXPECT_NE(s.message().find("[3]"), std::string::npos) << s;
}

TEST_F(ExecutorTest, ExternalCancellationEndsAWaitingStep) {
  GraphDefBuilder b;
  RecvNode(&b, "waiting", "never_sent");
  auto executor = Build(b.graph(), 1);
  LocalRendezvous rendezvous;
  CancellationManager cm;
  Executor::Args args;
  args.rendezvous = &rendezvous;
  args.cancellation_manager = &cm;
  absl::Notification done;
  absl::Status result;
  executor->RunAsync(args, [&](const absl::Status& s) {
    result = s;
    done.Notify();
  });
  EXPECT_FALSE(done.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  cm.StartCancel();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(result.code(), absl::StatusCode::kCancelled) << result;
  EXPECT_NE(result.message().find("waiting"), std::string::npos) << result;
}

// With a single inter-op thread, a Recv waiting for its value must not hold
// that thread: the graph's other branch has to run and send "ping" before the
// test sends "pong" that the Recv waits for.
TEST_F(ExecutorTest, AsyncKernelHoldsNoThreadWhileWaiting) {
  GraphDefBuilder b;
  std::string pong = RecvNode(&b, "recv_pong", "pong");
  b.Identity("use_pong", pong, DT_FLOAT);
  std::string c = b.Const("c", Tensor::Scalar<float>(5));
  std::string m = b.Binary("Mul", "m", c, c, DT_FLOAT);
  SendNode(&b, "send_ping", m, "ping");
  auto executor = Build(b.graph(), 1);
  LocalRendezvous rendezvous;
  Executor::Args args;
  args.rendezvous = &rendezvous;
  absl::Notification done;
  absl::Status result;
  executor->RunAsync(args, [&](const absl::Status& s) {
    result = s;
    done.Notify();
  });
  Tensor ping;
  bool is_dead = true;
  absl::Status s = rendezvous.Recv(Key("ping"), &ping, &is_dead, absl::Seconds(30));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_FALSE(is_dead);
  EXPECT_EQ(ping.scalar<float>(), 25.0f);
  ASSERT_TRUE(rendezvous.Send(Key("pong"), Tensor::Scalar<float>(1), false).ok());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(result.ok()) << result;
}

// A Recv whose value is already in the rendezvous completes inside
// ComputeAsync; what it makes ready then runs on the same thread, without
// another trip through the inter-op pool (a thread wake-up, ~50 us here).
TEST_F(ExecutorTest, RecvOfAValueAlreadySentContinuesOnItsThread) {
  GraphDefBuilder b;
  std::string c = b.Const("c", Tensor::Scalar<float>(3));
  std::string send = SendNode(&b, "send", c, "k");
  std::string recv = b.Node("recv", "_Recv", {"^" + send},
                            {{"tensor_type", MakeAttr(DT_FLOAT)},
                             {"tensor_name", MakeAttr("k")},
                             {"send_device", MakeAttr(kCpu)},
                             {"send_device_incarnation", MakeAttr(1)},
                             {"recv_device", MakeAttr(kCpu)}});
  std::string sq = b.Binary("Mul", "sq", recv, recv, DT_FLOAT);
  SendNode(&b, "out", sq, "out");
  std::atomic<int> runner_calls{0};
  auto executor = Build(b.graph(), 2, &runner_calls);
  for (int step = 0; step < 3; ++step) {
    runner_calls = 0;
    LocalRendezvous rendezvous;
    StepStatsCollector stats;
    Executor::Args args;
    args.rendezvous = &rendezvous;
    args.stats_collector = &stats;
    ASSERT_TRUE(executor->Run(args).ok());
    Tensor out;
    bool dead = true;
    ASSERT_TRUE(rendezvous.Recv(Key("out"), &out, &dead, absl::ZeroDuration()).ok());
    EXPECT_FALSE(dead);
    EXPECT_EQ(out.scalar<float>(), 9.0f);
    // One closure starts the step; the rest runs on that closure's thread.
    EXPECT_EQ(runner_calls.load(), 1) << "step " << step;
    std::set<uint64_t> threads;
    for (const NodeExecStats& r : stats.Take()) threads.insert(r.thread_id);
    EXPECT_EQ(threads.size(), 1u) << "step " << step;
  }
}

// A LocalRendezvous that says when a receiver of `key` has registered.
class NotifyingRendezvous : public Rendezvous {
 public:
  explicit NotifyingRendezvous(std::string key) : key_(std::move(key)) {}
  absl::Status Send(const std::string& key, const Tensor& value, bool is_dead) override {
    return local_.Send(key, value, is_dead);
  }
  void RecvAsync(const std::string& key, DoneCallback done) override {
    local_.RecvAsync(key, std::move(done));
    if (key == key_) receiver_registered.Notify();
  }
  void StartAbort(const absl::Status& status) override { local_.StartAbort(status); }
  absl::Notification receiver_registered;

 private:
  const std::string key_;
  LocalRendezvous local_;
};

// A Recv completed later by another thread (here the test's own, sending the
// value while the Recv waits) still hands its successors to the inter-op
// pool: the sender's thread must not run the receiver's graph.
TEST_F(ExecutorTest, RecvCompletedByAnotherThreadGoesBackToThePool) {
  GraphDefBuilder b;
  std::string x = RecvNode(&b, "x", "x_value");
  std::string sq = b.Binary("Mul", "sq", x, x, DT_FLOAT);
  SendNode(&b, "out", sq, "out");
  std::atomic<int> runner_calls{0};
  auto executor = Build(b.graph(), 1, &runner_calls);
  NotifyingRendezvous rendezvous(Key("x_value"));
  StepStatsCollector stats;
  Executor::Args args;
  args.rendezvous = &rendezvous;
  args.stats_collector = &stats;
  absl::Notification done;
  absl::Status result;
  executor->RunAsync(args, [&](const absl::Status& s) {
    result = s;
    done.Notify();
  });
  ASSERT_TRUE(rendezvous.receiver_registered.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(rendezvous.Send(Key("x_value"), Tensor::Scalar<float>(4), false).ok());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(result.ok()) << result;
  Tensor out;
  bool dead = true;
  ASSERT_TRUE(rendezvous.Recv(Key("out"), &out, &dead, absl::ZeroDuration()).ok());
  EXPECT_EQ(out.scalar<float>(), 16.0f);
  // One closure started the step, one more ran what the Recv made ready.
  EXPECT_EQ(runner_calls.load(), 2);
  const uint64_t me = CurrentThreadId();
  for (const NodeExecStats& r : stats.Take()) {
    if (r.node_name != "x") {
      EXPECT_NE(r.thread_id, me) << r.node_name;
    }
  }
}

TEST_F(ExecutorTest, ReadyTiesRunInConstructionOrder) {
  GraphDefBuilder b;
  const int n = 20;
  for (int i = 0; i < n; ++i) b.Const("c" + std::to_string(i), Tensor::Scalar<float>(i));
  for (int i = 0; i < n; ++i) b.Identity("i" + std::to_string(i), "c" + std::to_string(i), DT_FLOAT);
  auto executor = Build(b.graph(), 1);
  StepStatsCollector stats;
  Executor::Args args;
  args.stats_collector = &stats;
  ASSERT_TRUE(executor->Run(args).ok());
  std::vector<NodeExecStats> records = stats.Take();
  ASSERT_EQ(records.size(), static_cast<size_t>(2 * n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(records[i].node_name, "c" + std::to_string(i));
    EXPECT_EQ(records[n + i].node_name, "i" + std::to_string(i));
  }
  for (const NodeExecStats& r : records) {
    EXPECT_LE(r.start_ns, r.end_ns);
    EXPECT_NE(r.thread_id, 0u);
  }
}

// A CPU device whose Synchronize() takes 2 ms and counts its calls, standing
// in for a GPU whose kernels return before their work is done.
class SlowSyncDevice : public Device {
 public:
  SlowSyncDevice() : Device(kCpu, kDeviceCpu, DeviceMgr::Local()->HostCpu()->allocator(), 1) {}
  absl::Status Synchronize() override {
    syncs.fetch_add(1);
    absl::SleepFor(absl::Milliseconds(2));
    return absl::OkStatus();
  }
  std::atomic<int> syncs{0};
};

TEST_F(ExecutorTest, StepStatsWithDeviceTimeWaitForTheDeviceAfterEachKernel) {
  GraphDefBuilder b;
  for (int i = 0; i < 3; ++i) b.Identity("i" + std::to_string(i), b.Const("c" + std::to_string(i), Tensor::Scalar<float>(i)), DT_FLOAT);
  SlowSyncDevice device;
  auto executor = Build(b.graph(), 1, nullptr, &device);

  // Stats alone: no waiting.
  StepStatsCollector plain;
  Executor::Args args;
  args.stats_collector = &plain;
  ASSERT_TRUE(executor->Run(args).ok());
  EXPECT_EQ(device.syncs.load(), 0);
  EXPECT_EQ(plain.Take().size(), 6u);

  // With device time: every kernel's record ends after the device's wait.
  StepStatsCollector timed;
  args.stats_collector = &timed;
  args.stats_include_device_time = true;
  ASSERT_TRUE(executor->Run(args).ok());
  EXPECT_EQ(device.syncs.load(), 6);
  std::vector<NodeExecStats> records = timed.Take();
  ASSERT_EQ(records.size(), 6u);
  for (const NodeExecStats& r : records) EXPECT_GE(r.end_ns - r.start_ns, 2'000'000) << r.node_name;

  // The flag without a collector does nothing (nothing is traced).
  args.stats_collector = nullptr;
  ASSERT_TRUE(executor->Run(args).ok());
  EXPECT_EQ(device.syncs.load(), 6);
}

TEST_F(ExecutorTest, ReadingAnUninitializedVariableNamesIt) {
  GraphDefBuilder b;
  std::string v = b.Variable("never_assigned", DT_FLOAT, TensorShape({}), "executor_test");
  b.Binary("Add", "use", v, v, DT_FLOAT);
  auto executor = Build(b.graph(), 2);
  absl::Status s = executor->Run(Executor::Args());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("never_assigned"), std::string::npos) << s;
  Session::Reset({"executor_test"});
}

TEST_F(ExecutorTest, EmptyGraphFinishes) {
  auto executor = Build(GraphDef(), 1);
  EXPECT_TRUE(executor->Run(Executor::Args()).ok());
}

TEST_F(ExecutorTest, ManyConcurrentStepsOnOneExecutor) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::FromVector<float>({1, 2, 3, 4}));
  std::string cur = x;
  for (int i = 0; i < 50; ++i) cur = b.Binary("Add", "a" + std::to_string(i), cur, x, DT_FLOAT);
  SendNode(&b, "out", cur, "out");
  auto executor = Build(b.graph(), 2);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        LocalRendezvous rendezvous;
        Executor::Args args;
        args.rendezvous = &rendezvous;
        if (!executor->Run(args).ok()) {
          ++wrong;
          continue;
        }
        Tensor out;
        bool dead;
        if (!rendezvous.Recv(Key("out"), &out, &dead, absl::ZeroDuration()).ok() || out.data<float>()[3] != 204.0f) {
          ++wrong;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ExecutorTest, MissingKernelIsReportedAtConstruction) {
  GraphDefBuilder b;
  std::string x = b.Const("x", Tensor::Scalar<bool>(true));
  b.Binary("Add", "add_bools", x, x, DT_BOOL);
  // Add has no bool in its allowed types: the graph itself is invalid.
  auto graph = GraphFromGraphDef(b.graph());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(graph.status().message().find("add_bools"), std::string::npos);
}

// Both ways outputs leave a sync kernel are checked: straight into the
// consumers' slots (a graph without loops or Merges: the lock-free root) and
// through the frame's lock (here, because a cond's Merge is in the graph).
TEST_F(ExecutorTest, KernelOutputsAreCheckedAgainstTheOp) {
  for (bool with_merge : {false, true}) {
    for (const std::string set : {"none", "int32"}) {
      SCOPED_TRACE(std::string(with_merge ? "with" : "without") + " a Merge, set=" + set);
      GraphDefBuilder b;
      std::string x = b.Const("x", Tensor::Scalar<float>(1));
      std::string bad = b.Node("bad", "ExecutorTestBadOutput", {x}, {{"set", MakeAttr(set)}});
      b.Identity("after", bad, DT_FLOAT);
      if (with_merge) {
        std::string pred = b.Const("pred", Tensor::Scalar<bool>(true));
        std::string sw = b.Switch("switch", x, pred, DT_FLOAT);
        b.Merge("merge", {sw, sw + ":1"}, DT_FLOAT);
      }
      auto executor = Build(b.graph(), 1);
      for (int step = 0; step < 2; ++step) {
        absl::Status s = executor->Run(Executor::Args());
        EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
        EXPECT_NE(s.message().find("node 'bad'"), std::string::npos) << s;
        const std::string want =
            set == "none" ? "kernel did not produce output 0" : "output 0 has type int32 but the op declares float";
        EXPECT_NE(s.message().find(want), std::string::npos) << s;
      }
    }
  }
}

// One output read by several consumers (copied to all but the last, moved to
// the last), step after step on one executor, with and without the lock-free
// root.
TEST_F(ExecutorTest, OutputsFanOutToEveryConsumerEveryStep) {
  for (bool with_merge : {false, true}) {
    SCOPED_TRACE(with_merge ? "with a Merge" : "without a Merge");
    GraphDefBuilder b;
    std::string x = b.Const("x", Tensor::FromVector<float>({1, 2}));
    std::string doubled = b.Binary("Add", "doubled", x, x, DT_FLOAT);
    std::string a = b.Binary("Add", "a", doubled, x, DT_FLOAT);        // 3, 6
    std::string c = b.Binary("Mul", "c", doubled, doubled, DT_FLOAT);  // 4, 16
    std::string sum = b.Binary("Add", "sum", a, c, DT_FLOAT);          // 7, 22
    if (with_merge) {
      std::string pred = b.Const("pred", Tensor::Scalar<bool>(false));
      std::string sw = b.Switch("switch", sum, pred, DT_FLOAT);
      sum = b.Merge("merge", {sw, sw + ":1"}, DT_FLOAT);
    }
    SendNode(&b, "out", sum, "out");
    auto executor = Build(b.graph(), 2);
    for (int step = 0; step < 5; ++step) {
      LocalRendezvous rendezvous;
      Executor::Args args;
      args.rendezvous = &rendezvous;
      ASSERT_TRUE(executor->Run(args).ok());
      Tensor out;
      bool dead = true;
      ASSERT_TRUE(rendezvous.Recv(Key("out"), &out, &dead, absl::ZeroDuration()).ok());
      EXPECT_FALSE(dead);
      ASSERT_EQ(out.NumElements(), 2);
      EXPECT_EQ(out.data<float>()[0], 7.0f);
      EXPECT_EQ(out.data<float>()[1], 22.0f);
    }
  }
}

}  // namespace
}  // namespace sluice
