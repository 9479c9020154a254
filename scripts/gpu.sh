#!/usr/bin/env bash
# Every measurement pcv makes on the GPU machine, one scenario a call:
#
#   bash scripts/gpu.sh SCENARIO [ARGS]     on the GPU machine (the device tool's `run`), from the checkout
#   bash scripts/gpu.sh list                the scenarios, a line each (here or there); --settings: theirs
#   bash scripts/gpu.sh list --run          the same with each one's device `run` arguments (kind, carry)
#   bash scripts/gpu.sh --help              this text, the scenarios and the one-off scripts they replace
#
# Prepare here first: scripts/gpu-prepare.sh builds pcv (kernels embedded), the test binaries and the
# examples the scenarios use, stages them into the git-ignored .gpu/ and prints the run arguments. Only
# what `carry` names travels with the checkout (64 MiB in all); the command line is at most 2,000
# characters, so several scenarios go in one call as `bash scripts/gpu.sh A; bash scripts/gpu.sh B`.
#
# Settings (environment; each scenario's own: `list --settings`):
#   OUT         where results go (the device tool's folder that comes back; /tmp/pcv-out when unset). A call
#               writes into $OUT/SCENARIO/ ($OUT/SCENARIO-TAG/ with a tag). The device tool brings back at
#               most 8 files: when more are under $OUT at the end of a call, scripts/gpu/pack.py packs them
#               into $OUT/logs.tar.gz and $OUT/contact-sheet.png (the *.md tables stay beside them).
#   PCV         the pcv binary (default .gpu/bin/pcv). Two builds in one call, e.g. before and after a change:
#                 PCV=.gpu/bin/pcv-old bash scripts/gpu.sh bench; bash scripts/gpu.sh bench
#               (stage the old one with `install -m 755 OLD/pcv .gpu/bin/pcv-old` here and carry it too);
#               bench then prints both side by side (scripts/gpu/bench-compare.py).
#   TAG         names the output folder (default: the binary's file name when PCV is not .gpu/bin/pcv).
#   LOAD_BENCH  the load_bench example (default .gpu/ex/load_bench), for load-bench, laz, multi-stream.
#   SKIP        steps of `checks` to leave out (e.g. SKIP="multi_gpu memcheck").
#   GPU_SH_ANYWHERE=1  go on without nvidia-smi (a dry run on a CPU machine; the CUDA steps then fail).
#
# What it sets for every scenario: PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1 (a CPU fallback is a failure
# here), NCCL_NVLS_ENABLE=0 (no NVLink multicast on the lent machines), the libglvnd packages of .gpu/gl
# unpacked into / when carried (NVIDIA's EGL/GLX), and for windowed scenarios Xvfb with NVIDIA's GLX
# (.gpu/start-x.sh with .gpu/x). Exit status: 0 when every step of the scenario passed.
set -uo pipefail
self=$(realpath "$0")
root=$(cd "$(dirname "$self")/.." && pwd)
cd "$root" || exit 2
helpers=$root/scripts/gpu

# name | device kind | carry (paths under the checkout) | what it does | its settings (environment, defaults)
scenarios=(
  "checks|nvidia-h200|.gpu/gl .gpu/bin|GPU tests (--include-ignored), compute-sanitizer memcheck, pcv render cuda vs cpu (standard and high quality)|ptx, cuda_vs_cpu, pick, lod, external_arrays; multi_gpu with 2+ GPUs (MULTI_SHARES=1: two shares of one GPU); SKIP=\"NAME...\" leaves steps out; PCV_POSE (-3,0,0,0,0) the render's camera"
  "bench|nvidia-h200|.gpu/bin/pcv .gpu/seed_numba_bench.py|pcv bench --backend cuda at every pose (default 1B points, culled)|POINTS (1B) MODES (culled) SIZE (1920x1080) WARMUP (5) FRAMES (15) LIMIT (570 s); PEER=1 the numba prototype beside it; PLOT=1 an SVG; extra arguments go to pcv bench; PCV= another build, compared side by side"
  "ncu|nvidia-h200|.gpu/bin/pcv|Nsight Compute profile of the raster kernel at 1B points, start pose|POINTS (1B) MODES (culled,quant)"
  "window|nvidia-h200|.gpu/gl .gpu/x .gpu/start-x.sh .gpu/bin/pcv|the viewer in a window (Xvfb + NVIDIA GLX) vs pcv render; pcv bench --window (each stage's GPU ms)|POINTS (10M,1B) MODES (culled) for bench --window"
  "load-bench|nvidia-h200|.gpu/bin/pcv .gpu/ex/load_bench|load rates and time to screen of a 1B-point LAS, 200M LAZ, 500M PLY; a cloud that does not fit|FILES (las,laz,ply) RENDERS (2) PCV_RUNS (3) PCV_LAS_POINTS (1B) PCV_LAZ_POINTS (200M) PCV_PLY_POINTS (500M) NOFIT (1); PCV= another build's pcv render, LOAD_BENCH= its load rates (the /dev/shm files are reused)"
  "laz|nvidia-h200|.gpu/bin/pcv .gpu/ex/load_bench .gpu/data|LAZ decode of real data (autzen, formats 3 and 7) on all cores and 1-8 threads, pcv vs the laz crate|PCV_LAZ_COPIES (1000) PCV_LAZ_SWEEP_COPIES (100) PCV_RUNS (3); LOAD_BENCH= another build"
  "copc|nvidia-h200|.gpu/bin/pcv|pcv convert of a 1B-point terrain LAS to COPC on all cores, then one core on 20M|PCV_COPC_POINTS (1B) PCV_COPC_DIR PCV_COPC_INPUT_DIR (/dev/shm/...) PCV_COPC_PRETOUCH_GB (touch the VM's memory first)"
  "lod|nvidia-h200|.gpu/bin/pcv|level of detail: a 10-s flight streamed under a point budget vs resident (first frame, p99, complete after the stop)|PCV_LOD_POINTS (1B) PCV_LOD_BUDGET (100M) PCV_LOD_COPC (a COPC instead of the built-in octree) PCV_LOD_RESIDENT (FILE or none) PCV_LOD_PATH PCV_LOD_HTTP (1: also over a loopback URL; only)"
  "lod-copc|nvidia-h200|.gpu/bin/pcv .gpu/bin/cuda_vs_cpu|the node pool's CUDA tests; a terrain COPC made there and flown from the file, over HTTP and resident|PCV_COPC_POINTS (300M) PCV_LOD_BUDGET (40M) PCV_LOD_HTTP (1) PCV_RENDERS (0: times to screen of the terrain LAS)"
  "looks|nvidia-h200|.gpu/gl .gpu/bin/pcv|point size, EDL, backgrounds: memcheck, cuda vs cpu renders, bench at 1B and on a terrain LAS|FILE_POINTS (100M)"
  "multi|nvidia-h200-x2|.gpu/bin/pcv .gpu/bin/multi_gpu|two GPUs through NCCL: tests, bench --gpus 1,2 at 2B, the largest cloud on one and two GPUs|"
  "multi-stream|nvidia-h200-x2|.gpu/gl .gpu/x .gpu/start-x.sh .gpu/bin/pcv .gpu/bin/multi_gpu .gpu/ex/load_bench|two GPUs for files and LOD: a 2B-point LAS streamed to 1 and 2 GPUs, LOD across GPUs, the window with --gpus 2|"
  "nav|nvidia-h200|.gpu/gl .gpu/x .gpu/start-x.sh .gpu/bin/pcv .gpu/ex/demo_data|the viewer as a user meets it: first views, the same click on CUDA and CPU, idle cost, a flight, pcv record|DEMO_SCALE (4) DEMO_DATA PCV_NAV_BACKEND (cuda) PCV_NAV_X (skip: no Xvfb)"
  "filters|nvidia-h200|.gpu/gl .gpu/x .gpu/start-x.sh .gpu/z|colour by fields, filters and clip boxes: cuda vs cpu renders (resident and streamed), bench of a terrain LAS unfiltered vs filtered, the window with a class toggle|FILE_POINTS (300M) DEMO_SCALE (4) SKIP="bench" (steps 5 and 6, the large file)"
  "data-1b|nvidia-h200|.gpu/gl .gpu/x .gpu/start-x.sh .gpu/z|issue 34's Done-when at a billion points: a US-survey-feet terrain tile (GPS time, returns) in the CUDA window coloured by gps_time and return_number, vegetation hidden by a click on the legend, a building clipped by a box, then exported with convert|FILE_POINTS (1B) FRAMES (40) CLICK (the legend's class-5 box, x,y in the 1920x1080 window once View is open: 23,223)"
  "raster-filter|nvidia-h200|.gpu/bin/pcv .gpu/bin/cuda_vs_cpu .gpu/bin/build-paths|the culled passes' own filter, headless: its CUDA-vs-twin tests and memcheck, bench of a terrain LAS unfiltered vs classes hidden, a clip box, returns and value ranges (GPU's filter vs the host's), a streamed LAS filtered by the GPU|FILE_POINTS (200M) FRAMES (5)"
  "survey|nvidia-h200|.gpu/gl .gpu/x .gpu/start-x.sh .gpu/z|issue 35's survey tools: bench of the built-in scene perspective vs orthographic (same run), cuda vs cpu renders of a terrain tile's orthographic views, the window driven to the top view, zoomed by the wheel and switched back, the walk-through in the CUDA window (profile window, picks in it, area, note, project saved and rendered), pcv raster of the tile|POINTS (1B) FILE_POINTS (20M) FRAMES (15)"
  "python|nvidia-h200|.gpu/gl .gpu/x .gpu/start-x.sh .gpu/py .gpu/ex/external_bench|the Python module: pytest, render_external from Rust and Python at 100M, a call's phases, the examples|"
)

usage() {
  sed -n '2,/^set -uo pipefail/p' "$self" | sed '$d' | sed 's/^# \{0,1\}//'
  echo; echo "Scenarios (and their settings):"
  list --settings
  cat <<'EOF'

The one-off scripts this replaces (each is in git history, e.g. `git log -- scripts/gpu-call12.sh`):
  gpu-prepare's generated .gpu/bin/checks.sh -> checks
  gpu-session.sh   -> checks, window, PEER=1 bench (POINTS=10M,100M,1B MODES=reference,packed,vis,culled)
  gpu-issue5.sh    -> checks; PEER=1 POINTS=10M,100M,1B MODES=reference,packed,vis,culled,dedup,quant bench;
                      SIZE=3840x2160 bench; PCV_PREPROCESS=0 MODES=reference,packed bench
  gpu-speed.sh     -> checks (its memcheck of culled and quant is in checks), bench
  gpu-call3.sh     -> checks, bench, ncu, nav (its packing is now pack.py after every call)
  gpu-call4.sh     -> checks, bench (POINTS=6B; SIZE=3840x2160; PEER=1; PLOT=1), ncu, window
  gpu-call5.sh     -> checks, bench, window, load-bench
  gpu-call6.sh     -> window, FILES=las load-bench (the DYNAMIC_COPY pixel buffer it timed was reverted)
  gpu-call7.sh     -> PCV_LOD_HTTP=0 lod-copc
  gpu-call8.sh     -> lod, multi (its tests), python (its call trace)
  gpu-call9.sh     -> python
  gpu-call10.sh    -> multi-stream
  gpu-call11.sh    -> multi, lod-copc
  gpu-call12.sh    -> PCV_COPC_POINTS=1B PCV_LOD_BUDGET=100M PCV_RENDERS=3 lod-copc
  gpu-call13.sh    -> laz, copc
  gpu-load-bench.sh -> load-bench; gpu-load-bench.sh laz -> laz
  gpu-copc.sh, gpu-lod.sh, gpu-lod-copc.sh, gpu-looks.sh, gpu-multi.sh, gpu-nav.sh, gpu-python.sh
                   -> copc, lod, lod-copc, looks, multi, nav, python
  Their --prepare steps (.gpu/load, .gpu/lod, .gpu/copc, .gpu/multi) are scripts/gpu-prepare.sh's.
  Dropped: the ptx/cuda_vs_cpu runs repeated inside looks, speed and issue5 (checks runs them once).
EOF
}

list() {  # list [--run | --settings]
  local s name kind carry what settings
  for s in "${scenarios[@]}"; do
    IFS='|' read -r name kind carry what settings <<<"$s"
    case "${1:-}" in
      --run) printf '  %-13s kind %-15s carry %s\n' "$name" "$kind" "$(json_list "$carry")" ;;
      --settings) printf '  %-13s %s\n' "$name" "$what"; [ -z "$settings" ] || printf '  %-13s   %s\n' "" "$settings" ;;
      *) printf '  %-13s %s\n' "$name" "$what" ;;
    esac
  done
}

