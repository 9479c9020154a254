#!/usr/bin/env bash
# The Windows smoke test: pcv.exe from the zip, run under wine, checked against the Linux binary.
# scripts/test.sh runs it after `cargo test` (CI: .ci/run); it can also run alone.
#
# How it works:
#   1. installs wine64 (Debian's wine 8.0) and Xvfb (apt), builds the zip with scripts/build-windows.sh
#      (the lean `windows-ci` profile; PCV_WINDOWS_PROFILE=release tests the release build) and the
#      Linux pcv (`cargo build`, a no-op after `cargo test`), and unpacks the zip into
#      target/windows-smoke/app: the test runs what a user unzips.
#   2. compiles a stand-in bcryptprimitives.dll (ProcessPrng over RtlGenRandom) into
#      target/windows-smoke/shim, which wine finds on WINEPATH: Rust's std imports ProcessPrng, which
#      Windows 10+ has and wine 8 lacks. It is never put beside pcv.exe or into the zip.
#   3. writes its own point files (XYZ text, then PLY/LAS/LAZ through the Linux `pcv convert`) into a
#      folder whose name has a space and an accent, and runs the checks below, each printing
#      `test windows::NAME ... ok|FAILED` (and the log of a failure), then one `test result:` line in
#      cargo's form, which test.sh adds to its closing count.
# Checks: the zip's contents; pcv.exe imports only Windows' own DLLs; every kernel is embedded (PTX
# and fatbin); --version; --help names nvcuda.dll; `info` with drive-letter, forward-slash and relative
# backslash paths equals the Linux binary's; a LAZ written by pcv.exe reads back on Linux; `render` of a
# file and of the built-in scene equal the Linux images pixel for pixel (pcv.exe diff agrees) and the
# CPU fallback names nvcuda.dll; relative outputs land in the current folder; a missing file's error
# names its path (and waits for Enter only when pcv.exe has the console to itself, as when
# double-clicked); `bench --json`; `record` into a relative folder equals Linux's frames and poses;
# Ctrl+C (wine delivers SIGINT as a console Ctrl+C) stops a long render; and the viewer in a window
# (wine's WGL on Mesa, under Xvfb) with --frames --screenshot: the panel in the top-left, the rest equal
# to the headless render, and P (from an input script) saves pcv-<time>.png into the current folder,
# equal to the headless render. Images and logs stay in target/windows-smoke/.
# `--cargo-test` (not in CI: it compiles every test binary for Windows too, minutes more) then also runs
# the whole `cargo test` suite built for Windows under wine (cargo's runner), with the same env.
# Exit status: 0 when every check passed.
set -euo pipefail
cargo_test=0
case "${1:-}" in
  --cargo-test) cargo_test=1 ;;
  "") ;;
  *) echo "test-windows: unknown argument '$1' (--cargo-test or nothing)" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
profile=${PCV_WINDOWS_PROFILE:-windows-ci}
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
t0=$(date +%s)
say() { printf 'test-windows: %s\n' "$*" >&2; }

apt_pkgs=(wine64 xvfb xauth libgl1-mesa-dri python3)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing apt packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian installs the 64-bit loader as /usr/lib/wine/wine64 (the `wine` package adds the wrapper).
wine=$(command -v wine64 || echo /usr/lib/wine/wine64)
wineserver=$(command -v wineserver || command -v wineserver64 || echo /usr/lib/wine/wineserver64)
[ -x "$wine" ] || { say "no wine64 after installing it"; exit 1; }
t_apt=$(date +%s)

zip=$(scripts/build-windows.sh --profile "$profile" | tail -n 1)
t_build=$(date +%s)
cargo build --locked --quiet --bin pcv
tdir=${CARGO_TARGET_DIR:-$root/target}
linux_pcv=$tdir/debug/pcv

work=$tdir/windows-smoke
rm -rf "$work/app" "$work/run" "$work/logs"
mkdir -p "$work/app" "$work/logs" "$work/shim" "$work/run/out"
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$zip" "$work/app"
app=$work/app/pcv-windows-x86_64
exe=$app/pcv.exe

cat > "$work/shim/prng.c" <<'EOF'
/* ProcessPrng (bcryptprimitives.dll, Windows 10+) for wine 8, over RtlGenRandom. Test only. */
#include <windows.h>
BOOLEAN NTAPI SystemFunction036(PVOID buffer, ULONG length);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, n)) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
EOF
printf 'LIBRARY bcryptprimitives.dll\nEXPORTS\nProcessPrng\n' > "$work/shim/prng.def"
x86_64-w64-mingw32-gcc-posix -shared -O2 -s -o "$work/shim/bcryptprimitives.dll" \
  "$work/shim/prng.c" "$work/shim/prng.def" -ladvapi32

