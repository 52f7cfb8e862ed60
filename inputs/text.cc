// Text corpora: tokenizer, sentence formats, split rule, vocabulary.
#include "inputs/text.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace sluice {
namespace text {
namespace {

bool IsWordByte(unsigned char c) { return absl::ascii_isalnum(c) || c >= 0x80; }
bool IsJoiner(unsigned char c) { return c == '\'' || c == '-' || c == '.'; }

// 1-based line number of byte `offset` in `contents`.
int64_t LineOf(absl::string_view contents, size_t offset) {
  return 1 + std::count(contents.begin(), contents.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
}

}  // namespace

void Tokenize(absl::string_view sentence, std::vector<std::string>* tokens) {
  // Overstriking first: a backspace erases the byte before it.
  std::string clean;
  absl::string_view s = sentence;
  if (std::memchr(sentence.data(), '\b', sentence.size()) != nullptr) {
    clean.reserve(sentence.size());
    for (char c : sentence) {
      if (c == '\b') {
        if (!clean.empty()) clean.pop_back();
      } else {
        clean.push_back(c);
      }
    }
    s = clean;
  }
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (IsWordByte(c)) {
      size_t j = i + 1;
      while (j < n) {
        const unsigned char d = static_cast<unsigned char>(s[j]);
        if (IsWordByte(d)) {
          ++j;
        } else if (IsJoiner(d) && j + 1 < n && IsWordByte(static_cast<unsigned char>(s[j + 1]))) {
          j += 2;
        } else {
          break;
        }
      }
      tokens->emplace_back(s.substr(i, j - i));
      i = j;
    } else {
      if (c > 0x20 && c < 0x7f) tokens->emplace_back(1, static_cast<char>(c));
      ++i;
    }
  }
}

void Lowercase(std::vector<std::string>* tokens) {
  for (std::string& t : *tokens) absl::AsciiStrToLower(&t);
}

absl::StatusOr<Format> ParseFormat(absl::string_view name) {
  if (name == "lines") return Format::kLines;
  if (name == "fortunes") return Format::kFortunes;
  return absl::InvalidArgumentError(absl::StrCat("text format '", name, "' is not 'lines' or 'fortunes'"));
}

absl::Status ForEachSentence(const std::string& path, absl::string_view contents, Format format,
                             const std::function<void(const std::vector<std::string>&, int64_t line)>& fn) {
  if (const void* nul = std::memchr(contents.data(), '\0', contents.size()); nul != nullptr) {
    const size_t at = static_cast<const char*>(nul) - contents.data();
    return absl::InvalidArgumentError(absl::StrCat(path, ":", LineOf(contents, at), ": a NUL byte at offset ", at,
                                                   ": not a text file (a fortune file's strfile index '.dat'?)"));
  }
  std::vector<std::string> tokens;
  std::string record;        // kFortunes: the quotation so far
  int64_t record_line = 0;   // its first line
  int64_t line = 0;
  size_t pos = 0;
  auto flush = [&]() {
    tokens.clear();
    Tokenize(record, &tokens);
    if (!tokens.empty()) fn(tokens, record_line);
    record.clear();
    record_line = 0;
  };
  while (pos < contents.size()) {
    const char* start = contents.data() + pos;
    const void* nl = std::memchr(start, '\n', contents.size() - pos);
    size_t len = nl == nullptr ? contents.size() - pos : static_cast<const char*>(nl) - start;
    absl::string_view text(start, len);
    pos += len + 1;
    ++line;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (format == Format::kLines) {
      tokens.clear();
      Tokenize(text, &tokens);
      if (!tokens.empty()) fn(tokens, line);
    } else if (text == "%") {
      flush();
    } else {
      if (record_line == 0) record_line = line;
      absl::StrAppend(&record, text, "\n");
    }
  }
  if (format == Format::kFortunes) flush();
  return absl::OkStatus();
}

uint64_t SentenceHash(const std::vector<std::string>& tokens) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  auto add = [&h](unsigned char c) {
    h ^= c;
    h *= 0x100000001b3ull;
  };
  for (const std::string& t : tokens) {
    for (char c : t) add(static_cast<unsigned char>(c));
    add(' ');
  }
  // splitmix64's finalizer: FNV's low bits alone are poorly mixed.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

Split SentenceSplit(const std::vector<std::string>& tokens) {
  return SentenceHash(tokens) % 10 == 0 ? Split::kTest : Split::kTrain;
}

absl::StatusOr<std::vector<std::string>> ExpandFiles(Env* env, const std::vector<std::string>& patterns,
                                                     const std::vector<std::string>& exclude) {
  std::vector<std::string> files;
  absl::flat_hash_set<std::string> seen;
  for (const std::string& pattern : patterns) {
    auto matches = env->GetMatchingPaths(pattern);
    if (!matches.ok()) return matches.status();
    int64_t kept = 0;
    for (const std::string& m : *matches) {
      bool excluded = false;
      for (const std::string& x : exclude) excluded = excluded || ::fnmatch(x.c_str(), m.c_str(), 0) == 0;
      if (excluded) continue;
      ++kept;
      if (seen.insert(m).second) files.push_back(m);
    }
    if (kept == 0) {
      return absl::NotFoundError(absl::StrCat("no file matches '", pattern, "'",
                                              matches->empty() ? "" : " outside the 'exclude' patterns"));
    }
  }
  if (files.empty()) return absl::InvalidArgumentError("the text corpus lists no files");
  return files;
}

absl::Status ForEachSplitSentence(Env* env, const Corpus& corpus, Split split,
                                  const std::function<void(const std::vector<std::string>&)>& fn) {
  std::vector<std::string> lowered;
  for (const std::string& path : corpus.files) {
    auto contents = ReadFileToString(env, path, corpus.max_file_bytes);
    if (!contents.ok()) return contents.status();
    absl::Status s = ForEachSentence(path, *contents, corpus.format,
                                     [&](const std::vector<std::string>& tokens, int64_t) {
                                       if (split != Split::kAll && SentenceSplit(tokens) != split) return;
                                       if (!corpus.lowercase) {
                                         fn(tokens);
                                         return;
                                       }
                                       lowered = tokens;
                                       Lowercase(&lowered);
                                       fn(lowered);
                                     });
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<Vocabulary> Vocabulary::FromCounts(const absl::flat_hash_map<std::string, int64_t>& counts,
                                                  int64_t max_size, int64_t min_count) {
  if (max_size != 0 && max_size < 3) {
    return absl::InvalidArgumentError(absl::StrCat("vocabulary max_size ", max_size,
                                                   " leaves no room for a word beside <unk> and <eos> (use >= 3, or 0 for no limit)"));
  }
  if (min_count < 1) return absl::InvalidArgumentError(absl::StrCat("vocabulary min_count ", min_count, " must be >= 1"));
  std::vector<std::pair<int64_t, const std::string*>> ranked;
  for (const auto& [word, n] : counts) {
    if (n >= min_count && word != kUnknown && word != kEos) ranked.push_back({n, &word});
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });
  if (max_size != 0 && static_cast<int64_t>(ranked.size()) > max_size - 2) ranked.resize(max_size - 2);
  Vocabulary v;
  v.words_ = {std::string(kUnknown), std::string(kEos)};
  for (const auto& [n, word] : ranked) v.words_.push_back(*word);
  for (size_t i = 0; i < v.words_.size(); ++i) v.ids_[v.words_[i]] = static_cast<int32_t>(i);
  return v;
}

absl::StatusOr<Vocabulary> Vocabulary::FromWords(const std::vector<std::string>& words, const std::string& source) {
  if (words.size() >= (size_t{1} << 31) - 2) {
    return absl::ResourceExhaustedError(absl::StrCat(source, ": ", words.size(), " words are too many for int32 ids"));
  }
  Vocabulary v;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ":", i + 1, ": an empty word"));
    for (char c : w) {
      if (absl::ascii_isspace(static_cast<unsigned char>(c)) || c == '\0') {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ":", i + 1, ": the word '", absl::CEscape(w), "' holds whitespace"));
      }
    }
    auto [it, added] = v.ids_.insert({w, static_cast<int32_t>(i)});
    if (!added) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", i + 1, ": '", w, "' is listed twice (first at ", it->second + 1, ")"));
    }
    v.words_.push_back(w);
  }
  for (absl::string_view reserved : {kUnknown, kEos}) {
    if (!v.ids_.contains(reserved)) {
      v.ids_[reserved] = static_cast<int32_t>(v.words_.size());
      v.words_.emplace_back(reserved);
    }
  }
  v.unknown_id_ = v.ids_[kUnknown];
  v.eos_id_ = v.ids_[kEos];
  return v;
}

