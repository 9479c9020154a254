//! Picked points: what lies under the cursor, in the file's own terms.
//!
//! How it works: the rasterizer's pick ([`Rasterizer::pick`]) returns the nearest point of the last
//! frame around a pixel: its local position and, in the visibility-buffer modes, its index in the
//! uploaded cloud. [`PickedPoint::describe`] turns that into what a person asks for: the position in
//! the file's coordinates (origin + local, in f64 — for LAS/LAZ snapped to the file's scale grid,
//! `offset + round((x − offset) / scale) · scale`, which is exactly the value the file stores and
//! `pcv info` computes, since the f32 local position is far finer than the grid for any tile), the
//! file it came from, and its intensity, classification and RGB where that file had them.
//! [`Picker`] is the pick as the viewer's update step sees it (pixels from the top-left): [`Reads`],
//! the picks the viewer read of the last frame before the update ([`reads_needed`] says which), so the
//! update never touches the GPU; tests stand in for it with pickers of their own.
use glam::{DVec3, Vec2, Vec3};
use pcv_camera::MoveInput;
use pcv_io::attributes::Field;
use pcv_io::crs_model::{Distance, Units};
use pcv_io::formats::Format;
use pcv_io::PointCloud;
use pcv_render::PickHit;
use std::collections::HashMap;

/// Pixels around the cursor a click searches for a point.
pub const CLICK_RADIUS_PX: u32 = 6;

/// Picks points of the last frame.
pub trait Picker {
    /// The nearest point drawn within `radius_px` of `at_px` (framebuffer pixels from the top-left).
    fn pick(&mut self, at_px: Vec2, radius_px: u32) -> Option<PickHit>;
    /// Whether the pixel was read at all (an update's reads hold only what was gathered for it).
    fn gathered(&self, _at_px: Vec2, _radius_px: u32) -> bool {
        true
    }
    /// The nearest point the profile window drew within `radius_px` of `at_px` (pixels from the
    /// image's top-left), its index in the full cloud; `None` where no profile window draws.
    fn pick_profile(&mut self, _at_px: Vec2, _radius_px: u32) -> Option<PickHit> {
        None
    }
}

/// What an update may read of the last frame, read before it: the pick at each pixel and radius the
/// coming update needs ([`reads_needed`]), gathered by the viewer's effects ([`Reads::gather`] with the
/// rasterizer's pick), so that the update itself only looks data up. A pixel that was not gathered
/// reads as nothing there.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reads {
    hits: Vec<((Vec2, u32), Option<PickHit>)>,
    /// The profile window's picks (its own frame), gathered by [`Reads::gather_profile`].
    profile_hits: Vec<((Vec2, u32), Option<PickHit>)>,
}

impl Reads {
    /// The picks at `wanted` (pixels from the top-left, radius), each read once with `pick`.
    pub fn gather(wanted: &[(Vec2, u32)], pick: &mut dyn Picker) -> Reads {
        let mut hits: Vec<((Vec2, u32), Option<PickHit>)> = Vec::with_capacity(wanted.len());
        for &w in wanted {
            if !hits.iter().any(|(k, _)| *k == w) {
                hits.push((w, pick.pick(w.0, w.1)));
            }
        }
        Reads { hits, profile_hits: Vec::new() }
    }

    /// Adds the profile window's picks at `wanted` ([`profile_reads_needed`]), read with `pick`.
    pub fn gather_profile(&mut self, wanted: &[(Vec2, u32)], pick: &mut dyn FnMut(Vec2, u32) -> Option<PickHit>) {
        for &w in wanted {
            if !self.profile_hits.iter().any(|(k, _)| *k == w) {
                self.profile_hits.push((w, pick(w.0, w.1)));
            }
        }
    }
}

