#!/usr/bin/env bash
# Drives the web-behind-proxy example while `podvisor run` runs it
# (scripts/example.sh calls this with PODVISOR and STATE_DIR set): waits
# until the pod is Ready (both readiness probes pass, one of them through
# the proxy), shows it, then stops it with a termination reason that the
# preStop hooks print.
set -euo pipefail
pod=web-behind-proxy
for _ in $(seq 1 120); do
  if "$PODVISOR" status --state-dir "$STATE_DIR" "$pod" 2>/dev/null | grep -q "^$pod .* 2/2 "; then
    break
  fi
  sleep 0.25
done
"$PODVISOR" status --state-dir "$STATE_DIR" -o wide "$pod"
# From the host: by the pod's own address, then by the hostPort.
ip=$("$PODVISOR" status --state-dir "$STATE_DIR" -o json "$pod" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["status"].get("podIP", ""))')
for url in "http://$ip:8080/" "http://127.0.0.1:8080/"; do
  echo "GET $url: $(timeout 5 busybox wget -q -O - "$url")"
done
"$PODVISOR" stop --state-dir "$STATE_DIR" --reason Decommissioned "$pod"
