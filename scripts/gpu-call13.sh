#!/usr/bin/env bash
# One device call (kind nvidia-h200, ~6 minutes; carry [".gpu/load", ".gpu/copc"], timeout_s 600), CPU work on
# the GPU machine's 16 cores for issues 12 and 14: the LAZ decode bench on real data (scripts/gpu-load-bench.sh
# laz: pcv's decoder and the laz crate's, autzen tiled x1000 in formats 3 and 7, and a thread sweep), then the
# 1B-point terrain convert to COPC (scripts/gpu-copc.sh: all cores with PCV_COPC_PHASES=1, the temporary
# disk's high-water mark, and one core on 20M points).
# Here: scripts/gpu-load-bench.sh --prepare && scripts/gpu-copc.sh --prepare
# There: bash scripts/gpu-call13.sh
# Files in $OUT (8): laz-bench.log, laz-table.md, convert.log, convert-1core.log, time.log, disk.log, info.txt, table.md.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
PCV_RUNS=${PCV_RUNS:-2} timeout 300 bash scripts/gpu-load-bench.sh laz > /dev/null 2>&1
cat "$out/laz-table.md" 2>/dev/null
rm -rf /dev/shm/pcv-laz
timeout 280 bash scripts/gpu-copc.sh > /dev/null 2>&1
rm -f "$out/convert-time.log"
cat "$out/table.md" "$out/convert.log" "$out/time.log" 2>/dev/null
