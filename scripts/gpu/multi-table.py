#!/usr/bin/env python3
"""The two-GPU table of `scripts/gpu.sh multi`: frame ms (median) by GPU count and the composite's ms on its
own, from the bench-*-gpus*.json reports that `pcv bench --gpus 1,2 --json` wrote in OUT.

Usage: scripts/gpu/multi-table.py OUT"""
import glob, json, os, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "bench-*-gpus*.json"))):
    g = f.rsplit("gpus", 1)[1].split(".")[0]
    for r in json.load(open(f))["results"]:
        comp = dict((p[0], p[1]) for p in r["passes"]).get("composite")
        key = (r["height"], r["pose"], r["mode"])
        rows.setdefault(key, {})[g] = (r["frame"]["median_ms"], comp["median_ms"] if comp else None)
print("%-6s %-9s %-7s %10s %10s %12s" % ("size", "pose", "mode", "1 GPU ms", "2 GPUs ms", "composite ms"))
for (h, pose, mode), v in sorted(rows.items()):
    one, two = v.get("1", (None, None)), v.get("2", (None, None))
    fmt = lambda x: "-" if x is None else "%.3f" % x
    print("%-6s %-9s %-7s %10s %10s %12s" % (h, pose, mode, fmt(one[0]), fmt(two[0]), fmt(two[1])))
