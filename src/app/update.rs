//! The update step: actions and the passing of time change the state, and say what must happen next.
//!
//! How it works: [`apply`] carries out one [`Action`] on the [`AppState`] and [`tick`] moves what
//! moves by itself (held keys, a `--path` flight, a load, fading messages). Neither touches the
//! window, the GPU or the disk: what needs them comes back as [`Effects`] — draw again (the points, or
//! only the panel over the last frame), upload the points again (new colours, layers shown or
//! hidden), save a screenshot, print the pose, start loading files, switch mouse-look, quit — and the
//! viewer's loop (`crate::viewer::run`) does it. What lies under a pixel comes from a [`Picker`]: the
//! picks the loop read of the last frame before the update ([`super::pick::Reads`]; tests stand in for
//! them), so an update is input + state → state + effects, with no GPU in between. The clip-box
//! gizmo's press, drag and release ([`super::gizmo`]) edit the selected box; each step of a drag ends
//! in [`Action::SetFilter`], so the one filter path refilters the view while the mouse moves.
use super::gizmo::{Drag, Gizmo};
use super::layers::Layers;
use super::loading::{LoadEvent, Loader};
use super::pick::{describe, PickedPoint, Picker, ProbeOf, CLICK_RADIUS_PX};
use super::state::{AppState, Bookmark, PathPlayback};
use crate::input::Action;
use glam::Vec2;
use pcv_camera::{MoveInput, NavCtx, UpAxis};
use pcv_io::attributes::{self, ColorMode};
use pcv_render::look::Quality;
use std::path::PathBuf;
use std::time::Instant;

/// What the loop must do after an update.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effects {
    /// Render the points again (the camera or what is drawn changed).
    pub redraw_scene: bool,
    /// Draw the panel again over the last frame.
    pub redraw_ui: bool,
    /// Upload the points again ([`Layers::uploaded`]).
    pub reupload: bool,
    /// The filter changed, not the points: a rasterizer that applies it in its culled passes takes
    /// it without an upload ([`Layers::in_raster`]); otherwise the points are uploaded again.
    pub refilter: bool,
    /// Save a screenshot (`true`: with the panel).
    pub screenshot: Option<bool>,
    /// Render the view offscreen at [`HIRES_WIDTH_PX`] across and save it (F12).
    pub hires_screenshot: bool,
    /// Write the measurements.
    pub export: Option<super::measure::ExportFormat>,
    /// Write the view as a GeoTIFF.
    pub export_raster: Option<pcv_io::raster::RasterKind>,
    /// Write the project.
    pub save_project: bool,
    /// Write the profile's points (`Some(true)`: as SVG).
    pub export_profile: Option<bool>,
    /// Write the strip's points as LAZ.
    pub export_profile_laz: bool,
    pub print_pose: bool,
    pub save_bookmarks: bool,
    /// Start loading these files (`true`: replace the layers).
    pub open: Option<(Vec<PathBuf>, bool)>,
    /// Switch mouse-look to this.
    pub mouselook: Option<bool>,
    pub quit: bool,
}

impl Effects {
    pub fn merge(&mut self, o: Effects) {
        self.redraw_scene |= o.redraw_scene;
        self.redraw_ui |= o.redraw_ui;
        self.reupload |= o.reupload;
        self.refilter |= o.refilter;
        self.screenshot = o.screenshot.or(self.screenshot);
        self.hires_screenshot |= o.hires_screenshot;
        self.export = o.export.or(self.export);
        self.export_raster = o.export_raster.or(self.export_raster);
        self.save_project |= o.save_project;
        self.export_profile = o.export_profile.or(self.export_profile);
        self.export_profile_laz |= o.export_profile_laz;
        self.print_pose |= o.print_pose;
        self.save_bookmarks |= o.save_bookmarks;
        if o.open.is_some() {
            self.open = o.open;
        }
        self.mouselook = o.mouselook.or(self.mouselook);
        self.quit |= o.quit;
    }

    /// Whether the window must draw.
    pub fn redraw(&self) -> bool {
        self.redraw_scene || self.redraw_ui || self.reupload || self.refilter
    }

    fn scene() -> Effects {
        Effects { redraw_scene: true, ..Default::default() }
    }

    fn ui() -> Effects {
        Effects { redraw_ui: true, ..Default::default() }
    }
}

/// What an update may read besides the state: the last frame's picks, read before the update
/// ([`super::pick::Reads`] in the viewer), so the update itself never reads the GPU.
pub struct UpdateCtx<'a> {
    pub reads: &'a mut dyn Picker,
}

/// Width of the F12 screenshot (8K UHD); its height keeps the window's aspect.
pub const HIRES_WIDTH_PX: u32 = 7680;

/// A click's pick: a vertex while measuring, else the picked point.
fn clicked(s: &mut AppState, picked: Option<PickedPoint>) {
    match (picked, s.measure.active) {
        (Some(p), true) => {
            if let Some(said) = s.measure.click(p) {
                s.messages.info(said);
            }
        }
        (Some(p), false) => s.picked = Some(p),
        (None, true) => s.messages.info("measure: no point under the cursor"),
        (None, false) => s.picked = None,
    }
}

/// Picks at `at_px` and describes the point on the full cloud.
fn pick_at(s: &mut AppState, at_px: Vec2, radius_px: u32, picker: &mut dyn Picker) -> Option<PickedPoint> {
    let hit = picker.pick(at_px, radius_px)?;
    let index = hit.point_index.and_then(|i| s.layers.full_index(i));
    Some(describe(&hit, &s.layers.cloud, index, &mut s.grids))
}

/// Recolours the full cloud for `mode` along the camera's up axis; whether it changed.
fn recolor(s: &mut AppState, mode: ColorMode) -> Result<bool, String> {
    if let Some(modes) = &s.lod_modes {
        // Level of detail: the nodes load again coloured by it (effects::lod_turn).
        if !modes.contains(&mode) {
            return Err(format!("color mode '{mode}': {} has no {mode}", s.layers.cloud.label));
        }
        if s.color_mode != mode {
            s.field_look.range = None;
        }
        s.color_mode = mode;
        return Ok(true);
    }
    if s.layers.cloud.is_device_only() {
        // A streamed cloud: the next stream colours (a field's range from a sample of it, read now).
        let was = attributes::current_mode(&s.layers.cloud);
        if was != mode {
            s.field_look.range = None;
        }
        let spec_before = s.layers.cloud.files().map(|f| f.color());
        pcv_io::device::set_color(&mut s.layers.cloud, mode, &s.field_look)?;
        s.color_mode = mode;
        return Ok(s.layers.cloud.files().map(|f| f.color()) != spec_before);
    }
    if s.layers.cloud.is_lazy_scene() {
        return Err("the built-in scene has only its own colors".into());
    }
    let up = s.nav.camera.up.vector();
    let was = attributes::current_mode(&s.layers.cloud);
    if was != mode {
        // Another field: its own range (and ramp, unless one was chosen for every field).
        s.field_look.range = None;
    }
    let spec_before = s.layers.cloud.attributes.as_deref().and_then(|a| a.field_spec);
    attributes::recolor_with(&mut s.layers.cloud, mode, &s.field_look).map_err(|e| e.to_string())?;
    let look_changed = s.layers.cloud.attributes.as_deref().and_then(|a| a.field_spec) != spec_before;
    let moved = if up != glam::Vec3::Z && (mode == ColorMode::Elevation || was != mode) {
        attributes::apply_up(&mut s.layers.cloud, up)
    } else {
        false
    };
    s.color_mode = mode;
    Ok(was != mode || moved || look_changed)
}

/// A new up axis for the colours (elevation ramps); whether the points must be uploaded again.
fn colors_follow_up(s: &mut AppState, up: UpAxis) -> bool {
    !s.layers.cloud.is_lazy_scene() && attributes::apply_up(&mut s.layers.cloud, up.vector())
}

