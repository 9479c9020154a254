//! pcv's file layer: point clouds, and every way points come from files — the formats, COPC (local and
//! over HTTP), streaming to a device, level of detail's octree sources — and go back to files
//! ([`convert`]), with `pcv info`'s reports ([`info`]).
//!
//! How it works: a [`PointCloud`] is points (16-byte records, [`Point`]: x, y, z as f32, RGBA8) in one
//! shared vector, so the CPU backend and the viewer use them without copies, with their bounds, origin,
//! label, attributes and what they are ([`CloudSource`]: host points, the built-in scene, or files a
//! backend streams). Coordinates are local: `origin` (f64) is the position, in the source's own
//! coordinates, of local (0, 0, 0). The built-in scene ([`scene`]) has its origin at 0; files
//! ([`load`], [`formats`]) are recentred on their common center, and carry their intensity and
//! classification in [`attributes`], which also recolors the points. Files too large for the host
//! stream to a device ([`device`], [`stream`]); COPC files are octrees read a node at a time
//! ([`formats::copc`], [`octree`]). The data model itself is `pcv-model` (re-exported here where
//! clouds use it); the LAZ codec is `pcv-laz`.
pub mod attributes;
pub mod collection;
pub mod convert;
pub mod cpu_time;
pub mod crs;
pub mod device;
pub mod export;
pub mod filter;
pub mod formats;
pub mod geotiff;
pub mod info;
pub mod join;
pub mod load;
pub mod local_frame;
pub mod notices;
pub mod octree;
pub mod order;
pub mod progress;
pub mod raster;
pub mod scene;
pub mod spacing;
pub mod stream;
pub mod subsample;

use glam::{DVec3, Vec3};
/// The coordinate-system types (read by [`crs`]).
pub use pcv_model::crs as crs_model;
pub use pcv_model::{point, Bounds, Point, SceneSpec};
use std::sync::Arc;

/// Points with their bounds and origin.
#[derive(Clone, Debug)]
pub struct PointCloud {
    pub points: Arc<Vec<Point>>,
    /// Bounds of the finite points, in local coordinates.
    pub bounds: Bounds,
    /// Position of local (0, 0, 0) in the source's own coordinates.
    pub origin: DVec3,
    /// For geographic and geocentric clouds: the east-north-up frame the points are in (local
    /// coordinates are its metres, `origin` is zero, [`PointCloud::to_source`] goes back through it).
    pub frame: Option<Arc<local_frame::LocalFrame>>,
    /// What the points are, for the overlay and reports.
    pub label: String,
    /// What the points are: host points, the built-in scene, or files a backend streams.
    pub source: CloudSource,
    /// What loaded files held besides positions and colors (intensity, classification, per-file
    /// spans) and the color mode shown; `None` for the built-in scene and clouds made in code.
    pub attributes: Option<Arc<attributes::Attributes>>,
}

/// What a cloud's points are, and where they are when `points` does not hold them.
#[derive(Clone, Debug)]
pub enum CloudSource {
    /// Loaded files or points made in code, in `points`.
    Host,
    /// The built-in scene of this size and seed. The camera starts at the prototype's pose; with
    /// `points` empty the scene is *lazy*: each backend makes the points itself (the CUDA backend with
    /// its scene kernel, on the device, without a host copy).
    Scene(SceneSpec),
    /// Files streamed to a device ([`device`]): `points` stays empty and the backend decodes the files
    /// into its own memory.
    Files(Arc<device::DeviceFiles>),
}

/// Files further apart than this many times the largest one's size are said to be far apart.
pub const FAR_APART: f32 = 100.0;

impl PointCloud {
    pub fn from_points(points: Vec<Point>, origin: DVec3, label: impl Into<String>) -> Self {
        let bounds = Bounds::of_points(&points);
        Self {
            points: Arc::new(points),
            bounds,
            origin,
            frame: None,
            label: label.into(),
            source: CloudSource::Host,
            attributes: None,
        }
    }

    /// The coordinate system lengths are read in: the first file's that names one.
    pub fn crs(&self) -> Option<&pcv_model::crs::Crs> {
        self.attributes.as_ref()?.sources.iter().find_map(|s| s.crs.as_ref())
    }

    /// The units of [`PointCloud::crs`] (unknown without one).
    pub fn units(&self) -> pcv_model::crs::Units {
        self.crs().map_or(pcv_model::crs::Units::UNKNOWN, |c| c.units())
    }

    /// What a person should know about the files' coordinate systems together: files in different
    /// systems, or some with one and some without (they are drawn as if all were in the first one's),
    /// or files so far apart that each shows as a speck ([`far_apart`]).
    pub fn crs_warning(&self) -> Option<String> {
        let sources = &self.attributes.as_ref()?.sources;
        let Some(first) = sources.iter().find(|s| s.crs.is_some()) else { return self.far_apart() };
        let c = first.crs.as_ref()?;
        let name = |l: &str| std::path::Path::new(l).file_name().map_or(l.to_string(), |n| n.to_string_lossy().into());
        if let Some(other) = sources.iter().find(|s| s.crs.as_ref().is_some_and(|o| !o.same_as(c))) {
            let o = other.crs.as_ref()?;
            return Some(format!(
                "{} is in {} but {} is in {}: drawn together as if in the first",
                name(&first.label),
                c.summary(),
                name(&other.label),
                o.summary()
            ));
        }
        let without = sources.iter().filter(|s| s.crs.is_none()).count();
        if without > 0 {
            return Some(format!(
                "{without} file(s) name no coordinate system: taken to be in {}'s ({})",
                name(&first.label),
                c.summary()
            ));
        }
        self.far_apart()
    }

