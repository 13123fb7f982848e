// Text a container, an image or a bundle controls, made safe to print on
// the operator's terminal (docs/SEMANTICS.md S14.20 to S14.22): the one
// escaper of every table, `describe`, `run`'s last lines and the
// supervisor's log on stderr. It is not for machine outputs (`-o json`,
// `-o yaml`, `-o jsonpath`, events.jsonl) nor for a container's own log
// (`podvisor logs`), which keep the exact bytes.
//
// A terminal obeys what it is sent: ESC ] 0 ; ... BEL sets the window
// title, CSI 2K erases a line, \r goes back to overwrite what was printed,
// and U+009B is CSI in one code point. So every control character, and
// every byte that is not part of valid UTF-8, is shown as visible text:
//
//   \n \r \t          those three C0 characters
//   \xHH              any other C0 byte, DEL (\x7f), and each byte of an
//                     invalid UTF-8 sequence (\xff, \xc3 of a truncated é)
//   \uHHHH            C1 code points U+0080..U+009F, the bidi controls
//                     (U+061C, U+200E, U+200F, U+202A..U+202E,
//                     U+2066..U+2069) and the line and paragraph separators
//                     U+2028, U+2029
//
// the same form as Go's %q and JSON for the code points. A backslash is
// left as is in the plain form (a container can print the four characters
// `\x1b` itself; -o json has the exact text); the quoted form escapes it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace podvisor {

// `text` with every character above escaped; all else as is. The result
// holds no control character and is valid UTF-8, so it is one line.
std::string TerminalSafe(std::string_view text);

// TerminalSafe in double quotes, with `"` and `\` escaped too: a value
// quoted inside a sentence, whose end the reader can trust (`run`'s
// "message "..."").
std::string TerminalSafeQuoted(std::string_view text);

// A JSON string literal of `text` that is safe on a terminal too (the
// supervisor's --log-format json on stderr): JSON's escapes, every
// control character and escaped code point above as \uHHHH, and each
// byte of invalid UTF-8 as U+FFFD (JSON has no bytes), so it always parses.
std::string TerminalSafeJson(std::string_view text);

// The columns a terminal gives `text` (valid UTF-8 without control
// characters: TerminalSafe's output): East Asian wide and fullwidth
// characters take two, combining marks and zero-width characters none,
// everything else one. An approximation of wcwidth(3) that needs no locale.
std::size_t DisplayWidth(std::string_view text);

}  // namespace podvisor