# Z: is wine's view of /. winpath /a/b -> Z:\a\b
winpath() { printf 'Z:%s' "$(realpath -m "$1" | sed 's|/|\\|g')"; }
export WINEPREFIX=$tdir/wineprefix WINEDEBUG=-all LANG=C.UTF-8
export WINEDLLOVERRIDES="mscoree,mshtml=;bcryptprimitives=n,b"
export WINEPATH
WINEPATH=$(winpath "$work/shim")
unset WINEARCH
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  say "creating the wine prefix $WINEPREFIX"
  env -u DISPLAY "$wine" wineboot -i > "$work/logs/wineboot.log" 2>&1 || true
fi
"$wineserver" -p 30 || true # one server for the console runs
trap '"$wineserver" -k >/dev/null 2>&1 || true' EXIT

run=$work/run
scans="$run/scans é"
mkdir -p "$scans"
# pcv.exe in $run (the current folder), no display; a run over 5 minutes is a failure.
# Input from /dev/null: an error must not wait for Enter (see platform::hold_console_after_error).
win() { (cd "$run" && env -u DISPLAY timeout 300 "$wine" "$exe" "$@" < /dev/null); }
lin() { (cd "$run" && timeout 300 "$linux_pcv" "$@"); }
fail() { echo "FAILED: $*"; return 1; }

passed=0 failed=0
# Runs one check in a subshell with `set -e` in force (in an `if` condition bash would ignore it).
check() {
  local name=$1; shift
  local log=$work/logs/$name.log rc
  set +e
  (set -e; "$@") > "$log" 2>&1
  rc=$?
  set -e
  if [ "$rc" -eq 0 ]; then
    echo "test windows::$name ... ok"; passed=$((passed + 1))
  else
    echo "test windows::$name ... FAILED (log: $log)"; sed 's/^/    /' "$log" | tail -n 40
    failed=$((failed + 1))
  fi
}

zip_holds_exe_and_readme() {
  python3 - "$zip" <<'EOF'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = sorted(z.namelist())
print("\n".join(names))
top = "pcv-windows-x86_64/"
assert top + "pcv.exe" in names and top + "README-windows.txt" in names, "pcv.exe or README-windows.txt missing"
assert not any(n.lower().endswith("bcryptprimitives.dll") for n in names), "the test's ProcessPrng shim is in the zip"
assert all(n.startswith(top) for n in names), "files outside pcv-windows-x86_64/"
readme = z.read(top + "README-windows.txt").decode("utf-8")
assert "\r\n" in readme and "\n" not in readme.replace("\r\n", ""), "README-windows.txt is not CRLF throughout"
assert "## Windows" in readme and "nvcuda.dll" in readme, "README-windows.txt lacks the Windows section"
EOF
}

imports_only_windows_dlls() {
  local dlls
  dlls=$(x86_64-w64-mingw32-objdump -p "$exe" | sed -n 's/^\s*DLL Name: //p' | sort -fu)
  echo "$dlls"
  # Windows' own DLLs; a MinGW runtime here (libstdc++-6, libgcc_s_seh-1, libwinpthread-1) means the
  # static linking in build-windows.sh stopped working.
  local other
  other=$(echo "$dlls" | grep -viE '^(kernel32|ntdll|user32|gdi32|shell32|advapi32|msvcrt|userenv|ws2_32|bcryptprimitives|bcrypt|ole32|oleaut32|imm32|winmm|opengl32|dbghelp|shlwapi|version|api-ms-win-[a-z0-9-]+)\.dll$' || true)
  [ -z "$other" ] || fail "pcv.exe imports DLLs that are not Windows' own: $other"
}

kernels_are_embedded() {
  local cu ptx fatbin
  cu=$(find "$root/crates/pcv-render/kernels" -maxdepth 1 -name '*.cu' | wc -l)
  ptx=$(grep -a -c '^// Generated by NVIDIA NVVM Compiler' "$exe" || true)
  # A fatbin starts with the magic 0xBA55ED50 (little endian).
  fatbin=$(LC_ALL=C grep -obUaP '\x50\xED\x55\xBA' "$exe" | wc -l)
  echo "kernels/*.cu: $cu; PTX texts in pcv.exe: $ptx; fatbin headers: $fatbin"
  [ "$cu" -gt 0 ] && [ "$ptx" -eq "$cu" ] && [ "$fatbin" -ge "$cu" ] || fail "not every kernel is embedded"
}

