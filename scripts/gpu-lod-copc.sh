#!/bin/bash
# One device call (kind nvidia-h200, about 5 minutes; carry [".gpu/lod"], timeout_s 600) for issue 12's
# level-of-detail follow-ups: the CUDA checks of the node pool's copy stream and per-slot point sizes,
# then a 300M-point terrain COPC (written and converted there, as scripts/gpu-call7.sh did) flown
# streamed from the file, streamed over HTTP from a loopback range server, and resident.
#
# Here: scripts/gpu-lod.sh --prepare   (pcv and the cuda_vs_cpu test binary into .gpu/lod)
# There: bash scripts/gpu-lod-copc.sh
#
# Files in $OUT (<= 10): cuda_vs_cpu-pool.log (the two pool tests, PCV_REQUIRE_CUDA=1), copc.log (terrain,
# convert, pcv info), table.md (streamed / over HTTP / resident; targets; "after the stop ... limited by"),
# streamed.json, http.json, resident.json, refining.png, complete.png, http-complete.png, lod.log.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
pcv=.gpu/lod/pcv
n=${PCV_COPC_POINTS:-300M}; budget=${PCV_LOD_BUDGET:-40M}
dir=/dev/shm/pcv-copc; mkdir -p "$dir"
export PCV_REQUIRE_CUDA=1
{
  echo "== cuda_vs_cpu: the node pool (copy stream, per-slot spacing)"
  if [ -x .gpu/lod/cuda_vs_cpu ]; then
    timeout 120 .gpu/lod/cuda_vs_cpu pool --test-threads=1 --nocapture 2>&1 | grep -E "^test |test result|panicked|identical|frames to complete|differs" | head -40
  else
    echo "no .gpu/lod/cuda_vs_cpu (run scripts/gpu-lod.sh --prepare here)"
  fi
} 2>&1 | tee "$out/cuda_vs_cpu-pool.log"
count=$(python3 -c "s='$n'.upper(); m={'K':1e3,'M':1e6,'B':1e9}; print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))")
{
  echo "== $(nproc) cores; writing $count points of terrain LAS"
  t0=$(date +%s)
  timeout 200 python3 scripts/gpu-terrain-las.py "$dir/terrain.las" "$count" --size-m 3000 | tail -2
  echo "written in $(( $(date +%s) - t0 )) s: $(du -h "$dir/terrain.las" | cut -f1)"
  echo "== pcv convert to COPC (all cores)"
  timeout 200 /usr/bin/time -v $pcv convert "$dir/terrain.las" -o "$dir/terrain.copc.laz" 2>&1 | grep -E "pcv|Elapsed|Maximum resident|error"
  $pcv info "$dir/terrain.copc.laz" | grep -E "points|octree|level" | head -14
} 2>&1 | tee "$out/copc.log"
if [ -f "$dir/terrain.copc.laz" ]; then
  # The flight of scripts/gpu-call7.sh over the 3 km terrain (file coordinates; scripts/terrain-flight.json): overview, down to 35 m.
  OUT=/tmp/lodcopc PCV_LOD_COPC="$dir/terrain.copc.laz" PCV_LOD_RESIDENT="$dir/terrain.las" PCV_LOD_PATH=$root/scripts/terrain-flight.json \
    PCV_LOD_BUDGET=$budget PCV_LOD_HTTP=1 timeout 420 bash scripts/gpu-lod.sh 2>&1 | tail -40 | tee "$out/lod.log"
  for f in table.md streamed.json http.json resident.json refining.png complete.png http-complete.png; do
    cp "/tmp/lodcopc/$f" "$out/" 2>/dev/null
  done
fi
rm -rf "$dir"
