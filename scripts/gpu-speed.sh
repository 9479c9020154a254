#!/bin/bash
# On the GPU machine (after scripts/gpu-prepare.sh --headless here): the speed work's checks and numbers.
# PTX and CUDA-vs-CPU-twin tests (exact images and depth), memcheck of the culled modes, then the bench
# over every pose at the given counts and modes, 1920x1080, with the prototype as a peer at 1B.
# Usage there: bash scripts/gpu-speed.sh [counts, default 10M,100M,1B] [modes, default reference,vis,culled,quant]
set -u
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
counts=${1:-10M,100M,1B}
modes=${2:-reference,vis,culled,quant}
for f in .gpu/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1
pcv=.gpu/bin/pcv
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; $pcv --version
  echo "== ptx"; .gpu/bin/ptx 2>&1 | grep -E "test result|FAILED|panicked"
  echo "== cuda_vs_cpu"
  .gpu/bin/cuda_vs_cpu --test-threads=1 --nocapture >"$out/cuda_vs_cpu.log" 2>&1
  grep -E "^test |test result|panicked|post passes:" "$out/cuda_vs_cpu.log"
  grep -E "culled|quant" "$out/cuda_vs_cpu.log" | grep -E "1920x1080" | head -8
  echo "== memcheck, culled and quant, 2M points"
  for mode in culled quant; do
    printf '%s: ' "$mode"
    "$cs" --tool memcheck --error-exitcode 9 $pcv bench --backend cuda --points 2M --mode $mode --warmup 1 --frames 2 --size 1280x720 2>&1 | grep -E "ERROR SUMMARY" | head -1
  done
  echo "== bench"
  $pcv bench --backend cuda --points "$counts" --mode "$modes" --warmup 5 --frames 15 --json "$out/bench.json" 2>&1
} 2>&1 | tee "$out/speed.log"
