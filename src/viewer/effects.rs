//! The viewer's effects: everything a turn does to the world outside the state, in one place.
//!
//! How it works: the update ([`crate::app::update`]) only changes the state and returns
//! [`Effects`] as data. Before it, [`gather_reads`] reads of the last frame what the update will look
//! at (the picks [`reads_needed`] lists, through [`RasterPicker`]: the rasterizer's pick); after it,
//! [`run`] carries out the effects that need the window, the GPU or the disk — mouse-look, starting a
//! load, printing the pose, saving bookmarks, uploading the points again, quitting — and level of
//! detail's turn ([`lod_turn`]: this frame's selection, loads and uploads). What is left for the draw
//! (render the points, redraw the panel, take a screenshot) stays in the effects for the frontend.
use super::frontend::Frontend;
use crate::app::capture::{pose_args, unique_path};
use crate::app::pick::{reads_needed, Picker, Reads};
use crate::app::state::AppState;
use crate::app::update::{self, Effects};
use crate::input::Action;
use glam::Vec2;
use pcv_camera::MoveInput;
use pcv_lod::LodScene;
use pcv_render::{FrameParams, PickHit, Rasterizer};
use std::time::SystemTime;

/// The rasterizer's pick, for a window of `size_px` whose last frame was rendered at `frame_px` (below
/// the window's size while adaptive resolution lowers it: window pixels are scaled to the frame's).
/// Errors (a device failure mid-pick) count as "nothing there" and are kept for the panel.
pub struct RasterPicker<'a> {
    pub rasterizer: &'a mut dyn Rasterizer,
    pub size_px: (u32, u32),
    /// The last frame's size (`None`: nothing of this window's size was rendered, nothing to pick).
    pub frame_px: Option<(u32, u32)>,
    pub error: Option<String>,
}

impl Picker for RasterPicker<'_> {
    fn pick(&mut self, at_px: Vec2, radius_px: u32) -> Option<PickHit> {
        let (w, h) = self.size_px;
        let inside = at_px.x >= 0.0 && at_px.y >= 0.0 && at_px.x < w as f32 && at_px.y < h as f32;
        let (Some((fw, fh)), true) = (self.frame_px, inside) else {
            return None;
        };
        let scale = fw as f32 / w.max(1) as f32;
        // GLFW and the frame both count rows from the top.
        let x = ((at_px.x * scale) as u32).min(fw - 1);
        let y = ((at_px.y * fh as f32 / h.max(1) as f32) as u32).min(fh - 1);
        let radius = if scale < 1.0 { (radius_px as f32 * scale).ceil() as u32 } else { radius_px };
        match self.rasterizer.pick(x, y, radius) {
            Ok(hit) => hit,
            Err(e) => {
                self.error = Some(e.to_string());
                None
            }
        }
    }
}

/// Reads of the last frame (rendered at `frame_px`, `None`: none for this window's size) what
/// `actions` and the held keys will pick in the update on `state`; a failed read is reported in the panel.
pub fn gather_reads(
    state: &mut AppState,
    rasterizer: &mut dyn Rasterizer,
    actions: &[Action],
    held: &MoveInput,
    frame_px: Option<(u32, u32)>,
    profile: Option<&mut super::profile_view::ProfileView>,
) -> Reads {
    let wanted = reads_needed(state, actions, held);
    let mut picker = RasterPicker { rasterizer, size_px: state.size_px, frame_px, error: None };
    let mut reads = Reads::gather(&wanted, &mut picker);
    if let Some(view) = profile {
        reads.gather_profile(&crate::app::pick::profile_reads_needed(actions), &mut |at, r| view.pick(at, r));
    }
    if let Some(e) = picker.error {
        state.messages.error(format!("picking failed: {e}"));
    }
    reads
}

