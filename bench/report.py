"""bench.py's table: medians and ratios of a results dict, one row per
measurement, with what each is compared with and whether issue 17's goals
are met."""
from pods import CPU_SCENARIOS, REGULARS, SIDECARS_STOP


# ---------------------------------------------------------------- report

def fmt(v, unit=""):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.1f}{unit}" if abs(v) >= 10 else f"{v:.2f}{unit}"
    return f"{v}{unit}"


def rows_of(r):
    """The table's rows, a header first: (benchmark, podvisor, baseline,
    ratio, notes)."""
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
    if "upgrade" in r:
        e = r["upgrade"]
        goal = "met" if e["within_goal"] else "MISSED"
        rows.append(("upgrade handover (request -> new binary answers)",
                     f"{fmt(e['median_ms'], ' ms')} median, {fmt(e['p99_ms'], ' ms')} p99", "-", "-",
                     f"goal p99 <= {e['goal_p99_ms']} ms: {goal}; {e['upgrades']} upgrades, "
                     f"{e['refused']} refused, {e['restarts']} restarts; the supervisor's own "
                     f"measure {fmt(e.get('supervisor_median_ms'), ' ms')} median, "
                     f"{fmt(e.get('supervisor_p99_ms'), ' ms')} p99"))
    from pull import pull_rows  # pull imports pods, as this module does
    rows += pull_rows(r, fmt)
    from resize import resize_rows
    rows += resize_rows(r, fmt)
    from userns import userns_rows
    rows += userns_rows(r, fmt)
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
    return rows


def all_rows(r):
    """rows_of and the static build's rows (static_client.py)."""
    from static_client import static_rows  # static_client imports fmt from here
    return rows_of(r) + static_rows(r)


def table(r):
    """The table bench.py prints."""
    rows = all_rows(r)
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for k, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown(r):
    """The same rows as a Markdown table, for the README."""
    rows = all_rows(r)
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows[1:]]
    return "\n".join(lines)


if __name__ == "__main__":
    # python3 bench/report.py RESULTS.json: the README's table of a run.
    import json
    import sys
    with open(sys.argv[1]) as f:
        print(markdown(json.load(f)))
