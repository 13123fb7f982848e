#include "cli/jsonpath.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

namespace podvisor::cli {
namespace {

using nlohmann::json;

// ---- Paths -----------------------------------------------------------------

struct Step;
using Path = std::vector<Step>;

struct Filter {
  std::shared_ptr<Path> lhs;  // relative to the element (@)
  std::string op;             // "" = the lhs exists
  std::optional<json> rhs_value;
  std::shared_ptr<Path> rhs_path;
};

struct Step {
  enum Kind { kRoot, kChild, kRecursive, kWildcard, kIndexes, kSlice, kNames, kFilter } kind;
  std::vector<std::string> names;  // kChild (one), kRecursive (one, "*" = all), kNames
  std::vector<long> indexes;       // kIndexes
  std::optional<long> start, end;  // kSlice
  long step = 1;
  Filter filter;
};

class PathParser {
 public:
  explicit PathParser(std::string_view text) : s_(text) {}

  Result<Path> Parse() {
    Path path;
    SkipSpace();
    if (Peek() == '$') {
      ++i_;
      path.push_back({Step::kRoot, {}, {}, {}, {}, 1, {}});
    } else if (Peek() == '@') {
      ++i_;
    } else if (i_ < s_.size() && Peek() != '.' && Peek() != '[') {
      // kubectl accepts a first member without its dot: {kind}.
      auto name = Name();
      if (name.empty()) return Fail("unexpected character");
      path.push_back({Step::kChild, {name}, {}, {}, {}, 1, {}});
    }
    while (true) {
      SkipSpace();
      if (i_ >= s_.size() || Peek() == ')' || IsOperatorStart()) break;
      if (s_.substr(i_, 2) == "..") {
        i_ += 2;
        std::string name = Peek() == '*' ? (++i_, "*") : Name();
        if (name.empty()) {
          if (Peek() == '[') {  // ..[x] applies x at every depth
            path.push_back({Step::kRecursive, {"*"}, {}, {}, {}, 1, {}});
            continue;
          }
          return Fail("a name must follow ..");
        }
        path.push_back({Step::kRecursive, {name}, {}, {}, {}, 1, {}});
      } else if (Peek() == '.') {
        ++i_;
        if (Peek() == '*') {
          ++i_;
          path.push_back({Step::kWildcard, {}, {}, {}, {}, 1, {}});
          continue;
        }
        std::string name = Name();
        if (name.empty()) return Fail("a name must follow .");
        path.push_back({Step::kChild, {name}, {}, {}, {}, 1, {}});
      } else if (Peek() == '[') {
        ++i_;
        auto step = Bracket();
        if (!step) return step.take_error();
        path.push_back(std::move(*step));
      } else {
        return Fail("unexpected character");
      }
    }
    return path;
  }

  std::size_t pos() const { return i_; }
  std::string_view rest() const { return s_.substr(i_); }

