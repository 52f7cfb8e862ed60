// The accumulator's ops through a session, as a sync replica's graph uses
// them: apply two workers' gradients, take their mean, count stale ones, and
// the errors a bad graph gets.
#include <thread>

#include "engine/framework/node_def_util.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

class AccumulatorOpsTest : public ::testing::Test {
 protected:
  void Build(const std::string& reduction = "MEAN") {
    b_.Node("acc", "ConditionalAccumulator", {},
            {{"dtype", MakeAttr(DT_FLOAT)},
             {"shape", MakeAttr(TensorShape({2}))},
             {"shared_name", MakeAttr("ops_test_acc_" + reduction)},
             {"reduction_type", MakeAttr(reduction)}});
    b_.Node("step", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT64)}});
    b_.Node("grad", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
    b_.Node("apply", "AccumulatorApplyGradient", {"acc", "step", "grad"}, {{"dtype", MakeAttr(DT_FLOAT)}});
    b_.Const("two", Tensor::Scalar<int32_t>(2));
    b_.Node("take", "AccumulatorTakeGradient", {"acc", "two"}, {{"dtype", MakeAttr(DT_FLOAT)}});
    b_.Node("set_step", "AccumulatorSetGlobalStep", {"acc", "step"});
    b_.Node("count", "AccumulatorNumAccumulated", {"acc"});
    b_.Node("stale", "AccumulatorNumStale", {"acc"});
    b_.Node("last_taken", "AccumulatorLastTaken", {"acc"});
    auto session = NewSession();
    ASSERT_TRUE(session.ok());
    session_ = std::move(session).value();
    ASSERT_TRUE(session_->Create(b_.graph()).ok());
  }
  absl::Status Apply(int64_t step, std::vector<float> grad) {
    std::vector<Tensor> out;
    return session_->Run({{"step", Tensor::Scalar<int64_t>(step)}, {"grad", Tensor::FromVector<float>(grad)}}, {},
                         {"apply"}, &out);
  }
  int64_t Fetch(const std::string& name) {
    std::vector<Tensor> out;
    absl::Status s = session_->Run({}, {name}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return -1;
    return out[0].dtype() == DT_INT32 ? out[0].scalar<int32_t>() : out[0].scalar<int64_t>();
  }

  GraphDefBuilder b_;
  std::unique_ptr<Session> session_;
};

TEST_F(AccumulatorOpsTest, TheChiefTakesTheMeanOnceTwoWorkersApplied) {
  Build();
  std::vector<Tensor> taken;
  absl::Status take_status;
  // The take waits (an async kernel) until both gradients are in.
  std::thread chief([&] { take_status = session_->Run({}, {"take"}, {}, &taken); });
  ASSERT_TRUE(Apply(0, {1, 10}).ok());
  ASSERT_TRUE(Apply(0, {3, 30}).ok());
  chief.join();
  ASSERT_TRUE(take_status.ok()) << take_status;
  EXPECT_FLOAT_EQ(taken[0].data<float>()[0], 2);
  EXPECT_FLOAT_EQ(taken[0].data<float>()[1], 20);
  EXPECT_EQ(Fetch("count"), 0);
  EXPECT_EQ(Fetch("last_taken"), 2);
  // The accumulator moved to step 1: a gradient of step 0 is stale now.
  ASSERT_TRUE(Apply(0, {5, 5}).ok());
  EXPECT_EQ(Fetch("stale"), 1);
  ASSERT_TRUE(Apply(1, {5, 5}).ok());
  EXPECT_EQ(Fetch("count"), 1);
}

TEST_F(AccumulatorOpsTest, SetGlobalStepMovesTheAccumulator) {
  Build("SUM");
  std::vector<Tensor> out;
  ASSERT_TRUE(session_->Run({{"step", Tensor::Scalar<int64_t>(7)}}, {}, {"set_step"}, &out).ok());
  ASSERT_TRUE(Apply(6, {1, 1}).ok());
  EXPECT_EQ(Fetch("stale"), 1);
  ASSERT_TRUE(Apply(7, {1, 2}).ok());
  ASSERT_TRUE(Apply(7, {1, 2}).ok());
  ASSERT_TRUE(session_->Run({}, {"take"}, {}, &out).ok());
  EXPECT_FLOAT_EQ(out[0].data<float>()[1], 4) << "SUM adds without dividing";
}

TEST_F(AccumulatorOpsTest, BadGradientsAndAttrsAreErrors) {
  Build();
  absl::Status s = Apply(0, {1, 2, 3});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("ops_test_acc_MEAN"), std::string::npos) << s;

  GraphDefBuilder bad;
  bad.Node("acc", "ConditionalAccumulator", {},
           {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({2}))}, {"reduction_type", MakeAttr("MAX")}});
  bad.Node("count", "AccumulatorNumAccumulated", {"acc"});
  auto session = NewSession();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(bad.graph()).ok());
  std::vector<Tensor> out;
  s = (*session)->Run({}, {"count"}, {}, &out);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("reduction_type"), std::string::npos) << s;
}

}  // namespace
}  // namespace sluice
