"""Shared helpers of the Python tests: clouds made here, PLY files for `pcv render`, a PNG reader
(zlib only), and where the `pcv` binary is (the CLI path the module's images are compared with)."""
import os
import pathlib
import shutil
import struct
import zlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cloud(n=20000, seed=7):
    """n points in [-4, 4]^3 (a box around 0, so `pcv render` keeps the origin at 0 and the same f32
    positions), float32 (n, 3), and uint8 (n, 3) colours."""
    rng = np.random.default_rng(seed)
    pos = rng.uniform(-4.0, 4.0, size=(n, 3)).astype(np.float32)
    col = rng.integers(0, 256, size=(n, 3), dtype=np.uint8)
    return pos, col


def write_ply(path, pos, col):
    """Binary little-endian PLY: float x, y, z and uchar red, green, blue per vertex."""
    n = len(pos)
    header = (
        "ply\nformat binary_little_endian 1.0\n"
        f"element vertex {n}\n"
        "property float x\nproperty float y\nproperty float z\n"
        "property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n"
    ).encode()
    rec = np.zeros(n, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("r", "u1"), ("g", "u1"), ("b", "u1")])
    rec["x"], rec["y"], rec["z"] = pos[:, 0], pos[:, 1], pos[:, 2]
    rec["r"], rec["g"], rec["b"] = col[:, 0], col[:, 1], col[:, 2]
    pathlib.Path(path).write_bytes(header + rec.tobytes())


def read_png(path):
    """An 8-bit RGBA or RGB PNG (not interlaced) as a uint8 (height, width, 4) array, top row first."""
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, f"{path}: unsupported PNG {ihdr}"
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = w * bpp
    out = np.zeros((h, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = cur[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 0:
                p = 0
            elif f == 1:
                p = a
            elif f == 2:
                p = b
            elif f == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + p) & 0xFF
        out[y] = cur
        prev = cur
    img = out.reshape(h, w, bpp)
    if bpp == 3:
        img = np.concatenate([img, np.full((h, w, 1), 255, np.uint8)], axis=2)
    return img


def pcv_binary():
    """The `pcv` binary: $PCV_BIN, else target/{debug,release}/pcv of this repo, else `pcv` on PATH."""
    env = os.environ.get("PCV_BIN")
    if env:
        return env
    for p in (ROOT / "target" / "debug" / "pcv", ROOT / "target" / "release" / "pcv"):
        if p.exists():
            return str(p)
    return shutil.which("pcv")
