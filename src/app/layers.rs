//! Layers: the files shown, what is uploaded of them, and files added while the viewer runs.
//!
//! How it works: [`Layers`] holds the full cloud of every file shown (one merged [`PointCloud`], its
//! per-file spans in `attributes.sources`) and one [`Layer`] per file, with a visibility flag and a
//! colour. [`Layers::uploaded`] makes the cloud the rasterizer gets: the full cloud itself (shared,
//! no copy) when every layer is visible in its own colours, else a copy of the visible layers' points,
//! painted with their layer colour when colour-by-layer is on, and only the points that pass the
//! [`PointFilter`] (classes, returns, ranges, clip volumes: [`pcv_io::filter::kept`]; a device-only
//! cloud takes the filter into its files, whose next stream applies it), together with the map from uploaded
//! point indices back to the full cloud's (picking reads attributes there). Where the rasterizer's
//! culled passes apply the filter themselves (classes and clip volumes on CUDA), the viewer uploads
//! [`Layers::uploaded_whole`] with the columns its filter reads ([`Layers::uploaded_column`]) once and sets
//! [`Layers::in_raster`]; later filter changes are then parameters of the frame, not uploads. [`Layers::add`] merges
//! newly loaded clouds: their points move from their own origin to the shown cloud's (in f64, then
//! f32), their attribute columns are joined (zeros where a file had none), their spans offset, and the
//! colour mode shown is applied to the result. The built-in scene is a demonstration, not data:
//! dropped files replace it.
use pcv_io::attributes::{self, ColorMode};
use pcv_io::filter::{self, Kept, PointFilter};
use pcv_io::PointCloud;
use std::ops::Range;
use std::sync::Arc;

/// One file shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    pub label: String,
    /// Its points in the full cloud.
    pub points: Range<u64>,
    pub visible: bool,
    /// Its colour when colouring by layer.
    pub color: [u8; 4],
}

/// Colours for layers, in order: distinct hues that read on black, white and gray backgrounds.
pub const LAYER_COLORS: [[u8; 4]; 8] = [
    [230, 159, 0, 255],
    [86, 180, 233, 255],
    [0, 158, 115, 255],
    [240, 228, 66, 255],
    [204, 121, 167, 255],
    [213, 94, 0, 255],
    [0, 114, 178, 255],
    [190, 190, 190, 255],
];

/// Points gathered from the visible layers ([`Layers::gather`]).
#[derive(Clone, Debug, Default)]
pub struct Gathered {
    pub points: Vec<pcv_io::Point>,
    /// Gathered index ranges → full cloud: (gathered start, full start, length), by gathered start.
    pub map: Vec<(u64, u64, u64)>,
    pub kept: Kept,
}

/// The full cloud's index of point `i` of a gathering whose index ranges are `map` (see [`Gathered::map`]).
pub fn full_index(map: &[(u64, u64, u64)], i: u64) -> Option<u64> {
    let k = map.partition_point(|&(start, _, _)| start <= i).checked_sub(1)?;
    let (start, full, len) = map[k];
    (i - start < len).then_some(full + (i - start))
}

/// The files shown.
#[derive(Clone, Debug)]
pub struct Layers {
    /// Every layer's points, merged.
    pub cloud: PointCloud,
    pub layers: Vec<Layer>,
    pub color_by_layer: bool,
    /// Which points are shown (classes, returns, ranges, clip volumes): applied by [`Layers::uploaded`].
    pub filter: PointFilter,
    /// What the filter kept at the last upload (points, and groups skipped, kept whole, tested).
    pub filtered: Option<Kept>,
    /// The rasterizer holds the visible layers' points unfiltered ([`Layers::uploaded_whole`]) and
    /// applies the filter in its culled passes (set by the viewer once it does).
    pub in_raster: bool,
    /// Uploaded index ranges → full cloud: (uploaded start, full start, length), by uploaded start.
    map: Vec<(u64, u64, u64)>,
    /// Counts the uploads ([`Layers::uploaded`], [`Layers::uploaded_whole`]): what was drawn from the
    /// cloud (its colours, layers, filter) may have changed when it moves (the profile window redraws).
    pub version: u64,
}

