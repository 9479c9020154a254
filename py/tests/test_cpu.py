"""The module on the CPU backend (what CI runs, no GPU): numpy in, numpy out; the same image as
`pcv render` of the same points and camera; every input layout the kernels read gives the same image;
cameras; errors that name the argument; a window under Xvfb."""
import os
import subprocess

import numpy as np
import pytest

import pcv
from helpers import cloud, pcv_binary, read_png, write_ply

W, H = 160, 120
EYE, YAW, PITCH = (-9.0, -7.0, 6.0), 38.0, -28.0


def cam(**kw):
    return pcv.Camera(EYE, YAW, PITCH, up="z", **kw)


def render(pos, col=None, **kw):
    kw.setdefault("camera", cam())
    kw.setdefault("size", (W, H))
    kw.setdefault("backend", "cpu")
    return pcv.render(pos, col, **kw)


def test_backends_describe_the_cpu():
    b = pcv.backends()
    assert isinstance(b["cpu"], str) and b["cpu"]
    assert (b["cuda"] is None) == (b["cuda_error"] is not None)


def test_numpy_in_numpy_out():
    pos, col = cloud()
    img = render(pos, col)
    assert isinstance(img, np.ndarray)
    assert img.dtype == np.uint8 and img.shape == (H, W, 4)
    # Points landed (not all background) and the background is black (the default).
    lit = (img[..., :3] != 0).any(axis=2)
    assert 0.05 < lit.mean() < 0.95, lit.mean()
    assert (img[~lit][..., :3] == 0).all()


def test_frames_are_upright():
    """Row 0 is the top of the image, as image libraries expect: red points above the view's axis land
    in the top rows, blue ones below it in the bottom rows, a gradient background's top colour is row 0."""
    n = 2000
    rng = np.random.default_rng(3)
    xy = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    up = np.stack([xy[:, 0], np.zeros(n, np.float32), 2.0 + 0.5 * xy[:, 1]], axis=1)
    down = up * np.array([1, 1, -1], np.float32)
    pos = np.concatenate([up, down])
    col = np.zeros((2 * n, 3), np.uint8)
    col[:n] = (255, 0, 0)
    col[n:] = (0, 0, 255)
    camera = pcv.Camera.look_at((0.0, -12.0, 0.0), (0.0, 0.0, 0.0), up="z", near=0.5, far=50.0)
    img = render(pos, col, camera=camera, background="black")
    red = (img[..., 0] > 200) & (img[..., 2] < 50)
    blue = (img[..., 2] > 200) & (img[..., 0] < 50)
    rows = np.arange(H)[:, None]
    assert red.sum() > 100 and blue.sum() > 100
    assert rows.repeat(W, 1)[red].max() < H // 2, "red (above the axis) in the top half"
    assert rows.repeat(W, 1)[blue].min() >= H // 2, "blue (below the axis) in the bottom half"
    # pcv's gradient is light at the top: row 0 is lighter than the last row.
    grad = render(pos, col, camera=camera, background="gradient")
    assert int(grad[0, 0, :3].sum()) > int(grad[-1, 0, :3].sum()), (grad[0, 0], grad[-1, 0])


@pytest.mark.parametrize(
    "mode,cli",
    [
        (dict(mode="vis", point_size=1, edl=False, background="black"), ["--mode", "vis", "--point-size", "1", "--no-edl", "--background", "black"]),
        (dict(mode="culled", point_size=3, edl=True, background="gradient"), ["--mode", "culled", "--point-size", "3", "--edl", "--background", "gradient"]),
        (dict(mode="reference", point_size="adaptive", edl=False, background="white"), ["--mode", "reference", "--point-size", "adaptive", "--no-edl", "--background", "white"]),
        (dict(mode="culled", point_size=5, point_shape="square", edl=False), ["--mode", "culled", "--point-size", "5", "--point-shape", "square", "--no-edl", "--background", "black"]),
        (dict(mode="culled", point_size=5, point_shape="round", edl=False), ["--mode", "culled", "--point-size", "5", "--point-shape", "round", "--no-edl", "--background", "black"]),
    ],
    ids=["vis", "culled-size3-edl", "reference-adaptive", "culled-size5-square", "culled-size5-round"],
)
def test_same_image_as_pcv_render(tmp_path, mode, cli):
    """The golden comparison: numpy points through the module and the same points as a PLY file through
    `pcv render` (the Rust CLI, CPU backend) give the same pixels."""
    exe = pcv_binary()
    if exe is None:
        if os.environ.get("PCV_REQUIRE_CLI") == "1":
            pytest.fail("no pcv binary (PCV_BIN, target/debug/pcv) to compare with")
        pytest.skip("no pcv binary (set PCV_BIN or build with cargo build)")
    pos, col = cloud()
    ply = tmp_path / "cloud.ply"
    write_ply(ply, pos, col)
    png = tmp_path / "cli.png"
    camera = ",".join(str(v) for v in (*EYE, YAW, PITCH))
    cmd = [exe, "render", str(ply), "-o", str(png), "--backend", "cpu", "--size", f"{W}x{H}", "--camera", camera, "--up", "z", *cli]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    cli_img = read_png(png)
    img = render(pos, col, **mode)
    diff = (img[..., :3] != cli_img[..., :3]).any(axis=2)
    assert diff.sum() == 0, f"{diff.sum()} of {W * H} pixels differ from pcv render ({' '.join(cmd)})"
    assert (img[..., :3] != 0).any()