/// Carries out one action.
pub fn apply(s: &mut AppState, action: Action, ctx: &mut UpdateCtx<'_>) -> Effects {
    let aspect = s.aspect();
    match action {
        Action::Nav(nav) => {
            if let Some(p) = s.path.as_mut() {
                // The person takes over from the flight.
                p.playing = false;
            }
            let size_px = s.size_px;
            let moved = s.nav.handle(&nav, &mut NavCtx { size_px, probe: &mut ProbeOf(ctx.reads) });
            Effects { redraw_scene: moved, redraw_ui: true, ..Default::default() }
        }
        Action::ToggleMouselook => {
            s.mouselook = !s.mouselook;
            s.gizmo.drag = None;
            Effects { mouselook: Some(s.mouselook), redraw_ui: true, ..Default::default() }
        }
        Action::Click { at_px } => {
            let picked = pick_at(s, at_px, CLICK_RADIUS_PX, ctx.reads);
            clicked(s, picked);
            Effects::ui()
        }
        Action::ProfileClick { at_px } => {
            // The profile window's own frame; its hits name points of the full cloud.
            let picked = ctx
                .reads
                .pick_profile(at_px, CLICK_RADIUS_PX)
                .map(|hit| describe(&hit, &s.layers.cloud, hit.point_index, &mut s.grids));
            clicked(s, picked);
            Effects::ui()
        }
        Action::ProfileViewSize(w, h) => match s.profile.as_mut() {
            Some(p) if p.window.is_some() && p.window != Some((w, h)) && w > 0 && h > 0 => {
                p.window = Some((w, h));
                Effects::ui()
            }
            _ => Effects::default(),
        },
        Action::Hover { at_px } => {
            let hover = at_px.and_then(|at| pick_at(s, at, CLICK_RADIUS_PX, ctx.reads));
            let handle = match (&s.gizmo.drag, at_px) {
                (Some(d), _) => Some(d.handle),
                (None, Some(at)) => s.gizmo_handles(s.size_px).and_then(|h| h.hit(at)),
                (None, None) => None,
            };
            let changed = hover != s.hover || handle != s.gizmo.hover;
            s.hover = hover;
            s.gizmo.hover = handle;
            Effects { redraw_ui: changed || s.measure.active, ..Default::default() }
        }
        Action::FrameAll => {
            s.nav.camera.frame_all(aspect);
            Effects::scene()
        }
        Action::Reset => {
            let up_before = s.nav.camera.up;
            s.nav.camera.reset();
            let reupload = s.nav.camera.up != up_before && colors_follow_up(s, s.nav.camera.up);
            s.view = pcv_camera::View::Oblique;
            Effects { redraw_scene: true, reupload, ..Default::default() }
        }
        Action::View(v) => {
            s.view = v;
            s.nav.camera.set_projection(v != pcv_camera::View::Oblique);
            s.nav.camera.set_view(v, aspect);
            Effects::scene()
        }
        Action::NextView => {
            let v = s.view.next();
            apply(s, Action::View(v), ctx);
            s.messages.info(format!("{} view ({})", v.name(), s.nav.camera.projection.name()));
            Effects::scene()
        }
        Action::ToggleProjection => apply(s, Action::SetOrtho(!s.nav.camera.is_ortho()), ctx),
        Action::SetOrtho(ortho) => {
            if ortho == s.nav.camera.is_ortho() {
                return Effects::default();
            }
            s.nav.camera.set_projection(ortho);
            s.messages.info(s.nav.camera.projection.name());
            Effects::scene()
        }
        Action::NextUp => {
            let up = s.nav.camera.up.next();
            apply(s, Action::SetUp(up), ctx)
        }
        Action::SetUp(up) => {
            s.nav.camera.set_up(up, aspect);
            s.view = pcv_camera::View::Oblique;
            s.up_reason = format!("{up} (chosen in the window)");
            s.messages.info(format!("up axis {up}"));
            let reupload = colors_follow_up(s, up);
            Effects { redraw_scene: true, reupload, ..Default::default() }
        }
        Action::ToggleController => apply(s, Action::SetController(s.nav.active.other()), ctx),
        Action::SetController(kind) => {
            s.nav.set_active(kind);
            s.messages.info(format!("{} controller", kind.name()));
            Effects::ui()
        }
        Action::NextMode => apply(s, Action::SetMode(s.mode.next()), ctx),
        Action::SetMode(mode) => {
            s.mode = mode;
            // Only the culled modes apply a filter themselves: the others need the kept points uploaded.
            let reupload = s.layers.in_raster && !mode.culls() && !s.layers.filter.is_empty();
            Effects { redraw_scene: true, reupload, ..Default::default() }
        }
        Action::NextColor => {
            let modes = s.color_modes();
            if modes.len() < 2 {
                s.messages.info("no other color mode for these points");
                return Effects::ui();
            }
            let i = modes.iter().position(|&m| m == s.color_mode).unwrap_or(0);
            apply(s, Action::SetColor(modes[(i + 1) % modes.len()]), ctx)
        }
        Action::SetFieldLook(look) => {
            s.field_look = look;
            apply(s, Action::SetColor(s.color_mode), ctx)
        }
        Action::SetColor(mode) => match recolor(s, mode) {
            Ok(changed) => Effects { reupload: changed, redraw_scene: changed, redraw_ui: true, ..Default::default() },
            Err(e) => {
                s.messages.error(e);
                Effects::ui()
            }
        },
        Action::PointSizeStep(step) => {
            let p = s.look.point_size;
            apply(s, Action::SetPointSize(if step > 0 { p.bigger() } else { p.smaller() }), ctx)
        }
        Action::SetPointSize(p) => {
            let changed = p != s.look.point_size;
            s.look.point_size = p;
            s.messages.info(format!("point size {p}"));
            Effects { redraw_scene: changed, redraw_ui: true, ..Default::default() }
        }
        Action::SetPointShape(shape) => {
            let shape = shape.unwrap_or(s.look.shape.other());
            let changed = shape != s.look.shape;
            s.look.shape = shape;
            s.messages.info(format!("{shape} points"));
            Effects { redraw_scene: changed && s.look.splats(), redraw_ui: true, ..Default::default() }
        }
        Action::ToggleMetres => {
            s.lengths_in_metres = !s.lengths_in_metres;
            let u = s.units();
            s.messages.info(match (s.lengths_in_metres, u.known) {
                (true, _) => "lengths in metres".to_string(),
                (false, true) => format!("lengths in the file's units ({})", u.describe()),
                (false, false) => "lengths in the file's units (no coordinate system names them)".to_string(),
            });
            Effects { redraw_ui: true, ..Default::default() }
        }
        Action::ToggleQuality => {
            let q = s.look.quality.other();
            s.look.quality = q;
            let note = match (q, pcv_render::look::quality_modes(s.mode)) {
                (Quality::High, true) => "high-quality points: near points blended".to_string(),
                (Quality::High, false) => {
                    format!("high-quality points: shown in the vis, culled and quant modes (not {})", s.mode.name())
                }
                (Quality::Standard, _) => "standard points: the nearest of each pixel".to_string(),
            };
            s.messages.info(note);
            Effects { redraw_scene: true, redraw_ui: true, ..Default::default() }
        }
        Action::ToggleEdl => {
            let edl = if s.look.edl.is_some() { None } else { Some(s.edl_memory) };
            s.messages.info(if edl.is_some() { "eye-dome lighting on" } else { "eye-dome lighting off" });
            apply(s, Action::SetEdl(edl), ctx)
        }
        Action::SetEdl(edl) => {
            if let Some(e) = edl {
                s.edl_memory = e;
            }
            let changed = edl != s.look.edl;
            s.look.edl = edl;
            Effects { redraw_scene: changed, redraw_ui: true, ..Default::default() }
        }
        Action::NextBackground => {
            let b = s.look.background.next();
            s.messages.info(format!("background {b}"));
            apply(s, Action::SetBackground(b), ctx)
        }
        Action::SetBackground(b) => {
            let changed = b != s.look.background;
            s.look.background = b;
            Effects { redraw_scene: changed, redraw_ui: true, ..Default::default() }
        }
        Action::ToggleMeasure => {
            s.measure.active = !s.measure.active;
            s.measure.finish();
            s.measure.moving = None;
            s.messages.info(if s.measure.active {
                format!("measure {}: {} (T again: off)", s.measure.kind.name(), s.measure.kind.prompt())
            } else {
                "measure off".into()
            });
            Effects::ui()
        }
        Action::ClearMeasure => {
            s.measure.points.clear();
            s.measure.moving = None;
            s.picked = None;
            Effects::ui()
        }
        Action::SetMeasureKind(kind) => {
            s.measure.set_kind(kind);
            s.messages.info(format!("measure {}: {}", kind.name(), kind.prompt()));
            Effects::ui()
        }
        Action::NextMeasureKind => {
            use pcv_model::measure::MeasureKind;
            let i = MeasureKind::ALL.iter().position(|&k| k == s.measure.kind).unwrap_or(0);
            apply(s, Action::SetMeasureKind(MeasureKind::ALL[(i + 1) % MeasureKind::ALL.len()]), ctx)
        }
        Action::FinishMeasure => {
            let c = s.measure.current();
            if c.points.is_empty() {
                return Effects::default();
            }
            let headline = c.headline(s.nav.camera.up.vector().as_dvec3(), &s.units());
            if s.measure.finish() {
                s.messages.info(format!("{} {}", c.kind.name(), headline.unwrap_or_default()));
            } else {
                s.messages.info(format!("{} needs {} points: dropped", c.kind.name(), c.kind.min_points()));
            }
            Effects::ui()
        }
        Action::DeleteMeasurement(i) => {
            s.measure.delete(i);
            Effects::ui()
        }
        Action::MoveMeasureVertex { measurement, vertex } => {
            if s.measure.done.get(measurement).is_some_and(|m| vertex < m.points.len()) {
                s.measure.moving = Some((measurement, vertex));
                s.measure.active = true;
                s.messages.info(s.measure.prompt());
            }
            Effects::ui()
        }
        Action::ShowProfile(i) => {
            let Some(m) = s.measure.all().get(i).filter(|m| m.points.len() >= 2).cloned() else {
                return Effects::default();
            };
            let (a, b) = (m.points[0], m.points[m.points.len() - 1]);
            let len = glam::DVec3::new(b.x - a.x, b.y - a.y, 0.0).length();
            if len <= 0.0 {
                s.messages.info("a profile needs two points apart across the ground");
                return Effects::ui();
            }
            let width = if s.profile_width > 0.0 { s.profile_width } else { len / 40.0 };
            let size_px = s.size_px;
            let (was_window, before) = match s.profile.take() {
                Some(p) => (p.window, p.before),
                None => (None, (s.nav.camera, s.layers.filter.clone())),
            };
            let said = format!(
                "profile {}: {}{} long, {}{} wide",
                i + 1,
                pcv_model::number::readable((s.units().across(len) * 1e3).round() / 1e3),
                s.units().across_suffix(),
                pcv_model::number::readable((s.units().across(width) * 1e3).round() / 1e3),
                s.units().across_suffix()
            );
            if s.profile_window_ok {
                // A window of its own: the main view stays as it is.
                let window = was_window.unwrap_or((size_px.0.max(2) * 3 / 5, size_px.1.max(2) * 3 / 10));
                let before = (s.nav.camera, s.layers.filter.clone());
                s.profile = Some(super::profile::Profile { a, b, width, before, window: Some(window) });
                s.messages.info(format!("{said} (the Profile window; Close in the Measure section)"));
                return Effects::ui();
            }
            let p = super::profile::Profile { a, b, width, before, window: None };
            let z = super::profile::z_range(&s.layers.cloud);
            s.nav.camera = p.camera(&s.nav.camera, &s.layers.cloud, z, aspect);
            let filter = p.filter(z);
            s.messages.info(format!(
                "profile {}: {}{} long, {}{} wide (Close in the Measure section)",
                i + 1,
                pcv_model::number::readable((s.units().across(len) * 1e3).round() / 1e3),
                s.units().across_suffix(),
                pcv_model::number::readable((s.units().across(width) * 1e3).round() / 1e3),
                s.units().across_suffix()
            ));
            s.profile = Some(p);
            let mut fx = apply(s, Action::SetFilter(filter), ctx);
            fx.redraw_scene = true;
            fx
        }
        Action::CloseProfile => {
            let Some(p) = s.profile.take() else { return Effects::default() };
            if p.window.is_some() {
                return Effects::ui();
            }
            s.nav.camera = p.before.0;
            let mut fx = apply(s, Action::SetFilter(p.before.1), ctx);
            fx.redraw_scene = true;
            fx
        }
        Action::SetRasterCell(c) => {
            s.raster_cell = if c.is_finite() { c.max(0.0) } else { 0.0 };
            Effects::ui()
        }
        Action::ToggleProfile => {
            if s.profile.is_some() {
                return apply(s, Action::CloseProfile, ctx);
            }
            match s.measure.all().iter().rposition(|m| m.points.len() >= 2) {
                Some(i) => apply(s, Action::ShowProfile(i), ctx),
                None => {
                    s.messages.info("a profile follows a distance or polyline: measure one first (T)");
                    Effects::ui()
                }
            }
        }
        Action::SetProfileWidth(w) => {
            s.profile_width = if w.is_finite() { w.max(0.0) } else { 0.0 };
            Effects::ui()
        }
        Action::ExportProfileLaz => {
            Effects { export_profile_laz: s.profile.is_some(), redraw_ui: true, ..Default::default() }
        }
        Action::ExportProfile { svg } => {
            Effects { export_profile: s.profile.is_some().then_some(svg), redraw_ui: true, ..Default::default() }
        }
        Action::AddNote => match s.picked.clone() {
            Some(p) => {
                let i = s.notes.add(&p, &s.nav.camera);
                // No coordinates here: a message wraps, and a number must not break across lines.
                s.messages.info(format!("{} pinned (the Measure section edits it)", s.notes.list[i].text));
                Effects::ui()
            }
            None => {
                s.messages.info("click a point first, then Ctrl+A pins a note there");
                Effects::ui()
            }
        },
        Action::SetNoteText(i, text) => {
            if let Some(n) = s.notes.list.get_mut(i) {
                n.text = text;
            }
            Effects::ui()
        }
        Action::FlyToNote(i) => {
            let up_before = s.nav.camera.up;
            if !s.notes.fly(i, &mut s.nav.camera) {
                return Effects::default();
            }
            let reupload = s.nav.camera.up != up_before && colors_follow_up(s, s.nav.camera.up);
            Effects { redraw_scene: true, reupload, ..Default::default() }
        }
        Action::DeleteNote(i) => {
            s.notes.delete(i);
            Effects::ui()
        }
        Action::SaveProject => Effects { save_project: true, redraw_ui: true, ..Default::default() },
        Action::ExportMeasurements(format) => Effects { export: Some(format), redraw_ui: true, ..Default::default() },
        Action::ExportRaster(kind) => match super::raster::refusal(s) {
            Some(why) => {
                s.messages.info(why);
                Effects::ui()
            }
            None => Effects { export_raster: Some(kind), redraw_ui: true, ..Default::default() },
        },
        Action::Screenshot { with_panel } => {
            Effects { screenshot: Some(with_panel), redraw_ui: true, ..Default::default() }
        }
        Action::HiResScreenshot => Effects { hires_screenshot: true, redraw_ui: true, ..Default::default() },
        Action::PrintPose => Effects { print_pose: true, redraw_ui: true, ..Default::default() },
        Action::StoreBookmark(i) => {
            if let Some(slot) = s.bookmarks.get_mut(i) {
                *slot = Some(Bookmark {
                    pose: s.nav.camera.pose,
                    up: s.nav.camera.up,
                    projection: s.nav.camera.projection,
                    filter: s.layers.filter.clone(),
                });
                s.messages.info(format!("bookmark {} stored (key {} recalls it)", i + 1, i + 1));
            }
            Effects::ui()
        }
        Action::RecallBookmark(i) => match s.bookmarks.get(i).cloned().flatten() {
            Some(b) => {
                s.nav.camera.pose = b.pose;
                s.nav.camera.projection = b.projection;
                let reupload = s.nav.camera.up != b.up && {
                    s.nav.camera.up = b.up;
                    colors_follow_up(s, b.up)
                };
                let mut fx = Effects { redraw_scene: true, reupload, ..Default::default() };
                // The points it showed (a filter the cloud cannot take is said, and the view kept).
                if b.filter != s.layers.filter {
                    fx.refilter |= apply(s, Action::SetFilter(b.filter), ctx).refilter;
                }
                fx
            }
            None => {
                s.messages.info(format!("bookmark {} is empty: Ctrl+{} stores the view there", i + 1, i + 1));
                Effects::ui()
            }
        },
        Action::SaveBookmarksAsPath => Effects { save_bookmarks: true, redraw_ui: true, ..Default::default() },
        Action::TogglePath => match s.path.as_mut() {
            Some(p) => {
                if !p.playing && p.t_s >= p.path.duration_s() {
                    p.t_s = 0.0;
                }
                p.playing = !p.playing;
                Effects::scene()
            }
            None => {
                s.messages.info("no flight to play: start pcv with --path poses.json");
                Effects::ui()
            }
        },
        Action::ToggleHelp => {
            s.ui.help = !s.ui.help;
            Effects::ui()
        }
        Action::TogglePanel => {
            s.ui.panel = !s.ui.panel;
            Effects::ui()
        }
        Action::Open { paths, replace } => {
            if paths.is_empty() {
                return Effects::default();
            }
            Effects { open: Some((paths, replace)), redraw_ui: true, ..Default::default() }
        }
        Action::SetLayerVisible { layer, visible } => {
            if !s.layers.editable() {
                return Effects::default();
            }
            match s.layers.layers.get_mut(layer) {
                Some(l) if l.visible != visible => {
                    l.visible = visible;
                    Effects { reupload: true, redraw_scene: true, ..Default::default() }
                }
                _ => Effects::default(),
            }
        }
        Action::ToggleTileBoxes => {
            s.show_tile_boxes = !s.show_tile_boxes;
            Effects::ui()
        }
        Action::ToggleColorByLayer => {
            if !s.layers.editable() {
                return Effects::default();
            }
            s.layers.color_by_layer = !s.layers.color_by_layer;
            Effects { reupload: true, redraw_scene: true, ..Default::default() }
        }
        Action::SetClassShown { code, shown } => {
            let mut f = s.layers.filter.clone();
            f.set_class_shown(code, shown);
            apply(s, Action::SetFilter(f), ctx)
        }
        Action::SetReturns(r) => {
            let mut f = s.layers.filter.clone();
            f.returns = r;
            apply(s, Action::SetFilter(f), ctx)
        }
        Action::SetFilter(f) => {
            if !s.layers.editable() && s.layers.cloud.files().is_none() {
                s.messages.info("the built-in scene cannot be filtered");
                return Effects::ui();
            }
            if f == s.layers.filter {
                return Effects::default();
            }
            let missing: Vec<&str> =
                pcv_io::filter::missing_fields(&s.layers.cloud, &f).into_iter().map(|x| x.name()).collect();
            // (A device-only cloud's files are read again with the fields the filter needs.)
            if !missing.is_empty() && s.layers.cloud.files().is_none() {
                s.messages.error(format!(
                    "cannot filter by {}: these points have none loaded (open the files with --filter or --returns to load them)",
                    missing.join(", ")
                ));
                return Effects::ui();
            }
            // The panel's filter line says what is shown (a message line would move the legend's rows
            // under the cursor that just clicked one).
            s.layers.filter = f;
            if s.gizmo.selected.is_some_and(|i| i >= s.layers.filter.boxes.len()) {
                s.gizmo = Gizmo::default();
            }
            Effects { refilter: true, redraw_scene: true, redraw_ui: true, ..Default::default() }
        }
        Action::SelectClipBox(i) => {
            let i = i.filter(|&i| i < s.layers.filter.boxes.len());
            if i.is_some() && s.layers.cloud.frame.is_some() {
                s.messages.info("this cloud's clip boxes are in geographic coordinates: edit them by numbers");
                return Effects::ui();
            }
            let changed = i != s.gizmo.selected;
            s.gizmo = Gizmo { selected: i, ..Default::default() };
            Effects { redraw_ui: changed, ..Default::default() }
        }
        Action::NextClipBox => {
            let n = s.layers.filter.boxes.len();
            if n == 0 {
                s.messages.info("no clip box to edit: add one in the panel (View) or start with --clip-box");
                return Effects::ui();
            }
            let next = match s.gizmo.selected {
                None => Some(0),
                Some(i) if i + 1 < n => Some(i + 1),
                Some(_) => None,
            };
            apply(s, Action::SelectClipBox(next), ctx)
        }
        Action::GizmoPress { handle, at_px } => {
            let Some((_, b)) = s.gizmo_view(s.size_px) else { return Effects::default() };
            if let Some(p) = s.path.as_mut() {
                // The person takes over from the flight.
                p.playing = false;
            }
            s.gizmo.drag = Some(Drag::new(handle, b, at_px));
            s.gizmo.hover = Some(handle);
            Effects::ui()
        }
        Action::GizmoDrag { at_px } => {
            let (Some(i), Some((view, _))) = (s.gizmo.selected, s.gizmo_view(s.size_px)) else {
                return Effects::default();
            };
            // A position that gives no box (past an axis's vanishing point) keeps the last one.
            let Some(next) = s.gizmo.drag.as_mut().and_then(|d| d.to(&view, at_px)) else { return Effects::default() };
            let mut f = s.layers.filter.clone();
            match f.boxes.get_mut(i) {
                Some(b) => *b = next,
                None => return Effects::default(),
            }
            apply(s, Action::SetFilter(f), ctx)
        }
        Action::GizmoRelease => {
            let was = s.gizmo.drag.take();
            Effects { redraw_ui: was.is_some(), ..Default::default() }
        }
        Action::DismissMessages => {
            s.messages.clear();
            Effects::ui()
        }
        Action::Quit => Effects { quit: true, ..Default::default() },
    }
}

