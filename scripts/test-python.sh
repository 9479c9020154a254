#!/usr/bin/env bash
# The Python module's tests (py/tests, pytest): builds the module's wheel once (maturin, the `dev` profile,
# so it reuses what `cargo test` built), installs it into a private venv (.tools/py-venv, with maturin, numpy
# and pytest from PyPI), and runs the suite under Xvfb (the window test): the numpy path against `pcv render`
# (target/debug/pcv, which `cargo test` builds), every layout, the errors; the GPU tests skip, saying why,
# without CUDA. Ends with a `test result:` line that scripts/test.sh counts.
# Usage: scripts/test-python.sh [pytest arguments]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
venv="$root/.tools/py-venv"
# Through the venv's python (its scripts' #! lines name the path the venv was made at, which a moved or
# shared .tools breaks).
if ! "$venv/bin/python" -c "import maturin, pytest, numpy" 2>/dev/null; then
  echo "test-python: making $venv (maturin, numpy, pytest)"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "maturin>=1.9.4,<2" "numpy>=1.21" "pytest>=7"
fi
wheels="$root/target/py-wheels"
rm -rf "$wheels"
echo "test-python: building the wheel (maturin build --profile dev)"
"$venv/bin/python" -m maturin build --quiet --profile dev -m py/Cargo.toml -o "$wheels" --compatibility linux >/dev/null
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheels"/pcv-*.whl
# Where cargo puts the binary (CARGO_TARGET_DIR when set).
target_dir="${CARGO_TARGET_DIR:-$root/target}"
[ -x "$target_dir/debug/pcv" ] || cargo build --quiet --bin pcv
export PCV_BIN="$target_dir/debug/pcv" PCV_REQUIRE_CLI=1
export LIBGL_ALWAYS_SOFTWARE="${LIBGL_ALWAYS_SOFTWARE:-1}"
junit=$(mktemp --suffix=.xml)
trap 'rm -f "$junit"' EXIT
run=("$venv/bin/python" -m pytest -p no:cacheprovider -rs -q py/tests --junitxml="$junit" "$@")
set +e
if [ -z "${DISPLAY:-}" ] && command -v xvfb-run >/dev/null 2>&1; then
  xvfb-run -a "${run[@]}"
else
  "${run[@]}"
fi
rc=$?
set -e
"$venv/bin/python" - "$junit" <<'PY'
import sys, xml.etree.ElementTree as ET
s = ET.parse(sys.argv[1]).getroot()
s = s if s.tag == "testsuite" else s.find("testsuite")
t, f, e, k = (int(s.get(a, 0)) for a in ("tests", "failures", "errors", "skipped"))
print(f"test result: {'ok' if f + e == 0 else 'FAILED'}. {t - f - e - k} passed; {f + e} failed; {k} ignored; (python: py/tests)")
PY
exit "$rc"
