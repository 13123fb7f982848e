// The "process" object: what runs, as whom, with which environment.
#include "oci/process_env.h"
#include "oci/spec_internal.h"
#include "oci/user.h"
#include "pod/resources.h"

namespace podvisor::oci::internal {
namespace {

using nlohmann::json;

UserRequest MakeUserRequest(const SpecContext& ctx) {
  UserRequest req;
  req.image_user = ctx.image.config.user;
  if (const auto& psc = ctx.pod.spec.security_context) {
    req.run_as_user = psc->run_as_user;
    req.run_as_group = psc->run_as_group;
    req.run_as_non_root = psc->run_as_non_root;
    req.supplemental_groups = psc->supplemental_groups;
    // The kubelet gives every container the fsGroup as a supplementary
    // group: the pod's volumes are group-owned by it.
    if (psc->fs_group) req.supplemental_groups.push_back(*psc->fs_group);
    req.strict_supplemental_groups = psc->supplemental_groups_policy == "Strict";
  }
  if (const auto& sc = ctx.container.security_context) {
    if (sc->run_as_user) req.run_as_user = sc->run_as_user;
    if (sc->run_as_group) req.run_as_group = sc->run_as_group;
    if (sc->run_as_non_root) req.run_as_non_root = sc->run_as_non_root;
  }
  return req;
}

}  // namespace

Result<json> BuildProcess(const SpecContext& ctx) {
  EnvList env = BuildContainerEnv(ctx.image.config, ctx.own_env, ctx.hostname);
  auto args = BuildProcessArgs(ctx.image.config, ctx.container, ctx.own_env);
  if (!args) return args.error().Wrap(ctx.field);
  auto cwd = BuildWorkingDir(ctx.image.config, ctx.container);
  if (!cwd) return cwd.error().Wrap(ctx.field);

  auto user = ResolveUserInImage(MakeUserRequest(ctx), ctx.image);
  if (!user) return user.error().Wrap(ctx.field);

  auto caps = BuildCapabilitiesJson(ctx);
  if (!caps) return caps.take_error();
  auto no_new_privs = NoNewPrivileges(ctx);
  if (!no_new_privs) return no_new_privs.take_error();

  if (ctx.input.node_memory_bytes <= 0) {
    return Error(ctx.field + ": the node's memory size is needed for oom_score_adj (S10.3)");
  }
  int oom = pod::ComputeOomScoreAdj(ctx.pod.spec, ctx.container, ctx.input.node_memory_bytes);
  if (ctx.input.oom_score_adj_floor && oom < *ctx.input.oom_score_adj_floor) {
    oom = *ctx.input.oom_score_adj_floor;  // S10.3: the runtime could not set less
  }

  // stdin/tty: the supervisor hands the runtime pipes and owns the output
  // (docs/ARCHITECTURE.md); a terminal or an open stdin cannot be provided.
  if (ctx.container.tty)
    return Error(ctx.field +
                 ".tty: Unsupported value: true: podvisor gives containers pipes, not a terminal");
  if (ctx.container.stdin)
    return Error(ctx.field + ".stdin: Unsupported value: true: podvisor attaches no stdin");

  json process{{"terminal", false},
               {"user", {{"uid", user->uid}, {"gid", user->gid}}},
               {"args", *args},
               {"env", EnvStrings(env)},
               {"cwd", *cwd},
               {"capabilities", std::move(*caps)},
               {"noNewPrivileges", *no_new_privs},
               {"oomScoreAdj", oom}};
  if (!user->additional_gids.empty()) process["user"]["additionalGids"] = user->additional_gids;
  auto apparmor = AppArmorProfileName(ctx);
  if (!apparmor) return apparmor.take_error();
  if (!apparmor->empty()) process["apparmorProfile"] = *apparmor;
  return process;
}

}  // namespace podvisor::oci::internal
