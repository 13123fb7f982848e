"""The resize benchmark (issue 32 point 6, SEMANTICS S17): from writing a
`resize` request to the pod's control socket to the new memory and cpu
limits read back from the container's cgroup files (v1 memory and cpu
hierarchies on a hybrid host, the cgroup2 directory on a unified one),
alternating between two sizes; goal: median <= 20 ms. The baseline is the
kubelet's road to the same change, `runc update` (CRI
UpdateContainerResources) of a runc container of the same config, timed
from its start to the same files reading the new values.

Run through bench/run.sh (`--only resize`) or on its own:
  python3 bench/resize.py [--build DIR] [--reps N]
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from pods import (RUNC, Env, Supervisor, baseline_bundles, container, control_request, helper_cmd, log, median,
                  pod_manifest, run, run_detached, runc_cleanup, write_bundle)

MI = 1024 * 1024
SIZES = [(64 * MI, "64Mi", 20000, "200m"), (96 * MI, "96Mi", 30000, "300m")]


def cgroup_files(cgroups_path):
    """(memory limit file, cpu quota file) of a container's cgroup."""
    rel = cgroups_path.lstrip("/")
    v1 = "/sys/fs/cgroup/memory/memory.limit_in_bytes"
    if os.path.exists(v1):
        return (os.path.join("/sys/fs/cgroup/memory", rel, "memory.limit_in_bytes"),
                os.path.join("/sys/fs/cgroup/cpu", rel, "cpu.cfs_quota_us"))
    return (os.path.join("/sys/fs/cgroup", rel, "memory.max"),
            os.path.join("/sys/fs/cgroup", rel, "cpu.max"))


def read_first(path):
    with open(path) as f:
        return f.read().split()[0]


def wait_values(files, memory, quota, timeout=5.0):
    """Until the files hold the values; the time it took beyond the call."""
    deadline = time.monotonic() + timeout
    while True:
        if read_first(files[0]) == str(memory) and read_first(files[1]) == str(quota):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{files} never read {memory} {quota}")


def find_cgroup(parent, runtime_id):
    """The container's cgroupsPath, found by its runtime id under `parent`."""
    v1 = os.path.exists("/sys/fs/cgroup/memory/memory.limit_in_bytes")
    mount = "/sys/fs/cgroup/memory" if v1 else "/sys/fs/cgroup"
    for root, dirs, _ in os.walk(os.path.join(mount, parent.lstrip("/"))):
        if runtime_id in dirs:
            return "/" + os.path.relpath(os.path.join(root, runtime_id), mount)
    raise RuntimeError(f"no cgroup {runtime_id} under {parent}")


def manifest_of(shared):
    c = container("app", helper_cmd("app", "sleep", "100000000"))
    c["resources"] = {"requests": {"cpu": "100m", "memory": "32Mi"},
                      "limits": {"cpu": SIZES[0][3], "memory": SIZES[0][1]}}
    return pod_manifest("resizebench", [], [], [c], shared)


def bench_resize(env, reps, results):
    d = env.scratch("resize")
    shared = os.path.join(d, "shared")
    manifest = manifest_of(shared)
    sv = Supervisor(env, d, write_bundle(env, d, manifest))
    base_root = env.state_path(d, "runc")
    bundles = baseline_bundles(env, d, manifest)
    try:
        status = sv.wait_running(1)
        cid = status["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
        files = cgroup_files(find_cgroup("/podvisor-bench", cid))
        sock = os.path.join(sv.state, "resizebench", "control.sock")
        run_detached([RUNC, "--root", base_root, "run", "-d", "--bundle", os.path.join(bundles, "app"), "app"],
                     os.path.join(d, "runc.err"))
        with open(os.path.join(bundles, "app", "config.json")) as f:
            base_files = cgroup_files(json.load(f)["linux"]["cgroupsPath"])
        wait_values(base_files, SIZES[0][0], SIZES[0][2])
        pv, base, refused = [], [], []
        for i in range(reps):
            memory, mem_text, quota, cpu_text = SIZES[(i + 1) % 2]
            request = {"op": "resize", "containers": [
                {"name": "app", "resources": {"limits": {"memory": mem_text, "cpu": cpu_text}}}]}
            t0 = time.monotonic()
            reply = control_request(sock, request)
            if reply is None:
                raise RuntimeError("no reply to resize on " + sock)
            wait_values(files, memory, quota)
            pv.append((time.monotonic() - t0) * 1000.0)
            if "error" in reply:
                refused.append(reply["error"])
            t0 = time.monotonic()
            run([RUNC, "--root", base_root, "update", "--memory", str(memory), "--memory-swap", str(memory),
                 "--cpu-quota", str(quota), "app"])
            wait_values(base_files, memory, quota)
            base.append((time.monotonic() - t0) * 1000.0)
        status = sv.status()
        restarts = status["status"]["containerStatuses"][0].get("restartCount", 0)
        results["resize"] = {"podvisor_ms": median(pv), "baseline_ms": median(base),
                             "ratio": median(pv) / median(base), "max_ms": max(pv), "runs": reps,
                             "refused": len(refused), "restarts": restarts, "goal_ms": 20,
                             "within_goal": median(pv) <= 20,
                             "what": "resize request -> new limits in the container's cgroup files, "
                                     "vs runc update (the kubelet's road)"}
        sv.stop()
    finally:
        sv.kill()
        runc_cleanup(base_root)


def resize_rows(r, fmt):
    if "resize" not in r:
        return []
    e = r["resize"]
    return [("resize in place (request -> limits in the cgroup)", fmt(e["podvisor_ms"], " ms"),
             fmt(e["baseline_ms"], " ms"), fmt(e["ratio"]),
             f"vs runc update; goal median <= {e['goal_ms']} ms: "
             f"{'met' if e['within_goal'] else 'MISSED'}; max {fmt(e['max_ms'], ' ms')}; "
             f"{e['runs']} resizes, {e['refused']} refused, {e['restarts']} restarts")]


def main():
    from pods import ROOT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: needs root (runc creates namespaces, mounts and cgroups)")
    work = tempfile.mkdtemp(prefix="podvisor-bench-")
    env = None
    results = {}
    try:
        env = Env(args.build, work, args.build)  # this build's binary, not build-static's
        bench_resize(env, args.reps, results)
    finally:
        if env is not None:
            shutil.rmtree(env.state_root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))
    log("resize: median {:.2f} ms (goal <= 20), runc update {:.2f} ms".format(
        results["resize"]["podvisor_ms"], results["resize"]["baseline_ms"]))


if __name__ == "__main__":
    main()