/// Starts loading `paths` (errors of an earlier batch go).
pub fn start_loading(s: &mut AppState, paths: Vec<PathBuf>, replace: bool) {
    s.messages.clear_errors();
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    s.messages.info(format!("loading {}", names.join(", ")));
    s.loader = Some(Loader::start(paths, replace));
}

/// Moves what moves by itself over `dt_s` seconds: held keys, the flight, a load, messages.
pub fn tick(s: &mut AppState, held: &MoveInput, dt_s: f32, ctx: &mut UpdateCtx<'_>) -> Effects {
    let mut fx = Effects::default();
    if held.is_moving() {
        if let Some(p) = s.path.as_mut() {
            p.playing = false;
        }
        let size_px = s.size_px;
        fx.redraw_scene |= s.nav.tick(held, dt_s, &mut NavCtx { size_px, probe: &mut ProbeOf(ctx.reads) });
        fx.redraw_ui = true;
    }
    if let Some(p) = s.path.as_mut().filter(|p| p.playing) {
        p.t_s = (p.t_s + dt_s as f64).min(p.path.duration_s());
        let pose = p.path.sample(p.path.start_s() + p.t_s).to_pose(p.origin);
        let up = p.path.up;
        if p.t_s >= p.path.duration_s() {
            p.playing = false;
        }
        s.nav.camera.pose = pose;
        if let Some(up) = up.filter(|&u| u != s.nav.camera.up) {
            s.nav.camera.up = up;
            fx.reupload |= colors_follow_up(s, up);
        }
        fx.redraw_scene = true;
    }
    if !s.notes.list.is_empty() {
        let (cam, size_px) = (s.nav.camera, s.size_px);
        let cloud = &s.layers.cloud;
        fx.redraw_ui |= s.notes.update_visibility(&cam, size_px, |f| cloud.from_source(f), ctx.reads);
    }
    fx.merge(poll_loader(s));
    if s.messages.expire(Instant::now()) {
        fx.redraw_ui = true;
    }
    fx
}