/// The profile window's picks the coming update will ask for (its clicks).
pub fn profile_reads_needed(actions: &[crate::input::Action]) -> Vec<(Vec2, u32)> {
    actions
        .iter()
        .filter_map(|a| match a {
            crate::input::Action::ProfileClick { at_px } => Some((*at_px, CLICK_RADIUS_PX)),
            _ => None,
        })
        .collect()
}

impl Picker for Reads {
    fn pick(&mut self, at_px: Vec2, radius_px: u32) -> Option<PickHit> {
        self.hits.iter().find(|(k, _)| *k == (at_px, radius_px)).and_then(|(_, h)| *h)
    }

    fn gathered(&self, at_px: Vec2, radius_px: u32) -> bool {
        self.hits.iter().any(|(k, _)| *k == (at_px, radius_px))
    }

    fn pick_profile(&mut self, at_px: Vec2, radius_px: u32) -> Option<PickHit> {
        self.profile_hits.iter().find(|(k, _)| *k == (at_px, radius_px)).and_then(|(_, h)| *h)
    }
}

/// The picks `actions`, then held keys `held`, will ask for in [`super::update`] on `s`: a click's and
/// the hovered pixel's, each press, wheel turn and double click's (the controllers' pivot and zoom
/// target), and the screen centre's while walking at an adaptive speed (the depth ahead).
pub fn reads_needed(
    s: &super::state::AppState,
    actions: &[crate::input::Action],
    held: &MoveInput,
) -> Vec<(Vec2, u32)> {
    use crate::input::Action;
    use pcv_camera::controller::PICK_RADIUS_PX;
    use pcv_camera::Nav;
    let mut wanted = Vec::new();
    for a in actions {
        match a {
            Action::Click { at_px } | Action::Hover { at_px: Some(at_px) } => wanted.push((*at_px, CLICK_RADIUS_PX)),
            Action::Nav(Nav::DragStart { at_px, .. } | Nav::Wheel { at_px, .. } | Nav::DoubleClick { at_px }) => {
                wanted.push((*at_px, PICK_RADIUS_PX))
            }
            _ => {}
        }
    }
    wanted.extend(s.notes.reads(&s.nav.camera, s.size_px, |f| s.layers.cloud.from_source(f)));
    if held.is_moving() && s.nav.camera.adaptive_speed {
        let (w, h) = s.size_px;
        wanted.push((Vec2::new(w as f32 * 0.5, h as f32 * 0.5), pcv_camera::controller::AHEAD_RADIUS_PX));
    }
    wanted
}

/// A [`Picker`] as the camera controllers' depth probe.
pub struct ProbeOf<'a>(pub &'a mut dyn Picker);

impl pcv_camera::DepthProbe for ProbeOf<'_> {
    fn probe(&mut self, at_px: Vec2, radius_px: u32) -> Option<Vec3> {
        self.0.pick(at_px, radius_px).map(|h| h.position)
    }
}

/// A picked point, described.
#[derive(Clone, Debug, PartialEq)]
pub struct PickedPoint {
    /// Local position (what the camera works in).
    pub local: Vec3,
    /// Position in the file's coordinates.
    pub file: DVec3,
    /// Whether `file` was snapped to the file's LAS scale grid.
    pub snapped: bool,
    /// Decimals `file` is printed with: the LAS scale's ([`scale_decimals`]) when snapped, else what
    /// the f32 local position holds ([`local_decimals`]).
    pub decimals: usize,
    /// Decimals of the height where they differ from the other two (a geographic cloud's metres).
    pub height_decimals: Option<usize>,
    /// Index in the full cloud (all layers), where the mode knows it.
    pub index: Option<u64>,
    /// The file it came from, and its format.
    pub source: Option<(String, Format)>,
    pub intensity: Option<f32>,
    pub classification: Option<u8>,
    pub rgb: Option<[u8; 3]>,
    /// The other fields its file had (GPS time, returns, ...), in [`Field::known`]'s order.
    pub fields: Vec<(Field, f64)>,
    /// For a level-of-detail scene: the octree node and the point's place in it.
    pub node: Option<String>,
    /// Whether the level-of-detail scene was asked for this point's attributes (once).
    pub looked_up: bool,
}

