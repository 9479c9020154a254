#!/usr/bin/env bash
# Level of detail on the GPU machine (issue 12's measurements), in one device run of about 4-5 minutes.
#
# Here (builds the release binary with the kernels, about 15 MiB, into the ignored folder .gpu/lod):
#   scripts/gpu-lod.sh --prepare
# There (device `run`, kind nvidia-h200; carry [".gpu/lod"]; timeout_s 420), from the checkout's root:
#   bash scripts/gpu-lod.sh
#
# What it does, headless (no window needed), with the CUDA backend at 1920x1080:
#   1. the scene: a COPC file when PCV_LOD_COPC names one (a file `pcv convert ... -o x.copc.laz`
#      wrote, once the COPC reader is in this build), else the built-in scene of PCV_LOD_POINTS points
#      (default 1B) with an octree built in memory (`--lod`: ~16 bytes a point twice on the host; the
#      build's time is printed and not counted in the first frame);
#   2. `pcv record --measure` streamed, `--point-budget` PCV_LOD_BUDGET (default 100M), flying
#      .gpu/lod/path.json (10 s: from outside the scene into it, turning, and a stop): time to first frame,
#      start view complete, frame-time p50/p90/p99 during the flight (each frame = LOD update + render),
#      time to a complete view after the stop, device memory before the flight and its high-water mark
#      (cuMemGetInfo after every frame, whole device), the pool's size, evictions, points uploaded;
#   3. the same flight with the whole built-in scene resident (no LOD), for comparison;
#   4. table.md: the issue's targets (first frame <= 1 s, p99 streaming <= 2x resident p99, complete
#      <= 3 s after a stop) against the figures.
#   5. with PCV_LOD_HTTP=1 (and PCV_LOD_COPC): the same streamed flight through the URL of that COPC,
#      served from the loopback address by scripts/range-server.py (range requests; python3 -m
#      http.server has none), with an empty download cache (PCV_CACHE_DIR in a fresh folder): http.json,
#      http.log, http-complete.png and a row "streamed over HTTP" in table.md. PCV_LOD_HTTP=only skips
#      the file's streamed run (the resident one still runs unless PCV_LOD_RESIDENT=none).
# Files in $OUT (7, 10 with HTTP): streamed.json, resident.json, streamed.log, resident.log, table.md,
#   refining.png (the first streamed frame with points), complete.png (the complete view after the stop).
# Each streamed run's log ends with "after the stop: ..." and "limited by: ..." (what was missing at the
#   stop, loader threads busy/blocked, upload slices that ran out, host time of the uploads).
# Overrides: PCV_LOD_POINTS, PCV_LOD_BUDGET, PCV_LOD_COPC, PCV_LOD_UPLOAD_MS (upload slice per frame,
#   default 4 ms of host time), PCV_LOD_THREADS (loader threads, default cores - 1), PCV_LOD_SPACING_PX
#   (refine to, default 1), PCV_LOD_HTTP (1 or only).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ "${1:-}" = "--prepare" ]; then
  [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
  grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
  PCV_REQUIRE_KERNELS=1 cargo build --release --bin pcv || exit 1
  mkdir -p .gpu/lod
  install -m 755 target/release/pcv .gpu/lod/pcv
  strip .gpu/lod/pcv 2>/dev/null || true
  # The CUDA-vs-CPU tests (the pool's copy stream, per-slot point sizes), for scripts/gpu-lod-copc.sh.
  test_bin=$(PCV_REQUIRE_KERNELS=1 cargo test --release --no-run --test cuda_vs_cpu --message-format=json 2>/dev/null \
    | python3 -c 'import sys, json; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' | tail -1)
  [ -n "$test_bin" ] && install -m 755 "$test_bin" .gpu/lod/cuda_vs_cpu && strip .gpu/lod/cuda_vs_cpu 2>/dev/null || true
  du -sh .gpu/lod
  echo 'device run: kind nvidia-h200, carry [".gpu/lod"], timeout_s 420, command: bash scripts/gpu-lod.sh'
  exit 0
fi

out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
bin=.gpu/lod/pcv
[ -x "$bin" ] || { echo "no $bin: run scripts/gpu-lod.sh --prepare here first and carry .gpu/lod" >&2; exit 2; }
export PCV_REQUIRE_CUDA=1
points=${PCV_LOD_POINTS:-1B}; budget=${PCV_LOD_BUDGET:-100M}
# In the files' coordinates (the built-in scene's are its local ones, origin 0; a streamed scene is recentred,
# so "local" would differ between the two runs). The prototype starts at (-3, 0, 0); the flight ends
# inside the cylinders looking at them (the first version ended looking out at empty space).
# PCV_LOD_PATH: another path (e.g. over a COPC's own coordinates); PCV_LOD_RESIDENT: the resident run's
# source instead of the built-in scene (e.g. the file the COPC was converted from).
path=${PCV_LOD_PATH:-.gpu/lod/path.json}
[ -n "${PCV_LOD_PATH:-}" ] || cat > "$path" <<'EOF'
{"frame": "file", "keyframes": [
  {"t": 0, "camera": "-3,0,0,0,0"},
  {"t": 3, "camera": "-1.2,0,0.1,0,-3"},
  {"t": 6, "camera": "-0.3,0.3,0.1,-30,-8"},
  {"t": 8, "camera": "0.4,0.6,0.0,-80,-5"},
  {"t": 10, "camera": "0.5,0.7,0.0,-110,-5"}
]}
EOF
look=(--point-size adaptive --edl --background gradient)
common=(--backend cuda --size 1920x1080 --path "$path" "${look[@]}")
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader > "$out/streamed.log" 2>&1
if [ -n "${PCV_LOD_COPC:-}" ]; then
  src=("$PCV_LOD_COPC")
else
  src=(--lod --points "$points")
fi
http=${PCV_LOD_HTTP:-}
if [ "$http" != "only" ]; then
  echo "== streamed: ${src[*]} --point-budget $budget" | tee -a "$out/streamed.log"
  t0=$(date +%s%N)
  timeout 300 "$bin" record "${src[@]}" --point-budget "$budget" "${common[@]}" -o "$out/frames" --measure "$out/streamed.json" >>"$out/streamed.log" 2>&1
  echo "== streamed: exit $? after $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$out/streamed.log"
  mv "$out/frames/refining.png" "$out/frames/complete.png" "$out/" 2>/dev/null; rm -rf "$out/frames"
fi
if [ -n "$http" ] && [ -n "${PCV_LOD_COPC:-}" ]; then
  # The same flight through a URL: a range server on the loopback address over the COPC's folder.
  portfile=$(mktemp -u /tmp/pcv-range-port.XXXXXX)
  python3 "$root/scripts/range-server.py" "$(dirname "$PCV_LOD_COPC")" --port-file "$portfile" > "$out/http.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do [ -s "$portfile" ] && break; sleep 0.1; done
  if [ -s "$portfile" ]; then
    url="http://127.0.0.1:$(cat "$portfile")/$(basename "$PCV_LOD_COPC")"
    cache=$(mktemp -d /tmp/pcv-http-cache.XXXXXX)
    echo "== streamed over HTTP: $url --point-budget $budget (empty cache $cache)" | tee -a "$out/http.log"
    "$bin" info "$url" 2>&1 | head -4 >> "$out/http.log"
    t0=$(date +%s%N)
    PCV_CACHE_DIR=$cache timeout 300 "$bin" record "$url" --point-budget "$budget" "${common[@]}" -o "$out/http-frames" --measure "$out/http.json" >>"$out/http.log" 2>&1
    echo "== streamed over HTTP: exit $? after $(( ($(date +%s%N) - t0) / 1000000 )) ms; cache $(du -sh "$cache" | cut -f1)" | tee -a "$out/http.log"
    mv "$out/http-frames/complete.png" "$out/http-complete.png" 2>/dev/null; rm -rf "$out/http-frames" "$cache"
  else
    echo "== the range server did not start (see above)" | tee -a "$out/http.log"
  fi
  kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$portfile"
fi
if [ -n "${PCV_LOD_RESIDENT:-}" ]; then resident=("$PCV_LOD_RESIDENT"); else resident=(--points "$points"); fi
if [ "${PCV_LOD_RESIDENT:-}" != "none" ]; then
  echo "== resident: ${resident[*]}" | tee "$out/resident.log"
  timeout 120 "$bin" record "${resident[@]}" "${common[@]}" -o /tmp/pcv-resident --measure "$out/resident.json" >>"$out/resident.log" 2>&1
  echo "== resident: exit $?" | tee -a "$out/resident.log"
fi
python3 - "$out" <<'PY' > "$out/table.md"
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
PY
cat "$out/table.md"
grep -hE "pcv:|first frame|flight|complete view|device memory|after the stop|limited by|error" "$out"/streamed.log "$out"/http.log "$out"/resident.log 2>/dev/null | head -40