/// Takes what the loader reports; when its batch ends, adds the loaded files as layers.
fn poll_loader(s: &mut AppState) -> Effects {
    let Some(loader) = s.loader.as_mut() else { return Effects::default() };
    let events = loader.poll();
    if events.is_empty() {
        // Elapsed time shows while loading.
        return Effects::ui();
    }
    for e in &events {
        match e {
            LoadEvent::Started { .. } => {}
            LoadEvent::Loaded { path, points, ms } => s.messages.info(format!(
                "loaded {} ({} points, {:.0} ms)",
                path.display(),
                crate::ui::group_thousands(*points),
                ms
            )),
            LoadEvent::Failed { message, .. } => s.messages.error(message.clone()),
            LoadEvent::Done => {}
        }
    }
    if !loader.finished() {
        return Effects::ui();
    }
    let replace = loader.replace;
    let clouds = loader.take();
    s.loader = None;
    if clouds.is_empty() {
        return Effects::ui();
    }
    let was_builtin = s.layers.cloud.scene().is_some();
    let (shown, notes) = s.layers.add(clouds, replace, s.color_mode, s.nav.camera.up.vector());
    s.color_mode = shown;
    for n in notes {
        s.messages.info(n);
    }
    s.spacing_m = pcv_io::spacing::estimate(&s.layers.cloud);
    if was_builtin && s.look == pcv_render::look::Look::PLAIN {
        // The built-in scene's look is the prototype's; files get theirs.
        s.look = pcv_render::look::Look::for_cloud(false, &Default::default());
        s.edl_memory = s.look.edl.unwrap_or(s.edl_memory);
    }
    refresh_camera(s, replace || was_builtin);
    Effects { reupload: true, redraw_scene: true, redraw_ui: true, ..Default::default() }
}

