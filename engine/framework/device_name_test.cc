// Spec for device names: what parses (full, partial, wildcard, legacy), the
// canonical form, matching, compatibility and merging, and the message of
// every malformed name.
#include "engine/framework/device_name.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

DeviceName MustParse(const std::string& s) {
  auto d = ParseDeviceName(s);
  EXPECT_TRUE(d.ok()) << s << ": " << d.status();
  return d.ok() ? *d : DeviceName();
}

TEST(ParseDeviceNameTest, FullNameSetsEveryPart) {
  DeviceName d = MustParse("/job:ps/replica:2/task:1/device:CPU:3");
  EXPECT_TRUE(d.has_job);
  EXPECT_EQ(d.job, "ps");
  EXPECT_TRUE(d.has_replica);
  EXPECT_EQ(d.replica, 2);
  EXPECT_TRUE(d.has_task);
  EXPECT_EQ(d.task, 1);
  EXPECT_TRUE(d.has_type);
  EXPECT_EQ(d.type, "CPU");
  EXPECT_TRUE(d.has_id);
  EXPECT_EQ(d.id, 3);
  EXPECT_TRUE(IsFullySpecified(d));
}

TEST(ParseDeviceNameTest, EmptyStringIsTheEmptySpec) {
  DeviceName d = MustParse("");
  EXPECT_FALSE(d.has_job || d.has_replica || d.has_task || d.has_type || d.has_id);
  EXPECT_FALSE(IsFullySpecified(d));
  EXPECT_EQ(DeviceNameToString(d), "");
}

TEST(ParseDeviceNameTest, PartialNamesSetOnlyTheirParts) {
  DeviceName job = MustParse("/job:ps");
  EXPECT_TRUE(job.has_job);
  EXPECT_FALSE(job.has_replica || job.has_task || job.has_type || job.has_id);

  DeviceName task = MustParse("/task:1");
  EXPECT_TRUE(task.has_task);
  EXPECT_EQ(task.task, 1);
  EXPECT_FALSE(task.has_job || task.has_type);

  DeviceName any_cpu = MustParse("/device:CPU:*");
  EXPECT_TRUE(any_cpu.has_type);
  EXPECT_EQ(any_cpu.type, "CPU");
  EXPECT_FALSE(any_cpu.has_id);

  DeviceName type_only = MustParse("/device:GPU");
  EXPECT_TRUE(type_only.has_type);
  EXPECT_EQ(type_only.type, "GPU");
  EXPECT_FALSE(type_only.has_id);

  DeviceName star_task = MustParse("/job:worker/task:*");
  EXPECT_TRUE(star_task.has_job);
  EXPECT_FALSE(star_task.has_task);
}

TEST(ParseDeviceNameTest, PartsMayComeInAnyOrder) {
  EXPECT_EQ(MustParse("/device:CPU:0/task:1/job:ps/replica:0"), MustParse("/job:ps/replica:0/task:1/device:CPU:0"));
}

TEST(ParseDeviceNameTest, LegacyFormsMeanTheDevicePart) {
  EXPECT_EQ(MustParse("/cpu:0"), MustParse("/device:CPU:0"));
  EXPECT_EQ(MustParse("/gpu:1"), MustParse("/device:GPU:1"));
  EXPECT_EQ(MustParse("/CPU:2"), MustParse("/device:CPU:2"));
  EXPECT_EQ(MustParse("/device:cpu:0"), MustParse("/device:CPU:0"));
  EXPECT_EQ(MustParse("/job:ps/cpu:*"), MustParse("/job:ps/device:CPU:*"));
}

TEST(DeviceNameToStringTest, IsCanonicalAndParsesBack) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/job:ps/replica:0/task:1/device:CPU:0", "/job:ps/replica:0/task:1/device:CPU:0"},
      {"/task:1/job:ps", "/job:ps/task:1"},
      {"/cpu:0", "/device:CPU:0"},
      {"/device:gpu:*", "/device:GPU:*"},
      {"/device:GPU", "/device:GPU:*"},
      {"/device:*:3", "/device:*:3"},
      {"/job:*/replica:*/task:*/device:*:*", ""},
  };
  for (const auto& [in, want] : cases) {
    DeviceName d = MustParse(in);
    EXPECT_EQ(DeviceNameToString(d), want) << in;
    EXPECT_EQ(MustParse(DeviceNameToString(d)), d) << in;
  }
}

