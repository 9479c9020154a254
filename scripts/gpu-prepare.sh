#!/usr/bin/env bash
# Prepares a run on the GPU machine (the device tool): builds here, gathers what must travel into the
# git-ignored folder .gpu/, and prints the device `run` arguments of scripts/gpu.sh's scenarios.
#
#   .gpu/bin/pcv                  the release binary (stripped; the kernels embedded: PCV_REQUIRE_KERNELS=1)
#   .gpu/bin/<test>               every integration/unit test binary of `cargo test --release` (stripped)
#   .gpu/bin/build-paths          the path the test binaries run pcv at (CARGO_BIN_EXE_pcv, fixed when
#                                 they are built): `gpu.sh checks` links it to .gpu/bin/pcv there
#   .gpu/ex/load_bench, demo_data, external_bench   the examples the scenarios run (load-bench, laz,
#                                 multi-stream; nav; python)
#   .gpu/data/                    autzen_trim.las and autzen_trim_7.las (PDAL's test data) from /tmp/real,
#                                 when there (scenario laz)
#   .gpu/py/                      with --python: the abi3 wheel (maturin) and pytest's wheels (scenario python)
#   .gpu/z/pcv.xz, demo_data.xz   the same two binaries compressed, unpacked by gpu.sh (scenario filters)
#   .gpu/start-x.sh               Xvfb + NVIDIA GLX for windowed runs (from ../shared/gpu-machine)
#   .gpu/seed_numba_bench.py      the prototype's kernels, as a peer benchmark (from ../shared/peers)
#   .gpu/gl, .gpu/x               Debian packages (libglvnd; Xvfb + Mesa), fetched once by fetch-debs.sh
#
# Usage: scripts/gpu-prepare.sh [--headless | --windowed] [--python]
#   --headless (default)  the run printed first is `bash scripts/gpu.sh checks`, carrying .gpu/gl and
#                         .gpu/bin (the X bundle, 46 MB, stays here)
#   --windowed            the run printed first is `bash scripts/gpu.sh window`, carrying the X bundle and
#                         .gpu/bin/pcv only
#   --python              also builds the Python module's wheel into .gpu/py (maturin) and downloads
#                         pytest's wheels into .gpu/py/wheels (pip), for `gpu.sh python`
# Then every scenario's run arguments follow (bash scripts/gpu.sh list says what each does). Everything
# carried must stay under the device tool's 64 MiB with the source tree: carry single files of .gpu/bin
# (as the scenarios' lines do) rather than the whole folder where it is large.
set -euo pipefail
mode=headless
python=0
for a in "$@"; do
  case "$a" in
    --headless) mode=headless ;;
    --windowed) mode=windowed ;;
    --python) python=1 ;;
    -h|--help) sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "gpu-prepare: unknown argument $a" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
shared="$root/../shared"
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
# The GPU machine has no nvcc: a build without the kernels must fail here, not there.
export PCV_REQUIRE_KERNELS=1

mkdir -p .gpu/bin .gpu/ex
if [ ! -d .gpu/gl ] || [ -z "$(ls .gpu/gl/*.deb 2>/dev/null)" ]; then
  echo "gpu-prepare: fetching the GL/X packages (.gpu/gl, .gpu/x)"
  "$shared/gpu-machine/fetch-debs.sh"
fi
cp "$shared/gpu-machine/start-x.sh" .gpu/start-x.sh
cp "$shared/peers/seed_numba_bench.py" .gpu/seed_numba_bench.py

target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
echo "gpu-prepare: cargo build --release (pcv and the examples load_bench, demo_data, external_bench)"
cargo build --release --bin pcv --example load_bench --example demo_data --example external_bench
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

rm -f .gpu/bin/* .gpu/ex/*
install -m 755 "$target_dir/release/pcv" .gpu/bin/pcv
while read -r name exe; do
  install -m 755 "$exe" ".gpu/bin/$name"
done <<<"$tests"
for e in load_bench demo_data external_bench; do install -m 755 "$target_dir/release/examples/$e" .gpu/ex/; done
strip .gpu/bin/* .gpu/ex/* 2>/dev/null || true
# pcv and demo_data compressed too (.gpu/z/*.xz, about 4.2 MB): with the X bundle (46 MB) and the source
# tree they fit the 64 MiB carry only so; scripts/gpu.sh unpacks them there (scenario filters).
mkdir -p .gpu/z
xz -T0 -6 -c .gpu/bin/pcv >.gpu/z/pcv.xz
xz -6 -c .gpu/ex/demo_data >.gpu/z/demo_data.xz
# Tests that spawn pcv (env!("CARGO_BIN_EXE_pcv"): tests/lod.rs and others) run it at this path.
echo "pcv=$target_dir/release/pcv" > .gpu/bin/build-paths

if ls /tmp/real/autzen_trim.las /tmp/real/autzen_trim_7.las >/dev/null 2>&1; then
  mkdir -p .gpu/data
  install -m 644 /tmp/real/autzen_trim.las /tmp/real/autzen_trim_7.las .gpu/data/
fi

if [ "$python" = 1 ]; then
  echo "gpu-prepare: the Python wheel (maturin) and pytest's wheels into .gpu/py"
  rm -rf .gpu/py && mkdir -p .gpu/py/wheels
  # maturin from scripts/test-python.sh's venv when it has one, else from PATH.
  if "$root/.tools/py-venv/bin/python" -m maturin --version >/dev/null 2>&1; then
    "$root/.tools/py-venv/bin/python" -m maturin build --release -m py/Cargo.toml -o .gpu/py
  else
    maturin build --release -m py/Cargo.toml -o .gpu/py
  fi
  python3 -m pip download -q --only-binary=:all: --python-version 3.12 --platform any -d .gpu/py/wheels pytest
fi

echo
du -sh .gpu/bin .gpu/ex .gpu/data .gpu/py .gpu/gl .gpu/x 2>/dev/null || true
ls -la .gpu/bin .gpu/ex
if [ "$mode" = headless ]; then
  total=$(du -sm .gpu/bin .gpu/gl | awk '{s+=$1} END {print s}')
  carry='[".gpu/gl", ".gpu/bin"]'
  cmd='bash scripts/gpu.sh checks'
else
  total=$(du -sm .gpu/gl .gpu/x .gpu/start-x.sh .gpu/bin/pcv | awk '{s+=$1} END {print s}')
  carry='[".gpu/gl", ".gpu/x", ".gpu/start-x.sh", ".gpu/bin/pcv"]'
  cmd='bash scripts/gpu.sh window'
fi
echo
echo "gpu-prepare: $mode run, about ${total} MiB carried (limit 64 MiB with the source tree)"
[ "$total" -lt 60 ] || echo "gpu-prepare: WARNING: over ~60 MiB; carry fewer test binaries (e.g. .gpu/bin/pcv and the ones you run)" >&2
echo "device run arguments:"
echo "  carry:   $carry"
echo "  command: $cmd"
echo
echo "every scenario (command: bash scripts/gpu.sh NAME; timeout_s 600; bash scripts/gpu.sh list for what each does):"
bash scripts/gpu.sh list --run
