"""The static build's benchmarks (issue 17, points 1-3): the binary's size
and linkage, the supervisor's memory with it, and the client commands'
latency against `runc kill` in the same hyperfine run."""
import json
import os
import shlex
import shutil
import subprocess
import time

from pods import (RUNC, Supervisor, baseline_bundles, container, helper_cmd, log, pod_manifest, run,
                  run_detached, runc_cleanup, write_bundle)
from report import fmt


# ---------------------------------------------------------------- static build (issue 17, points 1-3)
#
# The static binary (scripts/build-static.sh): its size and linkage, the
# supervisor's memory with it, and how long the client commands take,
# each against its goal and, where there is one, a same-run baseline.

STATIC_SIZE_GOAL = 8_000_000  # 8 MB, as scripts/build-static.sh checks
STATIC_RSS_GOAL_KIB = {10: 4 * 1024, 100: 8 * 1024}
CLIENT_GOAL_MS = 1.0
CLIENT_KILL_RATIO_GOAL = 0.2


def shared_libraries(binary):
    """The libraries ldd lists (None: not a dynamic executable)."""
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return [l.split()[0] for l in r.stdout.splitlines() if l.strip() and "vdso" not in l]


def bench_static_size(env, results):
    libs = shared_libraries(env.static_podvisor)
    size = os.path.getsize(env.static_podvisor)
    dyn_libs = shared_libraries(env.default_podvisor)
    results["static"] = {
        "binary": env.static_podvisor, "size_bytes": size, "goal_bytes": STATIC_SIZE_GOAL,
        "not_dynamic": libs is None, "libraries": libs or [],
        "default_build_size_bytes": os.path.getsize(env.default_podvisor),
        "default_build_libraries": len(dyn_libs or []),
        "within_goal": libs is None and size <= STATIC_SIZE_GOAL}


def bench_static_memory(env, results, many_pod, supervisor_memory):
    """many_pod and supervisor_memory: bench.py's, as for the dynamic build."""
    mem = {}
    for n in (10, 100):
        d = env.scratch(f"static-mem-{n}")
        shared = os.path.join(d, "shared")
        sv = Supervisor(env, d, write_bundle(env, d, many_pod(f"smem{n}", n, shared)),
                        binary=env.static_podvisor)
        try:
            log(f"static: memory of a pod of {n} containers")
            sv.wait_running(n)
            time.sleep(1)
            m = supervisor_memory(sv)
            sv.stop()
        finally:
            sv.kill()
        m["goal_rss_kib"] = STATIC_RSS_GOAL_KIB[n]
        m["within_goal"] = m["rss_kib"] <= STATIC_RSS_GOAL_KIB[n]
        mem[str(n)] = m
    results.setdefault("static", {})["memory"] = mem


def hyperfine_medians(commands, runs, out):
    """Median wall time in ms of each command (argv lists), interleaved
    by hyperfine in one run; -N: no shell in between."""
    argv = ["hyperfine", "-N", "--style", "none", "--warmup", "3", "--runs", str(runs),
            "--export-json", out] + [" ".join(shlex.quote(a) for a in c) for c in commands]
    run(argv)
    with open(out) as f:
        return [r["median"] * 1000 for r in json.load(f)["results"]]


