//! How a frame looks beyond where its points fall: point size, eye-dome lighting, background.
//!
//! How it works: a [`Look`] is plain settings, carried by [`super::FrameParams`]. The background goes
//! into the frame uniforms (`clear_color` at row 0, the top, `clear_color_last_row` at the bottom: the clear
//! and resolve passes interpolate per row, so a gradient costs no extra pass). Point size and EDL are
//! post passes (`kernels/splat.cu`, `kernels/edl.cu`, planned by [`super::plan`]) that read
//! [`PostUniforms`], which [`Look::post_uniforms`] makes from the look, the frame's size, the
//! projection's near and far planes, and the cloud's point spacing (for adaptive sizes).
//!
//! Points larger than a pixel are disks by default ([`PointShape::Round`]: pixel p belongs to the point at
//! q when 4 · |p − q|² ≤ diameter²) or squares (4 · max(|dx|², |dy|²) ≤ diameter²); the nearest covering
//! point wins either way.
//!
//! [`Quality::High`] blends instead of choosing: every point whose view distance lies within
//! [`BLEND_DEPTH_FRACTION`] of its pixel's nearest adds its colour to the pixel's sums, and the resolve
//! shows their mean (the published "high-quality" compute mode; `kernels/blend.cu`, planned by
//! [`super::plan`] in the modes that index points: vis, culled, quant). Pixels that only a larger point's
//! disk covers keep that point's colour.
//!
//! Defaults ([`Look::for_cloud`]): the built-in scene keeps the prototype's look (1-pixel points, no
//! EDL, black), since its image is the benchmark's reference. Loaded files get adaptive point sizes
//! (each point about 2.5 mean point spacings wide at its distance — random samples leave gaps wider
//! than the mean, 2.5 closes them without blobs —, from 1 to [`DEFAULT_ADAPTIVE_MAX_PX`]
//! pixels: a sparse scan closes into surfaces at any distance, a dense one stays at 1 pixel where its
//! points are already closer than a pixel), EDL at Potree's defaults (strength 1, radius 1.4 px: the
//! shape of a cloud without colours becomes readable, and coloured ones gain depth cues), and a soft
//! dark gradient.
use crate::gpu_data::{PostUniforms, SPLAT_MAX_RADIUS};

/// How large points are drawn.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum PointSize {
    /// A disk this many pixels across (1..=16; 1 is the raster pass alone).
    Fixed(u8),
    /// By the cloud's point spacing at each point's distance, at most `max_px` pixels across.
    Adaptive { max_px: u8 },
}

/// The shape of points larger than a pixel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum PointShape {
    /// A disk: pixels within half the diameter of the point's pixel (what Potree and CloudCompare draw).
    #[default]
    Round,
    /// A square: pixels within half the size along both axes.
    Square,
}

impl PointShape {
    /// The other shape (the `G` key).
    pub fn other(self) -> PointShape {
        match self {
            PointShape::Round => PointShape::Square,
            PointShape::Square => PointShape::Round,
        }
    }
}

impl std::fmt::Display for PointShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PointShape::Round => "round",
            PointShape::Square => "square",
        })
    }
}

/// Standard (the nearest point of each pixel) or high quality (the near points of each pixel blended).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum Quality {
    /// The nearest point's colour: one raster pass.
    #[default]
    Standard,
    /// The mean colour of the points within [`BLEND_DEPTH_FRACTION`] of the nearest: anti-aliased and
    /// stable when flying, at the cost of a second pass over the visible points.
    High,
}

impl Quality {
    /// The other quality (the `Q` key).
    pub fn other(self) -> Quality {
        match self {
            Quality::Standard => Quality::High,
            Quality::High => Quality::Standard,
        }
    }
}

impl std::fmt::Display for Quality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Quality::Standard => "standard",
            Quality::High => "high",
        })
    }
}

/// High quality blends the points whose view distance is at most (1 + this) times their pixel's
/// nearest: 1 %, as the published compute rasterizers do.
pub const BLEND_DEPTH_FRACTION: f32 = 0.01;

