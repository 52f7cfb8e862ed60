// Text corpora (text.h): the tokenizer, the lines and fortunes formats, the
// train/test split rule, the vocabulary (built, from a file, malformed), the
// token stream and its windows; inputs/testdata/corpus.fortunes is a small
// corpus of our own, and one test reads the fortunes package when installed.
#include "inputs/text.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/platform/env.h"
#include "engine/platform/test_dirs.h"
#include "gtest/gtest.h"

namespace sluice {
namespace text {
namespace {

using Tokens = std::vector<std::string>;

Tokens Tok(absl::string_view s) {
  Tokens t;
  Tokenize(s, &t);
  return t;
}

const char kCorpus[] = "inputs/testdata/corpus.fortunes";

TEST(Tokenize, SplitsPunctuationFromWords) {
  EXPECT_EQ(Tok("Hello, world!"), (Tokens{"Hello", ",", "world", "!"}));
  EXPECT_EQ(Tok("  (a)\t\"b\"  "), (Tokens{"(", "a", ")", "\"", "b", "\""}));
  EXPECT_EQ(Tok("wait..."), (Tokens{"wait", ".", ".", "."}));
  EXPECT_EQ(Tok(""), Tokens{});
  EXPECT_EQ(Tok(" \t\r\n"), Tokens{});
}

TEST(Tokenize, JoinsApostrophesHyphensAndPeriodsInsideWords) {
  EXPECT_EQ(Tok("don't re-use v4.2 e.g. 'quoted'"),
            (Tokens{"don't", "re-use", "v4.2", "e.g", ".", "'", "quoted", "'"}));
  EXPECT_EQ(Tok("a--b"), (Tokens{"a", "-", "-", "b"}));
  EXPECT_EQ(Tok("-- Mark"), (Tokens{"-", "-", "Mark"}));
}

TEST(Tokenize, OverstrikingAndUtf8) {
  EXPECT_EQ(Tok("_\bn is _\bi\bt"), (Tokens{"n", "is", "t"}));  // underlines and a double overstrike
  EXPECT_EQ(Tok("____\b\b\b\bdoes"), (Tokens{"does"}));
  EXPECT_EQ(Tok("\bx"), (Tokens{"x"}));  // nothing to erase
  EXPECT_EQ(Tok("caf\xc3\xa9 na\xc3\xafve"), (Tokens{"caf\xc3\xa9", "na\xc3\xafve"}));
  EXPECT_EQ(Tok("a\x01" "b\x7f" "c"), (Tokens{"a", "b", "c"}));  // control bytes separate
}

TEST(Tokenize, Lowercase) {
  Tokens t = Tok("The CAT's Caf\xc3\x89");
  Lowercase(&t);
  EXPECT_EQ(t, (Tokens{"the", "cat's", "caf\xc3\x89"}));  // ASCII only
}

struct Sentence {
  Tokens tokens;
  int64_t line;
};

std::vector<Sentence> Sentences(absl::string_view contents, Format format) {
  std::vector<Sentence> out;
  absl::Status s = ForEachSentence("f.txt", contents, format,
                                   [&](const Tokens& t, int64_t line) { out.push_back({t, line}); });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(Formats, LinesAreSentencesAndEmptyLinesAreSkipped) {
  auto s = Sentences("one two\r\n\n  \nthree.\nfour", Format::kLines);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].tokens, (Tokens{"one", "two"}));
  EXPECT_EQ(s[0].line, 1);
  EXPECT_EQ(s[1].tokens, (Tokens{"three", "."}));
  EXPECT_EQ(s[1].line, 4);
  EXPECT_EQ(s[2].tokens, (Tokens{"four"}));
  EXPECT_EQ(s[2].line, 5);
}

TEST(Formats, FortunesAreQuotationsBetweenPercentLines) {
  auto s = Sentences("First line\nsecond line.\n%\n%\n\n%\r\nA 50% cut\n\t-- Someone\n%\n", Format::kFortunes);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].tokens, (Tokens{"First", "line", "second", "line", "."}));
  EXPECT_EQ(s[0].line, 1);
  EXPECT_EQ(s[1].tokens, (Tokens{"A", "50", "%", "cut", "-", "-", "Someone"}));
  EXPECT_EQ(s[1].line, 7);
  // A file without '%' lines is one quotation; its end closes the last one.
  EXPECT_EQ(Sentences("a\nb", Format::kFortunes).size(), 1u);
}

