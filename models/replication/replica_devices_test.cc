// The replica device assignment: variables (with their slots, updates and
// initializers) on ps tasks by bytes or round robin, the global step on ps 0,
// everything else on this worker.
#include "models/replication/replica_devices.h"

#include "engine/framework/node_def_util.h"
#include "engine/graph/graph_def_builder.h"
#include "gtest/gtest.h"

namespace sluice {
namespace models {
namespace {

constexpr char kWorker[] = "/job:worker/replica:0/task:1";
constexpr char kPs0[] = "/job:ps/replica:0/task:0";
constexpr char kPs1[] = "/job:ps/replica:0/task:1";

class ReplicaDevicesTest : public ::testing::Test {
 protected:
  // global_step; w (1000 floats) with a momentum slot and its update; b (10
  // floats); a reader of w; an eval-tower variable sharing b.
  void Build() {
    b_.Variable("global_step", DT_INT64, TensorShape({}));
    b_.Variable("w", DT_FLOAT, TensorShape({10, 100}));
    b_.Variable("w/momentum", DT_FLOAT, TensorShape({10, 100}));
    b_.Variable("b", DT_FLOAT, TensorShape({10}));
    b_.Assign("init_w", "w", b_.Const("w0", Tensor(DT_FLOAT, TensorShape({10, 100}))), DT_FLOAT);
    b_.Const("lr", Tensor::Scalar<float>(0.1f));
    b_.Const("mom", Tensor::Scalar<float>(0.9f));
    b_.Node("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
    b_.Node("y", "MatMul", {"x", "w"}, {{"T", MakeAttr(DT_FLOAT)}});
    b_.Node("apply_w", "ApplyMomentum", {"w", "w/momentum", "lr", "y", "mom"}, {{"T", MakeAttr(DT_FLOAT)}});
    b_.Node("eval_b", "VariableV2", {},
            {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({10}))}, {"shared_name", MakeAttr("b")}});
    b_.Identity("read_eval_b", "eval_b", DT_FLOAT);
  }
  std::string DeviceOf(const std::string& name) const {
    for (const NodeDef& n : graph_.node()) {
      if (n.name() == name) return n.device();
    }
    return "<missing>";
  }
  absl::StatusOr<ReplicaDevices> Assign(bool round_robin = false) {
    graph_ = b_.graph();
    ReplicaDeviceOptions o;
    o.worker_task = kWorker;
    o.ps_tasks = {kPs0, kPs1};
    o.global_step = "global_step";
    o.round_robin = round_robin;
    return AssignReplicaDevices(o, &graph_);
  }

  GraphDefBuilder b_;
  GraphDef graph_;
};

TEST_F(ReplicaDevicesTest, VariablesGoToTheLeastLoadedPsWithTheirSlotsAndUpdates) {
  Build();
  auto r = Assign();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DeviceOf("global_step"), kPs0);
  // w and its slot (8000 bytes together) go to the empty ps 1; b to ps 0.
  for (const char* n : {"w", "w/momentum", "apply_w", "init_w"}) EXPECT_EQ(DeviceOf(n), kPs1) << n;
  EXPECT_EQ(DeviceOf("b"), kPs0);
  EXPECT_EQ(DeviceOf("eval_b"), kPs0) << "the eval tower's variable shares b's resource";
  for (const char* n : {"x", "y", "lr", "w0", "read_eval_b"}) EXPECT_EQ(DeviceOf(n), kWorker) << n;
  EXPECT_EQ(r->bytes_per_ps[1], 8000);
  EXPECT_EQ(r->bytes_per_ps[0], 8 + 40) << "a shared variable counts once";
  EXPECT_EQ(r->variable_task.at("w/momentum"), kPs1);
}

TEST_F(ReplicaDevicesTest, RoundRobinTakesTurns) {
  Build();
  auto r = Assign(/*round_robin=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DeviceOf("global_step"), kPs0);
  EXPECT_EQ(DeviceOf("w"), kPs1);
  EXPECT_EQ(DeviceOf("b"), kPs0);
}

TEST_F(ReplicaDevicesTest, ANodeThatNamesAJobKeepsItAndItsGroupFollows) {
  Build();
  for (NodeDef& n : *b_.mutable_graph()->mutable_node()) {
    if (n.name() == "apply_w") n.set_device("/job:ps/replica:0/task:0");
    if (n.name() == "y") n.set_device("/device:CPU:0");
  }
  auto r = Assign();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DeviceOf("w"), kPs0);
  EXPECT_EQ(DeviceOf("w/momentum"), kPs0);
  EXPECT_EQ(DeviceOf("y"), absl::StrCat(kWorker, "/device:CPU:0"));
}

TEST_F(ReplicaDevicesTest, TwoJobsInOneGroupIsAnError) {
  Build();
  for (NodeDef& n : *b_.mutable_graph()->mutable_node()) {
    if (n.name() == "apply_w") n.set_device("/job:ps/replica:0/task:0");
    if (n.name() == "init_w") n.set_device("/job:ps/replica:0/task:1");
  }
  auto r = Assign();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must share its device"), std::string::npos) << r.status();
}

TEST_F(ReplicaDevicesTest, NoPsTaskIsAnError) {
  Build();
  graph_ = b_.graph();
  ReplicaDeviceOptions o;
  o.worker_task = kWorker;
  EXPECT_TRUE(absl::IsInvalidArgument(AssignReplicaDevices(o, &graph_).status()));
}

}  // namespace
}  // namespace models
}  // namespace sluice
