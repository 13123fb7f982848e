#include "network/cni_result.h"

#include <arpa/inet.h>

#include <algorithm>

namespace podvisor::network {
namespace {

Error ResultError(const std::string& what) {
  return Error("result: " + what, EINVAL);
}

bool IsIp(const std::string& ip) {
  unsigned char buf[sizeof(struct in6_addr)];
  return ::inet_pton(AF_INET, ip.c_str(), buf) == 1 || ::inet_pton(AF_INET6, ip.c_str(), buf) == 1;
}

bool IsCidr(const std::string& cidr) {
  auto slash = cidr.find('/');
  if (slash == std::string::npos || slash + 1 == cidr.size()) return false;
  std::string prefix = cidr.substr(slash + 1);
  if (!std::all_of(prefix.begin(), prefix.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  if (prefix.size() > 3 || std::stoi(prefix) > 128) return false;
  return IsIp(cidr.substr(0, slash));
}

std::string StringField(const nlohmann::json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string CniIp::Ip() const {
  return address.substr(0, address.find('/'));
}

std::vector<std::string> CniResult::PodIps() const {
  std::vector<std::string> v4, v6;
  for (const auto& ip : ips) {
    bool in_sandbox = interfaces.empty() ||
                      (ip.interface >= 0 && static_cast<size_t>(ip.interface) < interfaces.size() &&
                       !interfaces[static_cast<size_t>(ip.interface)].sandbox.empty());
    // A result that names interfaces but no interface for an address
    // (host-local alone) still means the pod's address.
    if (!interfaces.empty() && ip.interface < 0) in_sandbox = true;
    if (!in_sandbox) continue;
    auto& list = ip.IsV6() ? v6 : v4;
    std::string addr = ip.Ip();
    if (std::find(list.begin(), list.end(), addr) == list.end()) list.push_back(addr);
  }
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

Result<CniResult> ParseCniResult(std::string_view text) {
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return ResultError("not valid JSON");
  if (!doc.is_object()) return ResultError("must be a JSON object");
  CniResult result;
  result.cni_version = StringField(doc, "cniVersion");
  if (auto it = doc.find("interfaces"); it != doc.end()) {
    if (!it->is_array()) return ResultError("\"interfaces\" must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const auto& iface = (*it)[i];
      if (!iface.is_object()) {
        return ResultError("interfaces[" + std::to_string(i) + "] must be an object");
      }
      result.interfaces.push_back(
          {StringField(iface, "name"), StringField(iface, "mac"), StringField(iface, "sandbox")});
    }
  }
  if (auto it = doc.find("ips"); it != doc.end()) {
    if (!it->is_array()) return ResultError("\"ips\" must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const auto& entry = (*it)[i];
      std::string where = "ips[" + std::to_string(i) + "]";
      if (!entry.is_object()) return ResultError(where + " must be an object");
      CniIp ip;
      ip.address = StringField(entry, "address");
      if (!IsCidr(ip.address)) {
        return ResultError(where + ": \"address\" is not an IP address in CIDR form");
      }
      ip.gateway = StringField(entry, "gateway");
      if (auto idx = entry.find("interface"); idx != entry.end()) {
        if (!idx->is_number_integer() || idx->get<int64_t>() < 0 ||
            static_cast<size_t>(idx->get<int64_t>()) >= result.interfaces.size()) {
          return ResultError(where + ": \"interface\" is not an index into \"interfaces\"");
        }
        ip.interface = idx->get<int>();
      }
      result.ips.push_back(std::move(ip));
    }
  }
  result.raw = std::move(doc);
  return result;
}

}  // namespace podvisor::network