/// After the layers changed: new bounds for the camera; for a new scene, a new start.
fn refresh_camera(s: &mut AppState, new_scene: bool) {
    let cloud = &s.layers.cloud;
    if new_scene {
        let opts = pcv_camera::StartOptions { aspect: s.aspect(), ..Default::default() };
        let (cam, reason) = pcv_camera::Camera::start(cloud, &opts);
        s.nav.camera = cam;
        s.up_reason = reason.0;
        if s.nav.camera.up != UpAxis::PosZ {
            colors_follow_up(s, s.nav.camera.up);
        }
        s.nav.set_active(pcv_camera::ControllerKind::Orbit);
    } else {
        let frame_box = pcv_camera::framing::framing_box(cloud);
        s.nav.camera.set_bounds(cloud.bounds, frame_box);
    }
    s.picked = None;
    s.hover = None;
    s.measure.points.clear();
}

/// The path file the bookmarks make: one keyframe per bookmark, two seconds apart.
pub fn bookmarks_path(s: &AppState) -> Option<pcv_camera::path::CameraPath> {
    use pcv_camera::path::{CameraPath, Keyframe, DEFAULT_STEP_S};
    use pcv_camera::{CameraFrame, PoseArg};
    let origin = s.layers.cloud.origin;
    let keyframes: Vec<Keyframe> = s
        .bookmarks
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, b)| {
            let text = PoseArg::format(&b.pose, origin);
            Keyframe {
                t_s: i as f64 * DEFAULT_STEP_S,
                pose: PoseArg::parse(&text).unwrap_or(PoseArg { eye: origin, yaw_deg: 0.0, pitch_deg: 0.0 }),
            }
        })
        .collect();
    (!keyframes.is_empty()).then_some(CameraPath { keyframes, frame: CameraFrame::File, up: Some(s.nav.camera.up) })
}

