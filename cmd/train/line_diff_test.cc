// Spec for LineDiff: changed, inserted and removed lines, each shown once.
#include "cmd/train/line_diff.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(LineDiff, SameTextsHaveNoDifference) { EXPECT_EQ(LineDiff("a\nb\n", "a\nb\n"), ""); }

TEST(LineDiff, AChangedLineIsOneRemovalAndOneAddition) {
  EXPECT_EQ(LineDiff("x {\n  units: 512\n}\n", "x {\n  units: 256\n}\n"), "  -   units: 512\n  +   units: 256\n");
}

// An inserted line once made every later line show as changed.
TEST(LineDiff, AnInsertedLineIsOneAdditionAndTheRestStaysQuiet) {
  EXPECT_EQ(LineDiff("optimizer {\n  momentum {\n  }\n}\ntrain {\n  steps: 10\n}\n",
                     "optimizer {\n  adam {\n    learning_rate: 0.001\n  }\n}\ntrain {\n  steps: 10\n}\n"),
            "  -   momentum {\n  +   adam {\n  +     learning_rate: 0.001\n");
}

TEST(LineDiff, ARemovedLineIsOneRemoval) {
  EXPECT_EQ(LineDiff("a\nb\nc\nd\n", "a\nc\nd\n"), "  - b\n");
}

}  // namespace
}  // namespace sluice
