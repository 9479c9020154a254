"""The module on the CUDA backend, with device arrays from CuPy, PyTorch, Numba and JAX: each is read
where it is (no host copy, no device copy), gives the same image as the numpy input on the CPU backend,
frames go to PyTorch and CuPy in place, and a producer's pending kernel is finished before pcv reads.
Skips (saying why) without CUDA or without the library in question; scripts/gpu.sh python runs it on
the GPU machine."""
import os
import resource

import numpy as np
import pytest

import pcv
from helpers import cloud

CUDA = pcv.backends()
pytestmark = pytest.mark.skipif(CUDA["cuda"] is None, reason=f"no CUDA backend: {CUDA['cuda_error']}")

W, H = 320, 240
EYE, YAW, PITCH = (-9.0, -7.0, 6.0), 38.0, -28.0


def cam():
    return pcv.Camera(EYE, YAW, PITCH, up="z")


def cpu_image(pos, col=None, **kw):
    return pcv.render(np.ascontiguousarray(pos), None if col is None else np.ascontiguousarray(col), camera=cam(), size=(W, H), backend="cpu", **kw)


def gpu_image(pos, col=None, **kw):
    f = pcv.render(pos, col, camera=cam(), size=(W, H), **kw)
    assert isinstance(f, pcv.Frame), type(f)
    return f


def same(frame, ref, what):
    img = frame.numpy() if isinstance(frame, pcv.Frame) else frame
    diff = (img != ref).any(axis=2)
    assert diff.sum() == 0, f"{what}: {diff.sum()} of {W * H} pixels differ from the CPU backend's image"


def lib(name):
    try:
        return __import__(name)
    except Exception as e:  # an import error, or a library that finds no GPU
        pytest.skip(f"{name} is not usable here: {e}")


def test_cupy_inputs_every_layout():
    cp = lib("cupy")
    pos, col = cloud()
    ref = cpu_image(pos, col)
    dpos, dcol = cp.asarray(pos), cp.asarray(col)
    same(gpu_image(dpos, dcol), ref, "cupy (N,3) f32 + (N,3) u8")
    pos4 = cp.concatenate([dpos, cp.ones((len(pos), 1), cp.float32)], axis=1)
    same(gpu_image(pos4, dcol), ref, "cupy (N,4)")
    wide = cp.zeros((2 * len(pos), 3), cp.float32)
    wide[::2] = dpos
    same(gpu_image(wide[::2], dcol), ref, "cupy every other row")
    same(gpu_image(cp.asfortranarray(dpos), dcol), ref, "cupy Fortran order")
    col4 = cp.concatenate([dcol, cp.full((len(pos), 1), 255, cp.uint8)], axis=1)
    same(gpu_image(dpos, col4), ref, "cupy u8 (N,4)")
    same(gpu_image(dpos, col4.view(cp.uint32).reshape(-1)), ref, "cupy packed u32")
    same(gpu_image(dpos, dcol.astype(cp.float32) / 255), ref, "cupy float colours")
    look = dict(edl=True, point_size=3, background="gradient")
    same(gpu_image(dpos, dcol, **look), cpu_image(pos, col, **look), "cupy, EDL and 3-pixel points")


class CaiOnly:
    """An array seen only through __cuda_array_interface__ (as Numba's and many others are)."""

    def __init__(self, a):
        self.a = a
        self.__cuda_array_interface__ = a.__cuda_array_interface__


def test_cuda_array_interface_path():
    cp = lib("cupy")
    pos, col = cloud()
    ref = cpu_image(pos, col)
    same(gpu_image(CaiOnly(cp.asarray(pos)), CaiOnly(cp.asarray(col))), ref, "cupy through __cuda_array_interface__")