/// The largest fixed point size.
pub const MAX_POINT_SIZE_PX: u8 = 16;
/// Adaptive sizes grow to at most this many pixels by default.
pub const DEFAULT_ADAPTIVE_MAX_PX: u8 = 8;
/// Adaptive sizes: a point's diameter in point spacings.
pub const ADAPTIVE_SPACINGS: f32 = 2.5;

impl PointSize {
    /// Parses `1`..`16`, `adaptive` or `adaptive:MAX`.
    pub fn parse(s: &str) -> Result<PointSize, String> {
        let t = s.trim().to_ascii_lowercase();
        if let Some(rest) = t.strip_prefix("adaptive") {
            let max_px = match rest.strip_prefix(':') {
                Some(m) => m.parse::<u8>().map_err(|_| format!("'{s}': the adaptive maximum must be 2..=16"))?,
                None if rest.is_empty() => DEFAULT_ADAPTIVE_MAX_PX,
                None => return Err(format!("'{s}' is not a point size (1..=16, adaptive or adaptive:MAX)")),
            };
            if !(2..=MAX_POINT_SIZE_PX).contains(&max_px) {
                return Err(format!("'{s}': the adaptive maximum must be 2..=16"));
            }
            return Ok(PointSize::Adaptive { max_px });
        }
        match t.parse::<u8>() {
            Ok(n) if (1..=MAX_POINT_SIZE_PX).contains(&n) => Ok(PointSize::Fixed(n)),
            _ => Err(format!("'{s}' is not a point size (1..=16 pixels, adaptive or adaptive:MAX)")),
        }
    }

    /// The splat window's radius: 0 when there is nothing to splat.
    pub fn radius_px(self) -> u32 {
        let across = match self {
            PointSize::Fixed(n) => n,
            PointSize::Adaptive { max_px } => max_px,
        };
        (across.clamp(1, MAX_POINT_SIZE_PX) as u32 / 2).min(SPLAT_MAX_RADIUS)
    }

    /// One size larger (`+` in the window); adaptive sizes grow their maximum.
    pub fn bigger(self) -> PointSize {
        match self {
            PointSize::Fixed(n) => PointSize::Fixed((n + 1).min(MAX_POINT_SIZE_PX)),
            PointSize::Adaptive { max_px } => PointSize::Adaptive { max_px: (max_px + 1).min(MAX_POINT_SIZE_PX) },
        }
    }

    /// One size smaller (`-`).
    pub fn smaller(self) -> PointSize {
        match self {
            PointSize::Fixed(n) => PointSize::Fixed(n.saturating_sub(1).max(1)),
            PointSize::Adaptive { max_px } => PointSize::Adaptive { max_px: max_px.saturating_sub(1).max(2) },
        }
    }
}

impl std::fmt::Display for PointSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PointSize::Fixed(n) => write!(f, "{n}"),
            PointSize::Adaptive { max_px } => write!(f, "adaptive:{max_px}"),
        }
    }
}

/// Eye-dome lighting's settings.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Edl {
    /// How dark a given depth step shades (Potree's `edlStrength`; 0 turns the shading off).
    pub strength: f32,
    /// How far the 8 neighbours are, in pixels (Potree's `radius`).
    pub radius_px: f32,
}

impl Edl {
    /// Potree's defaults.
    pub const DEFAULT: Edl = Edl { strength: 1.0, radius_px: 1.4 };

    /// The 8 neighbour offsets: a circle of `radius_px` at every 45°, rounded to whole pixels (never 0).
    pub fn offsets(&self) -> [[i32; 2]; 8] {
        let r = self.radius_px.clamp(1.0, 8.0);
        let mut out = [[0i32; 2]; 8];
        for (k, o) in out.iter_mut().enumerate() {
            let a = k as f32 * std::f32::consts::FRAC_PI_4;
            let (s, c) = a.sin_cos();
            let (x, y) = ((r * c).round() as i32, (r * s).round() as i32);
            // A diagonal that rounds to 0 on one axis still steps one pixel along it.
            *o = [
                if x == 0 && c.abs() > 0.1 { c.signum() as i32 } else { x },
                if y == 0 && s.abs() > 0.1 { s.signum() as i32 } else { y },
            ];
        }
        out
    }
}

