// Spec for the training files' record: what it holds, and which changes a
// resume is told about (appended, new, gone, missing) and which not (order).
#include "models/training/input_files.h"

#include "engine/platform/test_dirs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace training {
namespace {

using ::testing::ElementsAre;

TEST(DescribeInputFilesTest, HoldsEachFilesSizeOrMissing) {
  const std::string dir = FreshTestDir("describe");
  Env* env = Env::Default();
  ASSERT_TRUE(WriteStringToFile(env, dir + "/a", "12345").ok());
  ASSERT_TRUE(WriteStringToFile(env, dir + "/b", "").ok());
  EXPECT_EQ(DescribeInputFiles(env, {dir + "/a", dir + "/b", dir + "/c"}),
            "5 " + dir + "/a\n0 " + dir + "/b\nmissing " + dir + "/c\n");
}

TEST(InputFileChangesTest, TheSameFilesInAnotherOrderAreNoChange) {
  EXPECT_TRUE(InputFileChanges("5 /d/a\n7 /d/b\n", "7 /d/b\n5 /d/a\n").empty());
  EXPECT_TRUE(InputFileChanges("", "").empty());
}

TEST(InputFileChangesTest, NamesEachFileThatGrewCameWentOrVanished) {
  const std::string before = "5 /d/a\n7 /d/b\n9 /d/c\nmissing /d/e\n4 /d/f\n";
  const std::string now = "6 /d/a\n7 /d/b\n3 /d/new\n2 /d/e\nmissing /d/f\n";
  EXPECT_THAT(InputFileChanges(before, now),
              ElementsAre("/d/a: 6 bytes, was 5", "/d/new: new", "/d/e: 2 bytes, missing before", "/d/f: missing",
                          "/d/c: gone"));
}

TEST(InputFileChangesTest, LinesThatDoNotParseAreSkipped) {
  // A hand-edited or truncated record warns about less, never about nonsense.
  EXPECT_THAT(InputFileChanges("5 /d/a\ngarbage\nx9 /d/b\n12\n", "5 /d/a\n"), ElementsAre());
  EXPECT_THAT(InputFileChanges("5 /d/a\n", "5 /d/a\n1 /d/with space\n"), ElementsAre("/d/with space: new"));
}

}  // namespace
}  // namespace training
}  // namespace sluice