TEST(Formats, ANulByteIsAnErrorNamingFileAndLine) {
  absl::Status s = ForEachSentence("art.dat", std::string("ok\nalso ok\nbad\0byte\n", 20), Format::kFortunes,
                                   [](const Tokens&, int64_t) {});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "art.dat:3:")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "offset 14")) << s;
}

TEST(Formats, ParseFormat) {
  EXPECT_EQ(*ParseFormat("lines"), Format::kLines);
  EXPECT_EQ(*ParseFormat("fortunes"), Format::kFortunes);
  EXPECT_TRUE(absl::IsInvalidArgument(ParseFormat("csv").status()));
}

TEST(Split, IsDeterministicAboutOneInTenAndFollowsTheTokensAlone) {
  int64_t test = 0;
  const int64_t n = 20000;
  for (int64_t i = 0; i < n; ++i) {
    Tokens t = {"sentence", absl::StrCat(i), "."};
    const Split first = SentenceSplit(t);
    EXPECT_EQ(first, SentenceSplit(t));
    test += first == Split::kTest;
  }
  EXPECT_GT(test, n * 9 / 100);
  EXPECT_LT(test, n * 11 / 100);
  // Pinned values (computed independently in Python): the rule must not
  // drift, or a corpus's split would change under trained models.
  EXPECT_EQ(SentenceHash({"hello", "world"}), 0xf1b17ec8c678939bull);
  EXPECT_EQ(SentenceHash({"The", "cat", "."}), 0x40465d05d5c497e8ull);
  // Token boundaries count.
  EXPECT_NE(SentenceHash({"a", "b"}), SentenceHash({"ab"}));
  // Case matters to the rule (it sees the file's tokens before lowercasing).
  int differ = 0;
  for (int i = 0; i < 100; ++i) {
    differ += SentenceHash({absl::StrCat("Word", i)}) != SentenceHash({absl::StrCat("word", i)});
  }
  EXPECT_EQ(differ, 100);
}

TEST(Split, TrainAndTestPartitionTheCorpus) {
  Corpus c;
  c.files = {kCorpus};
  c.format = Format::kFortunes;
  c.lowercase = false;
  std::vector<std::string> all, train, test;
  auto contents = ReadFileToString(Env::Default(), kCorpus);
  ASSERT_TRUE(contents.ok()) << contents.status();
  ASSERT_TRUE(ForEachSentence(kCorpus, *contents, Format::kFortunes,
                              [&](const Tokens& t, int64_t) { all.push_back(absl::StrJoin(t, " ")); })
                  .ok());
  ASSERT_TRUE(ForEachSplitSentence(Env::Default(), c, Split::kTrain,
                                   [&](const Tokens& t) { train.push_back(absl::StrJoin(t, " ")); })
                  .ok());
  ASSERT_TRUE(ForEachSplitSentence(Env::Default(), c, Split::kTest,
                                   [&](const Tokens& t) { test.push_back(absl::StrJoin(t, " ")); })
                  .ok());
  EXPECT_EQ(all.size(), 40u);
  EXPECT_EQ(train.size() + test.size(), all.size());
  EXPECT_FALSE(test.empty());
  EXPECT_FALSE(train.empty());
  std::set<std::string> a(all.begin(), all.end()), tr(train.begin(), train.end()), te(test.begin(), test.end());
  for (const std::string& s : te) EXPECT_EQ(tr.count(s), 0u) << s;
  std::set<std::string> both = tr;
  both.insert(te.begin(), te.end());
  EXPECT_EQ(both, a);
}

absl::flat_hash_map<std::string, int64_t> Counts(const std::vector<std::pair<std::string, int64_t>>& v) {
  return absl::flat_hash_map<std::string, int64_t>(v.begin(), v.end());
}

TEST(Vocabulary, FrequencyOrderTiesInByteOrderReservedIdsFirst) {
  auto v = Vocabulary::FromCounts(Counts({{"b", 5}, {"a", 5}, {"the", 9}, {"z", 1}, {"B", 5}}), 0, 1);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->words(), (Tokens{"<unk>", "<eos>", "the", "B", "a", "b", "z"}));
  EXPECT_EQ(v->unknown_id(), 0);
  EXPECT_EQ(v->eos_id(), 1);
  EXPECT_EQ(v->Id("the"), 2);
  EXPECT_EQ(v->Id("z"), 6);
  EXPECT_EQ(v->Id("never-seen"), 0);
  EXPECT_EQ(v->Id("<eos>"), 1);
}