/// What the empty parts of the frame show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Background {
    /// One colour (RGBA8, r in the low byte).
    Solid(u32),
    /// A vertical gradient from `top` (top row) to `bottom` (bottom row).
    Gradient { top: u32, bottom: u32 },
}

/// RGBA8 of an opaque colour, r in the low byte.
pub const fn rgb(r: u8, g: u8, b: u8) -> u32 {
    r as u32 | (g as u32) << 8 | (b as u32) << 16 | 0xff00_0000
}

impl Background {
    pub const BLACK: Background = Background::Solid(rgb(0, 0, 0));
    pub const GRAY: Background = Background::Solid(rgb(110, 110, 110));
    pub const WHITE: Background = Background::Solid(rgb(255, 255, 255));
    /// The soft dark gradient loaded files get by default.
    pub const GRADIENT: Background = Background::Gradient { top: rgb(62, 68, 82), bottom: rgb(14, 15, 19) };
    /// What the `B` key cycles through.
    pub const CYCLE: [Background; 4] = [Background::GRADIENT, Background::BLACK, Background::GRAY, Background::WHITE];

    /// Parses `black`, `gray`/`grey`, `white`, `R,G,B` (0–255), `gradient` or `gradient:R,G,B:R,G,B`
    /// (top, then bottom).
    pub fn parse(s: &str) -> Result<Background, String> {
        let t = s.trim().to_ascii_lowercase();
        let color = |c: &str| -> Result<u32, String> {
            let v: Vec<u8> = c
                .split(',')
                .map(|x| x.trim().parse::<u8>().map_err(|_| format!("'{c}' is not R,G,B with each 0..=255")))
                .collect::<Result<_, _>>()?;
            match v[..] {
                [r, g, b] => Ok(rgb(r, g, b)),
                _ => Err(format!("'{c}' is not R,G,B with each 0..=255")),
            }
        };
        match t.as_str() {
            "black" => Ok(Background::BLACK),
            "gray" | "grey" => Ok(Background::GRAY),
            "white" => Ok(Background::WHITE),
            "gradient" => Ok(Background::GRADIENT),
            _ => match t.strip_prefix("gradient:") {
                Some(rest) => match rest.split_once(':') {
                    Some((top, bottom)) => Ok(Background::Gradient { top: color(top)?, bottom: color(bottom)? }),
                    None => Err(format!("'{s}': a gradient is gradient:R,G,B:R,G,B (top, then bottom)")),
                },
                None => color(&t).map(Background::Solid).map_err(|_| {
                    format!("'{s}' is not a background (black, gray, white, R,G,B, gradient or gradient:R,G,B:R,G,B)")
                }),
            },
        }
    }

    /// (bottom row, top row) colours ([`crate::FrameParams::uniforms`] puts the top one in row 0).
    pub fn bottom_top(self) -> (u32, u32) {
        match self {
            Background::Solid(c) => (c, c),
            Background::Gradient { top, bottom } => (bottom, top),
        }
    }

    /// The next background in [`Background::CYCLE`].
    pub fn next(self) -> Background {
        let i = Self::CYCLE.iter().position(|&b| b == self).map_or(0, |i| i + 1);
        Self::CYCLE[i % Self::CYCLE.len()]
    }
}

impl std::fmt::Display for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = |w: u32| format!("{},{},{}", w & 0xff, (w >> 8) & 0xff, (w >> 16) & 0xff);
        match *self {
            b if b == Background::BLACK => f.write_str("black"),
            b if b == Background::GRAY => f.write_str("gray"),
            b if b == Background::WHITE => f.write_str("white"),
            b if b == Background::GRADIENT => f.write_str("gradient"),
            Background::Solid(w) => f.write_str(&c(w)),
            Background::Gradient { top, bottom } => write!(f, "gradient:{}:{}", c(top), c(bottom)),
        }
    }
}

