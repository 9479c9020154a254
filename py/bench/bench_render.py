"""Times `pcv.render` on device arrays from CuPy and PyTorch (the same memory), against the same call
from Rust (examples/external_bench.rs prints `rust ...` lines; pass them with --rust) and against the
host-copy path other viewers take (device -> numpy -> pcv, which uploads them again), and the
window's `Viewer.update` + frame. Also: device memory pcv takes during the calls, host memory growth,
and what the layouts pcv does not read in place would cost to repack on the device.

Same points and camera as external_bench: --points uniform in a 100 m cube around 0, eye (-90, -70, 60),
yaw 38, pitch -28, z up, planes 0.5..400 m (fixed: no bounds pass), `vis` mode, 1-pixel points.

    python3 py/bench/bench_render.py [--points 100M] [--size 1920x1080] [--repeat 30] [--rust rust.log]
        [--viewer-points 10M] [--json out.json] [--markdown out.md]
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import pcv


def count(s):
    m = {"k": 1e3, "M": 1e6, "B": 1e9}
    return int(float(s[:-1]) * m[s[-1]]) if s[-1] in m else int(s)


def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def timed(fn, repeat, warm=3, sync=None):
    for _ in range(warm):
        fn()
    walls = []
    for _ in range(repeat):
        t = time.perf_counter()
        r = fn()
        if sync:
            sync()
        walls.append((time.perf_counter() - t) * 1e3)
        last = r
    return statistics.median(walls), last


class CaiOnly:
    def __init__(self, a):
        self.a = a
        self.__cuda_array_interface__ = a.__cuda_array_interface__


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", default="100M")
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--rust", help="external_bench's output, for the overhead column")
    ap.add_argument("--viewer-points", default="10M")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    import cupy as cp

    n = count(a.points)
    w, h = (int(v) for v in a.size.split("x"))
    b = pcv.backends()
    if b["cuda"] is None:
        sys.exit(f"bench_render: no CUDA backend: {b['cuda_error']}")
    print(f"bench_render: {n} points, {w}x{h}, on {b['cuda']}", flush=True)
    rust = {}
    if a.rust and os.path.exists(a.rust):
        for line in open(a.rust):
            if line.startswith("rust "):
                head, _, rest = line[5:].partition(" points=")
                fields = dict(kv.split("=") for kv in rest.split()[1:])
                rust[head.strip()] = {k: float(v) for k, v in fields.items()}
    cam = pcv.Camera((-90.0, -70.0, 60.0), 38.0, -28.0, up="z", near=0.5, far=400.0)
    rows, notes = [], []
    sync = cp.cuda.Device().synchronize

    free0 = cp.cuda.runtime.memGetInfo()[0]
    rng = cp.random.default_rng(1)
    pos4 = rng.uniform(-50, 50, size=(n, 4), dtype=cp.float32)
    pos = cp.ascontiguousarray(pos4[:, :3])
    col = rng.integers(0, 256, size=(n, 3), dtype=cp.int32).astype(cp.uint8)
    sync()
    points_bytes = pos.nbytes + col.nbytes
    rss0 = rss()
    free_inputs = cp.cuda.runtime.memGetInfo()[0]
    frame = pcv.render(pos, col, camera=cam, size=(w, h))
    low = [cp.cuda.runtime.memGetInfo()[0]]

    def case(name, fn, rust_case=None, repeat=a.repeat, warm=3):
        ms, f = timed(fn, repeat, warm=warm)
        low.append(cp.cuda.runtime.memGetInfo()[0])
        gpu = f.stats["total_ms"] if isinstance(f, pcv.Frame) and f.stats else float("nan")
        r = rust.get(rust_case, {}) if rust_case else {}
        row = dict(case=name, points=n, wall_ms=round(ms, 3), gpu_ms=round(gpu, 3))
        if r:
            row["rust_wall_ms"] = r["wall_ms"]
            row["overhead_ms"] = round(ms - r["wall_ms"], 3)
        rows.append(row)
        print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        return f

    case("cupy (N,3) f32 + u8 (N,3), out=frame", lambda: pcv.render(pos, col, camera=cam, size=(w, h), out=frame), "external (N,3)")
    case("cupy (N,3), new frame each call", lambda: pcv.render(pos, col, camera=cam, size=(w, h)), "external (N,3)")
    case("cupy (N,4) strided, out=frame", lambda: pcv.render(pos4, col, camera=cam, size=(w, h), out=frame), "external (N,4)")
    cai_pos, cai_col = CaiOnly(pos), CaiOnly(col)
    case("__cuda_array_interface__ (N,3), out=frame", lambda: pcv.render(cai_pos, cai_col, camera=cam, size=(w, h), out=frame), "external (N,3)")
    try:
        import torch

        tpos, tcol = torch.from_dlpack(pos), torch.from_dlpack(col)
        assert tpos.data_ptr() == pos.data.ptr
        case("torch (N,3) (same memory), out=frame", lambda: pcv.render(tpos, tcol, camera=cam, size=(w, h), out=frame), "external (N,3)")
        f = pcv.render(tpos, tcol, camera=cam, size=(w, h))
        t = torch.from_dlpack(f)
        notes.append(f"torch.from_dlpack(frame).data_ptr() == frame.ptr: {t.data_ptr() == f.ptr} ({f.ptr:#x})")
        del t, f
    except ImportError as e:
        notes.append(f"torch not timed: {e}")
    free_low = min(low)
    notes.append(
        f"device memory: inputs {points_bytes / 2**20:.0f} MiB; pcv took at most {(free_inputs - free_low) / 2**20:.1f} MiB more during the calls "
        f"(its frame {w * h * 4 / 2**20:.1f} MiB and visibility buffer {w * h * 8 / 2**20:.1f} MiB, kept between calls); a copy of the points would be {points_bytes / 2**20:.0f} MiB"
    )
    notes.append(f"host memory (RSS) growth over the device-array calls: {(rss() - rss0) / 2**20:.1f} MiB (the points are {points_bytes / 2**20:.0f} MiB)")

    # Layouts pcv does not read in place: what the caller's conversion costs on the device.
    for name, fn in [
        ("repack float64 (N,3) -> float32 (cupy astype)", lambda p64=pos.astype(cp.float64): p64.astype(cp.float32)),
        ("repack (N,4) -> contiguous (N,3) (not needed: read in place)", lambda: cp.ascontiguousarray(pos4[:, :3])),
        ("repack int32 colours -> uint8", lambda c32=col.astype(cp.int32): c32.astype(cp.uint8)),
    ]:
        ms, _ = timed(fn, 5, warm=1, sync=sync)
        rows.append(dict(case=name, points=n, wall_ms=round(ms, 3)))
        print(f"case={name}  wall_ms={ms:.3f}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()

    # The host-copy path: device -> numpy -> pcv.render (uploads and sorts again), as viewers that copy do.
    def host_path():
        hp, hc = cp.asnumpy(pos), cp.asnumpy(col)
        return pcv.render(hp, hc, camera=cam, size=(w, h), mode="vis", backend="cuda")

    case("host copy: cupy.asnumpy + pcv.render(numpy)", host_path, None, repeat=3, warm=1)

    vn = count(a.viewer_points)
    if os.environ.get("DISPLAY"):
        vpos, vcol = pos[:vn], col[:vn]
        try:
            v = pcv.Viewer(size=(1920, 1080), camera=pcv.Camera((-90.0, -70.0, 60.0), 38.0, -28.0, up="z", near=0.5, far=400.0), vsync=False)
            v.show(vpos, vcol)
            ms, _ = timed(lambda: v.update(vpos, vcol, wait=True), a.repeat)
            rows.append(dict(case=f"Viewer.update(wait=True) + frame, {vn} points, 1920x1080", points=vn, wall_ms=round(ms, 3)))
            print(f"case=viewer update+frame points={vn} wall_ms={ms:.3f}", flush=True)
            v.close()
        except Exception as e:  # the window needs GL: say why there is no figure
            notes.append(f"viewer not timed: {type(e).__name__}: {e}")
    else:
        notes.append("viewer not timed: no DISPLAY")
    for nline in notes:
        print("note:", nline, flush=True)
    if a.json:
        json.dump(dict(points=n, size=[w, h], device=b["cuda"], rows=rows, notes=notes), open(a.json, "w"), indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(f"{n} points, {w}x{h}, {b['cuda']}\n\n| case | wall ms | kernels ms | Rust wall ms | Python overhead ms |\n|---|---|---|---|---|\n")
            for r in rows:
                f.write(f"| {r['case']} | {r['wall_ms']} | {r.get('gpu_ms', '')} | {r.get('rust_wall_ms', '')} | {r.get('overhead_ms', '')} |\n")
            f.write("\n" + "\n".join(f"- {x}" for x in notes) + "\n")


if __name__ == "__main__":
    main()
