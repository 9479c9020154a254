#!/usr/bin/env python3
"""How many pixels of two PNGs differ (scripts/gpu.sh checks: `pcv render` on CUDA against the CPU backend;
exact depth ties may differ, every other pixel must not). Exit status 0 when both images were read.

Usage: scripts/gpu/png-diff.py A.png B.png"""
import sys

import numpy as np
from PIL import Image

a, b = (np.asarray(Image.open(p).convert("RGBA")).astype(np.int64) for p in sys.argv[1:3])
if a.shape != b.shape:
    sys.exit(f"png-diff: sizes differ: {a.shape} and {b.shape}")
differ = np.any(a != b, axis=-1)
covered = np.any(b[..., :3] != 0, axis=-1)
print(f"cuda vs cpu png: {a.shape[1]}x{a.shape[0]}, {int(covered.sum())} non-black pixels on cpu, "
      f"{int(differ.sum())} pixels differ ({100.0 * differ.sum() / differ.size:.4f}%)")
