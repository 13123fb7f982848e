#include "cli/command_grammar_cli11.h"

#include <string>
#include <vector>

namespace podvisor::cli {
namespace {

void AddPositionals(CLI::App* cmd, const grammar::Positionals& p,
                    const std::shared_ptr<PlainArgs>& args) {
  CLI::Option* option = nullptr;
  if (p.max == 1) {
    option = cmd->add_option_function<std::string>(
        p.name, [args](const std::string& word) { args->positionals = {word}; }, p.help);
  } else {
    option = cmd->add_option_function<std::vector<std::string>>(
        p.name, [args](const std::vector<std::string>& words) { args->positionals = words; },
        p.help);
    option->expected(p.min, p.max);
  }
  if (p.min > 0) option->required();
}

void AddOption(CLI::App* cmd, const grammar::Option& o, const std::shared_ptr<PlainArgs>& args) {
  std::string names = o.long_name;
  if (o.short_name != nullptr) names = std::string(o.short_name) + "," + names;
  const std::string key = o.long_name;
  if (o.kind == grammar::ValueKind::kFlag) {
    cmd->add_flag_callback(
        names, [args, key] { args->flags.insert(key); }, o.help);
    return;
  }
  CLI::Option* option = cmd->add_option_function<std::string>(
      names, [args, key](const std::string& value) { args->values[key] = value; }, o.help);
  if (o.default_value != nullptr) option->default_str(o.default_value);
  if (o.kind == grammar::ValueKind::kSeconds) {
    // After CLI11's own check (and its message), the plain road's rule for
    // what that check takes but a double cannot hold, so both roads agree.
    const CLI::Validator seconds(
        [](std::string& text) -> std::string {
          return ParseSeconds(text) ? "" : "Value " + text + " is not a number of seconds";
        },
        "");
    option->type_name("FLOAT")->check(CLI::NonNegativeNumber)->check(seconds);
  }
}

}  // namespace

CLI::App* AddGrammarCommand(CLI::App& app, const grammar::Command& command,
                            const std::shared_ptr<PlainArgs>& args) {
  CLI::App* cmd = app.add_subcommand(command.name, command.description);
  cmd->preparse_callback([args](std::size_t) { *args = PlainArgs{}; });
  AddPositionals(cmd, command.positionals, args);
  for (std::size_t i = 0; i < command.option_count; ++i) AddOption(cmd, command.options[i], args);
  return cmd;
}

}  // namespace podvisor::cli
