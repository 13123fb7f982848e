#include "network/dns.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

namespace podvisor::network {
namespace {

// Kubernetes' limits (k8s.io/kubernetes/pkg/apis/core/validation:
// MaxDNSNameservers, MaxDNSSearchPathsExpanded, MaxDNSSearchListCharsExpanded;
// DNS1123SubdomainMaxLength).
constexpr size_t kMaxNameservers = 3;
constexpr size_t kMaxSearchPaths = 32;
constexpr size_t kMaxSearchListChars = 2048;
constexpr size_t kMaxDomainLength = 253;

constexpr const char* kResolvedStub = "127.0.0.53";

std::vector<std::string> SplitFields(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  std::string field;
  while (in >> field) out.push_back(field);
  return out;
}

void AppendUnique(std::vector<std::string>& to, const std::vector<std::string>& from) {
  for (const auto& s : from) {
    if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
  }
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

// Options merge by name, the pod's entry replacing the host's in place;
// order is first appearance (the kubelet's map order is random, a file
// that changes from run to run helps nobody).
std::vector<std::string> MergeOptions(const std::vector<std::string>& existing,
                                      const std::vector<DnsOption>& pod) {
  std::vector<std::pair<std::string, std::string>> merged;
  auto set = [&](const std::string& name, const std::string& value) {
    for (auto& [n, v] : merged) {
      if (n == name) {
        v = value;
        return;
      }
    }
    merged.emplace_back(name, value);
  };
  for (const auto& op : existing) {
    auto colon = op.find(':');
    if (colon == std::string::npos) {
      set(op, "");
    } else {
      set(op.substr(0, colon), op.substr(colon + 1));
    }
  }
  for (const auto& op : pod) set(op.name, op.value.value_or(""));
  std::vector<std::string> out;
  out.reserve(merged.size());
  for (const auto& [n, v] : merged) {
    std::string option = n;
    if (!v.empty()) option.append(":").append(v);
    out.push_back(std::move(option));
  }
  return out;
}

std::vector<std::string> FitSearches(std::vector<std::string> searches,
                                     std::vector<std::string>& warnings) {
  bool exceeded = false;
  if (searches.size() > kMaxSearchPaths) {
    searches.resize(kMaxSearchPaths);
    exceeded = true;
  }
  auto too_long = [](const std::string& s) { return s.size() > kMaxDomainLength; };
  if (std::any_of(searches.begin(), searches.end(), too_long)) {
    std::erase_if(searches, too_long);
    exceeded = true;
  }
  size_t line = Join(searches).size();
  if (line > kMaxSearchListChars) {
    while (!searches.empty() && line > kMaxSearchListChars) {
      line -= std::min(line, searches.back().size() + 1);
      searches.pop_back();
    }
    exceeded = true;
  }
  if (exceeded) {
    warnings.push_back(
        "Search Line limits were exceeded, some search paths have been omitted, the applied "
        "search line is: " +
        Join(searches));
  }
  return searches;
}

}  // namespace

const char* DnsPolicyName(DnsPolicy policy) {
  switch (policy) {
    case DnsPolicy::kClusterFirst:
      return "ClusterFirst";
    case DnsPolicy::kClusterFirstWithHostNet:
      return "ClusterFirstWithHostNet";
    case DnsPolicy::kDefault:
      return "Default";
    case DnsPolicy::kNone:
      return "None";
  }
  return "?";
}

std::optional<DnsPolicy> ParseDnsPolicy(std::string_view word) {
  for (auto p : {DnsPolicy::kClusterFirst, DnsPolicy::kClusterFirstWithHostNet, DnsPolicy::kDefault,
                 DnsPolicy::kNone}) {
    if (word == DnsPolicyName(p)) return p;
  }
  return std::nullopt;
}

std::string ResolvConf::Render() const {
  std::string out;
  for (const auto& ns : nameservers) out += "nameserver " + ns + "\n";
  if (!searches.empty()) out += "search " + Join(searches) + "\n";
  if (!options.empty()) out += "options " + Join(options) + "\n";
  return out;
}

ResolvConf ParseResolvConf(std::string_view text) {
  ResolvConf conf;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    auto fields = SplitFields(line);
    if (fields.empty() || fields[0].starts_with("#") || fields[0].starts_with(";")) continue;
    if (fields[0] == "nameserver" && fields.size() >= 2) {
      conf.nameservers.push_back(fields[1]);
    } else if (fields[0] == "search") {
      conf.searches.clear();
      for (size_t i = 1; i < fields.size(); ++i) {
        std::string s = fields[i];
        if (s.size() > 1 && s.back() == '.') s.pop_back();
        conf.searches.push_back(s);
      }
    } else if (fields[0] == "options") {
      conf.options.assign(fields.begin() + 1, fields.end());
    }
  }
  return conf;
}

Result<ResolvConf> HostResolvConf(const HostResolvFiles& files) {
  auto read = [](const std::filesystem::path& file) -> Result<std::optional<std::string>> {
    std::ifstream in(file);
    if (!in) {
      if (errno == ENOENT) return std::optional<std::string>();
      return Error::FromErrno("reading " + file.string());
    }
    std::stringstream text;
    text << in.rdbuf();
    return std::optional<std::string>(text.str());
  };
  auto main = read(files.resolv_conf);
  if (!main) return main.take_error();
  if (!*main) return ResolvConf{};
  ResolvConf conf = ParseResolvConf(**main);
  bool stub_only = !conf.nameservers.empty() &&
                   std::all_of(conf.nameservers.begin(), conf.nameservers.end(),
                               [](const std::string& ns) { return ns == kResolvedStub; });
  if (!stub_only) return conf;
  auto upstream = read(files.resolved_upstream);
  if (!upstream) return upstream.take_error();
  if (!*upstream) return conf;  // resolved is not running: keep what the host has
  return ParseResolvConf(**upstream);
}

PodDns FormPodDns(DnsPolicy policy, bool host_network, const std::optional<PodDnsConfig>& config,
                  const ResolvConf& host) {
  PodDns dns;
  switch (policy) {
    case DnsPolicy::kNone:
      break;
    case DnsPolicy::kClusterFirst:
      if (host_network) {
        dns.conf = host;
        break;
      }
      [[fallthrough]];
    case DnsPolicy::kClusterFirstWithHostNet:
      dns.warnings.push_back(std::string("podvisor has no cluster DNS and cannot create the pod "
                                         "with dnsPolicy ") +
                             DnsPolicyName(policy) +
                             ": falling back to Default (the host's "
                             "resolver configuration)");
      dns.conf = host;
      break;
    case DnsPolicy::kDefault:
      dns.conf = host;
      break;
  }
  if (config) {
    AppendUnique(dns.conf.nameservers, config->nameservers);
    std::vector<std::string> searches;
    AppendUnique(searches, dns.conf.searches);
    AppendUnique(searches, config->searches);
    dns.conf.searches = std::move(searches);
    dns.conf.options = MergeOptions(dns.conf.options, config->options);
  }
  // The host's own list may carry duplicates too.
  std::vector<std::string> nameservers;
  AppendUnique(nameservers, dns.conf.nameservers);
  if (nameservers.size() > kMaxNameservers) {
    nameservers.resize(kMaxNameservers);
    dns.warnings.push_back(
        "Nameserver limits were exceeded, some nameservers have been omitted, the applied "
        "nameserver line is: " +
        Join(nameservers));
  }
  dns.conf.nameservers = std::move(nameservers);
  dns.conf.searches = FitSearches(std::move(dns.conf.searches), dns.warnings);
  return dns;
}

}  // namespace podvisor::network