absl::StatusOr<Vocabulary> Vocabulary::ReadFile(Env* env, const std::string& path, bool lowercase) {
  auto contents = ReadFileToString(env, path, uint64_t{1} << 30);
  if (!contents.ok()) return contents.status();
  if (contents->empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": the vocabulary file is empty"));
  std::vector<std::string> words;
  size_t pos = 0;
  while (pos < contents->size()) {
    size_t nl = contents->find('\n', pos);
    if (nl == std::string::npos) nl = contents->size();
    absl::string_view w(contents->data() + pos, nl - pos);
    if (!w.empty() && w.back() == '\r') w.remove_suffix(1);
    words.emplace_back(w);
    pos = nl + 1;
  }
  if (lowercase) {
    const std::vector<std::string> written = words;
    absl::flat_hash_map<std::string, size_t> first_of;  // lowercased word -> its first index
    for (size_t i = 0; i < words.size(); ++i) {
      absl::AsciiStrToLower(&words[i]);
      auto [it, added] = first_of.insert({words[i], i});
      // (The same word twice as written: FromWords says so.)
      if (!added && written[i] != written[it->second]) {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", i + 1, ": '", written[i], "' and '", written[it->second],
                                                       "' (line ", it->second + 1, ") are one word once lowercased, "
                                                       "as the text is (keep_case: false)"));
      }
    }
  }
  return FromWords(words, path);
}

