"""What bench.py's benchmarks share: the run's paths (Env), the test
helper's pods and their event log, `podvisor run` as a Supervisor, and the
runc bundles of the baseline (bench/baseline.sh)."""
import datetime
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

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

    def __init__(self, build, work, static_build=None):
        self.default_podvisor = os.path.join(build, "podvisor")
        # The -Dstatic=true build (scripts/build-static.sh): what an
        # embedder ships, and optimised (-Os, LTO) where the default build
        # is a debug build (-O0). Every benchmark runs it when it is there;
        # the static benchmark compares it with the default build.
        self.static_podvisor = os.path.join(static_build or build + "-static", "podvisor")
        self.podvisor = (self.static_podvisor if os.access(self.static_podvisor, os.X_OK)
                         else self.default_podvisor)
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


def wait_exit(proc, timeout):
    """Waits for `proc` to end, noticing the end at once: Popen.wait with a
    timeout polls with growing sleeps (up to 50 ms), which rounded the stop
    times of earlier rounds up to the next poll (31.5 or 63.5 ms after the
    call). A pidfd becomes readable when the process ends."""
    fd = os.pidfd_open(proc.pid)
    try:
        if not select.select([fd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    proc.wait()


class Supervisor:
    """One `podvisor run` of a bundle, with its own state and log dirs."""

    def __init__(self, env, d, bundle, extra=("--network", "none"), binary=None, state=None):
        """state: the state directory (default: one on tmpfs for `d`)."""
        self.env, self.d = env, d
        self.binary = binary or env.podvisor
        self.state = state or env.state_path(d, "state")
        self.logs = os.path.join(d, "logs")
        self.stderr = open(os.path.join(d, "run.stderr"), "w")
        self.t0 = now_ms()
        self.proc = subprocess.Popen(
            [self.binary, "run", "--runtime", RUNC, "--state-dir", self.state, "--log-dir", self.logs,
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
        wait_exit(self.proc, timeout)
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


def control_request(sock_path, request, timeout=30):
    """One request on the pod's control socket: the reply, or None when the
    connection was refused or closed without one (the supervisor is
    re-executing)."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock_path)
        s.sendall(json.dumps(request).encode() + b"\n")
        s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return json.loads(data) if data else None
    except (OSError, ValueError):
        return None
    finally:
        s.close()


def runc_cleanup(root):
    if not os.path.isdir(root):
        return
    r = run([RUNC, "--root", root, "list", "-q"], check=False)
    for cid in r.stdout.split():
        run([RUNC, "--root", root, "delete", "--force", cid], check=False)


# The start and stop pods: 1 init, 2 (start) or 3 (stop) sidecars, 3
# regular containers.
INITS = ["init"]
SIDECARS_START = ["side-1", "side-2"]
SIDECARS_STOP = ["side-1", "side-2", "side-3"]
REGULARS = ["app-1", "app-2", "app-3"]

# The CPU scenarios: the goal is about 100 containers with a 1 s
# tcpSocket or httpGet probe; "mixed" doubles the rate with a readiness and
# a liveness probe per container, half of them of each kind.
CPU_SCENARIOS = {
    "tcpSocket": "100 containers, a 1 s tcpSocket probe each",
    "httpGet": "100 containers, a 1 s httpGet probe each",
    "mixed": "100 containers, 200 probes/s (readiness+liveness, tcp/http)",
}
