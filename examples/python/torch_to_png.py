"""A PyTorch tensor of points on the GPU -> a pcv frame on the GPU -> a PyTorch tensor (the same
memory: torch.from_dlpack takes the frame in place) -> a PNG written by torch (torchvision.io, else
pcv.write_png of the tensor's host copy).

    python examples/python/torch_to_png.py [-o torch_frame.png] [--points 10000000]
"""
import argparse

import torch

import pcv


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", default="torch_frame.png")
    ap.add_argument("--points", type=int, default=10_000_000)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("torch sees no CUDA device (this example keeps everything on the GPU)")
    g = torch.Generator(device="cuda").manual_seed(0)
    n = a.points
    # A noisy torus knot: positions float32 (N, 3), colours float (N, 3) in 0..1, all on the GPU.
    t = torch.rand(n, device="cuda", generator=g) * 2 * torch.pi
    r = 2 + torch.cos(3 * t)
    pos = torch.stack([r * torch.cos(2 * t), r * torch.sin(2 * t), torch.sin(3 * t)], dim=1)
    pos += 0.08 * torch.randn(n, 3, device="cuda", generator=g)
    col = torch.stack([0.5 + 0.5 * torch.cos(t), 0.5 + 0.5 * torch.sin(3 * t), torch.full_like(t, 0.8)], dim=1)
    cam = pcv.Camera.look_at((0.0, -7.0, 5.0), (0.0, 0.0, 0.0))
    frame = pcv.render(pos, col, camera=cam, size=(1280, 720), edl=True, background="gradient")
    img = torch.from_dlpack(frame)  # (720, 1280, 4) uint8 on the GPU, no copy
    assert img.data_ptr() == frame.ptr
    print(f"{n} points: {frame.stats['total_ms']:.2f} ms of kernels; frame {tuple(img.shape)} at {img.data_ptr():#x} (the kernels' buffer)")
    # Top row first, channels first, RGB (torchvision's PNG writer takes 1 or 3 channels, not RGBA).
    chw = img.flip(0).permute(2, 0, 1)[:3].contiguous()
    try:
        from torchvision.io import write_png

        write_png(chw.cpu(), a.output)
    except ImportError:
        pcv.write_png(img.cpu().numpy(), a.output)
    print(f"-> {a.output}")


if __name__ == "__main__":
    main()
