#include "common/terminal_text.h"

#include <gtest/gtest.h>

namespace podvisor {
namespace {

// A termination message a hostile container could write: a window title
// (OSC 0 ... BEL), an erased line (CSI 2K), a carriage return that
// overwrites, a newline that forges a row, C1 CSI (U+009B) and bytes that
// are no UTF-8.
constexpr std::string_view kHostile =
    "\x1b]0;owned\x07"
    "\x1b[2K\rok\nfake row\t|\xc2\x9b"
    "31m\xff\xc3";

TEST(TerminalText, S14_20_EscapesEveryControlAndInvalidByte) {
  EXPECT_EQ(TerminalSafe(kHostile),
            "\\x1b]0;owned\\x07\\x1b[2K\\rok\\nfake row\\t|\\u009b31m\\xff\\xc3");
}

TEST(TerminalText, S14_20_KeepsPrintableUtf8AndBackslashes) {
  EXPECT_EQ(TerminalSafe("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 C:\\dir"),
            "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 C:\\dir");
  EXPECT_EQ(TerminalSafe(""), "");
}

TEST(TerminalText, S14_20_EscapesDelNulAndBidiControls) {
  EXPECT_EQ(TerminalSafe(std::string_view("a\x7f\0b", 4)), "a\\x7f\\x00b");
  // U+202E RIGHT-TO-LEFT OVERRIDE and U+2028 LINE SEPARATOR.
  EXPECT_EQ(TerminalSafe("x\xe2\x80\xaey\xe2\x80\xa8z"), "x\\u202ey\\u2028z");
}

TEST(TerminalText, S14_20_InvalidSequencesAreBytes) {
  // Overlong "/" (C0 AF), a UTF-16 surrogate (ED A0 80), past U+10FFFF
  // (F4 90 80 80), a lone continuation byte and a truncated sequence.
  EXPECT_EQ(TerminalSafe("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(TerminalSafe("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(TerminalSafe("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  EXPECT_EQ(TerminalSafe("\x80z"), "\\x80z");
  EXPECT_EQ(TerminalSafe("\xe2\x82"), "\\xe2\\x82");
  // An escaped C1 in its overlong two-byte form is not C1 at all.
  EXPECT_EQ(TerminalSafe("\xc1\x9b"), "\\xc1\\x9b");
}

TEST(TerminalText, S14_20_QuotedFormEscapesQuoteAndBackslash) {
  EXPECT_EQ(TerminalSafeQuoted("say \"hi\" \\ \x1b[31m\n"), "\"say \\\"hi\\\" \\\\ \\x1b[31m\\n\"");
}

TEST(TerminalText, S14_22_JsonFormEscapesControlsAndReplacesInvalidBytes) {
  EXPECT_EQ(TerminalSafeJson(kHostile),
            "\"\\u001b]0;owned\\u0007\\u001b[2K\\rok\\nfake row\\t|\\u009b31m\\ufffd\\ufffd\"");
  EXPECT_EQ(TerminalSafeJson("a\"b\\c\x7f"), "\"a\\\"b\\\\c\\u007f\"");
}

TEST(TerminalText, S14_21_DisplayWidthCountsColumnsNotBytes) {
  EXPECT_EQ(DisplayWidth("abc"), 3u);
  EXPECT_EQ(DisplayWidth("caf\xc3\xa9"), 4u);               // é: 2 bytes, 1 column
  EXPECT_EQ(DisplayWidth("\xe6\x97\xa5\xe6\x9c\xac"), 4u);  // 日本: wide
  EXPECT_EQ(DisplayWidth("e\xcc\x81"), 1u);                 // e + combining acute
  EXPECT_EQ(DisplayWidth("\xef\xbc\xa1"), 2u);              // fullwidth A
  EXPECT_EQ(DisplayWidth("\xf0\x9f\x98\x80"), 2u);          // emoji
  EXPECT_EQ(DisplayWidth(TerminalSafe("\x1b[2K")), 7u);     // "\x1b[2K" shown
}

}  // namespace
}  // namespace podvisor
