// DeviceMgr::Local()'s intra-op threads beside an accelerator: a registered
// factory's devices come after the CPU device, and with one present (and no
// count set) the CPU device runs at most the count set by
// SetLocalIntraOpThreadsBesideAnAccelerator instead of one per core. The
// factory here makes a stand-in "XPU" device (a Device over the CPU
// allocator); LocalIntraOpThreads is the policy as a function.
#include <memory>
#include <string>
#include <vector>

#include "engine/framework/device.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

const bool registered = [] {
  RegisterLocalDeviceFactory("XPU", [](const std::string& task) {
    std::vector<std::unique_ptr<Device>> devices;
    devices.push_back(std::make_unique<Device>(task + "/device:XPU:0", "XPU", CpuAllocator(), 1));
    return devices;
  });
  return true;
}();

TEST(DeviceDefaults, OnePerCoreUnlessSetOrCappedBesideAnAccelerator) {
  EXPECT_EQ(LocalIntraOpThreads(0, false, 2, 16), 16);
  EXPECT_EQ(LocalIntraOpThreads(0, true, 2, 16), 2);
  EXPECT_EQ(LocalIntraOpThreads(0, true, 0, 16), 16);  // no cap asked for
  EXPECT_EQ(LocalIntraOpThreads(0, true, 4, 2), 2);    // never more than the cores
  EXPECT_EQ(LocalIntraOpThreads(3, true, 2, 16), 3);   // a set count wins
  EXPECT_EQ(LocalIntraOpThreads(24, false, 2, 16), 24);
}

TEST(DeviceDefaults, TheLocalCpuComesFirstWithTheThreadsForAnAccelerator) {
  ASSERT_TRUE(registered);
  EXPECT_FALSE(DeviceMgr::SetLocalIntraOpThreadsBesideAnAccelerator(-1).ok());
  // One thread: on any machine with two or more cores, not the per-core default.
  ASSERT_TRUE(DeviceMgr::SetLocalIntraOpThreadsBesideAnAccelerator(1).ok());
  const auto& devices = DeviceMgr::Local()->devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]->device_type(), "CPU");
  EXPECT_EQ(DeviceMgr::Local()->HostCpu(), devices[0].get());
  EXPECT_EQ(devices[1]->name(), "/job:localhost/replica:0/task:0/device:XPU:0");
  EXPECT_EQ(DeviceMgr::Local()->HostCpu()->intra_op_threads(), 1);
  // Made: the cap can no longer change.
  EXPECT_TRUE(DeviceMgr::SetLocalIntraOpThreadsBesideAnAccelerator(1).ok());
  EXPECT_FALSE(DeviceMgr::SetLocalIntraOpThreadsBesideAnAccelerator(2).ok());
}

}  // namespace
}  // namespace sluice