/// Carries out what `need` asks of the window, the disk and the GPU (taking those requests out of it).
pub fn run(need: &mut Effects, state: &mut AppState, front: &mut Frontend, rasterizer: &mut dyn Rasterizer, lod: bool) {
    if let Some(on) = need.mouselook.take() {
        front.set_mouselook(on);
    }
    if let Some((paths, replace)) = need.open.take() {
        update::start_loading(state, paths, replace);
    }
    if std::mem::take(&mut need.print_pose) {
        let args = pose_args(&state.nav.camera, state.layers.cloud.origin);
        println!("pcv: camera {args}");
        front.window.set_clipboard(&args);
        state.messages.info("pose printed and copied to the clipboard");
    }
    if std::mem::take(&mut need.save_bookmarks) {
        save_bookmarks(state);
    }
    if std::mem::take(&mut need.hires_screenshot) {
        hires_screenshot(state, rasterizer, lod);
        // The rasterizer's last frame is the main view's again (picks read it).
        need.redraw_scene = true;
    }
    if let Some(format) = need.export.take() {
        export_measurements(state, format);
    }
    if let Some(kind) = need.export_raster.take() {
        export_raster(state, kind);
    }
    if std::mem::take(&mut need.save_project) {
        save_project(state);
    }
    if let Some(svg) = need.export_profile.take() {
        export_profile(state, svg);
    }
    if std::mem::take(&mut need.export_profile_laz) {
        let file = new_file_here("pcv-profile", "laz");
        match crate::app::profile::write_strip(state, &file) {
            Ok(text) => {
                state.messages.info(text);
            }
            Err(e) => state.messages.error(format!("profile not written: {e}")),
        }
    }
    let reupload = std::mem::take(&mut need.reupload);
    let refilter = std::mem::take(&mut need.refilter);
    // Level of detail's turn takes the filter and the colour itself (lod_turn: the nodes load again).
    if !lod && (reupload || refilter) {
        match upload_layers(state, rasterizer, reupload) {
            Ok(()) => front.window.set_title(&format!("pcv - {}", state.layers.cloud.label)),
            Err(e) => state.messages.error(format!("uploading the points failed: {e}")),
        }
        need.redraw_scene = true;
    }
    if std::mem::take(&mut need.quit) {
        front.window.set_should_close(true);
    }
}

/// Gives the rasterizer the layers' points as the filter shows them (`points_changed`: the points or
/// their colours changed, not only the filter). Where the rasterizer's culled passes can apply the
/// filter and the mode culls, the visible layers go up whole once with the columns it reads and a later
/// filter change is only a parameter ([`crate::session::filter_in_raster`]); otherwise the kept points
/// are uploaded ([`crate::app::layers::Layers::uploaded`]).
pub fn upload_layers(
    state: &mut AppState,
    rasterizer: &mut dyn Rasterizer,
    points_changed: bool,
) -> Result<(), pcv_render::RenderError> {
    let l = &mut state.layers;
    let device_only = l.cloud.is_device_only();
    let raster = state.mode.culls()
        && l.editable()
        && (!l.cloud.points.is_empty() || device_only)
        && rasterizer.raster_filters()
        && (l.filter.is_empty() || crate::session::raster_filter_fits(&l.cloud, &l.filter));
    if raster {
        let mut points_changed = points_changed || !l.in_raster;
        if let Some(files) = l.cloud.files().filter(|_| l.filter.tests_classes()) {
            // A streamed cloud's class codes come with a stream: the first hidden class streams again.
            points_changed |= !files.carry_classes.swap(true, std::sync::atomic::Ordering::Relaxed);
        }
        if points_changed {
            l.in_raster = false;
            rasterizer.upload(&l.uploaded_whole())?;
        } else if l.filter.is_empty() {
            // Shown whole again: the filter goes, the points stay.
            rasterizer.set_raster_filter(None, &|_| None)?;
            l.filtered = None;
            return Ok(());
        }
        if l.filter.is_empty() {
            l.in_raster = true;
            return Ok(());
        }
        // A streamed cloud has no host columns: its stream brought its class codes, or the GPU refuses.
        let columns = |ask| if device_only { None } else { l.uploaded_column(ask) };
        if crate::session::filter_in_raster(rasterizer, &l.cloud, &l.filter, &columns)? {
            l.in_raster = true;
            let points = rasterizer.num_points();
            l.filtered = Some(pcv_io::filter::Kept { points, by_rasterizer: true, ..Default::default() });
            return Ok(());
        }
    }
    rasterizer.upload(&state.layers.uploaded())
}

