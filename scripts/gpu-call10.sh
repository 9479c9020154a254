#!/bin/bash
# Issue 10 item 3 on the two-H200 machine (device kind nvidia-h200-x2): files streamed to the devices and
# level of detail, both split across the GPUs; the viewer's window with --gpus 2.
#
# Here:  scripts/gpu-multi.sh --prepare && scripts/gpu-load-bench.sh --prepare && cp .gpu/load/load_bench .gpu/multi/
#        (pcv + the multi_gpu test binary in .gpu/multi, load_bench in .gpu/load)
# There: bash scripts/gpu-call10.sh    carry [".gpu/multi", ".gpu/x", ".gpu/gl", ".gpu/start-x.sh"]
# Steps (each with its own time limit; about 8 minutes in all):
#   1. tests/multi_gpu.rs on two GPUs (every test: scene, host cloud, streamed file, LOD pool) and the two
#      new tests with two shares of one GPU;
#   2. a 2B-point LAS written to /dev/shm; `pcv render` of it on one GPU and on two (time from start to
#      the PNG, host peak), `pcv bench` of the file with --gpus 1,2 (frame ms per pose);
#   3. level of detail across GPUs: `pcv record --measure` of the built-in 1B scene with a 100M budget on
#      one GPU and on two (first frame, p99, complete after the stop);
#   4. the window: `pcv FILE --gpus 2` under Xvfb + NVIDIA GLX, 60 frames, a screenshot.
# Writes to $OUT: summary.log tests.log load.log lod.log window.log window-gpus2.png lod-gpus2.png
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
pcv=.gpu/multi/pcv
export PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1 NCCL_NVLS_ENABLE=0 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 ))s"; }
sum=$out/summary.log
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader; $pcv --version; nproc; } > "$sum" 2>&1

echo "== 1. multi_gpu on two GPUs ($(elapsed))" | tee -a "$sum"
PCV_TEST_GPUS=2 timeout 200 .gpu/multi/multi_gpu --test-threads=1 --nocapture > "$out/tests.log" 2>&1
echo "exit $?" >> "$out/tests.log"
echo "======== PCV_TEST_GPUS=1 (two shares of GPU 0), the new tests" >> "$out/tests.log"
PCV_TEST_GPUS=1 timeout 100 .gpu/multi/multi_gpu --test-threads=1 --nocapture streamed level_of_detail >> "$out/tests.log" 2>&1
echo "exit $?" >> "$out/tests.log"
grep -E "^test |test result|panicked|exit " "$out/tests.log" | tee -a "$sum"

echo "== 2. a 2B-point LAS streamed to one and two GPUs ($(elapsed))" | tee -a "$sum"
las=/dev/shm/big-2B.las
{
  s=$(date +%s)
  timeout 200 .gpu/multi/load_bench --write-las 2B "$las" --laz-format 0 2>&1 | tail -2
  echo "written in $(( $(date +%s) - s )) s: $(ls -la $las 2>&1)"
  for g in 1 2; do
    echo "-- pcv render $las --gpus $g"
    s=$(date +%s%N)
    timeout 120 /usr/bin/time -f "peak host RSS %M KiB" $pcv render "$las" --backend cuda --gpus $g --size 1920x1080 -o "$out/load-gpus$g.png" 2>&1 | grep -vE "^\s*[0-9.]+%|\r" | tail -6
    echo "gpus $g: $(( ($(date +%s%N) - s) / 1000000 )) ms from start to the PNG"
  done
  echo "-- pcv bench $las --gpus 1,2"
  timeout 200 $pcv bench "$las" --backend cuda --gpus 1,2 --mode culled --warmup 5 --frames 15 --json "$out/bench-file.json" 2>&1 | grep -v "^pcv: " | tail -30
  echo "exit $?"
} > "$out/load.log" 2>&1
grep -E "gpus [12]:|written|peak host|exit|error|Error" "$out/load.log" | tee -a "$sum"

echo "== 3. level of detail across GPUs ($(elapsed))" | tee -a "$sum"
cat > /tmp/path.json <<'EOF'
{"frame": "file", "keyframes": [
  {"t": 0, "camera": "-3,0,0,0,0"},
  {"t": 3, "camera": "-1.2,0,0.1,0,-3"},
  {"t": 6, "camera": "-0.3,0.3,0.1,-30,-8"},
  {"t": 8, "camera": "0.4,0.6,0.0,-80,-5"},
  {"t": 10, "camera": "0.5,0.7,0.0,-110,-5"}
]}
EOF
{
  for g in 1 2; do
    echo "-- record --lod --points 1B --point-budget 100M --gpus $g"
    timeout 150 $pcv record --lod --points 1B --point-budget 100M --gpus $g --backend cuda --size 1920x1080 --path /tmp/path.json \
      --point-size adaptive --edl --background gradient -o /tmp/frames$g --measure "$out/lod-gpus$g.json" 2>&1 | grep -E "pcv:|first|flight|complete|memory|error|Error" | head -20
    echo "exit $?"
    python3 -c "
import json; x=json.load(open('$out/lod-gpus$g.json')); f=x['flight']
print('gpus $g: first frame %.0f ms, p50 %.2f p99 %.2f ms, complete after stop %s ms, drawn %.1fM, device peak %.2f GB' % (x['first_frame_ms'], f['p50_ms'], f['p99_ms'], x['complete_after_stop_ms'], x['mean_drawn_points']/1e6, (x['device_memory_peak_bytes'] or 0)/1e9))" 2>&1
  done
  cp /tmp/frames2/complete.png "$out/lod-gpus2.png" 2>/dev/null
} > "$out/lod.log" 2>&1
grep -E "^gpus|exit|rror" "$out/lod.log" | tee -a "$sum"

echo "== 4. the window with --gpus 2 ($(elapsed))" | tee -a "$sum"
{
  if [ -d .gpu/x ]; then
    source .gpu/start-x.sh
    timeout 120 $pcv "$las" --backend cuda --gpus 2 --size 1920x1080 --frames 60 --screenshot "$out/window-gpus2.png" 2>&1 | grep -vE "^\s*[0-9.]+%" | tail -8
    echo "exit $?"
  else
    echo "no .gpu/x carried: window skipped"
  fi
} > "$out/window.log" 2>&1
tail -4 "$out/window.log" | tee -a "$sum"
rm -f "$las"
echo "== done ($(elapsed))" | tee -a "$sum"
