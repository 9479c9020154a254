"""A LAS-like cloud made with numpy (integer coordinates with a scale and offset, classes, RGB), rendered
by pcv to a PNG, and shown in a window with --window. Runs on any machine: the CPU backend when there is
no CUDA.

    python examples/python/numpy_las_like.py [-o las_like.png] [--points 2000000] [--window]
"""
import argparse

import numpy as np

import pcv


def las_like(n, seed=1):
    """Terrain with a few boxy buildings and trees, as a LAS file stores it: int32 X, Y, Z in millimetres
    around an offset in UTM, a class per point (2 ground, 5 vegetation, 6 building), and 8-bit RGB."""
    rng = np.random.default_rng(seed)
    scale, offset = 0.001, np.array([500_000.0, 4_100_000.0, 0.0])
    xy = rng.uniform(0, 200, size=(n, 2))
    ground = 3 * np.sin(xy[:, 0] / 30) + 2 * np.cos(xy[:, 1] / 23)
    z = ground.copy()
    cls = np.full(n, 2, np.uint8)
    for cx, cy, w, h in [(50, 60, 30, 12), (130, 140, 25, 18), (150, 40, 20, 9)]:
        inside = (abs(xy[:, 0] - cx) < w / 2) & (abs(xy[:, 1] - cy) < w / 2)
        z[inside] = ground[inside] + h * rng.uniform(0.97, 1.0, inside.sum())
        cls[inside] = 6
    trees = rng.random(n) < 0.02
    trees &= cls == 2
    z[trees] += rng.uniform(2, 9, trees.sum())
    cls[trees] = 5
    X = np.round((xy[:, 0] + offset[0]) / scale).astype(np.int64)
    Y = np.round((xy[:, 1] + offset[1]) / scale).astype(np.int64)
    Z = np.round(z / scale).astype(np.int64)
    palette = {2: (150, 120, 80), 5: (60, 150, 50), 6: (200, 90, 70)}
    rgb = np.zeros((n, 3), np.uint8)
    for c, v in palette.items():
        rgb[cls == c] = v
    rgb = np.clip(rgb.astype(np.int16) + rng.integers(-20, 20, size=(n, 3)), 0, 255).astype(np.uint8)
    return (X, Y, Z), scale, offset, rgb


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", default="las_like.png")
    ap.add_argument("--points", type=int, default=2_000_000)
    ap.add_argument("--window", action="store_true", help="also fly through it in a window (close it to exit)")
    a = ap.parse_args()
    (X, Y, Z), scale, _offset, rgb = las_like(a.points)
    # Local float32 coordinates: the integers times the scale, minus the cloud's centre (as pcv does with
    # files), so that millimetres survive float32.
    xyz = np.stack([X * scale, Y * scale, Z * scale], axis=1)  # float64 metres, UTM
    centre = xyz.mean(axis=0)
    pos = (xyz - centre).astype(np.float32)
    cam = pcv.Camera.look_at((-120.0, -130.0, 90.0), (0.0, 0.0, 0.0))
    img = pcv.render(pos, rgb, camera=cam, size=(1280, 720), point_size="adaptive", edl=True, background="gradient")
    pcv.write_png(img, a.output)
    print(f"{len(pos)} points rendered on {'CUDA' if pcv.backends()['cuda'] else 'the CPU'} -> {a.output}")
    if a.window:
        with pcv.Viewer(size=(1280, 720), camera=cam) as v:
            v.show(pos, rgb)
            v.wait()


if __name__ == "__main__":
    main()
