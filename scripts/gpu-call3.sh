#!/bin/bash
# One device call: the speed checks and bench (scripts/gpu-speed.sh), an Nsight Compute profile of the
# culled modes' raster kernel at 1B points, and the viewer as a user meets it (scripts/gpu-nav.sh);
# outputs packed by scripts/gpu-pack.py (the device tool brings back at most 8 files).
set -u
final=${OUT:-/tmp/pcv-out}
stage=/tmp/pcv-stage; rm -rf "$stage"; mkdir -p "$stage"
export OUT=$stage
bash scripts/gpu-speed.sh "${1:-10M,100M,1B}" "${2:-reference,vis,culled,quant}"
echo "== ncu: pcv_raster_list at 1B points, start pose, culled and quant (after warm-up)"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
for mode in culled quant; do
  timeout 240 "$ncu" --clock-control none --kernel-name regex:pcv_raster_list --launch-skip 12 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
    .gpu/bin/pcv bench --backend cuda --points 1B --mode $mode --warmup 6 --frames 1 > "$stage/ncu-$mode.txt" 2>&1
  grep -E "Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Compute \(SM\) Throughput|L2 Hit|Stall|Warp Cycles Per Issued" "$stage/ncu-$mode.txt" | head -20
done
bash scripts/gpu-nav.sh "${3:-4}"
python3 scripts/gpu-pack.py "$stage" "$final" --full first-terrain.png first-bunny.png picked-cuda.png
