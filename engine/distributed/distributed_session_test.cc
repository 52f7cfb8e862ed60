// The distributed session and the worker, with two tasks in one process
// (in-process workers, no gRPC): a graph split across tasks gives the local
// session's results; a variable on the ps keeps its value across steps and
// signatures; an error on one task aborts the step everywhere with that task's
// name and the next step runs; the session options' bias + activation fusion
// reaches the graphs the tasks run; the worker refuses bad requests (unknown
// handles, devices it lacks, malformed tensors, other configs) with errors;
// a step aborted by a peer ends the kernels that wait in it.
#include <cstring>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "engine/distributed/distributed_session.h"
#include "engine/distributed/worker.h"
#include "engine/framework/device_set.h"
#include "engine/framework/local_devices.h"
#include "engine/framework/op_def.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {

// Fails when its input is negative (an error raised on one task).
REGISTER_OP("DistTestFailIfNegative").Input("x: float").Output("y: float").SetShapeFn(shape_fns::Unchanged);
class DistTestFailIfNegativeOp : public OpKernel {
 public:
  explicit DistTestFailIfNegativeOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}
  void Compute(OpKernelContext* ctx) override {
    if (ctx->input(0).scalar<float>() < 0) {
      ctx->SetStatus(absl::FailedPreconditionError("negative input"));
      return;
    }
    ctx->set_output(0, ctx->input(0));
  }
};
REGISTER_KERNEL_BUILDER(Name("DistTestFailIfNegative").Device(kDeviceCpu), DistTestFailIfNegativeOp);

// Waits until its step is cancelled (as a Dequeue on an empty queue or an
// accumulator's take does), then fails Cancelled.
REGISTER_OP("DistTestWaitForCancel").Output("y: float").SetIsStateful().SetShapeFn(shape_fns::Scalar);
class DistTestWaitForCancelOp : public AsyncOpKernel {
 public:
  explicit DistTestWaitForCancelOp(OpKernelConstruction* ctx) : AsyncOpKernel(ctx) {}
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    CancellationManager* cm = ctx->cancellation_manager();
    auto cancelled = [ctx, done] {
      ctx->SetStatus(absl::CancelledError("the wait was cancelled"));
      done();
    };
    if (cm == nullptr || !cm->RegisterCallback(cm->NewToken(), cancelled)) cancelled();
  }
};
REGISTER_KERNEL_BUILDER(Name("DistTestWaitForCancel").Device(kDeviceCpu), DistTestWaitForCancelOp);

namespace distributed {
namespace {

const std::string kChief = "/job:worker/replica:0/task:0";
const std::string kPs = "/job:ps/replica:0/task:0";

class MapWorkerCache : public WorkerCache {
 public:
  WorkerInterface* GetWorker(const std::string& task) override {
    auto it = workers.find(task);
    return it == workers.end() ? nullptr : it->second;
  }
  std::map<std::string, WorkerInterface*> workers;
};

// A chief and a ps in this process, each with its own devices and worker.
struct TwoTasks {
  explicit TwoTasks(int ps_devices = 1, const std::string& ps_hash = "h") {
    chief_devices = NewCpuDeviceMgr(1, 1, kChief);
    ps_device_mgr = NewCpuDeviceMgr(ps_devices, 1, kPs);
    WorkerOptions o;
    o.task = kChief;
    o.device_mgr = chief_devices.get();
    o.config_hash = "h";
    chief = std::make_unique<Worker>(o);
    o.task = kPs;
    o.device_mgr = ps_device_mgr.get();
    o.config_hash = ps_hash;
    ps = std::make_unique<Worker>(o);
    cache.workers = {{kChief, chief.get()}, {kPs, ps.get()}};
    chief->set_worker_cache(&cache);
    ps->set_worker_cache(&cache);
  }

  std::unique_ptr<Session> NewSession(const GraphDef& graph, bool lossy_transfer = false, bool fuse = true) {
    auto devices = ConnectToCluster(&cache, {kChief, kPs}, kChief, "h", absl::Seconds(5), nullptr);
    EXPECT_TRUE(devices.ok()) << devices.status();
    DistributedSessionOptions options;
    options.local_worker = chief.get();
    options.workers = &cache;
    options.devices = *devices;
    options.lossy_transfer = lossy_transfer;
    // These graphs compute from Consts to show where nodes run and what
    // crosses tasks: constant folding would compute them when the step is
    // built, so nothing would run or cross.
    options.session.enable_constant_folding = false;
    options.session.fuse_bias_activation = fuse;
    auto session = NewDistributedSession(options);
    EXPECT_TRUE(session.ok()) << session.status();
    absl::Status s = (*session)->Create(graph);
    EXPECT_TRUE(s.ok()) << s;
    return std::move(session).value();
  }

