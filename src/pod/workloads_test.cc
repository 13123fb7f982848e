// Workload documents run as their pod template (workloads.h).
#include "pod/workloads.h"
#include "pod/pod_test_util.h"

namespace podvisor::pod {
namespace {

using test_util::ErrorLines;
using test_util::Parse;
using test_util::WarningLines;
using testing::ElementsAre;
using testing::IsEmpty;
using testing::Pair;
using testing::UnorderedElementsAre;

TEST(Workloads, DeploymentRunsItsTemplateUnderItsName) {
  ParseOutput out = Parse(R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web, tier: front}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      name: ignored
      labels: {app: web, version: v2, tier: back}
      annotations: {note: x}
    spec:
      containers: [{name: app, image: busybox}]
)");
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  EXPECT_THAT(WarningLines(out),
              ElementsAre("spec.replicas: 3 replicas; podvisor runs exactly one pod"));
  EXPECT_EQ(out.template_path, "spec.template");
  EXPECT_EQ(out.pod.metadata.name, "web");
  EXPECT_EQ(out.pod.metadata.namespace_name, "shop");
  EXPECT_THAT(
      out.pod.metadata.labels,
      UnorderedElementsAre(Pair("app", "web"), Pair("tier", "back"), Pair("version", "v2")));
  EXPECT_THAT(out.pod.metadata.annotations, UnorderedElementsAre(Pair("note", "x")));
  EXPECT_EQ(out.pod.spec.containers[0].name, "app");
  EXPECT_EQ(out.pod.spec.restart_policy, RestartPolicy::kAlways);
}

TEST(Workloads, ErrorsPointIntoTheTemplate) {
  ParseOutput out = Parse(R"(apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: db, image: 7, bogus: 1}]
)");
  EXPECT_THAT(ErrorLines(out),
              ElementsAre("spec.template.spec.restartPolicy: Unsupported value: \"Never\": "
                          "supported values: \"Always\"",
                          "spec.template.spec.containers[0].image: Invalid value: 7: must be a "
                          "string"));
  EXPECT_THAT(WarningLines(out),
              ElementsAre("spec.template.spec.containers[0].bogus: unknown field"));
  // Validation's errors go through the same rewrite (pod_loading.cc).
  FieldErrors errors = {Required("spec.containers[0].name")};
  FieldWarnings warnings;
  PointAtTemplate(out.template_path, errors, warnings);
  EXPECT_EQ(errors[0].field, "spec.template.spec.containers[0].name");
}

TEST(Workloads, JobsNeedOnFailureOrNeverAndWarnAboutControllerFields) {
  ParseOutput job = Parse(R"(apiVersion: batch/v1
kind: Job
metadata: {name: report}
spec:
  completions: 5
  parallelism: 1
  backoffLimit: 4
  template:
    spec:
      containers: [{name: r, image: busybox}]
)");
  EXPECT_THAT(ErrorLines(job),
              ElementsAre("spec.template.spec.restartPolicy: Unsupported value: \"Always\": "
                          "supported values: \"OnFailure\", \"Never\""));
  EXPECT_THAT(WarningLines(job),
              ElementsAre("spec.completions: 5 completions; podvisor runs exactly one pod"));
  ASSERT_TRUE(job.pod.job.has_value());
  EXPECT_EQ(job.pod.job->backoff_limit, 4);

  ParseOutput cron = Parse(R"(apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, labels: {team: data}}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: r, image: busybox, ports: [{containerPort: 0.5}]}]
)");
  EXPECT_EQ(cron.pod.metadata.name, "nightly");
  EXPECT_EQ(cron.pod.metadata.labels.at("team"), "data");
  EXPECT_EQ(cron.pod.spec.restart_policy, RestartPolicy::kOnFailure);
  EXPECT_THAT(ErrorLines(cron),
              ElementsAre("spec.jobTemplate.spec.template.spec.containers[0].ports[0]."
                          "containerPort: Invalid value: 0.5: must be an integer"));
  EXPECT_THAT(WarningLines(cron),
              ElementsAre("spec.schedule: ignored: podvisor runs the job's pod once, now, not "
                          "on a schedule"));
  ASSERT_TRUE(cron.pod.job.has_value());
  EXPECT_EQ(cron.pod.job->backoff_limit, 6);  // batch/v1's default
}

// S3.6: what the Job controller enforces on its pod.
TEST(Workloads, JobLimitsBackoffAndDeadlineGoToThePod) {
  ParseOutput job = Parse(R"(apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  backoffLimit: 0
  activeDeadlineSeconds: 600
  template:
    spec:
      restartPolicy: OnFailure
      activeDeadlineSeconds: 900
      containers: [{name: m, image: busybox}]
)");
  EXPECT_THAT(ErrorLines(job), IsEmpty());
  ASSERT_TRUE(job.pod.job.has_value());
  EXPECT_EQ(job.pod.job->backoff_limit, 0);
  EXPECT_EQ(job.pod.spec.active_deadline_seconds, 600);  // the shorter one

  ParseOutput own = Parse(R"(apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  activeDeadlineSeconds: 600
  template:
    spec:
      restartPolicy: Never
      activeDeadlineSeconds: 60
      containers: [{name: m, image: busybox}]
)");
  EXPECT_EQ(own.pod.spec.active_deadline_seconds, 60);
  EXPECT_THAT(WarningLines(own),
              ElementsAre("spec.backoffLimit: a Job's retries under restartPolicy Never are new "
                          "pods, which podvisor does not make: the pod's failure ends the job"));

  ParseOutput bad = Parse(R"(apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  backoffLimit: -1
  activeDeadlineSeconds: 0
  template:
    spec:
      restartPolicy: OnFailure
      containers: [{name: m, image: busybox}]
)");
  EXPECT_THAT(
      ErrorLines(bad),
      ElementsAre("spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
                  "spec.activeDeadlineSeconds: Invalid value: 0: must be greater than or "
                  "equal to 1"));

  ParseOutput deployment = Parse(R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: w, image: busybox}]
)");
  EXPECT_FALSE(deployment.pod.job.has_value());
}

TEST(Workloads, WrongApiVersionOrMissingTemplate) {
  ParseOutput out = Parse(
      "apiVersion: extensions/v1beta1\nkind: DaemonSet\n"
      "metadata: {name: agent}\nspec: {}\n");
  EXPECT_THAT(ErrorLines(out),
              ElementsAre("apiVersion: Unsupported value: \"extensions/v1beta1\": supported "
                          "values: \"apps/v1\"",
                          "spec.template: Required value: the pod template podvisor runs",
                          "spec.template.spec: Required value"));
}

}  // namespace
}  // namespace podvisor::pod
