#include "cli/plain_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace podvisor::cli {

namespace {

const grammar::Option* Find(const grammar::Command& command, std::string_view word) {
  for (std::size_t i = 0; i < command.option_count; ++i) {
    const grammar::Option& o = command.options[i];
    if (word == o.long_name || (o.short_name != nullptr && word == o.short_name)) return &o;
  }
  return nullptr;
}

}  // namespace

const std::string* PlainArgs::Value(std::string_view option) const {
  auto it = values.find(option);
  return it == values.end() ? nullptr : &it->second;
}

std::optional<double> ParseSeconds(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0) {
    return std::nullopt;
  }
  return v;
}

std::optional<PlainArgs> ScanPlainArgs(std::span<char* const> words,
                                       const grammar::Command& command) {
  PlainArgs args;
  const auto max_positionals = static_cast<std::size_t>(command.positionals.max);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string_view word = words[i];
    if (!word.starts_with('-')) {
      if (args.positionals.size() == max_positionals) return std::nullopt;
      args.positionals.emplace_back(word);
      continue;
    }
    const grammar::Option* option = nullptr;
    std::string_view value;
    if (auto eq = word.find('='); word.starts_with("--") && eq != std::string_view::npos) {
      option = Find(command, word.substr(0, eq));
      value = word.substr(eq + 1);
      if (option &&
          (word.substr(0, eq) != option->long_name || option->kind == grammar::ValueKind::kFlag)) {
        return std::nullopt;
      }
    } else if ((option = Find(command, word)) != nullptr) {
      if (option->kind == grammar::ValueKind::kFlag) {
        if (!args.flags.emplace(option->long_name).second) return std::nullopt;
        continue;
      }
      if (i + 1 == words.size()) return std::nullopt;
      value = words[++i];
      if (value.starts_with('-')) return std::nullopt;
    }
    if (option == nullptr || value.empty()) return std::nullopt;
    if (option->kind == grammar::ValueKind::kSeconds && !ParseSeconds(std::string(value))) {
      return std::nullopt;
    }
    if (!args.values.emplace(option->long_name, value).second) return std::nullopt;
  }
  if (args.positionals.size() < static_cast<std::size_t>(command.positionals.min)) {
    return std::nullopt;
  }
  return args;
}

}  // namespace podvisor::cli
