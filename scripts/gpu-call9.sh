#!/bin/bash
# One device call (nvidia-h200): where a Python render call's time goes (PCV_PY_TRACE=1, the wheel of
# this commit in .gpu/py2), and the PyTorch example after its RGB fix. Carry: .gpu/py2.
set -u
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --target "$site" .gpu/py2/pcv-*.whl 2>&1 | tail -1 || for w in .gpu/py2/pcv-*.whl; do python3 -m zipfile -e "$w" "$site"; done
export PYTHONPATH=$site PYTHONUNBUFFERED=1
{
  echo "== Python: phases of a render call (100M CuPy points, 1920x1080, out=frame)"
  PCV_PY_TRACE=1 timeout 120 python3 - <<'PY' 2>&1 | tail -40
import time, cupy as cp, pcv
n = 100_000_000
rng = cp.random.default_rng(1)
pos = rng.uniform(-50, 50, size=(n, 3), dtype=cp.float32)
col = rng.integers(0, 256, size=(n, 3), dtype=cp.int32).astype(cp.uint8)
cam = pcv.Camera((-90.0, -70.0, 60.0), 38.0, -28.0, up="z", near=0.5, far=400.0)
frame = pcv.render(pos, col, camera=cam, size=(1920, 1080))
cp.cuda.Device().synchronize()
for k in range(12):
    t = time.perf_counter(); pcv.render(pos, col, camera=cam, size=(1920, 1080), out=frame); w = (time.perf_counter() - t) * 1e3
    if k >= 9: print(f"python wall {w:.3f} ms; stats {frame.stats}", flush=True)
PY
  echo "== examples/python/torch_to_png.py"
  timeout 60 python3 examples/python/torch_to_png.py -o "$out/torch_frame.png" 2>&1 | tail -5; echo "rc=$?"
} 2>&1 | tee "$out/python-trace.log"
