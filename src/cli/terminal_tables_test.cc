// The tables `status`, `list` and `events` print, fed text a container
// controls (S14.20, S14.21): the bytes printed are checked, not just that
// something was escaped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/client.h"
#include "cli/events_table.h"
#include "cli/pod_summary.h"

namespace podvisor::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// OSC 0 (window title) ended by BEL, CSI 2K (erase line), a carriage
// return, a newline that would forge a row, a tab, C1 CSI (U+009B) and a
// byte that is no UTF-8.
const std::string kHostile =
    "\x1b]0;owned\x07\x1b[2K\rok\nWarning   Forged   pod/x   fake\t|\xc2\x9b"
    "31m\xff";
const std::string kShown =
    "\\x1b]0;owned\\x07\\x1b[2K\\rok\\nWarning   Forged   pod/x   fake\\t|\\u009b31m\\xff";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0, nl;
  while ((nl = text.find('\n', start)) != std::string::npos) {
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  EXPECT_EQ(start, text.size()) << "a table ends with a newline";
  return lines;
}

TEST(TerminalTables, S14_21_HostileCellStaysOneEscapedCell) {
  const std::string table = FormatTable({{"NAME", "MESSAGE", "AGE"}, {"app", kHostile, "5s"}});
  EXPECT_THAT(Lines(table),
              ElementsAre("NAME   MESSAGE" + std::string(kShown.size() - 4, ' ') + "AGE",
                          "app    " + kShown + "   5s"));
  for (char c : table) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(c == '\n' || (u >= 0x20 && u != 0x7f && u < 0x80)) << int{u};
  }
}

TEST(TerminalTables, S14_21_WideCharactersAlignByColumnsNotBytes) {
  // "日本" is 6 bytes and 4 columns; "é" 2 bytes and 1 column.
  const std::string table =
      FormatTable({{"A", "B"}, {"\xe6\x97\xa5\xe6\x9c\xac", "x"}, {"caf\xc3\xa9", "y"}});
  EXPECT_THAT(Lines(table),
              ElementsAre("A      B", "\xe6\x97\xa5\xe6\x9c\xac   x", "caf\xc3\xa9   y"));
}

TEST(TerminalTables, S14_21_EventMessageCannotAddARow) {
  EventRecord e;
  e.time = std::chrono::system_clock::now();
  e.type = "Warning";
  e.reason = "FailedPostStartHook";
  e.object = "container/app";
  e.message = kHostile;
  const std::string table = FormatTable(EventTable({e}, "web", *e.time, false));
  const auto lines = Lines(table);
  ASSERT_EQ(lines.size(), 2u) << table;
  EXPECT_THAT(lines[1], HasSubstr("container/app   " + kShown));
  EXPECT_THAT(table, Not(HasSubstr("\x1b")));

  const std::string row = FormatTable({EventHeader(true), EventRow(e, "web", *e.time, true)});
  EXPECT_EQ(Lines(row).size(), 2u) << row;
  EXPECT_THAT(row, HasSubstr(kShown));
}

TEST(TerminalTables, S14_21_StatusTableEscapesWhatTheRecordHolds) {
  // The waiting reason and the image are shown; both come from the record,
  // which a hostile bundle or image shaped.
  nlohmann::json pod = {
      {"metadata", {{"name", "web"}, {"creationTimestamp", "2026-11-22T10:04:05Z"}}},
      {"spec", {{"containers", {{{"name", "app"}, {"image", "img\x1b[2K"}}}}}},
      {"status",
       {{"phase", "Pending"},
        {"containerStatuses",
         {{{"name", "app"},
           {"image", "img\x1b[2K\r"},
           {"ready", false},
           {"restartCount", 0},
           {"state", {{"waiting", {{"reason", "Bad\nReason\x1b]0;t\x07"}}}}}}}}}}};
  const WallTime now = std::chrono::system_clock::now();
  for (bool wide : {false, true}) {
    const std::string table = StatusTable(pod, wide, true, now);
    EXPECT_THAT(table, Not(HasSubstr("\x1b"))) << table;
    EXPECT_THAT(table, Not(HasSubstr("\r"))) << table;
    EXPECT_THAT(table, HasSubstr("Waiting: Bad\\nReason\\x1b]0;t\\x07"));
    // The pod's line, a blank line, the header and one container.
    EXPECT_EQ(Lines(table).size(), 5u) << table;
    if (wide) {
      EXPECT_THAT(table, HasSubstr("img\\x1b[2K\\r"));
    }
  }
}

}  // namespace
}  // namespace podvisor::cli