/// Level of detail's turn at a framebuffer of `size_px`: this frame's selection, loads and uploads; a
/// new batch table is drawn, and the nodes' spacing sizes adaptive points.
pub fn lod_turn(l: &mut LodScene, need: &mut Effects, state: &mut AppState, rasterizer: &mut dyn Rasterizer) {
    if *l.filter() != state.layers.filter {
        // A new filter: the nodes load again under it (returns and ranges are refused, and the
        // filter shown goes back to the scene's).
        if let Err(e) = l.set_filter(&state.layers.filter) {
            state.messages.error(e);
            state.layers.filter = l.filter().clone();
        }
        need.redraw_scene = true;
        need.redraw_ui = true;
    }
    if l.color_asked() != (state.color_mode, state.field_look) {
        // A new colour: the nodes load again coloured by it; the legend shows its ramp and range.
        match l.set_color_mode(state.color_mode, &state.field_look) {
            Ok(_) => {
                if let Some(a) = state.layers.cloud.attributes.as_mut() {
                    let a = std::sync::Arc::make_mut(a);
                    a.mode = state.color_mode;
                    a.field_spec = l.color().as_field();
                }
            }
            Err(e) => {
                state.messages.error(e);
                (state.color_mode, state.field_look) = l.color_asked();
            }
        }
        need.redraw_scene = true;
        need.redraw_ui = true;
    }
    let (w, h) = state.size_px;
    let frame = FrameParams::of_camera(&state.nav.camera, w, h).with_mode(LodScene::mode_for(state.mode));
    match l.update(rasterizer, &frame, state.nav.camera.pose.eye) {
        Ok(st) => {
            if st.changed {
                need.redraw_scene = true;
            }
            if st.spacing_m > 0.0 {
                state.spacing_m = st.spacing_m;
            }
        }
        Err(e) => state.messages.error(format!("level of detail: {e}")),
    }
    // The tiles for the Files section and their boxes.
    let tiles = l.tile_states();
    if tiles != state.lod_tiles {
        state.lod_tiles = tiles;
        need.redraw_ui = true;
    }
    // The legend's sample (histogram, classes) for the colour mode, read from the roots once per mode.
    if state.lod_sample.as_ref().is_none_or(|(m, _, _)| *m != state.color_mode) {
        let (values, classes) = l.root_sample(state.color_mode.field());
        state.lod_sample = Some((state.color_mode, values, classes));
        need.redraw_ui = true;
    }
    // What the loading threads said (a server retried): shown as it was printed.
    for line in pcv_io::notices::take() {
        state.messages.printed(line);
        need.redraw_ui = true;
    }
    // Nodes that failed since the last turn: each said once, and listed in the panel (the view goes on
    // without them).
    for e in l.errors().get(state.node_errors.len()..).unwrap_or_default() {
        state.messages.error(format!("level of detail: {e}"));
        state.node_errors.push(e.clone());
        need.redraw_ui = true;
    }
    if l.failed_nodes() != state.failed_nodes {
        state.failed_nodes = l.failed_nodes();
        need.redraw_ui = true;
    }
    // A clicked point of a streamed scene: what its node holds (read once per click).
    if let Some(p) = state.picked.as_mut().filter(|p| !p.looked_up) {
        p.looked_up = true;
        if let Some(np) = l.point_at(p.local) {
            p.with_node_point(&np, &state.layers.cloud, &mut state.grids);
            need.redraw_ui = true;
        }
    }
}

/// Saves what the back buffer holds now as `./pcv-<time>.png` and says where.
pub fn save_screenshot(state: &mut AppState, front: &Frontend) -> Result<(), super::ViewerError> {
    let path = new_file_here("pcv", "png");
    match front.read_back_buffer()?.write_png(&path) {
        Ok(()) => state.messages.info(format!("screenshot {}", path.display())),
        Err(e) => state.messages.error(format!("screenshot not saved: {e}")),
    }
    Ok(())
}

