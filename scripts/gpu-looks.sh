#!/bin/bash
# On the GPU machine (after scripts/gpu-prepare.sh --headless here), for the looks (point size, EDL,
# backgrounds): the PTX and CUDA-vs-CPU-twin tests, compute-sanitizer over the post passes, `pcv render`
# CUDA vs CPU with looks, and the bench at 1B built-in points and on a 100M-point LAS tile written there,
# 1920x1080, point sizes 1/2/3/5/adaptive, gather and scatter, EDL off/on. Results go to $OUT.
# Usage there: bash scripts/gpu-looks.sh [file points, default 100M]
set -u
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
file_points=${1:-100M}
for f in .gpu/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1
pcv=.gpu/bin/pcv
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; $pcv --version
  echo "== ptx"; .gpu/bin/ptx 2>&1 | grep -E "test result|FAILED|panicked"
  echo "== cuda_vs_cpu"
  .gpu/bin/cuda_vs_cpu --test-threads=1 --nocapture >"$out/cuda_vs_cpu.log" 2>&1
  grep -E "^test |test result|panicked|post passes:" "$out/cuda_vs_cpu.log"
  grep -E "identical to the CPU twin" "$out/cuda_vs_cpu.log" | grep -E "1920x1080" | head -12
  echo "== compute-sanitizer memcheck over the post passes (2M points, 1280x720)"
  for mode in reference packed vis; do
    for look in "--point-size 5 --edl --background gradient" "--point-size adaptive --edl" "--point-size 16 --splat scatter"; do
      printf '%s %s: ' "$mode" "$look"
      "$cs" --tool memcheck --error-exitcode 9 $pcv render --backend cuda --points 2M --size 1280x720 --mode $mode $look -o /tmp/m.png 2>&1 | grep -E "ERROR SUMMARY" | head -1
    done
  done
  echo "== pcv render, cuda vs cpu, with looks (10M points, 1920x1080)"
  for look in "--point-size 3 --edl --background gradient" "--point-size adaptive --edl --background white"; do
    for mode in vis packed; do
      $pcv render --backend cuda --points 10M --size 1920x1080 --mode $mode $look -o /tmp/c.png 2>&1 | tail -1
      $pcv render --backend cpu --points 10M --size 1920x1080 --mode $mode $look -o /tmp/p.png 2>&1 | tail -1
      printf '%s %s cuda vs cpu: ' "$mode" "$look"; $pcv diff /tmp/c.png /tmp/p.png
    done
  done
  cp /tmp/c.png "$out/render-adaptive-edl-white.png"
  echo "== bench, built-in scene, 1B points"
  $pcv bench --backend cuda --points 1B --mode reference,vis --point-size 1,2,3,5,adaptive --splat gather,scatter \
    --edl off,on --warmup 3 --frames 10 --json "$out/bench-1b.json" 2>&1
  echo "== bench, ${file_points}-point LAS tile (terrain, buildings, trees)"
  python3 scripts/gpu-terrain-las.py /dev/shm/terrain.las "${file_points/M/e6}" --size-m 2000
  $pcv bench --backend cuda /dev/shm/terrain.las --mode reference,vis --point-size 1,2,3,5,adaptive --edl off,on \
    --warmup 3 --frames 10 --json "$out/bench-file.json" 2>&1
} 2>&1 | tee "$out/looks.log"
