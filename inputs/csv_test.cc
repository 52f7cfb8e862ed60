// CSV lines and the LineReader.
#include "inputs/csv.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "inputs/line_reader.h"
#include "engine/platform/env.h"
#include "engine/platform/test_dirs.h"

namespace sluice {
namespace {

using Fields = std::vector<std::string>;

Fields Parse(const std::string& line, bool quotes = true, char delim = ',') {
  Fields f;
  absl::Status s = ParseCsvLine(line, delim, quotes, &f);
  EXPECT_TRUE(s.ok()) << line << ": " << s;
  return f;
}

TEST(Csv, Splits) {
  EXPECT_EQ(Parse("a,b,c"), (Fields{"a", "b", "c"}));
  EXPECT_EQ(Parse(""), (Fields{""}));
  EXPECT_EQ(Parse(",,"), (Fields{"", "", ""}));
  EXPECT_EQ(Parse("1;2", true, ';'), (Fields{"1", "2"}));
  EXPECT_EQ(Parse("\"a,b\",\"say \"\"hi\"\"\",x"), (Fields{"a,b", "say \"hi\"", "x"}));
  EXPECT_EQ(Parse("\"a,b\"", false), (Fields{"\"a", "b\""}));
}

TEST(Csv, BadQuotingIsInvalidArgument) {
  Fields f;
  EXPECT_TRUE(absl::IsInvalidArgument(ParseCsvLine("\"open", ',', true, &f)));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseCsvLine("\"a\"b,c", ',', true, &f)));
}

TEST(Csv, RoundTrips) {
  std::vector<Fields> cases = {{"plain", "1.5", ""}, {"a,b", "q\"uote", "line\nbreak"}, {""}, {"", ""}};
  for (const Fields& c : cases) EXPECT_EQ(Parse(FormatCsvLine(c)), c);
}

TEST(LineReader, ReadsLinesAcrossBufferBoundaries) {
  const std::string dir = FreshTestDir("lines_across_buffers");
  Env* env = Env::Default();
  std::string text;
  std::vector<std::string> lines;
  for (int i = 0; i < 5000; ++i) {
    lines.push_back(std::string(i % 97, 'a' + i % 26) + absl::StrCat(i));
    text += lines.back() + (i % 3 == 0 ? "\r\n" : "\n");
  }
  text += "last";
  lines.push_back("last");
  ASSERT_TRUE(WriteStringToFile(env, JoinPath(dir, "t.txt"), text).ok());
  auto file = env->NewRandomAccessFile(JoinPath(dir, "t.txt"));
  ASSERT_TRUE(file.ok());
  LineReader reader(file->get());
  uint64_t offset = 0;
  std::string line;
  std::vector<std::string> got;
  absl::Status s;
  while ((s = reader.ReadLine(&offset, &line)).ok()) got.push_back(line);
  EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
  EXPECT_EQ(got, lines);
  EXPECT_EQ(offset, text.size());
}

TEST(LineReader, OverlongLineIsResourceExhausted) {
  const std::string path = JoinPath(FreshTestDir("overlong_line"), "t");
  ASSERT_TRUE(WriteStringToFile(Env::Default(), path, std::string(100, 'x') + "\n").ok());
  auto file = Env::Default()->NewRandomAccessFile(path);
  ASSERT_TRUE(file.ok());
  LineReader reader(file->get(), 50);
  uint64_t offset = 0;
  std::string line;
  EXPECT_TRUE(absl::IsResourceExhausted(reader.ReadLine(&offset, &line)));
}

}  // namespace
}  // namespace sluice