impl Layers {
    pub fn new(cloud: PointCloud) -> Layers {
        // Until something else is uploaded, the uploaded cloud is the full one.
        let map = vec![(0, 0, cloud.len())];
        let mut l = Layers {
            cloud,
            layers: Vec::new(),
            color_by_layer: false,
            filter: PointFilter::default(),
            filtered: None,
            in_raster: false,
            map,
            version: 0,
        };
        l.rebuild_layers(&[]);
        l
    }

    fn rebuild_layers(&mut self, previous: &[Layer]) {
        self.layers = match self.cloud.attributes.as_ref().filter(|a| !a.sources.is_empty()) {
            Some(a) => a
                .sources
                .iter()
                .enumerate()
                .map(|(i, s)| Layer {
                    label: s.label.clone(),
                    points: s.points.clone(),
                    visible: previous.get(i).is_none_or(|p| p.visible),
                    color: LAYER_COLORS[i % LAYER_COLORS.len()],
                })
                .collect(),
            None => vec![Layer {
                label: self.cloud.label.clone(),
                points: 0..self.cloud.len(),
                visible: true,
                color: LAYER_COLORS[0],
            }],
        };
    }

    /// Whether layers can be hidden or recoloured (not for a lazy built-in scene, whose points the
    /// backend makes itself).
    pub fn editable(&self) -> bool {
        !self.cloud.is_lazy_scene()
    }

    /// The cloud to upload now (see the module doc); remembers its index map.
    pub fn uploaded(&mut self) -> PointCloud {
        self.in_raster = false;
        self.make(true)
    }

    /// The visible layers' points, unfiltered, for a rasterizer that applies the filter itself (the
    /// caller sets [`Layers::in_raster`] once it does); remembers the index map. A device-only cloud's
    /// files stream every point.
    pub fn uploaded_whole(&mut self) -> PointCloud {
        self.make(false)
    }

    /// A column the rasterizer's filter reads ([`pcv_render::filter::column`]) of the points uploaded
    /// last, in their order.
    pub fn uploaded_column(&self, ask: pcv_render::filter::FilterColumn) -> Option<pcv_render::filter::ColumnData> {
        let runs: Vec<std::ops::Range<usize>> =
            self.map.iter().map(|&(_, full, len)| full as usize..(full + len) as usize).collect();
        pcv_render::filter::column(&self.cloud, ask, &runs)
    }

    fn make(&mut self, apply_filter: bool) -> PointCloud {
        self.version += 1;
        let all_visible = self.layers.iter().all(|l| l.visible);
        let filtering = apply_filter && self.editable() && !self.filter.is_empty() && !self.cloud.points.is_empty();
        self.filtered = None;
        if let Some(files) = self.cloud.files() {
            // A device-only cloud: the decoding workers apply the filter as the files stream again
            // (none when the rasterizer applies it).
            files.set_filter(&if apply_filter { self.filter.clone() } else { PointFilter::default() });
        }
        if !self.editable() || (all_visible && !self.color_by_layer && !filtering) {
            self.map = vec![(0, 0, self.cloud.len())];
            return self.cloud.clone();
        }
        let every = PointFilter::default();
        let g = self.gather(if apply_filter { &self.filter } else { &every });
        self.map = g.map;
        if filtering {
            self.filtered = Some(g.kept);
        }
        let mut c = self.cloud.clone();
        c.points = Arc::new(g.points);
        // The bounds stay the full cloud's: hiding a layer does not move the camera's planes.
        c
    }