  std::unique_ptr<DeviceMgr> chief_devices, ps_device_mgr;
  std::unique_ptr<Worker> chief, ps;
  MapWorkerCache cache;
};

void SetDevice(GraphDef* g, const std::string& node, const std::string& device) {
  for (NodeDef& n : *g->mutable_node()) {
    if (n.name() == node) {
      n.set_device(device);
      return;
    }
  }
  ADD_FAILURE() << "no node " << node;
}

// Figure 5's graph; split: b and c on the ps, the rest on the chief.
GraphDef Figure5(bool split) {
  GraphDefBuilder b;
  std::string a = b.Const("a", Tensor::Scalar<float>(1));
  std::string bb = b.Binary("Add", "b", a, a, DT_FLOAT);
  std::string c = b.Binary("Mul", "c", bb, bb, DT_FLOAT);
  std::string d = b.Binary("Add", "d", bb, a, DT_FLOAT);
  b.Binary("Mul", "e", d, c, DT_FLOAT);
  b.Binary("Add", "f", c, c, DT_FLOAT);
  GraphDef g = b.graph();
  if (split) {
    SetDevice(&g, "b", "/job:ps/task:0");
    SetDevice(&g, "c", "/job:ps/task:0");
    SetDevice(&g, "a", "/job:worker/task:0");
    SetDevice(&g, "e", "/job:worker/task:0");  // reads c from the ps
  }
  return g;
}

TEST(DistributedSession, ASplitGraphGivesTheLocalResultsWithFeedsAndFetchesFromBothTasks) {
  auto local_devices = NewCpuDeviceMgr(1, 1);
  SessionOptions local_options;
  local_options.device_mgr = local_devices.get();
  auto local = sluice::NewSession(local_options);
  ASSERT_TRUE(local.ok());
  ASSERT_TRUE((*local)->Create(Figure5(false)).ok());
  TwoTasks tasks;
  auto session = tasks.NewSession(Figure5(true));
  for (const auto& feeds : std::vector<std::vector<std::pair<std::string, Tensor>>>{
           {}, {{"b", Tensor::Scalar<float>(3)}}, {{"a", Tensor::Scalar<float>(-2)}}}) {
    std::vector<Tensor> want, got;
    ASSERT_TRUE((*local)->Run(feeds, {"e", "f", "b"}, {}, &want).ok());
    RunOptions run_options;
    run_options.collect_step_stats = true;
    RunMetadata metadata;
    absl::Status s = session->Run(run_options, feeds, {"e", "f", "b"}, {}, &got, &metadata);
    ASSERT_TRUE(s.ok()) << s;
    // Records from both tasks: c ran on the ps, e on the chief.
    std::map<std::string, std::set<std::string>> ran;
    for (const DeviceStepStats& d : metadata.device_step_stats) {
      for (const NodeExecStats& n : d.nodes) ran[d.device].insert(n.node_name);
    }
    EXPECT_EQ(ran[kChief + "/device:CPU:0"].count("e"), 1u);
    EXPECT_EQ(ran[kPs + "/device:CPU:0"].count("c"), 1u);
    ASSERT_EQ(got.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(want[i].scalar<float>(), got[i].scalar<float>()) << i;
  }
  // The ps ran a registered graph; every step was cleaned up on both tasks.
  EXPECT_GE(tasks.ps->num_registered_graphs(), 1);
  EXPECT_EQ(tasks.ps->steps()->num_steps(), 0);
  EXPECT_EQ(tasks.chief->steps()->num_steps(), 0);
}

// A dense layer (MatMul -> BiasAdd -> Relu) on the ps: fused there into one
// _FusedMatMul when the session options say so, and not otherwise; the same
// values either way.
TEST(DistributedSession, SessionOptionsFusionReachesTheTasksGraphs) {
  GraphDefBuilder b;
  b.Const("x", Tensor::FromVector<float>({1, -2, 3, 0.5f, 4, -1}));
  b.Node("x2", "Reshape", {"x", b.Const("shape", Tensor::FromVector<int32_t>({2, 3}))},
         {{"T", MakeAttr(DT_FLOAT)}});
  b.Const("w", Tensor::FromVector<float>({0.5f, -1, 2, 1, -0.5f, 0.25f}));
  b.Node("w2", "Reshape", {"w", "shape2"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Const("shape2", Tensor::FromVector<int32_t>({3, 2}));
  b.Const("bias", Tensor::FromVector<float>({-1, 0.5f}));
  b.Node("mm", "MatMul", {"x2", "w2"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("bias_add", "BiasAdd", {"mm", "bias"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("relu", "Relu", {"bias_add"}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Binary("Mul", "out", "relu", "relu", DT_FLOAT);
  GraphDef g = b.graph();
  for (const char* n : {"mm", "bias_add", "relu"}) SetDevice(&g, n, "/job:ps/task:0");
  SetDevice(&g, "out", "/job:worker/task:0");
  std::vector<Tensor> results[2];
  for (bool fuse : {false, true}) {
    TwoTasks tasks;
    auto session = tasks.NewSession(g, /*lossy_transfer=*/false, fuse);
    RunOptions run_options;
    run_options.collect_step_stats = true;
    RunMetadata metadata;
    absl::Status s = session->Run(run_options, {}, {"out"}, {}, &results[fuse], &metadata);
    ASSERT_TRUE(s.ok()) << s;
    std::multiset<std::string> ps_ops;
    for (const DeviceStepStats& d : metadata.device_step_stats) {
      if (d.device != kPs + "/device:CPU:0") continue;
      for (const NodeExecStats& n : d.nodes) ps_ops.insert(n.op);
    }
    EXPECT_EQ(ps_ops.count("_FusedMatMul"), fuse ? 1u : 0u);
    EXPECT_EQ(ps_ops.count("MatMul"), fuse ? 0u : 1u);
    EXPECT_EQ(ps_ops.count("Relu"), fuse ? 0u : 1u);
  }
  ASSERT_EQ(results[0].size(), 1u);
  ASSERT_EQ(results[1].size(), 1u);
  ASSERT_EQ(results[0][0].NumElements(), 4);
  int positive = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(results[0][0].data<float>()[i], results[1][0].data<float>()[i]) << i;
    positive += results[1][0].data<float>()[i] > 0;
  }
  EXPECT_GT(positive, 0);
  EXPECT_LT(positive, 4);  // the Relu clipped something
}

TEST(DistributedSession, AVariableOnThePsKeepsItsValueAcrossStepsSignaturesAndExtend) {
  TwoTasks tasks;
  GraphDefBuilder b;
  std::string v = b.Variable("v", DT_FLOAT, TensorShape({}), "");
  b.Assign("init", v, b.Const("zero", Tensor::Scalar<float>(0)), DT_FLOAT);
  b.AssignAdd("add", v, b.Const("one", Tensor::Scalar<float>(1)), DT_FLOAT);
  GraphDef g = b.graph();
  SetDevice(&g, "v", "/job:ps/task:0");
  auto session = tasks.NewSession(g);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(session->Run({}, {}, {"add"}, &out).ok());
  GraphDefBuilder more;
  more.AssignAdd("add_two", "v", more.Const("two", Tensor::Scalar<float>(2)), DT_FLOAT);
  ASSERT_TRUE(session->Extend(more.graph()).ok());
  ASSERT_TRUE(session->Run({}, {}, {"add_two"}, &out).ok());
  absl::Status s = session->Run({}, {"v"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].scalar<float>(), 5.0f);
  EXPECT_EQ(tasks.chief_devices->devices()[0]->resource_manager()->NumResources(), 0);
  EXPECT_EQ(tasks.ps_device_mgr->devices()[0]->resource_manager()->NumResources(), 1);
}

TEST(DistributedSession, AnErrorOnOneTaskAbortsTheStepEverywhereNamingTheTaskAndTheNextStepRuns) {
  TwoTasks tasks;
  GraphDefBuilder b;
  std::string x = b.Placeholder("x", DT_FLOAT);
  std::string checked = b.Node("checked", "DistTestFailIfNegative", {x});
  b.Binary("Mul", "y", checked, checked, DT_FLOAT);
  GraphDef g = b.graph();
  SetDevice(&g, "x", "/job:worker/task:0");
  SetDevice(&g, "checked", "/job:ps/task:0");
  SetDevice(&g, "y", "/job:worker/task:0");  // waits on a Recv from the ps
  auto session = tasks.NewSession(g);
  std::vector<Tensor> out;
  absl::Status s = session->Run({{"x", Tensor::Scalar<float>(-1)}}, {"y"}, {}, &out);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "negative input")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), kPs)) << s;
  EXPECT_EQ(tasks.ps->steps()->num_steps(), 0);
  EXPECT_EQ(tasks.chief->steps()->num_steps(), 0);
  s = session->Run({{"x", Tensor::Scalar<float>(3)}}, {"y"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].scalar<float>(), 9.0f);
}

TEST(DistributedSession, LossyTransferTruncatesFloatsThatCrossTasksAndNothingElse) {
  TwoTasks tasks;
  GraphDefBuilder b;
  const std::vector<float> values = {1.0f / 3, -1000.1f};
  std::string x = b.Const("x", Tensor::FromVector<float>(values));
  std::string n = b.Const("n", Tensor::FromVector<int32_t>({123456789}));
  b.Identity("y", x, DT_FLOAT);
  b.Identity("m", n, DT_INT32);
  GraphDef g = b.graph();
  SetDevice(&g, "x", "/job:ps/task:0");
  SetDevice(&g, "n", "/job:ps/task:0");
  SetDevice(&g, "y", "/job:worker/task:0");
  SetDevice(&g, "m", "/job:worker/task:0");
  auto session = tasks.NewSession(g, /*lossy_transfer=*/true);
  std::vector<Tensor> out;
  absl::Status s = session->Run({}, {"y", "m"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t in_bits, out_bits;
    const float got = out[0].data<float>()[i];
    std::memcpy(&in_bits, &values[i], 4);
    std::memcpy(&out_bits, &got, 4);
    EXPECT_EQ(out_bits, in_bits & 0xffff0000u) << values[i] << " arrived as " << got;
  }
  EXPECT_EQ(out[1].data<int32_t>()[0], 123456789);  // only floats are cast
  // Without lossy transfer the same value crosses exactly.
  TwoTasks exact;
  auto plain = exact.NewSession(g, /*lossy_transfer=*/false);
  s = plain->Run({}, {"y"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].data<float>()[0], values[0]);
}

TEST(DistributedSession, ADeviceNoTaskHasIsAnErrorNamingTheNode) {
  TwoTasks tasks;
  GraphDef g = Figure5(false);
  SetDevice(&g, "c", "/job:ps/task:3");
  auto devices = ConnectToCluster(&tasks.cache, {kChief, kPs}, kChief, "h", absl::Seconds(5), nullptr);
  ASSERT_TRUE(devices.ok());
  DistributedSessionOptions options;
  options.local_worker = tasks.chief.get();
  options.workers = &tasks.cache;
  options.devices = *devices;
  auto session = NewDistributedSession(options);
  ASSERT_TRUE(session.ok());
  absl::Status s = (*session)->Create(g);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "'c'")) << s;
}

TEST(ConnectToCluster, ListsTheLocalTasksDevicesFirstAndRefusesAnotherConfig) {
  TwoTasks tasks(/*ps_devices=*/2);
  auto devices = ConnectToCluster(&tasks.cache, {kPs, kChief}, kChief, "h", absl::Seconds(5), nullptr);
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[0].name(), kChief + "/device:CPU:0");
  EXPECT_EQ((*devices)[1].name(), kPs + "/device:CPU:0");
  EXPECT_EQ((*devices)[2].name(), kPs + "/device:CPU:1");
  EXPECT_NE((*devices)[1].incarnation(), 0u);

  TwoTasks other(1, /*ps_hash=*/"different");
  auto refused = ConnectToCluster(&other.cache, {kChief, kPs}, kChief, "h", absl::Seconds(5), nullptr);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), kPs)) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "different")) << refused.status();
}

