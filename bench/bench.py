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

Containers run the static test helper in a busybox rootfs; its
"<RFC3339 ms> NAME VERB" lines in a shared hostPath file give the times at
which containers started and received their stop signal, for podvisor and
the baseline alike. Needs root and runc.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import podman

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNC = shutil.which("runc") or "/usr/sbin/runc"
HELPER_IN_CONTAINER = "/podvisor-test-helper"


def now_ms():
    return time.time() * 1000.0


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def run(argv, check=True, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()}")
    return r


def run_detached(argv, errfile):
    """A command that leaves a process behind (runc run -d, conmon): its
    stdio must not be our pipes, or waiting for their EOF never ends."""
    with open(errfile, "a") as err:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {r.returncode}; see {errfile}")


def median(xs):
    return statistics.median(xs) if xs else None


def _is_tmpfs(path):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == path and fields[fields.index("-") + 1] == "tmpfs":
                return True
    return False


class Env:
    """Paths of one benchmark run: binaries, a busybox image, scratch dirs."""

    def __init__(self, build, work):
        self.podvisor = os.path.join(build, "podvisor")
        self.helper = os.path.join(build, "tests", "podvisor-test-helper")
        self.work = work
        self.image = os.path.join(work, "image")
        run(["bash", os.path.join(ROOT, "scripts", "make-rootfs.sh"), self.image])
        shutil.copy(self.helper, os.path.join(self.image, "rootfs", "podvisor-test-helper"))
        self.counter = 0
        # State directories (podvisor's --state-dir, runc's --root,
        # podman's --runroot) go on tmpfs, where their defaults under /run
        # are on an ordinary host; on these VMs /run is on the root disk,
        # whose inode allocation (ext4, shared with busy builds) otherwise
        # dominates podvisor's own CPU time. Logs and images stay on disk.
        shm = "/dev/shm"
        self.state_root = tempfile.mkdtemp(prefix="podvisor-bench-state-",
                                           dir=shm if _is_tmpfs(shm) else work)

    def state_path(self, d, name):
        """A state directory for scratch dir `d`, on tmpfs."""
        return os.path.join(self.state_root, os.path.basename(d), name)

    def scratch(self, name):
        self.counter += 1
        d = os.path.join(self.work, f"{self.counter:03d}-{name}")
        os.makedirs(d)
        shared = os.path.join(d, "shared")
        os.makedirs(shared)
        os.chmod(shared, 0o777)
        return d


# ---------------------------------------------------------------- pods

def helper_cmd(name, *args):
    return [HELPER_IN_CONTAINER, "--log", name, "--log-file", "/shared/events.log", *args]


def container(name, cmd, sidecar=False, probes=None):
    c = {"name": name, "image": "bb", "command": cmd,
         "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]}
    if sidecar:
        c["restartPolicy"] = "Always"
    if probes:
        c.update(probes)
    return c


def pod_manifest(name, inits, sidecars, regulars, shared, grace=10, seccomp=None):
    """inits/sidecars/regulars: lists of container dicts; seccomp: the
    pod's seccompProfile type (RuntimeDefault, Unconfined), None to leave
    it out."""
    security = {"seccompProfile": {"type": seccomp}} if seccomp else {}
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {
            "securityContext": security,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": grace,
            "volumes": [{"name": "shared", "hostPath": {"path": shared, "type": "Directory"}}],
            "initContainers": inits + sidecars,
            "containers": regulars,
        },
    }


def write_bundle(env, d, manifest):
    bundle = os.path.join(d, "bundle")
    os.makedirs(os.path.join(bundle, "images"))
    # A copy, not a symlink: an image resolving outside the bundle is
    # rejected (docs/INTERFACE.md "Bundle layout").
    shutil.copytree(env.image, os.path.join(bundle, "images", "bb"), symlinks=True)
    with open(os.path.join(bundle, "pod.json"), "w") as f:
        json.dump(manifest, f)
    return bundle


