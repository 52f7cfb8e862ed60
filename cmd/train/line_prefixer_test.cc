// Tests for line_prefixer.h: whole lines behind a prefix, whatever the chunks.
// Thread safety: single-threaded tests.
#include "cmd/train/line_prefixer.h"

#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(LinePrefixerTest, WritesOnlyCompleteLinesEachBehindThePrefix) {
  std::ostringstream sink;
  LinePrefixer lines("[ps:0] ", &sink);
  lines.Append("hel");
  EXPECT_EQ(sink.str(), "");
  lines.Append("lo\nwor");
  EXPECT_EQ(sink.str(), "[ps:0] hello\n");
  lines.Append("ld\n\nlast");
  EXPECT_EQ(sink.str(), "[ps:0] hello\n[ps:0] world\n[ps:0] \n");
  lines.Finish();
  EXPECT_EQ(sink.str(), "[ps:0] hello\n[ps:0] world\n[ps:0] \n[ps:0] last\n");
  lines.Finish();
  lines.Append("more\n");
  EXPECT_EQ(sink.str(), "[ps:0] hello\n[ps:0] world\n[ps:0] \n[ps:0] last\n");
}

TEST(LinePrefixerTest, ByteByByteGivesTheSameLines) {
  const std::string text = "one\ntwo three\n\nfour";
  std::ostringstream whole_sink, bytes_sink;
  LinePrefixer whole("[w:1] ", &whole_sink), bytes("[w:1] ", &bytes_sink);
  whole.Append(text);
  for (char c : text) bytes.Append(std::string(1, c));
  whole.Finish();
  bytes.Finish();
  EXPECT_EQ(bytes_sink.str(), whole_sink.str());
  EXPECT_EQ(whole_sink.str(), "[w:1] one\n[w:1] two three\n[w:1] \n[w:1] four\n");
}

TEST(LinePrefixerTest, FinishWithNothingPendingWritesNothing) {
  std::ostringstream sink;
  LinePrefixer lines("[x] ", &sink);
  lines.Append("done\n");
  lines.Finish();
  EXPECT_EQ(sink.str(), "[x] done\n");
}

TEST(LinePrefixerTest, AnEndlessLineIsWrittenInPiecesOfTheLimit) {
  std::ostringstream sink;
  LinePrefixer lines("> ", &sink, 4);
  lines.Append("abcdefghij");
  EXPECT_EQ(sink.str(), "> abcd\n> efgh\n");
  lines.Append("k\n");
  EXPECT_EQ(sink.str(), "> abcd\n> efgh\n> ijk\n");
}

}  // namespace
}  // namespace sluice