TEST(DeviceNameMatchesTest, EverySetPartMustBeEqual) {
  DeviceName ps1 = MustParse("/job:ps/replica:0/task:1/device:CPU:0");
  EXPECT_TRUE(DeviceNameMatches(MustParse(""), ps1));
  EXPECT_TRUE(DeviceNameMatches(MustParse("/job:ps"), ps1));
  EXPECT_TRUE(DeviceNameMatches(MustParse("/task:1/device:CPU:*"), ps1));
  EXPECT_TRUE(DeviceNameMatches(ps1, ps1));
  EXPECT_FALSE(DeviceNameMatches(MustParse("/job:worker"), ps1));
  EXPECT_FALSE(DeviceNameMatches(MustParse("/task:0"), ps1));
  EXPECT_FALSE(DeviceNameMatches(MustParse("/device:GPU:*"), ps1));
  EXPECT_FALSE(DeviceNameMatches(MustParse("/device:CPU:1"), ps1));
  EXPECT_FALSE(DeviceNameMatches(MustParse("/replica:1"), ps1));
  // A part set in the spec but not in the name does not match.
  EXPECT_FALSE(DeviceNameMatches(MustParse("/job:ps"), MustParse("/task:1")));
}

TEST(DeviceNamesCompatibleTest, OnlyPartsSetInBothCount) {
  EXPECT_TRUE(DeviceNamesCompatible(MustParse("/job:ps"), MustParse("/device:CPU:0")));
  EXPECT_TRUE(DeviceNamesCompatible(MustParse("/job:ps/task:1"), MustParse("/task:1/device:CPU:0")));
  EXPECT_TRUE(DeviceNamesCompatible(MustParse(""), MustParse("/job:ps")));
  EXPECT_FALSE(DeviceNamesCompatible(MustParse("/job:ps"), MustParse("/job:worker")));
  EXPECT_FALSE(DeviceNamesCompatible(MustParse("/device:CPU:0"), MustParse("/device:CPU:1")));
  EXPECT_FALSE(DeviceNamesCompatible(MustParse("/device:CPU:*"), MustParse("/device:GPU:*")));
}

TEST(MergeDeviceNamesTest, FillsMissingParts) {
  DeviceName target = MustParse("/job:ps");
  ASSERT_TRUE(MergeDeviceNames(MustParse("/task:1/device:CPU:0"), &target).ok());
  EXPECT_EQ(DeviceNameToString(target), "/job:ps/task:1/device:CPU:0");
  // A part already set stays when the other agrees.
  ASSERT_TRUE(MergeDeviceNames(MustParse("/job:ps/replica:0"), &target).ok());
  EXPECT_EQ(DeviceNameToString(target), "/job:ps/replica:0/task:1/device:CPU:0");
}

TEST(MergeDeviceNamesTest, ConflictNamesThePartAndBothValuesAndChangesNothing) {
  struct Case {
    std::string target, other, part, a, b;
  };
  const std::vector<Case> cases = {
      {"/job:ps", "/job:worker/task:3", "job", "'worker'", "'ps'"},
      {"/replica:0", "/replica:1", "replica", "'1'", "'0'"},
      {"/task:1", "/task:2", "task", "'2'", "'1'"},
      {"/device:CPU:0", "/device:GPU:0", "device type", "'GPU'", "'CPU'"},
      {"/device:CPU:0", "/device:CPU:1", "device id", "'1'", "'0'"},
  };
  for (const Case& c : cases) {
    DeviceName target = MustParse(c.target);
    const DeviceName before = target;
    absl::Status s = MergeDeviceNames(MustParse(c.other), &target);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.target << " + " << c.other;
    EXPECT_THAT(s.message(), HasSubstr(c.part + " " + c.a + " conflicts with " + c.part + " " + c.b));
    EXPECT_EQ(target, before) << "a failed merge must leave the target as it was";
  }
}

TEST(ParseDeviceNameTest, MalformedNamesSayWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"job:ps", "must start with '/'"},
      {"/job:ps/tsk:1", "unknown part 'tsk' (did you mean 'task'?)"},
      {"/jobs:ps", "unknown part 'jobs' (did you mean 'job'?)"},
      {"/tpu:0", "unknown part 'tpu'"},
      {"/device:CPU:x", "device id 'x' is not a number"},
      {"/task:one", "task 'one' is not a number"},
      {"/replica:-1", "replica must be >= 0, got '-1'"},
      {"/device:CPU:-2", "device id must be >= 0, got '-2'"},
      {"/task:99999999999", "task '99999999999' is out of range"},
      {"/job:a/job:b", "duplicate part 'job'"},
      {"/cpu:0/device:CPU:1", "duplicate part 'device'"},
      {"/device:C-PU:0", "bad device type 'C-PU'"},
      {"/device:0:0", "bad device type '0'"},
      {"/device:", "part 'device' has no type"},
      {"/job:", "bad job name ''"},
      {"/job:ps/", "empty part"},
      {"/job:ps//task:0", "empty part"},
      {"/task", "part 'task' has no ':<value>'"},
      {"/task:", "part 'task' has no value"},
  };
  for (const auto& [name, what] : cases) {
    auto d = ParseDeviceName(name);
    ASSERT_FALSE(d.ok()) << name;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(d.status().message(), HasSubstr("device '" + name + "': ")) << name;
    EXPECT_THAT(d.status().message(), HasSubstr(what)) << name;
  }
}

}  // namespace
}  // namespace sluice
