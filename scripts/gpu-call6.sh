#!/bin/bash
# One device call (kind nvidia-h200) after two interop/streaming changes: the pixel buffer allocated as
# DYNAMIC_COPY (video memory) — the whole frame in a window again — and the device stream's copies into
# pinned slots on rayon's threads — the 1B-point LAS stream rate and its time to a first frame again.
# Prepare here: scripts/gpu-load-bench.sh --prepare. Carry: .gpu/x .gpu/gl .gpu/load .gpu/start-x.sh
set -u
final=${OUT:-/tmp/pcv-out}
stage=/tmp/pcv-stage; rm -rf "$stage"; mkdir -p "$stage"
bin=.gpu/load
for f in .gpu/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export PCV_REQUIRE_CUDA=1
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; $bin/pcv --version
  echo "== the whole frame in a window, 1080p"
  source .gpu/start-x.sh
  $bin/pcv bench --window --backend cuda --points 10M,1B --mode culled --warmup 10 --frames 60 --json "$stage/bench-window.json" 2>&1 | grep -v "^pcv: "
} 2>&1 | tee "$stage/window.log"
{
  las=/dev/shm/big-1B.las
  $bin/load_bench --write-las 1B "$las" --laz-format 0 >/dev/null 2>&1
  echo "== 1B LAS: decode and device stream"
  PCV_BENCH_ONLY=decode $bin/load_bench --runs 2 --file "$las" 2>&1 | grep -E "^\|"
  echo "== 1B LAS: pcv render, process start to PNG (s)"
  for run in 1 2 3; do
    t0=$(date +%s%N); $bin/pcv render "$las" --backend cuda --size 1920x1080 -o "$stage/first-las.png" > "$stage/render-$run.log" 2>&1; rc=$?
    echo "run $run: $(awk -v a=$t0 -v b=$(date +%s%N) 'BEGIN{printf "%.2f", (b-a)/1e9}') s, exit $rc"
  done
} 2>&1 | tee "$stage/load.log"
python3 scripts/gpu-pack.py "$stage" "$final"
