#include "pod/quantity.h"

#include <cctype>
#include <limits>

namespace podvisor::pod {
namespace {

__extension__ typedef __int128 i128;  // exact intermediate for 64-bit milli values
constexpr i128 kMax = std::numeric_limits<int64_t>::max();

struct Suffix {
  std::string_view text;
  int base;  // 10 or 2
  int exponent;
  Quantity::Format format;
};

constexpr Suffix kSuffixes[] = {
    {"Ki", 2, 10, Quantity::Format::kBinarySI},  {"Mi", 2, 20, Quantity::Format::kBinarySI},
    {"Gi", 2, 30, Quantity::Format::kBinarySI},  {"Ti", 2, 40, Quantity::Format::kBinarySI},
    {"Pi", 2, 50, Quantity::Format::kBinarySI},  {"Ei", 2, 60, Quantity::Format::kBinarySI},
    {"n", 10, -9, Quantity::Format::kDecimalSI}, {"u", 10, -6, Quantity::Format::kDecimalSI},
    {"m", 10, -3, Quantity::Format::kDecimalSI}, {"", 10, 0, Quantity::Format::kDecimalSI},
    {"k", 10, 3, Quantity::Format::kDecimalSI},  {"M", 10, 6, Quantity::Format::kDecimalSI},
    {"G", 10, 9, Quantity::Format::kDecimalSI},  {"T", 10, 12, Quantity::Format::kDecimalSI},
    {"P", 10, 15, Quantity::Format::kDecimalSI}, {"E", 10, 18, Quantity::Format::kDecimalSI},
};

const Error kSyntax(
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
const Error kTooLarge("quantity is too large (podvisor supports up to 2^63 milli-units)");

// Multiplies v by base^exp exactly; false on overflow past kMax.
bool ScaleUp(i128& v, int base, int exp) {
  for (int i = 0; i < exp; ++i) {
    v *= base;
    if (v > kMax * 1000) return false;
  }
  return true;
}

}  // namespace

Result<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) return kSyntax;
  std::size_t pos = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    pos = 1;
  }
  // Mantissa: digits with at most one '.', at least one digit.
  i128 digits = 0;
  int fraction_digits = 0;
  bool seen_dot = false, seen_digit = false;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c == '.') {
      if (seen_dot) return kSyntax;
      seen_dot = true;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      seen_digit = true;
      if (digits > kMax * 1000) {
        // More significant digits than can matter: only trailing
        // fraction digits may be dropped (rounded up below).
        if (!seen_dot) return kTooLarge;
        if (c != '0') digits += 1;  // round up, keep it nonzero-exact
        continue;
      }
      digits = digits * 10 + (c - '0');
      if (seen_dot) ++fraction_digits;
    } else {
      break;
    }
  }
  if (!seen_digit) return kSyntax;

  std::string_view suffix = text.substr(pos);
  int base = 10, exponent = 0;
  Format format = Format::kDecimalSI;
  bool matched = false;
  for (const auto& s : kSuffixes) {
    if (suffix == s.text) {
      base = s.base;
      exponent = s.exponent;
      format = s.format;
      matched = true;
      break;
    }
  }
  if (!matched) {
    // Decimal exponent: e|E followed by an optionally signed integer.
    if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return kSyntax;
    std::string_view num = suffix.substr(1);
    bool neg_exp = false;
    if (num[0] == '+' || num[0] == '-') {
      neg_exp = num[0] == '-';
      num = num.substr(1);
    }
    if (num.empty() || num.size() > 4) return num.empty() ? kSyntax : kTooLarge;
    int e = 0;
    for (char c : num) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return kSyntax;
      e = e * 10 + (c - '0');
    }
    exponent = neg_exp ? -e : e;
    format = Format::kDecimalExponent;
  }

  // milli = digits * base^exponent * 10^(3 - fraction_digits), rounded up.
  i128 v = digits;
  if (base == 2) {
    if (!ScaleUp(v, 2, exponent)) return kTooLarge;
    exponent = 0;
  }
  int pow10 = exponent + 3 - fraction_digits;
  if (pow10 >= 0) {
    if (v != 0 && pow10 > 40) return kTooLarge;
    if (v != 0 && !ScaleUp(v, 10, pow10)) return kTooLarge;
  } else {
    i128 divisor = 1;
    for (int i = 0; i < -pow10 && divisor <= kMax * 1000; ++i) divisor *= 10;
    v = (v + divisor - 1) / divisor;  // Kubernetes rounds up to the precision kept
  }
  if (v > kMax) return kTooLarge;
  auto milli = static_cast<int64_t>(v);
  return Quantity(negative ? -milli : milli, format);
}

std::string Quantity::ToString() const {
  if (milli_ % 1000 != 0) return std::to_string(milli_) + "m";
  int64_t value = milli_ / 1000;
  if (value == 0) return "0";
  int64_t magnitude = value < 0 ? -value : value;
  if (format_ == Format::kBinarySI) {
    static constexpr std::string_view kBin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int unit = 0;
    while (unit < 6 && magnitude % 1024 == 0) {
      magnitude /= 1024;
      ++unit;
    }
    if (unit > 0 || magnitude < 1024) {
      return (value < 0 ? "-" : "") + std::to_string(magnitude) + std::string(kBin[unit]);
    }
  }
  static constexpr std::string_view kDec[] = {"", "k", "M", "G", "T", "P", "E"};
  int unit = 0;
  while (unit < 6 && magnitude % 1000 == 0) {
    magnitude /= 1000;
    ++unit;
  }
  std::string sign = value < 0 ? "-" : "";
  if (format_ == Format::kDecimalExponent) {
    return sign + std::to_string(magnitude) + (unit ? "e" + std::to_string(unit * 3) : "");
  }
  return sign + std::to_string(magnitude) + std::string(kDec[unit]);
}

}  // namespace podvisor::pod
