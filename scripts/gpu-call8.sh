#!/bin/bash
# One device call (kind nvidia-h200-x2): the built-in 1B-point scene streamed from an in-memory octree
# under a 100M budget vs resident (scripts/gpu-lod.sh, issue 12); the two-GPU equality test again
# (issue 10, after its tie rule was fixed); where a Python render call's time goes (issue 9).
# Carry: .gpu/lod (pcv), .gpu/multi (multi_gpu), .gpu/py (the wheel). Writes $OUT (<= 8 files).
set -u
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
export PCV_REQUIRE_CUDA=1 NCCL_NVLS_ENABLE=0
OUT=/tmp/lod1b timeout 330 bash scripts/gpu-lod.sh 2>&1 | tail -25 | tee "$out/lod-1b.log"
for f in table.md refining.png complete.png; do cp /tmp/lod1b/$f "$out/lod-1b-$f" 2>/dev/null; done
grep -hE "budget|first frame|complete|error" /tmp/lod1b/streamed.log | head -12 >> "$out/lod-1b.log"
{
  echo "== multi_gpu, 2 GPUs"
  PCV_TEST_GPUS=2 timeout 150 .gpu/multi/multi_gpu --test-threads=1 --nocapture 2>&1 | grep -E "^test |test result|panicked|host close-up|scene close-up" | head -40
} 2>&1 | tee "$out/multi.log"
{
  echo "== Python: where a render call's time goes (100M CuPy points, 1920x1080)"
  site=$(mktemp -d); python3 -m pip install -q --no-index --no-deps --target "$site" .gpu/py/pcv-*.whl 2>&1 | tail -1
  PYTHONPATH=$site PCV_PY_TRACE=1 timeout 100 python3 - <<'PY' 2>&1 | tail -24
import time, cupy as cp, pcv
n = 100_000_000
rng = cp.random.default_rng(1)
pos = rng.uniform(-50, 50, size=(n, 3), dtype=cp.float32)
col = rng.integers(0, 256, size=(n, 3), dtype=cp.int32).astype(cp.uint8)
cam = pcv.Camera((-90.0, -70.0, 60.0), 38.0, -28.0, up="z", near=0.5, far=400.0)
frame = pcv.render(pos, col, camera=cam, size=(1920, 1080))
cp.cuda.Device().synchronize()
for k in range(20):
    t = time.perf_counter(); pcv.render(pos, col, camera=cam, size=(1920, 1080), out=frame); w = (time.perf_counter() - t) * 1e3
    if k >= 16: print(f"python wall {w:.3f} ms", flush=True)
t = time.perf_counter(); d = pos.__dlpack__(stream=1); print(f"cupy __dlpack__ alone {(time.perf_counter() - t) * 1e3:.3f} ms")
t = time.perf_counter(); c = pos.__cuda_array_interface__; print(f"cupy __cuda_array_interface__ alone {(time.perf_counter() - t) * 1e3:.3f} ms")
PY
} 2>&1 | tee "$out/python-trace.log"
