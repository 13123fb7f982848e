// S14.9: the bounds of LayerBudget (layer_unpack.h) from the environment.
#include <cstdlib>
#include <string_view>
#include <tuple>
#include <utility>

#include "image/layer_unpack.h"

namespace podvisor::image {
namespace {

// "8589934592", "8Gi": a positive count, with a binary suffix when allowed.
Result<uint64_t> ParseCount(std::string_view text, bool suffixes) {
  uint64_t value = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (value > (UINT64_MAX - 9) / 10) return Error("too large");
    value = value * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (i == 0) return Error("not a number");
  std::string_view suffix = text.substr(i);
  int shift = -1;
  if (suffix.empty()) shift = 0;
  if (suffixes) {
    for (auto [name, bits] :
         {std::pair{"Ki", 10}, std::pair{"Mi", 20}, std::pair{"Gi", 30}, std::pair{"Ti", 40}}) {
      if (suffix == name) shift = bits;
    }
  }
  if (shift < 0)
    return Error(suffixes ? "use a number of bytes, or with Ki, Mi, Gi or Ti" : "not a number");
  if (shift > 0 && value > (UINT64_MAX >> shift)) return Error("too large");
  value <<= shift;
  if (value == 0) return Error("must be more than 0");
  return value;
}

}  // namespace

Result<LayerBudget> LayerBudget::FromEnvironment() {
  LayerBudget budget;
  for (auto [variable, field, suffixes] :
       {std::tuple{kMaxBytesVariable, &budget.max_bytes, true},
        std::tuple{kMaxEntriesVariable, &budget.max_entries, false}}) {
    const char* text = std::getenv(variable);
    if (text == nullptr || *text == '\0') continue;
    auto value = ParseCount(text, suffixes);
    if (!value)
      return Error(std::string(variable) + "=\"" + text + "\": " + value.error().message());
    *field = *value;
  }
  return budget;
}

}  // namespace podvisor::image