/// How points larger than a pixel are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum SplatMethod {
    /// A post pass: each pixel takes the nearest visible point whose disk covers it (`kernels/splat.cu`).
    #[default]
    Gather,
    /// In the raster pass: each point writes its whole disk (`pcv_vis_disk`; the `vis` mode only, for
    /// comparison; other modes gather).
    Scatter,
}

/// Point size, EDL and background.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Look {
    pub point_size: PointSize,
    /// Round (the default) or square, for point sizes above one pixel.
    pub shape: PointShape,
    pub edl: Option<Edl>,
    pub background: Background,
    /// Gather (the default) or scatter, for point sizes above one pixel.
    pub splat: SplatMethod,
    /// Standard (the default) or high quality (blended).
    pub quality: Quality,
}

impl Default for Look {
    fn default() -> Self {
        Look::PLAIN
    }
}

/// What the command line (or a caller) asks for; `None` keeps [`Look::for_cloud`]'s default.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LookOverrides {
    pub point_size: Option<PointSize>,
    pub shape: Option<PointShape>,
    /// `Some(false)`: no EDL; `Some(true)`: EDL with `edl_strength`/`edl_radius_px` or the defaults.
    pub edl: Option<bool>,
    pub edl_strength: Option<f32>,
    pub edl_radius_px: Option<f32>,
    pub background: Option<Background>,
    pub splat: Option<SplatMethod>,
    pub quality: Option<Quality>,
}

impl Look {
    /// The prototype's look: 1-pixel points, no EDL, black.
    pub const PLAIN: Look = Look {
        point_size: PointSize::Fixed(1),
        shape: PointShape::Round,
        edl: None,
        background: Background::BLACK,
        splat: SplatMethod::Gather,
        quality: Quality::Standard,
    };

    /// The default look: [`Look::PLAIN`] for the built-in scene, adaptive points with EDL on a soft
    /// gradient for loaded files (see the module doc), with `o` applied over it.
    pub fn for_cloud(builtin_scene: bool, o: &LookOverrides) -> Look {
        let mut look = if builtin_scene {
            Look::PLAIN
        } else {
            Look {
                point_size: PointSize::Adaptive { max_px: DEFAULT_ADAPTIVE_MAX_PX },
                shape: PointShape::Round,
                edl: Some(Edl::DEFAULT),
                background: Background::GRADIENT,
                splat: SplatMethod::Gather,
                quality: Quality::Standard,
            }
        };
        if let Some(p) = o.point_size {
            look.point_size = p;
        }
        if let Some(shape) = o.shape {
            look.shape = shape;
        }
        if let Some(b) = o.background {
            look.background = b;
        }
        if let Some(s) = o.splat {
            look.splat = s;
        }
        if let Some(q) = o.quality {
            look.quality = q;
        }
        let edl_on = o.edl.unwrap_or(look.edl.is_some() || o.edl_strength.is_some() || o.edl_radius_px.is_some());
        look.edl = edl_on.then(|| Edl {
            strength: o.edl_strength.unwrap_or(Edl::DEFAULT.strength).max(0.0),
            radius_px: o.edl_radius_px.unwrap_or(Edl::DEFAULT.radius_px),
        });
        look
    }

    /// This look for a frame rendered at `scale` (< 1) of the window's size (adaptive resolution): point
    /// sizes and EDL's radius in the smaller frame's pixels, so the frame stretched to the window looks
    /// the same, only coarser. Adaptive sizes follow the frame's size by themselves; their maximum is
    /// scaled here.
    pub fn at_scale(self, scale: f32) -> Look {
        if !(scale < 1.0 && scale > 0.0) {
            return self;
        }
        let px = |n: u8, least: u8| ((n as f32 * scale).round() as u8).clamp(least, MAX_POINT_SIZE_PX);
        let point_size = match self.point_size {
            PointSize::Fixed(n) => PointSize::Fixed(px(n, 1)),
            PointSize::Adaptive { max_px } => PointSize::Adaptive { max_px: px(max_px, 2) },
        };
        let edl = self.edl.map(|e| Edl { radius_px: e.radius_px * scale, ..e });
        Look { point_size, edl, ..self }
    }