json_list() { local p out=""; for p in $1; do out+="${out:+, }\"$p\""; done; echo "[$out]"; }

die() { echo "gpu.sh: $*" >&2; exit 2; }

# ---- shared setup -----------------------------------------------------------------------------------

need_gpu() {
  command -v nvidia-smi >/dev/null 2>&1 && return 0
  if [ "${GPU_SH_ANYWHERE:-0}" = 1 ]; then
    echo "gpu.sh: no nvidia-smi here; going on (GPU_SH_ANYWHERE=1)" >&2
    return 0
  fi
  die "'$scenario' runs on the GPU machine and nvidia-smi is not found here. Prepare here with
  scripts/gpu-prepare.sh, then run it there through the device tool: bash scripts/gpu.sh $scenario
  (bash scripts/gpu.sh list --run gives each scenario's kind and carry)."
}

need() {  # need PATH...: each staged file must have travelled
  local f
  for f; do
    [ -e "$f" ] || die "$f is missing: scripts/gpu-prepare.sh stages it here, and the run's carry must name it ($(json_list "$(carry_of "$scenario")") for $scenario)"
  done
}

carry_of() { local s name kind carry rest; for s in "${scenarios[@]}"; do IFS='|' read -r name kind carry rest <<<"$s"; [ "$name" = "$1" ] && echo "$carry"; done; }

# begin NAME: the checks every scenario shares, its output folder ($out), the environment.
begin() {
  need_gpu
  pcv=${PCV:-.gpu/bin/pcv}
  load_bench=${LOAD_BENCH:-.gpu/ex/load_bench}
  local tag
  if [ -n "${TAG+set}" ]; then
    tag=$TAG
  elif [ "$(realpath -m "$pcv")" != "$(realpath -m .gpu/bin/pcv)" ]; then
    tag=$(basename "$pcv")
  fi
  out_root=${OUT:-/tmp/pcv-out}
  out=$out_root/$1${tag:+-$tag}
  mkdir -p "$out"
  export PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1 NCCL_NVLS_ENABLE=0 NCCL_DEBUG=${NCCL_DEBUG:-WARN} PYTHONUNBUFFERED=1
  if ls .gpu/gl/*.deb >/dev/null 2>&1; then
    local f
    for f in .gpu/gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  fi
  # Binaries carried compressed (.gpu/z/NAME.xz from gpu-prepare.sh, so that the X bundle fits beside
  # them): unpacked into .gpu/bin, or .gpu/ex for the examples.
  local z name dest
  for z in .gpu/z/*.xz; do
    [ -e "$z" ] || continue
    name=$(basename "$z" .xz)
    case "$name" in demo_data|load_bench|external_bench) dest=.gpu/ex/$name ;; *) dest=.gpu/bin/$name ;; esac
    mkdir -p "$(dirname "$dest")"
    python3 -c "import lzma, sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" "$z" "$dest" && chmod +x "$dest"
  done
  t0=$(date +%s)
  rc=0
  [ "${GPU_SH_NO_PACK:-0}" = 1 ] || trap 'python3 "$helpers/pack.py" "$out_root" || true' EXIT
}

# finish: the scenario's exit status; a step that failed inside a pipeline (a subshell, so its rc=1 is
# lost) is found by its "== NAME: exit N" line in the logs.
finish() {
  if grep -qsE '^== [^ ]+: exit [1-9][0-9]*$' "$out"/*.log; then rc=1; fi
  echo "$scenario: exit $rc ($(elapsed))"
  return "$rc"
}

start_x() {  # Xvfb with NVIDIA's GLX (the machine has no display)
  need .gpu/start-x.sh .gpu/x
  # shellcheck source=/dev/null
  source .gpu/start-x.sh
}

machine() {
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1
  echo "$(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GB memory, /dev/shm $(df -h /dev/shm | awk 'NR==2{print $4}') free"
  "$pcv" --version 2>&1
}

elapsed() { echo "$(( $(date +%s) - t0 ))s"; }

# step NAME CMD...: runs CMD, prints "== NAME: exit N", and marks the scenario failed when N != 0.
step() {
  local name=$1 r
  shift
  echo "== $name: $*"
  "$@"
  r=$?
  echo "== $name: exit $r"
  [ "$r" = 0 ] || rc=1
  return 0
}

skipped() { case " ${SKIP:-} " in *" $1 "*) echo "== $1: skipped (SKIP)"; return 0 ;; esac; return 1; }

count() {  # 1B -> 1000000000
  python3 -c "import sys; s=sys.argv[1].upper(); m={'K':1e3,'M':1e6,'B':1e9}; print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(float(s)))" "$1"
}

compute_sanitizer() { command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1; }

# Tests that spawn pcv (env!("CARGO_BIN_EXE_pcv"), e.g. tests/lod.rs) run it at the path it had where they
# were built, fixed at compile time; gpu-prepare.sh writes that path into .gpu/bin/build-paths. Here it
# becomes a link to .gpu/bin/pcv.
link_bin_exe() {
  local p
  p=$(sed -n 's/^pcv=//p' .gpu/bin/build-paths 2>/dev/null | head -1)
  if [ -z "$p" ] && [ -f .gpu/bin/lod ]; then
    p=$(grep -aoE '/[[:alnum:]_.+-][[:alnum:]_./+-]*/release/pcv' .gpu/bin/lod | head -1 \
      | sed -E 's#^.*(/(work|home|root|tmp|opt|srv|mnt)/)#\1#')
  fi
  [ -n "$p" ] || { echo "link_bin_exe: no build path known (.gpu/bin/build-paths missing)"; return 0; }
  if [ -e "$p" ]; then
    echo "link_bin_exe: $p exists"
  else
    mkdir -p "$(dirname "$p")" && ln -s "$root/.gpu/bin/pcv" "$p" && echo "link_bin_exe: $p -> .gpu/bin/pcv"
  fi
}

# ---- scenarios --------------------------------------------------------------------------------------

sc_checks() {
  begin checks
  need .gpu/bin/pcv .gpu/bin/cuda_vs_cpu
  export PCV_REQUIRE_GL=1
  local gpus t cs pose=${PCV_POSE:--3,0,0,0,0}
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  machine >"$out/render.log" 2>&1
  {
    link_bin_exe
    for t in ptx pick lod external_arrays; do
      skipped $t && continue
      if [ -x ".gpu/bin/$t" ]; then
        step "$t" timeout 300 ".gpu/bin/$t" --include-ignored --test-threads=1 --nocapture
      else
        echo "== $t: not staged (.gpu/bin/$t)"; rc=1
      fi
    done
    if ! skipped multi_gpu; then
      if [ "$gpus" -ge 2 ]; then
        PCV_TEST_GPUS=$gpus step multi_gpu timeout 300 .gpu/bin/multi_gpu --include-ignored --test-threads=1 --nocapture
      elif [ "${MULTI_SHARES:-0}" = 1 ]; then
        PCV_TEST_GPUS=1 step multi_gpu timeout 300 .gpu/bin/multi_gpu --include-ignored --test-threads=1 --nocapture
      else
        echo "== multi_gpu: skipped: $gpus GPU here (kind nvidia-h200-x2 runs it; MULTI_SHARES=1 tests two shares of this one)"
      fi
    fi
  } >"$out/tests.log" 2>&1
  skipped cuda_vs_cpu || step cuda_vs_cpu timeout 400 .gpu/bin/cuda_vs_cpu --include-ignored --test-threads=1 --nocapture >"$out/cuda_vs_cpu.log" 2>&1
  # Out-of-bounds and misaligned accesses of the kernels: the smaller CUDA-vs-CPU tests, then the culled and
  # quantized modes' passes. API errors are not reported: the error-path test provokes some on purpose (a
  # PTX .version 99.9 refused) and checks each result itself.
  if ! skipped memcheck; then
    cs=$(compute_sanitizer)
    if [ -n "$cs" ]; then
      {
        step memcheck-tests timeout 240 "$cs" --tool memcheck --report-api-errors no --error-exitcode 9 --print-limit 20 \
          .gpu/bin/cuda_vs_cpu --include-ignored --test-threads=1 host_points errors device_target filtered
        for t in culled quant; do
          step "memcheck-$t" timeout 120 "$cs" --tool memcheck --error-exitcode 9 --print-limit 20 \
            "$pcv" bench --backend cuda --points 2M --mode "$t" --warmup 1 --frames 2 --size 1280x720
        done
        # High quality's blend and resolve, every point (vis) and the batches in view (culled, quant).
        step memcheck-high timeout 180 "$cs" --tool memcheck --error-exitcode 9 --print-limit 20 \
          "$pcv" bench --backend cuda --points 2M --mode vis,culled,quant --quality high --point-size 1,3 \
          --warmup 1 --frames 2 --size 1280x720
      } >"$out/memcheck.log" 2>&1
    else
      echo "compute-sanitizer not found" >"$out/memcheck.log"
    fi
  fi
  {
    for t in cuda cpu; do
      step "render-$t" "$pcv" render --backend "$t" --points 10M --seed 1 --size 1920x1080 --camera="$pose" -o "$out/$t.png"
    done
    step png-diff python3 "$helpers/png-diff.py" "$out/cuda.png" "$out/cpu.png"
    # High quality: the blended frame on both backends (integer sums: the same bits).
    for t in cuda cpu; do
      step "render-$t-high" "$pcv" render --backend "$t" --points 10M --seed 1 --size 1920x1080 --camera="$pose" \
        --mode culled --quality high -o "$out/$t-high.png"
    done
    step png-diff-high python3 "$helpers/png-diff.py" "$out/cuda-high.png" "$out/cpu-high.png"
  } >>"$out/render.log" 2>&1
  head -3 "$out/render.log"
  grep -hE "^== |^link_bin_exe|test result|panicked|ERROR SUMMARY|differ \(" "$out"/tests.log "$out"/cuda_vs_cpu.log "$out"/memcheck.log "$out"/render.log 2>/dev/null
  finish
}

sc_bench() {
  begin bench
  need "$pcv"
  # The defaults, each unless the extra arguments give it (pcv bench takes --size once).
  local args=(--backend cuda --json "$out/bench.json") opt val
  for opt in "--points ${POINTS:-1B}" "--mode ${MODES:-culled}" "--size ${SIZE:-1920x1080}" "--warmup ${WARMUP:-5}" "--frames ${FRAMES:-15}"; do
    val=${opt#* }; opt=${opt%% *}
    case " $* " in *" $opt "* | *" $opt="*) ;; *) args+=("$opt" "$val") ;; esac
  done
  if [ "${PEER:-0}" = 1 ]; then need .gpu/seed_numba_bench.py; args+=(--peer .gpu/seed_numba_bench.py --dump-dir /dev/shm); fi
  [ "${PLOT:-0}" = 1 ] && args+=(--plot "$out/bench.svg")
  {
    machine
    step bench timeout "${LIMIT:-570}" "$pcv" bench "${args[@]}" "$@"
  } 2>&1 | tee "$out/bench.log"
  # Two or more reports in this run (other builds, TAG=...): side by side.
  local reports=()
  mapfile -t reports < <(ls -tr "$out_root"/bench*/bench.json 2>/dev/null)
  [ "${#reports[@]}" -ge 2 ] && python3 "$helpers/bench-compare.py" "${reports[@]}" | tee "$out/compare.md"
  grep -q "== bench: exit 0" "$out/bench.log" || rc=1
  finish
}