TEST(ConnectToCluster, ATaskThatNeverAnswersIsUnavailableNamingIt) {
  TwoTasks tasks;
  tasks.cache.workers.erase(kPs);
  class Unreachable : public Worker {
   public:
    using Worker::Worker;
    void GetStatusAsync(const GetStatusRequest*, GetStatusResponse*, StatusCallback done) override {
      done(absl::UnavailableError("connection refused"));
    }
  };
  WorkerOptions o;
  o.task = kPs;
  o.device_mgr = tasks.ps_device_mgr.get();
  Unreachable ps(o);
  tasks.cache.workers[kPs] = &ps;
  auto devices = ConnectToCluster(&tasks.cache, {kChief, kPs}, kChief, "h", absl::Milliseconds(300), nullptr);
  EXPECT_TRUE(absl::IsUnavailable(devices.status())) << devices.status();
  EXPECT_TRUE(absl::StrContains(devices.status().message(), kPs)) << devices.status();
}

TEST(Worker, RefusesUnknownHandlesForeignDevicesAndMalformedTensors) {
  TwoTasks tasks;
  RunGraphRequest run;
  run.set_graph_handle("no_such_graph");
  run.set_step_id(7);
  RunGraphResponse run_response;
  // Aborted (retryable): a handle the task does not know was cleaned up under
  // its caller.
  const absl::Status unknown = tasks.ps->RunGraph(run, &run_response);
  EXPECT_TRUE(absl::IsAborted(unknown)) << unknown;
  EXPECT_TRUE(absl::StrContains(unknown.message(), "has no graph 'no_such_graph'")) << unknown;

  RegisterGraphRequest reg;
  NodeDef* n = reg.mutable_graph()->add_node();
  n->set_name("c");
  n->set_op("NoOp");
  n->set_device(kChief + "/device:CPU:0");  // not the ps's
  RegisterGraphResponse reg_response;
  absl::Status s = tasks.ps->RegisterGraph(reg, &reg_response);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "has no device")) << s;

  n->set_device(kPs + "/device:CPU:0");
  n->set_op("NoSuchOp");
  s = tasks.ps->RegisterGraph(reg, &reg_response);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  n->set_op("NoOp");
  ASSERT_TRUE(tasks.ps->RegisterGraph(reg, &reg_response).ok());
  // The handle carries this process's incarnation: a session of the task's
  // previous life (same address, restarted) cannot deregister it by number.
  EXPECT_TRUE(absl::StrContains(reg_response.graph_handle(), absl::StrCat(absl::Hex(ProcessIncarnation()))))
      << reg_response.graph_handle();
  {
    DeregisterGraphRequest stale;
    stale.set_graph_handle("graph_1");
    DeregisterGraphResponse stale_response;
    tasks.ps->DeregisterGraph(stale, &stale_response).IgnoreError();
    RunGraphRequest probe;
    probe.set_graph_handle(reg_response.graph_handle());
    probe.set_step_id(12345);
    RunGraphResponse probe_response;
    const absl::Status still = tasks.ps->RunGraph(probe, &probe_response);
    EXPECT_FALSE(absl::StrContains(still.message(), "has no graph"))
        << "the old-style handle removed the graph: " << still;
  }

  // A tensor whose shape claims more values than its bytes hold.
  run.set_graph_handle(reg_response.graph_handle());
  NamedTensor* send = run.add_send();
  send->set_key("k");
  send->mutable_tensor()->set_dtype(DT_FLOAT);
  send->mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(1000);
  send->mutable_tensor()->set_tensor_content(std::string(12, '\0'));
  s = tasks.ps->RunGraph(run, &run_response);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;

  // RecvTensor for a key another task sends, and for a cleaned-up step.
  RecvTensorRequest recv;
  recv.set_step_id(9);
  recv.set_rendezvous_key(kChief + "/device:CPU:0;1;" + kPs + "/device:CPU:0;t;0:0");
  RecvTensorResult result;
  EXPECT_TRUE(absl::IsInvalidArgument(tasks.ps->RecvTensor(recv, &result)));
  recv.set_rendezvous_key("garbage");
  EXPECT_TRUE(absl::IsInvalidArgument(tasks.ps->RecvTensor(recv, &result)));
  CleanupGraphRequest cleanup;
  cleanup.set_step_id(9);
  CleanupGraphResponse cleanup_response;
  ASSERT_TRUE(tasks.ps->CleanupGraph(cleanup, &cleanup_response).ok());
  recv.set_rendezvous_key(kPs + "/device:CPU:0;1;" + kChief + "/device:CPU:0;t;0:0");
  EXPECT_TRUE(absl::IsAborted(tasks.ps->RecvTensor(recv, &result)));
}

