// The accumulator of synchronous replication: averaging, stale gradients,
// waiting takers, cancellation and bad gradients.
#include "models/replication/conditional_accumulator.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

std::shared_ptr<ConditionalAccumulator> Make(ConditionalAccumulator::Reduction r = ConditionalAccumulator::Reduction::kMean) {
  auto a = ConditionalAccumulator::Create("w/grad", DT_FLOAT, PartialShape{2}, r);
  EXPECT_TRUE(a.ok()) << a.status();
  return *a;
}

struct Taken {
  bool called = false;
  absl::Status status;
  Tensor value;
};

ConditionalAccumulator::TakeCallback Into(Taken* t) {
  return [t](const absl::Status& s, Tensor v) {
    t->called = true;
    t->status = s;
    t->value = std::move(v);
  };
}

TEST(ConditionalAccumulator, AveragesTheGradientsOfAStep) {
  auto a = Make();
  Taken taken;
  a->TryTakeGradient(2, nullptr, Into(&taken));
  ASSERT_TRUE(a->ApplyGradient(0, Tensor::FromVector<float>({1, 2})).ok());
  EXPECT_FALSE(taken.called);
  ASSERT_TRUE(a->ApplyGradient(0, Tensor::FromVector<float>({3, 6})).ok());
  ASSERT_TRUE(taken.called);
  ASSERT_TRUE(taken.status.ok()) << taken.status;
  EXPECT_FLOAT_EQ(taken.value.data<float>()[0], 2);
  EXPECT_FLOAT_EQ(taken.value.data<float>()[1], 4);
  EXPECT_EQ(a->global_step(), 1);
  EXPECT_EQ(a->num_accumulated(), 0);
  EXPECT_EQ(a->last_taken(), 2);
}

TEST(ConditionalAccumulator, SumsInEitherOrderToTheSameBits) {
  const float x = 0.1f, y = 1e-8f;
  for (bool swap : {false, true}) {
    auto a = Make(ConditionalAccumulator::Reduction::kSum);
    ASSERT_TRUE(a->ApplyGradient(0, Tensor::FromVector<float>({swap ? y : x, 1})).ok());
    ASSERT_TRUE(a->ApplyGradient(0, Tensor::FromVector<float>({swap ? x : y, 2})).ok());
    Taken taken;
    a->TryTakeGradient(2, nullptr, Into(&taken));
    ASSERT_TRUE(taken.called && taken.status.ok());
    EXPECT_EQ(taken.value.data<float>()[0], x + y);
    EXPECT_EQ(taken.value.data<float>()[1], 3.0f);
  }
}

TEST(ConditionalAccumulator, DropsAndCountsStaleGradients) {
  auto a = Make();
  a->SetGlobalStep(5);
  ASSERT_TRUE(a->ApplyGradient(4, Tensor::FromVector<float>({100, 100})).ok());  // stale
  EXPECT_EQ(a->num_stale(), 1);
  EXPECT_EQ(a->num_accumulated(), 0);
  ASSERT_TRUE(a->ApplyGradient(5, Tensor::FromVector<float>({1, 1})).ok());
  Taken taken;
  a->TryTakeGradient(1, nullptr, Into(&taken));
  ASSERT_TRUE(taken.called && taken.status.ok());
  EXPECT_FLOAT_EQ(taken.value.data<float>()[0], 1);
  // The backup worker's gradient for step 5 arrives after the take: stale.
  ASSERT_TRUE(a->ApplyGradient(5, Tensor::FromVector<float>({7, 7})).ok());
  EXPECT_EQ(a->num_stale(), 2);
  EXPECT_EQ(a->global_step(), 6);
}

TEST(ConditionalAccumulator, SettingTheStepKeepsOnlyGradientsOfThatStep) {
  // A worker that started before the chief set the step: its gradient, of
  // the restored step, counts.
  auto a = Make();
  ASSERT_TRUE(a->ApplyGradient(7, Tensor::FromVector<float>({2, 2})).ok());
  a->SetGlobalStep(7);
  EXPECT_EQ(a->num_accumulated(), 1);
  // A restore back to step 3: the gradients of step 7 no longer fit the weights.
  a->SetGlobalStep(3);
  EXPECT_EQ(a->num_accumulated(), 0);
  EXPECT_EQ(a->num_stale(), 1);
  EXPECT_EQ(a->global_step(), 3);
}

TEST(ConditionalAccumulator, TakesEverythingAccumulatedWhenMoreThanRequired) {
  auto a = Make();
  for (float v : {1.f, 2.f, 6.f}) ASSERT_TRUE(a->ApplyGradient(0, Tensor::FromVector<float>({v, v})).ok());
  Taken taken;
  a->TryTakeGradient(2, nullptr, Into(&taken));
  ASSERT_TRUE(taken.called && taken.status.ok());
  EXPECT_FLOAT_EQ(taken.value.data<float>()[0], 3);
}

TEST(ConditionalAccumulator, AWaitingTakeIsCancelledWithItsStep) {
  auto a = Make();
  CancellationManager cm;
  Taken taken;
  a->TryTakeGradient(2, &cm, Into(&taken));
  EXPECT_FALSE(taken.called);
  cm.StartCancel();
  ASSERT_TRUE(taken.called);
  EXPECT_TRUE(absl::IsCancelled(taken.status)) << taken.status;
  // The gradients go to the next taker instead.
  ASSERT_TRUE(a->ApplyGradient(0, Tensor::FromVector<float>({1, 1})).ok());
  Taken next;
  a->TryTakeGradient(1, nullptr, Into(&next));
  EXPECT_TRUE(next.called && next.status.ok());
}

TEST(ConditionalAccumulator, ATakeInACancelledStepFailsAtOnce) {
  auto a = Make();
  CancellationManager cm;
  cm.StartCancel();
  Taken taken;
  a->TryTakeGradient(1, &cm, Into(&taken));
  ASSERT_TRUE(taken.called);
  EXPECT_TRUE(absl::IsCancelled(taken.status));
}

TEST(ConditionalAccumulator, BadGradientsAreErrorsThatNameTheAccumulator) {
  auto a = Make();
  absl::Status s = a->ApplyGradient(0, Tensor::FromVector<float>({1, 2, 3}));
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("w/grad"), std::string::npos) << s;
  s = a->ApplyGradient(0, Tensor::FromVector<double>({1, 2}));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  Taken taken;
  a->TryTakeGradient(0, nullptr, Into(&taken));
  EXPECT_TRUE(taken.called && absl::IsInvalidArgument(taken.status));
  EXPECT_FALSE(ConditionalAccumulator::Create("x", DT_INT32, PartialShape{}, ConditionalAccumulator::Reduction::kMean).ok());
}

TEST(ConditionalAccumulator, AnUnknownDeclaredShapeTakesTheFirstGradientsShape) {
  auto a = ConditionalAccumulator::Create("any", DT_FLOAT, PartialShape::Unknown(),
                                          ConditionalAccumulator::Reduction::kMean);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->ApplyGradient(0, Tensor::FromVector<float>({1, 2})).ok());
  EXPECT_TRUE(absl::IsInvalidArgument((*a)->ApplyGradient(0, Tensor::FromVector<float>({1, 2, 3}))));
}

}  // namespace
}  // namespace sluice