    /// Whether a frame in `mode` blends (high quality in a mode whose buffer indexes points; the
    /// reference and packed modes keep colours, not points, and draw standard quality).
    pub fn blends(&self, mode: super::RenderMode) -> bool {
        self.quality == Quality::High && quality_modes(mode)
    }

    /// Whether the frame has a splat pass.
    pub fn splats(&self) -> bool {
        self.point_size.radius_px() > 0
    }

    /// The post passes' uniforms for a `width_px × height_px` frame of `clip_from_world`, with planes
    /// `near_m`/`far_m` and the cloud's point spacing `spacing_m` (for adaptive sizes; 0 or unknown:
    /// adaptive points stay 1 pixel).
    pub fn post_uniforms(
        &self,
        clip_from_world: &glam::Mat4,
        width_px: u32,
        height_px: u32,
        near_m: f32,
        far_m: f32,
        spacing_m: f32,
    ) -> PostUniforms {
        let (radius, diameter) = match self.point_size {
            PointSize::Fixed(n) => (self.point_size.radius_px(), n.clamp(1, MAX_POINT_SIZE_PX) as u32),
            PointSize::Adaptive { .. } => (self.point_size.radius_px(), 0),
        };
        // |row 1 of clip_from_world| = the projection's y scale (the view's rows are unit vectors), so a
        // length s at view distance w spans s · scale · height / 2 / w pixels.
        let y_scale = y_scale(clip_from_world);
        let px_at_1m = if spacing_m.is_finite() && spacing_m > 0.0 {
            spacing_m * ADAPTIVE_SPACINGS * y_scale * height_px as f32 * 0.5
        } else {
            0.0
        };
        // Orthographic (row 3 of the matrix is (0, 0, 0, 1): w is 1 everywhere): depth is linear between
        // the planes, which may lie behind the eye, so the post passes measure distance from where a
        // perspective view of the same frame height would stand (its nearest point at the distance
        // where the frame is as tall: EDL shades as it would there), and px_at_1m above is already
        // the diameter in pixels at every depth (y_scale is 1 / the half height).
        let ortho = is_orthographic(clip_from_world);
        let (near, far) = if ortho && far_m > near_m && y_scale > 0.0 {
            let eq = 1.0 / (y_scale * (pcv_camera::FOV_Y_RAD * 0.5).tan());
            (eq, eq + (far_m - near_m))
        } else if near_m > 0.0 && far_m > near_m {
            (near_m, far_m)
        } else {
            (0.01, 100.0)
        };
        let edl = self.edl.unwrap_or(Edl { strength: 0.0, radius_px: 1.0 });
        PostUniforms {
            width: width_px,
            height: height_px,
            splat_radius_px: radius,
            splat_diameter_px: diameter,
            adaptive_px_at_1m: if px_at_1m.is_finite() { px_at_1m } else { 0.0 },
            near_m: near,
            far_m: far,
            near_far_m2: near * far,
            far_minus_near_m: far - near,
            edl_k: 300.0 * edl.strength * std::f32::consts::LOG2_E,
            edl_offsets: edl.offsets(),
            splat_square: (self.shape == PointShape::Square) as u32,
            ortho: ortho as u32,
            blend_window: 1.0 + BLEND_DEPTH_FRACTION,
        }
    }
}

/// Whether `mode` can draw [`Quality::High`]: vis, culled and quant (their buffers index points).
pub fn quality_modes(mode: super::RenderMode) -> bool {
    matches!(mode, super::RenderMode::Vis | super::RenderMode::Culled | super::RenderMode::Quant)
}

