// Text corpora for word-level language models (inputs/FORMATS.md, "Text
// corpora"): the tokenizer, the sentence formats (one sentence per line, or
// fortune(6) files whose quotations end at lines holding only "%"), the
// train/test split rule, the vocabulary, and the token-id stream cut into
// windows of seq_len + 1 tokens. TextWindowReader (readers.h) serves the
// windows to the graph; models/input_pipeline.cc builds the vocabulary with
// these functions when it assembles a `text` input.
//
// Every error is an absl::Status naming the file and line. Nothing here keeps
// global state. Thread safety: free functions are thread-safe; a Vocabulary is
// immutable after construction (const methods may be called concurrently).
#ifndef SLUICE_INPUTS_TEXT_H_
#define SLUICE_INPUTS_TEXT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/platform/env.h"

namespace sluice {
namespace text {

// Appends the tokens of `sentence` to *tokens (case kept). A backspace first
// erases the byte before it (fortune files underline by overstriking,
// "_\bw"). Word bytes are ASCII letters and digits and every byte >= 0x80
// (UTF-8 letters stay whole); an apostrophe, hyphen or period between two
// word bytes joins them ("don't", "e-mail", "4.2"). Any other printable
// ASCII byte is a token of its own; spaces and control bytes separate tokens.
void Tokenize(absl::string_view sentence, std::vector<std::string>* tokens);

// ASCII lowercase, in place.
void Lowercase(std::vector<std::string>* tokens);

enum class Format { kLines, kFortunes };
// "lines" or "fortunes"; InvalidArgument otherwise.
absl::StatusOr<Format> ParseFormat(absl::string_view name);

// Calls fn(tokens, line) for each sentence of a file's contents, with the
// 1-based line on which the sentence starts. kLines: each line is a sentence;
// kFortunes: the lines up to a line holding only "%" (or the end) are one.
// Sentences without tokens are skipped. A NUL byte (a binary file, such as
// strfile's ".dat" index) is InvalidArgument "path:line: ...".
absl::Status ForEachSentence(const std::string& path, absl::string_view contents, Format format,
                             const std::function<void(const std::vector<std::string>&, int64_t line)>& fn);

// kAll: every sentence (files that already are one split, e.g. a corpus's
// separate train and test files); kTrain and kTest: by the rule below.
enum class Split { kTrain, kTest, kAll };
// The split rule (kTrain or kTest): a sentence goes to the test split when a hash of its tokens
// (case kept, FNV-1a 64 over the tokens each followed by a space, then the
// splitmix64 finalizer) is 0 modulo 10; otherwise to the train split. It
// depends on the sentence alone, so it is deterministic, about 1 in 10, and
// duplicate sentences always land in the same split.
Split SentenceSplit(const std::vector<std::string>& tokens);
uint64_t SentenceHash(const std::vector<std::string>& tokens);

// The files of a corpus: each pattern's matches (Env::GetMatchingPaths,
// sorted) in pattern order, without those matching any `exclude` glob
// (fnmatch over the whole path; "*" also crosses "/", so "*.dat" drops every
// ".dat"), without repeats. A pattern matching nothing (after exclusion) is
// NotFound naming it.
absl::StatusOr<std::vector<std::string>> ExpandFiles(Env* env, const std::vector<std::string>& patterns,
                                                     const std::vector<std::string>& exclude);

struct Corpus {
  std::vector<std::string> files;  // already expanded
  Format format = Format::kLines;
  bool lowercase = true;
  // Files larger than this are ResourceExhausted.
  uint64_t max_file_bytes = uint64_t{1} << 30;
};

// Calls fn(tokens) for every sentence of `split` (kAll: every sentence), in
// file order, lowercased when corpus.lowercase.
absl::Status ForEachSplitSentence(Env* env, const Corpus& corpus, Split split,
                                  const std::function<void(const std::vector<std::string>&)>& fn);

// Word ids 0..size()-1. A vocabulary built from counts reserves id 0 for
// "<unk>" (every word not in it) and id 1 for "<eos>" (the end of each
// sentence), then lists words by falling count, ties in byte order.
class Vocabulary {
 public:
  static constexpr absl::string_view kUnknown = "<unk>";
  static constexpr absl::string_view kEos = "<eos>";

  // The `max_size` (0: no limit; else >= 3, counting the two reserved
  // entries) most frequent words seen at least `min_count` (>= 1) times.
  static absl::StatusOr<Vocabulary> FromCounts(const absl::flat_hash_map<std::string, int64_t>& counts,
                                               int64_t max_size, int64_t min_count);
  // `words` in id order; "<unk>" and "<eos>" are appended when missing.
  // Empty words, words holding whitespace and repeats are InvalidArgument
  // "source:N: ..." (N: 1-based position).
  static absl::StatusOr<Vocabulary> FromWords(const std::vector<std::string>& words, const std::string& source);
  // One word per line (a "\r" before "\n" is dropped), as FromWords; an
  // empty file is InvalidArgument. With `lowercase` (the corpus is read
  // lowercased) each word is ASCII-lowercased as the text is, so that a
  // capitalized entry can match; two lines that become one word are
  // InvalidArgument naming both.
  static absl::StatusOr<Vocabulary> ReadFile(Env* env, const std::string& path, bool lowercase = false);

  // The id of `word`, or unknown_id().
  int32_t Id(absl::string_view word) const;
  int64_t size() const { return static_cast<int64_t>(words_.size()); }
  const std::vector<std::string>& words() const { return words_; }
  int32_t unknown_id() const { return unknown_id_; }
  int32_t eos_id() const { return eos_id_; }

 private:
  std::vector<std::string> words_;
  absl::flat_hash_map<std::string, int32_t> ids_;
  int32_t unknown_id_ = 0;
  int32_t eos_id_ = 1;
};

// Builds the vocabulary from split `from` of `corpus` (kTrain, or kAll for
// files that are the training set), as FromCounts. InvalidArgument when that
// split holds no tokens.
absl::StatusOr<Vocabulary> BuildVocabulary(Env* env, const Corpus& corpus, Split from, int64_t max_size,
                                           int64_t min_count);

// A split as one stream of ids: each sentence's word ids, then eos_id().
struct TokenStream {
  std::vector<int32_t> ids;
  int64_t sentences = 0;
  int64_t unknown = 0;  // words mapped to unknown_id()
};
absl::StatusOr<TokenStream> ReadTokenStream(Env* env, const Corpus& corpus, Split split, const Vocabulary& vocabulary);

// Windows of seq_len + 1 tokens starting every seq_len tokens: window w holds
// ids [w * seq_len, w * seq_len + seq_len], so its last seq_len tokens (the
// targets) are its first seq_len (the inputs) shifted by one, and every token
// but the first and the last partial window's is a target exactly once.
// REQUIRES: seq_len >= 1.
inline int64_t NumWindows(int64_t num_tokens, int64_t seq_len) {
  return num_tokens > seq_len ? (num_tokens - 1) / seq_len : 0;
}

}  // namespace text
}  // namespace sluice

#endif  // SLUICE_INPUTS_TEXT_H_
