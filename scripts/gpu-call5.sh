#!/bin/bash
# One device call (kind nvidia-h200): the speed issue's checks and 1B bench after the kernel changes, the
# whole frame in a window, and the files issue's load bench (scripts/gpu-load-bench.sh).
# Prepare here: scripts/gpu-load-bench.sh --prepare; cargo test --release --test cuda_vs_cpu --no-run and
# copy that binary to .gpu/bin/cuda_vs_cpu; ../shared/gpu-machine/fetch-debs.sh (once) for .gpu/x and .gpu/gl.
# Carry: .gpu/x .gpu/gl .gpu/load .gpu/bin/cuda_vs_cpu .gpu/start-x.sh
set -u
final=${OUT:-/tmp/pcv-out}
stage=/tmp/pcv-stage; rm -rf "$stage"; mkdir -p "$stage"
pcv=.gpu/load/pcv
for f in .gpu/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; $pcv --version
  echo "== cuda_vs_cpu"
  .gpu/bin/cuda_vs_cpu --test-threads=1 --nocapture > "$stage/cuda_vs_cpu.log" 2>&1
  grep -E "^test |test result|panicked" "$stage/cuda_vs_cpu.log"
  grep -E "chunked|huge cloud" "$stage/cuda_vs_cpu.log" | head -4
  echo "== bench 1B, 1080p, every pose"
  $pcv bench --backend cuda --points 1B --mode reference,vis,culled,quant --warmup 5 --frames 15 --json "$stage/bench-1b.json" > "$stage/bench-1b.log" 2>&1
  grep -E "^ +1000000000" "$stage/bench-1b.log" | awk '{print $2, $4, $6, $(NF-5), $NF}'
} 2>&1 | tee "$stage/speed.log"
{
  echo "== the whole frame in a window, 1080p"
  source .gpu/start-x.sh
  $pcv bench --window --backend cuda --points 10M,1B --mode culled --warmup 10 --frames 60 --json "$stage/bench-window.json" 2>&1 | grep -v "^pcv: "
} 2>&1 | tee "$stage/window.log"
echo "== load bench"
OUT="$stage" PCV_PLY_POINTS=${PCV_PLY_POINTS:-200M} PCV_RUNS=${PCV_RUNS:-2} bash scripts/gpu-load-bench.sh 2>&1 | tail -40
python3 scripts/gpu-pack.py "$stage" "$final" --full first-las.png