/// The flight of `path` over `layers`' cloud, starting at its first keyframe, playing.
pub fn playback(path: pcv_camera::path::CameraPath, layers: &Layers) -> PathPlayback {
    let origin = path.frame.origin(layers.cloud.origin);
    PathPlayback { path, t_s: 0.0, playing: true, origin }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{DVec3, Vec3};
    use pcv_camera::{DragButton, Nav, View};
    use pcv_io::attributes::{Attributes, ColorMode, FieldLook, SourceSpan};
    use pcv_io::filter::{ClipBox, PointFilter};
    use pcv_io::formats::Format;
    use pcv_io::{Point, PointCloud};
    use pcv_render::{PickHit, RenderMode};
    use std::sync::Arc;

    /// Stands in for the rasterizer: every pixel shows point `index` at `at`.
    struct Always {
        at: Vec3,
        index: Option<u64>,
    }
    impl Picker for Always {
        fn pick(&mut self, _: Vec2, _: u32) -> Option<PickHit> {
            Some(PickHit { pixel: (0, 0), position: self.at, point_index: self.index, depth: 0.5 })
        }
    }

    /// A click whose pick finds the point at `at` (local coordinates).
    fn click_at(s: &mut AppState, at: Vec3) {
        apply(s, Action::Click { at_px: Vec2::ZERO }, &mut UpdateCtx { reads: &mut Always { at, index: None } });
    }

    fn state() -> AppState {
        let points: Vec<Point> = (0..1000)
            .map(|i| Point::new([(i % 10) as f32, (i / 100) as f32, (i % 7) as f32 * 0.1], [200; 4]))
            .collect();
        let n = points.len() as u64;
        let mut cloud = PointCloud::from_points(points, DVec3::new(1000.0, 2000.0, 0.0), "t.ply");
        cloud.attributes = Some(Arc::new(Attributes {
            intensity: Some((0..n).map(|i| i as f32).collect()),
            has_rgb: true,
            sources: vec![SourceSpan {
                label: "t.ply".into(),
                format: Format::Ply,
                points: 0..n,
                has_rgb: true,
                has_intensity: true,
                has_classification: false,
                uniform_rgb: None,
                crs: None,
            }],
            ..Default::default()
        }));
        AppState::for_test(cloud, (800, 450))
    }

    /// A stand-in for the rasterizer that counts its reads: every pixel shows one point.
    struct Counting {
        reads: Vec<(Vec2, u32)>,
    }
    impl Picker for Counting {
        fn pick(&mut self, at_px: Vec2, radius_px: u32) -> Option<PickHit> {
            self.reads.push((at_px, radius_px));
            Some(PickHit { pixel: (0, 0), position: Vec3::new(1.0, 2.0, 0.5), point_index: Some(7), depth: 0.5 })
        }
    }

    #[test]
    fn the_update_reads_only_what_was_gathered_before_it() {
        use crate::app::pick::{reads_needed, Reads};
        let mut s = state();
        let at = Vec2::new(100.0, 50.0);
        let actions = vec![
            Action::Hover { at_px: Some(at) },
            Action::Nav(Nav::DragStart { button: DragButton::Left, at_px: at }),
            Action::Nav(Nav::DragEnd),
            Action::Click { at_px: at },
        ];
        let held = MoveInput { forward: 1.0, ..Default::default() };
        let wanted = reads_needed(&s, &actions, &held);
        // The hover and the click share one read; the press reads at the pivot's radius; walking at an
        // adaptive speed reads the screen centre.
        assert_eq!(wanted.len(), 4, "{wanted:?}");
        let centre = Vec2::new(400.0, 225.0);
        assert!(wanted.contains(&(centre, pcv_camera::controller::AHEAD_RADIUS_PX)));
        let mut rasterizer = Counting { reads: Vec::new() };
        let mut reads = Reads::gather(&wanted, &mut rasterizer);
        assert_eq!(rasterizer.reads.len(), 3, "each pixel and radius read once: {:?}", rasterizer.reads);
        let ctx = &mut UpdateCtx { reads: &mut reads };
        for a in actions {
            apply(&mut s, a, ctx);
        }
        tick(&mut s, &held, 0.016, ctx);
        // What the update saw came from the reads: the click picked the gathered point, the press found
        // it as the orbit's pivot.
        assert_eq!(s.picked.as_ref().map(|p| p.index), Some(Some(7)));
        assert_eq!(s.nav.pivot(), Some(Vec3::new(1.0, 2.0, 0.5)));
        // A pixel that was not gathered reads as nothing there.
        assert!(Reads::default().pick(at, 6).is_none());
    }

    #[test]
    fn measurement_kinds_enter_and_export_through_actions() {
        use crate::app::measure::ExportFormat;
        use pcv_model::measure::MeasureKind;
        let mut s = state();
        let corners = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(4.0, 0.0, 0.0), Vec3::new(4.0, 3.0, 0.0)];
        // Shift+T twice: polyline, then area; the tool is on.
        apply(&mut s, Action::NextMeasureKind, &mut UpdateCtx { reads: &mut Always { at: Vec3::ZERO, index: None } });
        apply(&mut s, Action::NextMeasureKind, &mut UpdateCtx { reads: &mut Always { at: Vec3::ZERO, index: None } });
        assert!(s.measure.active && s.measure.kind == MeasureKind::Area);
        for c in corners {
            click_at(&mut s, c);
        }
        let ctx = &mut UpdateCtx { reads: &mut Always { at: Vec3::ZERO, index: None } };
        apply(&mut s, Action::FinishMeasure, ctx);
        assert_eq!(s.measure.done.len(), 1);
        let area = &s.measure.done[0].values(glam::DVec3::Z, &s.units())[0];
        assert_eq!((area.name, area.value), ("area_horizontal", 6.0));
        assert!(s.messages.list.iter().any(|m| m.text.contains("area 6.000")), "the message says the area");
        // Enter with too few points drops them and says so.
        apply(&mut s, Action::Click { at_px: Vec2::ZERO }, ctx);
        apply(&mut s, Action::FinishMeasure, ctx);
        assert_eq!(s.measure.done.len(), 1);
        assert!(s.measure.points.is_empty());
        // Moving vertex 2: the next click places it; then export asks the window to write.
        apply(&mut s, Action::MoveMeasureVertex { measurement: 0, vertex: 1 }, ctx);
        click_at(&mut s, Vec3::new(8.0, 0.0, 0.0));
        assert_eq!(s.measure.done[0].values(glam::DVec3::Z, &s.units())[0].value, 12.0);
        assert_eq!(apply(&mut s, Action::ExportMeasurements(ExportFormat::Csv), ctx).export, Some(ExportFormat::Csv));
        apply(&mut s, Action::DeleteMeasurement(0), ctx);
        assert!(s.measure.all().is_empty());
    }

    #[test]
    fn a_profile_along_a_measurement_clips_the_strip_and_closing_restores_the_view() {
        let mut s = state();
        let picks = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(9.0, 0.0, 0.0)];
        apply(&mut s, Action::ToggleMeasure, &mut UpdateCtx { reads: &mut Always { at: Vec3::ZERO, index: None } });
        for p in picks {
            click_at(&mut s, p);
        }
        let ctx = &mut UpdateCtx { reads: &mut Always { at: Vec3::ZERO, index: None } };
        let (cam, filter) = (s.nav.camera, s.layers.filter.clone());
        apply(&mut s, Action::SetProfileWidth(2.0), ctx);
        let fx = apply(&mut s, Action::ShowProfile(0), ctx);
        assert!(fx.redraw_scene && (fx.refilter || fx.reupload));
        let p = s.profile.clone().expect("a profile");
        assert_eq!(p.width, 2.0);
        assert_eq!(s.layers.filter.boxes.len(), 1, "the strip is a clip box");
        assert!(s.nav.camera.is_ortho() && s.nav.camera.pose.pitch_rad == 0.0);
        // The strip keeps the points near the line (y 0 of the state's 10 × 10 grid), not the rest.
        let kept = pcv_io::filter::kept(&s.layers.cloud, &s.layers.filter, 0..s.layers.cloud.points.len());
        assert!(kept.points > 0 && kept.points < s.layers.cloud.points.len() as u64, "{}", kept.points);
        apply(&mut s, Action::CloseProfile, ctx);
        assert!(s.profile.is_none());
        assert_eq!((s.nav.camera, &s.layers.filter), (cam, &filter));
        // Nothing to profile: no change.
        assert!(!apply(&mut s, Action::ShowProfile(5), ctx).redraw_scene);
    }

    #[test]
    fn a_profile_in_its_own_window_keeps_the_main_view_and_measures_from_its_picks() {
        let mut s = state();
        s.profile_window_ok = true;
        apply(&mut s, Action::ToggleMeasure, &mut UpdateCtx { reads: &mut Always { at: Vec3::ZERO, index: None } });
        for p in [Vec3::new(0.0, 0.0, 0.0), Vec3::new(9.0, 0.0, 0.0)] {
            click_at(&mut s, p);
        }
        let ctx = &mut UpdateCtx { reads: &mut Always { at: Vec3::ZERO, index: None } };
        let (cam, filter) = (s.nav.camera, s.layers.filter.clone());
        let fx = apply(&mut s, Action::ShowProfile(0), ctx);
        assert!(!fx.redraw_scene && !fx.refilter && !fx.reupload, "the main view is left as it is");
        let p = s.profile.clone().expect("a profile");
        assert_eq!((s.nav.camera, &s.layers.filter), (cam, &filter));
        let (w, h) = p.window.expect("in a window");
        assert!(w > 0 && h > 0);
        // The strip is the main filter with the strip added: points near the line only.
        let strip = p.points_filter(&s.layers.filter, &s.layers.cloud);
        let kept = pcv_io::filter::kept(&s.layers.cloud, &strip, 0..s.layers.cloud.points.len());
        assert!(kept.points > 0 && kept.points < s.layers.cloud.points.len() as u64, "{}", kept.points);
        // The window's size follows its image area.
        assert!(apply(&mut s, Action::ProfileViewSize(500, 180), ctx).redraw_ui);
        assert_eq!(s.profile.as_ref().unwrap().window, Some((500, 180)));
        assert!(!apply(&mut s, Action::ProfileViewSize(500, 180), ctx).redraw_ui);
        // A height measured with two clicks in the profile window: its picks name full-cloud points.
        apply(&mut s, Action::SetMeasureKind(pcv_model::measure::MeasureKind::Height), ctx);
        let mut reads = crate::app::pick::Reads::default();
        let at = [Vec2::new(10.0, 20.0), Vec2::new(300.0, 40.0)];
        let wanted: Vec<Action> = at.iter().map(|&at_px| Action::ProfileClick { at_px }).collect();
        let hits = [(Vec3::new(1.0, 0.0, 0.0), 1u64), (Vec3::new(4.0, 0.0, 0.6), 34)];
        reads.gather_profile(&crate::app::pick::profile_reads_needed(&wanted), &mut |p, _| {
            let k = at.iter().position(|&a| a == p)?;
            Some(PickHit { pixel: (0, 0), position: hits[k].0, point_index: Some(hits[k].1), depth: 0.5 })
        });
        for a in wanted {
            apply(&mut s, a, &mut UpdateCtx { reads: &mut reads });
        }
        let m = s.measure.current();
        assert_eq!(m.kind, pcv_model::measure::MeasureKind::Height);
        assert_eq!(m.points, vec![DVec3::new(1001.0, 2000.0, 0.0), DVec3::new(1004.0, 2000.0, 0.6000000238418579)]);
        // Closing leaves the main view as it was.
        assert!(apply(&mut s, Action::CloseProfile, ctx).redraw_ui);
        assert!(s.profile.is_none());
        assert_eq!((s.nav.camera, &s.layers.filter), (cam, &filter));
    }

    #[test]
    fn the_geotiff_cell_is_chosen_and_kept_sane() {
        let mut s = state();
        let ctx = &mut UpdateCtx { reads: &mut Always { at: Vec3::ZERO, index: None } };
        for (asked, kept) in [(0.25, 0.25), (-1.0, 0.0), (f64::NAN, 0.0), (2.0, 2.0)] {
            apply(&mut s, Action::SetRasterCell(asked), ctx);
            assert_eq!(s.raster_cell, kept, "{asked}");
        }
        // F12 asks for the offscreen screenshot.
        assert!(apply(&mut s, Action::HiResScreenshot, ctx).hires_screenshot);
    }

    #[test]
    fn clicks_pick_and_measure_in_file_coordinates() {
        let mut s = state();
        let picker = &mut Always { at: Vec3::new(1.0, 2.0, 0.5), index: Some(21) };
        let second = &mut Always { at: Vec3::new(4.0, 6.0, 0.5), index: None };
        let ctx = &mut UpdateCtx { reads: picker };
        apply(&mut s, Action::Click { at_px: Vec2::new(10.0, 10.0) }, ctx);
        let p = s.picked.clone().unwrap();
        assert_eq!(p.file, DVec3::new(1001.0, 2002.0, 0.5));
        assert_eq!(p.intensity, Some(21.0));
        apply(&mut s, Action::ToggleMeasure, ctx);
        apply(&mut s, Action::Click { at_px: Vec2::ZERO }, ctx);
        ctx.reads = second;
        apply(&mut s, Action::Click { at_px: Vec2::ZERO }, ctx);
        assert_eq!(s.measure.points.len(), 2);
        let d = super::super::pick::distance(&s.measure.points[0], &s.measure.points[1], Vec3::Z, &s.units());
        assert!((d.total - 5.0).abs() < 1e-9 && d.vertical == 0.0);
        // A third click starts a new measurement.
        apply(&mut s, Action::Click { at_px: Vec2::ZERO }, ctx);
        assert_eq!(s.measure.points.len(), 1);
        apply(&mut s, Action::ClearMeasure, ctx);
        assert!(s.measure.points.is_empty() && s.picked.is_none());
    }

    #[test]
    fn a_field_look_recolours_and_a_new_field_starts_from_its_own_range() {
        let mut s = state();
        let attrs = Arc::make_mut(s.layers.cloud.attributes.as_mut().unwrap());
        let t: Vec<f64> = (0..1000).map(|i| 1000.0 + i as f64).collect();
        attrs.columns = vec![
            pcv_io::attributes::Column::from_f64(pcv_io::attributes::Field::GpsTime, &t),
            pcv_io::attributes::Column::from_f64(pcv_io::attributes::Field::UserData, &vec![3.0; 1000]),
        ];
        let picker = &mut Always { at: Vec3::ZERO, index: None };
        let ctx = &mut UpdateCtx { reads: picker };
        assert!(apply(&mut s, Action::SetColor(ColorMode::GpsTime), ctx).reupload);
        let first = s.layers.cloud.points[0].rgba;
        // A range of the first 100 values: point 0 keeps the ramp's start, point 500 is now at its end.
        let look = FieldLook { range: Some((1000.0, 1100.0)), ..s.field_look };
        assert!(apply(&mut s, Action::SetFieldLook(look), ctx).reupload);
        assert_eq!(s.layers.cloud.points[0].rgba, first);
        assert_eq!(s.layers.cloud.points[500].rgba, pcv_io::attributes::Ramp::Viridis.color(1.0));
        // Brightness lifts the start.
        let brighter = FieldLook { tone: pcv_io::attributes::Tone { brightness: 0.5, ..Default::default() }, ..look };
        apply(&mut s, Action::SetFieldLook(brighter), ctx);
        assert_ne!(s.layers.cloud.points[0].rgba, first);
        // The same look again: nothing to upload. Another field: its own range.
        assert!(!apply(&mut s, Action::SetFieldLook(brighter), ctx).reupload);
        apply(&mut s, Action::SetColor(ColorMode::UserData), ctx);
        assert_eq!(s.field_look.range, None);
    }

    #[test]
    fn class_toggles_and_clip_boxes_filter_the_upload_and_picks_map_back() {
        let mut s = state();
        // Classes by x: points with x < 5 are ground (2), the others buildings (6).
        let attrs = Arc::make_mut(s.layers.cloud.attributes.as_mut().unwrap());
        attrs.classification = Some((0..1000).map(|i| if i % 10 < 5 { 2 } else { 6 }).collect());
        attrs.sources[0].has_classification = true;
        let picker = &mut Always { at: Vec3::new(7.0, 0.0, 0.0), index: Some(0) };
        let ctx = &mut UpdateCtx { reads: picker };
        let e = apply(&mut s, Action::SetClassShown { code: 2, shown: false }, ctx);
        assert!(e.refilter && e.redraw_scene);
        let up = s.layers.uploaded();
        assert_eq!(up.len(), 500);
        assert_eq!(s.layers.filtered.as_ref().map(|k| k.points), Some(500));
        // Uploaded point 0 is the full cloud's point 5 (the first building point): a pick reads its class.
        assert_eq!(s.layers.full_index(0), Some(5));
        apply(&mut s, Action::Click { at_px: Vec2::ZERO }, ctx);
        assert_eq!(s.picked.as_ref().and_then(|p| p.classification), Some(6));
        // The same filter again changes nothing; showing the class again uploads every point.
        assert!(!apply(&mut s, Action::SetClassShown { code: 2, shown: false }, ctx).refilter);
        apply(&mut s, Action::SetClassShown { code: 2, shown: true }, ctx);
        assert_eq!(s.layers.uploaded().len(), 1000);
        assert!(s.layers.filtered.is_none());
        // A clip box in file coordinates (origin 1000, 2000): x 1007..1009 keeps 3 of every 10.
        let clip =
            PointFilter { boxes: vec![ClipBox::parse("1007,1990,-10,1009,2100,10").unwrap()], ..Default::default() };
        apply(&mut s, Action::SetFilter(clip), ctx);
        assert_eq!(s.layers.uploaded().len(), 300);
        // A return filter on points without returns is refused, saying why.
        let before = s.layers.filter.clone();
        apply(&mut s, Action::SetReturns(pcv_io::filter::Returns::First), ctx);
        assert_eq!(s.layers.filter, before);
        assert!(s.messages.list.iter().any(|m| m.text.contains("cannot filter by return_number")), "{:?}", s.messages);
    }

    #[test]
    fn the_gizmo_edits_the_selected_box_through_the_filter_and_leaves_the_camera() {
        use crate::app::gizmo::{Axis, Handle};
        let mut s = state();
        let picker = &mut Always { at: Vec3::ZERO, index: None };
        let ctx = &mut UpdateCtx { reads: picker };
        // Nothing to edit yet: said, and nothing selected.
        apply(&mut s, Action::NextClipBox, ctx);
        assert_eq!(s.gizmo.selected, None);
        let clip =
            PointFilter { boxes: vec![ClipBox::parse("1002,2002,-1,1007,2007,1").unwrap()], ..Default::default() };
        apply(&mut s, Action::SetFilter(clip), ctx);
        apply(&mut s, Action::NextClipBox, ctx);
        assert_eq!(s.gizmo.selected, Some(0));
        let (pose, before) = (s.nav.camera.pose, s.layers.filter.boxes[0]);
        let h = s.gizmo_handles(s.size_px).expect("the box is in view");
        let (axis, (from, to)) =
            Axis::ALL.iter().find_map(|&a| h.arrows[a.index()].map(|arrow| (a, arrow))).expect("an arrow shows");
        // Past the ring, short of the tip: the arrow (or the face square on it, which also moves along it).
        let press = from + (to - from) * 0.85;
        let handle = h.hit(press).expect("a handle under the press");
        assert!(matches!(handle, Handle::Move(a) | Handle::Face { axis: a, .. } if a == axis), "{handle:?}");
        apply(&mut s, Action::Hover { at_px: Some(press) }, ctx);
        assert_eq!(s.gizmo.hover, Some(handle));
        apply(&mut s, Action::GizmoPress { handle, at_px: press }, ctx);
        let fx = apply(&mut s, Action::GizmoDrag { at_px: press + (to - from).normalize() * 30.0 }, ctx);
        assert!(fx.refilter && fx.redraw_scene, "{fx:?}");
        let after = s.layers.filter.boxes[0];
        assert!(after.center != before.center, "the box moved");
        assert_eq!(s.nav.camera.pose, pose, "the camera stayed");
        assert!(s.gizmo.drag.is_some());
        // While dragging, the dragged handle stays highlighted wherever the cursor is.
        apply(&mut s, Action::Hover { at_px: Some(Vec2::new(1.0, 1.0)) }, ctx);
        assert_eq!(s.gizmo.hover, Some(handle));
        apply(&mut s, Action::GizmoRelease, ctx);
        assert!(s.gizmo.drag.is_none());
        // A drag without a press, or without a box edited, does nothing.
        assert_eq!(apply(&mut s, Action::GizmoDrag { at_px: Vec2::ZERO }, ctx), Effects::default());
        apply(&mut s, Action::SelectClipBox(None), ctx);
        assert_eq!(apply(&mut s, Action::GizmoPress { handle, at_px: press }, ctx), Effects::default());
        assert!(s.gizmo.drag.is_none());
        // Out of range: nothing selected; removing the box edited ends the editing.
        apply(&mut s, Action::SelectClipBox(Some(3)), ctx);
        assert_eq!(s.gizmo.selected, None);
        apply(&mut s, Action::SelectClipBox(Some(0)), ctx);
        apply(&mut s, Action::SetFilter(PointFilter::default()), ctx);
        assert_eq!(s.gizmo.selected, None);
    }

    #[test]
    fn keys_change_the_view_up_axis_and_colors() {
        let mut s = state();
        let picker = &mut Always { at: Vec3::ZERO, index: None };
        let ctx = &mut UpdateCtx { reads: picker };
        let start = s.nav.camera.pose;
        assert!(apply(&mut s, Action::View(View::Top), ctx).redraw_scene);
        assert!(s.nav.camera.basis().forward.abs_diff_eq(-Vec3::Z, 1e-5));
        let fx = apply(&mut s, Action::SetColor(ColorMode::Elevation), ctx);
        assert!(fx.reupload && s.color_mode == ColorMode::Elevation);
        let before = s.layers.cloud.points[5].rgba;
        let fx = apply(&mut s, Action::NextUp, ctx);
        assert_eq!(s.nav.camera.up, UpAxis::PosY);
        assert!(fx.reupload, "elevation colors follow the up axis");
        assert_ne!(s.layers.cloud.points[5].rgba, before);
        assert!(apply(&mut s, Action::NextColor, ctx).reupload);
        apply(&mut s, Action::Reset, ctx);
        assert_eq!((s.nav.camera.pose, s.nav.camera.up), (start, UpAxis::PosZ));
        assert!(apply(&mut s, Action::NextMode, ctx).redraw_scene);
        assert_eq!(s.mode, RenderMode::Vis.next());
    }

    #[test]
    fn standard_views_are_orthographic_and_the_oblique_one_perspective() {
        let mut s = state();
        let picker = &mut Always { at: Vec3::ZERO, index: None };
        let ctx = &mut UpdateCtx { reads: picker };
        assert!(!s.nav.camera.is_ortho());
        for v in [View::Top, View::Front, View::Right] {
            apply(&mut s, Action::View(v), ctx);
            assert!(s.nav.camera.is_ortho(), "{v:?}");
        }
        apply(&mut s, Action::View(View::Oblique), ctx);
        assert!(!s.nav.camera.is_ortho());
        // V cycles top (orthographic) .. oblique (perspective); I switches and keeps the direction.
        apply(&mut s, Action::NextView, ctx);
        assert!(s.nav.camera.is_ortho() && s.view == View::Top);
        let pose = s.nav.camera.pose;
        assert!(apply(&mut s, Action::ToggleProjection, ctx).redraw_scene);
        assert!(!s.nav.camera.is_ortho());
        assert_eq!((s.nav.camera.pose.yaw_rad, s.nav.camera.pose.pitch_rad), (pose.yaw_rad, pose.pitch_rad));
        assert!(!apply(&mut s, Action::SetOrtho(false), ctx).redraw_scene, "already perspective");
        // A bookmark keeps the projection.
        apply(&mut s, Action::SetOrtho(true), ctx);
        apply(&mut s, Action::StoreBookmark(2), ctx);
        apply(&mut s, Action::SetOrtho(false), ctx);
        apply(&mut s, Action::RecallBookmark(2), ctx);
        assert!(s.nav.camera.is_ortho());
    }

    #[test]
    fn bookmarks_store_and_recall_and_become_a_path() {
        let mut s = state();
        let picker = &mut Always { at: Vec3::ZERO, index: None };
        let ctx = &mut UpdateCtx { reads: picker };
        assert!(bookmarks_path(&s).is_none());
        apply(&mut s, Action::StoreBookmark(0), ctx);
        let a = s.nav.camera.pose;
        apply(&mut s, Action::View(View::Front), ctx);
        // The second bookmark keeps a clip box with its view.
        let clip =
            PointFilter { boxes: vec![ClipBox::parse("1000,2000,0,1004,2009,1").unwrap()], ..Default::default() };
        apply(&mut s, Action::SetFilter(clip.clone()), ctx);
        apply(&mut s, Action::StoreBookmark(4), ctx);
        let fx = apply(&mut s, Action::RecallBookmark(0), ctx);
        assert_eq!(s.nav.camera.pose, a);
        assert!(fx.refilter && s.layers.filter.is_empty(), "the first bookmark showed every point");
        assert!(apply(&mut s, Action::RecallBookmark(4), ctx).refilter);
        assert_eq!(s.layers.filter, clip);
        apply(&mut s, Action::RecallBookmark(0), ctx);
        assert!(!apply(&mut s, Action::RecallBookmark(8), ctx).redraw_scene);
        let path = bookmarks_path(&s).unwrap();
        assert_eq!(path.keyframes.len(), 2);
        assert_eq!(path.keyframes[0].pose.to_pose(s.layers.cloud.origin), a);
        // A flight plays the path and stops at its end; navigating takes over.
        s.path = Some(playback(path, &s.layers));
        let fx = tick(&mut s, &MoveInput::default(), 1.0, ctx);
        assert!(fx.redraw_scene && s.path.as_ref().unwrap().playing);
        tick(&mut s, &MoveInput::default(), 5.0, ctx);
        assert!(!s.path.as_ref().unwrap().playing);
        apply(&mut s, Action::TogglePath, ctx);
        assert!(s.path.as_ref().unwrap().playing && s.path.as_ref().unwrap().t_s == 0.0);
        apply(&mut s, Action::Nav(Nav::DragStart { button: DragButton::Left, at_px: Vec2::ZERO }), ctx);
        assert!(!s.path.as_ref().unwrap().playing);
    }

    #[test]
    fn looks_change_by_key() {
        use pcv_render::look::{Background, Edl, PointShape, PointSize};
        let mut s = state();
        let picker = &mut Always { at: Vec3::ZERO, index: None };
        let ctx = &mut UpdateCtx { reads: picker };
        s.look.point_size = PointSize::Fixed(3);
        assert!(apply(&mut s, Action::PointSizeStep(1), ctx).redraw_scene);
        assert_eq!(s.look.point_size, PointSize::Fixed(4));
        apply(&mut s, Action::PointSizeStep(-1), ctx);
        apply(&mut s, Action::PointSizeStep(-1), ctx);
        assert_eq!(s.look.point_size, PointSize::Fixed(2));
        // G: square points and back; a 1-pixel frame has no shape to redraw.
        assert!(apply(&mut s, Action::SetPointShape(None), ctx).redraw_scene);
        assert_eq!(s.look.shape, PointShape::Square);
        apply(&mut s, Action::SetPointShape(None), ctx);
        assert_eq!(s.look.shape, PointShape::Round);
        s.look.point_size = PointSize::Fixed(1);
        assert!(!apply(&mut s, Action::SetPointShape(None), ctx).redraw_scene);
        // J: high quality and back.
        assert!(apply(&mut s, Action::ToggleQuality, ctx).redraw_scene);
        assert_eq!(s.look.quality, Quality::High);
        apply(&mut s, Action::ToggleQuality, ctx);
        assert_eq!(s.look.quality, Quality::Standard);
        // EDL off and back on with the settings it had.
        apply(&mut s, Action::SetEdl(Some(Edl { strength: 2.5, radius_px: 2.0 })), ctx);
        apply(&mut s, Action::ToggleEdl, ctx);
        assert_eq!(s.look.edl, None);
        apply(&mut s, Action::ToggleEdl, ctx);
        assert_eq!(s.look.edl, Some(Edl { strength: 2.5, radius_px: 2.0 }));
        let before = s.look.background;
        apply(&mut s, Action::NextBackground, ctx);
        assert_eq!(s.look.background, before.next());
        let same = s.look.background;
        assert!(!apply(&mut s, Action::SetBackground(same), ctx).redraw_scene);
        assert!(apply(&mut s, Action::SetBackground(Background::WHITE), ctx).redraw_scene);
    }

    #[test]
    fn nothing_changes_without_input() {
        let mut s = state();
        let picker = &mut Always { at: Vec3::ZERO, index: None };
        let fx = tick(&mut s, &MoveInput::default(), 0.016, &mut UpdateCtx { reads: picker });
        assert!(!fx.redraw(), "{fx:?}");
        // Held keys move the camera.
        let fx =
            tick(&mut s, &MoveInput { forward: 1.0, ..Default::default() }, 0.016, &mut UpdateCtx { reads: picker });
        assert!(fx.redraw_scene);
    }

    #[test]
    fn dropped_files_load_as_layers() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("more.xyz");
        std::fs::write(&f, "1000 2000 0\n1001 2000 0\n1000 2001 1\n").unwrap();
        let bad = dir.path().join("bad.las");
        std::fs::write(&bad, "LASF not really").unwrap();
        let mut s = state();
        let picker = &mut Always { at: Vec3::ZERO, index: None };
        let ctx = &mut UpdateCtx { reads: picker };
        let fx = apply(&mut s, Action::Open { paths: vec![bad.clone(), f.clone()], replace: false }, ctx);
        let (paths, replace) = fx.open.unwrap();
        start_loading(&mut s, paths, replace);
        assert!(s.animating());
        let mut fx = Effects::default();
        for _ in 0..2000 {
            fx = tick(&mut s, &MoveInput::default(), 0.01, ctx);
            if s.loader.is_none() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(fx.reupload);
        assert_eq!(s.layers.layers.len(), 2);
        assert_eq!(s.layers.cloud.len(), 1003);
        let errors: Vec<_> =
            s.messages.list.iter().filter(|m| m.level == super::super::messages::Level::Error).collect();
        assert_eq!(errors.len(), 1);
        assert!(errors[0].text.contains("bad.las"), "{}", errors[0].text);
    }
}
