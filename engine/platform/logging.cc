// LogMessage: formats "<severity> file:line] message" and writes it to stderr.
#include "engine/platform/logging.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace sluice {
namespace logging_internal {

LogMessage::LogMessage(const char* file, int line, Severity severity) : severity_(severity) {
  static const char kLetters[] = "IWEF";
  const char* base = std::strrchr(file, '/');
  stream_ << kLetters[severity] << " " << (base ? base + 1 : file) << ":" << line << "] ";
}

LogMessage::~LogMessage() {
  stream_ << '\n';
  std::string text = stream_.str();
  ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
  if (severity_ == FATAL) std::abort();
}

}  // namespace logging_internal
}  // namespace sluice
