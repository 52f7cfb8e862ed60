// Chrome trace-event JSON from step stats.
#include "monitoring/trace.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0.
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

std::string Micros(int64_t ns) { return absl::StrFormat("%.3f", static_cast<double>(ns) / 1000.0); }

}  // namespace

std::string JsonQuote(absl::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        out += "\\ufffd";
        ++i;
        continue;
      }
      out.append(s.data() + i, n);
      i += n;
      continue;
    } else {
      out.push_back(static_cast<char>(c));
    }
    ++i;
  }
  out.push_back('"');
  return out;
}

std::string StepStatsToChromeTrace(absl::Span<const DeviceStepStats> devices) {
  return StepStatsToChromeTrace(devices, {});
}

std::string StepStatsToChromeTrace(absl::Span<const DeviceStepStats> devices,
                                   const std::vector<std::pair<std::string, std::string>>& other_data) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const DeviceStepStats& d : devices) {
    for (const NodeExecStats& n : d.nodes) origin = std::min(origin, n.start_ns);
  }
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  for (size_t pid = 0; pid < devices.size(); ++pid) {
    sep();
    absl::StrAppend(&out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":", pid,
                    ",\"args\":{\"name\":", JsonQuote(devices[pid].device), "}}");
    for (const NodeExecStats& n : devices[pid].nodes) {
      sep();
      const int64_t dur = std::max<int64_t>(0, n.end_ns - n.start_ns);
      absl::StrAppend(&out, "{\"name\":", JsonQuote(n.node_name), ",\"cat\":\"Op\",\"ph\":\"X\",\"pid\":", pid,
                      ",\"tid\":", n.thread_id, ",\"ts\":", Micros(n.start_ns - origin), ",\"dur\":", Micros(dur),
                      ",\"args\":{\"op\":", JsonQuote(n.op), ",\"frame_id\":", n.frame_id,
                      ",\"iter_id\":", n.iter_id, "}}");
    }
  }
  out += "]";
  if (!other_data.empty()) {
    out += ",\n\"otherData\":{";
    for (size_t i = 0; i < other_data.size(); ++i) {
      absl::StrAppend(&out, i > 0 ? "," : "", JsonQuote(other_data[i].first), ":", JsonQuote(other_data[i].second));
    }
    out += "}";
  }
  out += "}\n";
  return out;
}

std::string StepStatsToChromeTrace(const std::vector<NodeExecStats>& nodes, absl::string_view device) {
  DeviceStepStats d{std::string(device), nodes};
  return StepStatsToChromeTrace(absl::MakeConstSpan(&d, 1));
}

}  // namespace sluice
