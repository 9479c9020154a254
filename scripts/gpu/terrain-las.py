#!/usr/bin/env python3
"""Writes a large, real-looking aerial lidar tile as LAS 1.2 (point format 2, or 3 with --format 3) with
numpy, fast enough for hundreds of millions of points: rolling terrain, box buildings with flat roofs,
round tree crowns, RGB from the kind of surface, intensity, ASPRS classes (2 ground, 5 high vegetation,
6 building). Format 3 adds what a flight gives: GPS time (flight lines 200 m apart along x, 100 s each),
the point source ID (the line), and returns (tree crowns: 1..3 of 3 by depth in the crown, the rest 1 of
1). --ftus writes an OGC WKT VLR naming a projected CRS in US survey feet (the coordinates are then read
as feet).
Used on the GPU machine (scripts/gpu.sh looks, copc, lod-copc) for benchmarks of loaded files (pcv's own
demo data writers cover small files).

Usage: scripts/gpu/terrain-las.py OUT.las POINTS [--size-m 1000] [--seed 1] [--jobs N] [--format 2|3] [--ftus]

--jobs N > 1 writes pieces of 4M points in N processes, each from its own generator (seed, piece): other
points than the sequential default, as real-looking, and N times faster.
"""
import argparse
import multiprocessing
import os
import struct
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("points", type=float)
p.add_argument("--size-m", type=float, default=1000.0)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--jobs", type=int, default=1, help="write 4M-point pieces in this many processes (other points than --jobs 1)")
p.add_argument("--format", type=int, default=2, choices=(2, 3))
p.add_argument("--ftus", action="store_true", help="an OGC WKT VLR: NAD83 / New Mexico Central (ftUS)")
a = p.parse_args()
n = int(a.points)
rng = np.random.default_rng(a.seed)
size = a.size_m
scale = 0.001
offset = (500000.0, 4100000.0, 0.0)  # UTM-like

# Buildings and trees, placed once.
nb = max(1, int(size * size / 4000))
bx, by = rng.uniform(0, size, nb), rng.uniform(0, size, nb)
bw, bd, bh = rng.uniform(8, 30, nb), rng.uniform(8, 30, nb), rng.uniform(4, 25, nb)
nt = max(1, int(size * size / 300))
tx, ty, tr, th = rng.uniform(0, size, nt), rng.uniform(0, size, nt), rng.uniform(2, 6, nt), rng.uniform(6, 18, nt)


def ground(x, y):
    return (8 * np.sin(x / 97.0) * np.cos(y / 131.0) + 4 * np.sin((x + y) / 53.0) + 0.002 * x).astype(np.float64)


WKT = (b'PROJCS["NAD83 / New Mexico Central (ftUS)",GEOGCS["NAD83",DATUM["North_American_Datum_1983",'
       b'SPHEROID["GRS 1980",6378137,298.257222101]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]],'
       b'PROJECTION["Transverse_Mercator"],PARAMETER["latitude_of_origin",31],PARAMETER["central_meridian",-106.25],'
       b'PARAMETER["scale_factor",0.9999],PARAMETER["false_easting",1640416.667],PARAMETER["false_northing",0],'
       b'UNIT["US survey foot",0.304800609601219],AUTHORITY["EPSG","2258"]]\0')
vlr = b""
if a.ftus:
    vlr = struct.pack("<H16sHH32s", 0, b"LASF_Projection", 2112, len(WKT), b"OGC WKT".ljust(32, b"\0")) + WKT
header_size = 227
data_offset = header_size + len(vlr)
record = 34 if a.format == 3 else 26
chunk = 20_000_000


