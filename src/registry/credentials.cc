#include "registry/credentials.h"

#include <fnmatch.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <system_error>

#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "pod/config_objects.h"

namespace podvisor::registry {
namespace fs = std::filesystem;
namespace {

using Json = nlohmann::json;

constexpr std::string_view kDockerConfigJsonType = "kubernetes.io/dockerconfigjson";
constexpr std::string_view kDockerConfigJsonKey = ".dockerconfigjson";
constexpr std::string_view kDockerCfgType = "kubernetes.io/dockercfg";
constexpr std::string_view kDockerCfgKey = ".dockercfg";
constexpr std::string_view kDefaultRegistryKey = "index.docker.io";
constexpr std::size_t kMaxAuthFile = 1 << 20;

struct HostAndPath {
  std::string host;  // with port
  std::string path;  // "" or starting with '/'
};

HostAndPath SplitSchemeless(std::string_view text) {
  for (std::string_view scheme : {"https://", "http://"}) {
    if (text.substr(0, scheme.size()) == scheme) text.remove_prefix(scheme.size());
  }
  std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return {std::string(text), ""};
  return {std::string(text.substr(0, slash)), std::string(text.substr(slash))};
}

std::pair<std::vector<std::string>, std::string> SplitHost(const std::string& host_port) {
  std::string host = host_port;
  std::string port;
  if (auto colon = host_port.rfind(':');
      colon != std::string::npos && host_port.find(']') == std::string::npos) {
    host = host_port.substr(0, colon);
    port = host_port.substr(colon + 1);
  }
  std::vector<std::string> labels;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = host.find('.', start);
    labels.push_back(host.substr(start, dot == std::string::npos ? dot : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return {labels, port};
}

// kubelet's isDefaultRegistryMatch.
bool IsDefaultRegistryImage(std::string_view repository) {
  std::size_t slash = repository.find('/');
  if (slash == 0) return false;
  if (slash == std::string_view::npos) return true;
  std::string_view first = repository.substr(0, slash);
  return first == "docker.io" || first.find_first_of(".:") == std::string_view::npos;
}

Result<RegistryCredential> ParseEntry(const std::string& name, const Json& entry,
                                      std::string_view source) {
  std::string where = std::string(source) + ": entry \"" + name + "\"";
  if (!entry.is_object()) return Error(where + " is not an object");
  RegistryCredential c{.key = NormaliseCredentialKey(name), .source = std::string(source)};
  auto text = [&](const char* field, std::string& out) -> Status {
    auto it = entry.find(field);
    if (it == entry.end() || it->is_null()) return Ok();
    if (!it->is_string()) return Error(where + ": " + field + " must be a string");
    out = it->get<std::string>();
    return Ok();
  };
  std::string auth;
  for (auto [field, out] :
       {std::pair{"username", &c.username}, std::pair{"password", &c.password},
        std::pair{"identitytoken", &c.identity_token}, std::pair{"auth", &auth}}) {
    if (Status s = text(field, *out); !s) return s.take_error();
  }
  if (!auth.empty()) {
    auto decoded = pod::DecodeBase64(auth);
    if (!decoded) return Error(where + ": auth is not valid base64");
    std::size_t colon = decoded->find(':');
    if (colon == std::string::npos) return Error(where + ": auth is not base64 of user:password");
    c.username = decoded->substr(0, colon);
    c.password = decoded->substr(colon + 1);
  }
  return c;
}

// "imagePullSecrets[0]: secret "x"" and the problem, which never quotes a value.
Error SecretError(const std::string& where, const std::string& name, std::string_view problem) {
  std::string message = where;
  message += ": secret \"";
  message += name;
  message += '"';
  message += problem;
  return Error(std::move(message));
}

Json ToJson(const RegistryCredential& c) {
  return {{"key", c.key},
          {"source", c.source},
          {"username", c.username},
          {"password", c.password},
          {"identitytoken", c.identity_token}};
}

}  // namespace

std::string NormaliseCredentialKey(std::string_view location) {
  HostAndPath parts = SplitSchemeless(location);
  std::string path = parts.path;
  if (path.rfind("/v2/", 0) == 0 || path.rfind("/v1/", 0) == 0) path = path.substr(3);
  if (path.empty() || path == "/") return parts.host;
  return parts.host + path;
}

bool CredentialKeyMatches(std::string_view key, std::string_view repository) {
  HostAndPath glob = SplitSchemeless(key);
  HostAndPath target = SplitSchemeless(repository);
  auto [glob_labels, glob_port] = SplitHost(glob.host);
  auto [target_labels, target_port] = SplitHost(target.host);
  if (glob_port != target_port || glob_labels.size() != target_labels.size()) return false;
  // A raw prefix, as the kubelet compares (so "/team" covers "/team2").
  if (target.path.rfind(glob.path, 0) != 0) return false;
  for (std::size_t i = 0; i < glob_labels.size(); ++i) {
    if (::fnmatch(glob_labels[i].c_str(), target_labels[i].c_str(), 0) != 0) return false;
  }
  return true;
}

Result<std::vector<RegistryCredential>> ParseDockerAuths(std::string_view map_json,
                                                         std::string_view source) {
  Json map = Json::parse(map_json, nullptr, /*allow_exceptions=*/false);
  if (!map.is_object()) return Error(std::string(source) + ": not a JSON object");
  std::vector<RegistryCredential> out;
  for (const auto& [name, entry] : map.items()) {
    auto c = ParseEntry(name, entry, source);
    if (!c) return c.take_error();
    out.push_back(std::move(*c));
  }
  return out;
}

Result<std::vector<RegistryCredential>> PullSecretCredentials(const pod::Pod& pod,
                                                              const pod::ConfigObjects& objects) {
  std::vector<RegistryCredential> out;
  for (std::size_t i = 0; i < pod.spec.image_pull_secrets.size(); ++i) {
    const std::string& name = pod.spec.image_pull_secrets[i].name;
    std::string where = "imagePullSecrets[" + std::to_string(i) + "]";
    const pod::Secret* secret = pod::FindSecret(objects, name);
    if (secret == nullptr) {
      return SecretError(where, name, " not found in the bundle");
    }
    std::string source = where;
    source += " (secret \"" + name + "\")";
    std::string_view key;
    if (secret->type == kDockerConfigJsonType) {
      key = kDockerConfigJsonKey;
    } else if (secret->type == kDockerCfgType) {
      key = kDockerCfgKey;
    } else {
      return SecretError(where, name,
                         " has type \"" + secret->type +
                             "\", not kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg");
    }
    auto data = secret->data.find(std::string(key));
    if (data == secret->data.end() || data->second.empty()) {
      return SecretError(where, name, " has no " + std::string(key));
    }
    std::string map_json = data->second;
    if (key == kDockerConfigJsonKey) {
      Json config = Json::parse(data->second, nullptr, /*allow_exceptions=*/false);
      if (!config.is_object() || !config.contains("auths") || !config["auths"].is_object()) {
        return SecretError(
            where, name,
            ": " + std::string(key) + " is not a JSON object with an \"auths\" object");
      }
      map_json = config["auths"].dump();
    }
    auto entries = ParseDockerAuths(map_json, source + " " + std::string(key));
    if (!entries) return entries.take_error();
    out.insert(out.end(), entries->begin(), entries->end());
  }
  return out;
}

Result<std::string> PullCredentialsJson(const pod::Pod& pod, const pod::ConfigObjects& objects) {
  auto all = PullSecretCredentials(pod, objects);
  if (!all) return all.take_error();
  Json list = Json::array();
  for (const RegistryCredential& c : *all) list.push_back(ToJson(c));
  return Json{{"credentials", list}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<std::vector<RegistryCredential>> ParsePullCredentialsJson(std::string_view text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("credentials") || !j["credentials"].is_array()) {
    return Error("pull credentials: not {\"credentials\":[...]}");
  }
  std::vector<RegistryCredential> out;
  for (const Json& item : j["credentials"]) {
    if (!item.is_object()) return Error("pull credentials: an entry is not an object");
    RegistryCredential c;
    for (auto [field, value] :
         {std::pair{"key", &c.key}, std::pair{"source", &c.source},
          std::pair{"username", &c.username}, std::pair{"password", &c.password},
          std::pair{"identitytoken", &c.identity_token}}) {
      auto it = item.find(field);
      if (it != item.end() && it->is_string()) *value = it->get<std::string>();
    }
    if (c.key.empty()) return Error("pull credentials: an entry has no key");
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<RegistryCredential> MatchCredentials(const std::vector<RegistryCredential>& all,
                                                 const ImageName& image) {
  const std::string repository = image.Repository();
  std::set<std::string, std::greater<>> keys;
  for (const RegistryCredential& c : all) keys.insert(c.key);
  std::vector<RegistryCredential> out;
  for (const std::string& key : keys) {
    if (!CredentialKeyMatches(key, repository)) continue;
    for (const RegistryCredential& c : all) {
      if (c.key == key) out.push_back(c);
    }
  }
  if (out.empty() && IsDefaultRegistryImage(repository)) {
    for (const RegistryCredential& c : all) {
      if (c.key == kDefaultRegistryKey) out.push_back(c);
    }
  }
  return out;
}

std::vector<fs::path> DefaultAuthFiles() {
  if (const char* file = std::getenv("REGISTRY_AUTH_FILE"); file && *file) return {file};
  std::vector<fs::path> files;
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime) {
    files.push_back(fs::path(runtime) / "containers/auth.json");
  } else if (::geteuid() == 0) {
    // containers/image's default for root without XDG_RUNTIME_DIR.
    files.emplace_back("/run/containers/0/auth.json");
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    files.push_back(fs::path(home) / ".config/containers/auth.json");
    files.push_back(fs::path(home) / ".docker/config.json");
  }
  return files;
}

Result<std::vector<RegistryCredential>> AuthFileCredentials(const std::vector<fs::path>& files,
                                                            const ImageName& image) {
  for (const fs::path& file : files) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) continue;
    auto text = ReadFileBounded(file, kMaxAuthFile);
    if (!text) return text.take_error().Wrap("reading auth file " + file.string());
    Json config = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!config.is_object()) return Error("auth file " + file.string() + ": not a JSON object");
    auto auths = config.find("auths");
    if (auths == config.end()) continue;
    auto entries = ParseDockerAuths(auths->dump(), file.string());
    if (!entries) return entries.take_error();
    auto matched = MatchCredentials(*entries, image);
    if (!matched.empty()) return matched;
  }
  return std::vector<RegistryCredential>{};
}

Result<Fd> CredentialMemfd(const RegistryCredential& credential, const ImageName& image) {
  Json entry = Json::object();
  if (!credential.username.empty() || !credential.password.empty()) {
    entry["auth"] = pod::EncodeBase64(credential.username + ":" + credential.password);
  }
  if (!credential.identity_token.empty()) entry["identitytoken"] = credential.identity_token;
  std::string text =
      Json{{"auths", {{image.domain, entry}}}}.dump(-1, ' ', false, Json::error_handler_t::replace);
  int raw = ::memfd_create("podvisor-authfile", MFD_CLOEXEC);
  if (raw < 0) return Error::FromErrno("memfd_create for the auth file");
  Fd fd(raw);
  std::string_view rest = text;
  while (!rest.empty()) {
    ssize_t n = ::write(fd.get(), rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::FromErrno("writing the auth memfd");
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return fd;
}

std::vector<std::string> CredentialSecrets(const RegistryCredential& credential) {
  std::vector<std::string> secrets;
  for (const std::string* s : {&credential.password, &credential.identity_token}) {
    if (!s->empty()) secrets.push_back(*s);
  }
  if (!credential.password.empty()) {
    secrets.push_back(pod::EncodeBase64(credential.username + ":" + credential.password));
  }
  return secrets;
}

}  // namespace podvisor::registry