version_matches_linux() {
  local w l
  w=$(win --version | tr -d '\r'); l=$(lin --version)
  echo "pcv.exe --version: $w; Linux: $l"
  [ "$w" = "$l" ] || fail "the versions differ"
}

help_names_nvcuda() {
  local h
  h=$(win --help | tr -d '\r'; win render --help | tr -d '\r')
  grep -F -A1 -- "--backend" <<< "$h"
  grep -q "nvcuda.dll" <<< "$h" || fail "--help does not name nvcuda.dll"
  ! grep -qE "libcuda|LD_LIBRARY_PATH|xvfb" <<< "$h" || fail "--help names Linux things"
}

write_scans() {
  # 20000 points on a tilted grid with colors and intensity (x y z r g b i).
  awk 'BEGIN { for (i = 0; i < 20000; i++) { x = (i % 200) * 0.05; y = int(i / 200) * 0.05;
         printf "%.3f %.3f %.3f %d %d %d %d\n", 500000 + x, 4100000 + y, 100 + 0.3 * x + 0.1 * y + 0.02 * sin(i),
         (i * 7) % 256, (i * 13) % 256, (i * 29) % 256, i % 4096 } }' > "$scans/scan.xyz"
  lin convert "$scans/scan.xyz" -o "$scans/scan.ply"
  lin convert "$scans/scan.xyz" -o "$scans/scan.las"
  lin convert "$scans/scan.xyz" -o "$scans/scan.laz"
}

# `info --json` without the path, for comparing the two binaries.
info_without_path() { python3 -c 'import json, sys; d = json.load(sys.stdin); [o.pop("path", None) for o in d]; print(json.dumps(d, sort_keys=True))'; }