/// Renders the view offscreen [`crate::app::update::HIRES_WIDTH_PX`] pixels across (the window's
/// aspect) with the same rasterizer, look and mode, and writes it as `./pcv-8k-<time>.png`.
fn hires_screenshot(state: &mut AppState, rasterizer: &mut dyn Rasterizer, lod: bool) {
    let (w, h) = state.size_px;
    let width = crate::app::update::HIRES_WIDTH_PX;
    let height = ((width as f64 * h.max(1) as f64 / w.max(1) as f64).round() as u32).max(1);
    let mode = if lod { pcv_lod::LodScene::mode_for(state.mode) } else { state.mode };
    let frame = FrameParams::of_camera(&state.nav.camera, width, height)
        .with_mode(mode)
        .with_look(state.look)
        .with_spacing(state.spacing_m);
    let t = std::time::Instant::now();
    let mut px = vec![pcv_render::CLEAR_COLOR; frame.num_pixels()];
    if let Err(e) = rasterizer.render(&frame, pcv_render::Target::Host(&mut px)) {
        return state.messages.error(format!("8K screenshot not rendered: {e}"));
    }
    let path = new_file_here("pcv-8k", "png");
    match pcv_render::image_io::Frame::new(width, height, px).write_png(&path) {
        Ok(()) => {
            let text =
                format!("screenshot {} ({width} x {height}, {:.2} s)", path.display(), t.elapsed().as_secs_f64());
            state.messages.info(text);
        }
        Err(e) => state.messages.error(format!("8K screenshot not saved: {e}")),
    }
}

/// Writes the bookmarks as `./pcv-path-<time>.json` and says where.
/// Writes every measurement to `./pcv-measurements-<time>.<ext>` in the units the panel shows, with
/// the file's coordinate system.
fn export_measurements(state: &mut AppState, format: crate::app::measure::ExportFormat) {
    use crate::app::measure::ExportFormat;
    let all = state.measure.all();
    let set = pcv_io::export::MeasurementSet {
        measurements: &all,
        up: state.nav.camera.up.vector().as_dvec3(),
        units: state.units(),
        crs: state.layers.cloud.crs(),
    };
    let file = new_file_here("pcv-measurements", format.extension());
    let written = match format {
        ExportFormat::GeoJson => set.write_geojson(&file),
        ExportFormat::Csv => set.write_csv(&file),
    };
    match written {
        Ok(n) => {
            state.messages.info(format!("{n} measurements: {}", file.display()));
        }
        Err(e) => state.messages.error(format!("measurements not written: {e}")),
    }
}

/// Writes the orthographic top view as a GeoTIFF in the current directory (`app::raster`).
fn export_raster(state: &mut AppState, kind: pcv_io::raster::RasterKind) {
    let cell = (state.raster_cell > 0.0).then_some(state.raster_cell);
    let r = match crate::app::raster::view_raster(state, cell) {
        Ok(r) => r,
        Err(e) => return state.messages.error(format!("GeoTIFF not written: {e}")),
    };
    let file = new_file_here(&format!("pcv-{}", crate::app::raster::suffix(kind)), "tif");
    match pcv_io::geotiff::write(&file, &r, kind, state.layers.cloud.crs()) {
        Ok(()) => {
            let text = format!(
                "{} ({} x {} cells of {}{}, {} points)",
                file.display(),
                r.width,
                r.height,
                pcv_model::number::readable((r.cell * 1e6).round() / 1e6),
                state.layers.cloud.units().across_suffix(),
                r.points
            );
            state.messages.info(text);
        }
        Err(e) => state.messages.error(format!("GeoTIFF not written: {e}")),
    }
}

/// Writes the project: back to the file the window was opened from, else a new one here.
fn save_project(state: &mut AppState) {
    use crate::app::project::Project;
    if state.sources.is_empty() {
        return state.messages.info("nothing to save: the built-in scene or arrays from Python have no files");
    }
    let path = state.project.clone().unwrap_or_else(|| new_file_here("pcv-project", "pcv.json"));
    let dir = path.parent().map(|p| p.to_path_buf()).unwrap_or_else(|| ".".into());
    let project = Project::from_state(state, &state.sources, &dir);
    match project.save(&path) {
        Ok(()) => {
            println!("pcv: project saved to {}", path.display());
            state.messages.info(format!("project {} (pcv {} reopens it)", path.display(), path.display()));
            state.project = Some(path);
        }
        Err(e) => state.messages.error(format!("project not saved: {e}")),
    }
}

