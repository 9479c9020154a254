#!/usr/bin/env bash
# pcv convert → COPC on the GPU machine's 16 cores (issue 12 item 4: target ≥ 30 M points/s, and a ≥ 1B-point
# conversion that fits the machine), in one device run (no GPU needed: this is CPU work; the cores are the point).
#
# Here (builds the release binary and puts it in the ignored folder .gpu/copc, about 15 MiB):
#   scripts/gpu-copc.sh --prepare
# There (device `run`, kind nvidia-h200 or nvidia-h200-x2; carry [".gpu/copc"]; timeout_s 600), from the checkout:
#   bash scripts/gpu-copc.sh                     # 1B points
#   PCV_COPC_POINTS=300M bash scripts/gpu-copc.sh
# Steps: write a terrain LAS with buildings and trees (scripts/gpu-terrain-las.py, numpy, one process per core)
# into $PCV_COPC_INPUT_DIR (default /dev/shm/pcv-copc-in), `pcv convert` it to COPC in $PCV_COPC_DIR (the
# output and pcv's temporary files, which go next to it; default /dev/shm/pcv-copc) with PCV_COPC_PHASES=1
# (each pass's wall and CPU time, the temporary files' peak), while a sampler records the most bytes used on
# the output's filesystem (df, every 0.5 s); then `pcv info` of the result, and the same conversion with
# RAYON_NUM_THREADS=1 on 20M points for the per-core rate. Results go to $OUT: convert.log (pcv's lines),
# info.txt (the octree per level), time.log (/usr/bin/time: wall, CPU, peak memory), disk.log, table.md.
#
# Disk: the source LAS takes 26 B a point (1B: 26 GB); pcv's only temporary file for a LAS input is the cells
# file, 36 B a point (the output's point format 7 records) at its peak at the end of the partition pass, whose
# blocks are then freed as they are read while the output (~13 B a point) grows. 1B points therefore peak at
# ~26 + 36 = 62 GB when input and output share one filesystem: the 1-GPU kind's /dev/shm (64 GiB = 68.7 GB)
# holds it with ~6 GB to spare; the 2-GPU kind (128 GiB of /dev/shm) with room. To spread it, set
# PCV_COPC_DIR to a folder on the 64 GiB disk (output + temporary files there, ~36 GB at the peak).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [ "${1:-}" = "--prepare" ]; then
  [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
  grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
  cargo build --release --bin pcv || exit 1
  mkdir -p .gpu/copc
  install -m 755 target/release/pcv .gpu/copc/
  strip .gpu/copc/pcv 2>/dev/null || true
  du -sh .gpu/copc
  echo 'device run: kind nvidia-h200 (or nvidia-h200-x2), carry [".gpu/copc"], timeout_s 600, command: bash scripts/gpu-copc.sh'
  exit 0
fi

out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
pcv=$root/.gpu/copc/pcv
[ -x "$pcv" ] || { echo "gpu-copc: $pcv is missing: run scripts/gpu-copc.sh --prepare here first and carry .gpu/copc" >&2; exit 1; }
n=${PCV_COPC_POINTS:-1B}
in_dir=${PCV_COPC_INPUT_DIR:-/dev/shm/pcv-copc-in}
dir=${PCV_COPC_DIR:-/dev/shm/pcv-copc}
mkdir -p "$dir" "$in_dir"
count=$(python3 -c "s='$n'.upper(); m={'K':1e3,'M':1e6,'B':1e9}; print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))")
cores=$(nproc)
echo "cores: $cores" | tee "$out/table.md"
python3 -c "import numpy" 2>/dev/null || pip install -q numpy 2>&1 | tail -1
df -h /dev/shm "$dir" "$in_dir" | tee -a "$out/table.md"
echo "== writing $count points of terrain LAS ($cores processes)"
t0=$(date +%s.%N)
python3 scripts/gpu-terrain-las.py "$in_dir/terrain.las" "$count" --size-m 6000 --jobs "$cores" || exit 1
echo "written in $(python3 -c "import time; print(round(time.time()-$t0,1))") s: $(du -h "$in_dir/terrain.las" | cut -f1)" | tee -a "$out/table.md"

# The most bytes used on the output's filesystem while pcv runs (the input's bytes included when they share it).
sample_disk() {
  local base peak=0 used
  base=$(df -B1 --output=used "$dir" | tail -1)
  while [ ! -e "$out/.stop-sampler" ]; do
    used=$(df -B1 --output=used "$dir" | tail -1)
    [ "$used" -gt "$peak" ] && peak=$used
    sleep 0.5
  done
  echo "filesystem of $dir: $(python3 -c "print(round($base/1e9,1))") GB used before pcv, peak $(python3 -c "print(round($peak/1e9,1))") GB during it (+$(python3 -c "print(round(($peak-$base)/1e9,1))") GB: temporary files and output)" > "$out/disk.log"
}
# PCV_COPC_PRETOUCH_GB=N: before pcv runs, write N GB of zeros to a file on the output's filesystem and
# remove it, timed twice. The lent machine is a VM whose memory is backed by its host on first touch (about
# 3 s for each 8 GiB, KINDS.md): the first fill pays that, the second shows the memory's own speed, and pcv's
# temporary files then land in memory a real machine would simply have.
if [ -n "${PCV_COPC_PRETOUCH_GB:-}" ]; then
  for pass in 1 2; do
    t0=$(date +%s.%N)
    dd if=/dev/zero of="$dir/pretouch" bs=1M count=$((PCV_COPC_PRETOUCH_GB * 1000)) status=none
    rm -f "$dir/pretouch"
    echo "pretouch pass $pass: ${PCV_COPC_PRETOUCH_GB} GB written and removed in $(python3 -c "import time; print(round(time.time()-$t0,1))") s" | tee -a "$out/table.md"
  done
fi
rm -f "$out/.stop-sampler"
sample_disk &
sampler=$!
echo "== pcv convert (all cores)"
PCV_COPC_PHASES=1 /usr/bin/time -v "$pcv" convert "$in_dir/terrain.las" -o "$dir/terrain.copc.laz" 2> "$out/convert-time.log"
touch "$out/.stop-sampler"; wait "$sampler"; rm -f "$out/.stop-sampler"
grep -E "pcv:|pcv convert:|error" "$out/convert-time.log" | tee "$out/convert.log"
grep -E "Elapsed|Maximum resident|Percent of CPU|User time|System time" "$out/convert-time.log" | tee "$out/time.log"
cat "$out/disk.log"
"$pcv" info "$dir/terrain.copc.laz" | tee "$out/info.txt"
ls -l "$dir" "$in_dir"
rm -f "$dir/terrain.copc.laz" "$in_dir/terrain.las"
echo "== one core, 20M points"
python3 scripts/gpu-terrain-las.py "$in_dir/small.las" 20e6 --size-m 1500 --jobs "$cores" >/dev/null
RAYON_NUM_THREADS=1 PCV_COPC_PHASES=1 "$pcv" convert "$in_dir/small.las" -o "$dir/small.copc.laz" 2>&1 | grep "pcv" | tee "$out/convert-1core.log"
{
  echo
  echo "| run | points | result |"
  echo "|---|---:|---|"
  echo "| all $cores cores | $count | $(sed -n 's/.*(\([0-9.]* M points\/s\)).*/\1/p' "$out/convert.log") |"
  echo "| 1 core | 20000000 | $(sed -n 's/.*(\([0-9.]* M points\/s\)).*/\1/p' "$out/convert-1core.log") |"
  echo
  cat "$out/disk.log"
  grep "temporary files peaked" "$out/convert.log"
} | tee -a "$out/table.md"
rm -rf "$dir" "$in_dir"