sc_ncu() {
  begin ncu
  need "$pcv"
  local ncu mode modes=${MODES:-culled,quant}
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  [ -n "$ncu" ] || die "no ncu (Nsight Compute) on this machine"
  for mode in ${modes//,/ }; do
    echo "== ncu: pcv_raster_list at ${POINTS:-1B} points, start pose, $mode (after warm-up)"
    step "ncu-$mode" timeout 240 "$ncu" --clock-control none --kernel-name regex:pcv_raster_list --launch-skip 12 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
      "$pcv" bench --backend cuda --points "${POINTS:-1B}" --mode "$mode" --warmup 6 --frames 1 >"$out/ncu-$mode.txt" 2>&1
    grep -E "Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Compute \(SM\) Throughput|L2 Hit|Warp Cycles Per Issued" "$out/ncu-$mode.txt" | head -20
  done
  finish
}

sc_window() {
  begin window
  need "$pcv"
  start_x
  local w=/tmp/pcv-window
  mkdir -p "$w"
  {
    machine
    echo "== the viewer (GLFW on Xvfb, NVIDIA GLX), 1280x720, 10M points, start pose: with the panel, without, reference mode"
    step window "$pcv" --backend cuda --frames 200 --size 1280x720 --screenshot "$out/window.png"
    step window-plain "$pcv" --backend cuda --frames 200 --size 1280x720 --screenshot "$w/plain.png" --no-overlay
    step window-ref "$pcv" --backend cuda --frames 200 --size 1280x720 --screenshot "$w/ref.png" --no-overlay --mode reference
    "$pcv" render --backend cuda --size 1280x720 -o "$w/cuda.png"
    "$pcv" render --backend cuda --size 1280x720 -o "$w/cuda-ref.png" --mode reference
    "$pcv" render --backend cpu --size 1280x720 -o "$w/cpu-ref.png" --mode reference
    echo -n "window (no panel) vs render cuda, default mode: "; "$pcv" diff "$w/plain.png" "$w/cuda.png"
    echo -n "window vs render cuda, reference mode:          "; "$pcv" diff "$w/ref.png" "$w/cuda-ref.png"
    echo -n "render cuda default mode vs cuda reference:     "; "$pcv" diff "$w/cuda.png" "$w/cuda-ref.png"
    echo -n "render cuda reference vs cpu reference:         "; "$pcv" diff "$w/cuda-ref.png" "$w/cpu-ref.png"
    echo -n "window with the panel vs render, 640,360,560,300 (clear of the panel, scale bar and axes): "; "$pcv" diff "$out/window.png" "$w/cuda.png" --region 640,360,560,300
    echo "== the whole frame in a window (vsync off, panel on), 1920x1080: GPU ms of each stage"
    step bench-window timeout 300 "$pcv" bench --window --backend cuda --points "${POINTS:-10M,1B}" --mode "${MODES:-culled}" \
      --warmup 10 --frames 60 --json "$out/bench-window.json"
  } 2>&1 | tee "$out/window.log"
  finish
}

# Runs a command in the background, sampling its VmHWM (peak resident) and RssAnon (anonymous memory)
# every 20 ms; prints "wall_s peak_VmHWM_MiB peak_RssAnon_MiB exit" (no /usr/bin/time or bc needed).
measure() {
  local log=$1 t0 pid hwm=0 anon=0 h a r
  shift
  t0=$(date +%s%N)
  "$@" >>"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    h=$(awk '/VmHWM/{print $2}' "/proc/$pid/status" 2>/dev/null); a=$(awk '/RssAnon/{print $2}' "/proc/$pid/status" 2>/dev/null)
    [ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
    [ -n "$a" ] && [ "$a" -gt "$anon" ] && anon=$a
    sleep 0.02
  done
  wait "$pid"; r=$?
  awk -v t0="$t0" -v t1="$(date +%s%N)" -v h="$hwm" -v a="$anon" -v rc="$r" 'BEGIN { printf "%.2f %d %d %d\n", (t1 - t0) / 1e9, h / 1024, a / 1024, rc }'
}

has_file() { case ",${FILES:-las,laz,ply}," in *",$1,"*) return 0 ;; esac; return 1; }

sc_load_bench() {
  begin load-bench
  need "$pcv" "$load_bench"
  local shm=/dev/shm/pcv-load las_n=${PCV_LAS_POINTS:-1B} laz_n=${PCV_LAZ_POINTS:-200M} ply_n=${PCV_PLY_POINTS:-500M}
  local runs=${PCV_RUNS:-3} renders=${RENDERS:-2} las laz lazsrc ply_dir ply="" f kind png run r fit half
  las=$shm/big-$las_n.las; lazsrc=$shm/laz-src-$laz_n.las; laz=$shm/big-$laz_n.laz; ply_dir=$shm/ply
  mkdir -p "$shm"
  {
    echo "== machine"; machine
    echo "== writing the files (kept in $shm for a second build's call)"
    has_file las && { [ -f "$las" ] || "$load_bench" --write-las "$las_n" "$las" --laz-format 0; }
    if has_file laz && [ ! -f "$laz" ]; then
      "$load_bench" --write-las "$laz_n" "$lazsrc" --laz-format 1 && "$pcv" convert "$lazsrc" -o "$laz" && rm -f "$lazsrc"
    fi
    if has_file ply; then
      mkdir -p "$ply_dir"
      ls "$ply_dir"/*.ply >/dev/null 2>&1 || "$load_bench" --ply "$ply_n" --las 0 --laz 0 --runs 0 --dir "$ply_dir" --keep
    fi
    ls -la "$shm" "$ply_dir" 2>/dev/null
  } 2>&1 | tee "$out/load-bench.log"
  has_file ply && ply=$(ls "$ply_dir"/*.ply 2>/dev/null | head -1)
  {
    echo "== load bench (decode: the chunked decoders on every core into a counting sink; load: a host cloud)"
    has_file las && PCV_BENCH_ONLY=decode "$load_bench" --runs "$runs" --file "$las"
    local rest=()
    has_file laz && rest+=(--file "$laz")
    [ -n "$ply" ] && rest+=(--file "$ply")
    [ ${#rest[@]} -gt 0 ] && "$load_bench" --runs "$runs" "${rest[@]}"
  } 2>&1 | tee -a "$out/load-bench.log"
  {
    echo "== pcv render with CUDA: process start to PNG written (wall s, VmHWM MiB, peak RssAnon MiB, exit)"
    for f in "$las" "$laz" "$ply"; do
      [ -n "$f" ] && [ -f "$f" ] || continue
      kind=$(basename "$f" | cut -d. -f2)
      png=/tmp/pcv-first-$kind.png; [ "$kind" = las ] && png=$out/first-las.png
      for run in $(seq "$renders"); do
        r=$(measure "$out/render.log" "$pcv" render "$f" --backend cuda --size 1920x1080 -o "$png")
        echo "$(basename "$f") run $run: $r"
      done
    done
    if has_file las && [ "${NOFIT:-1}" = 1 ]; then
      echo "== a cloud that does not fit (PCV_DEVICE_BUDGET_MB=8000): pcv shows the uniform subsample that fits and says so; then --max-points half of it"
      : >/tmp/pcv-nofit.log
      r=$(PCV_DEVICE_BUDGET_MB=8000 measure /tmp/pcv-nofit.log "$pcv" render "$las" --backend cuda --size 1920x1080 -o "$out/no-fit.png")
      echo "does not fit, subsample: $r"
      grep -E "do not fit|rendered|error" /tmp/pcv-nofit.log | cut -c1-400
      cat /tmp/pcv-nofit.log >>"$out/render.log"
      fit=$(sed -n 's/.*subsample of \([0-9]*\).*/\1/p' /tmp/pcv-nofit.log | head -1)
      half=$(( ${fit:-200000000} / 2 ))
      r=$(PCV_DEVICE_BUDGET_MB=8000 measure "$out/render.log" "$pcv" render "$las" --backend cuda --size 1920x1080 --max-points "$half" -o "$out/max-points.png")
      echo "--max-points $half: $r"
    fi
    echo "== pcv's own lines"
    grep -E "^pcv" "$out/render.log" | tail -12
  } 2>&1 | tee "$out/first-frame.log"
  {
    echo "# GPU machine load bench ($(date -u +%F), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores; $("$pcv" --version 2>&1))"
    echo
    echo "| what | target | measured |"
    echo "|---|---|---|"
    dec() { grep -F "$1" "$out/load-bench.log" | tail -1 | awk -F'|' '{gsub(/ /,"",$5); print $5 " M/s decode (best)"}'; }
    # The last line of first-frame.log holding $1, which ends "wall-s VmHWM-MiB RssAnon-MiB exit".
    row() { grep -F -e "$1" "$out/first-frame.log" | tail -1 | awk '{ if ($NF != 0) print "FAILED (exit " $NF "; see render.log)"; else print $(NF-3) " s to the PNG, VmHWM " $(NF-2) " MiB, RssAnon " $(NF-1) " MiB" }'; }
    fr() { row "$(basename "$1") run $renders"; }
    has_file las && echo "| LAS $las_n decode | >= 500 M/s | $(dec "$(basename "$las")") |"
    has_file laz && echo "| LAZ $laz_n decode | >= 50 M/s | $(dec "$(basename "$laz")") |"
    [ -n "$ply" ] && echo "| PLY $ply_n decode | — | $(dec "$(basename "$ply")") |"
    has_file las && echo "| 1B-point LAS on screen (pcv render) | <= 4 s, host <= 1 GiB | $(fr "$las") |"
    has_file laz && echo "| LAZ $laz_n to a frame | — | $(fr "$laz") |"
    [ -n "$ply" ] && echo "| PLY $ply_n to a frame | — | $(fr "$ply") |"
    if has_file las && [ "${NOFIT:-1}" = 1 ]; then
      echo "| 1B LAS that does not fit (8000 MB budget): the subsample that fits | — | $(row "does not fit, subsample:") |"
      echo "| 1B LAS, --max-points half of that | — | $(row "--max-points") |"
    fi
  } | tee "$out/table.md"
  grep -q "FAILED" "$out/table.md" && rc=1
  local t
  for t in "$out_root"/load-bench*/table.md; do [ "$t" = "$out/table.md" ] || { echo "== earlier in this run: $t"; cat "$t"; }; done
  finish
}

sc_laz() {
  begin laz
  need "$pcv" "$load_bench"
  local shm=/dev/shm/pcv-laz copies=${PCV_LAZ_COPIES:-1000} sweep=${PCV_LAZ_SWEEP_COPIES:-100} runs=${PCV_RUNS:-3}
  local src lazf small n dec t
  ls .gpu/data/autzen_trim*.las >/dev/null 2>&1 \
    || die "no .gpu/data/autzen_trim.las or autzen_trim_7.las: gpu-prepare.sh copies them from /tmp/real (PDAL's test data) when there; carry .gpu/data"
  mkdir -p "$shm"
  {
    echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    "$pcv" --version
    for src in autzen_trim autzen_trim_7; do
      [ -f ".gpu/data/$src.las" ] || { echo "no .gpu/data/$src.las (gpu-prepare.sh copies it from /tmp/real/$src.las when there)"; continue; }
      lazf=$shm/pcv-load-bench-$src-x$copies.laz; small=$shm/pcv-load-bench-$src-x$sweep.laz
      for n in "$copies" "$sweep"; do
        [ -f "$shm/pcv-load-bench-$src-x$n.laz" ] || "$load_bench" --tile ".gpu/data/$src.las" --copies "$n" --dir "$shm" --keep --runs 0
        rm -f "$shm/pcv-load-bench-$src-x$n.las"
      done
      "$pcv" info "$lazf" 2>&1 | head -3
      for dec in pcv laz; do
        echo "== $src x$copies, all cores, decoder $dec"
        PCV_BENCH_ONLY=decode "$load_bench" --runs "$runs" --laz-decoder $dec --file "$lazf"
      done
      for t in 1 2 4 8; do
        echo "== $src x$sweep, $t threads, decoder pcv"
        PCV_BENCH_ONLY=decode "$load_bench" --runs 2 --threads $t --laz-decoder pcv --file "$small"
      done
    done
  } 2>&1 | tee "$out/laz-bench.log"
  {
    echo "# LAZ decode on the GPU machine ($(date -u +%F), $(nproc) cores): autzen_trim x$copies (threads 1-8: x$sweep)"
    echo
    echo "| file | threads | decoder | decode best M/s | decode median M/s | CPU s | M points per CPU-s |"
    echo "|---|---:|---|---:|---:|---:|---:|"
    awk -F'|' '/^== /{ split($0, w, " "); src = w[2]; thr = ($0 ~ /all cores/) ? "all" : w[4]; n = split($0, q, " "); dec = q[n] }
      /^\| \/dev\/shm/ { gsub(/ /, "", $3); gsub(/ /, "", $5); gsub(/ /, "", $6); gsub(/ /, "", $7); pts = $3; sub(/M/, "", pts);
        printf "| %s | %s | %s | %s | %s | %s | %.2f |\n", src, thr, dec, $5, $6, $7, pts / $7 }' "$out/laz-bench.log"
  } | tee "$out/laz-table.md"
  finish
}

sc_copc() {
  begin copc
  need "$pcv"
  local n=${PCV_COPC_POINTS:-1B} in_dir=${PCV_COPC_INPUT_DIR:-/dev/shm/pcv-copc-in} dir=${PCV_COPC_DIR:-/dev/shm/pcv-copc}
  local c cores pass t1 sampler
  pcv=$(realpath "$pcv")
  mkdir -p "$dir" "$in_dir"
  c=$(count "$n"); cores=$(nproc)
  echo "cores: $cores" | tee "$out/table.md"
  python3 -c "import numpy" 2>/dev/null || pip install -q numpy 2>&1 | tail -1
  df -h /dev/shm "$dir" "$in_dir" | tee -a "$out/table.md"
  echo "== writing $c points of terrain LAS ($cores processes)"
  t1=$(date +%s.%N)
  python3 "$helpers/terrain-las.py" "$in_dir/terrain.las" "$c" --size-m 6000 --jobs "$cores" || { rc=1; return 1; }
  echo "written in $(python3 -c "import time; print(round(time.time()-$t1,1))") s: $(du -h "$in_dir/terrain.las" | cut -f1)" | tee -a "$out/table.md"
  # PCV_COPC_PRETOUCH_GB=N: before pcv runs, write N GB of zeros on the output's filesystem and remove them,
  # twice. The lent machine is a VM whose memory its host backs on first touch (about 3 s for each 8 GiB):
  # the first fill pays that, the second shows the memory's own speed, and pcv's temporary files then land in
  # memory a real machine would simply have.
  if [ -n "${PCV_COPC_PRETOUCH_GB:-}" ]; then
    for pass in 1 2; do
      t1=$(date +%s.%N)
      dd if=/dev/zero of="$dir/pretouch" bs=1M count=$((PCV_COPC_PRETOUCH_GB * 1000)) status=none
      rm -f "$dir/pretouch"
      echo "pretouch pass $pass: ${PCV_COPC_PRETOUCH_GB} GB written and removed in $(python3 -c "import time; print(round(time.time()-$t1,1))") s" | tee -a "$out/table.md"
    done
  fi
  rm -f "$out/.stop-sampler"
  sample_disk "$dir" &
  sampler=$!
  echo "== pcv convert (all cores)"
  PCV_COPC_PHASES=1 /usr/bin/time -v "$pcv" convert "$in_dir/terrain.las" -o "$dir/terrain.copc.laz" 2>"/tmp/pcv-convert-time.log" || rc=1
  touch "$out/.stop-sampler"; wait "$sampler"; rm -f "$out/.stop-sampler"
  grep -E "pcv:|pcv convert:|error" /tmp/pcv-convert-time.log | tee "$out/convert.log"
  grep -E "Elapsed|Maximum resident|Percent of CPU|User time|System time" /tmp/pcv-convert-time.log | tee "$out/time.log"
  cat "$out/disk.log"
  "$pcv" info "$dir/terrain.copc.laz" | tee "$out/info.txt"
  ls -l "$dir" "$in_dir"
  rm -f "$dir/terrain.copc.laz" "$in_dir/terrain.las"
  echo "== one core, 20M points"
  python3 "$helpers/terrain-las.py" "$in_dir/small.las" 20e6 --size-m 1500 --jobs "$cores" >/dev/null
  RAYON_NUM_THREADS=1 PCV_COPC_PHASES=1 "$pcv" convert "$in_dir/small.las" -o "$dir/small.copc.laz" 2>&1 | grep "pcv" | tee "$out/convert-1core.log"
  {
    echo
    echo "| run | points | result |"
    echo "|---|---:|---|"
    echo "| all $cores cores | $c | $(sed -n 's/.*(\([0-9.]* M points\/s\)).*/\1/p' "$out/convert.log") |"
    echo "| 1 core | 20000000 | $(sed -n 's/.*(\([0-9.]* M points\/s\)).*/\1/p' "$out/convert-1core.log") |"
    echo
    cat "$out/disk.log"
    grep "temporary files peaked" "$out/convert.log"
  } | tee -a "$out/table.md"
  rm -rf "$dir" "$in_dir"
  finish
}

# The most bytes used on the filesystem of $1 while pcv runs (the input's bytes included when they share it).
sample_disk() {
  local dir=$1 base peak=0 used
  base=$(df -B1 --output=used "$dir" | tail -1)
  while [ ! -e "$out/.stop-sampler" ]; do
    used=$(df -B1 --output=used "$dir" | tail -1)
    [ "$used" -gt "$peak" ] && peak=$used
    sleep 0.5
  done
  echo "filesystem of $dir: $(python3 -c "print(round($base/1e9,1))") GB used before pcv, peak $(python3 -c "print(round($peak/1e9,1))") GB during it (+$(python3 -c "print(round(($peak-$base)/1e9,1))") GB: temporary files and output)" >"$out/disk.log"
}

# lod: pcv record --measure, streamed vs resident (issue 12). Settings: PCV_LOD_POINTS (1B), PCV_LOD_BUDGET
# (100M), PCV_LOD_COPC (a COPC file instead of the built-in scene's in-memory octree), PCV_LOD_RESIDENT (the
# resident run's source instead of the built-in scene; none: no resident run), PCV_LOD_PATH (a flight; the
# default flies from outside the built-in scene into it), PCV_LOD_HTTP (1: the COPC also through a loopback
# range server, scripts/gpu/range-server.py, with an empty download cache; only: that run alone),
# PCV_LOD_UPLOAD_MS, PCV_LOD_THREADS, PCV_LOD_SPACING_PX (read by pcv). Writes streamed/http/resident .json
# and .log, table.md (scripts/gpu/lod-table.py), refining.png, complete.png, http-complete.png.
sc_lod() {
  begin lod
  need "$pcv"
  local points=${PCV_LOD_POINTS:-1B} budget=${PCV_LOD_BUDGET:-100M} path=${PCV_LOD_PATH:-/tmp/pcv-lod-path.json}
  local http=${PCV_LOD_HTTP:-} src resident portfile server url cache t1 r
  if [ -z "${PCV_LOD_PATH:-}" ]; then
    # In the files' coordinates; the flight ends inside the cylinders looking at them.
    cat >"$path" <<'EOF'
{"frame": "file", "keyframes": [
  {"t": 0, "camera": "-3,0,0,0,0"},
  {"t": 3, "camera": "-1.2,0,0.1,0,-3"},
  {"t": 6, "camera": "-0.3,0.3,0.1,-30,-8"},
  {"t": 8, "camera": "0.4,0.6,0.0,-80,-5"},
  {"t": 10, "camera": "0.5,0.7,0.0,-110,-5"}
]}
EOF
  fi
  local common=(--backend cuda --size 1920x1080 --path "$path" --point-size adaptive --edl --background gradient)
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader >"$out/streamed.log" 2>&1
  if [ -n "${PCV_LOD_COPC:-}" ]; then src=("$PCV_LOD_COPC"); else src=(--lod --points "$points"); fi
  if [ "$http" != only ]; then
    echo "== streamed: ${src[*]} --point-budget $budget" | tee -a "$out/streamed.log"
    t1=$(date +%s%N)
    timeout 300 "$pcv" record "${src[@]}" --point-budget "$budget" "${common[@]}" -o "$out/frames" --measure "$out/streamed.json" >>"$out/streamed.log" 2>&1
    r=$?; [ "$r" = 0 ] || rc=1
    echo "== streamed: exit $r after $(( ($(date +%s%N) - t1) / 1000000 )) ms" | tee -a "$out/streamed.log"
    mv "$out/frames/refining.png" "$out/frames/complete.png" "$out/" 2>/dev/null; rm -rf "$out/frames"
  fi
  if [ -n "$http" ] && [ "$http" != 0 ] && [ -n "${PCV_LOD_COPC:-}" ]; then
    portfile=$(mktemp -u /tmp/pcv-range-port.XXXXXX)
    python3 "$helpers/range-server.py" "$(dirname "$PCV_LOD_COPC")" --port-file "$portfile" >"$out/http.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do [ -s "$portfile" ] && break; sleep 0.1; done
    if [ -s "$portfile" ]; then
      url="http://127.0.0.1:$(cat "$portfile")/$(basename "$PCV_LOD_COPC")"
      cache=$(mktemp -d /tmp/pcv-http-cache.XXXXXX)
      echo "== streamed over HTTP: $url --point-budget $budget (empty cache $cache)" | tee -a "$out/http.log"
      "$pcv" info "$url" 2>&1 | head -4 >>"$out/http.log"
      t1=$(date +%s%N)
      PCV_CACHE_DIR=$cache timeout 300 "$pcv" record "$url" --point-budget "$budget" "${common[@]}" -o "$out/http-frames" --measure "$out/http.json" >>"$out/http.log" 2>&1
      r=$?; [ "$r" = 0 ] || rc=1
      echo "== streamed over HTTP: exit $r after $(( ($(date +%s%N) - t1) / 1000000 )) ms; cache $(du -sh "$cache" | cut -f1)" | tee -a "$out/http.log"
      mv "$out/http-frames/complete.png" "$out/http-complete.png" 2>/dev/null; rm -rf "$out/http-frames" "$cache"
    else
      echo "== the range server did not start (see above)" | tee -a "$out/http.log"; rc=1
    fi
    kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$portfile"
  fi
  if [ -n "${PCV_LOD_RESIDENT:-}" ]; then resident=("$PCV_LOD_RESIDENT"); else resident=(--points "$points"); fi
  if [ "${PCV_LOD_RESIDENT:-}" != none ]; then
    echo "== resident: ${resident[*]}" | tee "$out/resident.log"
    timeout 120 "$pcv" record "${resident[@]}" "${common[@]}" -o /tmp/pcv-resident --measure "$out/resident.json" >>"$out/resident.log" 2>&1
    r=$?; [ "$r" = 0 ] || rc=1
    echo "== resident: exit $r" | tee -a "$out/resident.log"
    rm -rf /tmp/pcv-resident
  fi
  python3 "$helpers/lod-table.py" "$out" >"$out/table.md"
  cat "$out/table.md"
  grep -q "failed (see" "$out/table.md" && rc=1
  grep -hE "pcv:|first frame|flight|complete view|device memory|after the stop|limited by|error" "$out"/streamed.log "$out"/http.log "$out"/resident.log 2>/dev/null | head -40
  finish
}

sc_lod_copc() {
  begin lod-copc
  need "$pcv"
  local n=${PCV_COPC_POINTS:-300M} budget=${PCV_LOD_BUDGET:-40M} dir=/dev/shm/pcv-copc c t1 f i
  pcv=$(realpath "$pcv")
  mkdir -p "$dir"
  echo "== cuda_vs_cpu: the node pool (copy stream, per-slot spacing)"
  if [ -x .gpu/bin/cuda_vs_cpu ]; then
    step pool timeout 120 .gpu/bin/cuda_vs_cpu pool --include-ignored --test-threads=1 --nocapture >/tmp/pcv-pool.log 2>&1
  else
    echo "no .gpu/bin/cuda_vs_cpu (carry it)" >/tmp/pcv-pool.log; rc=1
  fi
  grep -E "^== |^test |test result|panicked|identical|frames to complete|differs" /tmp/pcv-pool.log | tee "$out/cuda_vs_cpu-pool.log"
  c=$(count "$n")
  {
    machine
    echo "== $(nproc) cores; writing $c points of terrain LAS"
    t1=$(date +%s)
    timeout 200 python3 "$helpers/terrain-las.py" "$dir/terrain.las" "$c" --size-m 3000 --jobs "$(nproc)" | tail -2
    echo "written in $(( $(date +%s) - t1 )) s: $(du -h "$dir/terrain.las" | cut -f1)"
    echo "== pcv convert to COPC (all cores, PCV_COPC_PHASES=1)"
    PCV_COPC_PHASES=1 timeout 280 /usr/bin/time -v "$pcv" convert "$dir/terrain.las" -o "$dir/terrain.copc.laz" 2>&1 \
      | grep -E "pcv|Elapsed|Maximum resident|Percent of CPU|User time|System time|rror"
    df -h /dev/shm | tail -1
    "$pcv" info "$dir/terrain.copc.laz" 2>&1 | grep -E "points|octree|level" | head -14
  } 2>&1 | tee "$out/copc.log"
  if [ -f "$dir/terrain.copc.laz" ]; then
    # The flight over the 3 km terrain in its own coordinates (scripts/gpu/terrain-flight.json): from a
    # 1.1 km-high overview down to 35 m above the ground, then along it.
    OUT=/tmp/pcv-lodcopc GPU_SH_NO_PACK=1 PCV="$pcv" TAG='' PCV_LOD_COPC="$dir/terrain.copc.laz" PCV_LOD_RESIDENT="$dir/terrain.las" \
      PCV_LOD_PATH="$helpers/terrain-flight.json" PCV_LOD_BUDGET="$budget" PCV_LOD_HTTP=${PCV_LOD_HTTP:-1} \
      timeout 420 bash "$self" lod 2>&1 | tail -40 | tee "$out/lod.log"
    for f in table.md streamed.json http.json resident.json refining.png complete.png http-complete.png; do
      cp "/tmp/pcv-lodcopc/lod/$f" "$out/" 2>/dev/null
    done
    rm -rf /tmp/pcv-lodcopc
  else
    rc=1
  fi
  if [ "${PCV_RENDERS:-0}" -gt 0 ] && [ -f "$dir/terrain.las" ]; then
    {
      echo "== the terrain LAS on screen: pcv render --backend cuda, process start to PNG (warm page cache)"
      for i in $(seq "$PCV_RENDERS"); do
        t1=$(date +%s%N)
        timeout 60 "$pcv" render "$dir/terrain.las" --backend cuda -o /tmp/pcv-first.png 2>&1 | grep -E "times|rendered|rror"
        echo "run $i: $(( ($(date +%s%N) - t1) / 1000000 )) ms"
      done
    } 2>&1 | tee -a "$out/copc.log"
  fi
  rm -rf "$dir"
  finish
}

sc_looks() {
  begin looks
  need "$pcv"
  local cs mode look fp
  cs=$(compute_sanitizer)
  fp=$(count "${FILE_POINTS:-100M}")
  {
    machine
    if [ -n "$cs" ]; then
      echo "== compute-sanitizer memcheck over the post passes (2M points, 1280x720)"
      for mode in reference packed vis; do
        for look in "--point-size 5 --edl --background gradient" "--point-size adaptive --edl" "--point-size 16 --splat scatter"; do
          printf '%s %s: ' "$mode" "$look"
          # shellcheck disable=SC2086 # $look is several arguments
          "$cs" --tool memcheck --error-exitcode 9 "$pcv" render --backend cuda --points 2M --size 1280x720 --mode $mode $look -o /tmp/pcv-m.png 2>&1 | grep -E "ERROR SUMMARY" | head -1
        done
      done
    else
      echo "== compute-sanitizer not found: no memcheck"
    fi
    echo "== pcv render, cuda vs cpu, with looks (10M points, 1920x1080)"
    for look in "--point-size 3 --edl --background gradient" "--point-size adaptive --edl --background white"; do
      for mode in vis packed; do
        # shellcheck disable=SC2086
        "$pcv" render --backend cuda --points 10M --size 1920x1080 --mode $mode $look -o /tmp/pcv-c.png 2>&1 | tail -1
        # shellcheck disable=SC2086
        "$pcv" render --backend cpu --points 10M --size 1920x1080 --mode $mode $look -o /tmp/pcv-p.png 2>&1 | tail -1
        printf '%s %s cuda vs cpu: ' "$mode" "$look"; "$pcv" diff /tmp/pcv-c.png /tmp/pcv-p.png
      done
    done
    cp /tmp/pcv-c.png "$out/render-adaptive-edl-white.png"
    echo "== bench, built-in scene, 1B points"
    step bench-1b "$pcv" bench --backend cuda --points 1B --mode reference,vis --point-size 1,2,3,5,adaptive --splat gather,scatter \
      --edl off,on --warmup 3 --frames 10 --json "$out/bench-1b.json"
    echo "== bench, a $fp-point LAS tile (terrain, buildings, trees)"
    python3 "$helpers/terrain-las.py" /dev/shm/pcv-terrain.las "$fp" --size-m 2000 --jobs "$(nproc)"
    step bench-file "$pcv" bench --backend cuda /dev/shm/pcv-terrain.las --mode reference,vis --point-size 1,2,3,5,adaptive --edl off,on \
      --warmup 3 --frames 10 --json "$out/bench-file.json"
    rm -f /dev/shm/pcv-terrain.las
  } 2>&1 | tee "$out/looks.log"
  finish
}

sc_multi() {
  begin multi
  need "$pcv" .gpu/bin/multi_gpu
  local sum=$out/summary.log best best1 best2
  {
    echo "== machine"
    machine
    nvidia-smi topo -m 2>/dev/null | head -6
    echo "NCCL libraries present:"; ls /opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so* 2>/dev/null
    echo "PCV_NCCL_LIBRARY=${PCV_NCCL_LIBRARY:-unset} NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
  } >"$sum" 2>&1
  echo "== 0. NCCL smoke: pcv render --gpus 2 at 10M points ($(elapsed))" | tee -a "$sum"
  # A machine with no network may need NCCL's bootstrap on loopback, a small /dev/shm NCCL's shared-memory
  # transport off: each fallback is tried only when the plain run fails, and kept for the rest.
  smoke() { timeout 60 "$pcv" render --backend cuda --gpus 2 --points 10M --size 640x360 -o /tmp/pcv-smoke.png >>"$sum" 2>&1; }
  if ! smoke; then
    export NCCL_SOCKET_IFNAME=lo; echo "retrying with NCCL_SOCKET_IFNAME=lo" | tee -a "$sum"
    if ! smoke; then
      export NCCL_SHM_DISABLE=1; echo "retrying with NCCL_SHM_DISABLE=1 too" | tee -a "$sum"
      smoke || { export NCCL_DEBUG=INFO; smoke; echo "NCCL smoke failed (NCCL_DEBUG=INFO above)" | tee -a "$sum"; rc=1; }
    fi
  fi
  tail -2 "$sum"
  echo "== 1. multi_gpu, one GPU, two shares ($(elapsed))" | tee -a "$sum"
  PCV_TEST_GPUS=1 step tests-1gpu timeout 150 .gpu/bin/multi_gpu --include-ignored --test-threads=1 --nocapture >"$out/tests.log" 2>&1
  grep -E "^test |test result|panicked|vs |^== " "$out/tests.log" | tee -a "$sum"
  echo "== 2. multi_gpu, two GPUs ($(elapsed))" | tee -a "$sum"
  echo "======== PCV_TEST_GPUS=2" >>"$out/tests.log"
  PCV_TEST_GPUS=2 step tests-2gpus timeout 150 .gpu/bin/multi_gpu --include-ignored --test-threads=1 --nocapture >>"$out/tests.log" 2>&1
  sed -n '/PCV_TEST_GPUS=2/,$p' "$out/tests.log" | grep -E "^test |test result|panicked|vs |^== " | tee -a "$sum"
  echo "== 3. bench 2B ($(elapsed))" | tee -a "$sum"
  {
    local size
    for size in 1920x1080 3840x2160; do
      step "bench-$size" timeout 150 "$pcv" bench --backend cuda --gpus 1,2 --points 2B --size "$size" --mode packed,vis,culled \
        --warmup 5 --frames 15 --json "$out/bench-${size#*x}.json"
    done
    echo "== one GPU, two shares (the composite's cost on one device), 1080p"
    timeout 90 "$pcv" bench --backend cuda --gpus 1 --gpu-shares 2 --points 2B --mode culled --warmup 5 --frames 15
    step composite timeout 60 "$pcv" render --gpus 2 --points 2B --size 960x540 -o "$out/composite.png"
  } >"$out/bench.log" 2>&1
  grep -E "^pcv bench|exit|error" "$out/bench.log" | tee -a "$sum"
  echo "== 4. largest cloud ($(elapsed))" | tee -a "$sum"
  probe() {  # probe GPUS COUNTS...: the first count that renders
    local g=$1 n r
    shift
    for n in "$@"; do
      [ $(( $(date +%s) - t0 )) -lt 400 ] || { echo "probe: out of time before $n"; return 1; }
      echo "-- --gpus $g --points $n"
      timeout 120 "$pcv" render --backend cuda --gpus "$g" --points "$n" --size 1920x1080 -o /tmp/pcv-probe.png >/tmp/pcv-probe.log 2>&1
      r=$?
      tail -3 /tmp/pcv-probe.log
      if [ $r = 0 ]; then echo "largest on $g GPU(s): $n"; best=$n; return 0; fi
    done
    return 1
  }
  {
    best=""
    if probe 2 14B 13.5B 13B 12.5B 12B 11B 10B; then best2=$best; else best2=""; fi
    best=""
    if probe 1 7B 6.5B 6B 5B; then best1=$best; else best1=""; fi
    if [ -n "$best2" ] && [ $(( $(date +%s) - t0 )) -lt 420 ]; then
      echo "== bench of $best2 points on two GPUs, 1080p, culled"
      timeout 120 "$pcv" bench --backend cuda --gpus 2 --points "$best2" --mode culled --warmup 3 --frames 10
      echo "exit $?"
    fi
    echo "largest: two GPUs ${best2:-none}, one GPU ${best1:-none}"
  } >>"$out/bench.log" 2>&1
  grep -E "^largest|^ +[0-9]{10,} +culled" "$out/bench.log" | tee -a "$sum"
  echo "== table: frame ms (median) by GPUs; composite ms on its own ($(elapsed))" | tee -a "$sum"
  python3 "$helpers/multi-table.py" "$out" 2>&1 | tee -a "$sum"
  echo "done in $(elapsed); exit $rc" | tee -a "$sum"
  finish
}

sc_multi_stream() {
  begin multi-stream
  need "$pcv" .gpu/bin/multi_gpu "$load_bench"
  local sum=$out/summary.log las=/dev/shm/pcv-big-2B.las s g path=/tmp/pcv-multi-path.json
  { machine; } >"$sum" 2>&1
  echo "== 1. multi_gpu on two GPUs ($(elapsed))" | tee -a "$sum"
  {
    PCV_TEST_GPUS=2 step tests-2gpus timeout 200 .gpu/bin/multi_gpu --include-ignored --test-threads=1 --nocapture
    echo "======== PCV_TEST_GPUS=1 (two shares of GPU 0): streamed files and level of detail"
    PCV_TEST_GPUS=1 step tests-1gpu timeout 100 .gpu/bin/multi_gpu --include-ignored --test-threads=1 --nocapture streamed level_of_detail
  } >"$out/tests.log" 2>&1
  grep -E "^test |test result|panicked|^== " "$out/tests.log" | tee -a "$sum"
  echo "== 2. a 2B-point LAS streamed to one and two GPUs ($(elapsed))" | tee -a "$sum"
  {
    s=$(date +%s)
    timeout 200 "$load_bench" --write-las 2B "$las" --laz-format 0 2>&1 | tail -2
    echo "written in $(( $(date +%s) - s )) s: $(ls -la "$las" 2>&1)"
    for g in 1 2; do
      echo "-- pcv render $las --gpus $g"
      s=$(date +%s%N)
      timeout 120 /usr/bin/time -f "peak host RSS %M KiB" "$pcv" render "$las" --backend cuda --gpus $g --size 1920x1080 -o "/tmp/pcv-load-gpus$g.png" 2>&1 | grep -vE $'^\\s*[0-9.]+%|\r' | tail -6
      echo "gpus $g: $(( ($(date +%s%N) - s) / 1000000 )) ms from start to the PNG"
    done
    echo "-- pcv bench $las --gpus 1,2"
    step bench-file timeout 200 "$pcv" bench "$las" --backend cuda --gpus 1,2 --mode culled --warmup 5 --frames 15 --json "$out/bench-file.json"
  } >"$out/load.log" 2>&1
  grep -E "gpus [12]:|written|peak host|exit|error|Error" "$out/load.log" | tee -a "$sum"
  echo "== 3. level of detail across GPUs ($(elapsed))" | tee -a "$sum"
  cat >"$path" <<'EOF'
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
      timeout 150 "$pcv" record --lod --points 1B --point-budget 100M --gpus $g --backend cuda --size 1920x1080 --path "$path" \
        --point-size adaptive --edl --background gradient -o "/tmp/pcv-frames$g" --measure "$out/lod-gpus$g.json" 2>&1 | grep -E "pcv:|first|flight|complete|memory|error|Error" | head -20
      echo "exit $?"
      python3 - "$out/lod-gpus$g.json" "$g" <<'PY' 2>&1
import json, sys
x = json.load(open(sys.argv[1])); f = x["flight"]
print("gpus %s: first frame %.0f ms, p50 %.2f p99 %.2f ms, complete after stop %s ms, drawn %.1fM, device peak %.2f GB" % (
    sys.argv[2], x["first_frame_ms"], f["p50_ms"], f["p99_ms"], x["complete_after_stop_ms"], x["mean_drawn_points"] / 1e6,
    (x["device_memory_peak_bytes"] or 0) / 1e9))
PY
    done
    cp /tmp/pcv-frames2/complete.png "$out/lod-gpus2.png" 2>/dev/null
    rm -rf /tmp/pcv-frames1 /tmp/pcv-frames2
  } >"$out/lod.log" 2>&1
  grep -E "^gpus|exit|rror" "$out/lod.log" | tee -a "$sum"
  echo "== 4. the window with --gpus 2 ($(elapsed))" | tee -a "$sum"
  {
    if [ -d .gpu/x ] && [ -f .gpu/start-x.sh ]; then
      start_x
      timeout 120 "$pcv" "$las" --backend cuda --gpus 2 --size 1920x1080 --frames 60 --screenshot "$out/window-gpus2.png" 2>&1 | grep -vE '^\s*[0-9.]+%' | tail -8
      echo "exit $?"
    else
      echo "no .gpu/x carried: window skipped"
    fi
  } >"$out/window.log" 2>&1
  tail -4 "$out/window.log" | tee -a "$sum"
  rm -f "$las"
  echo "== done ($(elapsed)); exit $rc" | tee -a "$sum"
  finish
}

