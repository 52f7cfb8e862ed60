// FreshTestDir: see test_dirs.h.
#include "engine/platform/test_dirs.h"

#include <cstdlib>

#include "engine/platform/env.h"
#include "engine/platform/logging.h"

namespace sluice {

std::string FreshTestDir(absl::string_view name) {
  const char* root = std::getenv("TEST_TMPDIR");
  const std::string dir = JoinPath(root != nullptr ? root : "/tmp", name);
  Env* env = Env::Default();
  absl::Status s = env->DeleteRecursively(dir);
  if (s.ok()) s = env->CreateDirs(dir);
  CHECK(s.ok()) << s;
  return dir;
}

}  // namespace sluice