info_matches_linux() {
  local spec w l
  # Drive letter and backslashes; drive letter and slashes; relative with backslashes.
  for spec in "$(winpath "$scans/scan.ply")" "$(winpath "$scans/scan.las" | tr '\\' /)" 'scans é\scan.laz' 'scans é\scan.xyz'; do
    w=$(win info --json "$spec" | tr -d '\r' | info_without_path)
    l=$(lin info --json "$scans/$(basename "${spec//\\//}")" | info_without_path)
    echo "$spec: ${w:0:160}..."
    [ "$w" = "$l" ] || { echo "Windows: $w"; echo "Linux:   $l"; fail "info differs for $spec"; }
  done
  # (Captured first: `grep -q` in a pipe under pipefail fails when the writer gets SIGPIPE.)
  local text
  text=$(win info "$(winpath "$scans/scan.laz")" | tr -d '\r')
  grep -q "points *20000" <<< "$text" || { echo "$text"; fail "the text report lacks the count"; }
}

convert_on_windows_reads_on_linux() {
  win convert 'scans é\scan.ply' -o 'out\from windows.laz'
  [ -f "$run/out/from windows.laz" ] || fail "pcv.exe convert did not write out\\from windows.laz in the current folder"
  local w l
  w=$(lin info --json "$run/out/from windows.laz" | info_without_path)
  l=$(lin info --json "$scans/scan.laz" | info_without_path)
  [ "$w" = "$l" ] || { echo "$w"; echo "$l"; fail "the LAZ written on Windows reads back differently"; }
}

render_file_matches_linux() {
  win render "$(winpath "$scans/scan.laz")" --size 320x180 -o 'file-win.png'
  [ -f "$run/file-win.png" ] || fail "render -o file-win.png did not write into the current folder"
  lin render "$scans/scan.laz" --size 320x180 -o "$run/file-linux.png"
  lin diff "$run/file-win.png" "$run/file-linux.png"
}

render_scene_matches_linux() {
  local scene=(--points 200k --seed 7 --camera -3,0.5,0.2,-8,-3 --size 320x180)
  win render "${scene[@]}" -o "out\scene-win.png" 2> "$run/scene-win.err"
  tr -d '\r' < "$run/scene-win.err"
  grep -q "using the CPU backend" "$run/scene-win.err" || fail "no CPU fallback note"
  grep -q "nvcuda.dll" "$run/scene-win.err" || fail "the fallback note does not name nvcuda.dll"
  ! grep -qE "libcuda|LD_LIBRARY_PATH" "$run/scene-win.err" || fail "the fallback note names Linux's library"
  lin render "${scene[@]}" -o "$run/out/scene-linux.png"
  lin diff "$run/out/scene-win.png" "$run/out/scene-linux.png"
  # pcv.exe's own diff, on a relative and a drive-letter path, writing its mask next to them.
  win diff 'out\scene-win.png' "$(winpath "$run/out/scene-linux.png")" --out 'out\scene-diff.png' | tr -d '\r'
  [ -f "$run/out/scene-diff.png" ] || fail "pcv.exe diff --out wrote no out\\scene-diff.png"
}

missing_file_names_its_path() {
  local rc=0
  win info 'C:\no such folder\scan.ply' 2> "$run/missing.err" || rc=$?
  tr -d '\r' < "$run/missing.err"
  [ "$rc" -ne 0 ] || fail "exit status 0 for a missing file"
  grep -qF 'C:\no such folder\scan.ply' "$run/missing.err" || fail "the error does not name the path"
  ! grep -q "panicked" "$run/missing.err" || fail "panic"
  ! grep -q "Press Enter" "$run/missing.err" || fail "waited for Enter with input from /dev/null"
}

console_holds_an_error_until_enter() {
  # Alone on a console (wine gives the process one on a pseudo-terminal; on Windows: double-clicked),
  # pcv.exe keeps an error on screen until Enter, then exits with status 1.
  local cmd out rc=0
  cmd=$(printf '%q ' cd "$run")"&& "$(printf '%q ' env -u DISPLAY "$wine" "$exe" info 'C:\no such folder\scan.ply')
  out=$( (sleep 3; printf '\r'; sleep 1) | timeout 60 script -qec "$cmd" /dev/null | tr -d '\r') || rc=$?
  echo "$out" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g'
  echo "exit status $rc"
  grep -q "Press Enter to close this window" <<< "$out" || fail "no 'Press Enter' prompt"
  [ "$rc" -eq 1 ] || fail "exit status $rc, not 1 (124: still waiting after Enter)"
}

bench_writes_json() {
  win bench --points 50k --size 160x90 --warmup 1 --frames 2 --backend cpu --json 'out\bench.json' | tr -d '\r'
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(sorted(d)[:8])' "$run/out/bench.json"
}

record_writes_frames_into_a_relative_folder() {
  # A two-keyframe flight of the built-in scene; ffmpeg is not on wine's PATH: PNG frames only.
  mkdir -p "$run/paths"
  printf '%s\n' '{ "frame": "local", "keyframes": [ { "t": 0, "camera": "-3,0,0,0,0" },' \
    '  { "t": 0.5, "camera": "-2.5,0.4,0.3,-10,-5" } ] }' > "$run/paths/fly.json"
  local args=(--points 50k --fps 10 --size 160x90)
  win record "${args[@]}" --path 'paths\fly.json' -o 'flight' 2> "$run/record.err"
  tr -d '\r' < "$run/record.err"
  grep -q "ffmpeg is not on PATH" "$run/record.err" || fail "no word on the missing ffmpeg"
  lin record "${args[@]}" --path "$run/paths/fly.json" -o "$run/flight-linux" --no-video
  local n
  n=$(find "$run/flight" -name 'frame-*.png' | wc -l)
  echo "$n frames in flight\\"
  [ "$n" -eq "$(find "$run/flight-linux" -name 'frame-*.png' | wc -l)" ] && [ "$n" -ge 6 ] || fail "frame counts differ"
  lin diff "$run/flight/frame-00000.png" "$run/flight-linux/frame-00000.png"
  local last
  last=$(printf 'frame-%05d.png' $((n - 1)))
  lin diff "$run/flight/$last" "$run/flight-linux/$last"
  diff <(tr -d '\r' < "$run/flight/poses.txt") "$run/flight-linux/poses.txt" || fail "poses.txt differs"
}

ctrl_c_stops_a_long_render() {
  # 100M points take minutes in this build under wine: stop it after 4 s, as Ctrl+C in a console does.
  (cd "$run" && exec env -u DISPLAY "$wine" "$exe" render --points 100M --size 64x36 -o never.png) > "$run/ctrlc.out" 2>&1 &
  local pid=$! t
  sleep 4
  kill -0 "$pid" 2>/dev/null || { cat "$run/ctrlc.out"; fail "the long render ended before Ctrl+C"; }
  kill -INT "$pid"
  for t in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fail "pcv.exe still ran 10 s after Ctrl+C"; fi
  wait "$pid" || true
  tr -d '\r' < "$run/ctrlc.out"
  echo "stopped within $((t * 100)) ms of Ctrl+C"
  [ ! -f "$run/never.png" ] || fail "the interrupted render still wrote its image"
  ! grep -q "panicked" "$run/ctrlc.out" || fail "panic"
}

window_screenshot() {
  # A fresh wine server on the virtual display (the console runs above had none).
  "$wineserver" -k >/dev/null 2>&1 || true; "$wineserver" -w || true
  # The default backend: the panel's Perf section notes why it is the CPU (no nvcuda.dll). P at frame
  # 12 saves a screenshot without the panel, timestamped, into the current folder.
  local scene=(--points 200k --seed 7 --camera -3,0.5,0.2,-8,-3 --size 960x540)
  printf '%s\n' '[ { "frame": 12, "type": "key", "key": "P", "down": true },' \
    '  { "frame": 13, "type": "key", "key": "P", "down": false } ]' > "$run/keys.json"
  rm -f "$run"/pcv-2*.png
  (cd "$run" && LIBGL_ALWAYS_SOFTWARE=1 timeout 300 xvfb-run -a -s "-screen 0 1280x1024x24" \
    "$wine" "$exe" "${scene[@]}" --frames 30 --screenshot window.png --input-script keys.json) 2>&1 | tr -d '\r'
  "$wineserver" -k >/dev/null 2>&1 || true
  [ -f "$run/window.png" ] || fail "no window.png in the current folder"
  lin render "${scene[@]}" --backend cpu -o "$run/window-headless.png"
  local keyshot
  keyshot=$(find "$run" -maxdepth 1 -name 'pcv-2*.png' | head -n 1)
  [ -n "$keyshot" ] || fail "P saved no pcv-<time>.png in the current folder"
  echo "P saved $(basename "$keyshot")"
  lin diff "$keyshot" "$run/window-headless.png"
  # The bottom-right quarter but its last 90 columns (the overlay is about 400 x 280 px at the top left,
  # and the axes sit in the bottom-right corner) equals the headless render; the top-left 200 x 100
  # pixels hold the overlay.
  lin diff "$run/window.png" "$run/window-headless.png" --region 480,270,390,270
  local top
  top=$(lin diff "$run/window.png" "$run/window-headless.png" --region 0,0,200,100 || true)
  echo "top-left: $top"
  [ "${top%% *}" -gt 2000 ] 2>/dev/null || fail "no overlay in the top-left corner of window.png"
}

say "zip $zip; pcv.exe under $("$wine" --version); checks:"
check zip_holds_exe_and_readme zip_holds_exe_and_readme
check imports_only_windows_dlls imports_only_windows_dlls
check kernels_are_embedded kernels_are_embedded
check version_matches_linux version_matches_linux
check help_names_nvcuda help_names_nvcuda
check write_scans write_scans
check info_matches_linux info_matches_linux
check convert_on_windows_reads_on_linux convert_on_windows_reads_on_linux
check render_file_matches_linux render_file_matches_linux
check render_scene_matches_linux render_scene_matches_linux
check missing_file_names_its_path missing_file_names_its_path
check console_holds_an_error_until_enter console_holds_an_error_until_enter
check bench_writes_json bench_writes_json
check record_writes_frames_into_a_relative_folder record_writes_frames_into_a_relative_folder
check ctrl_c_stops_a_long_render ctrl_c_stops_a_long_render
check window_screenshot window_screenshot
cargo_rc=0
if [ "$cargo_test" = 1 ]; then
  # The same toolchain settings as build-windows.sh, and wine as the runner.
  gcc_lib_dir=$(dirname "$(x86_64-w64-mingw32-g++-posix -print-file-name=libstdc++.a)")
  CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc-posix \
  CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc-posix CXX_x86_64_pc_windows_gnu=x86_64-w64-mingw32-g++-posix \
  AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar CXXSTDLIB_x86_64_pc_windows_gnu=static=stdc++ \
  RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static -L native=$gcc_lib_dir" \
  CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$wine" \
    env -u DISPLAY cargo test --locked --profile "$profile" --target x86_64-pc-windows-gnu --no-fail-fast || cargo_rc=$?
fi
t_end=$(date +%s)
say "time: apt $((t_apt - t0)) s, zip $((t_build - t_apt)) s, checks $((t_end - t_build)) s, total $((t_end - t0)) s"
status=ok; [ "$failed" -eq 0 ] || status=FAILED
echo "test result: $status. $passed passed; $failed failed; 0 ignored; 0 measured; 0 filtered out; finished in $((t_end - t0))s"
[ "$failed" -eq 0 ] && [ "$cargo_rc" -eq 0 ]
