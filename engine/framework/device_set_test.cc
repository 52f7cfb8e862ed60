// Spec for DeviceSet: dense indices in the given order, lookup by full name,
// partial-name matching in ascending index order, the distinct device types,
// and one non-zero process incarnation shared by every local device.
#include "engine/framework/device_set.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Two tasks of job "worker" and one of "ps"; task 1 of "worker" has a GPU.
class DeviceSetTest : public ::testing::Test {
 protected:
  DeviceSetTest() {
    Add("/job:worker/replica:0/task:0/device:CPU:0", kDeviceCpu);
    Add("/job:worker/replica:0/task:0/device:CPU:1", kDeviceCpu);
    Add("/job:worker/replica:0/task:1/device:GPU:0", kDeviceGpu);
    Add("/job:ps/replica:0/task:0/device:CPU:0", kDeviceCpu);
    Add("/job:worker/replica:0/task:1/device:CPU:0", kDeviceCpu);
  }
  void Add(const std::string& name, const std::string& type) {
    owned_.push_back(std::make_unique<Device>(name, type, CpuAllocator(), 1));
    raw_.push_back(owned_.back().get());
  }
  DeviceName Spec(const std::string& s) {
    auto d = ParseDeviceName(s);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : DeviceName();
  }

  std::vector<std::unique_ptr<Device>> owned_;
  std::vector<Device*> raw_;
};

TEST_F(DeviceSetTest, IndicesFollowTheGivenOrder) {
  DeviceSet set(raw_);
  ASSERT_EQ(set.num_devices(), 5);
  for (int i = 0; i < set.num_devices(); ++i) {
    EXPECT_EQ(set.device(i), raw_[i]);
    EXPECT_EQ(set.name(i), raw_[i]->name());
    EXPECT_EQ(DeviceNameToString(set.parsed_name(i)), raw_[i]->name());
  }
  EXPECT_EQ(set.parsed_name(2).type, "GPU");
  EXPECT_EQ(set.parsed_name(2).task, 1);
}

TEST_F(DeviceSetTest, IndexOfFindsFullNamesOnly) {
  DeviceSet set(raw_);
  EXPECT_EQ(set.IndexOf("/job:worker/replica:0/task:0/device:CPU:0"), 0);
  EXPECT_EQ(set.IndexOf("/job:ps/replica:0/task:0/device:CPU:0"), 3);
  EXPECT_EQ(set.IndexOf("/job:worker/replica:0/task:1/device:CPU:0"), 4);
  EXPECT_EQ(set.IndexOf("/job:ps"), -1);
  EXPECT_EQ(set.IndexOf("/job:ps/replica:0/task:0/device:CPU:1"), -1);
  EXPECT_EQ(set.IndexOf(""), -1);
}

TEST_F(DeviceSetTest, MatchingIsInAscendingIndexOrder) {
  DeviceSet set(raw_);
  EXPECT_THAT(set.Matching(Spec("")), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(set.Matching(Spec("/job:worker")), ElementsAre(0, 1, 2, 4));
  EXPECT_THAT(set.Matching(Spec("/device:CPU:*")), ElementsAre(0, 1, 3, 4));
  EXPECT_THAT(set.Matching(Spec("/device:CPU:0")), ElementsAre(0, 3, 4));
  EXPECT_THAT(set.Matching(Spec("/task:1")), ElementsAre(2, 4));
  EXPECT_THAT(set.Matching(Spec("/job:worker/task:1/device:GPU:*")), ElementsAre(2));
  EXPECT_THAT(set.Matching(Spec("/job:ps/device:GPU:*")), IsEmpty());
  EXPECT_THAT(set.Matching(Spec("/job:chief")), IsEmpty());
}

TEST_F(DeviceSetTest, DeviceTypesAreDistinctInIndexOrder) {
  EXPECT_THAT(DeviceSet(raw_).DeviceTypes(), ElementsAre("CPU", "GPU"));
  std::vector<Device*> gpu_first = {raw_[2], raw_[0], raw_[1]};
  EXPECT_THAT(DeviceSet(gpu_first).DeviceTypes(), ElementsAre("GPU", "CPU"));
}

TEST_F(DeviceSetTest, EveryLocalDeviceReportsTheProcessIncarnation) {
  const uint64_t incarnation = ProcessIncarnation();
  EXPECT_NE(incarnation, 0u);
  EXPECT_EQ(ProcessIncarnation(), incarnation) << "drawn once per process";
  DeviceSet set(raw_);
  for (int i = 0; i < set.num_devices(); ++i) EXPECT_EQ(set.incarnation(i), incarnation);
}

TEST_F(DeviceSetTest, RejectsWhatOnlyABugCanProduce) {
  EXPECT_DEATH(DeviceSet(std::vector<Device*>{}), "at least one device");
  EXPECT_DEATH(DeviceSet({raw_[0], raw_[1], raw_[0]}), "duplicate device");
  Device partial("/job:worker/device:CPU:0", kDeviceCpu, CpuAllocator(), 1);
  EXPECT_DEATH(DeviceSet({&partial}), "not a full device name");
}

}  // namespace
}  // namespace sluice
