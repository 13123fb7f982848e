// libFuzzer target: any bytes through the manifest parser (as YAML and as
// JSON), defaulting, validation, resource arithmetic and serialization.
// Invalid input must always come back as an error message, never an abort,
// a sanitizer report or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "pod/defaults.h"
#include "pod/parse.h"
#include "pod/resources.h"
#include "pod/serialize.h"
#include "pod/validate.h"

namespace {

void Exercise(std::string_view text, podvisor::pod::ManifestFormat format) {
  using namespace podvisor::pod;
  auto parsed = ParseManifest(text, format);
  if (!parsed) {
    (void)parsed.error().message();
    return;
  }
  Pod& pod = parsed->pod;
  ApplyDefaults(pod);
  for (const auto& e : ValidatePod(pod)) (void)e.ToString();
  (void)ComputeEffectiveResources(pod.spec);
  (void)ComputeQosClass(pod.spec);
  for (const auto& c : pod.spec.containers) (void)ComputeOomScoreAdj(pod.spec, c, 8LL << 30);
  for (const auto& c : pod.spec.init_containers) {
    (void)ComputeOomScoreAdj(pod.spec, c, 8LL << 30);
  }
  (void)ToJson(pod).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Exercise(text, podvisor::pod::ManifestFormat::kYaml);
  Exercise(text, podvisor::pod::ManifestFormat::kJson);
  return 0;
}
