// Minimal logging and invariant checks (the system Abseil predates absl/log).
// CHECK is for Sluice's own invariants only: bad user input gets a Status.
// LOG(severity) << ...; writes one line to stderr; LOG(FATAL) aborts.
// Thread safety: each message is written with a single write call.
#ifndef SLUICE_ENGINE_PLATFORM_LOGGING_H_
#define SLUICE_ENGINE_PLATFORM_LOGGING_H_

#include <sstream>

namespace sluice {
namespace logging_internal {

enum Severity { INFO = 0, WARNING = 1, ERROR = 2, FATAL = 3 };

class LogMessage {
 public:
  LogMessage(const char* file, int line, Severity severity);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  Severity severity_;
  std::ostringstream stream_;
};

// Turns a streamed expression into void so it can sit in a ternary.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace logging_internal
}  // namespace sluice

#define LOG(severity)                                                  \
  ::sluice::logging_internal::LogMessage(__FILE__, __LINE__,           \
                                         ::sluice::logging_internal::severity) \
      .stream()

#define CHECK(condition)                                                 \
  (condition) ? (void)0                                                  \
              : ::sluice::logging_internal::Voidify() &                  \
                    LOG(FATAL) << "Check failed: " #condition " "

#define CHECK_OP_(a, b, op) CHECK((a)op(b)) << "(" << (a) << " vs " << (b) << ") "
#define CHECK_EQ(a, b) CHECK_OP_(a, b, ==)
#define CHECK_NE(a, b) CHECK_OP_(a, b, !=)
#define CHECK_LT(a, b) CHECK_OP_(a, b, <)
#define CHECK_LE(a, b) CHECK_OP_(a, b, <=)
#define CHECK_GT(a, b) CHECK_OP_(a, b, >)
#define CHECK_GE(a, b) CHECK_OP_(a, b, >=)
#define CHECK_OK(expr)                                   \
  do {                                                   \
    auto sluice_check_status_ = (expr);                  \
    CHECK(sluice_check_status_.ok()) << sluice_check_status_; \
  } while (0)

#ifdef NDEBUG
#define DCHECK(condition) \
  while (false) CHECK(condition)
#else
#define DCHECK(condition) CHECK(condition)
#endif

#endif  // SLUICE_ENGINE_PLATFORM_LOGGING_H_
