#include "registry/image_name.h"

#include <cctype>
#include <string>
#include <vector>

#include "image/digest.h"

namespace podvisor::registry {
namespace {

// distribution's NameTotalLengthMax: the repository, domain included.
constexpr std::size_t kMaxNameLength = 255;
constexpr std::size_t kMaxTagLength = 128;

Error Invalid(std::string_view reference, std::string_view why) {
  return Error("invalid reference format: " + std::string(why) + " (image \"" +
               std::string(reference) + "\")");
}

bool IsLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// path-component: [a-z0-9]+ separated by ".", "_", "__" or any number of "-".
bool IsPathComponent(std::string_view part) {
  if (part.empty() || !IsLowerAlnum(part.front()) || !IsLowerAlnum(part.back())) return false;
  for (std::size_t i = 0; i < part.size();) {
    if (IsLowerAlnum(part[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < part.size() && !IsLowerAlnum(part[j])) ++j;
    std::string_view sep = part.substr(i, j - i);
    bool dashes = sep.find_first_not_of('-') == std::string_view::npos;
    if (sep != "." && sep != "_" && sep != "__" && !dashes) return false;
    i = j;
  }
  return true;
}

// domain: labels of [a-zA-Z0-9-] (not starting or ending with '-') joined
// by '.', and an optional :port; or a bracketed IPv6 address.
bool IsDomain(std::string_view domain) {
  std::string_view host = domain;
  std::size_t port_at = std::string_view::npos;
  if (!domain.empty() && domain.front() == '[') {
    std::size_t close = domain.find(']');
    if (close == std::string_view::npos || close < 3) return false;
    for (char c : domain.substr(1, close - 1)) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':') return false;
    }
    if (close + 1 == domain.size()) return true;
    if (domain[close + 1] != ':') return false;
    port_at = close + 1;
    host = {};
  } else {
    port_at = domain.find(':');
    host = domain.substr(0, port_at);
  }
  if (port_at != std::string_view::npos) {
    std::string_view port = domain.substr(port_at + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
  }
  if (!domain.empty() && domain.front() == '[') return true;
  if (host.empty()) return false;
  std::size_t start = 0;
  while (start <= host.size()) {
    std::size_t dot = host.find('.', start);
    std::string_view label = host.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (label.empty() || label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

// tag: [\w][\w.-]{0,127}
bool IsTag(std::string_view tag) {
  if (tag.empty() || tag.size() > kMaxTagLength) return false;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (!word(tag.front())) return false;
  for (char c : tag) {
    if (!word(c) && c != '.' && c != '-') return false;
  }
  return true;
}

}  // namespace

std::string ImageName::ToString() const {
  std::string text = Repository();
  if (!tag.empty()) {
    text += ":" + tag;
  } else if (digest.empty()) {
    text += ":latest";
  }
  if (!digest.empty()) text += "@" + digest;
  return text;
}

std::string ImageName::PullReference() const {
  if (!digest.empty()) return Repository() + "@" + digest;
  return Repository() + ":" + (tag.empty() ? std::string("latest") : tag);
}

Result<ImageName> ParseImageName(std::string_view reference) {
  if (reference.empty()) return Invalid(reference, "empty image name");
  for (char c : reference) {
    if (c <= ' ' || c == 0x7f || static_cast<unsigned char>(c) >= 0x80) {
      return Invalid(reference, "contains a space or a control or non-ASCII character");
    }
  }
  ImageName name;
  std::string_view rest = reference;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    std::string_view digest_text = rest.substr(at + 1);
    auto digest = image::ParseDigest(digest_text);
    if (!digest) return Invalid(reference, "invalid digest: " + digest.error().message());
    name.digest = digest->ToString();
    rest = rest.substr(0, at);
  }
  // A ':' after the last '/' is a tag; one before it belongs to a port.
  std::size_t last_slash = rest.rfind('/');
  std::size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos &&
      (last_slash == std::string_view::npos || colon > last_slash)) {
    std::string_view tag = rest.substr(colon + 1);
    if (!IsTag(tag)) {
      return Invalid(reference, "invalid tag \"" + std::string(tag) +
                                    "\": up to 128 letters, digits, '_', '.' and '-', "
                                    "not starting with '.' or '-'");
    }
    name.tag = std::string(tag);
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return Invalid(reference, "no repository name");

  // docker's splitDockerDomain: the first component is a domain when it
  // has a '.' or ':', is "localhost", or has an upper-case letter.
  std::string_view path = rest;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view first = rest.substr(0, slash);
    bool upper = false;
    for (char c : first) upper = upper || (c >= 'A' && c <= 'Z');
    if (first.find_first_of(".:") != std::string_view::npos || first == "localhost" || upper) {
      if (!IsDomain(first))
        return Invalid(reference, "invalid registry \"" + std::string(first) + "\"");
      name.domain = std::string(first);
      path = rest.substr(slash + 1);
    }
  }
  if (name.domain.empty()) {
    name.short_name = true;
    name.domain = std::string(kDockerHubDomain);
  }
  if (name.domain == "index.docker.io") name.domain = std::string(kDockerHubDomain);

  std::size_t start = 0;
  while (true) {
    std::size_t slash = path.find('/', start);
    std::string_view part =
        path.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (!IsPathComponent(part)) {
      bool upper = false;
      for (char c : part) upper = upper || (c >= 'A' && c <= 'Z');
      if (upper) return Invalid(reference, "repository name must be lowercase");
      return Invalid(reference, "invalid repository path component \"" + std::string(part) +
                                    "\": lower-case letters and digits separated by '.', '_', "
                                    "'__' or '-'");
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  name.path = std::string(path);
  if (name.domain == kDockerHubDomain && name.path.find('/') == std::string::npos) {
    name.path = "library/" + name.path;
  }
  if (name.Repository().size() > kMaxNameLength) {
    return Invalid(reference, "repository name must not be more than 255 characters");
  }
  return name;
}

const char* PullPolicyName(PullPolicy policy) {
  switch (policy) {
    case PullPolicy::kAlways:
      return "Always";
    case PullPolicy::kIfNotPresent:
      return "IfNotPresent";
    case PullPolicy::kNever:
      return "Never";
  }
  return "?";
}

Result<PullPolicy> ParsePullPolicy(std::string_view text) {
  for (PullPolicy p : {PullPolicy::kAlways, PullPolicy::kIfNotPresent, PullPolicy::kNever}) {
    if (text == PullPolicyName(p)) return p;
  }
  return Error("Unsupported value: \"" + std::string(text) +
               "\": supported values: \"Always\", \"IfNotPresent\", \"Never\"");
}

PullPolicy DefaultPullPolicy(std::string_view image) {
  auto name = ParseImageName(image);
  if (!name) return PullPolicy::kIfNotPresent;
  bool latest = name->tag == "latest" || (name->tag.empty() && name->digest.empty());
  return latest ? PullPolicy::kAlways : PullPolicy::kIfNotPresent;
}

}  // namespace podvisor::registry
