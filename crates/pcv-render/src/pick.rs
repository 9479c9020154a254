//! Picking: which point of the last frame lies under (or nearest to) a pixel, the same on every backend.
//!
//! How it works: [`pick`] reads the final depth or visibility words of a small window around the pixel
//! through the backend's [`PickWords`] (its last frame's buffer after any splat, as words: depth bits in
//! the high half, the payload in the low half; a depth-only buffer as words of payload 0) and hands them
//! to [`nearest_in_window`], which keeps the non-empty word closest to the pixel on screen, the nearest
//! in depth among equally close ones. The payload then becomes the point: a point index where the
//! mode keeps one ([`Final::VisIndex`], the batched modes), whose position the backend reads; else the
//! pixel's centre at that depth, back through `clip_from_world` ([`unproject`]).
use super::gpu_data::{word_depth, word_payload};
use super::twins::post::FAR_DEPTH_BITS;
use super::{PickHit, RenderError};
use glam::{Mat4, Vec3, Vec4};

/// Which buffer holds a frame's final depth (and payload).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Final {
    /// The reference's 32-bit depth buffer (no splat).
    Depth,
    /// A visibility buffer whose payload is a colour (`packed`, or the reference after a splat).
    VisColor,
    /// A visibility buffer whose payload is a point index into the prepared (sorted) points.
    VisIndex,
}

/// What [`pick`] needs of a backend's last frame.
#[derive(Clone, Copy, Debug)]
pub struct LastFrame {
    pub clip_from_world: Mat4,
    pub width_px: u32,
    pub height_px: u32,
    pub holds: Final,
}

/// What a backend lends [`pick`]: its last frame's final words and its points' positions.
pub trait PickWords {
    /// The last frame drawn (`None` before the first, or after an upload).
    fn last_frame(&self) -> Option<LastFrame>;
    /// `len` final words of row `y` from column `x` of `last`'s buffer: visibility words as they are,
    /// a depth buffer's values as [`super::gpu_data::word`]`(depth, 0)`.
    fn read_words(&mut self, last: &LastFrame, y: u32, x: u32, len: usize) -> Result<Vec<u64>, RenderError>;
    /// The position of prepared point `index` and its index in the uploaded cloud's order (`None` where
    /// the backend does not know it); `None` where there is no such point.
    fn point(&mut self, index: u64) -> Result<Option<(Vec3, Option<u64>)>, RenderError>;
}

/// The nearest point of `src`'s last frame within `radius_px` pixels of pixel (`x_px`, `y_px`) (row 0 at
/// the top), or `None` where no point was drawn there ([`super::Rasterizer::pick`]).
pub fn pick(src: &mut dyn PickWords, x_px: u32, y_px: u32, radius_px: u32) -> Result<Option<PickHit>, RenderError> {
    let Some(last) = src.last_frame() else {
        return Ok(None);
    };
    if x_px >= last.width_px || y_px >= last.height_px {
        return Ok(None);
    }
    let win = Window::read(x_px, y_px, radius_px, last.width_px, last.height_px, |y, x, len| {
        src.read_words(&last, y, x, len)
    })?;
    let Some((pixel, w)) = nearest_in_window(&win) else {
        return Ok(None);
    };
    let depth = f32::from_bits(word_depth(w));
    if last.holds == Final::VisIndex {
        if let Some((position, point_index)) = src.point(word_payload(w))? {
            return Ok(Some(PickHit { pixel, position, point_index, depth }));
        }
    }
    let position = unproject(&last.clip_from_world, pixel, last.width_px, last.height_px, depth);
    Ok(Some(PickHit { pixel, position, point_index: None, depth }))
}

/// A window of `(2r + 1)²` words around a pixel, row by row from the top; words outside the frame
/// are `u64::MAX`.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub x0: i64,
    pub y0: i64,
    pub side: usize,
    pub words: Vec<u64>,
}

impl Window {
    /// The window of radius `radius_px` around (`x_px`, `y_px`), clipped to the frame and read with
    /// `read_row(y, x_start, len)` (one call per row; each returns `len` words of row `y` from `x_start`).
    pub fn read<E>(
        x_px: u32,
        y_px: u32,
        radius_px: u32,
        width_px: u32,
        height_px: u32,
        mut read_row: impl FnMut(u32, u32, usize) -> Result<Vec<u64>, E>,
    ) -> Result<Window, E> {
        let r = radius_px.min(64) as i64;
        let side = (2 * r + 1) as usize;
        let (x0, y0) = (x_px as i64 - r, y_px as i64 - r);
        let mut words = vec![u64::MAX; side * side];
        let xs = x0.max(0);
        let xe = (x0 + side as i64).min(width_px as i64);
        for row in 0..side {
            let y = y0 + row as i64;
            if y < 0 || y >= height_px as i64 || xs >= xe {
                continue;
            }
            let got = read_row(y as u32, xs as u32, (xe - xs) as usize)?;
            let at = row * side + (xs - x0) as usize;
            words[at..at + got.len()].copy_from_slice(&got);
        }
        Ok(Window { x0, y0, side, words })
    }
}

