//! The viewer's state: everything a frame is drawn from and the panel shows.
//!
//! How it works: one [`AppState`] holds the camera and its controllers ([`Navigator`]), the layers
//! shown ([`Layers`]), the render and colour modes, the picked point and the measurement, bookmarks,
//! the `--path` flight, the clip-box gizmo (the box edited, the handle hovered or dragged), the
//! panel's flags, messages and a load in progress. Only
//! [`super::update`] changes it (from actions and the passing of time); the frame and the panel only
//! read it.
use super::gizmo::{handles, Gizmo, GizmoView, Handles};
use super::layers::Layers;
use super::loading::Loader;
use super::messages::Messages;
use super::pick::{PickedPoint, ScaleGrids};
use glam::DVec3;
use pcv_camera::path::CameraPath;
use pcv_camera::{ControllerKind, Navigator, Pose, UpAxis, View};
use pcv_io::attributes::ColorMode;
use pcv_render::look::{Edl, Look};
use pcv_render::RenderMode;

/// A stored view: the camera and which points were shown (classes, returns, ranges, clip boxes).
#[derive(Clone, Debug, PartialEq)]
pub struct Bookmark {
    pub pose: Pose,
    pub up: UpAxis,
    /// Perspective or orthographic (with its frame's size).
    pub projection: pcv_camera::Projection,
    pub filter: pcv_io::filter::PointFilter,
}

/// Bookmark slots (keys 1..9).
pub const BOOKMARKS: usize = 9;

pub use super::measure::Measure;

/// A `--path` flight.
#[derive(Clone, Debug, PartialEq)]
pub struct PathPlayback {
    pub path: CameraPath,
    /// Seconds since the path's first keyframe.
    pub t_s: f64,
    pub playing: bool,
    /// The origin the path's eyes are relative to (the cloud's for file coordinates, else 0).
    pub origin: DVec3,
}

/// What the panel shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UiState {
    pub panel: bool,
    pub help: bool,
}

/// The viewer's state.
pub struct AppState {
    pub nav: Navigator,
    pub layers: Layers,
    /// Mouse-look is on (Esc).
    pub mouselook: bool,
    pub mode: RenderMode,
    /// Point size, eye-dome lighting, background.
    pub look: Look,
    /// The EDL settings L turns back on.
    pub edl_memory: Edl,
    /// The cloud's point spacing, for adaptive point sizes.
    pub spacing_m: f32,
    pub color_mode: ColorMode,
    /// A field colour mode's ramp, range, tone and blend with the files' colours.
    pub field_look: pcv_io::attributes::FieldLook,
    /// The last standard view asked for (the view key goes on from it).
    pub view: View,
    /// Why the up axis is what it is.
    pub up_reason: String,
    /// The last clicked point.
    pub picked: Option<PickedPoint>,
    /// The point under the cursor.
    pub hover: Option<PickedPoint>,
    pub measure: Measure,
    pub bookmarks: [Option<Bookmark>; BOOKMARKS],
    pub path: Option<PathPlayback>,
    /// The clip box edited with the mouse, and the handle hovered or dragged.
    pub gizmo: Gizmo,
    pub ui: UiState,
    pub messages: Messages,
    /// Level of detail: the nodes that could not be read or decoded (file, node key, byte), each once;
    /// the view is drawn without them.
    pub node_errors: Vec<String>,
    /// How many nodes failed ([`pcv_lod::LodScene::failed_nodes`]: those of a server that stopped
    /// answering are counted, not listed).
    pub failed_nodes: usize,
    /// Level of detail: the colour modes its tiles offer (the nodes are coloured as they load, by
    /// the mode and look here: [`crate::viewer::effects::lod_turn`]); `None` for a loaded cloud.
    pub lod_modes: Option<Vec<pcv_io::attributes::ColorMode>>,
    /// Level of detail: the legend's sample from the tiles' root nodes, for the colour mode it was
    /// read for: that field's values (the histogram) and the count of each class code.
    pub lod_sample: Option<(pcv_io::attributes::ColorMode, Vec<f64>, Vec<u64>)>,
    /// Level of detail: each tile's name, points, bounds and how much of it is drawn, as of the last
    /// update ([`pcv_lod::LodScene::tile_states`]): the Files section lists them, the view draws their
    /// boxes while [`Self::show_tile_boxes`].
    pub lod_tiles: Vec<pcv_lod::TileState>,
    pub show_tile_boxes: bool,
    pub loader: Option<Loader>,
    pub grids: ScaleGrids,
    /// The framebuffer's size (framing fits its aspect).
    pub size_px: (u32, u32),
    /// Lengths shown in metres instead of the file's units (N).
    pub lengths_in_metres: bool,
    /// What was opened (paths or URLs as given), for the project Ctrl+S writes.
    pub sources: Vec<String>,
    /// The project file the window was opened from (Ctrl+S writes it back).
    pub project: Option<std::path::PathBuf>,
    /// Annotations ([`super::notes`]).
    pub notes: super::notes::Notes,
    /// The cross-section shown, if any ([`super::profile`]).
    pub profile: Option<super::profile::Profile>,
    /// The strip's width for the next profile, in the files' unit (0: a fortieth of its length).
    pub profile_width: f64,
    /// Profiles may open in a window of their own (the viewer can draw one: a cloud whose points
    /// the host holds); else they take over the main view ([`super::profile`]).
    pub profile_window_ok: bool,
    /// The window's GeoTIFF cell size in the files' horizontal unit (0: a screen pixel's).
    pub raster_cell: f64,
}

