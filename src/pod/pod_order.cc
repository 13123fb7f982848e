// podvisor.io/after: reading and checking the annotation (pod_order.h).
#include "pod/pod_order.h"

#include <algorithm>

#include "pod/validate_internal.h"

namespace podvisor::pod {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The entries between commas, trimmed, empty ones kept (for the check).
std::vector<std::string> Entries(std::string_view value) {
  std::vector<std::string> out;
  for (;;) {
    const std::size_t comma = value.find(',');
    out.emplace_back(Trim(value.substr(0, comma)));
    if (comma == std::string_view::npos) return out;
    value.remove_prefix(comma + 1);
  }
}

const std::string* AfterValue(const Pod& pod) {
  auto it = pod.metadata.annotations.find(std::string(kAfterAnnotation));
  return it == pod.metadata.annotations.end() ? nullptr : &it->second;
}

}  // namespace

std::vector<std::string> AfterPods(const Pod& pod) {
  std::vector<std::string> out;
  const std::string* value = AfterValue(pod);
  if (!value) return out;
  for (std::string& name : Entries(*value)) {
    if (name.empty() || std::find(out.begin(), out.end(), name) != out.end()) continue;
    out.push_back(std::move(name));
  }
  return out;
}

FieldErrors ValidateAfterAnnotation(const Pod& pod) {
  FieldErrors errs;
  const std::string* value = AfterValue(pod);
  if (!value) return errs;
  const std::string path = internal::Key("metadata.annotations", kAfterAnnotation);
  if (Trim(*value).empty()) {
    errs.push_back(Required(path, "a comma-separated list of pod names"));
    return errs;
  }
  std::vector<std::string> seen;
  for (const std::string& name : Entries(*value)) {
    if (name.empty()) {
      errs.push_back(Invalid(path, internal::Q(*value),
                             "must be a comma-separated list of pod names, without empty entries"));
      continue;
    }
    for (const std::string& message : internal::Dns1123SubdomainMessages(name)) {
      errs.push_back(Invalid(path, internal::Q(name), message));
    }
    if (name == pod.metadata.name) {
      errs.push_back(Invalid(path, internal::Q(name), "a pod cannot wait for itself"));
    }
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      errs.push_back(Duplicate(path, internal::Q(name)));
    }
    seen.push_back(name);
  }
  return errs;
}

}  // namespace podvisor::pod