impl PickedPoint {
    /// A point known by its position alone (local and file coordinates), printed with what the f32
    /// local position holds.
    pub fn at(local: Vec3, file: DVec3) -> PickedPoint {
        PickedPoint {
            local,
            file,
            snapped: false,
            decimals: local_decimals(local),
            height_decimals: None,
            index: None,
            source: None,
            intensity: None,
            classification: None,
            rgb: None,
            fields: Vec::new(),
            node: None,
            looked_up: false,
        }
    }

    /// Fills in what a level-of-detail scene's node holds for this point ([`pcv_lod::LodScene::point_at`]):
    /// its file, node, intensity, class and colour; the position snapped to the file's scale grid.
    pub fn with_node_point(&mut self, np: &pcv_lod::NodePoint, cloud: &PointCloud, grids: &mut ScaleGrids) {
        self.looked_up = true;
        self.local = np.local;
        self.file = cloud.to_source(np.local);
        self.source = Some((np.source.clone(), Format::Laz));
        self.node = Some(format!("node {} point #{}", np.key, np.index));
        self.intensity = np.intensity;
        self.classification = np.classification;
        self.fields = np.fields.iter().copied().filter(|(_, v)| v.is_finite()).collect();
        self.rgb = np.rgb;
        if let Some(grid) = grids.grid(&np.source, Format::Laz) {
            self.snap_to(grid);
        }
    }

    /// Puts the position on the file's LAS scale grid and prints it with the grid's decimals.
    fn snap_to(&mut self, (scale, offset): Grid) {
        self.file = DVec3::new(
            snap(self.file.x, scale[0], offset[0]),
            snap(self.file.y, scale[1], offset[1]),
            snap(self.file.z, scale[2], offset[2]),
        );
        self.snapped = true;
        self.decimals = scale_decimals(scale);
    }

    /// The position in the file's coordinates at the file's precision.
    pub fn position(&self) -> String {
        let d = self.decimals;
        let h = self.height_decimals.unwrap_or(d);
        format!("{:.d$}, {:.d$}, {:.h$}", self.file.x, self.file.y, self.file.z)
    }

    /// The attributes after the position, on one line (class, intensity), empty where none are known.
    pub fn attribute_summary(&self) -> String {
        let mut s = Vec::new();
        if let Some(c) = self.classification {
            s.push(format!("class {c} ({})", class_name(c)));
        }
        if let Some(i) = self.intensity {
            s.push(format!("intensity {i}"));
        }
        s.join("  ")
    }

    /// One line for the status bar.
    pub fn summary(&self) -> String {
        let mut s = self.position();
        if let Some(c) = self.classification {
            s.push_str(&format!("  class {c} ({})", class_name(c)));
        }
        if let Some(i) = self.intensity {
            s.push_str(&format!("  intensity {i}"));
        }
        s
    }