    /// The visible layers' points that `shown` keeps, as they are drawn (a layer's colour when
    /// colouring by layer), with the map back to the full cloud and what the filter did: the upload's
    /// points ([`Layers::uploaded`]) and the profile window's strip.
    pub fn gather(&self, shown: &PointFilter) -> Gathered {
        let mut g = Gathered::default();
        for l in self.layers.iter().filter(|l| l.visible) {
            let r = l.points.start as usize..(l.points.end as usize).min(self.cloud.points.len());
            let k = filter::kept(&self.cloud, shown, r);
            let start = g.points.len();
            for run in &k.runs {
                g.map.push((g.points.len() as u64, run.start as u64, run.len() as u64));
                g.points.extend_from_slice(&self.cloud.points[run.clone()]);
            }
            if self.color_by_layer {
                g.points[start..].iter_mut().for_each(|p| p.rgba = l.color);
            }
            g.kept.points += k.points;
            g.kept.groups_skipped += k.groups_skipped;
            g.kept.groups_whole += k.groups_whole;
            g.kept.groups_tested += k.groups_tested;
        }
        g
    }

    /// The full cloud's index of the uploaded cloud's point `i`.
    pub fn full_index(&self, i: u64) -> Option<u64> {
        full_index(&self.map, i)
    }

    /// Points in visible layers.
    pub fn visible_points(&self) -> u64 {
        self.layers.iter().filter(|l| l.visible).map(|l| l.points.end - l.points.start).sum()
    }