    /// Files loaded together that lie so far apart (more than [`FAR_APART`] times the largest one's
    /// size) that each shows as a speck: said, with the distance.
    pub fn far_apart(&self) -> Option<String> {
        let sources = &self.attributes.as_ref()?.sources;
        if sources.len() < 2 || self.points.is_empty() {
            return None;
        }
        let boxes: Vec<Bounds> = sources
            .iter()
            .filter_map(|s| self.points.get(s.points.start as usize..s.points.end as usize))
            .map(Bounds::of_points)
            .filter(|b| !b.is_empty())
            .collect();
        let largest = boxes.iter().map(|b| b.radius() * 2.0).fold(0.0f32, f32::max);
        let all = boxes.iter().fold(Bounds::EMPTY, |a, b| Bounds::union(a, *b));
        let across = all.radius() * 2.0;
        (boxes.len() >= 2 && across > FAR_APART * largest.max(1e-6)).then(|| {
            let u = self.units();
            format!(
                "the {} files lie {} apart but each is at most {} across: together each shows as a speck (are they in different coordinate systems?)",
                boxes.len(),
                u.length(across as f64, 0),
                u.length(largest as f64, 0)
            )
        })
    }

    /// Sets every file's coordinate system to `crs` (`--crs`).
    pub fn set_crs(&mut self, crs: &pcv_model::crs::Crs) {
        if let Some(a) = self.attributes.as_mut() {
            for s in &mut Arc::make_mut(a).sources {
                s.crs = Some(crs.clone());
            }
        }
    }

    /// The built-in scene's size and seed, if this is the built-in scene (its points made or not).
    pub fn scene(&self) -> Option<SceneSpec> {
        match self.source {
            CloudSource::Scene(s) => Some(s),
            _ => None,
        }
    }

    /// The files a backend streams, if this cloud is streamed to a device.
    pub fn files(&self) -> Option<&Arc<device::DeviceFiles>> {
        match &self.source {
            CloudSource::Files(f) => Some(f),
            _ => None,
        }
    }

    /// Number of points, also for a lazy scene whose points are not made yet and for files streamed to
    /// a device (the points streamed, or planned before the first upload).
    pub fn len(&self) -> u64 {
        if let Some(d) = self.files().filter(|_| self.points.is_empty()) {
            return d
                .streamed
                .lock()
                .ok()
                .and_then(|s| s.as_ref().map(|s| s.points))
                .unwrap_or_else(|| d.planned_points());
        }
        match self.scene() {
            Some(s) if self.points.is_empty() => s.num_points,
            _ => self.points.len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True for a built-in scene whose points have not been made on the host.
    ///
    /// Also true for files streamed to a device ([`PointCloud::is_device_only`]): neither has host
    /// points, so what needs them (layers, recoloring on the host, the percentile framing box) treats
    /// both alike.
    pub fn is_lazy_scene(&self) -> bool {
        let unmade = match &self.source {
            CloudSource::Scene(s) => s.num_points > 0,
            CloudSource::Files(_) => true,
            CloudSource::Host => false,
        };
        unmade && self.points.is_empty()
    }

    /// True for files whose points a backend streams into its own memory ([`device`]): no host copy.
    pub fn is_device_only(&self) -> bool {
        matches!(self.source, CloudSource::Files(_)) && self.points.is_empty()
    }

    /// The host points, made on the CPU first if this is a lazy scene, or decoded from the files of a
    /// device-only cloud (empty if they cannot be read any more: the error was reported at loading).
    pub fn host_points(&self, show_progress: bool) -> Arc<Vec<Point>> {
        if let Some(d) = self.files().filter(|_| self.points.is_empty()) {
            return Arc::new(device::host_points(d).unwrap_or_default());
        }
        match self.scene() {
            Some(s) if self.is_lazy_scene() => scene::generate(s.num_points, s.seed, show_progress).points,
            _ => self.points.clone(),
        }
    }

    /// The local position of a point in the file's coordinates (`None` where a local frame refuses it).
    pub fn from_source(&self, file: DVec3) -> Option<Vec3> {
        let local = match &self.frame {
            Some(f) => f.to_local(file)?,
            None => file,
        } - self.origin;
        Some(local.as_vec3())
    }

    /// The file's coordinates of a local position (through the local frame, where there is one).
    pub fn to_source(&self, local: Vec3) -> DVec3 {
        match &self.frame {
            Some(f) => f.to_file(self.origin + local.as_dvec3()),
            None => self.origin + local.as_dvec3(),
        }
    }
}