    /// The lines the panel shows: position; file and point number; class and intensity; colour.
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![self.position()];
        let mut from = Vec::new();
        if let Some((label, format)) = &self.source {
            let name = std::path::Path::new(label).file_name().and_then(|n| n.to_str()).unwrap_or(label);
            from.push(format!("{name} ({format})"));
        }
        if let Some(n) = &self.node {
            from.push(n.clone());
        } else if let Some(i) = self.index {
            from.push(format!("point #{i}"));
        }
        if !from.is_empty() {
            v.push(from.join("  "));
        }
        let mut attrs = Vec::new();
        if let Some(c) = self.classification {
            attrs.push(format!("class {c} {}", class_name(c)));
        }
        if let Some(i) = self.intensity {
            attrs.push(format!("intensity {i}"));
        }
        if !attrs.is_empty() {
            v.push(attrs.join("  "));
        }
        if let Some([r, g, b]) = self.rgb {
            v.push(format!("rgb {r} {g} {b}"));
        }
        // The other fields, a few a line: "return_number 1/2" and the rest by name.
        let mut line = Vec::new();
        let get = |f: Field| self.fields.iter().find(|(g, _)| *g == f).map(|(_, v)| *v);
        if let (Some(r), Some(n)) = (get(Field::ReturnNumber), get(Field::NumberOfReturns)) {
            line.push(format!("return {r}/{n}"));
        }
        for &(f, x) in self.fields.iter().filter(|(f, _)| !matches!(f, Field::ReturnNumber | Field::NumberOfReturns)) {
            line.push(match f {
                Field::GpsTime => format!("gps_time {x:.6}"),
                Field::ScanAngle => format!("scan_angle {x:.3}"),
                _ => format!("{f} {x}"),
            });
            if line.len() == 2 {
                v.push(line.join("  "));
                line.clear();
            }
        }
        if !line.is_empty() {
            v.push(line.join("  "));
        }
        v
    }
}

/// Decimals a LAS scale grid holds on each axis, the most of the three: a scale of 0.01 gives 2,
/// 0.001 gives 3, 0.25 gives 2 (0.25, 0.50, 0.75), 1 or more gives 0; at most 9.
pub fn scale_decimals(scale: [f64; 3]) -> usize {
    scale
        .iter()
        .map(|&s| {
            (0..=9usize)
                .find(|&d| {
                    let k = s * 10f64.powi(d as i32);
                    k.round() >= 1.0 && (k - k.round()).abs() <= 1e-6 * k
                })
                .unwrap_or(9)
        })
        .max()
        .unwrap_or(3)
}

/// Decimals the f32 local position `local` holds (its spacing at that size), at most millimetres'
/// tenths (4) and at least none: a point 1,000 units from the origin holds 3, one 1e6 away none.
pub fn local_decimals(local: Vec3) -> usize {
    let ulp = (local.abs().max_element().max(1.0) * f32::EPSILON) as f64;
    (-ulp.log10()).floor().clamp(0.0, 4.0) as usize
}

/// The ASPRS name of a classification code.
pub fn class_name(code: u8) -> &'static str {
    match code {
        0 => "never classified",
        1 => "unassigned",
        2 => "ground",
        3 => "low vegetation",
        4 => "medium vegetation",
        5 => "high vegetation",
        6 => "building",
        7 => "low point (noise)",
        8 => "model key point",
        9 => "water",
        10 => "rail",
        11 => "road surface",
        12 => "overlap",
        13 => "wire guard",
        14 => "wire conductor",
        15 => "transmission tower",
        16 => "wire connector",
        17 => "bridge deck",
        18 => "high noise",
        _ => "user-defined",
    }
}

/// A LAS file's scale and offset per axis.
pub type Grid = ([f64; 3], [f64; 3]);

/// LAS scale grids by file, read once from the files' headers.
#[derive(Debug, Default)]
pub struct ScaleGrids {
    by_label: HashMap<String, Option<Grid>>,
}

impl ScaleGrids {
    /// The scale and offset of the LAS/LAZ file `label` (its path), if it is one and is readable.
    pub fn grid(&mut self, label: &str, format: Format) -> Option<Grid> {
        if !matches!(format, Format::Las | Format::Laz) {
            return None;
        }
        *self.by_label.entry(label.to_string()).or_insert_with(|| {
            let bytes = pcv_io::load::FileBytes::open(std::path::Path::new(label)).ok()?;
            let h = pcv_io::formats::las::parse_header(bytes.bytes()).ok()?;
            Some((h.scale, h.offset))
        })
    }
}

/// `v` on the grid `offset + k · scale`.
pub fn snap(v: f64, scale: f64, offset: f64) -> f64 {
    ((v - offset) / scale).round() * scale + offset
}