/// Writes the profile's strip as CSV (its points) or SVG (the section drawn) in the current directory.
fn export_profile(state: &mut AppState, svg: bool) {
    let Some(p) = &state.profile else { return };
    let rows = p.rows(&state.layers.cloud, &p.points_filter(&state.layers.filter, &state.layers.cloud));
    let file = new_file_here("pcv-profile", if svg { "svg" } else { "csv" });
    let written = if svg {
        // The colours shown.
        let cloud = &state.layers.cloud;
        let colour = |i: usize| {
            let c = cloud.points[i].rgba;
            [c[0], c[1], c[2]]
        };
        let pts: Vec<(f64, f64, [u8; 3])> = rows.iter().map(|r| (r.station, r.height, colour(r.index))).collect();
        let unit = state.layers.cloud.units().horizontal.symbol();
        pcv_io::export::write_profile_svg(&file, &pts, &unit, 1200.0)
    } else {
        let rows: Vec<[f64; 6]> =
            rows.iter().map(|r| [r.station, r.offset, r.height, r.file.x, r.file.y, r.file.z]).collect();
        pcv_io::export::write_profile_csv(&file, &rows)
    };
    match written {
        Ok(n) => {
            state.messages.info(format!("{n} profile points: {}", file.display()));
        }
        Err(e) => state.messages.error(format!("profile not written: {e}")),
    }
}

/// A file named `prefix-<UTC time>.ext` (never an existing one) in the current directory: where the
/// window's screenshots and exports go.
fn new_file_here(prefix: &str, ext: &str) -> std::path::PathBuf {
    let dir = std::env::current_dir().unwrap_or_else(|_| ".".into());
    unique_path(&dir, prefix, ext, SystemTime::now())
}

