#!/usr/bin/env python3
"""Compiles containerd's shim API messages with protoc at build time.

The .proto files are the copies Debian installs (golang-github-containerd-
containerd-dev, golang-github-containerd-cgroups-dev, golang-github-gogo-
protobuf-dev); none is committed here. Two rewrites make them usable:
  - protoc 3.21 refuses `import weak` of a file it then ignores, so weak
    imports are read as plain imports;
  - every file is staged under a flat name (meson's custom_target cannot
    declare outputs in subdirectories), and imports are rewritten to match.
Package names, message names and field numbers are untouched, so the wire
format and the Any type URLs are containerd's.

usage: gen_protos.py PROTOC GOCODE_DIR OWN_PROTO_DIR OUTDIR
"""
import os
import re
import subprocess
import sys
import tempfile

# flat name -> path under GOCODE_DIR
SOURCES = {
    "gogo.proto": "github.com/gogo/protobuf/gogoproto/gogo.proto",
    "fieldpath.proto": "github.com/containerd/containerd/protobuf/plugin/fieldpath.proto",
    "types_mount.proto": "github.com/containerd/containerd/api/types/mount.proto",
    "types_task.proto": "github.com/containerd/containerd/api/types/task/task.proto",
    "task_shim.proto": "github.com/containerd/containerd/runtime/v2/task/shim.proto",
    "events_task.proto": "github.com/containerd/containerd/api/events/task.proto",
    "cgroups_v2_metrics.proto": "github.com/containerd/cgroups/v2/stats/metrics.proto",
}
OWN = ["ttrpc.proto"]

IMPORT = re.compile(r'^(\s*)import\s+(weak\s+|public\s+)?"([^"]+)";', re.M)


def main():
    protoc, gocode, own_dir, outdir = sys.argv[1:5]
    outdir = os.path.abspath(outdir)
    by_path = {path: flat for flat, path in SOURCES.items()}
    by_path["gogoproto/gogo.proto"] = "gogo.proto"

    def rewrite(match):
        indent, _, path = match.groups()
        return f'{indent}import "{by_path.get(path, path)}";'

    with tempfile.TemporaryDirectory() as stage:
        for flat, path in SOURCES.items():
            with open(os.path.join(gocode, path), encoding="utf-8") as f:
                text = f.read()
            with open(os.path.join(stage, flat), "w", encoding="utf-8") as f:
                f.write(IMPORT.sub(rewrite, text))
        for name in OWN:
            with open(os.path.join(own_dir, name), encoding="utf-8") as f:
                text = f.read()
            with open(os.path.join(stage, name), "w", encoding="utf-8") as f:
                f.write(text)
        # google/protobuf/*.proto come from libprotobuf-dev's /usr/include.
        cmd = [protoc, f"-I{stage}", "-I/usr/include", f"--cpp_out={outdir}"]
        cmd += list(SOURCES) + OWN
        done = subprocess.run(cmd, cwd=stage, capture_output=True, text=True)
        # "Import gogo.proto is unused": the gogoproto options are Go-only.
        for line in done.stderr.splitlines():
            if not line.endswith("is unused."):
                print(line, file=sys.stderr)
        if done.returncode != 0:
            sys.exit(done.returncode)


if __name__ == "__main__":
    main()
