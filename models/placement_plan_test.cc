// Spec for the placement plan: per-device nodes, step nodes, variables
// (a shared variable counted once), FLOPs; per device pair the tensors and
// bytes that cross in a step, one per (tensor, destination device) however
// many nodes read it there, control edges apart; and its printout.
#include "models/placement_plan.h"

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/framework/device.h"
#include "engine/framework/node_def_util.h"
#include "engine/graph/algorithm.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/graph/placer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace models {
namespace {

using ::testing::HasSubstr;

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

class PlacementPlanTest : public ::testing::Test {
 protected:
  PlacementPlanTest() {
    for (const char* name : {kCpu0, kCpu1}) {
      owned_.push_back(std::make_unique<Device>(name, "CPU", CpuAllocator(), 1));
      raw_.push_back(owned_.back().get());
    }
    set_ = std::make_unique<DeviceSet>(raw_);
  }

  std::string MatMul(const std::string& name, const std::string& a, const std::string& b) {
    return b_.Node(name, "MatMul", {a, b}, {{"T", MakeAttr(DT_FLOAT)}});
  }

  // Places (simple placer) and plans with the step given by `roots`.
  PlacementPlan Plan(const std::vector<std::string>& roots) {
    auto g = GraphFromGraphDef(b_.graph());
    EXPECT_TRUE(g.ok()) << g.status();
    graph_ = std::move(g).value();
    std::vector<int> device_of;
    PlacementOptions options;
    options.devices = set_.get();
    options.device_indices = &device_of;
    absl::Status s = Place(options, graph_.get());
    EXPECT_TRUE(s.ok()) << s;
    auto costs = CostModel::Estimate(*graph_);
    EXPECT_TRUE(costs.ok()) << costs.status();
    std::vector<Node*> root_nodes;
    for (const std::string& r : roots) root_nodes.push_back(graph_->FindNode(r));
    return PlanPlacement(*graph_, device_of, *set_, *costs, ReverseReachable(*graph_, root_nodes));
  }

  GraphDefBuilder b_;
  std::vector<std::unique_ptr<Device>> owned_;
  std::vector<Device*> raw_;
  std::unique_ptr<DeviceSet> set_;
  std::unique_ptr<Graph> graph_;
};

TEST_F(PlacementPlanTest, CountsNodesVariablesFlopsAndCrossingTensors) {
  // x [8,16] on CPU:0; w (a variable [16,4]) and two readers of x on CPU:1;
  // a node outside the step on CPU:1.
  b_.Const("x", Tensor(DT_FLOAT, TensorShape({8, 16})));
  b_.Variable("w", DT_FLOAT, TensorShape({16, 4}));
  b_.FindNode("w")->set_device("/device:CPU:1");
  MatMul("y1", "x", "w");
  MatMul("y2", "x", "w");
  // A value reader is not tied to the variable's device: pin both.
  b_.FindNode("y1")->set_device("/device:CPU:1");
  b_.FindNode("y2")->set_device("/device:CPU:1");
  b_.Binary("Add", "sum", "y1", "y2", DT_FLOAT);
  b_.NoOp("after_x", {"x"});
  b_.FindNode("after_x")->set_device("/device:CPU:1");
  b_.Identity("off_step", "sum", DT_FLOAT);
  const PlacementPlan plan = Plan({"sum", "after_x"});
  ASSERT_EQ(plan.devices.size(), 2u);
  const DevicePlan& d0 = plan.devices[0];
  const DevicePlan& d1 = plan.devices[1];
  EXPECT_EQ(d0.device, kCpu0);
  EXPECT_EQ(d0.nodes, 1);  // x
  EXPECT_EQ(d1.nodes, 6);  // w, y1, y2, sum, after_x, off_step
  EXPECT_EQ(d1.step_nodes, 5);
  EXPECT_EQ(d1.variable_elements, 64);
  EXPECT_EQ(d1.variable_bytes, 64 * 4);
  EXPECT_DOUBLE_EQ(d1.step_flops, 2 * (2.0 * 8 * 4 * 16) + 8 * 4);
  // x crosses once for both readers; the control edge apart.
  ASSERT_EQ(plan.links.size(), 1u);
  EXPECT_EQ(plan.links[0].from, 0);
  EXPECT_EQ(plan.links[0].to, 1);
  EXPECT_EQ(plan.links[0].tensors, 1);
  EXPECT_EQ(plan.links[0].bytes, 8 * 16 * 4);
  EXPECT_EQ(plan.links[0].controls, 1);
}

TEST_F(PlacementPlanTest, ASharedVariableCountsOnce) {
  b_.Variable("v", DT_FLOAT, TensorShape({10}));
  b_.Variable("eval/v", DT_FLOAT, TensorShape({10}));
  (*b_.FindNode("eval/v")->mutable_attr())["shared_name"] = MakeAttr("v");
  (*b_.FindNode("v")->mutable_attr())["shared_name"] = MakeAttr("v");
  b_.Identity("read", "v", DT_FLOAT);
  const PlacementPlan plan = Plan({"read"});
  EXPECT_EQ(plan.devices[0].variable_elements, 10);
  EXPECT_TRUE(plan.links.empty());
}

TEST_F(PlacementPlanTest, PrintsOneLinePerDeviceAndPerLink) {
  b_.Const("x", Tensor(DT_FLOAT, TensorShape({256, 256})));
  b_.Identity("y", "x", DT_FLOAT);
  b_.FindNode("y")->set_device("/device:CPU:1");
  PlacementPlan plan = Plan({"y"});
  plan.placer = "simple placer";
  std::ostringstream out;
  PrintPlacementPlan(plan, *set_, out);
  EXPECT_THAT(out.str(), HasSubstr("  placement      simple placer\n"));
  EXPECT_THAT(out.str(), HasSubstr("    CPU:0  nodes 1 (step 1)"));
  EXPECT_THAT(out.str(), HasSubstr("    CPU:1  nodes 1 (step 1)"));
  EXPECT_THAT(out.str(), HasSubstr("    CPU:0 -> CPU:1  1 tensor, 256.0 KiB per step\n"));
}

// What a training step fetches every step: the train op and the loss (and
// the staging Run's stage op), not the global norm and metrics of summary
// steps.
TEST(TrainingStepRoots, AreTheTrainOpAndTheLoss) {
  TrainingGraph tg;
  tg.train_op = "train/apply";
  tg.loss = "loss/mean:0";
  tg.global_norm = "global_norm/norm:0";
  tg.train_metrics = {{"accuracy", "accuracy/mean:0"}};
  EXPECT_EQ(TrainingStepRoots(tg), (std::vector<std::string>{"train/apply", "loss/mean"}));
  tg.loss.clear();
  EXPECT_EQ(TrainingStepRoots(tg), (std::vector<std::string>{"train/apply"}));
  // A staged batch is dequeued (and copied) in the Run beside each step.
  tg.train_input.stage_op = "input/train/batch/stage";
  EXPECT_EQ(TrainingStepRoots(tg), (std::vector<std::string>{"train/apply", "input/train/batch/stage"}));
}

}  // namespace
}  // namespace models
}  // namespace sluice
