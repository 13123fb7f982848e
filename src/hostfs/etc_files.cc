#include "hostfs/etc_files.h"

#include <fstream>
#include <sstream>
#include <system_error>

#include "common/mounts.h"

namespace podvisor::hostfs {
namespace {

Result<std::string> ReadOptional(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return std::string();
  std::ifstream in(file);
  if (!in) return Error::FromErrno("reading " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Status WriteFile(const std::filesystem::path& file, const std::string& content) {
  std::ofstream out(file, std::ios::trunc);
  if (!out) return Error::FromErrno("creating " + file.string());
  out << content;
  out.close();
  if (!out) return Error::FromErrno("writing " + file.string());
  std::error_code ec;
  std::filesystem::permissions(file, std::filesystem::perms(0644), ec);
  if (ec) return Error("chmod " + file.string() + ": " + ec.message(), ec.value());
  return Ok();
}

}  // namespace

std::string HostsFileContent(std::string_view hostname) {
  std::string out =
      "# Kubernetes-managed hosts file (podvisor).\n"
      "127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n"
      "fe00::0\tip6-localnet\n"
      "fe00::0\tip6-mcastprefix\n"
      "fe00::1\tip6-allnodes\n"
      "fe00::2\tip6-allrouters\n";
  out += "127.0.1.1\t" + std::string(hostname) + "\n";
  return out;
}

Status WritePodEtcFiles(const PodLayout& layout, std::string_view hostname, bool host_network,
                        const HostEtcFiles& host) {
  if (Status s = MakeDirs(layout.EtcDir(), 0755); !s) return s;
  std::string hosts;
  if (host_network) {
    auto text = ReadOptional(host.hosts);
    if (!text) return text.take_error();
    hosts = std::move(*text);
  } else {
    hosts = HostsFileContent(hostname);
  }
  auto resolv = ReadOptional(host.resolv_conf);
  if (!resolv) return resolv.take_error();
  if (Status s = WriteFile(layout.HostsFile(), hosts); !s) return s;
  if (Status s = WriteFile(layout.HostnameFile(), std::string(hostname) + "\n"); !s) return s;
  return WriteFile(layout.ResolvConfFile(), *resolv);
}

Status WritePodEtcFiles(const PodLayout& layout, std::string_view hostname, std::string_view hosts,
                        std::string_view resolv_conf) {
  if (Status s = MakeDirs(layout.EtcDir(), 0755); !s) return s;
  if (Status s = WriteFile(layout.HostsFile(), std::string(hosts)); !s) return s;
  if (Status s = WriteFile(layout.HostnameFile(), std::string(hostname) + "\n"); !s) return s;
  return WriteFile(layout.ResolvConfFile(), std::string(resolv_conf));
}

}  // namespace podvisor::hostfs