 private:
  char Peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void SkipSpace() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  bool IsOperatorStart() const {
    char c = Peek();
    return c == '=' || c == '!' || c == '<' || c == '>';
  }
  Error Fail(const std::string& what) const {
    return Error("jsonpath: " + what + " at " + std::to_string(i_) + " in \"" + std::string(s_) +
                 "\"");
  }
  // A member name; "\." is a dot inside it (kubernetes\.io/hostname).
  std::string Name() {
    std::string out;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '\\' && i_ + 1 < s_.size()) {
        out += s_[i_ + 1];
        i_ += 2;
      } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '/') {
        out += c;
        ++i_;
      } else {
        break;
      }
    }
    return out;
  }
  std::optional<std::string> Quoted() {
    char q = Peek();
    if (q != '\'' && q != '"') return std::nullopt;
    std::size_t end = s_.find(q, i_ + 1);
    if (end == std::string_view::npos) return std::nullopt;
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return out;
  }
  std::optional<long> Number() {
    SkipSpace();
    std::size_t start = i_;
    if (Peek() == '-') ++i_;
    while (std::isdigit(static_cast<unsigned char>(Peek()))) ++i_;
    if (i_ == start || (i_ == start + 1 && s_[start] == '-')) {
      i_ = start;
      return std::nullopt;
    }
    return std::stol(std::string(s_.substr(start, i_ - start)));
  }

  Result<Step> Bracket() {
    SkipSpace();
    if (Peek() == '*') {
      ++i_;
      SkipSpace();
      if (Peek() != ']') return Fail("expected ]");
      ++i_;
      return Step{Step::kWildcard, {}, {}, {}, {}, 1, {}};
    }
    if (Peek() == '?') return FilterStep();
    if (Peek() == '\'' || Peek() == '"') {
      Step step{Step::kNames, {}, {}, {}, {}, 1, {}};
      while (true) {
        SkipSpace();
        auto q = Quoted();
        if (!q) return Fail("expected a quoted name");
        step.names.push_back(*q);
        SkipSpace();
        if (Peek() == ',') {
          ++i_;
          continue;
        }
        if (Peek() != ']') return Fail("expected ]");
        ++i_;
        return step;
      }
    }
    // Indexes, a union of them, or a slice.
    auto first = Number();
    SkipSpace();
    if (Peek() == ':') {
      Step step{Step::kSlice, {}, {}, first, {}, 1, {}};
      ++i_;
      step.end = Number();
      SkipSpace();
      if (Peek() == ':') {
        ++i_;
        if (auto st = Number()) step.step = *st;
        if (step.step == 0) return Fail("slice step 0");
      }
      SkipSpace();
      if (Peek() != ']') return Fail("expected ]");
      ++i_;
      return step;
    }
    if (!first) return Fail("expected an index");
    Step step{Step::kIndexes, {}, {*first}, {}, {}, 1, {}};
    while (Peek() == ',') {
      ++i_;
      auto n = Number();
      if (!n) return Fail("expected an index");
      step.indexes.push_back(*n);
      SkipSpace();
    }
    if (Peek() != ']') return Fail("expected ]");
    ++i_;
    return step;
  }

  Result<Step> FilterStep() {
    ++i_;  // ?
    if (Peek() != '(') return Fail("expected ( after ?");
    ++i_;
    Step step{Step::kFilter, {}, {}, {}, {}, 1, {}};
    auto lhs = Parse();
    if (!lhs) return lhs.take_error();
    step.filter.lhs = std::make_shared<Path>(std::move(*lhs));
    SkipSpace();
    if (IsOperatorStart()) {
      std::size_t start = i_;
      while (IsOperatorStart()) ++i_;
      step.filter.op = std::string(s_.substr(start, i_ - start));
      static const char* kOps[] = {"==", "!=", "<", "<=", ">", ">="};
      bool known = false;
      for (const char* op : kOps) known = known || step.filter.op == op;
      if (!known) return Fail("unknown operator " + step.filter.op);
      SkipSpace();
      if (auto q = Quoted()) {
        step.filter.rhs_value = *q;
      } else if (Peek() == '@' || Peek() == '$') {
        auto rhs = Parse();
        if (!rhs) return rhs.take_error();
        step.filter.rhs_path = std::make_shared<Path>(std::move(*rhs));
      } else {
        std::size_t start2 = i_;
        while (i_ < s_.size() && s_[i_] != ')' && s_[i_] != ' ') ++i_;
        std::string word(s_.substr(start2, i_ - start2));
        json v = json::parse(word, nullptr, false);
        if (v.is_discarded() || v.is_object() || v.is_array())
          return Fail("bad filter value " + word);
        step.filter.rhs_value = v;
      }
    }
    SkipSpace();
    if (Peek() != ')') return Fail("expected )");
    ++i_;
    SkipSpace();
    if (Peek() != ']') return Fail("expected ]");
    ++i_;
    return step;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

void Recurse(const json* node, const std::string& name, std::vector<const json*>& out) {
  if (node->is_object()) {
    for (const auto& [k, v] : node->items()) {
      if (name == "*" || k == name) out.push_back(&v);
    }
    for (const auto& [k, v] : node->items()) Recurse(&v, name, out);
  } else if (node->is_array()) {
    for (const auto& v : *node) {
      if (name == "*") out.push_back(&v);
      Recurse(&v, name, out);
    }
  }
}

std::vector<const json*> Apply(const Path& path, const json* root, const json* current);

// 'metadata.name' in a bracket: members split at unescaped dots.
Path ParseMemberPath(const std::string& text) {
  Path path;
  std::string name;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      name += text[++i];
    } else if (text[i] == '.') {
      path.push_back({Step::kChild, {name}, {}, {}, {}, 1, {}});
      name.clear();
    } else {
      name += text[i];
    }
  }
  path.push_back({Step::kChild, {name}, {}, {}, {}, 1, {}});
  return path;
}

