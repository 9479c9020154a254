#!/usr/bin/env bash
# Prepares a run on the GPU machine (the device tool): builds here, gathers what must travel into the
# git-ignored folder .gpu/, and prints the device `run` arguments.
#
#   .gpu/bin/pcv                  the release binary (stripped)
#   .gpu/bin/<test>               every integration/unit test binary of `cargo test --release` (stripped)
#   .gpu/bin/checks.sh            the headless checks: CUDA-vs-CPU and PTX tests, `pcv render` cuda vs cpu
#   .gpu/start-x.sh               Xvfb + NVIDIA GLX for windowed runs (from ../shared/gpu-machine)
#   .gpu/seed_numba_bench.py      the prototype's kernels, as a peer benchmark (from ../shared/peers)
#   .gpu/gl, .gpu/x               Debian packages (libglvnd; Xvfb + Mesa), fetched once by fetch-debs.sh
#
# Usage: scripts/gpu-prepare.sh [--headless | --windowed]
#   --headless (default)  the run carries .gpu/gl and .gpu/bin only (the X bundle, 46 MB, stays here)
#   --windowed            the run carries all of .gpu (X bundle included): keep the binaries small
# Everything carried must stay under the device tool's 64 MiB.
set -euo pipefail
mode=headless
for a in "$@"; do
  case "$a" in
    --headless) mode=headless ;;
    --windowed) mode=windowed ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "gpu-prepare: unknown argument $a" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
shared="$root/../shared"
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
mkdir -p .gpu/bin
if [ ! -d .gpu/gl ] || [ -z "$(ls .gpu/gl/*.deb 2>/dev/null)" ]; then
  echo "gpu-prepare: fetching the GL/X packages (.gpu/gl, .gpu/x)"
  "$shared/gpu-machine/fetch-debs.sh"
fi
cp "$shared/gpu-machine/start-x.sh" .gpu/start-x.sh
cp "$shared/peers/seed_numba_bench.py" .gpu/seed_numba_bench.py

echo "gpu-prepare: cargo build --release"
cargo build --release
echo "gpu-prepare: cargo test --release --no-run"
# Each test executable is a compiler-artifact message with a non-null "executable" and profile.test.
tests=$(cargo test --release --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        kind = m["target"]["kind"][0]
        name = m["target"]["name"] + ("-" + kind + "-unit" if kind in ("lib", "bin") else "")
        print(name, m["executable"])
')
[ -n "$tests" ] || { echo "gpu-prepare: cargo reported no test executables" >&2; exit 1; }

rm -f .gpu/bin/*
install -m 755 target/release/pcv .gpu/bin/pcv
while read -r name exe; do
  install -m 755 "$exe" ".gpu/bin/$name"
done <<<"$tests"
strip .gpu/bin/* 2>/dev/null || true

# The headless checks, run there from the checkout's root: logs go to $OUT (at most 8 files come back).
cat > .gpu/bin/checks.sh <<'EOF'
#!/bin/bash
# Headless checks on the GPU machine, from the checkout's root: bash .gpu/bin/checks.sh
# Logs go to $OUT (at most 8 files come back): env.log ptx.log cuda_vs_cpu.log memcheck.log render.log
# cuda.png cpu.png. Exit status 0 when every check passed.
set -u
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
for f in .gpu/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1 PCV_REQUIRE_GL=1
rc=0
step() { local name=$1; shift; echo "== $name: $*"; "$@"; local r=$?; echo "== $name: exit $r"; [ $r = 0 ] || rc=1; }
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; .gpu/bin/pcv --version; } >"$out/env.log" 2>&1
step ptx .gpu/bin/ptx --nocapture >"$out/ptx.log" 2>&1
step cuda_vs_cpu .gpu/bin/cuda_vs_cpu --test-threads=1 --nocapture >"$out/cuda_vs_cpu.log" 2>&1
# Out-of-bounds and misaligned accesses of the kernels, on the smaller tests. API errors are not reported:
# the error-path test provokes some on purpose (a PTX .version 99.9 refused) and checks each result itself.
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -n "$cs" ]; then
  step memcheck "$cs" --tool memcheck --report-api-errors no --error-exitcode 9 --print-limit 20 \
    .gpu/bin/cuda_vs_cpu --test-threads=1 \
    host_points errors device_target >"$out/memcheck.log" 2>&1
else
  echo "compute-sanitizer not found" >"$out/memcheck.log"
fi
{
  pose=${PCV_POSE:--3,0,0,0,0}
  for b in cuda cpu; do
    step "render-$b" .gpu/bin/pcv render --backend $b --points 10M --seed 1 --size 1920x1080 --camera="$pose" -o "$out/$b.png"
  done
  python3 - "$out/cuda.png" "$out/cpu.png" <<'PY'
import sys
import numpy as np
from PIL import Image
a, b = (np.asarray(Image.open(p).convert("RGBA")).astype(np.int64) for p in sys.argv[1:3])
differ = np.any(a != b, axis=-1)
covered = np.any(b[..., :3] != 0, axis=-1)
print(f"cuda vs cpu png: {a.shape[1]}x{a.shape[0]}, {int(covered.sum())} non-black pixels on cpu, "
      f"{int(differ.sum())} pixels differ ({100.0 * differ.sum() / differ.size:.4f}%)")
PY
} >"$out/render.log" 2>&1
cat "$out"/env.log; grep -hE "^== |test result|panicked|ERROR SUMMARY|differ \(" "$out"/*.log
echo "checks: exit $rc"
exit $rc
EOF
chmod 755 .gpu/bin/checks.sh

echo
du -sh .gpu/bin .gpu/gl .gpu/x 2>/dev/null || true
ls -la .gpu/bin
if [ "$mode" = headless ]; then
  total=$(du -sm .gpu/bin .gpu/gl .gpu/start-x.sh .gpu/seed_numba_bench.py | awk '{s+=$1} END {print s}')
  carry='[".gpu/gl", ".gpu/bin", ".gpu/start-x.sh", ".gpu/seed_numba_bench.py"]'
  cmd='bash .gpu/bin/checks.sh'
else
  total=$(du -sm .gpu | awk '{print $1}')
  carry='[".gpu"]'
  cmd='source .gpu/start-x.sh && .gpu/bin/pcv --frames 100 --screenshot $OUT/shot.png'
fi
echo
echo "gpu-prepare: $mode run, about ${total} MiB carried (limit 64 MiB with the source tree)"
[ "$total" -lt 60 ] || echo "gpu-prepare: WARNING: over ~60 MiB; carry fewer test binaries (e.g. .gpu/bin/pcv and the ones you run)" >&2
echo "device run arguments:"
echo "  carry:   $carry"
echo "  command: $cmd"