sc_nav() {
  begin nav
  local scale=${DEMO_SCALE:-4} backend=${PCV_NAV_BACKEND:-cuda} demo_data=${DEMO_DATA:-.gpu/ex/demo_data}
  local demo=/tmp/pcv-demo work=/tmp/pcv-nav f b pid t1 t2 n0 n1 gpu
  need "$pcv" "$demo_data"
  [ "${PCV_NAV_X:-}" = skip ] || start_x
  [ "$backend" = cuda ] || unset PCV_REQUIRE_KERNELS PCV_REQUIRE_CUDA
  mkdir -p "$work"
  gpu_util() { nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits 2>/dev/null || echo n/a; }
  {
    machine
    echo "== 1. demo data (scale $scale)"
    "$demo_data" "$demo" --scale "$scale"
    echo "== 2. first views, 1920x1080, $backend"
    for f in terrain.las road-strip.laz bunny.ply terrain-sparse.laz room.pcd; do
      "$pcv" "$demo/$f" --backend "$backend" --size 1920x1080 --frames 30 --screenshot "$out/first-${f%%.*}.png" 2>&1 | tail -1
    done
    echo "== 3. the same input on $backend and on the CPU"
    cat >"$work/click.json" <<'EOF'
[ {"frame": 3, "type": "cursor_pos", "x": 960, "y": 600},
  {"frame": 4, "type": "button", "button": "left", "down": true},
  {"frame": 4, "type": "button", "button": "left", "down": false},
  {"frame": 6, "type": "cursor_pos", "x": 800, "y": 500},
  {"frame": 7, "type": "button", "button": "left", "down": true},
  {"frame": 8, "type": "cursor_pos", "x": 900, "y": 480},
  {"frame": 9, "type": "cursor_pos", "x": 1000, "y": 460},
  {"frame": 10, "type": "button", "button": "left", "down": false},
  {"frame": 12, "type": "cursor_pos", "x": 960, "y": 540},
  {"frame": 13, "type": "button", "button": "right", "down": true},
  {"frame": 14, "type": "cursor_pos", "x": 900, "y": 600},
  {"frame": 15, "type": "button", "button": "right", "down": false},
  {"frame": 17, "type": "cursor_pos", "x": 1100, "y": 500},
  {"frame": 18, "type": "scroll", "dy": 2} ]
EOF
    for b in $backend cpu; do
      "$pcv" "$demo/terrain.las" --backend "$b" --size 1920x1080 --frames 22 --input-script "$work/click.json" --trace "$work/trace-$b.jsonl" 2>&1 | tail -1
      python3 - "$work/trace-$b.jsonl" "$b" <<'PY'
import json, sys
t = [json.loads(l) for l in open(sys.argv[1])]
print(sys.argv[2], "picked at frame 5:", json.dumps(t[5]["picked"]))
print(sys.argv[2], "camera at the end:", t[-1]["camera"])
PY
    done
    python3 - "$work/trace-$backend.jsonl" "$work/trace-cpu.jsonl" <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
print("same pick:", a[5]["picked"] == b[5]["picked"], " same final camera:", a[-1]["camera"] == b[-1]["camera"])
PY
    "$pcv" "$demo/terrain.las" --backend "$backend" --size 1920x1080 --frames 8 --input-script "$work/click.json" --screenshot "$out/picked-$backend.png" 2>&1 | tail -1
    echo "== 4. idle window on $backend: CPU and GPU"
    "$pcv" "$demo/terrain.las" --backend "$backend" --size 1920x1080 --trace "$work/idle.jsonl" >/dev/null 2>&1 &
    pid=$!
    sleep 8
    t1=$(awk '{print $14+$15}' "/proc/$pid/stat"); n0=$(wc -l <"$work/idle.jsonl")
    gpu=$(for _ in 1 2 3 4 5 6; do gpu_util; sleep 0.5; done | tr '\n' ' ')
    t2=$(awk '{print $14+$15}' "/proc/$pid/stat"); n1=$(wc -l <"$work/idle.jsonl")
    echo "idle: $((t2 - t1)) CPU ticks (1/100 s) and $((n1 - n0)) frames in 3 s; GPU utilization % samples: $gpu"
    kill "$pid"; wait "$pid" 2>/dev/null
    echo "== 5. flying: W held, --continuous, $backend, 1920x1080"
    echo '[{"frame": 2, "type": "key", "key": "O", "down": true}, {"frame": 3, "type": "key", "key": "O", "down": false}, {"frame": 5, "type": "key", "key": "W", "down": true}]' >"$work/fly.json"
    timeout 20 "$pcv" "$demo/terrain.las" --backend "$backend" --size 1920x1080 --continuous --no-vsync --frames 400 --input-script "$work/fly.json" --trace "$work/fly.jsonl" 2>&1 | tail -1
    python3 - "$work/fly.jsonl" <<'PY'
import json, sys
t = [json.loads(l) for l in open(sys.argv[1])]
print(len(t), "frames; eye from", t[5]["eye_local"], "to", t[-1]["eye_local"])
PY
    echo "== 6. pcv record, 4 s at 30 fps, 1920x1080, $backend"
    python3 - "$work/trace-$backend.jsonl" "$work/path.json" <<'PY'
import json, sys
t = [json.loads(l) for l in open(sys.argv[1])]
a, b = t[0]["camera"].split()[1], t[-1]["camera"].split()[1]
json.dump({"keyframes": [{"t": 0, "camera": a}, {"t": 4, "camera": b}]}, open(sys.argv[2], "w"))
PY
    "$pcv" record "$demo/terrain.las" --backend "$backend" --path "$work/path.json" --fps 30 -o "$work/rec" --size 1920x1080 2>&1 | tail -3
    ls "$work/rec" | wc -l
    cp "$work/rec/frame-00060.png" "$out/record-frame60.png" 2>/dev/null
  } 2>&1 | tee "$out/nav.log"
  grep -q "same pick: True  same final camera: True" "$out/nav.log" || rc=1
  finish
}

