#!/usr/bin/env python3
"""Keeps what a GPU run leaves in OUT within what the device tool brings back (at most 8 files): when OUT
holds more than --max files (in any of its folders), every PNG is drawn into one contact sheet
(contact-sheet.png: each image scaled to --width pixels, its path printed above it) and every file but the
tables (*.md, while they fit) goes into logs.tar.gz, PNGs at full size too while the archive stays under
14 MiB. A logs.tar.gz or contact sheet of an earlier call in the same run is merged, so several
`scripts/gpu.sh` calls in one device run end with one archive. Nothing happens at --max files or fewer.
Without Pillow the PNGs only go into the archive.

Usage: scripts/gpu/pack.py OUT [--max 8] [--width 640]"""
import argparse
import io
import os
import tarfile

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--max", type=int, default=8)
p.add_argument("--width", type=int, default=640)
a = p.parse_args()
TAR, SHEET, TAR_LIMIT = "logs.tar.gz", "contact-sheet.png", 14 << 20

files = []
for d, _, names in os.walk(a.out):
    for n in names:
        rel = os.path.relpath(os.path.join(d, n), a.out)
        if rel not in (TAR, SHEET) and os.path.isfile(os.path.join(a.out, rel)):
            files.append(rel)
files.sort()
have = [f for f in (TAR, SHEET) if os.path.exists(os.path.join(a.out, f))]
if len(files) + len(have) <= a.max:
    raise SystemExit(0)

# The tables stay beside the archive and the sheet while they fit.
tables = sorted((f for f in files if f.endswith(".md")), key=lambda f: os.path.getsize(os.path.join(a.out, f)))
keep = set(tables[: max(0, a.max - 2)])
packed = [f for f in files if f not in keep]

# Members of an earlier archive, then this call's files (a later file of the same name wins).
members = {}
if os.path.exists(os.path.join(a.out, TAR)):
    with tarfile.open(os.path.join(a.out, TAR), "r:gz") as t:
        for m in t.getmembers():
            if m.isfile():
                members[m.name] = t.extractfile(m).read()
for f in packed:
    with open(os.path.join(a.out, f), "rb") as h:
        members[f] = h.read()

pngs = {n: b for n, b in members.items() if n.endswith(".png")}
sheet_ok = False
try:
    from PIL import Image, ImageDraw

    width = a.width if len(pngs) <= 24 else a.width // 2
    thumbs = []
    for n, b in sorted(pngs.items()):
        try:
            im = Image.open(io.BytesIO(b)).convert("RGB")
        except Exception as e:  # a broken PNG is still archived
            print(f"pack: {n}: {e}")
            continue
        h = max(1, im.height * width // im.width)
        thumbs.append((n, im.resize((width, h))))
    if thumbs:
        cols = 2
        rows = (len(thumbs) + cols - 1) // cols
        cell_h = max(t.height for _, t in thumbs) + 16
        sheet = Image.new("RGB", (cols * width, rows * cell_h), (255, 255, 255))
        d = ImageDraw.Draw(sheet)
        for k, (n, t) in enumerate(thumbs):
            x, y = (k % cols) * width, (k // cols) * cell_h
            d.text((x + 4, y + 2), n, fill=(0, 0, 0))
            sheet.paste(t, (x, y + 16))
        sheet.save(os.path.join(a.out, SHEET))
        sheet_ok = True
except ImportError:
    print("pack: no Pillow here: the PNGs go into the archive only")

total, left_out = 0, []
with tarfile.open(os.path.join(a.out, TAR), "w:gz") as t:
    # Logs and data first, then the PNGs, smallest first, while the archive stays small enough to come back.
    for n in sorted(members, key=lambda n: (n.endswith(".png"), len(members[n]) if n.endswith(".png") else 0, n)):
        b = members[n]
        if n.endswith(".png") and sheet_ok and total + len(b) > TAR_LIMIT:
            left_out.append(n)
            continue
        info = tarfile.TarInfo(n)
        info.size = len(b)
        t.addfile(info, io.BytesIO(b))
        total += len(b)
for f in packed:
    os.remove(os.path.join(a.out, f))
for d, _, _ in sorted(os.walk(a.out), key=lambda w: -len(w[0])):
    if d != a.out and not os.listdir(d):
        os.rmdir(d)
print(f"pack: {len(members)} files into {TAR}" + (f" and {len(pngs)} PNGs into {SHEET}" if sheet_ok else "")
      + (f"; kept beside them: {', '.join(sorted(keep))}" if keep else "")
      + (f"; only in the sheet (archive size): {', '.join(left_out)}" if left_out else ""))
