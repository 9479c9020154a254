#!/bin/bash
# Issue 10 (two GPUs, NCCL composite) on the device tool's two-H200 machine (kind nvidia-h200-x2).
#
# Here (build machine):  scripts/gpu-multi.sh --prepare
#   builds the release pcv and the multi_gpu test binary with the kernels embedded (PCV_REQUIRE_KERNELS=1),
#   puts them, stripped, in the git-ignored .gpu/multi/ and prints the device `run` arguments.
# There (from the checkout's root):  bash scripts/gpu-multi.sh
#   1. tests/multi_gpu.rs with PCV_TEST_GPUS=1: two shares of GPU 0 through a one-rank NCCL communicator
#   2. the same with PCV_TEST_GPUS=2: a share on each GPU, composited by NCCL over both
#   3. pcv bench --gpus 1,2 on 2B points, 1920x1080 and 3840x2160, packed/vis/culled, every bench pose
#      (frame ms, the composite's ms on its own as the `composite` pass), and --gpus 1 --gpu-shares 2
#   4. the largest built-in scene that renders on two GPUs (14B down to 10B) and on one, then a bench of it
# Writes to $OUT (8 files): summary.log tests.log bench.log bench-{1080,2160}-gpus{1,2}.json composite.png
# and prints the summary. Each step has its own time limit; the whole run stays under 8 minutes.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=.gpu/multi