/// The picked word: its pixel and the word ([`crate::gpu_data::word`]: depth bits, payload).
pub fn nearest_in_window(w: &Window) -> Option<((u32, u32), u64)> {
    let c = (w.side / 2) as i64;
    let mut best: Option<(i64, u64, (u32, u32))> = None;
    for (k, &word) in w.words.iter().enumerate() {
        if crate::gpu_data::word_depth(word) >= FAR_DEPTH_BITS {
            continue;
        }
        let (dx, dy) = ((k % w.side) as i64 - c, (k / w.side) as i64 - c);
        let key = (dx * dx + dy * dy, word);
        if best.is_none_or(|(d2, wd, _)| key < (d2, wd)) {
            best = Some((key.0, word, ((w.x0 + c + dx) as u32, (w.y0 + c + dy) as u32)));
        }
    }
    best.map(|(_, word, px)| (px, word))
}

/// The local position at the centre of pixel `px` (row 0 at the top) and depth `depth` in [0, 1].
pub fn unproject(clip_from_world: &Mat4, px: (u32, u32), width_px: u32, height_px: u32, depth: f32) -> Vec3 {
    let ndc = Vec4::new(
        (px.0 as f32 + 0.5) / width_px.max(1) as f32 * 2.0 - 1.0,
        1.0 - (px.1 as f32 + 0.5) / height_px.max(1) as f32 * 2.0,
        depth * 2.0 - 1.0,
        1.0,
    );
    let p = clip_from_world.inverse() * ndc;
    p.truncate() / p.w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_reads_rows_clipped_to_the_frame() {
        let (w, h) = (5u32, 4u32);
        let frame: Vec<u64> = (0..w * h).map(|i| i as u64).collect();
        let win = Window::read(0, 0, 1, w, h, |y, x, n| -> Result<_, ()> {
            Ok(frame[(y * w + x) as usize..(y * w + x) as usize + n].to_vec())
        })
        .unwrap();
        assert_eq!(win.words, vec![u64::MAX, u64::MAX, u64::MAX, u64::MAX, 0, 1, u64::MAX, 5, 6]);
    }

    #[test]
    fn nearest_on_screen_then_in_depth() {
        use crate::gpu_data::word;
        let far = word(FAR_DEPTH_BITS, 0);
        let near = |d: f32, p: u64| word(d.to_bits(), p);
        let mut words = vec![far; 9];
        words[0] = near(0.1, 7); // corner: farther on screen, nearer in depth
        words[5] = near(0.5, 8); // right of the centre
        words[3] = near(0.4, 9); // left of the centre: as close on screen, nearer in depth
        let win = Window { x0: 10, y0: 20, side: 3, words };
        assert_eq!(nearest_in_window(&win), Some(((10, 21), near(0.4, 9))));
        let empty = Window { x0: 0, y0: 0, side: 3, words: vec![far; 9] };
        assert_eq!(nearest_in_window(&empty), None);
    }

    #[test]
    fn unproject_inverts_the_projection() {
        let cam = pcv_camera::FlyCamera::for_cloud(pcv_io::Bounds::EMPTY, true);
        let m = cam.clip_from_world(640, 360);
        let f = crate::FrameParams::new(m, 640, 360).uniforms();
        let p = [0.3f32, 0.2, -0.1];
        let pr = crate::twins::project::project(&f, p).unwrap();
        let back = unproject(&m, (pr.x_px, pr.y_px), 640, 360, f32::from_bits(pr.depth_bits));
        // Within a pixel's footprint at 3 m.
        assert!((back - Vec3::from(p)).length() < 0.02, "{back}");
    }

    #[test]
    fn unproject_inverts_the_orthographic_projection() {
        // A top view of a 100 m tile 30 m tall: the eye above, points at every height.
        let b = pcv_io::Bounds { min: Vec3::new(-50.0, -50.0, 0.0), max: Vec3::new(50.0, 50.0, 30.0) };
        let mut cam = pcv_camera::FlyCamera::for_cloud(b, false);
        cam.set_projection(true);
        cam.set_view(pcv_camera::View::Top, 640.0 / 360.0);
        let m = cam.clip_from_world(640, 360);
        let f = crate::FrameParams::new(m, 640, 360).uniforms();
        for p in [[10.0f32, -20.0, 0.5], [-40.0, 30.0, 29.0], [0.0, 0.0, 15.0]] {
            let pr = crate::twins::project::project(&f, p).unwrap();
            let back = unproject(&m, (pr.x_px, pr.y_px), 640, 360, f32::from_bits(pr.depth_bits));
            // Across: within a pixel (100 m over 360 px); in height: the depth's precision.
            let d = back - Vec3::from(p);
            assert!(d.truncate().length() < 0.3 && d.z.abs() < 1e-3, "{p:?} -> {back}");
        }
    }
}
