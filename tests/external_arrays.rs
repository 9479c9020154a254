//! Arrays read where they are (`render::external`, the Python module's path): the CPU twin of
//! `kernels/external.cu` against the CPU backend's own `vis` render, and, on a machine with a GPU, the
//! kernels against the twin bit for bit, for every layout the module accepts.
//!
//! - CPU (always): `vis_strided` + `ext_resolve` over (N, 3), (N, 4), reversed rows and every colour
//!   format draw exactly the image that `CpuRasterizer` draws of the same points uploaded; the bounds
//!   pass finds the box of the finite points; `depth_out` is each pixel's depth bits.
//! - CUDA (`#[ignore]`d: reported as ignored without a GPU, run with `--include-ignored` on the GPU
//!   machine, where `PCV_REQUIRE_CUDA=1` makes a missing GPU a failure):
//!   `CudaRasterizer::render_external` of device copies of the same arrays equals the twin's image, the
//!   bounds match, `depth_to_device` equals `depth_out`, and the errors: a host pointer, a span past its
//!   allocation, a mode other than `vis`.
use glam::{DVec3, Vec3};
use pcv_camera::{Camera, PoseArg};
use pcv_io::{Bounds, Point, PointCloud};
use pcv_render::cpu::CpuRasterizer;
use pcv_render::cuda::memory::DeviceBuffer;
use pcv_render::cuda::CudaRasterizer;
use pcv_render::external::{ArrayDesc, ColorKind, Dtype, ExternalPoints};
use pcv_render::look::Look;
use pcv_render::twins::external::{
    bounds_from_keys, depth_out, ext_bounds_keys, ext_resolve, vis_strided, HostColors, Strided,
};
use pcv_render::twins::vis::vis_clear;
use pcv_render::{FrameParams, Rasterizer, RenderError, RenderMode, Target};
use std::sync::atomic::AtomicU64;

const W: u32 = 200;
const H: u32 = 150;

