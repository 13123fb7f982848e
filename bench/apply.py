#!/usr/bin/env python3
"""`podvisor apply --watch`'s benchmark (issue 32, point 6; docs/SEMANTICS.md
S18.11): an edit of a manifest -> the replaced pod Ready, minus the pod's
own start time. Goal: a median of at most 1 s.

A manifest directory holds web.yaml (one container, the static test
helper in a busybox rootfs, which exits at once on SIGTERM; Ready once
running) and images/bb. `podvisor apply --watch` runs on it, its stdout a
pipe read as lines arrive. Each round rewrites web.yaml with a new env
value the way an editor saves (a temporary file renamed into place) at
t_edit, and waits for the watcher's line "pod/web replaced" at t_done
(apply prints it when inotify shows the new record Ready). The new
supervisor's start, t_sup, is its process start time (/proc/PID/stat,
10 ms ticks; its pid from STATE/web.lock). Then

  total    = t_done - t_edit
  own      = t_done - t_sup     the pod's own start: supervisor to Ready
  overhead = total - own        debounce, the pass, the graceful stop of
                                the old pod, the new supervisor's spawn

and the goal is on overhead. Needs root and runc; builds nothing itself
(run bench/run.sh once, or ninja -C build podvisor tests/podvisor-test-helper).

  python3 bench/apply.py [--rounds N] [--build DIR] [--json FILE]
"""
import argparse
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pods import RUNC, Env, container, helper_cmd, log, median, run  # noqa: E402

GOAL_MS = 1000.0


def manifest(marker, shared):
    c = container("web", helper_cmd("web", "trap-sigterm", "0", "0"))
    c["env"] = [{"name": "MARKER", "value": marker}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"terminationGracePeriodSeconds": 5,
                     "volumes": [{"name": "shared",
                                  "hostPath": {"path": shared, "type": "Directory"}}],
                     "containers": [c]}}


def save(path, doc):
    """As an editor saves: a temporary file, renamed into place."""
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.rename(tmp, path)


def process_start_ms(pid):
    """A process's start as wall-clock ms: /proc/PID/stat's start time
    counts clock ticks on CLOCK_BOOTTIME (btime in /proc/stat is whole
    seconds, too coarse here)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[19])  # field 22 of stat, counted after the comm
    boot_epoch = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    return (boot_epoch + ticks / os.sysconf("SC_CLK_TCK")) * 1000.0


class Watcher:
    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.buf = b""
        self.lines = []

    def wait_line(self, text, timeout=120):
        """The time (ms) the watcher's line containing `text` arrived."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                line = line.decode(errors="replace")
                self.lines.append(line)
                if text in line:
                    return self.arrived
            if not select.select([self.proc.stdout], [], [], deadline - time.time())[0]:
                break
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            self.arrived = time.time() * 1000.0
            if not chunk:
                break
            self.buf += chunk
        raise RuntimeError(f"no line {text!r} from apply --watch; it said: {self.lines[-5:]}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(60)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "build"))
    ap.add_argument("--json", help="write the rounds and medians here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/apply.py: needs root (runc)")
    work = tempfile.mkdtemp(prefix="podvisor-bench-apply-")
    env = Env(args.build, work)
    env.podvisor = env.default_podvisor if not os.access(env.podvisor, os.X_OK) else env.podvisor
    d = env.scratch("apply")
    shared = os.path.join(d, "shared")
    manifests = os.path.join(d, "manifests")
    os.makedirs(os.path.join(manifests, "images"))
    shutil.copytree(env.image, os.path.join(manifests, "images", "bb"), symlinks=True)
    state = env.state_path(d, "state")
    web = os.path.join(manifests, "web.yaml")
    save(web, manifest("0", shared))
    watcher = Watcher([env.podvisor, "apply", "-f", manifests, "--watch", "--rescan", "1h",
                       "--state-dir", state, "--log-dir", os.path.join(d, "logs"),
                       "--runtime", RUNC, "--cgroup-parent", "/podvisor-bench",
                       "--run-arg=--network", "--run-arg=none", "--detach", "process",
                       "--min-ready", "0"])
    rounds = []
    try:
        watcher.wait_line("pod/web created")
        for i in range(1, args.rounds + 1):
            t_edit = time.time() * 1000.0
            save(web, manifest(str(i), shared))
            t_done = watcher.wait_line("pod/web replaced")
            with open(os.path.join(state, "web.lock")) as f:
                pid = int(f.read().strip() or 0)
            t_sup = process_start_ms(pid)
            r = {"total": t_done - t_edit, "own": t_done - t_sup}
            r["overhead"] = r["total"] - r["own"]
            rounds.append(r)
            log(f"round {i}: edit -> Ready {r['total']:.0f} ms, own start {r['own']:.0f} ms, "
                f"overhead {r['overhead']:.0f} ms")
    finally:
        watcher.stop()
        run([env.podvisor, "stop", "web", "--state-dir", state], check=False)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(env.state_root, ignore_errors=True)
    result = {k: median([r[k] for r in rounds]) for k in ("total", "own", "overhead")}
    verdict = "met" if result["overhead"] <= GOAL_MS else "NOT met"
    print(f"apply --watch, edit -> replaced pod Ready ({len(rounds)} rounds, medians): "
          f"{result['total']:.0f} ms, of which the pod's own start {result['own']:.0f} ms; "
          f"overhead {result['overhead']:.0f} ms (goal <= {GOAL_MS:.0f} ms: {verdict})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": rounds, "median": result, "goal_ms": GOAL_MS}, f, indent=2)
    return 0 if result["overhead"] <= GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
