#include "cli/node_facts.h"

#include <sys/sysinfo.h>
#include <unistd.h>

#include <cstdio>

#include "pod/quantity.h"

namespace podvisor::cli {

std::optional<int64_t> NodeMemoryOption(const std::optional<std::string>& given) {
  if (!given) {
    struct sysinfo info {};
    if (::sysinfo(&info) != 0) return 0;
    return static_cast<int64_t>(info.totalram) * info.mem_unit;
  }
  auto q = pod::Quantity::Parse(*given);
  if (!q || q->value() <= 0) {
    std::fprintf(stderr, "podvisor: --node-memory: invalid size \"%s\" (e.g. 6Gi)\n",
                 given->c_str());
    return std::nullopt;
  }
  return q->value();
}

std::string NodeHostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace podvisor::cli