bool Compare(const json& a, const std::string& op, const json& b) {
  if (a.is_number() && b.is_number()) {
    double x = a.get<double>(), y = b.get<double>();
    if (op == "==") return x == y;
    if (op == "!=") return x != y;
    if (op == "<") return x < y;
    if (op == "<=") return x <= y;
    if (op == ">") return x > y;
    return x >= y;
  }
  if (a.is_string() && b.is_string()) {
    const auto& x = a.get_ref<const std::string&>();
    const auto& y = b.get_ref<const std::string&>();
    if (op == "==") return x == y;
    if (op == "!=") return x != y;
    if (op == "<") return x < y;
    if (op == "<=") return x <= y;
    if (op == ">") return x > y;
    return x >= y;
  }
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  return false;
}

bool Matches(const Filter& f, const json* root, const json* elem) {
  auto lhs = Apply(*f.lhs, root, elem);
  if (f.op.empty()) return !lhs.empty();
  if (lhs.empty()) return false;
  json rhs;
  if (f.rhs_value) {
    rhs = *f.rhs_value;
  } else {
    auto r = Apply(*f.rhs_path, root, elem);
    if (r.empty()) return false;
    rhs = *r[0];
  }
  return Compare(*lhs[0], f.op, rhs);
}

std::vector<const json*> Apply(const Path& path, const json* root, const json* current) {
  std::vector<const json*> nodes{current};
  for (const Step& step : path) {
    std::vector<const json*> next;
    for (const json* node : nodes) {
      switch (step.kind) {
        case Step::kRoot:
          next.push_back(root);
          break;
        case Step::kChild:
          if (!node->is_object()) break;
          if (auto it = node->find(step.names[0]); it != node->end()) next.push_back(&*it);
          break;
        case Step::kNames:
          break;  // below: member-major over every node
        case Step::kRecursive:
          Recurse(node, step.names[0], next);
          break;
        case Step::kWildcard:
          if (node->is_array() || node->is_object()) {
            for (const auto& v : *node) next.push_back(&v);
          }
          break;
        case Step::kIndexes:
          if (!node->is_array()) break;
          for (long i : step.indexes) {
            long n = static_cast<long>(node->size());
            long at = i < 0 ? n + i : i;
            if (at >= 0 && at < n) next.push_back(&(*node)[static_cast<std::size_t>(at)]);
          }
          break;
        case Step::kSlice: {
          if (!node->is_array()) break;
          long n = static_cast<long>(node->size());
          auto clamp = [n](long v) { return std::max(0L, std::min(n, v < 0 ? n + v : v)); };
          if (step.step > 0) {
            long from = step.start ? clamp(*step.start) : 0;
            long to = step.end ? clamp(*step.end) : n;
            for (long i = from; i < to; i += step.step)
              next.push_back(&(*node)[static_cast<std::size_t>(i)]);
          } else {
            long from = step.start ? clamp(*step.start) : n - 1;
            if (from >= n) from = n - 1;
            long to = step.end ? clamp(*step.end) : -1;
            for (long i = from; i > to; i += step.step)
              next.push_back(&(*node)[static_cast<std::size_t>(i)]);
          }
          break;
        }
        case Step::kFilter:
          if (node->is_array() || node->is_object()) {
            for (const auto& v : *node) {
              if (Matches(step.filter, root, &v)) next.push_back(&v);
            }
          }
          break;
      }
    }
    // A union ['a.b', 'c'] is a union of paths, each over every node:
    // kubectl prints every node's a.b before any node's c.
    if (step.kind == Step::kNames) {
      for (const auto& name : step.names) {
        auto sub = ParseMemberPath(name);
        for (const json* node : nodes) {
          for (const json* r : Apply(sub, root, node)) next.push_back(r);
        }
      }
    }
    nodes = std::move(next);
  }
  return nodes;
}

