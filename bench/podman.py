"""The podman runner of bench.py: `podman kube play` and `podman kube down`
of the benchmark's start and stop pods, next to podvisor in the same run.

podman is Debian's (4.3), installed by bench/install-podman.sh (a bench-only
package, with catatonit for its infra container), and configured only
under the run's own temporary directory: CONTAINERS_CONF and
CONTAINERS_STORAGE_CONF point at files written there, and --root,
--runroot and --tmpdir keep images, containers and runtime state there
too, so the host's /etc/containers, /var/lib/containers and network
configuration are never read or written. It runs with `--runtime runc
--cgroup-manager cgroupfs` (the host's runc, as podvisor's; these hosts
have no systemd cgroup manager to speak of) and `--network none`, like
podvisor's benchmark pods.

podman has no sidecars (restartPolicy: Always on an init container):
the two or three helpers run as plain containers listed before the
regular ones, which the table says.
"""
import json
import os
import resource
import shutil
import subprocess
import tempfile

from pods import REGULARS, log, median, now_ms, read_events, wait_events

PODMAN = shutil.which("podman")
IMAGE = "localhost/podvisor-bench-bb:latest"
# podman's SHM lock file, which it creates at this fixed place whatever its
# --root and --runroot.
LOCK_FILE = "/dev/shm/libpod_lock"


def missing():
    """Why podman cannot run here, or None."""
    if not PODMAN:
        return "podman is not installed (bench/install-podman.sh)"
    if not shutil.which("catatonit"):
        return "catatonit is not installed (podman's infra container; bench/install-podman.sh)"
    return None


# The RLIMIT_NPROC hard limit runc's init inherits under podman here
# (`ulimit -Hu` in a podman container with no default_ulimits): asking
# for more fails with "error setting rlimit type 6: operation not
# permitted", as raising a hard limit needs CAP_SYS_RESOURCE.
PODMAN_NPROC_CEILING = 32768


def ulimits():
    """containers.conf's default_ulimits. podman's own defaults for root
    (nofile 1048576, nproc 4194304) are above these machines' hard limits
    (20000, 96365), so runc's setrlimit fails ("error setting rlimit type
    7: operation not permitted"); the containers get the benchmark's own
    soft limits instead, which need no privilege and are what podvisor's
    containers inherit, nproc capped at what podman passes down."""
    out = []
    for name, which, cap in (("nofile", resource.RLIMIT_NOFILE, None),
                             ("nproc", resource.RLIMIT_NPROC, PODMAN_NPROC_CEILING)):
        soft, hard = resource.getrlimit(which)
        value = soft if soft != resource.RLIM_INFINITY else hard
        if value == resource.RLIM_INFINITY:
            value = cap
        if value is None:
            continue
        if cap is not None:
            value = min(value, cap)
        out.append(f'"{name}={value}:{value}"')
    return "[" + ", ".join(out) + "]"


