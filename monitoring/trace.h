// Step tracing (the whitepaper's EEG, §9): one step's per-node records (NodeExecStats from
// engine/runtime/step_stats.h) as Chrome trace-event JSON, which chrome://tracing and Perfetto
// open. One complete event ("ph":"X") per executed node: pid = the device's index (named by a
// "process_name" metadata event), tid = the executor thread, ts and dur in microseconds from the
// step's first start. args carry the op type and frame/iteration.
// Ownership: returns a string. Thread safety: pure functions.
#ifndef SLUICE_MONITORING_TRACE_H_
#define SLUICE_MONITORING_TRACE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/runtime/step_stats.h"

namespace sluice {

inline constexpr char kDefaultTraceDevice[] = "/job:localhost/replica:0/task:0/device:CPU:0";

// The trace of one step over several devices.
std::string StepStatsToChromeTrace(absl::Span<const DeviceStepStats> devices);
// The same, plus a top-level "otherData" object of string values (the trace-event format's
// place for metadata, e.g. {"step": "5", "executed_graph_nodes": "120"}); left out when empty.
std::string StepStatsToChromeTrace(absl::Span<const DeviceStepStats> devices,
                                   const std::vector<std::pair<std::string, std::string>>& other_data);
// The trace of one step on one device.
std::string StepStatsToChromeTrace(const std::vector<NodeExecStats>& nodes,
                                   absl::string_view device = kDefaultTraceDevice);

// `s` as a JSON string literal, quotes included; bytes that are not valid UTF-8 become U+FFFD.
std::string JsonQuote(absl::string_view s);

}  // namespace sluice

#endif  // SLUICE_MONITORING_TRACE_H_
