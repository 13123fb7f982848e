#include "pod/workloads.h"

#include <array>
#include <climits>
#include <cstdint>
#include <utility>

#include <nlohmann/json.hpp>

namespace podvisor::pod {
namespace {

using nlohmann::json;

struct WorkloadKind {
  std::string_view kind;
  std::string_view api_version;
  bool is_job;  // Job and CronJob: the template must not restart Always
};

constexpr std::array<WorkloadKind, 6> kKinds = {{
    {"Deployment", "apps/v1", false},
    {"ReplicaSet", "apps/v1", false},
    {"StatefulSet", "apps/v1", false},
    {"DaemonSet", "apps/v1", false},
    {"Job", "batch/v1", true},
    {"CronJob", "batch/v1", true},
}};

const WorkloadKind* FindKind(std::string_view kind) {
  for (const WorkloadKind& k : kKinds) {
    if (k.kind == kind) return &k;
  }
  return nullptr;
}

const json* Member(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// Warns about a controller field that has a meaning only with more than
// one pod, when it asks for more than one.
void WarnAboveOne(const json& spec, const std::string& spec_path, std::string_view key,
                  std::string_view what, FieldWarnings& warnings) {
  const json* v = Member(spec, key);
  if (!v || !v->is_number() || v->get<double>() <= 1) return;
  warnings.push_back({spec_path + "." + std::string(key),
                      v->dump() + " " + std::string(what) + "; podvisor runs exactly one pod"});
}

// S3.6: what the Job controller enforces on its pod. backoffLimit
// (default 6) goes to `job`; activeDeadlineSeconds becomes the pod's when
// the template has none or a longer one (one pod: the Job's start is the
// pod's). Values are checked as batch/v1 validation checks them.
// `policy` is the template's restartPolicy.
void TakeJobLimits(const json& job_spec, const std::string& spec_path, const std::string& policy,
                   json& pod_doc, FieldErrors& errors, FieldWarnings& warnings,
                   std::optional<JobLimits>& job) {
  job.emplace();
  if (const json* v = Member(job_spec, "backoffLimit")) {
    if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > INT32_MAX) {
      errors.push_back(
          Invalid(spec_path + ".backoffLimit", v->dump(), "must be greater than or equal to 0"));
    } else {
      job->backoff_limit = static_cast<int32_t>(v->get<int64_t>());
    }
  }
  if (const json* v = Member(job_spec, "activeDeadlineSeconds")) {
    if (!v->is_number_integer() || v->get<int64_t>() <= 0) {
      errors.push_back(Invalid(spec_path + ".activeDeadlineSeconds", v->dump(),
                               "must be greater than or equal to 1"));
    } else if (pod_doc.contains("spec") && pod_doc["spec"].is_object()) {
      json& spec = pod_doc["spec"];
      const json* own = Member(spec, "activeDeadlineSeconds");
      if (!own || !own->is_number_integer() || own->get<int64_t>() > v->get<int64_t>()) {
        spec["activeDeadlineSeconds"] = *v;
      }
    }
  }
  if (policy == "Never" && job->backoff_limit > 0) {
    warnings.push_back({spec_path + ".backoffLimit",
                        "a Job's retries under restartPolicy Never are new pods, which podvisor "
                        "does not make: the pod's failure ends the job"});
  }
}

}  // namespace

bool IsWorkloadKind(std::string_view kind) {
  return FindKind(kind) != nullptr;
}

std::string UnwrapWorkload(const json& doc, json& pod_doc, FieldErrors& errors,
                           FieldWarnings& warnings, std::optional<JobLimits>& job) {
  const WorkloadKind& kind = *FindKind(doc.value("kind", ""));
  std::string api_version;
  if (const json* v = Member(doc, "apiVersion"); v && v->is_string()) api_version = *v;
  if (api_version != kind.api_version) {
    errors.push_back(
        Unsupported("apiVersion", QuoteValue(api_version), {std::string(kind.api_version)}));
  }
  const json empty = json::object();
  const json* meta = Member(doc, "metadata");
  if (!meta) meta = &empty;
  const json* spec = Member(doc, "spec");
  if (!spec || !spec->is_object()) {
    errors.push_back(Required("spec", "a " + std::string(kind.kind) + " needs spec.template"));
    spec = &empty;
  }

  std::string template_path = "spec.template";
  const json* tmpl = nullptr;
  const json* job_spec_of_pod = kind.is_job ? spec : nullptr;  // the Job's spec
  std::string job_spec_path = "spec";
  if (kind.kind == "CronJob") {
    template_path = "spec.jobTemplate.spec.template";
    if (Member(*spec, "schedule")) {
      warnings.push_back(
          {"spec.schedule", "ignored: podvisor runs the job's pod once, now, not on a schedule"});
    }
    const json* job_template = Member(*spec, "jobTemplate");
    const json* job_spec = job_template ? Member(*job_template, "spec") : nullptr;
    if (job_spec) {
      WarnAboveOne(*job_spec, "spec.jobTemplate.spec", "completions", "completions", warnings);
      WarnAboveOne(*job_spec, "spec.jobTemplate.spec", "parallelism", "parallel pods", warnings);
      tmpl = Member(*job_spec, "template");
    }
    job_spec_of_pod = job_spec;
    job_spec_path = "spec.jobTemplate.spec";
  } else {
    tmpl = Member(*spec, "template");
    if (kind.is_job) {
      WarnAboveOne(*spec, "spec", "completions", "completions", warnings);
      WarnAboveOne(*spec, "spec", "parallelism", "parallel pods", warnings);
    } else {
      WarnAboveOne(*spec, "spec", "replicas", "replicas", warnings);
    }
  }
  if (!tmpl || !tmpl->is_object()) {
    errors.push_back(Required(template_path, "the pod template podvisor runs"));
    tmpl = &empty;
  }

  // metadata: the workload's name and namespace, labels merged.
  json pod_meta = json::object();
  const json* tmeta = Member(*tmpl, "metadata");
  if (tmeta && tmeta->is_object()) {
    for (const char* key : {"labels", "annotations"}) {
      if (const json* v = Member(*tmeta, key)) pod_meta[key] = *v;
    }
  }
  for (const char* key : {"name", "namespace", "uid"}) {
    if (const json* v = Member(*meta, key)) pod_meta[key] = *v;
  }
  if (const json* labels = Member(*meta, "labels"); labels && labels->is_object()) {
    json merged = *labels;
    if (const json* t = Member(pod_meta, "labels"); t && t->is_object()) {
      for (const auto& [k, v] : t->items()) merged[k] = v;
    }
    pod_meta["labels"] = std::move(merged);
  }

  pod_doc = json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", std::move(pod_meta)}};
  const json* pod_spec = Member(*tmpl, "spec");
  // Without one, DecodePod reports "spec: Required value", which
  // PointAtTemplate turns into the template's.
  if (pod_spec) pod_doc["spec"] = *pod_spec;

  // The template's restartPolicy, after the API server's defaulting to
  // Always, as apps/v1 and batch/v1 validation check it.
  std::string policy = "Always";
  if (pod_spec) {
    if (const json* p = Member(*pod_spec, "restartPolicy"); p && p->is_string() && *p != "") {
      policy = *p;
    }
  }
  if (kind.is_job) {
    TakeJobLimits(job_spec_of_pod ? *job_spec_of_pod : empty, job_spec_path, policy, pod_doc,
                  errors, warnings, job);
  }
  std::string policy_path = template_path + ".spec.restartPolicy";
  if (kind.is_job && policy != "OnFailure" && policy != "Never") {
    errors.push_back(Unsupported(policy_path, QuoteValue(policy), {"OnFailure", "Never"}));
  } else if (!kind.is_job && policy != "Always") {
    errors.push_back(Unsupported(policy_path, QuoteValue(policy), {"Always"}));
  }
  return template_path;
}

void PointAtTemplate(const std::string& template_path, FieldErrors& errors,
                     FieldWarnings& warnings) {
  auto rewrite = [&](std::string& field) {
    if (field == "spec" || field.starts_with("spec.") || field.starts_with("spec[")) {
      field = template_path + "." + field;
    }
  };
  for (FieldError& e : errors) rewrite(e.field);
  for (FieldWarning& w : warnings) rewrite(w.field);
}

}  // namespace podvisor::pod