TEST(Vocabulary, MaxSizeAndMinCount) {
  auto counts = Counts({{"a", 3}, {"b", 2}, {"c", 2}, {"d", 1}});
  auto v = Vocabulary::FromCounts(counts, 4, 1);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->words(), (Tokens{"<unk>", "<eos>", "a", "b"}));  // b before c: the tie goes by bytes
  EXPECT_EQ(v->Id("c"), 0);
  v = Vocabulary::FromCounts(counts, 0, 2);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->size(), 5);
  EXPECT_EQ(v->Id("d"), v->unknown_id());
  EXPECT_TRUE(absl::IsInvalidArgument(Vocabulary::FromCounts(counts, 2, 1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Vocabulary::FromCounts(counts, 0, 0).status()));
}

TEST(Vocabulary, FromAFileKeepsItsOrderAndAddsTheReservedWords) {
  const std::string dir = FreshTestDir("vocab_file");
  const std::string path = dir + "/vocab.txt";
  ASSERT_TRUE(WriteStringToFile(Env::Default(), path, "the\r\n<eos>\ncat\n").ok());
  auto v = Vocabulary::ReadFile(Env::Default(), path);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->words(), (Tokens{"the", "<eos>", "cat", "<unk>"}));
  EXPECT_EQ(v->eos_id(), 1);
  EXPECT_EQ(v->unknown_id(), 3);
  EXPECT_EQ(v->Id("dog"), 3);
  EXPECT_EQ(v->Id("cat"), 2);
}

TEST(Vocabulary, MalformedFilesAreErrorsNamingTheLine) {
  const std::string dir = FreshTestDir("vocab_bad");
  struct Case {
    std::string contents, expect;
  };
  for (const Case& c : std::vector<Case>{{"", "is empty"},
                                         {"a\nb\na\n", ":3: 'a' is listed twice (first at 1)"},
                                         {"a\n\nb\n", ":2: an empty word"},
                                         {"a\nb c\n", ":2: the word 'b c' holds whitespace"},
                                         {"a\nb\n\n", ":3: an empty word"}}) {
    const std::string path = dir + "/v.txt";
    ASSERT_TRUE(WriteStringToFile(Env::Default(), path, c.contents).ok());
    auto v = Vocabulary::ReadFile(Env::Default(), path);
    ASSERT_FALSE(v.ok()) << c.contents;
    EXPECT_TRUE(absl::IsInvalidArgument(v.status())) << v.status();
    EXPECT_TRUE(absl::StrContains(v.status().message(), path)) << v.status();
    EXPECT_TRUE(absl::StrContains(v.status().message(), c.expect)) << v.status() << " lacks " << c.expect;
  }
  EXPECT_TRUE(absl::IsNotFound(Vocabulary::ReadFile(Env::Default(), dir + "/missing.txt").status()));
}

// Read for a lowercased corpus, a vocabulary file's words are lowercased as
// the text is ("The" could never match); two that become one are an error.
TEST(Vocabulary, AFileForALowercasedCorpusIsLowercasedToo) {
  const std::string dir = FreshTestDir("vocab_case");
  const std::string path = dir + "/vocab.txt";
  ASSERT_TRUE(WriteStringToFile(Env::Default(), path, "The\nCat\n<EOS>\n").ok());
  auto lowered = Vocabulary::ReadFile(Env::Default(), path, /*lowercase=*/true);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->words(), (Tokens{"the", "cat", "<eos>", "<unk>"}));
  EXPECT_EQ(lowered->Id("cat"), 1);
  auto kept = Vocabulary::ReadFile(Env::Default(), path);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->Id("cat"), kept->unknown_id());
  EXPECT_EQ(kept->Id("Cat"), 1);

  ASSERT_TRUE(WriteStringToFile(Env::Default(), path, "the\ncat\nThe\n").ok());
  auto clash = Vocabulary::ReadFile(Env::Default(), path, /*lowercase=*/true);
  ASSERT_FALSE(clash.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(clash.status())) << clash.status();
  EXPECT_TRUE(absl::StrContains(clash.status().message(),
                                ":3: 'The' and 'the' (line 1) are one word once lowercased, as the text is (keep_case: false)"))
      << clash.status();
  EXPECT_TRUE(Vocabulary::ReadFile(Env::Default(), path).ok());  // kept case: three words
}

