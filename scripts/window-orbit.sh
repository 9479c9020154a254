#!/usr/bin/env bash
# A scripted orbit of a real window, as a user would drag it, and what its frame times were.
#
#   scripts/window-orbit.sh FILE OUTDIR [pcv arguments...]
#
# Starts Xvfb (a display of its own), opens FILE in the viewer (default: the CPU backend, 1280x720,
# `--trace`), waits until the file is loaded and drawn, then drags the left mouse button across the
# window with xdotool for about 3.5 s (an orbit, events every 15 ms), releases it and waits 1.5 s. Shift+P saves a
# screenshot with the panel during the drag and after it. Writes to OUTDIR:
#   trace.jsonl       the viewer's per-frame trace
#   summary.json      frames drawn while the camera moved, fps, median/p95 frame interval, lowest
#                     render scale, and how long after the last movement full resolution came back
#   moving.png, after.png   the screenshots (the viewer's own, with the panel)
#   pcv.log           the viewer's output
# Arguments after OUTDIR go to pcv (e.g. --frame-target-ms 0, --backend cuda). Needs Xvfb, xdotool
# and python3. PCV (default target/release/pcv) picks the binary, DISPLAY_NUM (default 97) the display.
set -euo pipefail
if [[ $# -lt 2 ]]; then
    sed -n 2,16p "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
file=$1
out=$2
shift 2
pcv=${PCV:-$(cd "$(dirname "$0")/.." && pwd)/target/release/pcv}
num=${DISPLAY_NUM:-97}
for tool in Xvfb xdotool python3; do
    command -v "$tool" >/dev/null || { echo "window-orbit: $tool is not installed" >&2; exit 1; }
done
[[ -x $pcv ]] || { echo "window-orbit: no pcv binary at $pcv (cargo build --release --bin pcv)" >&2; exit 1; }
[[ -e $file ]] || { echo "window-orbit: $file: no such file" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
file=$(cd "$(dirname "$file")" && pwd)/$(basename "$file")
rm -f "$out"/trace.jsonl "$out"/pcv-*.png

Xvfb ":$num" -screen 0 1920x1080x24 >/dev/null 2>&1 &
xvfb=$!
viewer=
cleanup() {
    [[ -n $viewer ]] && kill "$viewer" 2>/dev/null || true
    kill "$xvfb" 2>/dev/null || true
}
trap cleanup EXIT
export DISPLAY=":$num"
for _ in $(seq 50); do xdotool getmouselocation >/dev/null 2>&1 && break; sleep 0.1; done

(cd "$out" && exec "$pcv" "$file" --backend cpu --size 1280x720 --trace "$out/trace.jsonl" "$@") >"$out/pcv.log" 2>&1 &
viewer=$!
# Loaded and drawn: a trace line with no loader running and the full point count drawn.
python3 - "$out/trace.jsonl" <<'EOF'
import json, sys, time
path, start = sys.argv[1], time.time()
while time.time() - start < 600:
    try:
        lines = [json.loads(l) for l in open(path) if l.strip()]
    except (FileNotFoundError, json.JSONDecodeError):
        lines = []
    if lines and not lines[-1]["loading"] and lines[-1]["points"] > 0:
        print(f"window-orbit: loaded, {lines[-1]['points']} points, after {time.time() - start:.1f} s", file=sys.stderr)
        sys.exit(0)
    time.sleep(0.2)
sys.exit("window-orbit: the file did not load within 600 s")
EOF
sleep 1
wid=$(xdotool search --sync --onlyvisible --pid "$viewer" | head -1)
xdotool windowactivate --sync "$wid" 2>/dev/null || xdotool windowfocus "$wid"
eval "$(xdotool getwindowgeometry --shell "$wid")"
cx=$((X + WIDTH / 2))
cy=$((Y + HEIGHT / 2))
xdotool mousemove "$cx" "$cy"
sleep 0.3
# One xdotool run (no process start between steps): 200 steps of 3 px every 15 ms, about 3.5 s with
# the events' own time, a steady stream of motion as a hand gives; Shift+P halfway.
chain=(mousedown 1)
for k in $(seq 200); do
    chain+=(mousemove "$((cx - 300 + 3 * k))" "$((cy + (k % 40 < 20 ? k % 20 : 20 - k % 20)))" sleep 0.015)
    [[ $k == 120 ]] && chain+=(key shift+p)
done
chain+=(mouseup 1)
xdotool "${chain[@]}"
sleep 1.5
xdotool key shift+p
sleep 1
shots=("$out"/pcv-*.png)
[[ -e ${shots[0]} ]] && mv "${shots[0]}" "$out/moving.png"
[[ ${#shots[@]} -gt 1 ]] && mv "${shots[1]}" "$out/after.png"

python3 - "$out/trace.jsonl" "$out/summary.json" <<'EOF'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
drawn = [l for l in lines if l["rendered"]]
moves = [i for i in range(1, len(lines)) if lines[i]["camera"] != lines[i - 1]["camera"]]
if not moves:
    sys.exit("window-orbit: the camera never moved (did the drag reach the window?)")
t0, t1 = lines[moves[0]]["time_s"], lines[moves[-1]]["time_s"]
during = [l for l in drawn if t0 <= l["time_s"] <= t1]
gaps = [b["time_s"] - a["time_s"] for a, b in zip(during, during[1:])]
low = [l for l in drawn if l["render_scale"] < 1.0]
after = [l for l in drawn if l["render_scale"] >= 1.0 and (not low or l["time_s"] > low[-1]["time_s"])]
full = after[0] if after else None
s = {
    "file": lines[-1]["layers"][0]["label"] if lines[-1]["layers"] else None,
    "points": lines[-1]["points"],
    "look": {k: lines[-1][k] for k in ("mode", "point_size", "point_shape", "edl")},
    "moving_s": round(t1 - t0, 3),
    "frames_while_moving": len(during),
    "fps_while_moving": round((len(during) - 1) / (t1 - t0), 1) if t1 > t0 else None,
    "median_interval_ms": round(1000 * statistics.median(gaps), 1) if gaps else None,
    "p95_interval_ms": round(1000 * sorted(gaps)[int(0.95 * (len(gaps) - 1))], 1) if gaps else None,
    "max_interval_ms": round(1000 * max(gaps), 1) if gaps else None,
    "lowest_render_scale": min(l["render_scale"] for l in during) if during else None,
    # The camera glides to a stop after the mouse is released (the orbit's damping): from its last
    # movement, or 0 where it was already drawn at full resolution then.
    "full_resolution_after_stop_s": round(max(0.0, full["time_s"] - t1), 3) if full else None,
    "last_reduced_to_full_ms": round(1000 * (full["time_s"] - low[-1]["time_s"]), 1) if full and low else None,
}
json.dump(s, open(sys.argv[2], "w"), indent=1)
print(json.dumps(s, indent=1))
EOF
