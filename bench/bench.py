#!/usr/bin/env python3
"""podvisor's benchmarks (README "Benchmarks"), run by bench/run.sh.

Every number is a median over repeated runs on this machine, and every
comparison is a ratio against a baseline measured in the same run:

  start    a pod of 1 init, 2 sidecars, 3 regular containers, from
           `podvisor run` to all regular containers running, against
           bench/baseline.sh doing the same ordering with runc directly
  stop     the same pod with 3 sidecars, from the stop request to the pod
           fully gone, against baseline.sh; plus each ordering step
           (an exit to the next stop signal)
  kill     `podvisor kill` (control socket, pidfd) against `runc kill`
  memory   the supervisor's RSS and PSS with 10 and 100 containers,
           against one conmon per container
  cpu      the supervisor's CPU with 100 containers probed every second
           (tcpSocket and httpGet), against the same pod without probes
  network  the start pod with `--network cni` (bridge, host-local,
           portmap, firewall on a bridge of the benchmark's own) against
           `--network none`: the cost of the pod network
  scale    200 containers in one pod: start, run, stop; time per container
  podman   `podman kube play` / `down` of the start and stop pods (bench/podman.py)
  static   the static build (scripts/build-static.sh): its size and ldd
           against the default build, the supervisor's RSS and PSS with
           10 and 100 containers, against the goals of 4 and 8 MiB
  client   `podvisor kill`, `status NAME` and `stop --no-wait` (static
           binary) against `runc kill`, medians of hyperfine in one run
  pull     a pod of three images sharing a base pulled from a registry on
           this machine (bench/pull.py): cold start against `podman kube
           play` (goal >= 3x faster), the store's size on disk against
           podman's (goal: no larger), warm start against the same pod from
           a bundle directory (goal: unchanged)
  resize   `resize` on the control socket to the new limits read back from
           the container's cgroup files (S17), against `runc update`;
           goal median <= 20 ms (issue 32, bench/resize.py)
  userns   pod start with hostUsers: false against the same pod with
           hostUsers: true, alternating (S20); goal <= +10 ms per pod
           (issue 33, bench/userns.py)
  upgrade  handover time of `podvisor upgrade` (S15.2): from writing the
           upgrade request to the control socket to the re-executed
           supervisor answering `summary` with one more upgrade; median and
           p99 over 20 (--quick) or 100 upgrades of a pod with a chatty
           container and a readiness probe; goal p99 <= 200 ms (issue 30)

Containers run the static test helper in a busybox rootfs; its
"<RFC3339 ms> NAME VERB" lines in a shared hostPath file give the times at
which containers started and received their stop signal, for podvisor and
the baseline alike. Needs root and runc.

pods.py holds what the benchmarks share (paths, pods, the supervisor, the
baseline's bundles), report.py the table, podman.py the podman runner.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import podman
import pull
import resize
import userns
import static_client
from pods import (CPU_SCENARIOS, HELPER_IN_CONTAINER, INITS, REGULARS, ROOT, RUNC, SIDECARS_START,
                  control_request,
                  SIDECARS_STOP, Env, Supervisor, baseline_bundles, container, helper_cmd, log,
                  median, now_ms, pod_manifest, read_events, run, run_detached, runc_cleanup,
                  wait_events, write_bundle)
from report import table

# ---------------------------------------------------------------- start and stop


def start_stop_pod(shared, sidecars, seccomp="RuntimeDefault"):
    return pod_manifest(
        "bench", [container(n, helper_cmd(n, "exit", "0")) for n in INITS],
        [container(n, helper_cmd(n, "trap-sigterm", "0", "0"), sidecar=True) for n in sidecars],
        [container(n, helper_cmd(n, "trap-sigterm", "0", "0")) for n in REGULARS], shared,
        seccomp=seccomp)


def steps(ev, sidecars):
    """Stop ordering steps in ms: last regular exit -> last sidecar's
    signal, then each sidecar's exit -> the previous sidecar's signal."""
    names = REGULARS + list(reversed(sidecars))
    out = []
    prev = max(ev[(n, "Exiting")][0] for n in REGULARS)
    for n in reversed(sidecars):
        t = ev[(n, "Exiting")][0]
        out.append(t - prev)
        prev = t
    return out


def bench_podvisor_start_stop(env, sidecars, seccomp):
    d = env.scratch("podvisor")
    shared = os.path.join(d, "shared")
    sv = Supervisor(env, d, write_bundle(env, d, start_stop_pod(shared, sidecars, seccomp)))
    try:
        ev = wait_events(shared, [(n, "Started") for n in REGULARS])
        start = max(ev[(n, "Started")][0] for n in REGULARS) - sv.t0
        # A container's process may run its first line well after its
        # `start` returned on a loaded host, and a SIGTERM before its
        # handler is installed is lost (PID 1 of a pid namespace): the
        # stop waits for every container, sidecars included.
        wait_events(shared, [(n, "Started") for n in sidecars])
        sv.wait_running(len(REGULARS))
        stop = sv.stop()
        ev = read_events(shared)
        return start, stop, steps(ev, sidecars)
    finally:
        sv.kill()


def bench_baseline_start_stop(env, sidecars, seccomp):
    d = env.scratch("baseline")
    shared = os.path.join(d, "shared")
    root = env.state_path(d, "runc")
    bundles = baseline_bundles(env, d, start_stop_pod(shared, sidecars, seccomp))
    script = os.path.join(ROOT, "bench", "baseline.sh")
    try:
        t0 = now_ms()
        run([script, "start", root, bundles, " ".join(INITS), " ".join(sidecars), " ".join(REGULARS)])
        ev = wait_events(shared, [(n, "Started") for n in REGULARS])
        start = max(ev[(n, "Started")][0] for n in REGULARS) - t0
        wait_events(shared, [(n, "Started") for n in sidecars])  # as for podvisor, above
        t0 = now_ms()
        run([script, "stop", root, " ".join(sidecars), " ".join(REGULARS)], timeout=120)
        stop = now_ms() - t0
        return start, stop, steps(read_events(shared), sidecars)
    finally:
        runc_cleanup(root)


# The start is measured with the same seccomp setting on both sides, once
# with the RuntimeDefault profile and once Unconfined (issue 17: each
# must be <= 1.0x the baseline); the stop with RuntimeDefault.
START_STOP_KINDS = (("start", SIDECARS_START, "RuntimeDefault"),
                    ("start_unconfined", SIDECARS_START, "Unconfined"),
                    ("stop", SIDECARS_STOP, "RuntimeDefault"))


def bench_start_stop(env, reps, results):
    for kind, sidecars, seccomp in START_STOP_KINDS:
        pv, base, pv_steps, base_steps = [], [], [], []
        for i in range(reps):
            log(f"{kind}: run {i + 1}/{reps}")
            # Alternating which goes first, so that neither always runs
            # on a cache the other warmed.
            order = (bench_podvisor_start_stop, bench_baseline_start_stop)
            for f in (order if i % 2 == 0 else order[::-1]):
                s, t, st = f(env, sidecars, seccomp)
                (pv if f is bench_podvisor_start_stop else base).append(s if kind != "stop" else t)
                (pv_steps if f is bench_podvisor_start_stop else base_steps).extend(st)
        entry = {"podvisor_ms": median(pv), "baseline_ms": median(base),
                 "ratio": median(pv) / median(base), "runs": reps, "seccomp": seccomp,
                 "podvisor_all_ms": pv, "baseline_all_ms": base}
        if kind == "stop":
            entry["step_ms"] = {"podvisor": median(pv_steps), "baseline": median(base_steps),
                                "podvisor_max": max(pv_steps), "baseline_max": max(base_steps)}
        results[kind] = entry


# ---------------------------------------------------------------- network

BENCH_BRIDGE = "pvbench0"

# Removes the benchmark's bridge, and portmap's and firewall's shared
# chains when no pod uses them any more (as tests/e2e/runc_network_test.cc).
NETWORK_CLEANUP = r"""
ip link del pvbench0 2>/dev/null
if ! iptables -t nat -S CNI-HOSTPORT-DNAT 2>/dev/null | grep -q -- '-j CNI-DN-'; then
  iptables -t nat -D PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT 2>/dev/null
  iptables -t nat -D OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT 2>/dev/null
  iptables -t nat -D POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ 2>/dev/null
  for c in CNI-HOSTPORT-DNAT CNI-HOSTPORT-SETMARK CNI-HOSTPORT-MASQ; do
    iptables -t nat -F $c 2>/dev/null; iptables -t nat -X $c 2>/dev/null
  done
