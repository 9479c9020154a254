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
cargo test --locked "$@"
