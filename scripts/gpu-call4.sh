#!/bin/bash
# One device call for the speed issue (after scripts/gpu-prepare.sh --windowed here, with the test
# binaries trimmed to cuda_vs_cpu and ptx): the CUDA-vs-CPU checks; the bench at 10M/100M/1B/6B, every
# pose, 1080p and 2160p; the prototype beside it at 10M/100M/1B; the whole frame in a window; Nsight
# Compute on the culled modes' raster kernel; a chart. Outputs packed by scripts/gpu-pack.py.
set -u
final=${OUT:-/tmp/pcv-out}
stage=/tmp/pcv-stage; rm -rf "$stage"; mkdir -p "$stage"
export OUT=$stage
pcv=.gpu/bin/pcv
bash scripts/gpu-speed.sh 10M,100M,1B reference,vis,culled,quant > /dev/null 2>&1
grep -E "^test |test result|ERROR SUMMARY|panicked" "$stage/speed.log"
mv "$stage/bench.json" "$stage/bench-1080p.json"; mv "$stage/speed.log" "$stage/speed-1080p.log"
echo "== 6B points, 1080p and 2160p"
for size in 1920x1080 3840x2160; do
  $pcv bench --backend cuda --points 6B --mode vis,culled,quant --size $size --warmup 5 --frames 15 --json "$stage/bench-6b-$size.json" > "$stage/bench-6b-$size.log" 2>&1
  grep -E "upload|skipped|error" "$stage/bench-6b-$size.log" | head -5
  grep -E "^ +6000000000" "$stage/bench-6b-$size.log" | awk '{print $2, $4, $6, $NF}'
done
echo "== 2160p, 10M/100M/1B"
$pcv bench --backend cuda --points 10M,100M,1B --mode reference,vis,culled,quant --size 3840x2160 --warmup 5 --frames 15 \
  --json "$stage/bench-2160p.json" > "$stage/bench-2160p.log" 2>&1
grep -E "^ +1000000000" "$stage/bench-2160p.log" | awk '{print $2, $4, $6, $NF}'
echo "== the prototype beside us, 1080p"
$pcv bench --backend cuda --points 10M,100M,1B --mode culled,quant --peer .gpu/seed_numba_bench.py --dump-dir /dev/shm \
  --warmup 5 --frames 15 --json "$stage/bench-peer.json" > "$stage/bench-peer.log" 2>&1
grep -E "^ +[0-9]+ +(culled|quant)" "$stage/bench-peer.log" | awk '{print $1, $2, $4, $6, $(NF-6), $(NF-5)}' | head -40
echo "== ncu, raster kernel at 1B start"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
for mode in culled quant; do
  timeout 200 "$ncu" --clock-control none --kernel-name regex:pcv_raster_list --launch-skip 12 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
    $pcv bench --backend cuda --points 1B --mode $mode --warmup 6 --frames 1 > "$stage/ncu-$mode.txt" 2>&1
  grep -E "^ +Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Compute \(SM\) Throughput" "$stage/ncu-$mode.txt" | head -6
done
echo "== the whole frame in a window (Xvfb + NVIDIA GLX, interop), 1080p"
source .gpu/start-x.sh
$pcv bench --window --backend cuda --points 10M,1B --mode culled,vis --warmup 10 --frames 60 --json "$stage/bench-window.json" 2>&1 | tee "$stage/bench-window.log" | grep -v "^pcv: "
$pcv bench --plot "$stage/chart.svg" --from "$stage/bench-peer.json" "$stage/bench-1080p.json" "$stage/bench-6b-1920x1080.json" 2>&1 | tail -1
python3 scripts/gpu-pack.py "$stage" "$final"
