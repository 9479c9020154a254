#!/bin/bash
# Issue 5 on the GPU machine, from the checkout's root, after scripts/gpu-prepare.sh --headless here:
# the PTX and CUDA-vs-CPU tests (batched modes included), then the bench of every mode at 10M/100M/1B
# with the prototype as a peer (1920x1080), the 1B start pose at 3840x2160, and reference/packed at 1B
# without the spatial sort (PCV_PREPROCESS=0). Results go to $OUT (at most 8 files come back).
set -u
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
for f in .gpu/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1
pcv=.gpu/bin/pcv
modes=${PCV_MODES:-reference,packed,vis,culled,dedup,quant}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  echo "== ptx"; .gpu/bin/ptx 2>&1 | grep -E "test result|FAILED|panicked"
  echo "== cuda_vs_cpu"
  .gpu/bin/cuda_vs_cpu --test-threads=1 --nocapture >"$out/cuda_vs_cpu.log" 2>&1
  grep -E "test result|FAILED|panicked|^test " "$out/cuda_vs_cpu.log"
} 2>&1 | tee "$out/session.log"
{
  echo "== bench 1920x1080"
  $pcv bench --backend cuda --points "${PCV_COUNTS:-10M,100M,1B}" --mode "$modes" --peer .gpu/seed_numba_bench.py \
    --dump-dir /dev/shm --json "$out/bench.json" --warmup 5 --frames 20 2>&1
  echo "== bench 3840x2160, 1B"
  $pcv bench --backend cuda --points 1B --size 3840x2160 --mode "$modes" --json "$out/bench-4k.json" --warmup 5 --frames 20 2>&1
  echo "== bench 1B without the spatial sort (PCV_PREPROCESS=0)"
  PCV_PREPROCESS=0 $pcv bench --backend cuda --points 1B --mode reference,packed --json "$out/bench-unsorted.json" --warmup 5 --frames 20 2>&1
} 2>&1 | tee "$out/bench.log"