def test_torch_inputs_and_frame_in_place():
    torch = lib("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    pos, col = cloud()
    ref = cpu_image(pos, col)
    tpos, tcol = torch.from_numpy(pos).cuda(), torch.from_numpy(col).cuda()
    f = gpu_image(tpos, tcol)
    same(f, ref, "torch")
    t = torch.from_dlpack(f)
    assert t.data_ptr() == f.ptr, "torch.from_dlpack copied the frame"
    assert t.shape == (H, W, 4) and t.dtype == torch.uint8
    assert torch.equal(t.cpu(), torch.from_numpy(ref))
    same(gpu_image(tpos[:, [0, 1, 2]].contiguous(), tcol.float() / 255), ref, "torch float colours")
    # A transposed (3, N) buffer seen as (N, 3): column stride N*4, row stride 4.
    same(gpu_image(tpos.t().contiguous().t(), tcol), ref, "torch column-major positions")
    del t, f


def test_frame_to_cupy_in_place_and_out():
    cp = lib("cupy")
    pos, col = cloud()
    dpos, dcol = cp.asarray(pos), cp.asarray(col)
    f = gpu_image(dpos, dcol)
    a = cp.asarray(f)
    assert a.data.ptr == f.ptr, "cupy.asarray copied the frame"
    assert a.shape == (H, W, 4) and a.dtype == cp.uint8
    # Rendering into the same frame (out=) writes the same buffer.
    g = pcv.render(dpos, dcol, camera=cam(), size=(W, H), out=f)
    assert g is f and g.ptr == a.data.ptr
    f2, d = pcv.render(dpos, dcol, camera=cam(), size=(W, H), depth=True)
    _, dref = cpu_image(pos, col, depth=True)
    assert np.array_equal(cp.asnumpy(cp.asarray(d)), dref)


def test_numba_input():
    numba_cuda = lib("numba.cuda")
    from numba import cuda

    if not cuda.is_available():
        pytest.skip("numba finds no CUDA device")
    pos, col = cloud()
    ref = cpu_image(pos, col)
    same(gpu_image(cuda.to_device(pos), cuda.to_device(col)), ref, "numba")
    del numba_cuda


def test_jax_input():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = lib("jax")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("jax has no GPU device")
    pos, col = cloud()
    ref = cpu_image(pos, col)
    jpos, jcol = jax.device_put(pos, gpus[0]), jax.device_put(col, gpus[0])
    same(gpu_image(jpos, jcol), ref, "jax")


def free_device_bytes():
    import cupy as cp

    return cp.cuda.runtime.memGetInfo()[0]


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_no_copies_of_large_inputs():
    """20M points (240 MB of positions, 60 MB of colours): a render allocates only its frame on the
    device and nothing of the points' size on the host."""
    cp = lib("cupy")
    n = 20_000_000
    rng = cp.random.default_rng(1)
    dpos = rng.uniform(-4, 4, size=(n, 3), dtype=cp.float32)
    dcol = rng.integers(0, 256, size=(n, 3), dtype=cp.int32).astype(cp.uint8)
    cp.cuda.Device().synchronize()
    f = gpu_image(dpos, dcol)  # warm-up: kernels loaded, internal buffers sized
    del f
    free0, rss0 = free_device_bytes(), rss_bytes()
    f = gpu_image(dpos, dcol)
    free1, rss1 = free_device_bytes(), rss_bytes()
    frame_bytes = W * H * 4
    used = free0 - free1
    print(f"\n20M points: device memory taken by a render {used / 2**20:.1f} MiB (frame {frame_bytes / 2**20:.2f} MiB), host RSS growth {(rss1 - rss0) / 2**20:.1f} MiB")
    assert used <= frame_bytes + 4 * 2**20, f"the render took {used} bytes of device memory (a copy of the points would be {n * 15})"
    assert rss1 - rss0 < 16 * 2**20, f"host memory grew by {rss1 - rss0} bytes"
    del f


SPIN = r"""
extern "C" __global__ void spin_then_copy(const float* src, float* dst, long long n, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) dst[i] = src[i];
}
"""


@pytest.mark.parametrize("route", ["dlpack", "cai"])
def test_a_producer_stream_is_finished_before_pcv_reads(route):
    """Positions start as NaN (no point drawn); a kernel on a side stream spins ~0.2 s, then writes the
    real ones. pcv.render called right after (the host does not wait) must see the real positions."""
    cp = lib("cupy")
    pos, col = cloud()
    ref = cpu_image(pos, col)
    src = cp.asarray(pos)
    dst = cp.full(pos.shape, cp.nan, dtype=cp.float32)
    dcol = cp.asarray(col)
    cp.cuda.Device().synchronize()
    kernel = cp.RawKernel(SPIN, "spin_then_copy")
    side = cp.cuda.Stream(non_blocking=True)
    clock_hz = cp.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1000
    with side:
        kernel((64,), (256,), (src, dst, cp.int64(dst.size), cp.int64(int(0.2 * clock_hz))))
        arg = dst if route == "dlpack" else CaiOnly(dst)
        if route == "cai":
            assert arg.__cuda_array_interface__.get("stream") not in (None, 1, 2), "cupy exported no side stream"
        f = gpu_image(arg, dcol)
    same(f, ref, f"{route}: producer on a side stream")


@pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY (the window test runs under Xvfb)")
def test_viewer_updates_device_arrays_in_place():
    """A window on the CUDA backend takes CuPy arrays where they are: ten updates of 5M points allocate
    no device memory (the arrays are drawn in place), and closing it ends the updates."""
    cp = lib("cupy")
    n = 5_000_000
    rng = cp.random.default_rng(2)
    pos = rng.uniform(-4, 4, size=(n, 3), dtype=cp.float32)
    col = rng.integers(0, 256, size=(n, 3), dtype=cp.int32).astype(cp.uint8)
    v = pcv.Viewer(size=(640, 360), backend="cuda", vsync=False)
    v.show(pos, col)
    assert v.is_open
    assert v.update(pos, col, wait=True)
    free0 = free_device_bytes()
    for k in range(10):
        pos[:, 2] += 0.01
        assert v.update(pos, col, wait=True) is True
    used = free0 - free_device_bytes()
    print(f"\nten Viewer.update calls of {n} points took {used / 2**20:.1f} MiB of device memory")
    assert used < 4 * 2**20, f"updates took {used} bytes of device memory"
    v.close()
    assert not v.is_open and v.update(pos, col) is False