int32_t Vocabulary::Id(absl::string_view word) const {
  auto it = ids_.find(word);
  return it == ids_.end() ? unknown_id_ : it->second;
}

absl::StatusOr<Vocabulary> BuildVocabulary(Env* env, const Corpus& corpus, Split from, int64_t max_size,
                                           int64_t min_count) {
  absl::flat_hash_map<std::string, int64_t> counts;
  int64_t tokens = 0;
  absl::Status s = ForEachSplitSentence(env, corpus, from, [&](const std::vector<std::string>& sentence) {
    for (const std::string& t : sentence) ++counts[t];
    tokens += static_cast<int64_t>(sentence.size());
  });
  if (!s.ok()) return s;
  if (tokens == 0) {
    return absl::InvalidArgumentError(absl::StrCat(from == Split::kAll ? "the text corpus (" : "the train split of the text corpus (",
                                                   corpus.files.size(), corpus.files.size() == 1 ? " file" : " files",
                                                   ", first '", corpus.files.empty() ? "" : corpus.files[0],
                                                   "') holds no words to build a vocabulary from"));
  }
  return Vocabulary::FromCounts(counts, max_size, min_count);
}

absl::StatusOr<TokenStream> ReadTokenStream(Env* env, const Corpus& corpus, Split split, const Vocabulary& vocabulary) {
  TokenStream out;
  absl::Status s = ForEachSplitSentence(env, corpus, split, [&](const std::vector<std::string>& sentence) {
    for (const std::string& t : sentence) {
      const int32_t id = vocabulary.Id(t);
      out.unknown += id == vocabulary.unknown_id() && t != Vocabulary::kUnknown;
      out.ids.push_back(id);
    }
    out.ids.push_back(vocabulary.eos_id());
    ++out.sentences;
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace text
}  // namespace sluice