    /// Adds loaded clouds as layers (`replace`: instead of the current ones, as for the built-in
    /// scene), in colour mode `mode` with elevation along `up` where it applies (falling back to
    /// `rgb` if the merged files cannot show `mode`); clouds in another coordinate system than the
    /// shown one are reprojected into it ([`pcv_io::join::append`]). Returns the mode shown and what
    /// the joins said.
    pub fn add(
        &mut self,
        new: Vec<PointCloud>,
        replace: bool,
        mode: ColorMode,
        up: glam::Vec3,
    ) -> (ColorMode, Vec<String>) {
        let mut new = new.into_iter();
        let Some(first) = new.next() else { return (attributes::current_mode(&self.cloud), Vec::new()) };
        let mut notes = Vec::new();
        let mut append = |base: PointCloud, other: PointCloud| {
            let j = pcv_io::join::append(base, other);
            notes.extend(j.note);
            j.cloud
        };
        let previous = std::mem::take(&mut self.layers);
        let mut keep_visibility = previous.clone();
        let mut base = if replace || self.cloud.scene().is_some() {
            keep_visibility.clear();
            first
        } else {
            let mut base = self.cloud.clone();
            // Joined in the loaded colours; the mode is applied to the result.
            let _ = attributes::recolor(&mut base, ColorMode::Rgb);
            append(base, first)
        };
        for c in new {
            base = append(base, c);
        }
        let shown = if attributes::available_modes(&base).contains(&mode) { mode } else { ColorMode::Rgb };
        let _ = attributes::recolor(&mut base, shown);
        if up != glam::Vec3::Z {
            attributes::apply_up(&mut base, up);
        }
        self.cloud = base;
        self.rebuild_layers(&keep_visibility);
        (shown, notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{DVec3, Vec3};
    use pcv_io::attributes::{Attributes, SourceSpan};
    use pcv_io::formats::Format;
    use pcv_io::Point;

    fn file(label: &str, origin: DVec3, xs: &[f32], intensity: bool) -> PointCloud {
        let points: Vec<Point> = xs.iter().map(|&x| Point::new([x, 0.0, x], [9, 9, 9, 255])).collect();
        let n = points.len() as u64;
        let mut c = PointCloud::from_points(points, origin, label);
        c.attributes = Some(Arc::new(Attributes {
            intensity: intensity.then(|| xs.iter().map(|x| x * 10.0).collect()),
            has_rgb: true,
            sources: vec![SourceSpan {
                label: label.into(),
                format: Format::Ply,
                points: 0..n,
                has_rgb: true,
                has_intensity: intensity,
                has_classification: false,
                uniform_rgb: None,
                crs: None,
            }],
            ..Default::default()
        }));
        c
    }

    #[test]
    fn dropped_files_join_as_layers_in_one_frame_of_coordinates() {
        let mut l = Layers::new(file("a.ply", DVec3::new(1000.0, 0.0, 0.0), &[0.0, 1.0], false));
        let (shown, notes) =
            l.add(vec![file("b.ply", DVec3::new(1010.0, 0.0, 0.0), &[0.5], true)], false, ColorMode::Rgb, Vec3::Z);
        assert!(notes.is_empty(), "no coordinate systems, nothing reprojected: {notes:?}");
        assert_eq!(shown, ColorMode::Rgb);
        assert_eq!(
            l.layers.iter().map(|x| (x.label.as_str(), x.points.clone())).collect::<Vec<_>>(),
            vec![("a.ply", 0..2), ("b.ply", 2..3)]
        );
        // b's point at its x 0.5 is at 1010.5 in file coordinates: 10.5 from a's origin.
        assert_eq!(l.cloud.points[2].pos, [10.5, 0.0, 0.5]);
        assert_eq!(l.cloud.to_source(Vec3::from(l.cloud.points[2].pos)).x, 1010.5);
        assert_eq!(l.cloud.attributes.as_ref().unwrap().intensity.as_deref(), Some(&[0.0, 0.0, 5.0][..]));
        assert_eq!(l.cloud.bounds.max.x, 10.5);
        // Replace: only the new file.
        l.add(vec![file("c.ply", DVec3::ZERO, &[3.0], false)], true, ColorMode::Rgb, Vec3::Z);
        assert_eq!(l.layers.len(), 1);
        assert_eq!(l.cloud.origin, DVec3::ZERO);
    }

    #[test]
    fn hidden_layers_are_not_uploaded_and_picks_map_back() {
        let mut l = Layers::new(file("a.ply", DVec3::ZERO, &[0.0, 1.0, 2.0], false));
        l.add(vec![file("b.ply", DVec3::ZERO, &[5.0, 6.0], false)], false, ColorMode::Rgb, Vec3::Z);
        let all = l.uploaded();
        assert!(Arc::ptr_eq(&all.points, &l.cloud.points), "all visible: no copy");
        assert_eq!(l.full_index(4), Some(4));
        l.layers[0].visible = false;
        let up = l.uploaded();
        assert_eq!(up.points.len(), 2);
        assert_eq!(l.full_index(0), Some(3));
        assert_eq!(l.full_index(1), Some(4));
        assert_eq!(l.full_index(2), None);
        assert_eq!(l.visible_points(), 2);
        l.color_by_layer = true;
        l.layers[0].visible = true;
        let up = l.uploaded();
        assert_eq!(up.points[0].rgba, LAYER_COLORS[0]);
        assert_eq!(up.points[4].rgba, LAYER_COLORS[1]);
        // Visibility survives adding a file.
        l.layers[1].visible = false;
        l.add(vec![file("c.ply", DVec3::ZERO, &[9.0], false)], false, ColorMode::Rgb, Vec3::Z);
        assert_eq!(l.layers.iter().map(|x| x.visible).collect::<Vec<_>>(), vec![true, false, true]);
    }

    #[test]
    fn files_replace_the_builtin_scene_and_keep_the_color_mode_they_can() {
        let mut l = Layers::new(pcv_io::scene::lazy(1000, 1));
        assert!(!l.editable());
        assert_eq!(l.layers.len(), 1);
        let (shown, _) =
            l.add(vec![file("a.ply", DVec3::ZERO, &[0.0, 1.0], false)], false, ColorMode::Intensity, Vec3::Z);
        assert_eq!(shown, ColorMode::Rgb, "a.ply has no intensity");
        assert!(l.editable() && l.cloud.scene().is_none());
        let (shown, _) = l.add(vec![file("b.ply", DVec3::ZERO, &[2.0], true)], false, ColorMode::Intensity, Vec3::Z);
        assert_eq!(shown, ColorMode::Intensity);
    }
}
