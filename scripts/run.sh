#!/usr/bin/env bash
# Installs whatever is missing (scripts/setup.sh), builds pcv in release mode and opens the viewer on the
# built-in scene (10M points). Extra arguments go to pcv: scripts/run.sh --points 50M --backend cpu
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/setup.sh"
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo run --locked --release -- "$@"
