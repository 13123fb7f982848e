// Manifest text to a JSON document: YAML through yaml-cpp, JSON through
// nlohmann, both with the same guards (nesting depth, duplicate keys,
// alias expansion, UTF-8). JSON manifests, reading the file and the
// ParseManifest entry points are in manifest_file.cc.
//
// YAML scalars are typed by the YAML 1.2 core schema, not YAML 1.1 as
// kubectl's go-yaml does: `yes` and `on` stay the strings "yes" and "on".
// One exception follows kubectl: an integer written with a leading 0 is
// octal (`defaultMode: 0400` is 256), because every file mode in
// Kubernetes manifests and documentation is written that way and reading
// it as decimal would give a silently wrong mode. Quoted scalars are
// always strings, so `value: "true"` is the string an env var needs.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>
#include <nlohmann/json.hpp>

#include "pod/parse.h"

namespace podvisor::pod {
namespace {

using nlohmann::json;

constexpr std::string_view kStrTag = "tag:yaml.org,2002:str";

Error ErrorAt(std::size_t line, std::size_t column, std::string_view message) {
  return Error("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
               std::string(message));
}

Error ErrorAt(const YAML::Mark& mark, std::string_view message) {
  if (mark.is_null()) return Error(std::string(message));
  return ErrorAt(static_cast<std::size_t>(mark.line) + 1, static_cast<std::size_t>(mark.column) + 1,
                 message);
}

// Length of the UTF-8 sequence starting at TEXT[I], or 0 when it is not
// one (truncated, overlong, a surrogate, past U+10FFFF).
std::size_t Utf8SequenceLength(std::string_view text, std::size_t i) {
  auto c = static_cast<unsigned char>(text[i]);
  std::size_t len = 0;
  uint32_t min = 0, cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) {
    len = 2, min = 0x80, cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    len = 3, min = 0x800, cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    len = 4, min = 0x10000, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    auto cc = static_cast<unsigned char>(text[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

bool IsUtf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = Utf8SequenceLength(text, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// yaml-cpp passes bytes through unchecked; a string that is not UTF-8 would
// make every later json::dump() throw, so it is refused here. (Escapes in
// double-quoted scalars are checked again after decoding, see JsonBuilder.)
Status CheckUtf8(std::string_view text) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = Utf8SequenceLength(text, i);
    if (len == 0) return ErrorAt(line, column, "invalid UTF-8");
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += len;
  }
  return Ok();
}

int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// An integer in BASE; values past 64 bits become a double so the decoder
// can report them as out of range instead of wrapping.
std::optional<json> DigitsToNumber(std::string_view digits, int base, bool negative) {
  if (digits.empty()) return std::nullopt;
  uint64_t v = 0;
  double approx = 0;
  bool overflow = false;
  for (char c : digits) {
    int d = DigitValue(c);
    if (d >= base) return std::nullopt;
    approx = approx * base + d;
    auto ud = static_cast<uint64_t>(d);
    if (overflow || v > (std::numeric_limits<uint64_t>::max() - ud) / static_cast<uint64_t>(base)) {
      overflow = true;
    } else {
      v = v * static_cast<uint64_t>(base) + ud;
    }
  }
  if (overflow) {
    // Decimal digits convert exactly rounded; hex and octal this large are
    // out of every range anyway.
    if (base == 10) std::from_chars(digits.data(), digits.data() + digits.size(), approx);
    return json(negative ? -approx : approx);
  }
  constexpr auto kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (!negative) return v <= kInt64Max ? json(static_cast<int64_t>(v)) : json(v);
  if (v <= kInt64Max) return json(-static_cast<int64_t>(v));
  if (v == kInt64Max + 1) return json(std::numeric_limits<int64_t>::min());
  return json(-approx);
}

// YAML 1.2 core schema: [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+, except
// that 0[0-7]+ is octal as in YAML 1.1 (see the top of the file).
std::optional<json> CoreInt(std::string_view s) {
  if (s.size() > 1 && s[0] == '0' && s.find_first_not_of("01234567", 1) == std::string_view::npos) {
    return DigitsToNumber(s.substr(1), 8, false);
  }
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o') return DigitsToNumber(s.substr(2), 8, false);
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x') return DigitsToNumber(s.substr(2), 16, false);
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return DigitsToNumber(s, 10, negative);
}

// YAML 1.2 core schema:
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? | [-+]?\.inf | \.nan
std::optional<json> CoreFloat(std::string_view s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return json(std::nan(""));
  bool negative = false;
  std::string_view body = s;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body == ".inf" || body == ".Inf" || body == ".INF") {
    double inf = std::numeric_limits<double>::infinity();
    return json(negative ? -inf : inf);
  }
  std::size_t pos = 0;
  auto digits = [&] {
    std::size_t start = pos;
    while (pos < body.size() && body[pos] >= '0' && body[pos] <= '9') ++pos;
    return pos - start;
  };
  std::size_t int_digits = digits();
  std::size_t frac_digits = 0;
  bool dot = pos < body.size() && body[pos] == '.';
  if (dot) {
    ++pos;
    frac_digits = digits();
  }
  if (int_digits == 0 && frac_digits == 0) return std::nullopt;
  bool negative_exponent = false;
  if (pos < body.size() && (body[pos] == 'e' || body[pos] == 'E')) {
    ++pos;
    if (pos < body.size() && (body[pos] == '-' || body[pos] == '+')) {
      negative_exponent = body[pos] == '-';
      ++pos;
    }
    if (digits() == 0) return std::nullopt;
  }
  if (pos != body.size()) return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (ec == std::errc::result_out_of_range) {
    value = negative_exponent ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (ec != std::errc() || end != body.data() + body.size()) {
    return std::nullopt;
  }
  return json(negative ? -value : value);
}

json ResolvePlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (auto n = CoreInt(s)) return *n;
  if (auto f = CoreFloat(s)) return *f;
  return s;
}

// Where building the document failed; thrown inside a JsonBuilder event
// handler and caught before it returns to yaml-cpp.
struct BuildFailure {
  YAML::Mark mark;
  std::string message;
};

// Builds JSON straight from yaml-cpp's parse events instead of going
// through YAML::LoadAll and YAML::Node: LoadAll in yaml-cpp 0.7 loops
// forever, allocating, on a stream that starts with "," (yaml-cpp issue
// #1040), and the events give every guard a mark to point at.
class JsonBuilder : public YAML::EventHandler {
 public:
  // Without aliases a YAML text of N bytes cannot hold much more than N
  // values; aliases can (the "billion laughs"), so expansion is capped.
  explicit JsonBuilder(std::size_t text_size)
      : budget_(std::min<std::size_t>(1024 + 2 * text_size, 1'000'000)) {}

  const YAML::Mark& document_mark() const { return document_mark_; }
  json& root() { return root_; }
  // The first problem in the current document. Later events are ignored
  // but the parser still runs to the end of the document, so a syntax
  // error there (often the real cause, e.g. an unclosed "{") wins.
  const std::optional<BuildFailure>& failure() const { return failure_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    document_mark_ = mark;
    root_ = nullptr;
    frames_.clear();
    anchors_.clear();
    failure_.reset();
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Guarded([&] {
      if (ExpectingKey()) throw BuildFailure{mark, "a mapping key is empty"};
      Add(mark, nullptr, anchor, 1);
    });
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Guarded([&] {
      if (ExpectingKey()) throw BuildFailure{mark, "an alias cannot be a mapping key"};
      auto it = anchors_.find(anchor);
      // yaml-cpp rejects unknown anchor names itself; an anchor that is
      // not complete yet belongs to a collection that contains this alias.
      if (it == anchors_.end()) {
        throw BuildFailure{mark, "an alias refers to a node that contains it"};
      }
      Add(mark, it->second.value, 0, it->second.count);
    });
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    Guarded([&] {
      // yaml-cpp tags plain scalars "?" and every other style (quoted,
      // literal, folded) "!".
      bool plain = tag != "!" && tag != kStrTag;
      // yaml-cpp 0.7 decodes the escapes "\_" and "\N" to the single
      // Latin-1 bytes 0xA0 and 0x85, which are not UTF-8.
      if (!plain && !IsUtf8(value)) {
        throw BuildFailure{mark, "the escapes \\_ and \\N are not supported; write the character"};
      }
      if (!ExpectingKey()) {
        Add(mark, plain ? ResolvePlainScalar(value) : json(value), anchor, 1);
        return;
      }
      Frame& map = frames_.back();
      map.key = value;
      map.key_mark = mark;
      // "<<" is YAML's merge key; yaml-cpp leaves it to the application
      // and go-yaml (kubectl) honours it, so manifests do use it.
      map.key_is_merge = plain && value == "<<";
      map.expecting_key = false;
      if (anchor) Register(anchor, json(value), 1);
    });
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Guarded([&] { Open(mark, anchor, json::array()); });
  }
  void OnSequenceEnd() override {
    Guarded([&] { Close(); });
  }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Guarded([&] { Open(mark, anchor, json::object()); });
  }
  void OnMapEnd() override {
    Guarded([&] {
      ApplyMerges(frames_.back());
      Close();
    });
  }

 private:
  struct Frame {
    json value;  // an array or an object
    YAML::Mark mark;
    YAML::anchor_t anchor = 0;
    std::size_t count = 1;  // values in this subtree, charged again per alias
    // Mappings alternate key and value events.
    bool expecting_key = false;
    std::string key;
    YAML::Mark key_mark;
    bool key_is_merge = false;
    std::vector<std::pair<json, YAML::Mark>> merges;
  };
  struct Anchored {
    json value;
    std::size_t count;
  };

  template <typename Fn>
  void Guarded(Fn&& handle) {
    if (failure_) return;
    try {
      handle();
    } catch (BuildFailure& f) {
      failure_ = std::move(f);
    }
  }

  // Keys given explicitly win over merged ones; among merged mappings
  // the first one listed wins.
  static void ApplyMerges(Frame& map) {
    for (auto& [merge, mark] : map.merges) {
      std::vector<json*> sources;
      if (merge.is_object()) sources.push_back(&merge);
      if (merge.is_array()) {
        for (json& item : merge) sources.push_back(&item);
      }
      if (sources.empty()) {
        throw BuildFailure{mark, "the merge key \"<<\" needs a mapping or a list of mappings"};
      }
      for (json* source : sources) {
        if (!source->is_object()) {
          throw BuildFailure{mark, "the merge key \"<<\" needs a mapping or a list of mappings"};
        }
        for (auto& [key, value] : source->items()) {
          if (!map.value.contains(key)) map.value[key] = std::move(value);
        }
      }
    }
  }

  bool ExpectingKey() const { return !frames_.empty() && frames_.back().expecting_key; }

  void Charge(const YAML::Mark& mark, std::size_t count) {
    if (count > budget_) {
      throw BuildFailure{mark, "the document expands to too many values (YAML aliases?)"};
    }
    budget_ -= count;
  }

  void Register(YAML::anchor_t anchor, const json& value, std::size_t count) {
    anchors_[anchor] = Anchored{value, count};
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, json empty) {
    if (ExpectingKey()) throw BuildFailure{mark, "mapping keys must be scalars"};
    if (frames_.size() >= static_cast<std::size_t>(kMaxManifestDepth)) {
      throw BuildFailure{mark,
                         "nesting deeper than " + std::to_string(kMaxManifestDepth) + " levels"};
    }
    Charge(mark, 1);
    Frame frame;
    frame.value = std::move(empty);
    frame.mark = mark;
    frame.anchor = anchor;
    frame.expecting_key = frame.value.is_object();
    frames_.push_back(std::move(frame));
  }

  void Close() {
    Frame done = std::move(frames_.back());
    frames_.pop_back();
    if (done.anchor) Register(done.anchor, done.value, done.count);
    Place(std::move(done.value), done.count);
  }

  void Add(const YAML::Mark& mark, json value, YAML::anchor_t anchor, std::size_t count) {
    Charge(mark, count);
    if (anchor) Register(anchor, value, count);
    Place(std::move(value), count);
  }

  // Puts a finished value where the parse is: the root, the next list
  // item, or the value of the pending mapping key.
  void Place(json value, std::size_t count) {
    if (frames_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& parent = frames_.back();
    parent.count += count;
    if (parent.value.is_array()) {
      parent.value.push_back(std::move(value));
      return;
    }
    parent.expecting_key = true;
    if (parent.key_is_merge) {
      parent.merges.emplace_back(std::move(value), parent.key_mark);
      return;
    }
    if (parent.value.contains(parent.key)) {
      throw BuildFailure{parent.key_mark, "duplicate key " + QuoteValue(parent.key)};
    }
    parent.value[parent.key] = std::move(value);
  }

  std::size_t budget_;
  YAML::Mark document_mark_;
  json root_;
  std::vector<Frame> frames_;
  std::map<YAML::anchor_t, Anchored> anchors_;
  std::optional<BuildFailure> failure_;
};

}  // namespace

namespace {

// yaml-cpp's messages for a tab in the indentation ("illegal map value",
// "end of map not found", ...) never say "tab". When a syntax error comes
// on, or up to two lines after, a line whose indentation holds a tab, that
// line is the likely cause and the message says so. (Further back, the tab
// is more likely the content of a block scalar.)
Error ExplainTabs(std::string_view text, Error error, const YAML::Mark& mark) {
  std::size_t error_line =
      mark.is_null() ? std::string_view::npos : static_cast<std::size_t>(mark.line);
  std::size_t line = 0, start = 0;
  while (start < text.size() && line <= error_line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(start, end - start);
    std::size_t indent = l.find_first_not_of(" \t");
    std::string_view lead = l.substr(0, indent == std::string_view::npos ? l.size() : indent);
    if (lead.find('\t') != std::string_view::npos && indent != std::string_view::npos &&
        (error_line == std::string_view::npos || line + 2 >= error_line)) {
      return Error("line " + std::to_string(line + 1) +
                   ": a tab in the indentation; YAML indents with spaces only (" + error.message() +
                   ")");
    }
    start = end + 1;
    ++line;
  }
  return error;
}

}  // namespace

Result<std::vector<nlohmann::json>> YamlToJsonDocuments(std::string_view text) {
  if (auto st = CheckUtf8(text); !st) return st.take_error();
  std::istringstream stream{std::string(text)};
  std::vector<json> documents;
  try {
    YAML::Parser parser(stream);
    JsonBuilder builder(text.size());
    std::optional<YAML::Mark> previous_start;
    // A stream often starts or ends with "---"; only documents with
    // content count.
    while (parser.HandleNextDocument(builder)) {
      const YAML::Mark& start = builder.document_mark();
      if (previous_start && previous_start->pos == start.pos) {
        // The parser made no progress (see JsonBuilder): it is stuck on a
        // token that cannot start a document.
        std::string token = start.pos >= 0 && static_cast<std::size_t>(start.pos) < text.size()
                                ? std::string(1, text[static_cast<std::size_t>(start.pos)])
                                : std::string();
        return ErrorAt(start, "unexpected " + (token.empty() ? "token" : QuoteValue(token)));
      }
      previous_start = start;
      if (builder.failure()) return ErrorAt(builder.failure()->mark, builder.failure()->message);
      if (builder.root().is_null()) continue;
      documents.push_back(std::move(builder.root()));
    }
  } catch (const YAML::Exception& e) {
    return ExplainTabs(text, ErrorAt(e.mark, e.msg), e.mark);
  } catch (const std::exception& e) {
    return Error(std::string("YAML: ") + e.what());
  }
  return documents;
}

Result<nlohmann::json> YamlToJson(std::string_view text) {
  auto documents = YamlToJsonDocuments(text);
  if (!documents) return documents.take_error();
  if (documents->empty()) return Error("manifest is empty");
  if (documents->size() > 1) {
    return Error("the text holds " + std::to_string(documents->size()) +
                 " YAML documents where one was expected");
  }
  return std::move(documents->front());
}

}  // namespace podvisor::pod
