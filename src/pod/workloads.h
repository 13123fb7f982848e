// Workload documents whose pod template podvisor runs as its one pod:
// Deployment, ReplicaSet, StatefulSet and DaemonSet (apps/v1), Job and
// CronJob (batch/v1), as `podman kube play` takes them.
//
// The pod is the template: its name and namespace are the workload's, its
// labels the workload's merged under the template's (the template wins on a
// key), its annotations the template's. What a controller would do with
// more than one pod (replicas, completions, parallelism, a schedule) has no
// meaning for one pod on one host and gets a warning. A Job's backoffLimit
// and activeDeadlineSeconds are what its controller enforces on its pod,
// and podvisor enforces them (S3.6). The
// template's restartPolicy is checked as the API server checks it for that
// kind: Always for the apps/v1 kinds, OnFailure or Never for Jobs (the
// default Always is refused there, as the API server refuses it).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "pod/field_error.h"
#include "pod/model.h"

namespace podvisor::pod {

bool IsWorkloadKind(std::string_view kind);

// Builds the v1 Pod document of the workload DOC into POD_DOC; returns the
// field path of its template ("spec.template", or
// "spec.jobTemplate.spec.template" for a CronJob), under which every later
// error about the pod's spec is reported (PointAtTemplate).
// A Job's (or a CronJob's job template's) backoffLimit goes to `job`,
// and its activeDeadlineSeconds becomes the pod's when it is shorter.
std::string UnwrapWorkload(const nlohmann::json& doc, nlohmann::json& pod_doc, FieldErrors& errors,
                           FieldWarnings& warnings, std::optional<JobLimits>& job);

// Rewrites "spec..." field paths to TEMPLATE_PATH + ".spec...", so an
// error about a Deployment names the field the user has to edit.
void PointAtTemplate(const std::string& template_path, FieldErrors& errors,
                     FieldWarnings& warnings);

}  // namespace podvisor::pod
