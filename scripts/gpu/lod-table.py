#!/usr/bin/env python3
"""The level-of-detail table of `scripts/gpu.sh lod`: reads streamed.json, http.json and resident.json (the
`pcv record --measure` reports) in OUT and prints table.md: one row a run, the issue's targets (first frame
<= 1 s, streaming p99 <= 2x resident p99, complete <= 3 s after a stop) and what limited the streamed runs
after the stop.

Usage: scripts/gpu/lod-table.py OUT > OUT/table.md"""
import json, os, sys
out = sys.argv[1]
def load(n):
    try:
        return json.load(open(os.path.join(out, n)))
    except Exception as e:
        return None
s, r, h = load("streamed.json"), load("resident.json"), load("http.json")
gb = lambda b: "-" if b is None else f"{b / 1e9:.2f} GB"
print("| run | points | budget | first frame ms | start complete ms | p50 ms | p90 ms | p99 ms | max ms | update p99 ms | complete after stop ms | device memory before / peak | drawn (mean) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
for name, log, x in (("streamed", "streamed", s), ("streamed over HTTP", "http", h), ("resident", "resident", r)):
    if not os.path.exists(os.path.join(out, log + ".log")):
        continue
    if not x:
        print(f"| {name} | failed (see {log}.log) |||||||||||||")
        continue
    f = x["flight"]
    print(f"| {name} | {x['scene_points']:,} | {x['point_budget']:,} | {x['first_frame_ms']:.0f} | {x['start_complete_ms']:.0f} | {f['p50_ms']:.2f} | {f['p90_ms']:.2f} | {f['p99_ms']:.2f} | {f['max_ms']:.2f} | {x['flight_update']['p99_ms']:.2f} | {x['complete_after_stop_ms'] if x['complete_after_stop_ms'] is None else round(x['complete_after_stop_ms'])} | {gb(x['device_memory_start_bytes'])} / {gb(x['device_memory_peak_bytes'])} | {x['mean_drawn_points'] / 1e6:.1f}M |")
if s and r:
    print()
    c = s["complete_after_stop_ms"]
    print(f"targets: first frame <= 1000 ms: {s['first_frame_ms']:.0f} ms ({'met' if s['first_frame_ms'] <= 1000 else 'NOT met'}); "
          f"streaming p99 <= 2x resident p99: {s['flight']['p99_ms']:.2f} vs {2 * r['flight']['p99_ms']:.2f} ms ({'met' if s['flight']['p99_ms'] <= 2 * r['flight']['p99_ms'] else 'NOT met'}); "
          f"complete <= 3000 ms after a stop: {'never' if c is None else f'{c:.0f} ms'} ({'met' if c is not None and c <= 3000 else 'NOT met'})")
    print(f"streamed: pool {s['pool_bytes'] / 1e9:.2f} GB, {s['evictions']} evictions, {s['uploaded_points'] / 1e6:.0f}M points uploaded, node errors {len(s['node_errors'])}; commit {s.get('commit')}, {s.get('device')}")
for name, x in (("streamed", s), ("streamed over HTTP", h)):
    a = x and x.get("after_stop")
    if a:
        print(f"{name}, after the stop: {a['missing_nodes']} nodes ({a['missing_points'] / 1e6:.1f}M points) missing; {a['frames']} frames, "
              f"{a['frames_slice_ran_out']} with the upload slice run out, {a['frames_copies_running']} with copies running; "
              f"{a['points_read'] / 1e6:.1f}M points read, {a['points_uploaded'] / 1e6:.1f}M uploaded in {a['upload_ms']:.0f} ms host time (max {a['upload_ms_max']:.1f} ms a frame); "
              f"{x.get('loader_threads')} loader threads busy {100 * a['loader_busy']:.0f}%, blocked {100 * a['loader_blocked']:.0f}%, {a['points_per_s_per_thread'] / 1e6:.2f}M points/s a thread. "
              f"Limited by: {a['limit']}")