/// Describes `hit` on `cloud` (the full cloud; `full_index` maps the uploaded cloud's index to it).
pub fn describe(hit: &PickHit, cloud: &PointCloud, full_index: Option<u64>, grids: &mut ScaleGrids) -> PickedPoint {
    let mut p = PickedPoint {
        // Degrees of a geographic cloud (drawn in a local frame): 8 decimals, about a millimetre.
        decimals: match cloud.frame.as_ref().map(|f| f.kind) {
            Some(pcv_io::crs_model::CrsKind::Geographic) => 8,
            _ => local_decimals(hit.position),
        },
        height_decimals: cloud.frame.as_ref().map(|_| local_decimals(hit.position)),
        index: full_index,
        ..PickedPoint::at(hit.position, cloud.to_source(hit.position))
    };
    let Some(attrs) = cloud.attributes.as_ref() else { return p };
    let Some(i) = full_index.filter(|&i| i < cloud.points.len() as u64) else { return p };
    let Some(span) = attrs.sources.iter().find(|s| s.points.contains(&i)) else { return p };
    p.source = Some((span.label.clone(), span.format));
    if let Some(grid) = grids.grid(&span.label, span.format) {
        p.snap_to(grid);
    }
    let iu = i as usize;
    if span.has_intensity {
        p.intensity = attrs.intensity.as_ref().and_then(|v| v.get(iu)).copied();
    }
    if span.has_classification {
        p.classification = attrs.classification.as_ref().and_then(|v| v.get(iu)).copied();
    }
    p.fields = attrs.columns.iter().map(|c| (c.field, c.get(iu))).filter(|(_, v)| v.is_finite()).collect();
    if span.has_rgb {
        let rgba = match &attrs.loaded_rgba {
            Some(saved) => saved.get(iu).copied(),
            None if attrs.mode == pcv_io::attributes::ColorMode::Rgb => cloud.points.get(iu).map(|q| q.rgba),
            None => None,
        };
        p.rgb = rgba.map(|c| [c[0], c[1], c[2]]);
    }
    p
}

