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

// "<task>/device:CPU:<index>", where <task> is LocalTaskName().
std::string LocalCpuDeviceName(int index);

// This process's task, the prefix of its device names: by default
// "/job:localhost/replica:0/task:0"; a task of a cluster sets its own
// ("/job:ps/replica:0/task:1") before the first DeviceMgr::Local(), afterwards
// FailedPrecondition unless it matches. InvalidArgument unless `task` is
// "/job:<name>/replica:<r>/task:<t>".
absl::Status SetLocalTaskName(const std::string& task);
std::string LocalTaskName();

// Sets how many CPU devices DeviceMgr::Local() creates (1 <= n <=
// kMaxLocalCpuDevices; default 1). Call before the first Local(); afterwards
// FailedPrecondition unless n matches.
absl::Status SetLocalCpuDeviceCount(int n);

// A device manager of `num_devices` CPU devices named LocalCpuDeviceName(i)
// (or "<task>/device:CPU:<i>" when `task` is given: tests that put several
// tasks of a cluster in one process), each with `intra_op_threads` intra-op
// threads (REQUIRES both >= 1).
std::unique_ptr<DeviceMgr> NewCpuDeviceMgr(int num_devices, int intra_op_threads, const std::string& task = "");

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_LOCAL_DEVICES_H_
