#!/usr/bin/env bash
# Installs whatever is missing (scripts/setup.sh), then runs every test: unit tests, the CPU rasterizer
# properties, golden images, the CLI, the window under Xvfb + Mesa, the PTX checks, and the CUDA-vs-CPU
# tests (which skip, saying why, on machines without a GPU).
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
cargo test --locked "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
# One closing line over every test binary: "tests: N passed, N failed, N skipped" (skipped = ignored).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1); if ($(i) ~ /^ignored;?$/) g += $(i-1) } }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, g }' "$log"
exit "$rc"