TEST(Vocabulary, BuiltFromTheTrainSplitOnly) {
  Corpus c;
  c.files = {kCorpus};
  c.format = Format::kFortunes;
  auto v = BuildVocabulary(Env::Default(), c, Split::kTrain, 0, 1);
  ASSERT_TRUE(v.ok()) << v.status();
  std::set<std::string> train_words, test_words;
  ASSERT_TRUE(ForEachSplitSentence(Env::Default(), c, Split::kTrain, [&](const Tokens& t) {
                train_words.insert(t.begin(), t.end());
              }).ok());
  ASSERT_TRUE(ForEachSplitSentence(Env::Default(), c, Split::kTest, [&](const Tokens& t) {
                test_words.insert(t.begin(), t.end());
              }).ok());
  EXPECT_EQ(v->size(), static_cast<int64_t>(train_words.size()) + 2);
  EXPECT_EQ(v->words()[2], "the");  // the most frequent word
  EXPECT_EQ(v->Id("The"), v->unknown_id());  // lowercased corpus
  int only_in_test = 0;
  for (const std::string& w : test_words) {
    if (train_words.count(w) == 0) {
      ++only_in_test;
      EXPECT_EQ(v->Id(w), v->unknown_id()) << w;
    }
  }
  EXPECT_GT(only_in_test, 0);  // the test split has words of its own: OOV at eval
}

TEST(Split, AllIsEverySentence) {
  Corpus c;
  c.files = {kCorpus};
  c.format = Format::kFortunes;
  int64_t all = 0, train = 0;
  ASSERT_TRUE(ForEachSplitSentence(Env::Default(), c, Split::kAll, [&](const Tokens&) { ++all; }).ok());
  ASSERT_TRUE(ForEachSplitSentence(Env::Default(), c, Split::kTrain, [&](const Tokens&) { ++train; }).ok());
  EXPECT_EQ(all, 40);
  EXPECT_LT(train, all);
  auto from_all = BuildVocabulary(Env::Default(), c, Split::kAll, 0, 1);
  auto from_train = BuildVocabulary(Env::Default(), c, Split::kTrain, 0, 1);
  ASSERT_TRUE(from_all.ok() && from_train.ok());
  EXPECT_GT(from_all->size(), from_train->size());  // the test split's own words
}

TEST(Vocabulary, AnEmptyTrainSplitIsAnError) {
  const std::string dir = FreshTestDir("empty_corpus");
  ASSERT_TRUE(WriteStringToFile(Env::Default(), dir + "/c.txt", "%\n%\n").ok());
  Corpus c;
  c.files = {dir + "/c.txt"};
  c.format = Format::kFortunes;
  auto v = BuildVocabulary(Env::Default(), c, Split::kTrain, 0, 1);
  EXPECT_TRUE(absl::IsInvalidArgument(v.status())) << v.status();
  EXPECT_TRUE(absl::StrContains(v.status().message(), "no words")) << v.status();
}

TEST(TokenStream, SentencesEndWithEosAndUnknownWordsAreCounted) {
  const std::string dir = FreshTestDir("stream");
  ASSERT_TRUE(WriteStringToFile(Env::Default(), dir + "/a.txt", "The cat.\nA dog!\n").ok());
  Corpus c;
  c.files = {dir + "/a.txt"};
  c.format = Format::kLines;
  auto v = Vocabulary::FromWords({"<unk>", "<eos>", "the", "cat", "."}, "test");
  ASSERT_TRUE(v.ok());
  // Both sentences' splits, in file order.
  std::vector<int32_t> expect;
  int64_t expect_unknown = 0;
  for (const Tokens& t : {Tokens{"The", "cat", "."}, Tokens{"A", "dog", "!"}}) {
    if (SentenceSplit(t) != Split::kTrain) continue;
    Tokens lower = t;
    Lowercase(&lower);
    for (const std::string& w : lower) {
      expect.push_back(v->Id(w));
      expect_unknown += v->Id(w) == 0;
    }
    expect.push_back(1);
  }
  auto s = ReadTokenStream(Env::Default(), c, Split::kTrain, *v);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->ids, expect);
  EXPECT_EQ(s->unknown, expect_unknown);
  // A missing file is the Env's NotFound naming it.
  c.files.push_back(dir + "/missing.txt");
  s = ReadTokenStream(Env::Default(), c, Split::kTrain, *v);
  EXPECT_TRUE(absl::IsNotFound(s.status())) << s.status();
  EXPECT_TRUE(absl::StrContains(s.status().message(), "missing.txt")) << s.status();
}

