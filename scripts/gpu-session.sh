#!/bin/bash
# On the GPU machine, from the checkout's root, after scripts/gpu-prepare.sh --windowed here: the checks
# the CUDA path needs, in one call. Results go to $OUT (at most 8 files come back).
#   1. CUDA vs CPU twin tests (bit-identical scene, images equal except at exact depth ties)
#   2. the viewer in a GLFW window on Xvfb with NVIDIA's GLX: 200 frames with the overlay, one without,
#      and `pcv render --backend cuda` of the same pose, compared pixel by pixel
#   3. the bench at 10M, 100M and 1B points with the prototype's kernels on the same points and cameras
# Usage there: bash scripts/gpu-session.sh [point counts, default 10M,100M,1B] [modes, default reference,packed,vis,culled]
set -u
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
counts=${1:-10M,100M,1B}
modes=${2:-reference,packed,vis,culled}
source .gpu/start-x.sh
export PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1
pcv=.gpu/bin/pcv
log="$out/session.log"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  echo "== cuda_vs_cpu"
  .gpu/bin/cuda_vs_cpu --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|differ|ties" | head -40
  echo "== window (GLFW on Xvfb, NVIDIA GLX), 1280x720, 10M points, start pose, default mode"
  $pcv --backend cuda --frames 200 --size 1280x720 --screenshot "$out/window.png" 2>&1 | tail -3
  $pcv --backend cuda --frames 200 --size 1280x720 --screenshot /tmp/window_plain.png --no-overlay 2>&1 | tail -3
  $pcv --backend cuda --frames 200 --size 1280x720 --screenshot /tmp/window_ref.png --no-overlay --mode reference 2>&1 | tail -3
  $pcv render --backend cuda --size 1280x720 -o /tmp/render_cuda.png 2>&1 | tail -2
  $pcv render --backend cuda --size 1280x720 -o /tmp/render_cuda_ref.png --mode reference 2>&1 | tail -2
  $pcv render --backend cpu --size 1280x720 -o /tmp/render_cpu.png --mode reference 2>&1 | tail -2
  echo -n "window (no overlay) vs render cuda, default mode: "; $pcv diff /tmp/window_plain.png /tmp/render_cuda.png
  echo -n "window vs render cuda, reference mode:            "; $pcv diff /tmp/window_ref.png /tmp/render_cuda_ref.png
  echo -n "render cuda default mode vs cuda reference:       "; $pcv diff /tmp/render_cuda.png /tmp/render_cuda_ref.png
  echo -n "render cuda reference vs cpu reference:           "; $pcv diff /tmp/render_cuda_ref.png /tmp/render_cpu.png
  echo -n "window with overlay vs render, overlay corner 0,0,400,280: "; $pcv diff "$out/window.png" /tmp/render_cuda.png --region 0,0,400,280
  echo -n "window with overlay vs render, bottom-right 640,360,640,360: "; $pcv diff "$out/window.png" /tmp/render_cuda.png --region 640,360,640,360
  echo "== bench"
  $pcv bench --backend cuda --points "$counts" --mode "$modes" --peer .gpu/seed_numba_bench.py \
    --dump-dir /dev/shm --json "$out/bench.json" --warmup 5 --frames 20 2>&1
} 2>&1 | tee "$log"