def bench_client(env, reps, results):
    """podvisor kill/status/stop (static binary) against runc kill, in the
    same run: process start, one control-socket request, exit."""
    if not shutil.which("hyperfine"):
        results["client"] = {"skipped": "hyperfine is not installed"}
        return
    d = env.scratch("client")
    shared = os.path.join(d, "shared")
    # The container's init is PID 1 of its namespace: SIGTERM without a
    # handler does nothing, so the pod keeps terminating through the
    # repeated stop requests until the last one shortens the grace to 0.
    manifest = pod_manifest("clientbench", [], [], [container("app", helper_cmd("app", "sleep", "100000000"))],
                            shared, grace=300)
    sv = Supervisor(env, d, write_bundle(env, d, manifest), binary=env.static_podvisor)
    base_root = os.path.join(d, "runc")
    bundles = baseline_bundles(env, d, manifest)
    pv = env.static_podvisor
    try:
        sv.wait_running(1)
        run_detached([RUNC, "--root", base_root, "run", "-d", "--bundle", os.path.join(bundles, "app"), "app"],
                     os.path.join(d, "runc.err"))
        log("client: podvisor kill/status vs runc kill")
        # /bin/true in the same run: the floor of any command on this
        # machine (fork, exec, exit), which a client cannot go below.
        kill, status, runc_kill, true_ms = hyperfine_medians(
            [[pv, "kill", "clientbench", "app", "WINCH", "--state-dir", sv.state],
             [pv, "status", "clientbench", "--state-dir", sv.state],
             [RUNC, "--root", base_root, "kill", "app", "WINCH"],
             ["/bin/true"]], reps, os.path.join(d, "hf1.json"))
        log("client: podvisor stop --no-wait")
        (stop,) = hyperfine_medians(
            [[pv, "stop", "clientbench", "--no-wait", "--state-dir", sv.state]], reps,
            os.path.join(d, "hf2.json"))
        run([pv, "stop", "clientbench", "--grace", "0", "--no-wait", "--state-dir", sv.state])
        sv.proc.wait(120)
        results["client"] = {
            "kill_ms": kill, "status_ms": status, "stop_ms": stop, "runc_kill_ms": runc_kill,
            "true_ms": true_ms,
            "kill_ratio": kill / runc_kill, "runs": reps, "goal_ms": CLIENT_GOAL_MS,
            "goal_kill_ratio": CLIENT_KILL_RATIO_GOAL,
            "within_goal": max(kill, status, stop) <= CLIENT_GOAL_MS
            and kill / runc_kill <= CLIENT_KILL_RATIO_GOAL}
    finally:
        sv.kill()
        runc_cleanup(base_root)


def static_rows(r):
    """The table's rows of the static build (issue 17)."""
    rows = []
    s = r.get("static", {})
    if "size_bytes" in s:
        linkage = "not a dynamic executable" if s["not_dynamic"] else f"{len(s['libraries'])} libraries"
        rows.append(("static binary size", fmt(s["size_bytes"] / 2**20, " MiB"),
                     fmt(s["default_build_size_bytes"] / 2**20, " MiB"),
                     fmt(s["size_bytes"] / s["default_build_size_bytes"]),
                     f"{s['size_bytes']:,} bytes; ldd: {linkage}; default build: "
                     f"{s['default_build_libraries']} libraries; goal <= 8,000,000 bytes: "
                     f"{'met' if s['size_bytes'] <= STATIC_SIZE_GOAL else 'MISSED'}"))
    for n, m in sorted(s.get("memory", {}).items(), key=lambda kv: int(kv[0])):
        rows.append((f"static, {n} containers, RSS / PSS", fmt(m["rss_kib"] / 1024, " MiB"),
                     fmt(m["pss_kib"] / 1024, " MiB"), "-",
                     f"RSS goal <= {m['goal_rss_kib'] // 1024} MiB: {'met' if m['within_goal'] else 'MISSED'}"))
    c = r.get("client", {})
    if "skipped" in c:
        rows.append(("client commands", "-", "-", "-", c["skipped"]))
    elif c:
        rows.append(("podvisor kill (client)", fmt(c["kill_ms"], " ms"), fmt(c["runc_kill_ms"], " ms"),
                     fmt(c["kill_ratio"]), f"vs runc kill; goal <= 1 ms and <= 0.2x; {c['runs']} runs"))
        rows.append(("podvisor status NAME (client)", fmt(c["status_ms"], " ms"), fmt(c["runc_kill_ms"], " ms"),
                     fmt(c["status_ms"] / c["runc_kill_ms"]), "goal <= 1 ms"))
        rows.append(("podvisor stop --no-wait (client)", fmt(c["stop_ms"], " ms"), fmt(c["runc_kill_ms"], " ms"),
                     fmt(c["stop_ms"] / c["runc_kill_ms"]), "goal <= 1 ms"))
        if "true_ms" in c:
            rows.append(("  /bin/true, the same run", fmt(c["true_ms"], " ms"), "-", "-",
                         "any command's floor here: fork, exec, exit"))
    return rows
