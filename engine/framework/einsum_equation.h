// The equation of TensorFlow's Einsum op ("ab,bc->ac", "...ij,...jk->...ik",
// implicit "ij,jk"), parsed once and shared by the op's shape function, its
// CPU kernel and its gradient.
//
// Labels are the letters a-z (ids 0-25) and A-Z (26-51); "..." stands for the
// dimensions of an input not named by a letter (aligned to the right across
// the inputs and broadcast as numpy does). Resolving an equation against the
// inputs' shapes expands every "..." into ellipsis labels (ids from
// kFirstEllipsisLabel), so that each axis of each input and of the output has
// exactly one label and each label one size.
//
// Implicit mode (no "->"), as numpy and TensorFlow: the output is the
// ellipsis (if any input has one) followed by the letters that appear exactly
// once over all inputs, in ASCII order (upper case first).
// Thread safety: plain values and pure functions.
#ifndef SLUICE_ENGINE_FRAMEWORK_EINSUM_EQUATION_H_
#define SLUICE_ENGINE_FRAMEWORK_EINSUM_EQUATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

constexpr int kEinsumEllipsis = -1;      // where "..." stands in a parsed term
constexpr int kEinsumLetters = 52;       // a-z, A-Z
constexpr int kFirstEllipsisLabel = 52;  // ellipsis dims after resolution

struct EinsumEquation {
  // Per input term, its labels left to right; kEinsumEllipsis for "...".
  std::vector<std::vector<int>> inputs;
  // The output term (computed in implicit mode).
  std::vector<int> output;
};

// InvalidArgument (naming the character and its position) for anything but
// letters, one "..." per term, commas and one "->"; for an output letter that
// no input has, or one repeated in the output.
absl::StatusOr<EinsumEquation> ParseEinsumEquation(absl::string_view equation);

// The term as text: "ab", "...ij".
std::string EinsumTermString(const std::vector<int>& term);

// The equation as text: "ab,bc->ac".
std::string EinsumEquationString(const std::vector<std::vector<int>>& inputs, const std::vector<int>& output);

// An equation resolved against its inputs' dimensions.
struct EinsumPlan {
  std::vector<std::vector<int>> input_labels;  // one label per input axis
  std::vector<int> output_labels;              // one label per output axis
  // Size of every label (index: label id; -1: unknown, for shape inference);
  // an ellipsis label's size is the broadcast of the inputs' sizes.
  std::vector<int64_t> label_size;
  std::vector<int64_t> output_dims;
};

// `input_dims[i]` are the dims of input i (-1 for an unknown dim). The number
// of inputs must match the equation's terms. InvalidArgument when a rank is
// too small for a term's letters, a letter has two different sizes, ellipsis
// dims do not broadcast, or a letter repeats within one input (a diagonal:
// Unimplemented).
absl::StatusOr<EinsumPlan> ResolveEinsum(const EinsumEquation& equation,
                                         const std::vector<std::vector<int64_t>>& input_dims);

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_EINSUM_EQUATION_H_