def test_every_layout_gives_the_same_image():
    pos, col = cloud(5000)
    base = render(pos, col)
    n = len(pos)
    # Positions: (N, 4), every other row of a bigger array, reversed rows, Fortran order.
    pos4 = np.concatenate([pos, np.full((n, 1), 7.0, np.float32)], axis=1)
    wide = np.zeros((2 * n, 3), np.float32)
    wide[::2] = pos
    rev = pos[::-1].copy()[::-1]
    fortran = np.asfortranarray(pos)
    for p in (pos4, wide[::2], rev, fortran):
        assert np.array_equal(render(p, col), base), (p.shape, p.strides)
    # Colours: uint8 (N, 4), packed uint32 (N,) RGBA8 (r low), float (N, 3) and (N, 4) in 0..1.
    col4 = np.concatenate([col, np.full((n, 1), 255, np.uint8)], axis=1)
    packed = col4.view("<u4").reshape(n)
    f3 = col.astype(np.float32) / 255.0
    f4 = col4.astype(np.float32) / 255.0
    for c in (col4, packed, f3, f4, np.asfortranarray(col)):
        assert np.array_equal(render(pos, c), base), (c.dtype, c.shape)


def test_no_colours_draws_white_points():
    pos, _ = cloud(3000)
    img = render(pos)
    lit = (img[..., :3] != 0).any(axis=2)
    assert lit.any() and (img[lit][..., :3] == 255).all()


def test_lists_are_taken_through_numpy():
    """Anything else goes through numpy.asarray, and its dtype is checked like an array's: a list of
    Python floats is float64, which is refused (pcv converts nothing behind the caller's back)."""
    pos, col = cloud(500)
    with pytest.raises(TypeError, match=r"^points: expected float32 positions, got dtype float64"):
        render(pos.tolist(), col)
    with pytest.raises(TypeError, match=r"^colors:"):
        render(pos, col.tolist())


