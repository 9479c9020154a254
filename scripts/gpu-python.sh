#!/usr/bin/env bash
# The Python module on the GPU machine (no network, no Rust; python3 with torch, cupy, numba, jax, numpy):
# installs the abi3 wheel built on the dev machine (.gpu/py/pcv-*.whl, with pytest's wheels in
# .gpu/py/wheels for a python3 without pytest), then, each step bounded so the whole run stays under 4
# minutes:
#   1. pytest py/tests (-rs: skips say why): CuPy, PyTorch, Numba, JAX inputs against the CPU backend's
#      image, frames to torch/cupy in place (pointer equality), no device or host copy of 20M points, a
#      producer kernel on a side stream finished before pcv reads (DLPack and CAI routes), and the CPU suite;
#   2. examples/external_bench (.gpu/py/external_bench): render_external from Rust, and the CLI's
#      upload + vis/culled, 100M points at 1920x1080;
#   3. py/bench/bench_render.py: the same from Python (CuPy, CAI, PyTorch), the overhead over Rust, device
#      memory taken, host RSS growth, repack costs, the host-copy path, Viewer.update + frame for 10M points;
#   4. examples/python: torch_to_png.py, numpy_las_like.py (PNGs) and cupy_animated.py (60 steps, Xvfb).
# Logs and images go to $OUT (8 files at most): pytest.log, bench-rust.log, bench-python.log, bench.json,
# bench.md, examples.log, torch_frame.png, las_like.png.
# Build the carried files on the dev machine first (see the README's Python section):
#   maturin build --release -m py/Cargo.toml -o .gpu/py
#   cargo build --release --example external_bench && cp target/release/examples/external_bench .gpu/py/
#   pip download --only-binary=:all: --python-version 3.12 --platform any -d .gpu/py/wheels pytest
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
OUT=${OUT:-/tmp/pcv-gpu-python}
mkdir -p "$OUT"
site=$(mktemp -d /tmp/pcv-site.XXXXXX)
start=$(date +%s)
log="$OUT/pytest.log"
{
  echo "== $(date -u) on $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  python3 --version
  # A wheel is a zip: without pip, unpacking it into the site folder installs it as well.
  python3 -m pip install --no-index --no-deps --target "$site" .gpu/py/pcv-*.whl 2>&1 | tail -2 \
    || for w in .gpu/py/pcv-*.whl; do python3 -m zipfile -e "$w" "$site"; done
  python3 -c "import pytest" 2>/dev/null || python3 -m pip install --no-index --no-deps --target "$site" .gpu/py/wheels/*.whl 2>&1 | tail -1 \
    || for w in .gpu/py/wheels/*.whl; do python3 -m zipfile -e "$w" "$site"; done
} >"$log" 2>&1
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
python3 -c "import pcv, sys; print('pcv', pcv.__version__, pcv.__file__); print(pcv.backends())" >>"$log" 2>&1
# A virtual display for the window (Viewer tests, the bench's update figure, cupy_animated).
xvfb_pid=""
if [ -z "${DISPLAY:-}" ] && command -v Xvfb >/dev/null 2>&1; then
  Xvfb :87 -screen 0 1920x1200x24 -nolisten tcp >/dev/null 2>&1 &
  xvfb_pid=$!
  export DISPLAY=:87
  sleep 1
fi
echo "DISPLAY=${DISPLAY:-none} (Xvfb pid ${xvfb_pid:-none})" >>"$log"

echo "== 1. pytest" >>"$log"
timeout 100 python3 -m pytest -p no:cacheprovider -rs -v py/tests >>"$log" 2>&1
echo "pytest rc=$? after $(( $(date +%s) - start )) s" >>"$log"

echo "== 2. Rust: external_bench 100M" >"$OUT/bench-rust.log"
timeout 45 .gpu/py/external_bench --points 100M --size 1920x1080 --repeat 20 >>"$OUT/bench-rust.log" 2>&1
echo "external_bench rc=$? after $(( $(date +%s) - start )) s" >>"$OUT/bench-rust.log"

echo "== 3. Python: bench_render 100M" >"$OUT/bench-python.log"
timeout 60 python3 py/bench/bench_render.py --points 100M --size 1920x1080 --repeat 20 --viewer-points 10M \
  --rust "$OUT/bench-rust.log" --json "$OUT/bench.json" --markdown "$OUT/bench.md" >>"$OUT/bench-python.log" 2>&1
echo "bench_render rc=$? after $(( $(date +%s) - start )) s" >>"$OUT/bench-python.log"

echo "== 4. examples" >"$OUT/examples.log"
timeout 20 python3 examples/python/torch_to_png.py -o "$OUT/torch_frame.png" >>"$OUT/examples.log" 2>&1
echo "torch_to_png rc=$?" >>"$OUT/examples.log"
timeout 15 python3 examples/python/numpy_las_like.py -o "$OUT/las_like.png" >>"$OUT/examples.log" 2>&1
echo "numpy_las_like rc=$?" >>"$OUT/examples.log"
timeout 20 python3 examples/python/cupy_animated.py --steps 60 --points 4000000 >>"$OUT/examples.log" 2>&1
echo "cupy_animated rc=$? after $(( $(date +%s) - start )) s" >>"$OUT/examples.log"

[ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null
rm -rf "$site"
echo "gpu-python: done in $(( $(date +%s) - start )) s; logs in $OUT"