TEST(Windows, CountsAndTargetsAreInputsShiftedByOne) {
  EXPECT_EQ(NumWindows(0, 3), 0);
  EXPECT_EQ(NumWindows(3, 3), 0);
  EXPECT_EQ(NumWindows(4, 3), 1);
  EXPECT_EQ(NumWindows(6, 3), 1);
  EXPECT_EQ(NumWindows(7, 3), 2);
  EXPECT_EQ(NumWindows(100, 1), 99);
  // Windows of 4 over 0..9 with seq_len 3: [0..3], [3..6], [6..9]; every
  // token after the first is a target once.
  const int64_t seq_len = 3, n = 10;
  std::vector<int> target_count(n, 0);
  for (int64_t w = 0; w < NumWindows(n, seq_len); ++w) {
    for (int64_t i = 1; i <= seq_len; ++i) ++target_count[w * seq_len + i];
  }
  for (int64_t t = 1; t < n; ++t) EXPECT_EQ(target_count[t], 1) << t;
}

TEST(ExpandFiles, PatternOrderExcludesAndMissingPatterns) {
  const std::string dir = FreshTestDir("expand");
  for (const char* f : {"b", "a", "a.dat", "c.u8"}) ASSERT_TRUE(WriteStringToFile(Env::Default(), dir + "/" + f, "x").ok());
  auto files = ExpandFiles(Env::Default(), {dir + "/b", dir + "/*"}, {"*.dat", "*.u8"});
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(*files, (std::vector<std::string>{dir + "/b", dir + "/a"}));
  auto none = ExpandFiles(Env::Default(), {dir + "/*.dat"}, {"*.dat"});
  EXPECT_TRUE(absl::IsNotFound(none.status())) << none.status();
  EXPECT_TRUE(absl::StrContains(none.status().message(), "outside the 'exclude' patterns")) << none.status();
  EXPECT_TRUE(absl::IsNotFound(ExpandFiles(Env::Default(), {dir + "/zzz*"}, {}).status()));
}

// The corpus the example configs use, when the fortunes package is installed
// (tools/setup.sh installs it): its split is about one in ten.
TEST(FortunesPackage, SplitIsAboutOneInTen) {
  const std::string dir = "/usr/share/games/fortunes";
  if (!Env::Default()->FileExists(dir + "/fortunes").ok()) {
    GTEST_SKIP() << dir << " is missing: install the Debian package 'fortunes' (tools/setup.sh)";
  }
  auto files = ExpandFiles(Env::Default(), {dir + "/*"}, {"*.dat", "*.u8"});
  ASSERT_TRUE(files.ok()) << files.status();
  Corpus c;
  c.files = *files;
  c.format = Format::kFortunes;
  int64_t sentences[2] = {0, 0}, tokens[2] = {0, 0};
  for (Split split : {Split::kTrain, Split::kTest}) {
    ASSERT_TRUE(ForEachSplitSentence(Env::Default(), c, split, [&](const Tokens& t) {
                  ++sentences[static_cast<int>(split)];
                  tokens[static_cast<int>(split)] += static_cast<int64_t>(t.size());
                }).ok());
  }
  const double fraction = static_cast<double>(sentences[1]) / (sentences[0] + sentences[1]);
  EXPECT_GT(fraction, 0.08);
  EXPECT_LT(fraction, 0.12);
  EXPECT_GT(tokens[0], 300000);
  auto v = BuildVocabulary(Env::Default(), c, Split::kTrain, 0, 1);
  ASSERT_TRUE(v.ok()) << v.status();
  std::printf("fortunes: %zu files; train %lld quotations, %lld tokens; test %lld quotations, %lld tokens; "
              "vocabulary (min_count 1) %lld words\n",
              files->size(), static_cast<long long>(sentences[0]), static_cast<long long>(tokens[0]),
              static_cast<long long>(sentences[1]), static_cast<long long>(tokens[1]),
              static_cast<long long>(v->size()));
}

}  // namespace
}  // namespace text
}  // namespace sluice
