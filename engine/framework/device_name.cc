// Parsing, printing, matching and merging of device names.
#include "engine/framework/device_name.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/framework/op_def.h"

namespace sluice {
namespace {

bool IsIdentifier(absl::string_view s) {
  if (s.empty() || !absl::ascii_isalpha(s[0])) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("device '", text_, "': ", what));
  }

  // A non-negative int, or "*" (not set).
  absl::Status Number(absl::string_view part, absl::string_view value, bool* has, int* out) const {
    if (value == "*") {
      *has = false;
      return absl::OkStatus();
    }
    if (value.empty()) return Error(absl::StrCat("part '", part, "' has no value"));
    if (value[0] == '-') {
      return Error(absl::StrCat(part, " must be >= 0, got '", value, "'"));
    }
    for (char c : value) {
      if (!absl::ascii_isdigit(c)) return Error(absl::StrCat(part, " '", value, "' is not a number"));
    }
    int n = 0;
    if (!absl::SimpleAtoi(value, &n)) return Error(absl::StrCat(part, " '", value, "' is out of range"));
    *has = true;
    *out = n;
    return absl::OkStatus();
  }

  // TYPE then ":ID", ":*" or nothing.
  absl::Status Device(absl::string_view part, absl::string_view type, absl::string_view id, bool has_id_text,
                      DeviceName* d) const {
    if (type == "*") {
      d->has_type = false;
    } else if (!IsIdentifier(type)) {
      return Error(absl::StrCat("bad device type '", type,
                                "' (expected a letter followed by letters, digits or '_', e.g. CPU)"));
    } else {
      d->has_type = true;
      d->type = absl::AsciiStrToUpper(type);
    }
    d->has_id = false;
    if (!has_id_text) return absl::OkStatus();
    return Number(absl::StrCat(part, " id"), id, &d->has_id, &d->id);
  }

  absl::StatusOr<DeviceName> Parse() {
    DeviceName d;
    if (text_.empty()) return d;
    if (text_[0] != '/') return Error("must start with '/' (e.g. '/device:CPU:0')");
    std::vector<absl::string_view> parts = absl::StrSplit(text_.substr(1), '/');
    bool seen_job = false, seen_replica = false, seen_task = false, seen_device = false;
    auto once = [&](bool* seen, absl::string_view key) -> absl::Status {
      if (*seen) return Error(absl::StrCat("duplicate part '", key, "'"));
      *seen = true;
      return absl::OkStatus();
    };
    for (absl::string_view part : parts) {
      if (part.empty()) return Error("empty part (a '/' too many)");
      size_t colon = part.find(':');
      if (colon == absl::string_view::npos) {
        return Error(absl::StrCat("part '", part, "' has no ':<value>'"));
      }
      absl::string_view key = part.substr(0, colon);
      absl::string_view value = part.substr(colon + 1);
      const std::string lower = absl::AsciiStrToLower(key);
      absl::Status s;
      if (key == "job") {
        s = once(&seen_job, key);
        if (s.ok() && value == "*") {
          d.has_job = false;
        } else if (s.ok() && !IsIdentifier(value)) {
          s = Error(absl::StrCat("bad job name '", value, "' (expected a letter followed by letters, digits or '_')"));
        } else if (s.ok()) {
          d.has_job = true;
          d.job = std::string(value);
        }
      } else if (key == "replica") {
        s = once(&seen_replica, key);
        if (s.ok()) s = Number(key, value, &d.has_replica, &d.replica);
      } else if (key == "task") {
        s = once(&seen_task, key);
        if (s.ok()) s = Number(key, value, &d.has_task, &d.task);
      } else if (key == "device") {
        s = once(&seen_device, key);
        if (s.ok()) {
          size_t second = value.find(':');
          if (second == absl::string_view::npos) {
            s = value.empty() ? Error("part 'device' has no type (e.g. '/device:CPU:0')")
                              : Device(key, value, "", false, &d);
          } else {
            s = Device(key, value.substr(0, second), value.substr(second + 1), true, &d);
          }
        }
      } else if (lower == "cpu" || lower == "gpu") {
        // Legacy "/cpu:0": the same part as "/device:CPU:0".
        s = once(&seen_device, "device");
        if (s.ok()) s = Device(key, key, value, true, &d);
      } else {
        std::string suggestion = ClosestMatch(key, {"job", "replica", "task", "device"});
        s = Error(absl::StrCat("unknown part '", key, "'",
                               suggestion.empty() ? "" : absl::StrCat(" (did you mean '", suggestion, "'?)"),
                               "; expected job, replica, task or device"));
      }
      if (!s.ok()) return s;
    }
    return d;
  }

