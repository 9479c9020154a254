//! Colour ramps: how a value in 0..=1 (or a category) becomes a colour.
//!
//! How it works: each continuous ramp is a short table of colours at even steps of 0..=1, linearly
//! interpolated in sRGB bytes ([`Ramp::color`]); a value outside the range is clamped and NaN takes the
//! low end. The tables are the published ones sampled at their stops: viridis (matplotlib's perceptually
//! uniform ramp, 9 stops), terrain (pcv's elevation ramp: blue, cyan, green, yellow, red, white), gray,
//! and a diverging blue-white-red one (Moreland's "cool to warm", 5 stops) for values around zero such
//! as scan angles. The categorical ramp has no range: integer values take the ten colours of
//! matplotlib's "tab10" in turn ([`categorical_color`]), so neighbouring IDs and return numbers differ.

/// A colour ramp for an attribute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ramp {
    /// Perceptually uniform dark blue → green → yellow (matplotlib's viridis).
    #[default]
    Viridis,
    /// pcv's elevation ramp: blue, cyan, green, yellow, red, white.
    Terrain,
    /// Black to white.
    Gray,
    /// Blue → light gray → red, for values around a middle (Moreland's cool-to-warm).
    Diverging,
    /// Ten distinct colours for integer categories (IDs, return numbers); ignores the range.
    Categorical,
}

impl Ramp {
    pub const ALL: [Ramp; 5] = [Ramp::Viridis, Ramp::Terrain, Ramp::Gray, Ramp::Diverging, Ramp::Categorical];

    pub fn name(self) -> &'static str {
        match self {
            Ramp::Viridis => "viridis",
            Ramp::Terrain => "terrain",
            Ramp::Gray => "gray",
            Ramp::Diverging => "diverging",
            Ramp::Categorical => "categorical",
        }
    }

    /// The colour of `t` in 0..=1 (clamped; NaN is 0). The categorical ramp spreads `t` over its ten
    /// colours (a legend's swatch); attribute values go through [`Ramp::value_color`].
    pub fn color(self, t: f32) -> [u8; 4] {
        let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
        match self {
            Ramp::Viridis => lerp(&VIRIDIS, t),
            Ramp::Terrain => lerp(&TERRAIN, t),
            Ramp::Gray => {
                let g = (t * 255.0).round() as u8;
                [g, g, g, 255]
            }
            Ramp::Diverging => lerp(&DIVERGING, t),
            Ramp::Categorical => categorical_color(((t * 9.0).round()) as f64),
        }
    }

    /// The colour of value `v` over `lo..=hi` (the categorical ramp: by `v`'s integer part).
    pub fn value_color(self, v: f64, lo: f64, hi: f64) -> [u8; 4] {
        self.toned_color(v, lo, hi, &Tone::default())
    }

    /// [`Ramp::value_color`] with `tone` applied to the ramp's position (categories are left as they are).
    pub fn toned_color(self, v: f64, lo: f64, hi: f64, tone: &Tone) -> [u8; 4] {
        match self {
            Ramp::Categorical => categorical_color(v),
            _ => self.color(tone.apply(unit64(v, lo, hi))),
        }
    }
}

impl std::fmt::Display for Ramp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Gamma, brightness and contrast applied to a continuous ramp's position `t` before it becomes a
/// colour: `t^gamma`, then `(t - 0.5)·contrast + 0.5 + brightness`, clamped to 0..=1. The default
/// changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Tone {
    pub gamma: f32,
    pub brightness: f32,
    pub contrast: f32,
}

impl Default for Tone {
    fn default() -> Self {
        Tone { gamma: 1.0, brightness: 0.0, contrast: 1.0 }
    }
}

impl Tone {
    pub fn apply(&self, t: f32) -> f32 {
        if *self == Tone::default() {
            return t;
        }
        let g = t.clamp(0.0, 1.0).powf(self.gamma.max(1e-3));
        ((g - 0.5) * self.contrast + 0.5 + self.brightness).clamp(0.0, 1.0)
    }
}

/// `v` mapped to 0..=1 over `lo..=hi` (0.5 for an empty range, 0 for NaN).
pub fn unit64(v: f64, lo: f64, hi: f64) -> f32 {
    if v.is_nan() {
        0.0
    } else if hi > lo {
        ((v - lo) / (hi - lo)).clamp(0.0, 1.0) as f32
    } else {
        0.5
    }
}