TEST(Worker, ARecvTensorWaitingForItsStepFailsWhenTheStepIsAborted) {
  TwoTasks tasks;
  RecvTensorRequest recv;
  recv.set_step_id(11);
  recv.set_rendezvous_key(kPs + "/device:CPU:0;1;" + kChief + "/device:CPU:0;t;0:0");
  RecvTensorResult result;
  absl::Notification done;
  absl::Status got;
  tasks.ps->RecvTensorAsync(&recv, &result, [&](const absl::Status& s) {
    got = s;
    done.Notify();
  }, nullptr);
  EXPECT_FALSE(done.HasBeenNotified());
  CleanupGraphRequest cleanup;
  cleanup.set_step_id(11);
  StatusToProto(absl::UnavailableError("task /job:worker/replica:0/task:1 is gone"), cleanup.mutable_abort());
  CleanupGraphResponse cleanup_response;
  ASSERT_TRUE(tasks.ps->CleanupGraph(cleanup, &cleanup_response).ok());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_TRUE(absl::IsUnavailable(got)) << got;
  EXPECT_TRUE(absl::StrContains(got.message(), "task:1 is gone")) << got;
}

TEST(Worker, ARunGraphWhoseCallerGoesAwayEndsInsteadOfWaiting) {
  TwoTasks tasks;
  // A graph on the ps that waits for a tensor from a chief that never sends it.
  RegisterGraphRequest reg;
  NodeDef* recv = reg.mutable_graph()->add_node();
  recv->set_name("_recv_x");
  recv->set_op("_Recv");
  recv->set_device(kPs + "/device:CPU:0");
  auto& attr = *recv->mutable_attr();
  attr["tensor_type"].set_type(DT_FLOAT);
  attr["tensor_name"].set_s("x");
  attr["send_device"].set_s(kChief + "/device:CPU:0");
  attr["send_device_incarnation"].set_i(1);
  attr["recv_device"].set_s(kPs + "/device:CPU:0");
  RegisterGraphResponse reg_response;
  absl::Status s = tasks.ps->RegisterGraph(reg, &reg_response);
  ASSERT_TRUE(s.ok()) << s;
  // The chief's worker never sends "x": make its RecvTensor wait forever.
  tasks.cache.workers[kChief] = nullptr;
  class Silent : public Worker {
   public:
    using Worker::Worker;
    void RecvTensorAsync(const RecvTensorRequest*, RecvTensorResult*, StatusCallback done,
                         CallCancellation* cancel) override {
      // Answers only when cancelled.
      cancel->Register([done] { done(absl::CancelledError("recv cancelled")); });
    }
  };
  WorkerOptions o;
  o.task = kChief;
  o.device_mgr = tasks.chief_devices.get();
  Silent silent(o);
  tasks.cache.workers[kChief] = &silent;

  RunGraphRequest run;
  run.set_graph_handle(reg_response.graph_handle());
  run.set_step_id(21);
  RunGraphResponse run_response;
  CallCancellation caller;
  absl::Notification done;
  absl::Status got;
  tasks.ps->RunGraphAsync(&run, &run_response, [&](const absl::Status& st) {
    got = st;
    done.Notify();
  }, &caller);
  EXPECT_FALSE(done.WaitForNotificationWithTimeout(absl::Milliseconds(100))) << got;
  caller.StartCancel();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_FALSE(got.ok());
  EXPECT_EQ(tasks.ps->steps()->num_steps(), 0);
}

