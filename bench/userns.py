"""The user namespace benchmark (issue 33 point 1, SEMANTICS S20): the
start of a pod with `hostUsers: false` against the same pod with
`hostUsers: true`, in the same run, alternating; goal: the user
namespace costs <= 10 ms per pod (no chown of any tree: the block is a
claim, the namespace one unshare in the sandbox holder, the volumes and
the root idmapped mounts). A start is `podvisor run`'s spawn to the
container's first line in the helper's event log (its process running),
as bench.py's start benchmark measures it; each pod is stopped before the
next starts.

Run through bench/run.sh (`--only userns`) or on its own:
  python3 bench/userns.py [--build DIR] [--reps N]
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

from pods import (Env, Supervisor, container, helper_cmd, log, median, pod_manifest, wait_events,
                  write_bundle)


def one_start(env, host_users, results_ms):
    """One pod started and stopped; its start time appended, in ms."""
    d = env.scratch("userns" if not host_users else "hostusers")
    shared = os.path.join(d, "shared")
    manifest = pod_manifest("usernsbench", [], [], [container("app", helper_cmd("app", "sleep", "100000"))],
                            shared, grace=2)
    manifest["spec"]["hostUsers"] = host_users
    sv = Supervisor(env, d, write_bundle(env, d, manifest))
    try:
        events = wait_events(shared, [("app", "Started")])
        results_ms.append(events[("app", "Started")][0] - sv.t0)
        status = sv.status() or {}
        annotation = status.get("metadata", {}).get("annotations", {}).get("podvisor.io/user-namespace")
        if (annotation is None) != host_users:
            raise RuntimeError(f"hostUsers: {host_users} but the annotation is {annotation!r}")
        sv.stop()
    finally:
        sv.kill()


def bench_userns(env, reps, results):
    # The pod's user namespace reaches its instances' roots only through
    # directories others may search (S20.12); mkdtemp's are 0700.
    os.chmod(env.state_root, 0o711)
    own, host = [], []
    # Alternating, so that a slower stretch of a shared machine costs both.
    for _ in range(reps):
        one_start(env, False, own)
        one_start(env, True, host)
    extra = median(own) - median(host)
    results["userns"] = {"podvisor_ms": median(own), "baseline_ms": median(host),
                         "extra_ms": extra, "ratio": median(own) / median(host), "runs": reps,
                         "goal_extra_ms": 10, "within_goal": extra <= 10,
                         "what": "pod start (run -> container running) with hostUsers: false, "
                                 "vs the same pod with hostUsers: true"}


def userns_rows(r, fmt):
    if "userns" not in r:
        return []
    e = r["userns"]
    return [("pod start in its own user namespace", fmt(e["podvisor_ms"], " ms"), fmt(e["baseline_ms"], " ms"),
             fmt(e["ratio"]),
             f"vs hostUsers: true; +{fmt(e['extra_ms'], ' ms')}, goal <= +{e['goal_extra_ms']} ms: "
             f"{'met' if e['within_goal'] else 'MISSED'}; {e['runs']} starts each")]


def main():
    from pods import ROOT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: needs root (runc creates namespaces, mounts and cgroups)")
    work = tempfile.mkdtemp(prefix="podvisor-bench-")
    env = None
    results = {}
    try:
        env = Env(args.build, work, args.build)  # this build's binary, not build-static's
        bench_userns(env, args.reps, results)
    finally:
        if env is not None:
            shutil.rmtree(env.state_root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))
    e = results["userns"]
    log("userns: start {:.1f} ms with hostUsers: false, {:.1f} ms with true: {:+.1f} ms (goal <= +10)".format(
        e["podvisor_ms"], e["baseline_ms"], e["extra_ms"]))


if __name__ == "__main__":
    main()
