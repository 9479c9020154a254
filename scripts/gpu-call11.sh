#!/bin/bash
# One x2 device call: the multi-GPU tests (streamed files and the LOD pool across GPUs, after the fixes of
# the first run) and then scripts/gpu-lod-copc.sh (the node pool's copy stream and per-slot point sizes
# against the CPU twin; a 300M terrain COPC flown from the file, over HTTP and resident).
# Here: scripts/gpu-lod.sh --prepare && scripts/gpu-multi.sh --prepare
# There: bash scripts/gpu-call11.sh     carry [".gpu/lod", ".gpu/multi"], kind nvidia-h200-x2
set -u
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
export PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1 NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN
{
  echo "== multi_gpu, two GPUs"
  PCV_TEST_GPUS=2 timeout 150 .gpu/multi/multi_gpu --test-threads=1 --nocapture 2>&1 | grep -E "^test |test result|panicked|lod pose|streamed .*(start|top) |assert"
  echo "== multi_gpu, two shares of one GPU: the new tests"
  PCV_TEST_GPUS=1 timeout 100 .gpu/multi/multi_gpu --test-threads=1 --nocapture streamed level_of_detail 2>&1 | grep -E "^test |test result|panicked|lod pose|assert"
} > "$out/multi-tests.log" 2>&1
grep -E "^test |result|panicked" "$out/multi-tests.log"
bash scripts/gpu-lod-copc.sh