if [ "${1:-}" = --prepare ]; then
  set -e
  [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
  export PCV_REQUIRE_KERNELS=1
  cargo build --release
  exe=$(cargo test --release --test multi_gpu --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "multi_gpu":
        print(m["executable"])
')
  [ -n "$exe" ] || { echo "gpu-multi: no multi_gpu test executable" >&2; exit 1; }
  mkdir -p "$dir"
  rm -f "$dir"/*
  install -m 755 target/release/pcv "$dir/pcv"
  install -m 755 "$exe" "$dir/multi_gpu"
  strip "$dir"/* 2>/dev/null || true
  # The kernels must be inside: a build without nvcc would only say so in a warning.
  strings "$dir/pcv" | grep -q pcv_words_gather || { echo "gpu-multi: $dir/pcv has no composite kernel (no nvcc?)" >&2; exit 1; }
  du -ch "$dir"/* | tail -1
  echo "run: command='bash scripts/gpu-multi.sh' carry=[\"$dir\"] kind=nvidia-h200-x2 timeout_s=600"
  exit 0
fi

out=${OUT:-/tmp/pcv-out}
mkdir -p "$out"
pcv=$dir/pcv
export PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1
# pcv sets NCCL_NVLS_ENABLE=0 itself when unset; set here too, so that every log says so.
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 ))s"; }
sum=$out/summary.log

{
  echo "== machine"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  nvidia-smi topo -m 2>/dev/null | head -6
  $pcv --version
  echo "NCCL libraries present:"; ls /opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so* 2>/dev/null
  echo "PCV_NCCL_LIBRARY=${PCV_NCCL_LIBRARY:-unset} NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
} > "$sum" 2>&1

echo "== 0. NCCL smoke: pcv render --gpus 2 at 10M points ($(elapsed))" | tee -a "$sum"
# A machine with no network may need NCCL's bootstrap on loopback, a small /dev/shm NCCL's shared-memory
# transport off: each fallback is tried only when the plain run fails, and kept for the rest.
smoke() { timeout 60 $pcv render --backend cuda --gpus 2 --points 10M --size 640x360 -o /tmp/smoke.png >> "$sum" 2>&1; }
if ! smoke; then
  export NCCL_SOCKET_IFNAME=lo; echo "retrying with NCCL_SOCKET_IFNAME=lo" | tee -a "$sum"
  if ! smoke; then
    export NCCL_SHM_DISABLE=1; echo "retrying with NCCL_SHM_DISABLE=1 too" | tee -a "$sum"
    smoke || { export NCCL_DEBUG=INFO; smoke; echo "NCCL smoke failed (NCCL_DEBUG=INFO above)" | tee -a "$sum"; }
  fi
fi
tail -2 "$sum"

echo "== 1. multi_gpu, one GPU, two shares ($(elapsed))" | tee -a "$sum"
PCV_TEST_GPUS=1 timeout 150 $dir/multi_gpu --test-threads=1 --nocapture > "$out/tests.log" 2>&1
echo "exit $?" >> "$out/tests.log"
grep -E "^test |test result|panicked|vs " "$out/tests.log" | tee -a "$sum"
echo "== 2. multi_gpu, two GPUs ($(elapsed))" | tee -a "$sum"
echo "======== PCV_TEST_GPUS=2" >> "$out/tests.log"
PCV_TEST_GPUS=2 timeout 150 $dir/multi_gpu --test-threads=1 --nocapture >> "$out/tests.log" 2>&1
echo "exit $?" >> "$out/tests.log"
sed -n '/PCV_TEST_GPUS=2/,$p' "$out/tests.log" | grep -E "^test |test result|panicked|vs " | tee -a "$sum"

echo "== 3. bench 2B ($(elapsed))" | tee -a "$sum"
{
  for size in 1920x1080 3840x2160; do
    tag=${size#*x}
    timeout 150 $pcv bench --backend cuda --gpus 1,2 --points 2B --size "$size" --mode packed,vis,culled \
      --warmup 5 --frames 15 --json "$out/bench-$tag.json"
    echo "exit $?"
  done
  echo "== one GPU, two shares (the composite's cost on one device), 1080p"
  timeout 90 $pcv bench --backend cuda --gpus 1 --gpu-shares 2 --points 2B --mode culled --warmup 5 --frames 15
  echo "exit $?"
  timeout 60 $pcv render --gpus 2 --points 2B --size 960x540 -o "$out/composite.png"
  echo "exit $?"
} > "$out/bench.log" 2>&1
grep -E "^pcv bench|exit|error" "$out/bench.log" | tee -a "$sum"

echo "== 4. largest cloud ($(elapsed))" | tee -a "$sum"
probe() {  # probe GPUS COUNTS...: the first count that renders
  local g=$1; shift
  for n in "$@"; do
    [ $(( $(date +%s) - t0 )) -lt 400 ] || { echo "probe: out of time before $n"; return 1; }
    echo "-- --gpus $g --points $n"
    timeout 120 $pcv render --backend cuda --gpus "$g" --points "$n" --size 1920x1080 -o /tmp/probe.png > /tmp/probe.log 2>&1
    local rc=$?
    tail -3 /tmp/probe.log
    if [ $rc = 0 ]; then echo "largest on $g GPU(s): $n"; best=$n; return 0; fi
  done
  return 1
}
{
  best=""
  probe 2 14B 13.5B 13B 12.5B 12B 11B 10B && best2=$best || best2=""
  best=""
  probe 1 7B 6.5B 6B 5B && best1=$best || best1=""
  if [ -n "$best2" ] && [ $(( $(date +%s) - t0 )) -lt 420 ]; then
    echo "== bench of $best2 points on two GPUs, 1080p, culled"
    timeout 120 $pcv bench --backend cuda --gpus 2 --points "$best2" --mode culled --warmup 3 --frames 10
    echo "exit $?"
  fi
  echo "largest: two GPUs ${best2:-none}, one GPU ${best1:-none}"
} >> "$out/bench.log" 2>&1
grep -E "^largest|^ +[0-9]{10,} +culled" "$out/bench.log" | tee -a "$sum"

echo "== table: frame ms (median) by GPUs; composite ms on its own ($(elapsed))" | tee -a "$sum"
python3 - "$out" <<'EOF' 2>&1 | tee -a "$sum"
import glob, json, os, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "bench-*-gpus*.json"))):
    g = f.rsplit("gpus", 1)[1].split(".")[0]
    for r in json.load(open(f))["results"]:
        comp = dict((p[0], p[1]) for p in r["passes"]).get("composite")
        key = (r["height"], r["pose"], r["mode"])
        rows.setdefault(key, {})[g] = (r["frame"]["median_ms"], comp["median_ms"] if comp else None)
print("%-6s %-9s %-7s %10s %10s %12s" % ("size", "pose", "mode", "1 GPU ms", "2 GPUs ms", "composite ms"))
for (h, pose, mode), v in sorted(rows.items()):
    one, two = v.get("1", (None, None)), v.get("2", (None, None))
    fmt = lambda x: "-" if x is None else "%.3f" % x
    print("%-6s %-9s %-7s %10s %10s %12s" % (h, pose, mode, fmt(one[0]), fmt(two[0]), fmt(two[1])))
EOF
echo "done in $(elapsed)" | tee -a "$sum"
