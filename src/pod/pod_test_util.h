// Helpers shared by the pod tests. The parse half reads manifests (inline
// YAML or the files in src/pod/testdata) and turns their problems into the
// kubectl-style lines the tests compare against; the validation half builds
// pods in C++ so the ValidatePod tests do not depend on the parser.
//
// The namespace is test_util rather than testing: the tests live in
// podvisor::pod and spell gmock's matchers as testing::X, which a nested
// podvisor::pod::testing would hide.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/parse.h"
#include "pod/validate.h"

namespace podvisor::pod::test_util {

// --- Parsing ------------------------------------------------------------------

// src/pod/testdata/NAME; meson points PODVISOR_TESTDATA there so the tests
// run from any directory.
inline std::filesystem::path TestData(const std::string& name) {
  const char* dir = std::getenv("PODVISOR_TESTDATA");
  return std::filesystem::path(dir ? dir : "src/pod/testdata") / name;
}

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// "apiVersion: v1 / kind: Pod / metadata.name p", then SPEC under "spec:".
inline std::string PodYaml(std::string_view spec) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n" + std::string(spec);
}

inline ParseOutput Parse(std::string_view text, ManifestFormat format = ManifestFormat::kYaml) {
  Result<ParseOutput> r = ParseManifest(text, format);
  if (!r) {
    ADD_FAILURE() << "unexpected syntax error: " << r.error().message() << "\n" << text;
    return {};
  }
  return std::move(r).value();
}

inline std::vector<std::string> ErrorLines(const ParseOutput& out) {
  std::vector<std::string> lines;
  for (const FieldError& e : out.errors) lines.push_back(e.ToString());
  return lines;
}

inline std::vector<std::string> WarningLines(const ParseOutput& out) {
  std::vector<std::string> lines;
  for (const FieldWarning& w : out.warnings) lines.push_back(w.ToString());
  return lines;
}

// Parses SPEC (see PodYaml) and expects no errors and no warnings.
inline Pod ParseClean(std::string_view spec) {
  ParseOutput out = Parse(PodYaml(spec));
  EXPECT_THAT(ErrorLines(out), ::testing::IsEmpty());
  EXPECT_THAT(WarningLines(out), ::testing::IsEmpty());
  return out.pod;
}

inline Pod ParseTestData(const std::string& name) {
  Result<ParseOutput> r = ParseManifestFile(TestData(name));
  if (!r) {
    ADD_FAILURE() << r.error().message();
    return {};
  }
  EXPECT_THAT(ErrorLines(*r), ::testing::IsEmpty()) << name;
  EXPECT_THAT(WarningLines(*r), ::testing::IsEmpty()) << name;
  return r->pod;
}

inline Quantity Q(std::string_view text) {
  return Quantity::Parse(text).value();
}

// --- Validation ---------------------------------------------------------------

inline std::vector<std::string> Lines(const FieldErrors& errs) {
  std::vector<std::string> out;
  for (const auto& e : errs) out.push_back(e.ToString());
  return out;
}

inline std::vector<std::string> Check(const Pod& pod) {
  return Lines(ValidatePod(pod));
}

inline Container MakeContainer(std::string name, std::string image = "busybox") {
  Container c;
  c.name = std::move(name);
  c.image = std::move(image);
  return c;
}

// The smallest valid pod, as ApplyDefaults leaves it.
inline Pod MinimalPod() {
  Pod pod;
  pod.metadata.name = "web";
  pod.spec.termination_grace_period_seconds = 30;
  pod.spec.containers.push_back(MakeContainer("app"));
  return pod;
}

inline Handler Exec(std::vector<std::string> command) {
  Handler h;
  h.exec = ExecAction{std::move(command)};
  return h;
}

inline Handler HttpGet(IntOrString port) {
  Handler h;
  h.http_get = HttpGetAction{};
  h.http_get->path = "/healthz";
  h.http_get->port = std::move(port);
  return h;
}

inline Probe MakeProbe(Handler h) {
  Probe p;
  p.handler = std::move(h);
  return p;
}

inline LifecycleHandler Hook(Handler h) {
  return LifecycleHandler{std::move(h), std::nullopt};
}

inline constexpr const char* kLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

}  // namespace podvisor::pod::test_util
