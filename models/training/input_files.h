// The training input's files as a run last saw them: a resumed run puts its
// input at step x batch examples counted through the files as they are now,
// so a file appended to, removed or newly matched by a glob since the run
// that wrote the checkpoint moves that position without a sign. The chief
// writes the files' list with their sizes to <run_dir>/input_files.txt when
// its input starts; a resume compares the list with the files it reads and
// warns about each difference.
//
// Format, one line per file in the pipeline's order: "<bytes> <path>", or
// "missing <path>" for a file that could not be stat'ed. A line that does not
// parse is skipped (an older or hand-edited record warns about less, never
// fails a run).
//
// Thread safety: pure functions, but for the file system calls.
#ifndef SLUICE_MODELS_TRAINING_INPUT_FILES_H_
#define SLUICE_MODELS_TRAINING_INPUT_FILES_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/platform/env.h"

namespace sluice {
namespace training {

// The record of `files` (their sizes read now), in the format above.
std::string DescribeInputFiles(Env* env, const std::vector<std::string>& files);

// What differs between an earlier record and `now`, one line per file, in
// `now`'s order and then the files gone: "PATH: 1234 bytes, was 1000",
// "PATH: new", "PATH: gone", "PATH: missing" (it could not be stat'ed now).
// Empty when the records agree (the files' order aside).
std::vector<std::string> InputFileChanges(absl::string_view before, absl::string_view now);

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_INPUT_FILES_H_
