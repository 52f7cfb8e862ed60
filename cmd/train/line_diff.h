// LineDiff: the lines that differ between two texts (a run directory's
// config.pbtxt and the config of a rerun), for `train`'s drift message.
// Thread safety: a pure function.
#ifndef SLUICE_CMD_TRAIN_LINE_DIFF_H_
#define SLUICE_CMD_TRAIN_LINE_DIFF_H_

#include <string>

namespace sluice {

// "  - old" and "  + new" lines, in order, for the lines of `a` and `b` outside
// a longest common subsequence of their lines, so that a line inserted in `b`
// shows as one "+" and not as every later line changed. Texts of more than
// 2,000 lines each are compared line by line instead (the table would be
// large); empty lines that differ are not shown.
std::string LineDiff(const std::string& a, const std::string& b);

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_LINE_DIFF_H_