def make(m, rng):
    """m points drawn from rng: the LAS records and their rounded coordinates' min and max."""
    mins, maxs = np.full(3, np.inf), np.full(3, -np.inf)
    x, y = rng.uniform(0, size, m), rng.uniform(0, size, m)
    z = ground(x, y)
    cls = np.full(m, 2, np.uint8)
    # A point falls on a roof with the building's footprint share, on a crown with the trees'.
    kind = rng.uniform(0, 1, m)
    roof = kind < 0.18
    bi = rng.integers(0, nb, roof.sum())
    x[roof] = bx[bi] + rng.uniform(0, 1, roof.sum()) * bw[bi]
    y[roof] = by[bi] + rng.uniform(0, 1, roof.sum()) * bd[bi]
    z[roof] = ground(bx[bi], by[bi]) + bh[bi]
    cls[roof] = 6
    tree = (kind >= 0.18) & (kind < 0.40)
    ti = rng.integers(0, nt, tree.sum())
    u = rng.normal(size=(tree.sum(), 3))
    u /= np.linalg.norm(u, axis=1)[:, None]
    x[tree] = tx[ti] + u[:, 0] * tr[ti]
    y[tree] = ty[ti] + u[:, 1] * tr[ti]
    z[tree] = ground(tx[ti], ty[ti]) + th[ti] + u[:, 2] * tr[ti] * 0.8
    cls[tree] = 5
    rgb = np.empty((m, 3), np.uint16)
    rgb[:] = (140, 120, 90)
    rgb[roof] = (170, 80, 60)
    rgb[tree] = (50, 120, 40)
    rgb = (rgb.astype(np.int32) + rng.integers(-20, 20, (m, 3))).clip(0, 255).astype(np.uint16) * 257
    fields = [("x", "<i4"), ("y", "<i4"), ("z", "<i4"), ("i", "<u2"), ("b", "u1"), ("c", "u1"), ("a", "i1"), ("u", "u1"),
              ("s", "<u2")]
    fields += [("t", "<f8")] if a.format == 3 else []
    rec = np.zeros(m, dtype=fields + [("r", "<u2"), ("g", "<u2"), ("bl", "<u2")])
    for k, v in enumerate((x, y, z)):
        rec["xyz"[k]] = np.round(v / scale).astype(np.int32)
        w = np.round(v / scale) * scale
        mins[k], maxs[k] = w.min(), w.max()
    rec["i"] = rng.integers(100, 4000, m)
    rec["b"] = 0b00001001  # return 1 of 1
    if a.format == 3:
        line = np.clip(np.floor(y / 200.0), 0, None)
        rec["s"] = line.astype(np.uint16) + 1
        # Lines flown alternately east and west, 100 s each, 20 s turns between.
        along = np.where(line % 2 == 0, x, size - x) / size * 100.0
        rec["t"] = 315_000_000.0 + line * 120.0 + along
        rec["a"] = np.clip(np.round((y - (line + 0.5) * 200.0) / 200.0 * 40.0), -20, 20).astype(np.int8)
        # Crowns: the top third first returns, then second, then third of three.
        depth = np.clip(((th[ti] + tr[ti] * 0.8) - (z[tree] - ground(tx[ti], ty[ti]))) / (tr[ti] * 1.6), 0, 0.999)
        rec["b"][tree] = (np.floor(depth * 3).astype(np.uint8) + 1) | (3 << 3)
    rec["c"] = cls
    rec["r"], rec["g"], rec["bl"] = rgb[:, 0], rgb[:, 1], rgb[:, 2]
    return rec, mins, maxs


def part(k):
    """--jobs: chunk k of 4M points, from its own generator, written at its place in the file."""
    m = min(4_000_000, n - k * 4_000_000)
    rec, lo, hi = make(m, np.random.default_rng([a.seed, k]))
    fd = os.open(a.out, os.O_WRONLY)
    os.pwrite(fd, rec.tobytes(), data_offset + k * 4_000_000 * record)
    os.close(fd)
    return lo, hi


with open(a.out, "wb") as f:
    f.write(b"\0" * header_size + vlr)
    mins, maxs = np.full(3, np.inf), np.full(3, -np.inf)
    if a.jobs > 1:
        f.truncate(data_offset + n * record)
        f.flush()
        with multiprocessing.Pool(a.jobs) as pool:
            for lo, hi in pool.imap_unordered(part, range((n + 3_999_999) // 4_000_000)):
                mins, maxs = np.minimum(mins, lo), np.maximum(maxs, hi)
    else:
        done = 0
        while done < n:
            m = min(chunk, n - done)
            rec, lo, hi = make(m, rng)
            mins, maxs = np.minimum(mins, lo), np.maximum(maxs, hi)
            f.write(rec.tobytes())
            done += m
    h = bytearray(header_size)
    h[0:4] = b"LASF"
    h[24], h[25] = 1, 2
    h[26:58] = b"pcv gpu-terrain-las.py".ljust(32, b"\0")
    struct.pack_into("<H", h, 94, header_size)
    struct.pack_into("<IIBHI", h, 96, data_offset, 1 if vlr else 0, a.format, record, min(n, 0xFFFFFFFF))
    struct.pack_into("<ddd", h, 131, scale, scale, scale)
    struct.pack_into("<ddd", h, 155, *offset)
    struct.pack_into("<dddddd", h, 179, maxs[0] + offset[0], mins[0] + offset[0], maxs[1] + offset[1],
                     mins[1] + offset[1], maxs[2] + offset[2], mins[2] + offset[2])
    f.seek(0)
    f.write(h)
print(f"wrote {n} points to {a.out}")
