#include "common/terminal_text.h"

#include <array>
#include <cstdint>
#include <cstdio>

namespace podvisor {
namespace {

// One UTF-8 sequence at the start of `s`: its code point and length, or
// length 0 when it is not valid UTF-8 (overlong forms, surrogates, code
// points past U+10FFFF and truncated sequences are all invalid, as
// RFC 3629 says: a terminal may decode them anyway, so they are bytes).
struct Decoded {
  char32_t code_point = 0;
  std::size_t length = 0;
};

Decoded DecodeOne(std::string_view s) {
  const auto lead = static_cast<unsigned char>(s[0]);
  if (lead < 0x80) return {lead, 1};
  std::size_t length = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((lead & 0xe0) == 0xc0) {
    length = 2;
    cp = lead & 0x1f;
    min = 0x80;
  } else if ((lead & 0xf0) == 0xe0) {
    length = 3;
    cp = lead & 0x0f;
    min = 0x800;
  } else if ((lead & 0xf8) == 0xf0) {
    length = 4;
    cp = lead & 0x07;
    min = 0x10000;
  } else {
    return {};
  }
  if (s.size() < length) return {};
  for (std::size_t i = 1; i < length; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xc0) != 0x80) return {};
    cp = (cp << 6) | (c & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return {};
  return {cp, length};
}

// Code points a terminal acts on or that reorder what is shown: C1, the
// bidi embeddings, overrides and isolates ("Trojan Source"), and the
// Unicode line and paragraph separators.
bool IsEscapedCodePoint(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 ||
         cp == 0x2029;
}

void AppendHexByte(std::string& out, unsigned char byte) {
  static constexpr std::array<char, 16> kHex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 0xf];
}

enum class Form { kPlain, kQuoted, kJson };

void AppendCodePoint(std::string& out, char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
  out += buf;
}

void AppendAscii(std::string& out, unsigned char byte, Form form) {
  if (byte == '\n') {
    out += "\\n";
  } else if (byte == '\r') {
    out += "\\r";
  } else if (byte == '\t') {
    out += "\\t";
  } else if (byte < 0x20 || byte == 0x7f) {
    if (form == Form::kJson) {
      AppendCodePoint(out, byte);
    } else {
      AppendHexByte(out, byte);
    }
  } else if (form != Form::kPlain && (byte == '"' || byte == '\\')) {
    out += '\\';
    out += static_cast<char>(byte);
  } else {
    out += static_cast<char>(byte);
  }
}

void AppendEscaped(std::string& out, std::string_view text, Form form) {
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      AppendAscii(out, byte, form);
      ++i;
      continue;
    }
    const Decoded d = DecodeOne(text.substr(i));
    if (d.length == 0) {
      // JSON holds code points, not bytes: U+FFFD, as decoders do.
      if (form == Form::kJson) {
        out += "\\ufffd";
      } else {
        AppendHexByte(out, byte);
      }
      ++i;
      continue;
    }
    if (IsEscapedCodePoint(d.code_point)) {
      AppendCodePoint(out, d.code_point);
    } else {
      out.append(text.substr(i, d.length));
    }
    i += d.length;
  }
}

struct Range {
  char32_t first, last;
};

// Zero-width: combining marks and the zero-width space and joiners.
constexpr Range kZeroWidth[] = {
    {0x0300, 0x036f}, {0x0483, 0x0489}, {0x0591, 0x05bd}, {0x0610, 0x061a}, {0x064b, 0x065f},
    {0x200b, 0x200d}, {0x20d0, 0x20ff}, {0xfe00, 0xfe0f}, {0xfe20, 0xfe2f}, {0xfeff, 0xfeff}};
// East Asian Wide and Fullwidth blocks, and the emoji planes.
constexpr Range kWide[] = {{0x1100, 0x115f},   {0x2e80, 0x303e},   {0x3041, 0x33ff},
                           {0x3400, 0x4dbf},   {0x4e00, 0x9fff},   {0xa000, 0xa4cf},
                           {0xac00, 0xd7a3},   {0xf900, 0xfaff},   {0xfe30, 0xfe4f},
                           {0xff00, 0xff60},   {0xffe0, 0xffe6},   {0x1f300, 0x1f64f},
                           {0x1f900, 0x1f9ff}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd}};

template <std::size_t N>
bool InRanges(char32_t cp, const Range (&ranges)[N]) {
  for (const Range& r : ranges) {
    if (cp >= r.first && cp <= r.last) return true;
  }
  return false;
}

}  // namespace

std::string TerminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendEscaped(out, text, Form::kPlain);
  return out;
}

std::string TerminalSafeQuoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  AppendEscaped(out, text, Form::kQuoted);
  out += '"';
  return out;
}

std::string TerminalSafeJson(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  AppendEscaped(out, text, Form::kJson);
  out += '"';
  return out;
}

std::size_t DisplayWidth(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();) {
    const Decoded d = DecodeOne(text.substr(i));
    if (d.length == 0) {  // not TerminalSafe's output: a byte, one column
      ++width;
      ++i;
      continue;
    }
    i += d.length;
    if (InRanges(d.code_point, kZeroWidth)) continue;
    width += InRanges(d.code_point, kWide) ? 2 : 1;
  }
  return width;
}

}  // namespace podvisor
