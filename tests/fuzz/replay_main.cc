// A main() for fuzz targets without libFuzzer: feeds every file under the directories (or the
// files) named on the command line through LLVMFuzzerTestOneInput, in sorted order, and prints
// how many it ran. A directory that does not exist is skipped (a target may have no
// regressions yet); no input at all is a failure. A crash or a sanitizer report fails the
// process by itself. Used by the <target>_fuzz_test replay tests (fuzz.bzl) under the normal
// gcc build, and for replaying one reproducer: `bazel-bin/tests/fuzz/x_fuzz_test FILE`.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// Appends the regular files under `path` (recursively), or `path` itself when it is a file.
void CollectFiles(const std::string& path, std::vector<std::string>* files) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return;
  if (S_ISREG(st.st_mode)) {
    files->push_back(path);
    return;
  }
  if (!S_ISDIR(st.st_mode)) return;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> children;
  while (struct dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") children.push_back(path + "/" + name);
  }
  closedir(dir);
  std::sort(children.begin(), children.end());
  for (const std::string& child : children) CollectFiles(child, files);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const size_t before = files.size();
    CollectFiles(argv[i], &files);
    std::printf("%s: %zu inputs\n", argv[i], files.size() - before);
  }
  // The first path is the target's corpus: it must hold seeds (a misspelt or
  // empty corpus directory would otherwise pass on the reproducers alone).
  if (argc > 1) {
    std::vector<std::string> corpus;
    CollectFiles(argv[1], &corpus);
    if (corpus.empty()) {
      std::fprintf(stderr, "replay: no seed files under %s\n", argv[1]);
      return 1;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "replay: no input files under the paths given\n");
    return 1;
  }
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 1;
    }
    const std::string bytes = ss.str();
    std::printf("replaying %s (%zu bytes)\n", path.c_str(), bytes.size());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replay: %zu inputs, no crash\n", files.size());
  return 0;
}
