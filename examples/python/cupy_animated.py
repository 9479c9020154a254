"""CuPy points animated in a loop, shown live: each step moves every point on the GPU (a wave over a
grid) and hands the array to the window, which draws it in place (no copy). Fly with the usual
controls (mouse, WASD) while the loop runs; closing the window ends it.

    python examples/python/cupy_animated.py [--points 4000000] [--steps 0 (forever)]
"""
import argparse
import time

import cupy as cp

import pcv


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=4_000_000)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: until the window closes)")
    ap.add_argument("--size", default="1280x720")
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.split("x"))
    side = int(a.points ** 0.5)
    u, v = cp.meshgrid(cp.linspace(-10, 10, side, dtype=cp.float32), cp.linspace(-10, 10, side, dtype=cp.float32))
    pos = cp.zeros((side * side, 4), cp.float32)  # (N, 4): read in place, the 4th column ignored
    pos[:, 0], pos[:, 1] = u.ravel(), v.ravel()
    col = cp.zeros((side * side, 3), cp.uint8)
    viewer = pcv.Viewer(size=(w, h), camera=pcv.Camera.look_at((-16.0, -16.0, 12.0), (0.0, 0.0, 0.0)))
    viewer.show(pos, col)
    step, t0 = 0, time.perf_counter()
    while viewer.is_open and (a.steps == 0 or step < a.steps):
        t = time.perf_counter() - t0
        r = cp.sqrt(pos[:, 0] ** 2 + pos[:, 1] ** 2)
        pos[:, 2] = cp.sin(r - 3 * t) / (1 + 0.2 * r) * 2
        col[:, 0] = (128 + 127 * cp.sin(r - 3 * t)).astype(cp.uint8)
        col[:, 1] = 90
        col[:, 2] = (128 - 127 * cp.sin(r - 3 * t)).astype(cp.uint8)
        # The same arrays each step: the window waits for CuPy's stream, then redraws them.
        if not viewer.update(pos, col, wait=True):
            break
        step += 1
    print(f"{step} steps, {step / (time.perf_counter() - t0):.1f} updates/s for {side * side} points")
    viewer.close()


if __name__ == "__main__":
    main()