class DLPackOnly:
    """A host array seen only through __dlpack__ (as a PyTorch CPU tensor is)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_host_dlpack_capsules_are_read():
    pos, col = cloud(4000)
    base = render(pos, col)
    wide = np.zeros((len(pos), 4), np.float32)
    wide[:, :3] = pos
    assert np.array_equal(render(DLPackOnly(pos), DLPackOnly(col)), base)
    assert np.array_equal(render(DLPackOnly(wide), col), base)


def test_depth_out():
    pos, col = cloud()
    img, depth = render(pos, col, depth=True)
    assert depth.dtype == np.float32 and depth.shape == (H, W)
    lit = (img[..., :3] != 0).any(axis=2)
    assert (depth[~lit] == 1.0).all()
    assert ((depth[lit] >= 0.0) & (depth[lit] < 1.0)).all()


def test_cameras_agree():
    pos, col = cloud()
    fixed = cam(near=0.5, far=40.0)
    by_pose = render(pos, col, camera=fixed)
    m = np.array(fixed.clip_from_world(W, H))
    assert m.shape == (4, 4)
    by_matrix = render(pos, col, camera=pcv.Camera.from_matrix(m.tolist(), near=0.5, far=40.0))
    assert np.array_equal(by_pose, by_matrix)
    # look_at toward the same direction as yaw/pitch, and the default camera (a view that frames the points).
    assert (render(pos, col, camera=pcv.Camera.look_at(EYE, (0, 0, 0)))[..., :3] != 0).any()
    assert (render(pos, col, camera=None)[..., :3] != 0).any()
    assert "near=0.5" in repr(fixed)


def test_write_png_round_trip(tmp_path):
    pos, col = cloud(3000)
    img = render(pos, col)
    out = tmp_path / "f.png"
    pcv.write_png(img, out)
    assert np.array_equal(read_png(out), img)


class FakeCuda:
    """An object that says its memory is on a CUDA device (`__cuda_array_interface__`)."""

    def __init__(self, shape=(10, 3), typestr="<f4", **extra):
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr, data=(0x7F0000000000, False), version=3, strides=None, **extra)


def err(excinfo):
    return str(excinfo.value)


def test_errors_name_the_argument():
    pos, col = cloud(100)
    with pytest.raises(TypeError) as e:
        render(pos.astype(np.float64))
    assert err(e).startswith("points:") and "float32" in err(e) and "float64" in err(e)
    with pytest.raises(ValueError) as e:
        render(pos[:, :2].copy())
    assert err(e).startswith("points: expected shape (N, 3) or (N, 4)")
    with pytest.raises(ValueError) as e:
        render(pos, col[:50])
    assert err(e) == "colors: 50 rows, but points has 100"
    with pytest.raises(TypeError) as e:
        render(pos, col.astype(np.int64))
    assert err(e).startswith("colors:") and "int64" in err(e)
    with pytest.raises(ValueError) as e:
        render(pos, col[:, :2].copy())
    assert err(e).startswith("colors: expected shape")
    with pytest.raises(TypeError) as e:
        render(pos.astype(">f4"))
    assert err(e).startswith("points:") and "dtype" in err(e)
    with pytest.raises(TypeError) as e:
        render(object())
    assert err(e).startswith("points:")


def test_point_shape_changes_the_frame():
    """Square points of 5 px cover the corners that round ones leave: more lit pixels, same centres."""
    pos, col = cloud(300)
    round_img = render(pos, col, mode="culled", point_size=5, point_shape="round")
    square_img = render(pos, col, mode="culled", point_size=5, point_shape="square")
    lit_round = (round_img[..., :3] != 0).any(axis=2).sum()
    lit_square = (square_img[..., :3] != 0).any(axis=2).sum()
    assert lit_square > lit_round > 0, (lit_square, lit_round)
    assert np.array_equal(render(pos, col, mode="culled", point_size=5), round_img)  # round is the default


def test_errors_of_options():
    pos, col = cloud(100)
    with pytest.raises(ValueError, match=r"^mode: expected one of"):
        render(pos, mode="fast")
    with pytest.raises(ValueError, match=r"^size: expected \(width, height\)"):
        render(pos, size=(0, 10))
    with pytest.raises(ValueError, match=r"^point_size:"):
        render(pos, point_size=99)
    with pytest.raises(ValueError, match=r"^point_shape: expected 'round' or 'square', got 'star'"):
        render(pos, point_shape="star")
    with pytest.raises(ValueError, match=r"^background:"):
        render(pos, background="plaid")
    with pytest.raises(ValueError, match=r"^edl:"):
        render(pos, edl=-1.0)
    with pytest.raises(ValueError, match=r"^backend: expected"):
        render(pos, backend="opencl")
    with pytest.raises(ValueError, match=r"^camera: give both near and far"):
        pcv.Camera(EYE, near=1.0)
    with pytest.raises(ValueError, match=r"^camera: eye and target are the same point"):
        pcv.Camera.look_at((1, 2, 3), (1, 2, 3))
    with pytest.raises(ValueError, match=r"^camera: planes that follow the eye"):
        cam().clip_from_world(W, H)
    with pytest.raises(TypeError):
        render(pos, out=np.zeros((H, W, 4), np.uint8))


def test_device_arrays_errors_without_cuda():
    """Device-array errors are said before the lack of CUDA: mask, stream 0; then a CUDA array on a
    machine (or backend) without CUDA, and a host/device mix, each naming the argument."""
    pos, col = cloud(10)
    with pytest.raises(ValueError) as e:
        render(FakeCuda(mask=(1, False)))
    assert err(e) == "points: masked arrays (__cuda_array_interface__ 'mask') are not supported"
    with pytest.raises(ValueError) as e:
        render(FakeCuda(stream=0))
    assert err(e).startswith("points: __cuda_array_interface__ 'stream' 0 is ambiguous")
    with pytest.raises(ValueError) as e:
        render(FakeCuda())
    assert err(e).startswith("points: a CUDA array, but backend='cpu' was asked for")
    with pytest.raises(ValueError) as e:
        render(pos, FakeCuda(shape=(10, 3), typestr="|u1"))
    assert err(e).startswith("colors: a CUDA array")
    if pcv.backends()["cuda"] is None:
        with pytest.raises(ValueError) as e:
            pcv.render(FakeCuda(), size=(W, H))
        assert err(e).startswith("points: a CUDA array, but pcv has no CUDA backend here")


def test_render_releases_the_gil_and_threads_share_the_backend():
    import threading

    pos, col = cloud(20000)
    base = render(pos, col)
    out = [None] * 4

    def work(i):
        out[i] = render(pos, col)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(np.array_equal(o, base) for o in out)


@pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY (run under xvfb-run for the window test)")
def test_viewer_window_shows_and_updates():
    pos, col = cloud(20000)
    v = pcv.Viewer(size=(320, 240), backend="cpu", vsync=False)
    assert not v.is_open
    v.show(pos, col)
    assert v.is_open
    for k in range(3):
        moved = (pos + np.float32(0.5 * k)).astype(np.float32)
        assert v.update(moved, col, wait=True) is True
    with pytest.raises(TypeError):
        v.update(pos.astype(np.float64))
    assert v.is_open
    v.close()
    assert not v.is_open
    assert v.update(pos, col) is False