fi
if [ "$(iptables -S CNI-FORWARD 2>/dev/null | grep -vc -e '^-N' -e 'CNI-ADMIN')" = 0 ]; then
  iptables -D FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD 2>/dev/null
  iptables -F CNI-FORWARD 2>/dev/null; iptables -X CNI-FORWARD 2>/dev/null
  iptables -F CNI-ADMIN 2>/dev/null; iptables -X CNI-ADMIN 2>/dev/null
fi
true
"""


def bench_network(env, reps, results):
    if not os.path.exists("/usr/lib/cni/bridge"):
        results["network"] = {"skipped": "no CNI plugins (containernetworking-plugins)"}
        return
    conf = env.scratch("cni")
    net_d = os.path.join(conf, "net.d")
    os.makedirs(net_d)
    with open(os.path.join(net_d, "10-bench.conflist"), "w") as f:
        json.dump({"cniVersion": "1.0.0", "name": "pvbench", "plugins": [
            {"type": "bridge", "bridge": BENCH_BRIDGE, "isGateway": True, "ipMasq": True,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.197.0.0/24"}]],
                      "routes": [{"dst": "0.0.0.0/0"}], "dataDir": os.path.join(conf, "ipam")}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
            {"type": "firewall"}]}, f)
    cni = ("--network", "cni", "--cni-conf-dir", net_d, "--cni-bin-dir", "/usr/lib/cni")
    times = {"cni": [], "none": []}
    try:
        for i in range(reps):
            log(f"network: run {i + 1}/{reps}")
            for kind, extra in (("none", ("--network", "none")), ("cni", cni)):
                d = env.scratch("net-" + kind)
                shared = os.path.join(d, "shared")
                sv = Supervisor(env, d, write_bundle(env, d, start_stop_pod(shared, SIDECARS_START)),
                                extra)
                try:
                    ev = wait_events(shared, [(n, "Started") for n in REGULARS])
                    times[kind].append(max(ev[(n, "Started")][0] for n in REGULARS) - sv.t0)
                    sv.wait_running(len(REGULARS))
                    sv.stop()
                finally:
                    sv.kill()
    finally:
        subprocess.run(["sh", "-c", NETWORK_CLEANUP], check=False)
    results["network"] = {"cni_ms": median(times["cni"]), "none_ms": median(times["none"]),
                          "cost_ms": median(times["cni"]) - median(times["none"]), "runs": reps,
                          "cni_all_ms": times["cni"], "none_all_ms": times["none"]}


# ---------------------------------------------------------------- kill

def bench_kill(env, reps, results):
    d = env.scratch("kill")
    shared = os.path.join(d, "shared")
    manifest = pod_manifest("killbench", [], [], [container("app", helper_cmd("app", "sleep", "100000000"))],
                            shared)
    sv = Supervisor(env, d, write_bundle(env, d, manifest))
    base_root = env.state_path(d, "runc")
    bundles = baseline_bundles(env, d, manifest)
    try:
        sv.wait_running(1)
        run_detached([RUNC, "--root", base_root, "run", "-d", "--bundle", os.path.join(bundles, "app"), "app"],
                     os.path.join(d, "runc.err"))
        pv, base = [], []
        for _ in range(reps):
            # SIGWINCH: delivered, and ignored by the container's init.
            t0 = now_ms()
            sv.client("kill", "app", "WINCH")
            pv.append(now_ms() - t0)
            t0 = now_ms()
            run([RUNC, "--root", base_root, "kill", "app", "WINCH"])
            base.append(now_ms() - t0)
        results["kill"] = {"podvisor_ms": median(pv), "baseline_ms": median(base),
                           "ratio": median(pv) / median(base), "runs": reps,
                           "what": "podvisor kill (client, socket, pidfd_send_signal) vs runc kill"}
        sv.stop()
    finally:
        sv.kill()
        runc_cleanup(base_root)


# ---------------------------------------------------------------- upgrade


def percentile(xs, p):
    """Nearest rank: of 20 values p99 is the largest, of 100 the 99th."""
    import math
    xs = sorted(xs)
    return xs[max(0, math.ceil(p / 100.0 * len(xs)) - 1)]


def bench_upgrade(env, n, results):
    d = env.scratch("upgrade")
    shared = os.path.join(d, "shared")
    chat = ["/bin/sh", "-c", 'i=0; while :; do i=$((i+1)); echo "n $i"; sleep 0.005; done']
    probe = {"readinessProbe": {"exec": {"command": [HELPER_IN_CONTAINER, "exit", "0"]},
                                "periodSeconds": 1}}
    manifest = pod_manifest("upbench", [], [], [container("chat", chat, probes=probe),
                                               container("app", helper_cmd("app", "trap-sigterm", "0", "0"))],
                            shared)
    sv = Supervisor(env, d, write_bundle(env, d, manifest))
    sock = os.path.join(sv.state, "upbench", "control.sock")
    times, failures, own = [], [], []
    try:
        sv.wait_running(2)
        pid = sv.proc.pid
        for i in range(n):
            before = control_request(sock, {"op": "summary"})["supervisor"]["upgrades"]
            t0 = time.monotonic()
            reply = control_request(sock, {"op": "upgrade"})
            if not reply or not reply.get("upgrading"):
                failures.append(reply)
                continue
            while True:
                s = control_request(sock, {"op": "summary"})
                if s and s.get("supervisor", {}).get("upgrades") == before + 1 \
                        and s["supervisor"].get("pid") == pid:
                    break
                if time.monotonic() - t0 > 30:
                    raise RuntimeError(f"upgrade {i + 1}: no answer from the new binary in 30 s")
            times.append((time.monotonic() - t0) * 1000.0)
            if (i + 1) % 10 == 0:
                log(f"upgrade: {i + 1}/{n}")
            time.sleep(0.1)  # let the probe and the logs run between upgrades
        status = sv.status()
        restarts = sum(c.get("restartCount", 0) for c in status["status"]["containerStatuses"])
        # The supervisor's own measure (the Upgraded event's "handed over
        # in M ms": from the request to the new binary's first loop turn).
        own = []
        with open(os.path.join(sv.state, "upbench", "events.jsonl")) as f:
            for line in f:
                e = json.loads(line)
                if e.get("reason") == "Upgraded" and "handed over in " in e.get("message", ""):
                    own.append(int(e["message"].rsplit("handed over in ", 1)[1].split()[0]))
        sv.stop()
    finally:
        sv.kill()
    p99 = percentile(times, 99) if times else None
    results["upgrade"] = {"median_ms": median(times) if times else None, "p99_ms": p99,
                          "max_ms": max(times) if times else None, "upgrades": len(times),
                          "refused": len(failures), "restarts": restarts, "goal_p99_ms": 200,
                          "within_goal": p99 is not None and p99 <= 200, "all_ms": times,
                          "supervisor_median_ms": median(own) if own else None,
                          "supervisor_p99_ms": percentile(own, 99) if own else None,
                          "load_before": os.getloadavg()[0]}


# ---------------------------------------------------------------- memory and cpu

def smaps(pid):
    vals = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if parts[0] in ("Rss:", "Pss:"):
                vals[parts[0][:-1].lower()] = int(parts[1])  # KiB
    return vals


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)


def cpu_percent(pid, seconds):
    hz = os.sysconf("SC_CLK_TCK")
    t0, c0 = time.monotonic(), cpu_ticks(pid)
    time.sleep(seconds)
    t1, c1 = time.monotonic(), cpu_ticks(pid)
    return 100.0 * (c1 - c0) / hz / (t1 - t0)



def many_pod(name, n, shared, probes=None):
    regs = []
    for i in range(n):
        port = 20000 + i
        p = None
        if probes:
            # Every second, on the container's own little HTTP server.
            tcp = {"tcpSocket": {"port": port}, "periodSeconds": 1, "timeoutSeconds": 1}
            http = {"httpGet": {"path": "/", "port": port}, "periodSeconds": 1, "timeoutSeconds": 1}
            if probes == "tcpSocket":
                p = {"readinessProbe": tcp}
            elif probes == "httpGet":
                p = {"readinessProbe": http}
            else:
                probe = tcp if i % 2 == 0 else http
                p = {"readinessProbe": probe, "livenessProbe": dict(probe)}
        regs.append(container(f"c{i}", [HELPER_IN_CONTAINER, "serve-http", str(port)], probes=p))
    return pod_manifest(name, [], [], regs, shared, grace=5)


def supervisor_memory(sv):
    m = smaps(sv.proc.pid)
    return {"rss_kib": m["rss"], "pss_kib": m["pss"]}


def conmon_memory(env, n):
    """n containers, each under its own conmon, as podman/CRI-O run them."""
    conmon = shutil.which("conmon")
    if not conmon:
        return None
    d = env.scratch(f"conmon-{n}")
    shared = os.path.join(d, "shared")
    root = env.state_path(d, "runc")
    regs = [container(f"c{i}", [HELPER_IN_CONTAINER, "sleep", "100000000"]) for i in range(n)]
    bundles = baseline_bundles(env, d, pod_manifest("conmon", [], [], regs, shared))
    pids = []
    try:
        for i in range(n):
            cid = f"c{i}"
            pidfile = os.path.join(d, f"{cid}.conmon.pid")
            run_detached([conmon, "--api-version", "1", "-c", cid, "-u", cid, "-n", cid, "-r", RUNC,
                 "-b", os.path.join(bundles, cid), "-p", os.path.join(d, f"{cid}.pid"),
                 "-P", pidfile, "-l", "k8s-file:" + os.path.join(d, f"{cid}.log"),
                 "--exit-dir", d, "--socket-dir-path", d, "--runtime-arg", "--root",
                 "--runtime-arg", root], os.path.join(d, "conmon.err"))
            # Without podman's sync pipe conmon returns before `runc create`
            # has finished; the container's pid file says it has.
            deadline = time.time() + 60
            while not os.path.exists(os.path.join(d, f"{cid}.pid")) and time.time() < deadline:
                time.sleep(0.01)
            run([RUNC, "--root", root, "start", cid])
            with open(pidfile) as f:
                pids.append(int(f.read().strip()))
        time.sleep(1)
        rss = sum(smaps(p)["rss"] for p in pids)
        pss = sum(smaps(p)["pss"] for p in pids)
        return {"rss_kib": rss, "pss_kib": pss, "processes": len(pids)}
    finally:
        runc_cleanup(root)
        for p in pids:
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass


def bench_memory_cpu(env, args, results):
    cpu_window = 10 if args.quick else 30
    mem = {}
    for n in (10, 100):
        d = env.scratch(f"mem-{n}")
        shared = os.path.join(d, "shared")
        sv = Supervisor(env, d, write_bundle(env, d, many_pod(f"mem{n}", n, shared)))
        try:
            log(f"memory: pod of {n} containers")
            sv.wait_running(n)
            time.sleep(1)
            entry = {"podvisor": supervisor_memory(sv)}
            if n == 100:
                log(f"cpu: pod of 100 containers without probes, {cpu_window} s")
                results.setdefault("cpu", {})["baseline_percent"] = cpu_percent(sv.proc.pid, cpu_window)
            sv.stop()
        finally:
            sv.kill()
        if n == 10 or not args.quick:
            log(f"memory: {n} conmons")
            entry["conmon"] = conmon_memory(env, n)
        if entry.get("conmon"):
            entry["pss_ratio"] = entry["podvisor"]["pss_kib"] / entry["conmon"]["pss_kib"]
            entry["rss_ratio"] = entry["podvisor"]["rss_kib"] / entry["conmon"]["rss_kib"]
        elif "conmon" not in entry:
            entry["conmon_skipped"] = "--quick: 100 conmons only in the full run"
        else:
            entry["conmon_skipped"] = "conmon not installed"
        mem[str(n)] = entry
    results["memory"] = mem

    cpu = results["cpu"]
    cpu.update({"window_s": cpu_window, "goal_percent": 2.0, "scenarios": {}})
    for kind, what in CPU_SCENARIOS.items():
        d = env.scratch(f"cpu-{kind}")
        shared = os.path.join(d, "shared")
        sv = Supervisor(env, d, write_bundle(env, d, many_pod(f"cpu-{kind.lower()}", 100, shared, probes=kind)))
        try:
            sv.wait_running(100)
            time.sleep(2)
            log(f"cpu: {what}, {cpu_window} s")
            pct = cpu_percent(sv.proc.pid, cpu_window)
            s = sv.status()
            ready = sum(1 for c in s["status"]["containerStatuses"] if c.get("ready"))
            sv.stop()
        finally:
            sv.kill()
        cpu["scenarios"][kind] = {
            "probed_percent": pct, "ready_containers": ready, "within_goal": pct < 2.0,
            "ratio": pct / cpu["baseline_percent"] if cpu["baseline_percent"] > 0 else None}


# ---------------------------------------------------------------- scale

def bench_scale(env, n, results):
    d = env.scratch(f"scale-{n}")
    shared = os.path.join(d, "shared")
    regs = [container(f"c{i}", helper_cmd(f"c{i}", "trap-sigterm", "0", "0")) for i in range(n)]
    sv = Supervisor(env, d, write_bundle(env, d, pod_manifest("scale", [], [], regs, shared, grace=30)))
    try:
        log(f"scale: {n} containers")
        ev = wait_events(shared, [(f"c{i}", "Started") for i in range(n)], timeout=600)
        start = max(ev[(f"c{i}", "Started")][0] for i in range(n)) - sv.t0
        sv.wait_running(n, timeout=600)
        stop = sv.stop(timeout=600)
        code = sv.proc.returncode
        ev = read_events(shared)
        exited = sum(1 for i in range(n) if (f"c{i}", "Exiting") in ev)
        started_once = sum(1 for i in range(n) if len(ev.get((f"c{i}", "Started"), [])) == 1)
    finally:
        sv.kill()
    left = run([RUNC, "--root", os.path.join(sv.state, "scale", "runtime"), "list", "-q"], check=False)
    results["scale"] = {"containers": n, "start_ms": start, "stop_ms": stop,
                        "start_ms_per_container": start / n, "stop_ms_per_container": stop / n,
                        "all_started_once": started_once == n, "all_exited_on_sigterm": exited == n,
                        "run_exit_code": code, "runtime_state_left": left.stdout.split(),
                        "correct": started_once == n and exited == n and code in (0, 1)
                        and not left.stdout.split()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, shorter windows, 50-container scale")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=None, help="JSON file (default bench/results/<time>.json)")
    ap.add_argument("--static-build", default=os.path.join(ROOT, "build-static"),
                    help="the -Dstatic=true build (scripts/build-static.sh)")
    ap.add_argument("--only", default="",
                    help="comma list: start,network,kill,memory,scale,podman,static,client,upgrade,pull,"
                         "resize,userns")
    ap.add_argument("--pull-sides", default="podvisor,podman",
                    help="the pull case's sides (comma list): podvisor, podman")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: needs root (runc creates namespaces, mounts and cgroups)")
    only = set(filter(None, args.only.split(",")))
    reps = 3 if args.quick else 7
    results = {"machine": {"cpus": os.cpu_count(), "kernel": os.uname().release,
                           "load_at_start": os.getloadavg()[0],
                           "runc": run([RUNC, "--version"]).stdout.splitlines()[0]},
               "quick": args.quick, "time": datetime.datetime.utcnow().isoformat() + "Z"}
    work = tempfile.mkdtemp(prefix="podvisor-bench-")
    env = None
    try:
        env = Env(args.build, work, args.static_build)
        results["machine"]["podvisor"] = os.path.relpath(env.podvisor, ROOT)
        if not only or "start" in only:
            bench_start_stop(env, reps, results)
        if not only or "network" in only:
            bench_network(env, reps, results)
        if not only or "kill" in only:
            bench_kill(env, 10 if args.quick else 30, results)
        if not only or "memory" in only:
            bench_memory_cpu(env, args, results)
        if not only or "scale" in only:
            bench_scale(env, 50 if args.quick else 200, results)
        if not only or "static" in only:
            static_client.bench_static_size(env, results)
            static_client.bench_static_memory(env, results, many_pod, supervisor_memory)
        if not only or "client" in only:
            static_client.bench_client(env, 30 if args.quick else 100, results)
        if not only or "upgrade" in only:
            bench_upgrade(env, 20 if args.quick else 100, results)
        if not only or "resize" in only:
            resize.bench_resize(env, 10 if args.quick else 30, results)
        if not only or "userns" in only:
            userns.bench_userns(env, 5 if args.quick else 15, results)
        if not only or "pull" in only:
            pull.bench_pull(env, 3 if args.quick else 5, results,
                            sides=tuple(filter(None, args.pull_sides.split(","))))
        if not only or "podman" in only:
            # Last, and never the end of the run: a podman failure is a row
            # of the table, not the loss of everything measured before.
            try:
                podman.bench_podman(env, RUNC, reps, results,
                                    lambda shared, sc: start_stop_pod(shared, sc, "RuntimeDefault"),
                                    SIDECARS_START, SIDECARS_STOP)
            except (RuntimeError, subprocess.SubprocessError) as e:
                results["podman"] = {"skipped": f"podman failed: {e}"}
    finally:
        if env is not None:
            shutil.rmtree(env.state_root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    out = args.out or os.path.join(ROOT, "bench", "results",
                                   datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ") + ".json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=2)
    print(table(results))
    m = results["machine"]
    print(f"\npodvisor: {m.get('podvisor')}; {m['cpus']} cpus, load {m['load_at_start']:.2f} at the start")
    print(f"JSON: {out}")


if __name__ == "__main__":
    main()
