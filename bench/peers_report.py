#!/usr/bin/python3
"""The peers scenario's table: reads the `peers-result {json}` lines that
`groupcoord-bench peers` printed (any other line is skipped) from the files
given, and prints, for each size, one Markdown table of the figures per
system, each the median over the rounds with the range (min-max), then the
ratios of groupcoord to each peer for CPU and memory at the largest size.

    bench/peers_report.py RESULTS...
"""
import json
import statistics
import sys

SYSTEMS = [("groupcoord", "groupcoord"), ("zookeeper", "ZooKeeper alone"), ("etcd", "etcd")]


def load(paths):
    runs = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("peers-result "):
                    runs.append(json.loads(line[len("peers-result "):]))
    return runs


def get(run, path):
    v = run
    for key in path:
        if not isinstance(v, dict) or key not in v:
            return None
        v = v[key]
    return v


def fmt(v, decimals):
    if decimals == 0:
        return f"{v:,.0f}"
    return f"{v:,.{decimals}f}"


def cell(runs, path, decimals):
    vals = [get(r, path) for r in runs]
    vals = [v for v in vals if isinstance(v, (int, float))]
    if not vals:
        return "-"
    med = statistics.median(vals)
    if len(vals) == 1:
        return fmt(med, decimals)
    return f"{fmt(med, decimals)} ({fmt(min(vals), decimals)}–{fmt(max(vals), decimals)})"


def median(runs, path):
    vals = [get(r, path) for r in runs]
    vals = [v for v in vals if isinstance(v, (int, float))]
    return statistics.median(vals) if vals else None


def unseen(runs, kind):
    total = sum((get(r, [kind, "unseen"]) or 0) for r in runs)
    started = sum((get(r, [kind, "started"]) or 0) for r in runs)
    return f"{total} of {started}"


# (label, path in the result, decimals)
ROWS = [
    ("CPU s per member-hour, coordination side (total)", ["cpu_s_per_member_hour", "total"], 3),
    ("… of which ZooKeeper", ["cpu_s_per_member_hour", "zookeeper"], 3),
    ("… of which groupcoordd", ["cpu_s_per_member_hour", "groupcoordd"], 3),
    ("… of which etcd", ["cpu_s_per_member_hour", "etcd"], 3),
    ("RSS growth per member from before the join (KiB)", ["rss_kib_per_member", "total"], 2),
    ("RSS at the end of steady, all processes (MiB)", ["rss_mib", "total"], 0),
    ("requests per member per second, steady", ["requests_per_member_s"], 3),
    ("join seen by every other member of the group: p50 (ms)", ["join_seen", "p50_ms"], 1),
    ("join seen: p99 (ms)", ["join_seen", "p99_ms"], 1),
    ("leave seen by every other member: p50 (ms)", ["leave_seen", "p50_ms"], 1),
    ("leave seen: p99 (ms)", ["leave_seen", "p99_ms"], 1),
    ("crash seen gone by every other member: p50 (ms)", ["crash_seen", "p50_ms"], 1),
    ("crash seen: p99 (ms)", ["crash_seen", "p99_ms"], 1),
    ("writes to the replicated log per join or leave", ["log_writes", "per_change"], 2),
    ("writes to the replicated log per crash", ["log_writes", "per_crash"], 2),
    ("writes to the replicated log per second, steady", ["log_writes", "steady_per_s"], 2),
    ("generator lateness p99 (ms)", ["lateness_ms", "p99"], 2),
]


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = load(argv[1:])
    if not runs:
        print("no peers-result lines", file=sys.stderr)
        return 1
    sizes = sorted({r["members"] for r in runs})
    present = [(key, label) for key, label in SYSTEMS if any(r["system"] == key for r in runs)]
    for size in sizes:
        by = {key: [r for r in runs if r["system"] == key and r["members"] == size] for key, _ in present}
        rounds = max(len(v) for v in by.values())
        ttl = runs[0].get("ttl_s", 10)
        print(f"**{size:,} members** in groups of {runs[0].get('group_size', 100)}, TTL {ttl} s; "
              f"median (min–max) over {rounds} round(s)")
        print()
        print("| figure | " + " | ".join(label for _, label in present) + " |")
        print("|---|" + "---|" * len(present))
        for label, path, decimals in ROWS:
            cells = [cell(by[key], path, decimals) for key, _ in present]
            if all(c == "-" for c in cells):
                continue
            print(f"| {label} | " + " | ".join(cells) + " |")
        cells = [unseen(by[key], "join_seen") + " / " + unseen(by[key], "leave_seen") + " / " +
                 unseen(by[key], "crash_seen") for key, _ in present]
        print("| changes never seen by all (joins / leaves / crashes, all rounds) | " + " | ".join(cells) + " |")
        print()
    largest = sizes[-1]
    own = [r for r in runs if r["system"] == "groupcoord" and r["members"] == largest]
    if own:
        lines = []
        for key, label in present:
            if key == "groupcoord":
                continue
            peer = [r for r in runs if r["system"] == key and r["members"] == largest]
            if not peer:
                continue
            parts = []
            for what, path in (("CPU per member-hour", ["cpu_s_per_member_hour", "total"]),
                               ("RSS growth per member", ["rss_kib_per_member", "total"]),
                               ("RSS at steady", ["rss_mib", "total"])):
                a, b = median(own, path), median(peer, path)
                if a is None or b is None or a <= 0:
                    parts.append(f"{what}: -")
                else:
                    parts.append(f"{what} {b / a:.1f}×")
            lines.append(f"- {label} against groupcoord at {largest:,} members (medians; above 1: groupcoord "
                         "uses less): " + ", ".join(parts) + ".")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