class Podman:
    """podman with every path under `work`."""

    def __init__(self, work, state, runc):
        """work: images and containers (podman's /var/lib/containers);
        state: its runroot and tmpdir (podman's /run), on tmpfs like
        podvisor's state (bench.py Env)."""
        self.work, self.state = work, state
        self.lock_existed = os.path.exists(LOCK_FILE)
        for d in (f"{work}/root", f"{work}/net", f"{state}/runroot", f"{state}/tmp"):
            os.makedirs(d, exist_ok=True)
        conf = os.path.join(work, "containers.conf")
        with open(conf, "w") as f:
            f.write(f"""[containers]
default_ulimits = {ulimits()}
log_driver = "k8s-file"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "{work}/events.log"
runtime = "runc"
tmp_dir = "{state}/tmp"
static_dir = "{work}/root/libpod"
volume_path = "{work}/root/volumes"
helper_binaries_dir = ["/usr/libexec/podman", "/usr/bin"]
[engine.runtimes]
runc = ["{runc}"]
[network]
network_config_dir = "{work}/net"
""")
        storage = os.path.join(work, "storage.conf")
        with open(storage, "w") as f:
            f.write(f"""[storage]
driver = "overlay"
graphroot = "{work}/root"
runroot = "{state}/runroot"
""")
        self.env = dict(os.environ, CONTAINERS_CONF=conf, CONTAINERS_STORAGE_CONF=storage,
                        CONTAINERS_REGISTRIES_CONF=os.path.join(work, "registries.conf"))
        with open(self.env["CONTAINERS_REGISTRIES_CONF"], "w") as f:
            f.write("unqualified-search-registries = []\n")
        self.argv = [PODMAN, "--root", f"{work}/root", "--runroot", f"{state}/runroot",
                     "--tmpdir", f"{state}/tmp", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]

    def run(self, *args, check=True, stdin=None):
        r = subprocess.run(self.argv + list(args), capture_output=True, text=True, env=self.env,
                           stdin=stdin)
        if check and r.returncode != 0:
            raise RuntimeError(f"podman {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        return r

    def import_rootfs(self, rootfs):
        """The benchmark's busybox rootfs (with the helper) as an image."""
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        self.run("import", "-", IMAGE, stdin=tar.stdout)
        tar.wait()

    def cleanup(self):
        """Every pod, container and image of this podman, then its
        directory: overlay mounts first, or the removal fails; and the
        shared-memory lock file podman makes at a fixed place
        (/dev/shm/libpod_lock), unless it was there before."""
        self.run("pod", "rm", "--all", "--force", check=False)
        self.run("rm", "--all", "--force", check=False)
        self.run("rmi", "--all", "--force", check=False)
        if not self.lock_existed and os.path.exists(LOCK_FILE):
            os.unlink(LOCK_FILE)
        for top in (self.work, self.state):
            with open("/proc/self/mountinfo") as f:
                points = [line.split()[4] for line in f if line.split()[4].startswith(top + "/")]
            for p in sorted(points, key=len, reverse=True):
                subprocess.run(["umount", "-l", p], check=False)
            shutil.rmtree(top, ignore_errors=True)


def kube_pod(manifest):
    """The benchmark pod for `kube play`: sidecars (init containers with
    restartPolicy Always) become plain containers ahead of the regular
    ones, and every image is the imported one."""
    spec = manifest["spec"]
    inits, sidecars = [], []
    for c in spec.get("initContainers", []):
        c = dict(c, image=IMAGE)
        if c.pop("restartPolicy", None) == "Always":
            sidecars.append(c)
        else:
            inits.append(c)
    regulars = [dict(c, image=IMAGE) for c in spec["containers"]]
    out = dict(manifest)
    out["spec"] = dict(spec, initContainers=inits, containers=sidecars + regulars)
    return out


def bench_podman(env, runc, reps, results, pod, sidecars_start, sidecars_stop):
    """results["podman"]: kube play of the start pod (`pod(shared,
    sidecars_start)`) until every regular container logged Started, and
    kube down of the stop pod until it returns, with podvisor's numbers of
    the same run beside them."""
    why = missing()
    if why:
        results["podman"] = {"skipped": why}
        return
    regulars = REGULARS
    # podman refuses a runroot path longer than 50 characters.
    pm = Podman(os.path.join(env.work, "podman"),
                tempfile.mkdtemp(prefix="pvb-podman-", dir=os.path.dirname(env.state_root)), runc)
    try:
        pm.import_rootfs(os.path.join(env.image, "rootfs"))
        times = {"start": [], "stop": [], "stop_sigterm_exits": []}
        for i in range(reps + 1):
            for kind, sidecars in (("start", sidecars_start), ("stop", sidecars_stop)):
                d = env.scratch(f"podman-{kind}")
                shared = os.path.join(d, "shared")
                pod_file = os.path.join(d, "pod.json")
                with open(pod_file, "w") as f:
                    json.dump(kube_pod(pod(shared, sidecars)), f)
                if i == 0:
                    log(f"podman: warm-up (builds the infra image) {kind}")
                else:
                    log(f"podman {kind}: run {i}/{reps}")
                t0 = now_ms()
                pm.run("kube", "play", "--network", "none", pod_file)
                ev = wait_events(shared, [(n, "Started") for n in regulars])
                start = max(ev[(n, "Started")][0] for n in regulars) - t0
                wait_events(shared, [(n, "Started") for n in sidecars])  # as bench.py does
                t0 = now_ms()
                pm.run("kube", "down", pod_file)
                stop = now_ms() - t0
                if i == 0:
                    continue
                if kind == "start":
                    times["start"].append(start)
                else:
                    times["stop"].append(stop)
                    ev = read_events(shared)
                    times["stop_sigterm_exits"].append(
                        sum(1 for n in regulars + sidecars if (n, "Exiting") in ev))
        entry = {"start_ms": median(times["start"]), "stop_ms": median(times["stop"]), "runs": reps,
                 "start_all_ms": times["start"], "stop_all_ms": times["stop"],
                 "stop_containers_exited_on_sigterm": times["stop_sigterm_exits"],
                 "version": pm.run("--version").stdout.strip(),
                 "note": "podman has no sidecars: the helpers run as plain containers"}
        if results.get("start"):
            entry["start_ratio"] = entry["start_ms"] / results["start"]["podvisor_ms"]
        if results.get("stop"):
            entry["stop_ratio"] = entry["stop_ms"] / results["stop"]["podvisor_ms"]
        results["podman"] = entry
    finally:
        pm.cleanup()