fn save_bookmarks(state: &mut AppState) {
    let Some(path) = update::bookmarks_path(state) else {
        state.messages.info("no bookmarks to save: Ctrl+1..9 stores the view");
        return;
    };
    let file = new_file_here("pcv-path", "json");
    match std::fs::write(&file, path.to_json()) {
        Ok(()) => state.messages.info(format!(
            "camera path {} ({} keyframes): pcv --path or pcv record --path",
            file.display(),
            path.keyframes.len()
        )),
        Err(e) => state.messages.error(format!("{}: {e}", file.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::layers::Layers;
    use pcv_camera::{Camera, ControllerKind, Navigator};
    use pcv_io::attributes::Attributes;
    use pcv_io::filter::PointFilter;
    use pcv_io::{Point, PointCloud};
    use pcv_render::gpu_data::FilterUniforms;
    use pcv_render::{FrameStats, RenderError, RenderMode, Target};
    use std::sync::Arc;

    /// A rasterizer whose culled passes take filters: it records its uploads and filters.
    #[derive(Default)]
    struct Filtering {
        uploads: Vec<usize>,
        filters: Vec<Option<(u32, usize)>>,
        points: u64,
    }

    impl Rasterizer for Filtering {
        fn name(&self) -> &'static str {
            "fake"
        }
        fn description(&self) -> String {
            "records uploads and filters".into()
        }
        fn upload(&mut self, cloud: &PointCloud) -> Result<(), RenderError> {
            self.uploads.push(cloud.len() as usize);
            self.points = cloud.len();
            Ok(())
        }
        fn render(&mut self, _: &FrameParams, _: Target<'_>) -> Result<FrameStats, RenderError> {
            unreachable!("not drawn")
        }
        fn num_points(&self) -> u64 {
            self.points
        }
        fn raster_filters(&self) -> bool {
            true
        }
        fn set_raster_filter(
            &mut self,
            f: Option<&FilterUniforms>,
            c: &dyn Fn(pcv_render::filter::FilterColumn) -> Option<pcv_render::filter::ColumnData>,
        ) -> Result<bool, RenderError> {
            let codes = |f: &FilterUniforms| match f.tests_classes {
                0 => 0,
                _ => c(pcv_render::filter::FilterColumn::Classes).map_or(0, |c| c.len()),
            };
            self.filters.push(f.map(|f| (f.hidden_classes[0], codes(f))));
            Ok(true)
        }
    }

    struct NoPicks;
    impl Picker for NoPicks {
        fn pick(&mut self, _: Vec2, _: u32) -> Option<PickHit> {
            None
        }
    }

    fn state(mode: RenderMode) -> AppState {
        let points: Vec<Point> =
            (0..1000).map(|i| Point::new([(i % 10) as f32, (i / 100) as f32, 0.0], [9; 4])).collect();
        let mut cloud = PointCloud::from_points(points, glam::DVec3::ZERO, "t.las");
        let classes = (0..1000).map(|i| if i % 2 == 0 { 2 } else { 5 }).collect();
        cloud.attributes = Some(Arc::new(Attributes { classification: Some(classes), ..Default::default() }));
        let (cam, reason) = Camera::start(&cloud, &Default::default());
        let look = pcv_render::look::Look::for_cloud(false, &Default::default());
        let nav = Navigator::new(cam, ControllerKind::Orbit);
        AppState::new(nav, Layers::new(cloud), mode, look, 0.1, reason.0, (80, 45))
    }

    #[test]
    fn a_filter_change_is_a_parameter_of_the_culled_passes_not_an_upload() {
        let mut s = state(RenderMode::Culled);
        let mut r = Filtering::default();
        let mut vegetation = PointFilter::default();
        vegetation.set_class_shown(5, false);
        s.layers.filter = vegetation.clone();
        // The first filter: every point up once, with its class codes, and the filter set.
        upload_layers(&mut s, &mut r, false).unwrap();
        assert_eq!(r.uploads, [1000]);
        assert_eq!(r.filters, [Some((1 << 5, 1000))]);
        assert!(s.layers.in_raster && s.layers.filtered.as_ref().is_some_and(|k| k.by_rasterizer));
        // Another filter: no upload.
        let mut ground = PointFilter::default();
        ground.set_class_shown(2, false);
        s.layers.filter = ground;
        upload_layers(&mut s, &mut r, false).unwrap();
        assert_eq!(r.uploads, [1000]);
        assert_eq!(r.filters.last(), Some(&Some((1 << 2, 1000))));
        // Every point again: the filter goes, no upload.
        s.layers.filter = PointFilter::default();
        upload_layers(&mut s, &mut r, false).unwrap();
        assert_eq!((r.uploads.len(), r.filters.last()), (1, Some(&None)));
        assert!(s.layers.filtered.is_none());
        // New colours: the points go up again, whole.
        s.layers.filter = vegetation.clone();
        upload_layers(&mut s, &mut r, true).unwrap();
        assert_eq!(r.uploads, [1000, 1000]);
        // A mode that does not cull: the kept points go up (the host's filter).
        let picker = &mut NoPicks;
        let fx = update::apply(&mut s, Action::SetMode(RenderMode::Vis), &mut update::UpdateCtx { reads: picker });
        assert!(fx.reupload);
        upload_layers(&mut s, &mut r, true).unwrap();
        assert_eq!(r.uploads, [1000, 1000, 500]);
        assert!(!s.layers.in_raster);
        assert_eq!(s.layers.filtered.as_ref().map(|k| (k.points, k.by_rasterizer)), Some((500, false)));
    }

    #[test]
    fn a_backend_without_raster_filters_gets_the_kept_points() {
        let mut s = state(RenderMode::Culled);
        let mut r = pcv_render::cpu::CpuRasterizer::new();
        s.layers.filter.set_class_shown(5, false);
        upload_layers(&mut s, &mut r, false).unwrap();
        assert_eq!(r.num_points(), 500);
        assert!(!s.layers.in_raster);
    }
}
