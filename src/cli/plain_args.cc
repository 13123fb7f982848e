#include "cli/plain_args.h"

namespace podvisor::cli {

namespace {

const PlainOption* Find(std::span<const PlainOption> options, std::string_view word) {
  for (const PlainOption& o : options) {
    if (word == o.long_name || (!o.short_name.empty() && word == o.short_name)) return &o;
  }
  return nullptr;
}

}  // namespace

const std::string* PlainArgs::Value(std::string_view option) const {
  auto it = values.find(option);
  return it == values.end() ? nullptr : &it->second;
}

std::optional<PlainArgs> ScanPlainArgs(std::span<char* const> words,
                                       std::span<const PlainOption> value_options,
                                       std::span<const PlainOption> flag_options,
                                       std::size_t max_positionals) {
  PlainArgs args;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string_view word = words[i];
    if (!word.starts_with('-')) {
      if (args.positionals.size() == max_positionals) return std::nullopt;
      args.positionals.emplace_back(word);
      continue;
    }
    if (const PlainOption* flag = Find(flag_options, word)) {
      if (!args.flags.emplace(flag->long_name).second) return std::nullopt;
      continue;
    }
    const PlainOption* option = nullptr;
    std::string_view value;
    if (auto eq = word.find('='); word.starts_with("--") && eq != std::string_view::npos) {
      option = Find(value_options, word.substr(0, eq));
      value = word.substr(eq + 1);
      if (option && word.substr(0, eq) != option->long_name) return std::nullopt;
    } else if ((option = Find(value_options, word)) != nullptr) {
      if (i + 1 == words.size()) return std::nullopt;
      value = words[++i];
      if (value.starts_with('-')) return std::nullopt;
    }
    if (option == nullptr || value.empty()) return std::nullopt;
    if (!args.values.emplace(option->long_name, value).second) return std::nullopt;
  }
  return args;
}

}  // namespace podvisor::cli
