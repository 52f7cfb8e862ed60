// FreshTestDir (tests only): an empty directory for one test, under Bazel's
// TEST_TMPDIR (or /tmp when run by hand), deleted and re-created on each call.
// Thread safety: call from the test's main thread.
#ifndef SLUICE_ENGINE_PLATFORM_TEST_DIRS_H_
#define SLUICE_ENGINE_PLATFORM_TEST_DIRS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace sluice {

// "<TEST_TMPDIR>/<name>", empty. CHECK-fails when it cannot be created (a
// broken test machine, not an input).
std::string FreshTestDir(absl::string_view name);

}  // namespace sluice

#endif  // SLUICE_ENGINE_PLATFORM_TEST_DIRS_H_
