// kubectl's JSONPath templates (`-o jsonpath=...`), the subset kubectl
// documents: text with {expressions} where an expression is
//   $ or @          the current object
//   .name ['name']  a member; ..name every member of that name, at any depth
//   [i] [-i]        an index; [a:b] a slice; [*] every element or member
//   ['a','b'] [0,2] a union
//   [?(@.x == "v")] a filter (==, !=, <, <=, >, >=, or @.x alone: exists)
//   {range EXPR}...{end}  the text between, once per result
//   "text" in braces a literal with \n, \t escapes
// Results are printed as kubectl prints them: strings raw, other values
// as JSON, several results of one expression separated by a space.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace podvisor::cli {

// Evaluates `templ` against `data`. Errors name what is wrong in the
// template, or the missing member as kubectl does ("x is not found").
Result<std::string> EvaluateJsonPath(std::string_view templ, const nlohmann::json& data);

}  // namespace podvisor::cli
