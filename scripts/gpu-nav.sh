#!/bin/bash
# On the GPU machine, from the checkout's root: the viewer as a user meets it, on the CUDA backend in a
# real window (Xvfb + NVIDIA GLX, CUDA-GL interop). Writes nav.log and up to 7 screenshots to $OUT.
#
# Prepare here first:
#   scripts/gpu-prepare.sh --windowed
#   cargo build --release --example demo_data && install -m 755 target/release/examples/demo_data .gpu/bin/
# Then run there:  bash scripts/gpu-nav.sh [demo scale, default 4]
# A dry run here, on the CPU and a virtual display: PCV_NAV_BACKEND=cpu PCV_NAV_X=skip
#   PCV_NAV_BIN=target/release xvfb-run -a bash scripts/gpu-nav.sh 0.25
#
#   1. demo files (aerial LAS tile with buildings and trees in UTM, its sparse LAZ, a 500 m road strip,
#      a y-up 15 cm object, a room), --scale times the default density (4: a 4M-point tile)
#   2. the first view of each, 1920x1080, panel on: framed, upright (look at the PNGs)
#   3. the same click on CUDA and on the CPU (input script, --trace): the same picked point, index,
#      file coordinates and attributes; the same scripted orbit, pan and zoom: the same final camera
#   4. an idle window on CUDA: CPU seconds over 3 s and GPU utilization samples (both should be ~0)
#   5. a flight held on W for 3 s with --continuous: frames drawn and frame times from the trace
#   6. pcv record of a 4 s path at 30 fps, 1920x1080: frames and ms per frame
set -u
out=${OUT:-/tmp/pcv-out}; mkdir -p "$out"
scale=${1:-4}
backend=${PCV_NAV_BACKEND:-cuda}
bin=${PCV_NAV_BIN:-.gpu/bin}
[ "${PCV_NAV_X:-}" = skip ] || source .gpu/start-x.sh
[ "$backend" = cuda ] && export PCV_REQUIRE_KERNELS=1 PCV_REQUIRE_CUDA=1
pcv=$bin/pcv
demo_data=$bin/demo_data; [ -x "$demo_data" ] || demo_data=$bin/examples/demo_data
gpu_util() { command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits || echo n/a; }
demo=/tmp/pcv-demo
work=/tmp/pcv-nav; mkdir -p "$work"
log="$out/nav.log"
{
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "== 1. demo data (scale $scale)"
  $demo_data "$demo" --scale "$scale"

  echo "== 2. first views, 1920x1080, $backend"
  for f in terrain.las road-strip.laz bunny.ply terrain-sparse.laz room.pcd; do
    $pcv "$demo/$f" --backend $backend --size 1920x1080 --frames 30 --screenshot "$out/first-${f%%.*}.png" 2>&1 | tail -1
  done

  echo "== 3. the same input on $backend and on the CPU"
  cat > "$work/click.json" <<'EOF'
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
    $pcv "$demo/terrain.las" --backend $b --size 1920x1080 --frames 22 --input-script "$work/click.json" --trace "$work/trace-$b.jsonl" 2>&1 | tail -1
    python3 -c "
import json; t=[json.loads(l) for l in open('$work/trace-$b.jsonl')]
print('$b picked at frame 5:', json.dumps(t[5]['picked']))
print('$b camera at the end:', t[-1]['camera'])"
  done
  python3 -c "
import json
a=[json.loads(l) for l in open('$work/trace-$backend.jsonl')]; b=[json.loads(l) for l in open('$work/trace-cpu.jsonl')]
print('same pick:', a[5]['picked']==b[5]['picked'], ' same final camera:', a[-1]['camera']==b[-1]['camera'])"
  $pcv "$demo/terrain.las" --backend $backend --size 1920x1080 --frames 8 --input-script "$work/click.json" --screenshot "$out/picked-$backend.png" 2>&1 | tail -1

  echo "== 4. idle window on $backend: CPU and GPU"
  $pcv "$demo/terrain.las" --backend $backend --size 1920x1080 --trace "$work/idle.jsonl" > /dev/null 2>&1 &
  pid=$!
  sleep 8
  t0=$(awk '{print $14+$15}' /proc/$pid/stat); n0=$(wc -l < "$work/idle.jsonl")
  gpu=$(for i in 1 2 3 4 5 6; do gpu_util; sleep 0.5; done | tr '\n' ' ')
  t1=$(awk '{print $14+$15}' /proc/$pid/stat); n1=$(wc -l < "$work/idle.jsonl")
  echo "idle: $((t1 - t0)) CPU ticks (1/100 s) and $((n1 - n0)) frames in 3 s; GPU utilization % samples: $gpu"
  kill $pid; wait $pid 2>/dev/null

  echo "== 5. flying: W held, --continuous, $backend, 1920x1080"
  python3 -c "
import json
steps=[{'frame': 2, 'type': 'key', 'key': 'O', 'down': True}, {'frame': 3, 'type': 'key', 'key': 'O', 'down': False},
       {'frame': 5, 'type': 'key', 'key': 'W', 'down': True}]
json.dump(steps, open('$work/fly.json', 'w'))"
  timeout 20 $pcv "$demo/terrain.las" --backend $backend --size 1920x1080 --continuous --no-vsync --frames 400 --input-script "$work/fly.json" --trace "$work/fly.jsonl" 2>&1 | tail -1
  python3 -c "
import json; t=[json.loads(l) for l in open('$work/fly.jsonl')]
print(len(t), 'frames; eye from', t[5]['eye_local'], 'to', t[-1]['eye_local'])"

  echo "== 6. pcv record, 4 s at 30 fps, 1920x1080, $backend"
  python3 -c "
import json
t=[json.loads(l) for l in open('$work/trace-$backend.jsonl')]
a=t[0]['camera'].split()[1]; b=t[-1]['camera'].split()[1]
json.dump({'keyframes': [{'t': 0, 'camera': a}, {'t': 4, 'camera': b}]}, open('$work/path.json', 'w'))"
  $pcv record "$demo/terrain.las" --backend $backend --path "$work/path.json" --fps 30 -o "$work/rec" --size 1920x1080 2>&1 | tail -3
  ls "$work/rec" | wc -l
  cp "$work/rec/frame-00060.png" "$out/record-frame60.png" 2>/dev/null
} 2>&1 | tee "$log"