/// Two picked points: the distance between them and its horizontal and vertical parts (along `up`),
/// in `units`' display units ([`Units::distance`]: heights converted first where the file's vertical
/// unit differs from its horizontal one).
pub fn distance(a: &PickedPoint, b: &PickedPoint, up: Vec3, units: &Units) -> Distance {
    units.distance(a.file, b.file, up.as_dvec3())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcv_io::attributes::{Attributes, ColorMode, SourceSpan};
    use pcv_io::Point;
    use std::sync::Arc;

    fn cloud() -> PointCloud {
        let points =
            vec![Point::new([1.0, 2.0, 3.0], [10, 20, 30, 255]), Point::new([-1.0, 0.5, 0.25], [1, 2, 3, 255])];
        let mut c = PointCloud::from_points(points, DVec3::new(500_000.0, 4_000_000.0, 100.0), "t");
        c.attributes = Some(Arc::new(Attributes {
            intensity: Some(vec![7.0, 300.0]),
            classification: Some(vec![2, 6]),
            columns: Vec::new(),
            field_spec: None,
            has_rgb: true,
            sources: vec![
                SourceSpan {
                    label: "a.ply".into(),
                    format: Format::Ply,
                    points: 0..1,
                    has_rgb: true,
                    has_intensity: false,
                    has_classification: false,
                    uniform_rgb: None,
                    crs: None,
                },
                SourceSpan {
                    label: "b.las".into(),
                    format: Format::Las,
                    points: 1..2,
                    has_rgb: false,
                    has_intensity: true,
                    has_classification: true,
                    uniform_rgb: None,
                    crs: None,
                },
            ],
            mode: ColorMode::Rgb,
            loaded_rgba: None,
            color_note: None,
        }));
        c
    }

    fn hit(position: Vec3) -> PickHit {
        PickHit { pixel: (0, 0), position, point_index: None, depth: 0.5 }
    }

    #[test]
    fn points_are_described_by_the_file_they_came_from() {
        let c = cloud();
        let mut grids = ScaleGrids::default();
        let a = describe(&hit(Vec3::new(1.0, 2.0, 3.0)), &c, Some(0), &mut grids);
        assert_eq!(a.file, DVec3::new(500_001.0, 4_000_002.0, 103.0));
        assert_eq!(a.source, Some(("a.ply".into(), Format::Ply)));
        assert_eq!((a.intensity, a.classification, a.rgb), (None, None, Some([10, 20, 30])));
        // b.las does not exist here: no grid, no snapping; its own attributes.
        let b = describe(&hit(Vec3::new(-1.0, 0.5, 0.25)), &c, Some(1), &mut grids);
        assert!(!b.snapped);
        assert_eq!((b.intensity, b.classification, b.rgb), (Some(300.0), Some(6), None));
        assert!(b.summary().contains("class 6 (building)") && b.summary().contains("intensity 300"), "{}", b.summary());
        // Without an index only the position is known.
        let n = describe(&hit(Vec3::ONE), &c, None, &mut grids);
        assert_eq!((n.source.clone(), n.intensity), (None, None));
        let d = distance(&a, &b, Vec3::Z, &Units::UNKNOWN);
        assert!((d.vertical + 2.75).abs() < 1e-9 && (d.horizontal - (4.0f64 + 2.25).sqrt()).abs() < 1e-9, "{d:?}");
        assert!((d.total - (4.0f64 + 2.25 + 2.75 * 2.75).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn snapping_recovers_the_stored_value() {
        // A LAS x of 123456789 × 0.001 + 500000: read back from f32 local coordinates around an origin.
        let (scale, offset) = (0.001, 500_000.0);
        let stored = 123_456_789.0 * scale + offset;
        let origin = 623_400.0;
        let local = (stored - origin) as f32;
        let back = snap(origin + local as f64, scale, offset);
        assert_eq!(back, stored);
        let p = PickedPoint {
            snapped: true,
            decimals: scale_decimals([scale, 0.01, 0.01]),
            fields: vec![(Field::ReturnNumber, 1.0), (Field::NumberOfReturns, 3.0), (Field::GpsTime, 315_000_123.25)],
            ..PickedPoint::at(Vec3::new(local, 0.0, 0.0), DVec3::new(back, 5_405_017.93, 253.79))
        };
        assert_eq!(p.position(), "623456.789, 5405017.930, 253.790");
        assert_eq!(p.lines().last().unwrap(), "return 1/3  gps_time 315000123.250000");
        assert_eq!(scale_decimals([0.01; 3]), 2);
        assert_eq!(scale_decimals([0.25, 1.0, 10.0]), 2);
        assert_eq!(scale_decimals([1.0; 3]), 0);
        assert_eq!(scale_decimals([0.000_000_1; 3]), 7);
        assert_eq!(class_name(2), "ground");
    }

    #[test]
    fn unsnapped_positions_print_what_f32_holds_without_float_noise() {
        // A PLY point 1.9 units from an origin of 636481.95 reads 636483.85, not 636483.8500000001.
        assert_eq!(local_decimals(Vec3::new(1.9, 0.0, 0.0)), 4);
        assert_eq!(local_decimals(Vec3::new(1000.0, 0.0, 0.0)), 3);
        assert_eq!(local_decimals(Vec3::new(100_000.0, 0.0, 0.0)), 1);
        assert_eq!(local_decimals(Vec3::new(1.0e6, 0.0, 0.0)), 0);
        let c = cloud();
        let mut grids = ScaleGrids::default();
        let mut a = describe(&hit(Vec3::new(1.9, 2.0, 3.0)), &c, Some(0), &mut grids);
        assert_eq!(a.position(), "500001.9000, 4000002.0000, 103.0000");
        a.file.x = 636_481.950_000_000_1;
        assert!(a.summary().starts_with("636481.9500, "), "{}", a.summary());
    }
}