/// |row 1 of `clip_from_world`|: the projection's y scale (the view's rows are unit vectors); for an
/// orthographic projection, 1 / the half height.
pub fn y_scale(clip_from_world: &glam::Mat4) -> f32 {
    let m = clip_from_world.to_cols_array();
    (m[1] * m[1] + m[5] * m[5] + m[9] * m[9]).sqrt()
}

/// Whether `clip_from_world` is orthographic: its row 3 is (0, 0, 0, 1), so w is 1 everywhere.
pub fn is_orthographic(clip_from_world: &glam::Mat4) -> bool {
    let m = clip_from_world.to_cols_array();
    m[3] == 0.0 && m[7] == 0.0 && m[11] == 0.0 && m[15] == 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn point_sizes_parse_and_step() {
        assert_eq!(PointSize::parse("3"), Ok(PointSize::Fixed(3)));
        assert_eq!(PointSize::parse("adaptive"), Ok(PointSize::Adaptive { max_px: DEFAULT_ADAPTIVE_MAX_PX }));
        assert_eq!(PointSize::parse("Adaptive:12"), Ok(PointSize::Adaptive { max_px: 12 }));
        for bad in ["0", "17", "x", "adaptive:1", "adaptive:40", "adaptivex"] {
            assert!(PointSize::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(PointSize::Fixed(16).bigger(), PointSize::Fixed(16));
        assert_eq!(PointSize::Fixed(1).smaller(), PointSize::Fixed(1));
        assert_eq!(PointSize::Fixed(1).radius_px(), 0);
        assert_eq!(PointSize::Fixed(2).radius_px(), 1);
        assert_eq!(PointSize::Fixed(3).radius_px(), 1);
        assert_eq!(PointSize::Fixed(16).radius_px(), 8);
        for s in ["5", "adaptive:9"] {
            assert_eq!(PointSize::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn backgrounds_parse_and_print() {
        assert_eq!(Background::parse("black"), Ok(Background::BLACK));
        assert_eq!(Background::parse("10,20,30"), Ok(Background::Solid(rgb(10, 20, 30))));
        assert_eq!(
            Background::parse("gradient:1,2,3:4,5,6"),
            Ok(Background::Gradient { top: rgb(1, 2, 3), bottom: rgb(4, 5, 6) })
        );
        for bad in ["purple", "1,2", "1,2,300", "gradient:1,2,3"] {
            assert!(Background::parse(bad).is_err(), "{bad}");
        }
        for b in ["black", "gray", "white", "gradient", "1,2,3", "gradient:1,2,3:4,5,6"] {
            assert_eq!(Background::parse(b).unwrap().to_string(), b);
        }
        assert_eq!(rgb(1, 2, 3), 0xff03_0201);
    }

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(Look::for_cloud(true, &LookOverrides::default()), Look::PLAIN);
        let files = Look::for_cloud(false, &LookOverrides::default());
        assert!(files.edl.is_some() && matches!(files.point_size, PointSize::Adaptive { .. }));
        let o = LookOverrides { edl: Some(false), point_size: Some(PointSize::Fixed(3)), ..Default::default() };
        let l = Look::for_cloud(false, &o);
        assert_eq!((l.edl, l.point_size), (None, PointSize::Fixed(3)));
        let o = LookOverrides { edl_strength: Some(2.0), ..Default::default() };
        assert_eq!(Look::for_cloud(true, &o).edl, Some(Edl { strength: 2.0, radius_px: 1.4 }));
    }

    #[test]
    fn edl_offsets_are_a_ring_without_the_center() {
        let o = Edl::DEFAULT.offsets();
        assert_eq!(o, [[1, 0], [1, 1], [0, 1], [-1, 1], [-1, 0], [-1, -1], [0, -1], [1, -1]]);
        let o3 = Edl { strength: 1.0, radius_px: 3.0 }.offsets();
        assert!(o3.iter().all(|&[x, y]| (x, y) != (0, 0) && x.abs() <= 3 && y.abs() <= 3));
    }
}
