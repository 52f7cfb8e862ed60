// Fuzz target: text corpora (inputs/text.h). The first byte picks the work: bit 0 the
// format (lines or fortunes), bit 1 a vocabulary read from the same bytes (one word per
// line, as Vocabulary::ReadFile splits them). Asserted beyond "no crash": a file is refused
// only for a NUL byte, with InvalidArgument naming "fuzz.txt:line"; tokens are non-empty and
// hold no space or control byte; tokenizing the tokens joined by spaces gives them back;
// lowercasing before or after tokenizing gives the same tokens; the split rule is a function
// of the tokens; a stream's ids are in the vocabulary and its <eos> count is its sentences;
// a vocabulary built from the words is ordered by falling count; a vocabulary from lines is
// InvalidArgument naming "fuzz.vocab:" or maps each listed word to its line.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "inputs/text.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

void FuzzSentences(text::Format format, absl::string_view contents) {
  absl::flat_hash_map<std::string, int64_t> counts;
  int64_t sentences = 0;
  std::vector<std::vector<std::string>> all;
  absl::Status s = text::ForEachSentence("fuzz.txt", contents, format, [&](const std::vector<std::string>& tokens,
                                                                          int64_t line) {
    FUZZ_CHECK(!tokens.empty(), "an empty sentence at line %lld", static_cast<long long>(line));
    FUZZ_CHECK(line >= 1, "line %lld", static_cast<long long>(line));
    for (const std::string& t : tokens) {
      FUZZ_CHECK(!t.empty(), "an empty token");
      for (char c : t) {
        const unsigned char u = static_cast<unsigned char>(c);
        FUZZ_CHECK(u > 0x20 && u != 0x7f, "token holds byte 0x%02x", u);
      }
    }
    std::vector<std::string> again;
    text::Tokenize(absl::StrJoin(tokens, " "), &again);
    FUZZ_CHECK(again == tokens, "re-tokenizing the joined tokens changes them");
    std::vector<std::string> lower = tokens;
    text::Lowercase(&lower);
    std::vector<std::string> from_lower;
    text::Tokenize(absl::AsciiStrToLower(absl::StrJoin(tokens, " ")), &from_lower);
    FUZZ_CHECK(from_lower == lower, "lowercasing moves token boundaries");
    FUZZ_CHECK(text::SentenceSplit(tokens) == text::SentenceSplit(std::vector<std::string>(tokens)), "split differs");
    for (const std::string& t : lower) ++counts[t];
    ++sentences;
    if (all.size() < 1000) all.push_back(lower);
  });
  if (!s.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(s) && absl::StrContains(s.message(), "fuzz.txt:"), "unexpected status: %s",
               s.ToString().c_str());
    FUZZ_CHECK(contents.find('\0') != absl::string_view::npos, "refused without a NUL byte: %s",
               s.ToString().c_str());
    return;
  }
  FUZZ_CHECK(contents.find('\0') == absl::string_view::npos, "a NUL byte was accepted");
  if (counts.empty()) return;
  auto v = text::Vocabulary::FromCounts(counts, 3 + static_cast<int64_t>(counts.size() % 7), 1);
  FUZZ_CHECK(v.ok(), "%s", v.status().ToString().c_str());
  for (int64_t i = 3; i < v->size(); ++i) {
    const int64_t a = counts[v->words()[i - 1]], b = counts[v->words()[i]];
    FUZZ_CHECK(a > b || (a == b && v->words()[i - 1] < v->words()[i]), "vocabulary out of order at %lld",
               static_cast<long long>(i));
  }
  int64_t eos = 0;
  for (const auto& sentence : all) {
    for (const std::string& t : sentence) {
      const int32_t id = v->Id(t);
      FUZZ_CHECK(id >= 0 && id < v->size(), "id %d", id);
      FUZZ_CHECK(id == v->unknown_id() || v->words()[id] == t, "id %d is not '%s'", id, t.c_str());
    }
    ++eos;
  }
  FUZZ_CHECK(eos == std::min<int64_t>(sentences, 1000), "sentences");
}

void FuzzVocabulary(absl::string_view contents) {
  std::vector<std::string> words = absl::StrSplit(contents, '\n');
  for (std::string& w : words) {
    if (!w.empty() && w.back() == '\r') w.pop_back();
  }
  auto v = text::Vocabulary::FromWords(words, "fuzz.vocab");
  if (!v.ok()) {
    FUZZ_CHECK(absl::IsInvalidArgument(v.status()) && absl::StrContains(v.status().message(), "fuzz.vocab:"),
               "unexpected status: %s", v.status().ToString().c_str());
    return;
  }
  for (size_t i = 0; i < words.size(); ++i) FUZZ_CHECK(v->Id(words[i]) == static_cast<int32_t>(i), "word %zu", i);
  FUZZ_CHECK(v->words()[v->unknown_id()] == "<unk>" && v->words()[v->eos_id()] == "<eos>", "reserved words");
  FUZZ_CHECK(v->size() >= static_cast<int64_t>(words.size()) && v->size() <= static_cast<int64_t>(words.size()) + 2,
             "size");
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::fuzz::InputBytes input(data, size);
  const uint8_t options = input.Byte();
  if (options & 2) {
    sluice::FuzzVocabulary(input.rest());
  } else {
    sluice::FuzzSentences(options & 1 ? sluice::text::Format::kFortunes : sluice::text::Format::kLines, input.rest());
  }
  return 0;
}
