//! The passes of one frame, in order: one list that both backends follow.
//!
//! How it works: a frame is a raster stage that depends on the mode, then the post passes the look
//! asks for. The raster stage leaves its result in one of two shapes:
//! - `reference`: a 32-bit depth buffer and the colours, written straight into the target;
//! - every other mode: a 64-bit visibility buffer of words (depth bits, payload: `gpu_data::word`), where the payload is the
//!   colour (`packed`) or the winning point's index (`vis`, `culled`, `quant`).
//!
//! [`Pass::Splat`] (point size) turns either shape into a fresh visibility buffer (the reference's
//! payload is its colour), so after it every mode resolves from a visibility buffer; without it the
//! reference needs no resolve. [`Pass::Resolve`] writes the target's colours (a visibility buffer's
//! colour payload, or the indexed point's colour, or the background where no point landed), then
//! [`Pass::Edl`] shades them in place from the final depth. With [`SplatMethod::Scatter`] the `vis`
//! mode draws point size in its raster pass instead ([`Pass::VisDisk`]: each point writes its disk) and
//! needs no splat. With high quality ([`Look::blends`]), [`Pass::Blend`] runs after the raster stage
//! and the splat: every point within the blend window of its pixel's final depth adds its colour to
//! the pixel's sums, which the resolve averages (`kernels/blend.cu`). The plan is plain data: each backend runs
//! each pass with its own kernel (CUDA) or twin (CPU) and times it under [`Pass::name`].
use super::look::{Look, SplatMethod};
use super::RenderMode;

/// One pass of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pass {
    /// Depth (or visibility) to the far plane; the reference's colours to the background.
    Clear,
    /// The reference's atomic min of depth bits.
    Depth,
    /// The reference's colour pass (depth equality).
    Color,
    /// 64-bit atomic min of (depth, colour) words.
    Packed,
    /// 64-bit atomic min of (depth, point index) words over the sorted 12-byte positions.
    Vis,
    /// [`Pass::Vis`] where each point writes its whole disk (point size by scatter).
    VisDisk,
    /// The culled modes' first phase: the batches visible last frame that lie in the view, drawn.
    Draw1,
    /// The culled modes' depth pyramid of what phase 1 drew.
    Hzb,
    /// The culled modes' second phase: every batch tested against the view and the pyramid; those that
    /// may show and were not drawn yet, drawn.
    Draw2,
    /// Point size: the nearest covering point within the point's disk.
    Splat,
    /// High quality: the colours of the points near each pixel's final depth summed (the resolve
    /// averages them).
    Blend,
    /// Visibility buffer to colours.
    Resolve,
    /// Eye-dome lighting.
    Edl,
}

impl Pass {
    /// The name [`super::FrameStats::passes`] reports.
    pub fn name(self) -> &'static str {
        match self {
            Pass::Clear => "clear",
            Pass::Depth => "depth",
            Pass::Color => "color",
            Pass::Packed => "packed",
            Pass::Vis => "vis",
            Pass::VisDisk => "vis-disk",
            Pass::Draw1 => "draw1",
            Pass::Hzb => "hzb",
            Pass::Draw2 => "draw2",
            Pass::Splat => "splat",
            Pass::Blend => "blend",
            Pass::Resolve => "resolve",
            Pass::Edl => "edl",
        }
    }
}

/// The passes of a frame in `mode` with `look`, in order.
pub fn passes(mode: RenderMode, look: &Look) -> Vec<Pass> {
    if mode == RenderMode::Vis && look.splats() && look.splat == SplatMethod::Scatter {
        let mut p = vec![Pass::Clear, Pass::VisDisk];
        if look.blends(mode) {
            p.push(Pass::Blend);
        }
        p.push(Pass::Resolve);
        if look.edl.is_some() {
            p.push(Pass::Edl);
        }
        return p;
    }
    let mut p = vec![Pass::Clear];
    match mode {
        RenderMode::Reference => p.extend([Pass::Depth, Pass::Color]),
        RenderMode::Packed => p.push(Pass::Packed),
        RenderMode::Vis => p.push(Pass::Vis),
        RenderMode::Culled | RenderMode::Quant => p.extend([Pass::Draw1, Pass::Hzb, Pass::Draw2]),
    }
    if look.splats() {
        p.push(Pass::Splat);
    }
    if look.blends(mode) {
        p.push(Pass::Blend);
    }
    if mode != RenderMode::Reference || look.splats() {
        p.push(Pass::Resolve);
    }
    if look.edl.is_some() {
        p.push(Pass::Edl);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::look::{Edl, PointSize, Quality};

    #[test]
    fn plans() {
        let plain = Look::PLAIN;
        let names = |m, l: &Look| passes(m, l).iter().map(|p| p.name()).collect::<Vec<_>>();
        assert_eq!(names(RenderMode::Reference, &plain), ["clear", "depth", "color"]);
        assert_eq!(names(RenderMode::Vis, &plain), ["clear", "vis", "resolve"]);
        let full = Look { point_size: PointSize::Fixed(3), edl: Some(Edl::DEFAULT), ..plain };
        assert_eq!(names(RenderMode::Reference, &full), ["clear", "depth", "color", "splat", "resolve", "edl"]);
        assert_eq!(names(RenderMode::Culled, &full), ["clear", "draw1", "hzb", "draw2", "splat", "resolve", "edl"]);
        let scatter = Look { splat: SplatMethod::Scatter, ..full };
        assert_eq!(names(RenderMode::Vis, &scatter), ["clear", "vis-disk", "resolve", "edl"]);
        assert_eq!(names(RenderMode::Culled, &scatter), ["clear", "draw1", "hzb", "draw2", "splat", "resolve", "edl"]);
        let edl_only = Look { edl: Some(Edl::DEFAULT), ..plain };
        assert_eq!(names(RenderMode::Reference, &edl_only), ["clear", "depth", "color", "edl"]);
        assert_eq!(names(RenderMode::Packed, &edl_only), ["clear", "packed", "resolve", "edl"]);
        let high = Look { quality: Quality::High, ..full };
        assert_eq!(
            names(RenderMode::Culled, &high),
            ["clear", "draw1", "hzb", "draw2", "splat", "blend", "resolve", "edl"]
        );
        assert_eq!(
            names(RenderMode::Vis, &Look { quality: Quality::High, ..plain }),
            ["clear", "vis", "blend", "resolve"]
        );
        // The reference and packed modes keep colours, not points: they draw standard quality.
        assert_eq!(
            names(RenderMode::Packed, &Look { quality: Quality::High, ..plain }),
            ["clear", "packed", "resolve"]
        );
    }
}
