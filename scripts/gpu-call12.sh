#!/usr/bin/env bash
# One device call (kind nvidia-h200, ~6-8 minutes; carry [".gpu/lod"], timeout_s 600) for issue 12's
# "done when" and issue 14's time to screen: a 1B-point terrain LAS (buildings, trees; 3 km square) written
# there, converted to COPC by `pcv convert` on the 16 cores (PCV_COPC_PHASES=1), flown with
# --point-budget 100M streamed from the file, over HTTP from a loopback range server, and resident (the
# source LAS, whole on the GPU), then the 1B LAS rendered three times from the warm page cache (process
# start to PNG, with pcv's own phase times).
#
# Here: cargo build --release --bin pcv with the kernels, installed as .gpu/lod/pcv (scripts/gpu-lod.sh --prepare
#       also builds the cuda_vs_cpu test binary, which this call does not need).
# There: bash scripts/gpu-call12.sh
# Files in $OUT (8): call12.log (every step's lines), table.md, streamed.json, http.json, resident.json,
#   refining.png, complete.png, http-complete.png.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
pcv=.gpu/lod/pcv
n=${PCV_COPC_POINTS:-1B}; budget=${PCV_LOD_BUDGET:-100M}
dir=/dev/shm/pcv-copc; mkdir -p "$dir"
log=$out/call12.log
count=$(python3 -c "s='$n'.upper(); m={'K':1e3,'M':1e6,'B':1e9}; print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))")
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "== $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GB; writing $count points of terrain LAS (3 km, $(nproc) processes)"
  df -h /dev/shm | tail -1
  t0=$(date +%s.%N)
  timeout 200 python3 scripts/gpu-terrain-las.py "$dir/terrain.las" "$count" --size-m 3000 --jobs "$(nproc)" | tail -1
  echo "written in $(python3 -c "import time; print(round(time.time()-$t0,1))") s: $(du -h "$dir/terrain.las" | cut -f1)"
  echo "== pcv convert to COPC (all cores, PCV_COPC_PHASES=1)"
  PCV_COPC_PHASES=1 timeout 280 /usr/bin/time -v $pcv convert "$dir/terrain.las" -o "$dir/terrain.copc.laz" 2>&1 \
    | grep -E "pcv|Elapsed|Maximum resident|Percent of CPU|User time|System time|error|rror"
  df -h /dev/shm | tail -1
  $pcv info "$dir/terrain.copc.laz" 2>&1 | grep -E "points|octree|level" | head -14
} 2>&1 | tee "$log"
if [ -f "$dir/terrain.copc.laz" ]; then
  OUT=/tmp/lod1b PCV_LOD_COPC="$dir/terrain.copc.laz" PCV_LOD_RESIDENT="$dir/terrain.las" PCV_LOD_PATH=$root/scripts/terrain-flight.json \
    PCV_LOD_BUDGET=$budget PCV_LOD_HTTP=1 timeout 330 bash scripts/gpu-lod.sh > /dev/null 2>&1
  for f in streamed.log http.log resident.log; do echo "=== $f"; grep -v "^\s*$" "/tmp/lod1b/$f" | tail -30; done >> "$log" 2>&1
  for f in table.md streamed.json http.json resident.json refining.png complete.png http-complete.png; do
    cp "/tmp/lod1b/$f" "$out/" 2>/dev/null
  done
  cat "$out/table.md" >> "$log" 2>/dev/null
fi
{
  echo "== 1B LAS on screen: pcv render --backend cuda, process start to PNG (warm page cache)"
  for i in 1 2 3; do
    t0=$(date +%s%N)
    timeout 60 $pcv render "$dir/terrain.las" --backend cuda -o /tmp/first.png 2>&1 | grep -E "times|rendered|rror"
    echo "run $i: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  done
} 2>&1 | tee -a "$log"
rm -rf "$dir"
