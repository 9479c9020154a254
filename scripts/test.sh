#!/usr/bin/env bash
# Installs whatever is missing (scripts/setup.sh), then runs every test: unit tests, the CPU rasterizer
# properties, golden images, the CLI, the window under Xvfb + Mesa, the PTX checks, and the CUDA-vs-CPU
# tests (which skip, saying why, on machines without a GPU).
# Then the Python module's tests (scripts/test-python.sh: its wheel, pytest) and the Windows smoke test
# (scripts/test-windows.sh: pcv.exe cross-built, run under wine and compared with the Linux binary) when no
# extra arguments narrow the run, or PCV_PYTHON_TESTS=1 / PCV_WINDOWS=1; =0 leaves either out.
# Usage: scripts/test.sh [extra cargo test arguments]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/setup.sh"
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
# Mesa's software GL for the window test, whatever GPU the machine has.
export LIBGL_ALWAYS_SOFTWARE="${LIBGL_ALWAYS_SOFTWARE:-1}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
# Every workspace member: the app's tests and each crate's own (model, io, laz, camera, render, lod, py).
cargo test --locked --workspace "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
# The Python module (py/): its wheel built once, pytest on the numpy path (scripts/test-python.sh).
if [ "${PCV_PYTHON_TESTS:-}" = 1 ] || { [ "${PCV_PYTHON_TESTS:-}" != 0 ] && [ $# -eq 0 ]; }; then
  "$root/scripts/test-python.sh" 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
else
  echo "test.sh: the Python tests were left out (cargo arguments given or PCV_PYTHON_TESTS=0)"
fi
if [ "${PCV_WINDOWS:-}" = 1 ] || { [ "${PCV_WINDOWS:-}" != 0 ] && [ $# -eq 0 ]; }; then
  "$root/scripts/test-windows.sh" 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
else
  echo "test.sh: the Windows smoke test was left out (cargo arguments given or PCV_WINDOWS=0)"
fi
set -e
# One closing line over every test binary: "tests: N passed, N failed, N skipped" (skipped = ignored).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1); if ($(i) ~ /^ignored;?$/) g += $(i-1) } }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, g }' "$log"
exit "$rc"
