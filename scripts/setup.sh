#!/usr/bin/env bash
# Installs what pcv needs to build and test on Debian 12 / Ubuntu 24.04 (root or sudo), idempotently:
#   - apt: a C toolchain, cmake and the X11 -dev headers (GLFW 3.4 is built from source by the glfw crate),
#     Mesa (software GL for the window tests), Xvfb and xauth (a virtual display), curl
#   - Rust (rustup, stable) when cargo is missing, with rustfmt and clippy
#   - the CUDA compiler from PyPI (nvidia-cuda-nvcc 13.0.* with nvidia-nvvm pinned to the same release, so the
#     PTX stays at .version <= 9.0 and loads on driver 580) into .tools/cuda, unless NVCC or CUDA_PATH names one
#     or PCV_NO_NVCC=1. crates/pcv-render/build.rs finds it there.
# Usage: scripts/setup.sh        (quiet when everything is already there)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

apt_pkgs=(build-essential cmake pkg-config curl ca-certificates python3 python3-pip python3-venv
  libx11-dev libxrandr-dev libxinerama-dev libxcursor-dev libxi-dev libxext-dev libxkbcommon-dev
  libgl1-mesa-dev libegl1-mesa-dev libgl1-mesa-dri mesa-utils xvfb xauth)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing apt packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] || {
    echo "setup: installing Rust (rustup)"
    curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >/dev/null
  }
  export PATH="$HOME/.cargo/bin:$PATH"
fi
# rustfmt and clippy: CI checks the formatting and the lints (.ci/run).
for tool in rustfmt clippy; do
  if ! cargo "${tool/rustfmt/fmt}" --version >/dev/null 2>&1 && command -v rustup >/dev/null 2>&1; then
    echo "setup: adding the Rust component $tool"
    rustup component add "$tool" >/dev/null
  fi
done

# The CUDA compiler. A user's own toolkit wins (NVCC, CUDA_PATH/CUDA_HOME, nvcc on PATH).
if [ "${PCV_NO_NVCC:-0}" != 1 ] && [ -z "${NVCC:-}" ] && [ -z "${CUDA_PATH:-}" ] && [ -z "${CUDA_HOME:-}" ] \
   && ! command -v nvcc >/dev/null 2>&1 && [ ! -x "$root/.tools/cuda/nvidia/cu13/bin/nvcc" ]; then
  echo "setup: installing nvcc 13.0 from PyPI into .tools/cuda"
  # A private venv's pip: the system's Python may refuse pip installs (PEP 668).
  [ -x "$root/.tools/venv/bin/pip" ] || python3 -m venv "$root/.tools/venv"
  "$root/.tools/venv/bin/pip" install -q --disable-pip-version-check --target "$root/.tools/cuda" \
    "nvidia-cuda-nvcc==13.0.*" "nvidia-nvvm==13.0.*" "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-crt==13.0.*" \
    || echo "setup: warning: could not install nvcc from PyPI; pcv will build CPU-only" >&2
  # A build made before this one is CPU-only: make cargo rerun crates/pcv-render/build.rs, which now finds nvcc.
  if [ -x "$root/.tools/cuda/nvidia/cu13/bin/nvcc" ]; then touch "$root/crates/pcv-render/build.rs"; fi
fi

# laspy with lazrs, in .tools/venv: the independent COPC reader of tests/copc.rs (skipped without it).
if [ "${PCV_NO_LASPY:-0}" != 1 ] && ! "$root/.tools/venv/bin/python" -c "import laspy, lazrs" >/dev/null 2>&1; then
  echo "setup: installing laspy[lazrs] from PyPI into .tools/venv (tests/copc.rs)"
  [ -x "$root/.tools/venv/bin/pip" ] || python3 -m venv "$root/.tools/venv"
  "$root/.tools/venv/bin/pip" install -q --disable-pip-version-check "laspy[lazrs]" \
    || echo "setup: warning: could not install laspy[lazrs]; tests/copc.rs skips its laspy check" >&2
fi

# tifffile (with numpy), in .tools/venv: the independent GeoTIFF reader of tests/raster.rs (skipped without it).
if [ "${PCV_NO_LASPY:-0}" != 1 ] && ! "$root/.tools/venv/bin/python" -c "import tifffile, numpy" >/dev/null 2>&1; then
  echo "setup: installing tifffile from PyPI into .tools/venv (tests/raster.rs)"
  [ -x "$root/.tools/venv/bin/pip" ] || python3 -m venv "$root/.tools/venv"
  "$root/.tools/venv/bin/pip" install -q --disable-pip-version-check tifffile numpy \
    || echo "setup: warning: could not install tifffile; tests/raster.rs skips its GeoTIFF checks" >&2
fi
