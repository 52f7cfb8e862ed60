// Parsing and resolution of Einsum equations (einsum_equation.h).
#include "engine/framework/einsum_equation.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

int LabelOf(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -2;
}

char LetterOf(int label) { return label < 26 ? static_cast<char>('a' + label) : static_cast<char>('A' + label - 26); }

std::string LabelName(int label) {
  if (label < kEinsumLetters) return std::string(1, LetterOf(label));
  return absl::StrCat("... dim ", label - kFirstEllipsisLabel);
}

// Parses the term in equation[begin, end).
absl::Status ParseTerm(absl::string_view equation, size_t begin, size_t end, std::vector<int>* term) {
  bool ellipsis = false;
  for (size_t i = begin; i < end; ++i) {
    const char c = equation[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (i + 2 >= end || equation[i + 1] != '.' || equation[i + 2] != '.') {
        return absl::InvalidArgumentError(
            absl::StrCat("einsum equation '", equation, "': a '.' at position ", i, " is not part of \"...\""));
      }
      if (ellipsis) {
        return absl::InvalidArgumentError(
            absl::StrCat("einsum equation '", equation, "': a second \"...\" in one term at position ", i));
      }
      ellipsis = true;
      term->push_back(kEinsumEllipsis);
      i += 2;
      continue;
    }
    const int label = LabelOf(c);
    if (label < 0) {
      return absl::InvalidArgumentError(absl::StrCat("einsum equation '", equation, "': character '", std::string(1, c),
                                                     "' at position ", i, " is not a letter, ',', \"...\" or \"->\""));
    }
    term->push_back(label);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EinsumEquation> ParseEinsumEquation(absl::string_view equation) {
  EinsumEquation eq;
  const size_t arrow = equation.find("->");
  if (arrow != absl::string_view::npos && equation.find("->", arrow + 2) != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("einsum equation '", equation, "' has more than one \"->\""));
  }
  const size_t inputs_end = arrow == absl::string_view::npos ? equation.size() : arrow;
  size_t begin = 0;
  while (true) {
    size_t comma = equation.find(',', begin);
    if (comma == absl::string_view::npos || comma > inputs_end) comma = inputs_end;
    eq.inputs.emplace_back();
    absl::Status s = ParseTerm(equation, begin, comma, &eq.inputs.back());
    if (!s.ok()) return s;
    if (comma == inputs_end) break;
    begin = comma + 1;
  }
  if (arrow != absl::string_view::npos) {
    if (equation.find(',', arrow) != absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("einsum equation '", equation, "': the output (after \"->\") is one term, without ','"));
    }
    absl::Status s = ParseTerm(equation, arrow + 2, equation.size(), &eq.output);
    if (!s.ok()) return s;
    std::vector<bool> seen(kEinsumLetters, false), in_inputs(kEinsumLetters, false);
    for (const std::vector<int>& term : eq.inputs) {
      for (int l : term) {
        if (l >= 0) in_inputs[l] = true;
      }
    }
    for (int l : eq.output) {
      if (l < 0) continue;
      if (seen[l]) {
        return absl::InvalidArgumentError(
            absl::StrCat("einsum equation '", equation, "': output label '", LabelName(l), "' appears twice"));
      }
      seen[l] = true;
      if (!in_inputs[l]) {
        return absl::InvalidArgumentError(
            absl::StrCat("einsum equation '", equation, "': output label '", LabelName(l), "' is in no input"));
      }
    }
    return eq;
  }
  // Implicit output: the ellipsis, then the letters used once, in ASCII order.
  std::vector<int> count(kEinsumLetters, 0);
  bool any_ellipsis = false;
  for (const std::vector<int>& term : eq.inputs) {
    for (int l : term) {
      if (l == kEinsumEllipsis) {
        any_ellipsis = true;
      } else {
        ++count[l];
      }
    }
  }
  if (any_ellipsis) eq.output.push_back(kEinsumEllipsis);
  std::vector<char> letters;
  for (int l = 0; l < kEinsumLetters; ++l) {
    if (count[l] == 1) letters.push_back(LetterOf(l));
  }
  std::sort(letters.begin(), letters.end());
  for (char c : letters) eq.output.push_back(LabelOf(c));
  return eq;
}

std::string EinsumTermString(const std::vector<int>& term) {
  std::string s;
  for (int l : term) {
    if (l == kEinsumEllipsis) {
      s += "...";
    } else {
      s += LetterOf(l);
    }
  }
  return s;
}

std::string EinsumEquationString(const std::vector<std::vector<int>>& inputs, const std::vector<int>& output) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0) s += ',';
    s += EinsumTermString(inputs[i]);
  }
  return s + "->" + EinsumTermString(output);
}