/// Category `v` (its integer part; NaN and infinities are gray) in matplotlib's tab10 colours.
pub fn categorical_color(v: f64) -> [u8; 4] {
    if !v.is_finite() {
        return [128, 128, 128, 255];
    }
    let k = (v.floor() as i64).rem_euclid(TAB10.len() as i64) as usize;
    let c = TAB10[k];
    [c[0], c[1], c[2], 255]
}

/// Linear interpolation through `stops` at even steps of 0..=1.
fn lerp(stops: &[[u8; 3]], t: f32) -> [u8; 4] {
    let x = t * (stops.len() - 1) as f32;
    let i = (x as usize).min(stops.len() - 2);
    let f = x - i as f32;
    let c = |k: usize| (stops[i][k] as f32 * (1.0 - f) + stops[i + 1][k] as f32 * f).round() as u8;
    [c(0), c(1), c(2), 255]
}

/// viridis at 0, 1/8, ..., 1 (R's `viridis(9)`).
const VIRIDIS: [[u8; 3]; 9] = [
    [0x44, 0x01, 0x54],
    [0x47, 0x2d, 0x7b],
    [0x3b, 0x52, 0x8b],
    [0x2c, 0x72, 0x8e],
    [0x21, 0x90, 0x8c],
    [0x27, 0xad, 0x81],
    [0x5d, 0xc8, 0x63],
    [0xaa, 0xdc, 0x32],
    [0xfd, 0xe7, 0x25],
];

/// pcv's terrain ramp (the elevation colouring's, `attributes::ramp_color`) in bytes.
const TERRAIN: [[u8; 3]; 6] =
    [[41, 64, 204], [26, 179, 217], [51, 191, 64], [242, 217, 51], [217, 64, 38], [247, 247, 247]];

/// Moreland's cool-to-warm at 0, 1/4, ..., 1.
const DIVERGING: [[u8; 3]; 5] = [[59, 76, 192], [141, 176, 254], [221, 221, 221], [244, 154, 123], [180, 4, 38]];

/// matplotlib's tab10.
const TAB10: [[u8; 3]; 10] = [
    [31, 119, 180],
    [255, 127, 14],
    [44, 160, 44],
    [214, 39, 40],
    [148, 103, 189],
    [140, 86, 75],
    [227, 119, 194],
    [127, 127, 127],
    [188, 189, 34],
    [23, 190, 207],
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramps_run_from_their_first_stop_to_their_last() {
        assert_eq!(Ramp::Viridis.color(0.0), [0x44, 0x01, 0x54, 255]);
        assert_eq!(Ramp::Viridis.color(1.0), [0xfd, 0xe7, 0x25, 255]);
        assert_eq!(Ramp::Viridis.color(0.5), [0x21, 0x90, 0x8c, 255]);
        assert_eq!(Ramp::Diverging.color(0.5), [221, 221, 221, 255]);
        assert_eq!(Ramp::Gray.color(f32::NAN), [0, 0, 0, 255]);
        assert_eq!(Ramp::Gray.color(7.0), [255, 255, 255, 255]);
        // Halfway between two stops is their mean.
        let m = Ramp::Viridis.color(1.0 / 16.0);
        assert_eq!(m, [70, 23, 104, 255]);
    }

    #[test]
    fn tone_changes_only_when_asked() {
        let t = Tone::default();
        assert_eq!(t.apply(0.3), 0.3);
        let bright = Tone { brightness: 0.2, ..t };
        assert!((bright.apply(0.3) - 0.5).abs() < 1e-6);
        let gamma = Tone { gamma: 2.0, ..t };
        assert!((gamma.apply(0.5) - 0.25).abs() < 1e-6);
        let flat = Tone { contrast: 0.0, ..t };
        assert_eq!(flat.apply(0.9), 0.5);
        assert_eq!(Tone { brightness: 1.0, ..t }.apply(0.9), 1.0);
        assert_eq!(Ramp::Categorical.toned_color(3.0, 0.0, 1.0, &bright), categorical_color(3.0));
    }

    #[test]
    fn categories_cycle_through_ten_colours_and_ignore_the_range() {
        assert_eq!(Ramp::Categorical.value_color(1.0, 0.0, 0.0), categorical_color(11.0));
        assert_ne!(categorical_color(1.0), categorical_color(2.0));
        assert_eq!(categorical_color(-1.0), categorical_color(9.0));
        assert_eq!(categorical_color(f64::NAN), [128, 128, 128, 255]);
        assert_eq!(Ramp::Viridis.value_color(5.0, 0.0, 10.0), Ramp::Viridis.color(0.5));
        assert_eq!(Ramp::Viridis.value_color(5.0, 5.0, 5.0), Ramp::Viridis.color(0.5));
    }
}
