// The progress line: formatting, ETA, and rates over the recent window (a slow first step
// leaves the estimate once it is out of the window).
#include "monitoring/progress.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(ProgressTest, FormatsEveryPart) {
  ProgressLine p;
  p.step = 1200;
  p.total_steps = 5000;
  p.loss = 0.43121;
  p.learning_rate = 0.05;
  p.examples_per_second = 12345.4;
  p.steps_per_second = 3.1;
  EXPECT_EQ(FormatProgress(p), "step 1200/5000 (24.0%) loss 0.4312 lr 0.05 12,345 ex/s 3.1 steps/s ETA 20m25s");
  p.total_steps = 0;
  p.examples_per_second = 0;
  p.steps_per_second = 0;
  EXPECT_EQ(FormatProgress(p), "step 1200 loss 0.4312 lr 0.05");
}

TEST(ProgressTest, Thousands) {
  EXPECT_EQ(FormatThousands(0), "0");
  EXPECT_EQ(FormatThousands(999), "999");
  EXPECT_EQ(FormatThousands(1000), "1,000");
  EXPECT_EQ(FormatThousands(1234567), "1,234,567");
  EXPECT_EQ(FormatThousands(-12345), "-12,345");
}

TEST(ProgressTest, CountOfSaysOneOrMany) {
  EXPECT_EQ(CountOf(1, "file", "files"), "1 file");
  EXPECT_EQ(CountOf(0, "file", "files"), "0 files");
  EXPECT_EQ(CountOf(43000, "sentence", "sentences"), "43,000 sentences");
}

TEST(ProgressTest, Eta) {
  EXPECT_EQ(FormatEta(absl::Seconds(45)), "45s");
  EXPECT_EQ(FormatEta(absl::Seconds(20 * 60 + 26)), "20m26s");
  EXPECT_EQ(FormatEta(absl::Hours(3) + absl::Minutes(5)), "3h05m");
  EXPECT_EQ(FormatEta(absl::Hours(51)), "2d03h");
  EXPECT_EQ(FormatEta(-absl::Seconds(3)), "0s");
}

TEST(ProgressTest, RatesOverTheWindow) {
  ProgressTracker t(/*total_steps=*/100, /*window=*/4);
  absl::Time now = absl::FromUnixSeconds(1000);
  t.OnStep(1, 10, 2.0, 0.1, now);
  EXPECT_EQ(t.Line().steps_per_second, 0);  // one point: no rate yet
  now += absl::Seconds(60);                 // a slow second step (e.g. graph setup)
  t.OnStep(2, 10, 1.5, 0.1, now);
  for (int s = 3; s <= 10; ++s) {
    now += absl::Milliseconds(500);
    t.OnStep(s, 10, 1.0, 0.1, now);
  }
  ProgressLine p = t.Line();
  EXPECT_EQ(p.step, 10);
  EXPECT_EQ(p.loss, 1.0);
  EXPECT_DOUBLE_EQ(p.steps_per_second, 2.0);
  EXPECT_DOUBLE_EQ(p.examples_per_second, 20.0);
  EXPECT_EQ(t.ToString(), "step 10/100 (10.0%) loss 1 lr 0.1 20 ex/s 2 steps/s ETA 45s");
}

}  // namespace
}  // namespace sluice