sc_filters() {
  begin filters
  local fp scale=${DEMO_SCALE:-4} demo=/tmp/pcv-demo work=/tmp/pcv-filters t a
  fp=$(count "${FILE_POINTS:-300M}")
  need "$pcv" .gpu/ex/demo_data
  start_x
  mkdir -p "$work"
  {
    machine
    echo "== 1. demo data (scale $scale)"
    .gpu/ex/demo_data "$demo" --scale "$scale" | tail -5
    "$pcv" info "$demo/terrain.las" | grep -E "points|gps_time|return_number|classes"
    echo "== 2. pcv render, cuda vs cpu (vis mode: the host's filter; culled: the GPU's), resident and streamed (PCV_HOST_BUDGET_MB=0)"
    t=$demo/terrain.las
    i=0
    for a in "--color-by gps_time" "--color-by return_number --classes 5,6" "--color-by scan_angle --returns last" \
      "--color-by point_source_id --clip-box 512100,5405050,0,512200,5405150,1000" \
      "--classes 2,6 --clip-box 512100,5405050,0,512200,5405150,1000:outside" "--color-by gps_time --ramp terrain --range 315000000..315001800 --filter gps_time:315000300..315001500"; do
      i=$((i + 1))
      for budget in "" 0; do
        for b in cuda cpu; do
          # shellcheck disable=SC2086 # $a is several arguments
          PCV_HOST_BUDGET_MB=$budget "$pcv" render "$t" --backend $b --mode vis --size 1920x1080 $a -o "$work/r$i-$b${budget:+-streamed}.png" 2>&1 | grep -E "showing|rendered|error"
        done
        printf '%s%s cuda vs cpu: ' "$a" "${budget:+ (streamed)}"; "$pcv" diff "$work/r$i-cuda${budget:+-streamed}.png" "$work/r$i-cpu${budget:+-streamed}.png"
      done
      # shellcheck disable=SC2086
      "$pcv" render "$t" --backend cuda --mode culled --size 1920x1080 $a -o "$work/r$i-cuda-culled.png" 2>&1 | grep -E "showing|rendered|error"
      printf '%s culled on the GPU vs vis with the host filter: ' "$a"; "$pcv" diff "$work/r$i-cuda-culled.png" "$work/r$i-cuda.png"
    done
    cp "$work/r1-cuda.png" "$out/cuda-gps-time.png"
    cp "$work/r2-cuda.png" "$out/cuda-returns-classes-5-6.png"
    echo "== 3. convert a clipped building, every field kept"
    "$pcv" convert "$t" -o "$work/house.laz" --clip-box 512120,5405060,0,512180,5405120,1000 --classes 6
    "$pcv" info "$work/house.laz" | grep -E "points|classes|gps_time"
    echo "== 4. the window on CUDA (Xvfb + NVIDIA GLX): gps_time, vegetation hidden from the start, then clicks on View and the legend's class-5 box"
    "$pcv" "$t" --backend cuda --color-by gps_time --classes 2,6,7 --size 1920x1080 --frames 20 --screenshot "$out/window-cuda-no-vegetation.png" 2>&1 | tail -2
    cat >"$work/toggle.json" <<'EOF2'
[ {"frame": 3, "type": "cursor_pos", "x": 105, "y": 37},
  {"frame": 4, "type": "button", "button": "left", "down": true},
  {"frame": 5, "type": "button", "button": "left", "down": false},
  {"frame": 8, "type": "cursor_pos", "x": 23, "y": 223},
  {"frame": 9, "type": "button", "button": "left", "down": true},
  {"frame": 10, "type": "button", "button": "left", "down": false},
  {"frame": 12, "type": "cursor_pos", "x": 1500, "y": 900} ]
EOF2
    "$pcv" "$t" --backend cuda --color-by return_number --size 1920x1080 --frames 24 --input-script "$work/toggle.json" --trace "$work/toggle.jsonl" --screenshot "$out/window-cuda-click.png" 2>&1 | tail -2
    python3 -c "import json,sys; t=[json.loads(l) for l in open(sys.argv[1])]; print('points drawn: frame 2', t[2].get('points'), '-> last', t[-1].get('points'))" "$work/toggle.jsonl" 2>&1 | tail -1
    if ! skipped bench; then
    echo "== 5. bench: a $fp-point terrain LAS, unfiltered vs filtered (culled, 1920x1080, 1 px)"
    python3 "$helpers/terrain-las.py" /dev/shm/pcv-terrain.las "$fp" --size-m 2000 --jobs "$(nproc)" | tail -1
    "$pcv" info /dev/shm/pcv-terrain.las | grep -E "points|classes|bounds|min|max" | head -6
    for a in "" "--classes 5,6" "--classes 2" "--clip-box 500000,4100000,-1000,501000,4102000,5000"; do
      # The GPU's culled passes filter (the default), then the host's kept points (PCV_FILTER_ON=host).
      for on in gpu host; do
        [ -z "$a" ] && [ "$on" = host ] && continue
        # shellcheck disable=SC2086
        PCV_FILTER_ON=$on step "bench${a:+ $a} (filter on $on)" timeout 300 "$pcv" bench --backend cuda /dev/shm/pcv-terrain.las --mode culled,quant --point-size 1 --edl off --warmup 3 --frames 10 $a
      done
    done
    echo "== 6. streamed (device-only) at $fp points: time to screen unfiltered vs --classes 2"
    for a in "" "--classes 2"; do
      /usr/bin/time -f "%e s, VmHWM %M KiB" "$pcv" render /dev/shm/pcv-terrain.las --backend cuda --size 1920x1080 $a -o "$work/big.png" 2>&1 | grep -E "showing|rendered|times| s, "
    done
    cp "$work/big.png" "$out/big-classes-2.png"
    rm -f /dev/shm/pcv-terrain.las
    fi
  } 2>&1 | tee "$out/filters.log"
  finish
}

