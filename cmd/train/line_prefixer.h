// LinePrefixer: turns the byte stream of one child's stdout or stderr into
// whole lines written to the launcher's own stream, each behind a prefix such
// as "[worker:1] " (cmd/train/local_cluster.h). A line is written only once
// it is complete, in one write of the sink, so lines of different tasks never
// mix mid-line; a partial last line is written (with a '\n' added) by Finish.
// A line longer than `max_line_bytes` is written in pieces of that size, so
// memory stays bounded whatever the child prints.
//
// Ownership: the sink is borrowed and must outlive the LinePrefixer.
// Thread safety: none; one thread feeds a LinePrefixer (the launcher's poll
// loop feeds all of them, which is what keeps the sink's lines whole).
#ifndef SLUICE_CMD_TRAIN_LINE_PREFIXER_H_
#define SLUICE_CMD_TRAIN_LINE_PREFIXER_H_

#include <cstddef>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"

namespace sluice {

class LinePrefixer {
 public:
  static constexpr size_t kDefaultMaxLineBytes = 1 << 20;

  LinePrefixer(std::string prefix, std::ostream* sink, size_t max_line_bytes = kDefaultMaxLineBytes);

  LinePrefixer(const LinePrefixer&) = delete;
  LinePrefixer& operator=(const LinePrefixer&) = delete;
  LinePrefixer(LinePrefixer&&) = default;
  LinePrefixer& operator=(LinePrefixer&&) = default;

  // Takes the next bytes of the stream; writes (and flushes) every line they
  // complete. REQUIRES: Finish has not been called.
  void Append(absl::string_view bytes);
  // The stream has ended: writes what is left of a last line without '\n'.
  // Later calls do nothing.
  void Finish();

 private:
  void WriteLine(absl::string_view line);

  std::string prefix_;
  std::ostream* sink_;
  size_t max_line_bytes_;
  std::string pending_;  // bytes after the last '\n' seen
  bool finished_ = false;
};

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_LINE_PREFIXER_H_