 private:
  absl::string_view text_;
};

}  // namespace

absl::StatusOr<DeviceName> ParseDeviceName(absl::string_view s) { return Parser(s).Parse(); }

std::string DeviceNameToString(const DeviceName& d) {
  std::string out;
  if (d.has_job) absl::StrAppend(&out, "/job:", d.job);
  if (d.has_replica) absl::StrAppend(&out, "/replica:", d.replica);
  if (d.has_task) absl::StrAppend(&out, "/task:", d.task);
  if (d.has_type || d.has_id) {
    absl::StrAppend(&out, "/device:", d.has_type ? d.type : "*", ":",
                    d.has_id ? absl::StrCat(d.id) : std::string("*"));
  }
  return out;
}

bool IsFullySpecified(const DeviceName& d) {
  return d.has_job && d.has_replica && d.has_task && d.has_type && d.has_id;
}

bool DeviceNameMatches(const DeviceName& spec, const DeviceName& name) {
  if (spec.has_job && (!name.has_job || name.job != spec.job)) return false;
  if (spec.has_replica && (!name.has_replica || name.replica != spec.replica)) return false;
  if (spec.has_task && (!name.has_task || name.task != spec.task)) return false;
  if (spec.has_type && (!name.has_type || name.type != spec.type)) return false;
  if (spec.has_id && (!name.has_id || name.id != spec.id)) return false;
  return true;
}

bool DeviceNamesCompatible(const DeviceName& a, const DeviceName& b) {
  if (a.has_job && b.has_job && a.job != b.job) return false;
  if (a.has_replica && b.has_replica && a.replica != b.replica) return false;
  if (a.has_task && b.has_task && a.task != b.task) return false;
  if (a.has_type && b.has_type && a.type != b.type) return false;
  if (a.has_id && b.has_id && a.id != b.id) return false;
  return true;
}

absl::Status MergeDeviceNames(const DeviceName& other, DeviceName* target) {
  auto conflict = [&](absl::string_view part, const auto& mine, const auto& theirs) {
    return absl::InvalidArgumentError(absl::StrCat("cannot merge device '", DeviceNameToString(other), "' into '",
                                                    DeviceNameToString(*target), "': ", part, " '", theirs,
                                                    "' conflicts with ", part, " '", mine, "'"));
  };
  if (other.has_job && target->has_job && other.job != target->job) return conflict("job", target->job, other.job);
  if (other.has_replica && target->has_replica && other.replica != target->replica) {
    return conflict("replica", target->replica, other.replica);
  }
  if (other.has_task && target->has_task && other.task != target->task) {
    return conflict("task", target->task, other.task);
  }
  if (other.has_type && target->has_type && other.type != target->type) {
    return conflict("device type", target->type, other.type);
  }
  if (other.has_id && target->has_id && other.id != target->id) return conflict("device id", target->id, other.id);
  if (other.has_job && !target->has_job) {
    target->has_job = true;
    target->job = other.job;
  }
  if (other.has_replica && !target->has_replica) {
    target->has_replica = true;
    target->replica = other.replica;
  }
  if (other.has_task && !target->has_task) {
    target->has_task = true;
    target->task = other.task;
  }
  if (other.has_type && !target->has_type) {
    target->has_type = true;
    target->type = other.type;
  }
  if (other.has_id && !target->has_id) {
    target->has_id = true;
    target->id = other.id;
  }
  return absl::OkStatus();
}

bool operator==(const DeviceName& a, const DeviceName& b) {
  return a.has_job == b.has_job && (!a.has_job || a.job == b.job) && a.has_replica == b.has_replica &&
         (!a.has_replica || a.replica == b.replica) && a.has_task == b.has_task && (!a.has_task || a.task == b.task) &&
         a.has_type == b.has_type && (!a.has_type || a.type == b.type) && a.has_id == b.has_id &&
         (!a.has_id || a.id == b.id);
}

}  // namespace sluice
