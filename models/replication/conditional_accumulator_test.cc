// The accumulator of synchronous replication: averaging, stale gradients,
// waiting takers, cancellation and bad gradients; the same for the sparse form.
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

// ---- The sparse form ----

struct SparseTaken {
  bool called = false;
  absl::Status status;
  Tensor indices, values;
};

ConditionalAccumulator::SparseTakeCallback Into(SparseTaken* t) {
  return [t](const absl::Status& s, Tensor indices, Tensor values) {
    t->called = true;
    t->status = s;
    t->indices = std::move(indices);
    t->values = std::move(values);
  };
}

std::shared_ptr<ConditionalAccumulator> MakeSparse() {
  auto a = ConditionalAccumulator::CreateSparse("emb/grad", DT_FLOAT, PartialShape::FromDims({1000000, 2}),
                                                ConditionalAccumulator::Reduction::kMean);
  EXPECT_TRUE(a.ok()) << a.status();
  return *a;
}

Tensor Rows(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size()) / 2;
  return Tensor::FromVector<float>(v, TensorShape({n, 2}));
}

TEST(SparseConditionalAccumulator, AveragesRowsOverTheGradientsTaken) {
  auto a = MakeSparse();
  SparseTaken taken;
  a->TryTakeSparseGradient(2, nullptr, Into(&taken));
  // Row 999999 in one gradient, row 7 in both (twice in the first).
  ASSERT_TRUE(a->ApplySparseGradient(0, Tensor::FromVector<int64_t>({7, 999999, 7}), Rows({1, 2, 5, 6, 3, 4})).ok());
  EXPECT_FALSE(taken.called);
  ASSERT_TRUE(a->ApplySparseGradient(0, Tensor::FromVector<int64_t>({7}), Rows({4, 2})).ok());
  ASSERT_TRUE(taken.called);
  ASSERT_TRUE(taken.status.ok()) << taken.status;
  EXPECT_EQ(taken.indices.SummarizeValue(10), "7 999999");
  // Mean over the 2 gradients, as the dense sum would be: (1+3+4)/2, (2+4+2)/2; 5/2, 6/2.
  EXPECT_EQ(taken.values.shape(), TensorShape({2, 2}));
  EXPECT_EQ(taken.values.SummarizeValue(10), "4 4 2.5 3");
  EXPECT_EQ(a->last_taken(), 2);
  EXPECT_EQ(a->global_step(), 1);
  // Stale rows are dropped and counted.
  ASSERT_TRUE(a->ApplySparseGradient(0, Tensor::FromVector<int64_t>({1}), Rows({1, 1})).ok());
  EXPECT_EQ(a->num_stale(), 1);
  EXPECT_EQ(a->num_accumulated(), 0);
}

TEST(SparseConditionalAccumulator, FloatSumsAreFloatSums) {
  auto a = MakeSparse();
  // x + y rounds to x in float; x + 2y does not: a sum kept in double and
  // rounded once would differ from the dense accumulator's float sum.
  volatile float x = 1.0f, y = 4.5e-8f;
  for (float v : {static_cast<float>(x), static_cast<float>(y), static_cast<float>(y)}) {
    ASSERT_TRUE(a->ApplySparseGradient(0, Tensor::FromVector<int64_t>({3}), Rows({v, 0})).ok());
  }
  SparseTaken taken;
  a->TryTakeSparseGradient(3, nullptr, Into(&taken));
  ASSERT_TRUE(taken.called && taken.status.ok());
  volatile float sum = x + y;
  sum = sum + y;
  EXPECT_EQ(static_cast<float>(sum), 1.0f);
  EXPECT_EQ(taken.values.data<float>()[0], sum / 3.0f);
  EXPECT_NE(taken.values.data<float>()[0], static_cast<float>((1.0 + 2.0 * 4.5e-8) / 3.0));
}

TEST(SparseConditionalAccumulator, BadRowsAreErrorsAndKindsDoNotMix) {
  auto a = MakeSparse();
  absl::Status s = a->ApplySparseGradient(0, Tensor::FromVector<int64_t>({1000000}), Rows({1, 2}));
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("index 1000000 at position 0 is out of range [0, 1000000)"), std::string::npos) << s;
  s = a->ApplySparseGradient(0, Tensor::FromVector<int32_t>({1}), Rows({1, 2}));
  EXPECT_NE(s.message().find("int64 vector"), std::string::npos) << s;
  s = a->ApplySparseGradient(0, Tensor::FromVector<int64_t>({1, 2}), Rows({1, 2}));
  EXPECT_NE(s.message().find("one row per index"), std::string::npos) << s;
  s = a->ApplySparseGradient(0, Tensor::FromVector<int64_t>({1}), Tensor::FromVector<float>({1, 2, 3}, TensorShape({1, 3})));
  EXPECT_NE(s.message().find("emb/grad"), std::string::npos) << s;
  EXPECT_TRUE(absl::IsInvalidArgument(a->ApplyGradient(0, Tensor::FromVector<float>({1, 2}))));
  Taken dense;
  a->TryTakeGradient(1, nullptr, Into(&dense));
  EXPECT_TRUE(dense.called && absl::IsInvalidArgument(dense.status));
  SparseTaken sparse;
  Make()->TryTakeSparseGradient(1, nullptr, Into(&sparse));
  EXPECT_TRUE(sparse.called && absl::IsInvalidArgument(sparse.status));
  EXPECT_FALSE(ConditionalAccumulator::CreateSparse("s", DT_FLOAT, PartialShape::FromDims({}),
                                                    ConditionalAccumulator::Reduction::kMean)
                   .ok());
}

TEST(SparseConditionalAccumulator, AWaitingTakerIsCancelledWithTheStep) {
  auto a = MakeSparse();
  CancellationManager cm;
  SparseTaken taken;
  a->TryTakeSparseGradient(1, &cm, Into(&taken));
  EXPECT_FALSE(taken.called);
  cm.StartCancel();
  ASSERT_TRUE(taken.called);
  EXPECT_TRUE(absl::IsCancelled(taken.status)) << taken.status;
}

}  // namespace
}  // namespace sluice
