#!/usr/bin/env python3
"""Side by side: the median frame ms of several `pcv bench --json` reports (e.g. two builds timed in one
device run by `PCV=.gpu/bin/pcv-old bash scripts/gpu.sh bench; bash scripts/gpu.sh bench`), a row per
scenario (points, size, mode, look, pose) they share, a column per report, and the last report's time over
the first's.

Usage: scripts/gpu/bench-compare.py REPORT.json REPORT.json [...]"""
import json
import os
import sys

reports = []
for path in sys.argv[1:]:
    try:
        x = json.load(open(path))
    except Exception as e:
        print(f"bench-compare: {path}: {e}")
        continue
    label = os.path.basename(os.path.dirname(path)) or path
    rows = {}
    for r in x.get("results", []):
        key = (r["points"], f"{r['width']}x{r['height']}", str(r["mode"]).lower(), r.get("look", ""), r["pose"])
        rows[key] = r["frame"]["median_ms"]
    reports.append((f"{label} ({x.get('commit') or '?'})", rows))
if len(reports) < 2:
    raise SystemExit(0)
keys = [k for k in reports[0][1] if all(k in rows for _, rows in reports[1:])]
print("median frame ms: " + " | ".join(label for label, _ in reports))
print("| points | size | mode | look | pose | " + " | ".join(label for label, _ in reports) + " | last / first |")
print("|---:|---|---|---|---|" + "---:|" * len(reports) + "---:|")
for k in keys:
    ms = [rows[k] for _, rows in reports]
    print(f"| {k[0]:,} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | " + " | ".join(f"{m:.3f}" for m in ms)
          + f" | {ms[-1] / ms[0]:.3f} |")