impl AppState {
    /// A window's state for `cloud` with its start camera (orbit, vis mode, the files' look) at
    /// `size_px`, messages kept quiet: the tests' start.
    #[cfg(test)]
    pub fn for_test(cloud: pcv_io::PointCloud, size_px: (u32, u32)) -> AppState {
        let (cam, reason) = pcv_camera::Camera::start(&cloud, &Default::default());
        let look = pcv_render::look::Look::for_cloud(false, &Default::default());
        let nav = pcv_camera::Navigator::new(cam, pcv_camera::ControllerKind::Orbit);
        let mut s = AppState::new(nav, Layers::new(cloud), RenderMode::Vis, look, 0.1, reason.0, size_px);
        s.messages.quiet = true;
        s
    }

    pub fn new(
        nav: Navigator,
        layers: Layers,
        mode: RenderMode,
        look: Look,
        spacing_m: f32,
        up_reason: String,
        size_px: (u32, u32),
    ) -> AppState {
        let color_mode = pcv_io::attributes::current_mode(&layers.cloud);
        /// The look a cloud was coloured with (`--ramp`, `--range`), so the panel starts from it.
        fn field_look_of(c: &pcv_io::PointCloud) -> pcv_io::attributes::FieldLook {
            match c.attributes.as_deref().and_then(|a| a.field_spec) {
                // A ramp other than the field's own was asked for (else each field keeps its own).
                Some(pcv_io::attributes::ColorSpec::Field { field, ramp, lo, hi, tone, blend_rgb }) => {
                    let ramp = (ramp != field.default_ramp()).then_some(ramp);
                    pcv_io::attributes::FieldLook { ramp, range: Some((lo, hi)), tone, blend_rgb }
                }
                _ => Default::default(),
            }
        }
        let field_look = field_look_of(&layers.cloud);
        AppState {
            nav,
            layers,
            mouselook: false,
            mode,
            look,
            edl_memory: look.edl.unwrap_or(Edl::DEFAULT),
            spacing_m,
            color_mode,
            field_look,
            view: View::Oblique,
            up_reason,
            picked: None,
            hover: None,
            measure: Measure::default(),
            notes: Default::default(),
            profile: None,
            profile_width: 0.0,
            profile_window_ok: false,
            raster_cell: 0.0,
            sources: Vec::new(),
            project: None,
            bookmarks: Default::default(),
            path: None,
            gizmo: Gizmo::default(),
            ui: UiState { panel: true, help: false },
            messages: Messages::default(),
            node_errors: Vec::new(),
            failed_nodes: 0,
            lod_modes: None,
            lod_sample: None,
            lod_tiles: Vec::new(),
            show_tile_boxes: true,
            loader: None,
            grids: ScaleGrids::default(),
            size_px,
            lengths_in_metres: false,
        }
    }

    /// The units lengths are shown in: the cloud's coordinate system's, or metres (N).
    pub fn units(&self) -> pcv_io::crs_model::Units {
        self.layers.cloud.units().with_metres(self.lengths_in_metres)
    }

    /// The colour modes the panel's list and C offer: level of detail's (its tiles'), the built-in
    /// scene's own colours only, else what the cloud holds (`attributes::available_modes`).
    pub fn color_modes(&self) -> Vec<pcv_io::attributes::ColorMode> {
        let c = &self.layers.cloud;
        match &self.lod_modes {
            Some(m) => m.clone(),
            None if c.is_lazy_scene() && !c.is_device_only() => vec![pcv_io::attributes::ColorMode::Rgb],
            None => pcv_io::attributes::available_modes(c),
        }
    }

    /// Width over height of the framebuffer.
    pub fn aspect(&self) -> f32 {
        self.size_px.0.max(1) as f32 / self.size_px.1.max(1) as f32
    }

    /// The clip box the gizmo edits and the view it is seen in, for a frame `size_px` (framebuffer
    /// pixels) of the current camera. `None` when no box is selected, or for a cloud with a local frame
    /// (geographic coordinates): its boxes are in the file's coordinates, which are not a shift of the
    /// view's, so they are edited by numbers only.
    pub fn gizmo_view(&self, size_px: (u32, u32)) -> Option<(GizmoView, pcv_io::filter::ClipBox)> {
        let b = *self.layers.filter.boxes.get(self.gizmo.selected?)?;
        if self.layers.cloud.frame.is_some() || size_px.0 == 0 || size_px.1 == 0 {
            return None;
        }
        let view = GizmoView {
            clip_from_world: self.nav.camera.clip_from_world(size_px.0, size_px.1),
            size_px: glam::Vec2::new(size_px.0 as f32, size_px.1 as f32),
            origin: self.layers.cloud.origin,
        };
        Some((view, b))
    }

    /// The gizmo's handles on screen, for a frame `size_px` (`None`: no box edited, or not in view).
    pub fn gizmo_handles(&self, size_px: (u32, u32)) -> Option<Handles> {
        let (view, b) = self.gizmo_view(size_px)?;
        handles(&view, &b)
    }

    pub fn controller(&self) -> ControllerKind {
        self.nav.active
    }

    /// Whether something moves without input: a flight playing, a load running.
    pub fn animating(&self) -> bool {
        self.path.as_ref().is_some_and(|p| p.playing) || self.loader.is_some()
    }
}
