#!/usr/bin/env python3
"""Packs a GPU session's outputs into the few files the device tool brings back (at most 8): every PNG
of STAGE into one contact sheet (each image scaled to WIDTH pixels, its file name printed above it) plus
up to MAX_PNG of them at full size, and every other file into one .tar.gz.

Usage: gpu-pack.py STAGE OUT [--full PNG_NAME ...]"""
import argparse
import os
import tarfile
from PIL import Image, ImageDraw

p = argparse.ArgumentParser()
p.add_argument("stage")
p.add_argument("out")
p.add_argument("--full", nargs="*", default=[], help="PNGs to copy at full size too (at most 5)")
p.add_argument("--width", type=int, default=640)
a = p.parse_args()
os.makedirs(a.out, exist_ok=True)
pngs = sorted(f for f in os.listdir(a.stage) if f.endswith(".png"))
others = sorted(f for f in os.listdir(a.stage) if not f.endswith(".png"))
if pngs:
    thumbs = []
    for f in pngs:
        im = Image.open(os.path.join(a.stage, f)).convert("RGB")
        h = max(1, im.height * a.width // im.width)
        thumbs.append((f, im.resize((a.width, h))))
    cols = 2
    rows = (len(thumbs) + cols - 1) // cols
    cell_h = max(t.height for _, t in thumbs) + 16
    sheet = Image.new("RGB", (cols * a.width, rows * cell_h), (255, 255, 255))
    d = ImageDraw.Draw(sheet)
    for k, (f, t) in enumerate(thumbs):
        x, y = (k % cols) * a.width, (k // cols) * cell_h
        d.text((x + 4, y + 2), f, fill=(0, 0, 0))
        sheet.paste(t, (x, y + 16))
    sheet.save(os.path.join(a.out, "contact-sheet.png"))
for f in a.full[:5]:
    if f in pngs:
        Image.open(os.path.join(a.stage, f)).save(os.path.join(a.out, f))
with tarfile.open(os.path.join(a.out, "logs.tar.gz"), "w:gz") as t:
    for f in others:
        t.add(os.path.join(a.stage, f), arcname=f)
print(f"packed {len(pngs)} PNGs into contact-sheet.png, {len(others)} other files into logs.tar.gz")
