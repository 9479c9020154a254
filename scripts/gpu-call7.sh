#!/bin/bash
# One device call (kind nvidia-h200-x2): a COPC made by `pcv convert` from a terrain LAS written there,
# streamed under a budget below its size (issue 12) vs its source loaded resident, on the same flight.
# Carry: .gpu/lod (pcv). Writes $OUT (<= 8 files).
set -u
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
pcv=.gpu/lod/pcv
n=${PCV_COPC_POINTS:-300M}; budget=${PCV_LOD_BUDGET:-40M}
dir=/dev/shm/pcv-copc; mkdir -p "$dir"
export PCV_REQUIRE_CUDA=1 NCCL_NVLS_ENABLE=0
count=$(python3 -c "s='$n'.upper(); m={'K':1e3,'M':1e6,'B':1e9}; print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))")
{
  echo "== $(nproc) cores; writing $count points of terrain LAS"
  t0=$(date +%s)
  timeout 150 python3 scripts/gpu-terrain-las.py "$dir/terrain.las" "$count" --size-m 3000 | tail -2
  echo "written in $(( $(date +%s) - t0 )) s: $(du -h "$dir/terrain.las" | cut -f1)"
  echo "== pcv convert to COPC (all cores)"
  PCV_COPC_PHASES=1 timeout 200 /usr/bin/time -v $pcv convert "$dir/terrain.las" -o "$dir/terrain.copc.laz" 2>&1 | grep -E "pcv|phase|Elapsed|Maximum resident|Percent of CPU|error"
  ls -l "$dir"
  $pcv info "$dir/terrain.copc.laz" | head -30
} 2>&1 | tee "$out/copc.log"
{
  if [ -f "$dir/terrain.copc.laz" ]; then
    echo "== LOD: the COPC streamed with --point-budget $budget, then its source LAS loaded whole"
    # A flight over the 3 km terrain in its own (file) coordinates: overview from the south-west, down
    # to 30 m above the ground, then along it (scripts/terrain-flight.json).
    OUT=/tmp/lodcopc PCV_LOD_COPC="$dir/terrain.copc.laz" PCV_LOD_RESIDENT="$dir/terrain.las" PCV_LOD_PATH=scripts/terrain-flight.json \
      PCV_LOD_BUDGET=$budget timeout 330 bash scripts/gpu-lod.sh 2>&1 | tail -25
    cp /tmp/lodcopc/table.md "$out/lod-copc-table.md" 2>/dev/null
    cp /tmp/lodcopc/refining.png "$out/copc-refining.png" 2>/dev/null
    cp /tmp/lodcopc/complete.png "$out/copc-complete.png" 2>/dev/null
    grep -hE "budget|first frame|complete|error" /tmp/lodcopc/streamed.log | head -12
  fi
} 2>&1 | tee "$out/lod-copc.log"
rm -rf "$dir"
