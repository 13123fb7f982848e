"""The pull benchmark of bench.py (issue 31, point 6): a pod of three
images sharing a base, pulled from a registry on this machine.

  cold   `podvisor run` with an empty store (a fresh state directory)
         until the three containers logged Started, against `podman kube
         play` of the same pod from the same registry with none of the three
         images in its store (podman's own infra image stays: it is not
         one of the pod's images); goal: podvisor >= 3x faster
  size   the store on disk after pulling the three images (`du -sB1`):
         podvisor's STATE/.images after `podvisor pull` against podman's
         --root after `podman pull`, each fresh; goal: no larger
  warm   `podvisor run` of the pod with its images in the store, against
         the same pod with the image as a bundle directory (the `start`
         case's way); goal: unchanged (ratio about 1)

The registry is Debian's docker-registry (`docker-registry serve`) on a
free 127.0.0.1 port, plain HTTP without auth (the same for both sides:
the benchmark measures pulling and storing, not TLS), its storage in the
run's directory; both clients read a registries.conf of the run's own
that marks it insecure (CONTAINERS_REGISTRIES_CONF). The images are the
benchmark's busybox rootfs with the test helper as the base layer plus one
small layer each (scripts/make-oci-layout.sh), pushed with skopeo. Every
store lives on the same disk (the run's work directory), not on tmpfs.

The podvisor command lines are PODVISOR_RUN_EXTRA and podvisor_pull_argv
below: if the merged CLI differs, the change is there.
"""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import podman
from pods import (HELPER_IN_CONTAINER, ROOT, RUNC, Supervisor, log, median, now_ms, run, wait_events,
                  write_bundle)

REGISTRY = "/usr/bin/docker-registry"
SKOPEO = shutil.which("skopeo")
APPS = ["app-1", "app-2", "app-3"]
GOAL_COLD_SPEEDUP = 3.0

# What `podvisor run` needs beyond bench.py's Supervisor defaults to pull
# (nothing: the registries.conf comes through the environment).
PODVISOR_RUN_EXTRA = ("--network", "none")


def podvisor_pull_argv(podvisor, state, image):
    """`podvisor pull` of one image into the store of `state`."""
    return [podvisor, "pull", "--state-dir", state, image]