// A sync replica's step on the ps waits in a Dequeue for the chief's token;
// when the replica aborts the step (it lost the chief), the ps's part of it
// must end too, or the replica's Run waits for it forever.
TEST(Worker, ARunGraphWaitingInAnAsyncKernelEndsWhenAPeerAbortsTheStep) {
  TwoTasks tasks;
  RegisterGraphRequest reg;
  NodeDef* wait = reg.mutable_graph()->add_node();
  wait->set_name("wait");
  wait->set_op("DistTestWaitForCancel");
  wait->set_device(kPs + "/device:CPU:0");
  RegisterGraphResponse reg_response;
  absl::Status s = tasks.ps->RegisterGraph(reg, &reg_response);
  ASSERT_TRUE(s.ok()) << s;
  RunGraphRequest run;
  run.set_graph_handle(reg_response.graph_handle());
  run.set_step_id(41);
  run.set_caller_task(kChief);
  RunGraphResponse run_response;
  absl::Notification done;
  absl::Status got;
  tasks.ps->RunGraphAsync(&run, &run_response, [&](const absl::Status& st) {
    got = st;
    done.Notify();
  }, nullptr);
  EXPECT_FALSE(done.WaitForNotificationWithTimeout(absl::Milliseconds(100))) << got;
  CleanupGraphRequest cleanup;
  cleanup.set_step_id(41);
  StatusToProto(absl::UnavailableError("the chief (/job:worker/replica:0/task:0) restarted"), cleanup.mutable_abort());
  CleanupGraphResponse cleanup_response;
  ASSERT_TRUE(tasks.ps->CleanupGraph(cleanup, &cleanup_response).ok());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5))) << "the ps's step still waits";
  EXPECT_FALSE(got.ok());
  EXPECT_EQ(tasks.ps->steps()->num_steps(), 0);
  // The next step of the same graph waits again (its own cancellation).
  run.set_step_id(42);
  absl::Notification done2;
  tasks.ps->RunGraphAsync(&run, &run_response, [&](const absl::Status& st) {
    got = st;
    done2.Notify();
  }, nullptr);
  EXPECT_FALSE(done2.WaitForNotificationWithTimeout(absl::Milliseconds(100))) << got;
  cleanup.set_step_id(42);
  ASSERT_TRUE(tasks.ps->CleanupGraph(cleanup, &cleanup_response).ok());
  ASSERT_TRUE(done2.WaitForNotificationWithTimeout(absl::Seconds(5)));
}