absl::StatusOr<EinsumPlan> ResolveEinsum(const EinsumEquation& equation,
                                         const std::vector<std::vector<int64_t>>& input_dims) {
  if (input_dims.size() != equation.inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the einsum equation '",
                                                   EinsumEquationString(equation.inputs, equation.output), "' has ",
                                                   equation.inputs.size(), " input terms, but there are ",
                                                   input_dims.size(), " inputs"));
  }
  const std::string text = EinsumEquationString(equation.inputs, equation.output);
  // Ellipsis rank of each input, and the broadcast one.
  std::vector<int> ellipsis_rank(input_dims.size(), 0);
  int max_ellipsis = 0;
  for (size_t i = 0; i < input_dims.size(); ++i) {
    const std::vector<int>& term = equation.inputs[i];
    const bool has_ellipsis = std::find(term.begin(), term.end(), kEinsumEllipsis) != term.end();
    const int letters = static_cast<int>(term.size()) - (has_ellipsis ? 1 : 0);
    const int rank = static_cast<int>(input_dims[i].size());
    if (has_ellipsis ? rank < letters : rank != letters) {
      return absl::InvalidArgumentError(absl::StrCat("einsum '", text, "': input ", i, " has rank ", rank,
                                                     ", but its term '", EinsumTermString(term), "' needs ",
                                                     has_ellipsis ? "at least " : "", letters));
    }
    ellipsis_rank[i] = rank - letters;
    max_ellipsis = std::max(max_ellipsis, ellipsis_rank[i]);
  }
  EinsumPlan plan;
  plan.label_size.assign(kFirstEllipsisLabel + max_ellipsis, -1);
  std::vector<int> size_from(plan.label_size.size(), -1);  // the input that set a letter's size
  std::vector<bool> used(plan.label_size.size(), false);
  // An ellipsis label with an unknown dim in some input: a known size of 1
  // elsewhere says nothing (the unknown one may be larger).
  std::vector<bool> unknown_seen(plan.label_size.size(), false);
  for (size_t i = 0; i < input_dims.size(); ++i) {
    std::vector<int>& labels = plan.input_labels.emplace_back();
    std::vector<bool> in_this(kEinsumLetters, false);
    for (int l : equation.inputs[i]) {
      if (l == kEinsumEllipsis) {
        for (int j = 0; j < ellipsis_rank[i]; ++j) labels.push_back(kFirstEllipsisLabel + max_ellipsis - ellipsis_rank[i] + j);
        continue;
      }
      if (in_this[l]) {
        return absl::UnimplementedError(absl::StrCat("einsum '", text, "': label '", LabelName(l),
                                                     "' repeats within input ", i,
                                                     " (a diagonal); this is not supported"));
      }
      in_this[l] = true;
      labels.push_back(l);
    }
    for (size_t axis = 0; axis < labels.size(); ++axis) {
      const int l = labels[axis];
      const int64_t d = input_dims[i][axis];
      used[l] = true;
      int64_t& size = plan.label_size[l];
      if (d < 0) {
        unknown_seen[l] = true;
        continue;
      }
      if (l >= kFirstEllipsisLabel) {
        // Broadcast: 1 gives way to anything.
        if (size == -1 || size == 1) {
          size = d;
        } else if (d != 1 && d != size) {
          return absl::InvalidArgumentError(absl::StrCat("einsum '", text, "': the \"...\" dims of the inputs do not "
                                                         "broadcast: input ", i, " has ", d, " where another has ",
                                                         size));
        }
        continue;
      }
      if (size == -1) {
        size = d;
        size_from[l] = static_cast<int>(i);
      } else if (size != d) {
        return absl::InvalidArgumentError(absl::StrCat("einsum '", text, "': label '", LabelName(l), "' is ", size,
                                                       " in input ", size_from[l], " but ", d, " in input ", i));
      }
    }
  }
  for (int j = 0; j < max_ellipsis; ++j) {
    int64_t& size = plan.label_size[kFirstEllipsisLabel + j];
    if (unknown_seen[kFirstEllipsisLabel + j] && size == 1) size = -1;
  }
  for (int l : equation.output) {
    if (l == kEinsumEllipsis) {
      for (int j = 0; j < max_ellipsis; ++j) plan.output_labels.push_back(kFirstEllipsisLabel + j);
    } else {
      if (!used[l]) {
        return absl::InvalidArgumentError(
            absl::StrCat("einsum '", text, "': output label '", LabelName(l), "' is in no input"));
      }
      plan.output_labels.push_back(l);
    }
  }
  for (int l : plan.output_labels) plan.output_dims.push_back(plan.label_size[l]);
  return plan;
}

}  // namespace sluice