def missing():
    for tool, why in ((REGISTRY, "docker-registry not installed (scripts/install-deps.sh)"),
                      (SKOPEO, "skopeo not installed")):
        if not tool or not os.access(tool, os.X_OK):
            return why
    return podman.missing()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Registry:
    """docker-registry on 127.0.0.1:PORT with its storage under `d`; stopped
    by its pid."""

    def __init__(self, d):
        self.d = d
        os.makedirs(os.path.join(d, "storage"), exist_ok=True)
        for _ in range(5):
            self.port = free_port()
            conf = os.path.join(d, "config.yml")
            with open(conf, "w") as f:
                f.write(f"""version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: {d}/storage
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:{self.port}
  secret: podvisor-bench
""")
            self.log = open(os.path.join(d, "registry.log"), "a")
            self.proc = subprocess.Popen([REGISTRY, "serve", conf], stdin=subprocess.DEVNULL,
                                         stdout=self.log, stderr=self.log)
            deadline = time.time() + 20
            while time.time() < deadline and self.proc.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return
                except OSError:
                    time.sleep(0.02)
            self.stop()
        raise RuntimeError(f"docker-registry did not start; see {d}/registry.log")

    @property
    def host(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def build_images(env, d, registry):
    """The three images (base: the benchmark's rootfs; each its own small
    layer), pushed as bench/app-N:v1. Returns their references."""
    script = os.path.join(ROOT, "scripts", "make-oci-layout.sh")
    refs = []
    for name in APPS:
        extra = os.path.join(d, "src", name)
        os.makedirs(extra)
        with open(os.path.join(extra, "app-name"), "w") as f:
            f.write(name + "\n")
        layout = os.path.join(d, "layouts", name)
        run(["bash", script, layout, '{"Env":["PATH=/bin"]}', os.path.join(env.image, "rootfs"),
             extra])
        ref = f"{registry.host}/bench/{name}:v1"
        run([SKOPEO, "--insecure-policy", "copy", "--dest-tls-verify=false",
             f"oci:{layout}:latest", f"docker://{ref}"])
        refs.append(ref)
    return refs


def pull_pod(shared, refs):
    containers = [{"name": n, "image": ref, "imagePullPolicy": "IfNotPresent",
                   "command": [HELPER_IN_CONTAINER, "--log", n, "--log-file", "/shared/events.log",
                               "trap-sigterm", "0", "0"],
                   "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]}
                  for n, ref in zip(APPS, refs)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pullbench"},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 10,
                     "volumes": [{"name": "shared",
                                  "hostPath": {"path": shared, "type": "Directory"}}],
                     "containers": containers}}


def write_pod_bundle(d, manifest):
    bundle = os.path.join(d, "bundle")
    os.makedirs(os.path.join(bundle, "images"))
    with open(os.path.join(bundle, "pod.json"), "w") as f:
        json.dump(manifest, f)
    return bundle


def du(path):
    """Bytes on disk under `path` (hard links once)."""
    return int(run(["du", "-sB1", path]).stdout.split()[0])


def started_after(shared, t0):
    ev = wait_events(shared, [(n, "Started") for n in APPS], timeout=300)
    return max(ev[(n, "Started")][0] for n in APPS) - t0


# ---------------------------------------------------------------- podvisor

def podvisor_cold(env, refs):
    """Returns (ms to all Started, the state directory holding the store)."""
    d = env.scratch("pull-podvisor")
    shared = os.path.join(d, "shared")
    bundle = write_pod_bundle(d, pull_pod(shared, refs))
    # The store on disk beside podman's, not on the tmpfs of the other
    # benchmarks' state directories.
    sv = Supervisor(env, d, bundle, PODVISOR_RUN_EXTRA, state=os.path.join(d, "state"))
    try:
        start = started_after(shared, sv.t0)
        sv.wait_running(len(APPS))
        sv.stop()
    finally:
        sv.kill()
    return start, sv.state


def podvisor_warm(env, refs, state, from_bundle):
    """The pod again with its images in `state`'s store, or (from_bundle)
    with the base image as a bundle directory, as the `start` case."""
    d = env.scratch("pull-warm-" + ("bundle" if from_bundle else "store"))
    shared = os.path.join(d, "shared")
    manifest = pull_pod(shared, refs)
    if from_bundle:
        for c in manifest["spec"]["containers"]:
            c["image"] = "bb"
        sv = Supervisor(env, d, write_bundle(env, d, manifest), PODVISOR_RUN_EXTRA,
                        state=os.path.join(d, "state"))
    else:
        sv = Supervisor(env, d, write_pod_bundle(d, manifest), PODVISOR_RUN_EXTRA, state=state)
    try:
        start = started_after(shared, sv.t0)
        sv.wait_running(len(APPS))
        sv.stop()
    finally:
        sv.kill()
    return start


def podvisor_size(env, refs):
    d = env.scratch("pull-size-podvisor")
    state = os.path.join(d, "state")
    for ref in refs:
        run(podvisor_pull_argv(env.podvisor, state, ref), timeout=600)
    return du(os.path.join(state, ".images"))


# ---------------------------------------------------------------- podman

def podman_of(env, registries_conf):
    pm = podman.Podman(os.path.join(env.work, "podman-pull"),
                       tempfile.mkdtemp(prefix="pvb-pull-", dir=os.path.dirname(env.state_root)),
                       RUNC)
    pm.env["CONTAINERS_REGISTRIES_CONF"] = registries_conf
    return pm


def podman_cold(env, pm, refs, warmup=False):
    d = env.scratch("pull-podman")
    shared = os.path.join(d, "shared")
    pod_file = os.path.join(d, "pod.json")
    with open(pod_file, "w") as f:
        json.dump(pull_pod(shared, refs), f)
    for ref in refs:  # cold: none of the pod's images in the store
        pm.run("rmi", "--force", ref, check=False)
    t0 = now_ms()
    pm.run("kube", "play", "--network", "none", "--tls-verify=false", pod_file)
    try:
        start = started_after(shared, t0)
    finally:
        pm.run("kube", "down", pod_file, check=False)
    return start


def podman_size(env, registries_conf, refs):
    """A fresh podman root holding only the three images."""
    pm = podman.Podman(os.path.join(env.work, "podman-size"),
                       tempfile.mkdtemp(prefix="pvb-size-", dir=os.path.dirname(env.state_root)),
                       RUNC)
    pm.env["CONTAINERS_REGISTRIES_CONF"] = registries_conf
    try:
        for ref in refs:
            pm.run("pull", "--tls-verify=false", ref)
        return du(os.path.join(pm.work, "root"))
    finally:
        pm.cleanup()


# ---------------------------------------------------------------- the case

def bench_pull(env, reps, results, sides=("podvisor", "podman")):
    """results["pull"]. Each side's failure is recorded, never the end of
    the run: the podman side runs before podvisor can pull."""
    why = missing()
    if why:
        results["pull"] = {"skipped": why}
        return
    d = env.scratch("pull-registry")
    registry = Registry(os.path.join(d, "registry"))
    entry = {"runs": reps, "images": len(APPS), "podvisor": {}, "podman": {}}
    try:
        refs = build_images(env, d, registry)
        conf = os.path.join(d, "registries.conf")
        with open(conf, "w") as f:
            f.write(f'unqualified-search-registries = []\n[[registry]]\nlocation = "{registry.host}"\n'
                    "insecure = true\n")
        conf_env = {"CONTAINERS_REGISTRIES_CONF": conf,
                    "REGISTRY_AUTH_FILE": os.path.join(d, "no-auth.json")}
        with open(conf_env["REGISTRY_AUTH_FILE"], "w") as f:
            f.write("{}\n")
        blob_bytes = sum(os.path.getsize(os.path.join(dp, f))
                         for dp, _, fs in os.walk(os.path.join(d, "registry", "storage")) for f in fs)
        entry["registry_bytes"] = blob_bytes

        if "podman" in sides:
            pm = podman_of(env, conf)
            try:
                log("pull: podman warm-up (its infra image)")
                podman_cold(env, pm, refs)
                times = []
                for i in range(reps):
                    log(f"pull: podman kube play, cold, run {i + 1}/{reps}")
                    times.append(podman_cold(env, pm, refs))
                entry["podman"] = {"cold_ms": median(times), "cold_all_ms": times,
                                   "version": pm.run("--version").stdout.strip()}
            except (RuntimeError, subprocess.SubprocessError) as e:
                entry["podman"] = {"failed": str(e)}
            finally:
                pm.cleanup()
            try:
                log("pull: podman's store size")
                entry["podman"]["store_bytes"] = podman_size(env, conf, refs)
            except (RuntimeError, subprocess.SubprocessError) as e:
                entry["podman"]["size_failed"] = str(e)

        if "podvisor" in sides:
            saved = dict(os.environ)
            os.environ.update(conf_env)  # for `podvisor run` and `pull`
            try:
                times, warm_store, warm_bundle = [], [], []
                state = None
                for i in range(reps):
                    log(f"pull: podvisor run, cold, run {i + 1}/{reps}")
                    t, state = podvisor_cold(env, refs)
                    times.append(t)
                for i in range(reps):
                    log(f"pull: podvisor run, warm, run {i + 1}/{reps}")
                    warm_store.append(podvisor_warm(env, refs, state, from_bundle=False))
                    warm_bundle.append(podvisor_warm(env, refs, state, from_bundle=True))
                entry["podvisor"] = {"cold_ms": median(times), "cold_all_ms": times,
                                     "warm_store_ms": median(warm_store),
                                     "warm_bundle_ms": median(warm_bundle),
                                     "warm_store_all_ms": warm_store,
                                     "warm_bundle_all_ms": warm_bundle}
                log("pull: podvisor's store size")
                entry["podvisor"]["store_bytes"] = podvisor_size(env, refs)
            except (RuntimeError, subprocess.SubprocessError, OSError) as e:
                entry["podvisor"]["failed"] = str(e)
            finally:
                os.environ.clear()
                os.environ.update(saved)
    finally:
        registry.stop()

    pv, pm = entry["podvisor"], entry["podman"]
    if pv.get("cold_ms") and pm.get("cold_ms"):
        entry["cold_speedup"] = pm["cold_ms"] / pv["cold_ms"]
        entry["cold_goal_met"] = entry["cold_speedup"] >= GOAL_COLD_SPEEDUP
    if pv.get("store_bytes") and pm.get("store_bytes"):
        entry["size_ratio"] = pv["store_bytes"] / pm["store_bytes"]
        entry["size_goal_met"] = entry["size_ratio"] <= 1.0
    if pv.get("warm_store_ms") and pv.get("warm_bundle_ms"):
        entry["warm_ratio"] = pv["warm_store_ms"] / pv["warm_bundle_ms"]
    results["pull"] = entry


def pull_rows(r, fmt):
    """report.py's rows for results["pull"]."""
    e = r.get("pull")
    if not e:
        return []
    if "skipped" in e:
        return [("pull: cold start from a registry", "-", "-", "-", e["skipped"])]
    pv, pm = e["podvisor"], e["podman"]
    rows = []
    why = pv.get("failed") or pm.get("failed")
    speed = e.get("cold_speedup")
    rows.append(("pull: cold start, 3 images sharing a base", fmt(pv.get("cold_ms"), " ms"),
                 fmt(pm.get("cold_ms"), " ms"),
                 fmt(speed) + "x faster" if speed else "-",
                 f"vs podman kube play from the same registry; goal >= {GOAL_COLD_SPEEDUP:g}: "
                 + ("met" if e.get("cold_goal_met") else "MISSED" if speed else "not measured")
                 + f"; {e['runs']} runs" + (f"; {why[:120]}" if why else "")))
    size = e.get("size_ratio")
    mib = lambda b: fmt(b / 1048576, " MiB") if b else "-"
    rows.append(("pull: store size on disk for the 3 images", mib(pv.get("store_bytes")),
                 mib(pm.get("store_bytes")), fmt(size) if size else "-",
                 "du of STATE/.images vs podman's --root; goal <= 1.0: "
                 + ("met" if e.get("size_goal_met") else "MISSED" if size else "not measured")))
    warm = e.get("warm_ratio")
    rows.append(("pull: warm start (images in the store)", fmt(pv.get("warm_store_ms"), " ms"),
                 fmt(pv.get("warm_bundle_ms"), " ms"), fmt(warm) if warm else "-",
                 "vs the same pod from a bundle directory; goal: unchanged (about 1.0)"))
    return rows