/// n points in [-4, 4]^3 (splitmix64, seeded) and their RGB bytes; a few NaN and infinite ones.
fn points(n: usize) -> (Vec<[f32; 3]>, Vec<[u8; 3]>) {
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut pos: Vec<[f32; 3]> =
        (0..n).map(|_| std::array::from_fn(|_| ((next() >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0)).collect();
    let col: Vec<[u8; 3]> = (0..n).map(|_| std::array::from_fn(|_| next() as u8)).collect();
    pos[3] = [f32::NAN, 0.0, 0.0];
    pos[7] = [f32::INFINITY, 1.0, 1.0];
    (pos, col)
}

fn frame() -> FrameParams {
    let mut cam = Camera::for_cloud(Bounds { min: Vec3::splat(-4.0), max: Vec3::splat(4.0) }, false);
    cam.pose = PoseArg { eye: DVec3::new(-9.0, -7.0, 6.0), yaw_deg: 38.0, pitch_deg: -28.0 }.to_pose(DVec3::ZERO);
    pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Vis).with_look(Look::PLAIN)
}

fn bytes<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// One layout of the test's arrays: host bytes, and the description the module would make of them at `ptr`.
struct Layout {
    name: &'static str,
    pos: Vec<u8>,
    pos_shape: Vec<u64>,
    pos_strides: Option<Vec<i64>>,
    /// Byte offset of element [0, 0] in `pos` (negative strides start further in).
    pos_first: usize,
    col: Option<(Vec<u8>, Vec<u64>, Dtype)>,
}

impl Layout {
    fn descs(&self, pos_base: u64, col_base: u64) -> (ArrayDesc, Option<ArrayDesc>) {
        let p = ArrayDesc {
            ptr: pos_base + self.pos_first as u64,
            shape: self.pos_shape.clone(),
            strides_bytes: self.pos_strides.clone(),
            dtype: Dtype::F32,
        };
        let c = self.col.as_ref().map(|(_, shape, dtype)| ArrayDesc {
            ptr: col_base,
            shape: shape.clone(),
            strides_bytes: None,
            dtype: *dtype,
        });
        (p, c)
    }
}

fn layouts(pos: &[[f32; 3]], col: &[[u8; 3]]) -> Vec<Layout> {
    let n = pos.len() as u64;
    let packed = bytes(pos);
    let pos4: Vec<[f32; 4]> = pos.iter().map(|p| [p[0], p[1], p[2], 9.0]).collect();
    let rev: Vec<[f32; 3]> = pos.iter().rev().copied().collect();
    let rgb = bytes(col);
    let rgba: Vec<[u8; 4]> = col.iter().map(|c| [c[0], c[1], c[2], 255]).collect();
    let words: Vec<u32> = rgba.iter().map(|c| u32::from_le_bytes(*c)).collect();
    let f3: Vec<[f32; 3]> = col.iter().map(|c| c.map(|v| v as f32 / 255.0)).collect();
    let f4: Vec<[f32; 4]> = rgba.iter().map(|c| c.map(|v| v as f32 / 255.0)).collect();
    let c = |b: Vec<u8>, shape: Vec<u64>, d: Dtype| Some((b, shape, d));
    let plain =
        |name, col| Layout { name, pos: packed.clone(), pos_shape: vec![n, 3], pos_strides: None, pos_first: 0, col };
    vec![
        plain("(N,3) + u8 (N,3)", c(rgb.clone(), vec![n, 3], Dtype::U8)),
        Layout {
            name: "(N,4) + u8 (N,3)",
            pos: bytes(&pos4),
            pos_shape: vec![n, 4],
            pos_strides: None,
            pos_first: 0,
            col: c(rgb.clone(), vec![n, 3], Dtype::U8),
        },
        Layout {
            name: "reversed rows + u8 (N,3)",
            pos: bytes(&rev),
            pos_shape: vec![n, 3],
            pos_strides: Some(vec![-12, 4]),
            pos_first: 12 * (n as usize - 1),
            col: c(rgb.clone(), vec![n, 3], Dtype::U8),
        },
        plain("(N,3) + u8 (N,4)", c(bytes(&rgba), vec![n, 4], Dtype::U8)),
        plain("(N,3) + u32 (N,)", c(bytes(&words), vec![n], Dtype::U32)),
        plain("(N,3) + f32 (N,3)", c(bytes(&f3), vec![n, 3], Dtype::F32)),
        plain("(N,3) + f32 (N,4)", c(bytes(&f4), vec![n, 4], Dtype::F32)),
    ]
}

/// The twin's image of host arrays: clear, `vis_strided`, `ext_resolve`; and the visibility buffer.
fn twin(ext: &ExternalPoints, f: &FrameParams) -> (Vec<u32>, Vec<AtomicU64>) {
    let u = f.uniforms();
    let mut vis: Vec<AtomicU64> = (0..(W * H) as usize).map(|_| AtomicU64::new(0)).collect();
    vis_clear(&mut vis);
    // SAFETY: the layouts describe host vectors alive for this call (the caller holds them).
    let (pos, colors): (Strided, HostColors) = unsafe { ext.host_views() };
    vis_strided(&u, &pos, ext.num_points(), &vis);
    let mut color = vec![0u32; (W * H) as usize];
    ext_resolve(&u, &vis, &colors, &mut color);
    (color, vis)
}

#[test]
fn twin_draws_what_the_cpu_backend_draws_for_every_layout() {
    let (pos, col) = points(20_000);
    let f = frame();
    let cloud = PointCloud::from_points(
        pos.iter().zip(&col).map(|(p, c)| Point::new(*p, [c[0], c[1], c[2], 255])).collect(),
        DVec3::ZERO,
        "test",
    );
    let mut cpu = CpuRasterizer::new();
    cpu.upload(&cloud).unwrap();
    let mut expected = vec![0u32; (W * H) as usize];
    cpu.render(&f, Target::Host(&mut expected)).unwrap();
    assert!(expected.iter().filter(|&&c| c != expected[0]).count() > 1000, "the view shows points");
    for l in layouts(&pos, &col) {
        let col_base = l.col.as_ref().map_or(0, |c| c.0.as_ptr() as u64);
        let (p, c) = l.descs(l.pos.as_ptr() as u64, col_base);
        let ext = ExternalPoints::new(&p, c.as_ref()).unwrap();
        let (img, vis) = twin(&ext, &f);
        let bad = img.iter().zip(&expected).filter(|(a, b)| a != b).count();
        assert_eq!(bad, 0, "{}: {bad} pixels differ from the CPU backend", l.name);
        let mut d = vec![0u32; img.len()];
        depth_out(&vis, &mut d);
        assert_eq!(d, cpu.depth_bits(), "{}: depth", l.name);
        // SAFETY: as in `twin`.
        let (sp, _) = unsafe { ext.host_views() };
        let b = bounds_from_keys(&ext_bounds_keys(&sp, ext.num_points()));
        let all = Bounds::of_points(&cloud.points);
        assert_eq!((b.min, b.max), (all.min, all.max), "{}: bounds", l.name);
    }
}

fn cuda_or_skip(test: &str) -> Option<CudaRasterizer> {
    match CudaRasterizer::new() {
        Ok(c) => Some(c),
        Err(e) => {
            if std::env::var("PCV_REQUIRE_CUDA").is_ok_and(|v| v == "1") {
                panic!("{test}: PCV_REQUIRE_CUDA=1 but the CUDA backend is unavailable: {e}");
            }
            eprintln!("{test}: skipping, CUDA backend unavailable: {e}");
            None
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn kernels_equal_the_twin_for_every_layout() {
    let Some(mut cuda) = cuda_or_skip("external kernels") else { return };
    let (pos, col) = points(20_000);
    let f = frame();
    let (ctx, stream) = (cuda.context().clone(), cuda.stream().clone());
    let upload = |b: &[u8]| {
        let mut d = DeviceBuffer::<u8>::alloc(&ctx, b.len(), "test array").unwrap();
        d.write_at(&stream, 0, b).unwrap();
        d
    };
    let out = DeviceBuffer::<u32>::alloc(&ctx, (W * H) as usize, "frame").unwrap();
    let depth = DeviceBuffer::<u32>::alloc(&ctx, (W * H) as usize, "depth").unwrap();
    for l in layouts(&pos, &col) {
        let col_base = l.col.as_ref().map_or(0, |c| c.0.as_ptr() as u64);
        let (hp, hc) = l.descs(l.pos.as_ptr() as u64, col_base);
        let host = ExternalPoints::new(&hp, hc.as_ref()).unwrap();
        let (expected, vis) = twin(&host, &f);
        let mut expected_depth = vec![0u32; expected.len()];
        depth_out(&vis, &mut expected_depth);

        let dpos = upload(&l.pos);
        let dcol = l.col.as_ref().map(|c| upload(&c.0));
        let (p, c) = l.descs(dpos.ptr(), dcol.as_ref().map_or(0, |d| d.ptr()));
        let ext = ExternalPoints::new(&p, c.as_ref()).unwrap();
        cuda.check_external(&ext).unwrap();
        let mut img = vec![0u32; expected.len()];
        // SAFETY: the arrays are this context's device memory holding the described layouts, alive to the
        // end of the iteration; the uploads were synchronous.
        unsafe { cuda.render_external(&ext, &f, Target::Host(&mut img)) }.unwrap();
        let bad = img.iter().zip(&expected).filter(|(a, b)| a != b).count();
        assert_eq!(bad, 0, "{}: {bad} pixels differ from the CPU twin", l.name);
        // SAFETY: as above.
        unsafe { cuda.render_external(&ext, &f, Target::Device { ptr: out.ptr(), len_px: img.len() }) }.unwrap();
        assert_eq!(out.to_vec(&stream).unwrap(), expected, "{}: device target", l.name);
        cuda.depth_to_device(depth.ptr(), img.len()).unwrap();
        assert_eq!(depth.to_vec(&stream).unwrap(), expected_depth, "{}: depth", l.name);
        // SAFETY: as above.
        let b = unsafe { cuda.external_bounds(&ext) }.unwrap();
        // SAFETY: as in `twin`.
        let (sp, _) = unsafe { host.host_views() };
        let hb = bounds_from_keys(&ext_bounds_keys(&sp, host.num_points()));
        assert_eq!((b.min, b.max), (hb.min, hb.max), "{}: bounds", l.name);
        assert_eq!(ext.colors.kind == ColorKind::Constant, l.col.is_none());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn device_errors_name_the_argument() {
    let Some(mut cuda) = cuda_or_skip("external errors") else { return };
    let (pos, _) = points(1000);
    let host = bytes(&pos);
    let desc = |ptr: u64, n: u64| ArrayDesc { ptr, shape: vec![n, 3], strides_bytes: None, dtype: Dtype::F32 };
    let e = cuda.check_external(&ExternalPoints::new(&desc(host.as_ptr() as u64, 1000), None).unwrap()).unwrap_err();
    assert!(e.to_string().starts_with("points: address"), "{e}");
    let d = DeviceBuffer::<u8>::alloc(cuda.context(), host.len(), "test").unwrap();
    let e = cuda.check_external(&ExternalPoints::new(&desc(d.ptr(), 2000), None).unwrap()).unwrap_err();
    assert!(e.to_string().contains("run past the end of their allocation"), "{e}");
    let ext = ExternalPoints::new(&desc(d.ptr(), 1000), None).unwrap();
    let mut img = vec![0u32; (W * H) as usize];
    // SAFETY: the array is device memory of 1000 points (uninitialized bytes are still floats).
    let e = unsafe { cuda.render_external(&ext, &frame().with_mode(RenderMode::Culled), Target::Host(&mut img)) }
        .unwrap_err();
    assert!(matches!(e, RenderError::ModeUnavailable { .. }), "{e}");
}
