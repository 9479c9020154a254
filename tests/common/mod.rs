//! Shared test helpers: a simple sequential reference rasterizer and image comparison that knows
//! about exact depth ties.
#![allow(dead_code)]

use pcv_render::gpu_data::Point;
use pcv_render::image_io::Frame;
use pcv_render::twins::project::project;
use pcv_render::FrameParams;

/// What the reference says about every pixel: the smallest depth bits and every color that a point
/// with exactly that depth has there (more than one color = an exact depth tie, where either may win).
pub struct Reference {
    pub width: u32,
    pub height: u32,
    pub depth_bits: Vec<u32>,
    pub colors: Vec<Vec<u32>>,
}

impl Reference {
    /// One point at a time, no atomics, no parallelism: the plain definition of the image.
    pub fn render(points: &[Point], frame: &FrameParams) -> Reference {
        let f = frame.uniforms();
        let n = frame.num_pixels();
        let mut depth_bits = vec![0x3f80_0000u32; n];
        let mut colors: Vec<Vec<u32>> = vec![Vec::new(); n];
        for p in points {
            let Some(pr) = project(&f, p.pos) else { continue };
            let i = pr.index(f.width);
            if pr.depth_bits < depth_bits[i] {
                depth_bits[i] = pr.depth_bits;
                colors[i].clear();
            }
            if pr.depth_bits == depth_bits[i] && !colors[i].contains(&p.color_word()) {
                colors[i].push(p.color_word());
            }
        }
        Reference { width: frame.width_px, height: frame.height_px, depth_bits, colors }
    }

    /// Whether `px` may be at pixel `i` (on RGB): the color of one of the nearest points there, or the
    /// clear color where no point lands.
    pub fn is_allowed(&self, i: usize, clear: u32, px: u32) -> bool {
        let same = |c: u32| (c ^ px) & 0x00ff_ffff == 0;
        if self.colors[i].is_empty() {
            same(clear)
        } else {
            self.colors[i].iter().any(|&c| same(c))
        }
    }

    pub fn tie_pixels(&self) -> usize {
        self.colors.iter().filter(|c| c.len() > 1).count()
    }

    /// Pixels of `img` whose color is not allowed (compared on RGB).
    pub fn violations(&self, img: &Frame, clear: u32) -> Vec<(u32, u32, u32)> {
        assert_eq!((img.width, img.height), (self.width, self.height));
        let mut out = Vec::new();
        for (i, &px) in img.pixels.iter().enumerate() {
            if !self.is_allowed(i, clear, px) {
                out.push(((i % self.width as usize) as u32, (i / self.width as usize) as u32, px));
            }
        }
        out
    }
}

/// Where tests write images they want a person to look at.
/// A Python that imports `modules` (the repo's .tools/venv, `PCV_PYTHON`, else python3), or `None`,
/// saying why (`installs`: what scripts/setup.sh puts there), when there is none.
pub fn python_with(modules: &str, installs: &str) -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("PCV_PYTHON").map(PathBuf::from).unwrap_or_else(|_| {
        let venv = root.join(".tools/venv/bin/python");
        if venv.exists() {
            venv
        } else {
            PathBuf::from("python3")
        }
    });
    let probe = std::process::Command::new(&python).args(["-c", &format!("import {modules}")]).output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!(
            "SKIPPED: {modules} is not importable by {} (scripts/setup.sh installs {installs} into .tools/venv)",
            python.display()
        );
        return None;
    }
    Some(python)
}

pub fn output_dir() -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/output");
    std::fs::create_dir_all(&d).expect("create tests/output");
    d
}

/// The cloud's points moved to `to` as the level-of-detail sources move them (f64 sum from `from`,
/// rounded once).
pub fn recentred(points: &[Point], from: glam::DVec3, to: glam::DVec3) -> Vec<Point> {
    let shift = from - to;
    points
        .iter()
        .map(|p| {
            let q = glam::DVec3::new(p.pos[0] as f64, p.pos[1] as f64, p.pos[2] as f64) + shift;
            Point::new(q.as_vec3().to_array(), p.rgba)
        })
        .collect()
}

/// A xorshift64 generator from `state` (non-zero): the tests' reproducible random numbers.
pub fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