sc_data_1b() {
  begin data-1b
  local fp frames=${FRAMES:-40} t=/dev/shm/pcv-ftus.las work=/tmp/pcv-data-1b a name click=${CLICK:-23,223}
  fp=$(count "${FILE_POINTS:-1B}")
  need "$pcv"
  start_x
  mkdir -p "$work"
  # Frame times from a --trace: the median and p99 of the gaps between frames after the first 10.
  gaps() { python3 -c "import json,sys; t=[json.loads(l)['time_s'] for l in open(sys.argv[1])][10:]; d=sorted(b-a for a,b in zip(t,t[1:])); print(f'{len(d)} frames after the 10th: median {1e3*d[len(d)//2]:.1f} ms, p99 {1e3*d[min(len(d)-1,int(len(d)*0.99))]:.1f} ms, points {json.loads(open(sys.argv[1]).readlines()[-1]).get(\"points\")}') if len(d)>1 else print('too few frames')" "$1"; }
  {
    machine
    echo "== 1. a $fp-point terrain tile in US survey feet (LAS 1.2 format 3: GPS time, returns, flight lines)"
    python3 "$helpers/terrain-las.py" "$t" "$fp" --size-m 20000 --format 3 --ftus --jobs "$(nproc)" | tail -1
    "$pcv" info "$t" | grep -E "points|crs|units|size|classes|return_number|gps_time"
    echo "== 2. the CUDA window (Xvfb + NVIDIA GLX, 1920x1080): colour by gps_time, by return_number"
    for a in gps_time return_number; do
      /usr/bin/time -f "%e s, VmHWM %M KiB" "$pcv" "$t" --backend cuda --color-by $a --size 1920x1080 --frames "$frames" --trace "$work/$a.jsonl" --screenshot "$out/window-$a.png" 2>&1 | tail -3
      printf '%s: ' "$a"; gaps "$work/$a.jsonl"
    done
    echo "== 2b. the window's colour key on the streamed cloud: point_source_id, then C at frame 5 (gps_time: a sample of it read, the files streamed again, coloured)"
    cat >"$work/key.json" <<EOF2
[ {"frame": 5, "type": "key", "key": "C", "down": true}, {"frame": 6, "type": "key", "key": "C", "down": false} ]
EOF2
    "$pcv" "$t" --backend cuda --color-by point_source_id --size 1920x1080 --frames 20 --input-script "$work/key.json" --trace "$work/key.jsonl" --screenshot "$out/window-key-c-gps_time.png" 2>&1 | tail -1
    python3 -c "import json,sys; t=[json.loads(l)['time_s'] for l in open(sys.argv[1])]; d=[b-a for a,b in zip(t,t[1:])]; i=max(range(len(d)),key=d.__getitem__); print(f'the longest frame gap (the colour change): {d[i]:.2f} s, after frame {i}')" "$work/key.jsonl" 2>&1 | tail -1
    echo "== 3. vegetation hidden by clicks: the panel's View tab (105,37), the legend's class-5 box ($click); then a clip box"
    cat >"$work/click.json" <<EOF2
[ {"frame": 3, "type": "cursor_pos", "x": 105, "y": 37},
  {"frame": 4, "type": "button", "button": "left", "down": true},
  {"frame": 5, "type": "button", "button": "left", "down": false},
  {"frame": 8, "type": "cursor_pos", "x": ${click%,*}, "y": ${click#*,}},
  {"frame": 9, "type": "button", "button": "left", "down": true},
  {"frame": 10, "type": "button", "button": "left", "down": false},
  {"frame": 12, "type": "cursor_pos", "x": 1500, "y": 900} ]
EOF2
    "$pcv" "$t" --backend cuda --color-by return_number --size 1920x1080 --frames "$frames" --input-script "$work/click.json" --trace "$work/click.jsonl" --screenshot "$out/window-vegetation-hidden.png" 2>&1 | tail -2
    python3 -c "import json,sys; t=[json.loads(l) for l in open(sys.argv[1])]; print('points drawn: frame 7', t[7].get('points'), '-> last', t[-1].get('points'))" "$work/click.jsonl" 2>&1 | tail -1
    printf 'after the click: '; gaps "$work/click.jsonl"
    # The first building of terrain-las.py's generator (seed 1) is not known here: clip the tile's centre
    # 300 x 300 ft, buildings only, and export what the window shows.
    a="--clip-box 509850,4109850,-1000,510150,4110150,5000 --classes 6"
    # shellcheck disable=SC2086
    "$pcv" "$t" --backend cuda $a --size 1920x1080 --frames "$frames" --trace "$work/clip.jsonl" --screenshot "$out/window-clip-buildings.png" 2>&1 | tail -2
    printf 'clipped: '; gaps "$work/clip.jsonl"
    # shellcheck disable=SC2086
    /usr/bin/time -f "convert: %e s, VmHWM %M KiB" "$pcv" convert "$t" -o "$work/buildings.laz" $a 2>&1 | tail -2
    "$pcv" info "$work/buildings.laz" | grep -E "points|crs|classes|gps_time|return_number"
    "$pcv" render "$work/buildings.laz" --backend cuda --size 1280x720 -o "$out/convert-buildings.png" 2>&1 | grep -E "showing|rendered|error"
    rm -f "$t"
  } 2>&1 | tee "$out/data-1b.log"
  finish
}

sc_raster_filter() {
  begin raster-filter
  local fp frames=${FRAMES:-5} f=/dev/shm/pcv-terrain.las cs a on
  fp=$(count "${FILE_POINTS:-200M}")
  need "$pcv" .gpu/bin/cuda_vs_cpu
  {
    machine
    link_bin_exe
    echo "== 1. the filtered culled passes against the CPU twins, and streamed class codes against the host's filter"
    PCV_REQUIRE_CUDA=1 step cuda_vs_cpu timeout 300 .gpu/bin/cuda_vs_cpu --include-ignored --test-threads=1 --nocapture filtered streamed_class returns_and_ranges
    echo "== 2. a $fp-point terrain LAS (classes 2 ground, 5 vegetation, 6 buildings; GPS time, returns: format 3)"
    python3 "$helpers/terrain-las.py" "$f" "$fp" --size-m 2000 --format 3 --jobs "$(nproc)" | tail -1
    cs=$(compute_sanitizer)
    if [ -n "$cs" ]; then
      python3 "$helpers/terrain-las.py" /dev/shm/pcv-small.las 2000000 --size-m 300 --jobs 4 | tail -1
      step memcheck-filtered timeout 240 "$cs" --tool memcheck --error-exitcode 9 --print-limit 20 \
        "$pcv" bench --backend cuda /dev/shm/pcv-small.las --classes 2,6 --clip-box 500000,4100000,-1000,500150,4100300,5000 --mode culled,quant --point-size 1 --edl off --warmup 1 --frames 2 --size 1280x720
      python3 "$helpers/terrain-las.py" /dev/shm/pcv-small3.las 2000000 --size-m 300 --format 3 --jobs 4 | tail -1
      step memcheck-returns-ranges timeout 240 "$cs" --tool memcheck --error-exitcode 9 --print-limit 20 \
        "$pcv" bench --backend cuda /dev/shm/pcv-small3.las --returns first --filter gps_time:315000010..315000150 --filter intensity:100.. --mode culled,quant --point-size 1 --edl off --warmup 1 --frames 2 --size 1280x720
    fi
    echo "== 3. bench (culled, 1920x1080, 1 px): unfiltered, then each filter on the GPU and on the host (PCV_FILTER_ON=host)"
    for a in "" "--classes 5,6" "--classes 2,6" "--clip-box 500000,4100000,-1000,501000,4102000,5000" "--returns first" "--returns multiple" "--filter gps_time:315000240..315000480" "--filter intensity:..500"; do
      for on in gpu host; do
        [ -z "$a" ] && [ "$on" = host ] && continue
        # shellcheck disable=SC2086 # $a is several arguments
        PCV_FILTER_ON=$on step "bench${a:+ $a} (filter on $on)" timeout 200 "$pcv" bench --backend cuda "$f" --mode culled --point-size 1 --edl off --warmup 2 --frames "$frames" $a
      done
    done
    echo "== 3b. the GPU's filter without its kept lists (PCV_KEPT_LISTS=0: each straddling batch's points tested every frame)"
    for a in "--classes 5,6" "--classes 2,6" "--filter gps_time:315000240..315000480"; do
      # shellcheck disable=SC2086
      PCV_KEPT_LISTS=0 step "bench $a (no kept lists)" timeout 200 "$pcv" bench --backend cuda "$f" --mode culled --point-size 1 --edl off --warmup 2 --frames "$frames" $a
    done
    echo "== 4. the same LAS streamed to the GPU (no host copy): time to screen unfiltered vs --classes 2,6 on the GPU"
    for a in "" "--classes 2,6"; do
      # shellcheck disable=SC2086
      /usr/bin/time -f "%e s, VmHWM %M KiB" "$pcv" render "$f" --backend cuda --size 1920x1080 $a -o "$out/streamed${a:+-classes-2-6}.png" 2>&1 | grep -E "showing|rendered|times| s, |error"
    done
    echo "== 5. field colours and a returns filter through the multi-GPU backend (--gpu-shares 2 on this GPU) vs one GPU"
    for a in "--color-by gps_time" "--color-by return_number --returns first"; do
      # shellcheck disable=SC2086
      "$pcv" render "$f" --backend cuda --size 1280x720 $a -o "$out/one.png" 2>&1 | grep -E "showing|rendered|error"
      # shellcheck disable=SC2086
      "$pcv" render "$f" --backend cuda --gpu-shares 2 --size 1280x720 $a -o "$out/shares.png" 2>&1 | grep -E "showing|rendered|error"
      echo -n "$a: one GPU vs two shares: "; "$pcv" diff "$out/one.png" "$out/shares.png"
    done
    mv "$out/shares.png" "$out/shares-return_number-first.png"; rm -f "$out/one.png"
    rm -f "$f" /dev/shm/pcv-small.las /dev/shm/pcv-small3.las
  } 2>&1 | tee "$out/raster-filter.log"
  finish
}

sc_survey() {
  begin survey
  local t=/dev/shm/pcv-survey.las work=/tmp/pcv-survey v fp
  fp=$(count "${FILE_POINTS:-20M}")
  need "$pcv"
  start_x
  mkdir -p "$work"
  {
    machine
    echo "== 1. bench, culled, ${POINTS:-1B} points: perspective, then orthographic (each pose seen with parallel rays)"
    for v in perspective ortho; do
      step "bench-$v" timeout 240 "$pcv" bench --backend cuda --points "${POINTS:-1B}" --mode culled --warmup 5 --frames "${FRAMES:-15}" \
        --projection "$v" --json "$out/bench-$v.json" | grep -E "^ *(start|far|down|close|inside|grazing)|points/s|culled"
    done
    # The start views (--view) are framed from every k-th point, and the backends hold the points in
    # different orders: a few pixels apart. So the --view renders are looked at, and the backends are
    # compared at explicit cameras (flat roofs seen from straight above are exact depth ties: the
    # colours there may differ).
    echo "== 2. a $fp-point terrain tile: orthographic views on CUDA; CUDA vs the CPU backend at explicit cameras (pcv diff)"
    python3 "$helpers/terrain-las.py" "$t" "$fp" --size-m 1000 --format 3 --jobs "$(nproc)" | tail -1
    for v in top front side oblique; do
      "$pcv" render "$t" --backend cuda --projection ortho --view "$v" --size 1920x1080 -o "$out/ortho-$v-cuda.png" 2>&1 | grep -E "rendered|error"
    done
    for v in "--projection ortho --ortho-height 600 --camera 500500,4100500,800,90,-90" \
             "--projection ortho --ortho-height 200 --camera 500500,4099900,40,90,0" \
             "--camera 500100,4100100,250,45,-35"; do
      # shellcheck disable=SC2086
      for b in cuda cpu; do "$pcv" render "$t" --backend "$b" $v --size 1920x1080 -o "$work/$b.png" >/dev/null 2>&1; done
      printf '%s, cuda vs cpu: ' "$v"; "$pcv" diff "$work/cuda.png" "$work/cpu.png"
    done
    echo "== 3. the CUDA window: Numpad 7 (top, orthographic), 3 wheel notches in at (1400,300); then I (perspective)"
    cat >"$work/keys.json" <<EOF2
[ {"frame": 3, "type": "key", "key": "Kp7", "down": true}, {"frame": 4, "type": "key", "key": "Kp7", "down": false},
  {"frame": 6, "type": "cursor_pos", "x": 1400, "y": 300},
  {"frame": 7, "type": "scroll", "dy": 3} ]
EOF2
    "$pcv" "$t" --backend cuda --size 1920x1080 --frames 14 --input-script "$work/keys.json" --trace "$work/keys.jsonl" --screenshot "$out/window-top-zoomed.png" 2>&1 | tail -2
    sed -e 's/}\s*\]$/},\n  {"frame": 10, "type": "key", "key": "I", "down": true}, {"frame": 11, "type": "key", "key": "I", "down": false} ]/' "$work/keys.json" >"$work/keys-i.json"
    "$pcv" "$t" --backend cuda --size 1920x1080 --frames 16 --input-script "$work/keys-i.json" --trace "$work/keys-i.jsonl" --screenshot "$out/window-back-to-perspective.png" 2>&1 | tail -2
    for v in keys keys-i; do
      python3 -c "import json,sys; t=[json.loads(l) for l in open(sys.argv[1])]; [print(sys.argv[2], 'frame', l['frame'], l.get('projection'), 'eye', [round(x,1) for x in l['eye_local']], 'pitch', round(l['pitch_deg'],1)) for l in t if l['frame'] in (2,5,9,13,15)]" "$work/$v.jsonl" "$v"
    done
    echo "== 4. the walk-through in the CUDA window: top view; T, a distance across the tile, Ctrl+P (the profile window, a second CUDA rasterizer), clicks down the profile's image (picks there); Shift+T twice (area), four corners, Enter; T off, a click, Ctrl+A (a note); Ctrl+S (the project), Ctrl+E (GeoJSON), Ctrl+G / Ctrl+Shift+G (orthophoto / DSM GeoTIFF), F12 (8K); then pcv render of the project on CUDA"
    python3 - "$work/walk.json" <<'EOF2'
import json, sys
steps = []
def key(f, k, mods=None):
    for d, ff in ((True, f), (False, f + 1)):
        e = {"frame": ff, "type": "key", "key": k, "down": d}
        if mods:
            e["mods"] = mods
        steps.append(e)
def click(f, x, y):
    steps.extend([{"frame": f, "type": "cursor_pos", "x": x, "y": y},
                  {"frame": f + 1, "type": "button", "button": "left", "down": True},
                  {"frame": f + 2, "type": "button", "button": "left", "down": False}])
key(3, "T"); click(6, 600, 560); click(10, 1300, 560); key(14, "P", {"ctrl": True})
key(20, "T")
f = 24
for y in range(760, 1050, 24):
    click(f, 960, y); f += 4
key(f, "T", {"shift": True}); key(f + 2, "T", {"shift": True}); f += 5
for x, y in ((700, 300), (900, 300), (900, 450), (700, 450)):
    click(f, x, y); f += 4
key(f, "Enter"); key(f + 2, "T"); click(f + 5, 1000, 200); key(f + 9, "A", {"ctrl": True}); key(f + 12, "S", {"ctrl": True})
key(f + 15, "E", {"ctrl": True}); key(f + 18, "G", {"ctrl": True}); key(f + 21, "G", {"ctrl": True, "shift": True}); key(f + 24, "F12")
json.dump(steps, open(sys.argv[1], "w"))
print("script of", len(steps), "events, last frame", f + 25)
EOF2
    local pcv_abs; pcv_abs=$(realpath "$pcv")
    (cd "$work" && rm -f pcv-project-*.pcv.json pcv-measurements-* pcv-ortho-* pcv-dsm-* pcv-8k-* && "$pcv_abs" "$t" --backend cuda --size 1920x1080 --projection ortho --view top --frames 130 \
      --input-script "$work/walk.json" --trace "$work/walk.jsonl" --screenshot "$out/walk-window.png" 2>&1 | tail -12)
    python3 - "$work/walk.jsonl" <<'EOF2'
import json, sys
t = [json.loads(l) for l in open(sys.argv[1])]
picks = sorted({json.dumps(l["picked"]["file"]) for l in t if l.get("picked") and l.get("profile")})
last = t[-1]
print("profile:", last.get("profile"))
print("points picked while the profile window was open:", len(picks), picks[:4])
for m in last["measurements"]["all"]:
    print("measurement", m["kind"], {k: round(v, 3) for k, v in m["values"].items()})
print("notes:", [(n["text"], n["visible"]) for n in last["notes"]])
print("main camera at frame 13 and at the end:", [(l["eye_local"], l["yaw_deg"], l["pitch_deg"], l["projection"]) for l in t if l["frame"] in (13, last["frame"])])
EOF2
    for f in "$work"/pcv-measurements-*.geojson "$work"/pcv-ortho-*.tif "$work"/pcv-dsm-*.tif; do
      [ -f "$f" ] && { echo "written: $(basename "$f"), $(wc -c <"$f") bytes"; cp "$f" "$out/"; }
    done
    for f in "$work"/pcv-8k-*.png; do
      [ -f "$f" ] && python3 -c "import struct,sys; b=open(sys.argv[1],'rb').read(24); print('8K screenshot', sys.argv[1].rsplit('/',1)[-1], struct.unpack('>II', b[16:24]), 'pixels,', __import__('os').path.getsize(sys.argv[1]), 'bytes')" "$f"
    done
    proj=$(ls "$work"/pcv-project-*.pcv.json 2>/dev/null | head -1)
    if [ -n "$proj" ]; then
      echo "project: $(basename "$proj"), $(wc -c <"$proj") bytes"; cp "$proj" "$out/walk-project.pcv.json"
      "$pcv" render "$proj" --backend cuda --size 1920x1080 -o "$out/walk-project-render.png" 2>&1 | grep -E "rendered|error"
    else
      echo "no project written"
    fi
    echo "== 5. pcv raster of the tile on $(nproc) cores: a surface model at 0.5 m and an orthophoto at 0.25 m"
    /usr/bin/time -f "%e s, VmHWM %M KiB" "$pcv" raster "$t" --cell 0.5 -o "$work/dsm.tif" 2>&1 | tail -2
    /usr/bin/time -f "%e s, VmHWM %M KiB" "$pcv" raster "$t" --cell 0.25 --what rgb -o "$work/ortho.tif" 2>&1 | tail -2
    rm -f "$t"
  } 2>&1 | tee "$out/survey.log"
  finish
}

sc_python() {
  begin python
  local site start ext r xvfb_pid=""
  need .gpu/py
  ls .gpu/py/pcv-*.whl >/dev/null 2>&1 || die "no .gpu/py/pcv-*.whl: scripts/gpu-prepare.sh --python builds it"
  ext=.gpu/ex/external_bench; [ -x "$ext" ] || ext=.gpu/py/external_bench
  site=$(mktemp -d /tmp/pcv-site.XXXXXX)
  start=$(date +%s)
  {
    echo "== $(date -u) on $(hostname)"
    machine
    python3 --version
    # A wheel is a zip: without pip, unpacking it into the site folder installs it as well.
    python3 -m pip install --no-index --no-deps --target "$site" .gpu/py/pcv-*.whl 2>&1 | tail -2 \
      || for w in .gpu/py/pcv-*.whl; do python3 -m zipfile -e "$w" "$site"; done
    python3 -c "import pytest" 2>/dev/null || python3 -m pip install --no-index --no-deps --target "$site" .gpu/py/wheels/*.whl 2>&1 | tail -1 \
      || for w in .gpu/py/wheels/*.whl; do python3 -m zipfile -e "$w" "$site"; done
  } >"$out/pytest.log" 2>&1
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" XLA_PYTHON_CLIENT_PREALLOCATE=false
  python3 -c "import pcv, sys; print('pcv', pcv.__version__, pcv.__file__); print(pcv.backends())" >>"$out/pytest.log" 2>&1
  # A display for the window (Viewer tests, the bench's update figure, cupy_animated): NVIDIA's GLX on Xvfb
  # when carried, else a plain Xvfb when the machine has one.
  if [ -f .gpu/start-x.sh ] && [ -d .gpu/x ]; then
    start_x
  elif [ -z "${DISPLAY:-}" ] && command -v Xvfb >/dev/null 2>&1; then
    Xvfb :87 -screen 0 1920x1200x24 -nolisten tcp >/dev/null 2>&1 &
    xvfb_pid=$!
    export DISPLAY=:87
    sleep 1
  fi
  echo "DISPLAY=${DISPLAY:-none}" >>"$out/pytest.log"
  echo "== 1. pytest" >>"$out/pytest.log"
  timeout 100 python3 -m pytest -p no:cacheprovider -rs -v py/tests >>"$out/pytest.log" 2>&1
  r=$?; [ "$r" = 0 ] || rc=1
  echo "pytest rc=$r after $(( $(date +%s) - start )) s" >>"$out/pytest.log"
  echo "== 2. Rust: external_bench 100M" >"$out/bench-rust.log"
  timeout 45 "$ext" --points 100M --size 1920x1080 --repeat 20 >>"$out/bench-rust.log" 2>&1
  r=$?; [ "$r" = 0 ] || rc=1
  echo "external_bench rc=$r after $(( $(date +%s) - start )) s" >>"$out/bench-rust.log"
  echo "== 3. Python: bench_render 100M" >"$out/bench-python.log"
  timeout 60 python3 py/bench/bench_render.py --points 100M --size 1920x1080 --repeat 20 --viewer-points 10M \
    --rust "$out/bench-rust.log" --json "$out/bench.json" --markdown "$out/bench.md" >>"$out/bench-python.log" 2>&1
  r=$?; [ "$r" = 0 ] || rc=1
  echo "bench_render rc=$r after $(( $(date +%s) - start )) s" >>"$out/bench-python.log"
  echo "== 3b. the phases of a render call (PCV_PY_TRACE=1; 100M CuPy points, 1920x1080, out=frame)" >>"$out/bench-python.log"
  PCV_PY_TRACE=1 timeout 120 python3 - >>"$out/bench-python.log" 2>&1 <<'PY'
import time, cupy as cp, pcv
n = 100_000_000
rng = cp.random.default_rng(1)
pos = rng.uniform(-50, 50, size=(n, 3), dtype=cp.float32)
col = rng.integers(0, 256, size=(n, 3), dtype=cp.int32).astype(cp.uint8)
cam = pcv.Camera((-90.0, -70.0, 60.0), 38.0, -28.0, up="z", near=0.5, far=400.0)
frame = pcv.render(pos, col, camera=cam, size=(1920, 1080))
cp.cuda.Device().synchronize()
for k in range(12):
    t = time.perf_counter(); pcv.render(pos, col, camera=cam, size=(1920, 1080), out=frame); w = (time.perf_counter() - t) * 1e3
    if k >= 9: print(f"python wall {w:.3f} ms; stats {frame.stats}", flush=True)
t = time.perf_counter(); d = pos.__dlpack__(stream=1); print(f"cupy __dlpack__ alone {(time.perf_counter() - t) * 1e3:.3f} ms")
t = time.perf_counter(); c = pos.__cuda_array_interface__; print(f"cupy __cuda_array_interface__ alone {(time.perf_counter() - t) * 1e3:.3f} ms")
PY
  echo "== 4. examples" >"$out/examples.log"
  timeout 20 python3 examples/python/torch_to_png.py -o "$out/torch_frame.png" >>"$out/examples.log" 2>&1
  r=$?; [ "$r" = 0 ] || rc=1
  echo "torch_to_png rc=$r" >>"$out/examples.log"
  timeout 15 python3 examples/python/numpy_las_like.py -o "$out/las_like.png" >>"$out/examples.log" 2>&1
  r=$?; [ "$r" = 0 ] || rc=1
  echo "numpy_las_like rc=$r" >>"$out/examples.log"
  timeout 20 python3 examples/python/cupy_animated.py --steps 60 --points 4000000 >>"$out/examples.log" 2>&1
  r=$?; [ "$r" = 0 ] || rc=1
  echo "cupy_animated rc=$r after $(( $(date +%s) - start )) s" >>"$out/examples.log"
  [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null
  rm -rf "$site"
  grep -hE "passed|failed|rc=" "$out"/pytest.log "$out"/bench-rust.log "$out"/bench-python.log "$out"/examples.log | tail -12
  finish
}

# ---- main -------------------------------------------------------------------------------------------

scenario=${1:-}
case "$scenario" in
  "" | -h | --help | help) usage; exit 0 ;;
  list) list "${2:-}"; exit 0 ;;
esac
shift
known=0
for s in "${scenarios[@]}"; do [ "${s%%|*}" = "$scenario" ] && known=1; done
[ "$known" = 1 ] || { echo "gpu.sh: unknown scenario '$scenario'; the scenarios:" >&2; list >&2; exit 2; }
"sc_${scenario//-/_}" "$@"
