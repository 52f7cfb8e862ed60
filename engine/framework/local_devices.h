// This process's CPU devices: how many virtual CPU devices DeviceMgr::Local()
// creates (the experiment's `devices { cpu_devices: N }`), and device managers
// of N CPUs for tests that compare a 1-device and an N-device run in one
// process. Virtual CPU devices share the machine's cores; each has its own
// ResourceMgr (its own variables, queues and readers) and intra-op pool, so a
// graph placed across them runs as it would across real devices, with every
// cross-device tensor going through a Send/Recv pair.
// Thread safety: SetLocalCpuDeviceCount races with the first Local() like
// DeviceMgr::SetLocalIntraOpThreads does: call both before any session.
#ifndef SLUICE_ENGINE_FRAMEWORK_LOCAL_DEVICES_H_
#define SLUICE_ENGINE_FRAMEWORK_LOCAL_DEVICES_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "engine/framework/device.h"

namespace sluice {

// The most virtual CPU devices one process may create.
inline constexpr int kMaxLocalCpuDevices = 256;

// "/job:localhost/replica:0/task:0/device:CPU:<index>".
std::string LocalCpuDeviceName(int index);

// Sets how many CPU devices DeviceMgr::Local() creates (1 <= n <=
// kMaxLocalCpuDevices; default 1). Call before the first Local(); afterwards
// FailedPrecondition unless n matches.
absl::Status SetLocalCpuDeviceCount(int n);

// A device manager of `num_devices` CPU devices named LocalCpuDeviceName(i),
// each with `intra_op_threads` intra-op threads (REQUIRES both >= 1).
std::unique_ptr<DeviceMgr> NewCpuDeviceMgr(int num_devices, int intra_op_threads);

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_LOCAL_DEVICES_H_