def read_events(shared):
    """{(name, verb): [ms, ...]} from the helper's event log."""
    out = {}
    try:
        with open(os.path.join(shared, "events.log")) as f:
            lines = f.readlines()
    except FileNotFoundError:
        return out
    for line in lines:
        parts = line.split()
        if len(parts) != 3:
            continue
        t = datetime.datetime.strptime(parts[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp() * 1000.0
        out.setdefault((parts[1], parts[2]), []).append(t)
    return out


def wait_events(shared, keys, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        ev = read_events(shared)
        if all(k in ev for k in keys):
            return ev
        time.sleep(0.02)
    missing = [k for k in keys if k not in read_events(shared)]
    raise RuntimeError(f"timed out waiting for helper events {missing[:5]}")


class Supervisor:
    """One `podvisor run` of a bundle, with its own state and log dirs."""

    def __init__(self, env, d, bundle, extra=("--network", "none")):
        self.env, self.d = env, d
        self.state = env.state_path(d, "state")
        self.logs = os.path.join(d, "logs")
        self.stderr = open(os.path.join(d, "run.stderr"), "w")
        self.t0 = now_ms()
        self.proc = subprocess.Popen(
            [env.podvisor, "run", "--runtime", RUNC, "--state-dir", self.state, "--log-dir", self.logs,
             "--cgroup-parent", "/podvisor-bench", *extra, bundle],
            stdin=subprocess.DEVNULL, stdout=self.stderr, stderr=self.stderr)

    def client(self, *args):
        return run([self.env.podvisor, *args, "--state-dir", self.state])

    def status(self):
        r = run([self.env.podvisor, "status", "-o", "json", "--state-dir", self.state], check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def wait_running(self, n, timeout=300):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"podvisor run ended early; see {self.stderr.name}")
            s = self.status()
            if s:
                cs = s.get("status", {}).get("containerStatuses", [])
                if sum(1 for c in cs if "running" in c.get("state", {})) >= n:
                    return s
            time.sleep(0.1)
        raise RuntimeError(f"fewer than {n} containers running after {timeout} s")

    def stop(self, timeout=300):
        """Stop request to process end, in ms."""
        t0 = now_ms()
        run([self.env.podvisor, "stop", "--no-wait", "--state-dir", self.state])
        self.proc.wait(timeout)
        took = now_ms() - t0
        self.stderr.close()
        return took

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(120)
        self.stderr.close()


# ---------------------------------------------------------------- baseline bundles

def baseline_bundles(env, d, manifest):
    """runc bundles for the baseline: the config podvisor itself generates
    for each container (`podvisor oci-config`: same process, capabilities,
    seccomp profile, masked paths, mounts), minus what only a pod has: the
    rootfs is the image's, read-only, instead of a per-instance overlay,
    each container gets fresh namespaces instead of joining the pod's, and
    the pod's /etc files, /dev/shm and termination-log mounts are left out."""
    src = os.path.join(d, "baseline-src")
    os.makedirs(src)
    bundle = write_bundle(env, src, manifest)
    fake_state = os.path.join(d, "no-state")
    bundles = os.path.join(d, "bundles")
    spec = manifest["spec"]
    names = [c["name"] for c in spec.get("initContainers", []) + spec["containers"]]
    template = None
    for i, name in enumerate(names):
        if template is None or i < 8:
            cfg = json.loads(run([env.podvisor, "oci-config", "--state-dir", fake_state, bundle, name]).stdout)
            template = cfg
        else:  # identical containers but for their command: reuse the last config
            cfg = json.loads(json.dumps(template))
            c = next(c for c in spec.get("initContainers", []) + spec["containers"] if c["name"] == name)
            cfg["process"]["args"] = c["command"]
        cfg["root"] = {"path": os.path.join(env.image, "rootfs"), "readonly": True}
        cfg["mounts"] = [m for m in cfg["mounts"] if not m.get("source", "").startswith(fake_state)]
        cfg["linux"]["namespaces"] = [{"type": ns["type"]} for ns in cfg["linux"]["namespaces"]]
        # One level, as runc's default /<id> (removed by delete), but named
        # for this run: two benchmarks at once must not share cgroups.
        cfg["linux"]["cgroupsPath"] = f"/podvisor-bench-{os.getpid()}-{name}"
        os.makedirs(os.path.join(bundles, name))
        with open(os.path.join(bundles, name, "config.json"), "w") as f:
            json.dump(cfg, f)
    return bundles


def runc_cleanup(root):
    if not os.path.isdir(root):
        return
    r = run([RUNC, "--root", root, "list", "-q"], check=False)
    for cid in r.stdout.split():
        run([RUNC, "--root", root, "delete", "--force", cid], check=False)


# ---------------------------------------------------------------- start and stop

INITS = ["init"]
SIDECARS_START = ["side-1", "side-2"]
SIDECARS_STOP = ["side-1", "side-2", "side-3"]
REGULARS = ["app-1", "app-2", "app-3"]


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
        t0 = now_ms()
        run([script, "stop", root, " ".join(sidecars), " ".join(REGULARS)])
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


# The CPU scenarios: the goal is about 100 containers with a 1 s
# tcpSocket or httpGet probe; "mixed" doubles the rate with a readiness and
# a liveness probe per container, half of them of each kind.
CPU_SCENARIOS = {
    "tcpSocket": "100 containers, a 1 s tcpSocket probe each",
    "httpGet": "100 containers, a 1 s httpGet probe each",
    "mixed": "100 containers, 200 probes/s (readiness+liveness, tcp/http)",
}


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


# ---------------------------------------------------------------- report

def fmt(v, unit=""):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.1f}{unit}" if abs(v) >= 10 else f"{v:.2f}{unit}"
    return f"{v}{unit}"


def table(r):
    rows = [("benchmark", "podvisor", "baseline", "ratio", "notes")]
    for kind, what in (("start", "RuntimeDefault"), ("start_unconfined", "Unconfined")):
        if kind in r:
            e = r[kind]
            rows.append((f"pod start (1 init, 2 sidecars, 3 regular), seccomp {what}",
                         fmt(e["podvisor_ms"], " ms"), fmt(e["baseline_ms"], " ms"), fmt(e["ratio"]),
                         f"baseline.sh with runc, same seccomp; goal <= 1.0: "
                         f"{'met' if e['ratio'] <= 1.0 else 'MISSED'}; {e['runs']} runs"))
    if "stop" in r:
        e = r["stop"]
        rows.append(("pod stop (3 sidecars, reverse order)", fmt(e["podvisor_ms"], " ms"),
                     fmt(e["baseline_ms"], " ms"), fmt(e["ratio"]), f"{e['runs']} runs"))
        s = e["step_ms"]
        rows.append(("  one ordering step (exit -> next signal)", fmt(s["podvisor"], " ms"),
                     fmt(s["baseline"], " ms"), fmt(s["podvisor"] / s["baseline"] if s["baseline"] else None),
                     f"max {fmt(s['podvisor_max'])} / {fmt(s['baseline_max'])} ms"))
    if "network" in r:
        e = r["network"]
        if "skipped" in e:
            rows.append(("pod start, --network cni vs none", "-", "-", "-", e["skipped"]))
        else:
            rows.append(("pod start, --network cni vs none", fmt(e["cni_ms"], " ms"),
                         fmt(e["none_ms"], " ms"), fmt(e["cni_ms"] / e["none_ms"]),
                         f"the network costs {fmt(e['cost_ms'], ' ms')}; {e['runs']} runs"))
    if "kill" in r:
        e = r["kill"]
        rows.append(("signal delivery", fmt(e["podvisor_ms"], " ms"), fmt(e["baseline_ms"], " ms"),
                     fmt(e["ratio"]), f"podvisor kill vs runc kill; {e['runs']} runs"))
    for n, e in sorted(r.get("memory", {}).items(), key=lambda kv: int(kv[0])):
        c = e.get("conmon")
        rows.append((f"memory, {n} containers (PSS)", fmt(e["podvisor"]["pss_kib"] / 1024, " MiB"),
                     fmt(c["pss_kib"] / 1024, " MiB") if c else "-", fmt(e.get("pss_ratio")),
                     f"vs {n} conmons" if c else e.get("conmon_skipped", "")))
        rows.append((f"memory, {n} containers (RSS)", fmt(e["podvisor"]["rss_kib"] / 1024, " MiB"),
                     fmt(c["rss_kib"] / 1024, " MiB") if c else "-", fmt(e.get("rss_ratio")), ""))
    if "cpu" in r:
        e = r["cpu"]
        for kind, s in e["scenarios"].items():
            goal = "" if kind == "mixed" else f"; goal < 2 %: {'met' if s['within_goal'] else 'MISSED'}"
            rows.append((f"CPU, {CPU_SCENARIOS[kind]}", fmt(s["probed_percent"], " %"),
                         fmt(e["baseline_percent"], " %"), fmt(s["ratio"]),
                         f"of one core, {s['ready_containers']} ready{goal}"))
    if "scale" in r:
        e = r["scale"]
        rows.append((f"scale: {e['containers']} containers, start", fmt(e["start_ms_per_container"], " ms/ctr"),
                     "-", "-", f"total {fmt(e['start_ms'] / 1000, ' s')}; correct: {e['correct']}"))
        rows.append((f"scale: {e['containers']} containers, stop", fmt(e["stop_ms_per_container"], " ms/ctr"),
                     "-", "-", f"total {fmt(e['stop_ms'] / 1000, ' s')}"))
    p = r.get("podman", {})
    if "skipped" in p or not p:
        rows.append(("podman kube play / down", "-", "-", "-", p.get("skipped", "not run")))
    else:
        # The ratio here is podman's time over podvisor's: how many times
        # faster podvisor is (issue 17's goal for the start: >= 5).
        if "start_ratio" in p:
            rows.append(("pod start vs `podman kube play`", fmt(r["start"]["podvisor_ms"], " ms"),
                         fmt(p["start_ms"], " ms"), fmt(p["start_ratio"]) + "x faster",
                         f"podman {p['version'].split()[-1]}, runc, cgroupfs; helpers as plain "
                         f"containers (podman has no sidecars); goal >= 5: "
                         f"{'met' if p['start_ratio'] >= 5 else 'MISSED'}; {p['runs']} runs"))
        if "stop_ratio" in p:
            rows.append(("pod stop vs `podman kube down`", fmt(r["stop"]["podvisor_ms"], " ms"),
                         fmt(p["stop_ms"], " ms"), fmt(p["stop_ratio"]) + "x faster",
                         f"containers that logged their SIGTERM under podman, per run: "
                         f"{p['stop_containers_exited_on_sigterm']} of {len(REGULARS + SIDECARS_STOP)} "
                         f"(podvisor: all, in order)"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for k, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, shorter windows, 50-container scale")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=None, help="JSON file (default bench/results/<time>.json)")
    ap.add_argument("--only", default="", help="comma list: start,network,kill,memory,scale,podman")
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
        env = Env(args.build, work)
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
        if not only or "podman" in only:
            podman.bench_podman(env, RUNC, reps, results,
                                lambda shared, sc: start_stop_pod(shared, sc, "RuntimeDefault"),
                                lambda shared, sc: start_stop_pod(shared, sc, "RuntimeDefault"),
                                SIDECARS_START, SIDECARS_STOP, REGULARS, wait_events, read_events,
                                log, now_ms, median)
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
    print(f"\nJSON: {out}")


if __name__ == "__main__":
    main()