// ---- Templates ----------------------------------------------------------

struct Node {
  enum Kind { kText, kExpr, kRange } kind;
  std::string text;
  Path path;
  std::vector<Node> children;  // kRange
};

std::string Unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

Result<std::vector<Node>> ParseTemplate(std::string_view t) {
  std::vector<std::vector<Node>> stack(1);
  std::vector<Path> range_paths;
  std::size_t i = 0;
  while (i < t.size()) {
    std::size_t open = t.find('{', i);
    if (open == std::string_view::npos) {
      stack.back().push_back({Node::kText, Unescape(std::string(t.substr(i))), {}, {}});
      break;
    }
    if (open > i)
      stack.back().push_back({Node::kText, Unescape(std::string(t.substr(i, open - i))), {}, {}});
    // The closing brace, skipping quoted text.
    std::size_t j = open + 1;
    char quote = 0;
    for (; j < t.size(); ++j) {
      if (quote) {
        if (t[j] == '\\') {
          ++j;
        } else if (t[j] == quote) {
          quote = 0;
        }
      } else if (t[j] == '"' || t[j] == '\'') {
        quote = t[j];
      } else if (t[j] == '}') {
        break;
      }
    }
    if (j >= t.size()) return Error("jsonpath: unclosed action in \"" + std::string(t) + "\"");
    std::string body(t.substr(open + 1, j - open - 1));
    while (!body.empty() && body.front() == ' ') body.erase(0, 1);
    while (!body.empty() && body.back() == ' ') body.pop_back();
    i = j + 1;
    if (body == "end") {
      if (range_paths.empty()) return Error("jsonpath: {end} without {range}");
      Node range{Node::kRange, "", std::move(range_paths.back()), std::move(stack.back())};
      range_paths.pop_back();
      stack.pop_back();
      stack.back().push_back(std::move(range));
      continue;
    }
    if (body.size() >= 2 && body.front() == '"' && body.back() == '"') {
      stack.back().push_back({Node::kText, Unescape(body.substr(1, body.size() - 2)), {}, {}});
      continue;
    }
    bool range = body.starts_with("range ");
    PathParser parser(range ? std::string_view(body).substr(6) : std::string_view(body));
    auto path = parser.Parse();
    if (!path) return path.take_error();
    if (!parser.rest().empty()) {
      return Error("jsonpath: unexpected \"" + std::string(parser.rest()) + "\" in {" + body + "}");
    }
    if (range) {
      range_paths.push_back(std::move(*path));
      stack.emplace_back();
    } else {
      stack.back().push_back({Node::kExpr, "", std::move(*path), {}});
    }
  }
  if (!range_paths.empty()) return Error("jsonpath: {range} without {end}");
  return std::move(stack.back());
}

std::string Print(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

void Render(const std::vector<Node>& nodes, const json* root, const json* current,
            std::string& out) {
  for (const Node& n : nodes) {
    switch (n.kind) {
      case Node::kText:
        out += n.text;
        break;
      case Node::kExpr: {
        auto results = Apply(n.path, root, current);
        for (std::size_t i = 0; i < results.size(); ++i) {
          if (i > 0) out += ' ';
          out += Print(*results[i]);
        }
        break;
      }
      case Node::kRange:
        for (const json* item : Apply(n.path, root, current)) {
          // range over one array result iterates its elements.
          if (item->is_array() && n.path.size() > 0 && n.path.back().kind == Step::kChild) {
            for (const auto& v : *item) Render(n.children, root, &v, out);
          } else {
            Render(n.children, root, item, out);
          }
        }
        break;
    }
  }
}

}  // namespace

Result<std::string> EvaluateJsonPath(std::string_view templ, const json& data) {
  auto nodes = ParseTemplate(templ);
  if (!nodes) return nodes.take_error();
  std::string out;
  Render(*nodes, &data, &data, out);
  return out;
}

}  // namespace podvisor::cli