// What GetStatus says of a replicated run's chief: ready for the replicas
// once told, with its incarnation.
TEST(Worker, GetStatusSaysReplicaReadyOnceTold) {
  TwoTasks tasks;
  GetStatusRequest request;
  GetStatusResponse response;
  ASSERT_TRUE(tasks.chief->GetStatus(request, &response).ok());
  EXPECT_FALSE(response.replica_ready());
  EXPECT_EQ(response.incarnation(), ProcessIncarnation());
  tasks.chief->set_replica_ready();
  ASSERT_TRUE(tasks.chief->GetStatus(request, &response).ok());
  EXPECT_TRUE(response.replica_ready());
}

TEST(Worker, ARecvTensorWhoseCallerGivesUpEndsAndForgetsItsStep) {
  TwoTasks tasks;
  RecvTensorRequest recv;
  recv.set_step_id(31);  // a step that never runs here
  recv.set_rendezvous_key(kPs + "/device:CPU:0;1;" + kChief + "/device:CPU:0;t;0:0");
  RecvTensorResult result;
  CallCancellation caller;
  absl::Notification done;
  absl::Status got;
  tasks.ps->RecvTensorAsync(&recv, &result, [&](const absl::Status& s) {
    got = s;
    done.Notify();
  }, &caller);
  EXPECT_EQ(tasks.ps->steps()->num_steps(), 1);
  EXPECT_FALSE(done.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  caller.StartCancel();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_TRUE(absl::IsCancelled(got)) << got;
  EXPECT_EQ(tasks.ps->steps()->num_steps(), 0);
}

TEST(Worker, ShutdownAnswersAndThenCallsBackOnce) {
  int calls = 0;
  std::string reason;
  int exit_code = -1;
  WorkerOptions o;
  o.task = kPs;
  auto devices = NewCpuDeviceMgr(1, 1, kPs);
  o.device_mgr = devices.get();
  o.on_shutdown = [&](const std::string& r, int code) {
    ++calls;
    reason = r;
    exit_code = code;
  };
  Worker w(o);
  ShutdownRequest request;
  request.set_reason("the chief was stopped by a signal");
  request.set_exit_code(143);
  ShutdownResponse response;
  ASSERT_TRUE(w.Shutdown(request, &response).ok());
  request.set_exit_code(0);
  ASSERT_TRUE(w.Shutdown(request, &response).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(reason, "the chief was stopped by a signal");
  EXPECT_EQ(exit_code, 143);  // the first call's
  RunGraphRequest run;
  RunGraphResponse run_response;
  EXPECT_TRUE(absl::IsUnavailable(w.RunGraph(run, &run_response)));
}

}  // namespace
}  // namespace distributed
}  // namespace sluice
