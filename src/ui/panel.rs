//! The panel: a status line always, and one section at a time (Files, View, Camera, Performance).
//!
//! How it works: a small window pinned to the top-left corner, sized to its content. Closed, it is
//! two short lines (325 × 52 px: a twentieth of an 800 × 450 window): the status (frames per second
//! and frame time of frames that rendered the points, points drawn, render mode, controller) and a
//! row of section buttons, which never move; below them come what is under the cursor, picked or
//! measured, messages and load progress, then the one open section. Every widget returns the [`Action`] its key stands for, which the viewer carries out like the
//! key. The colour legend (elevation ramp with its heights in file coordinates, intensity range, the
//! classes present with their colours and counts) is computed once per cloud and colour mode and kept
//! in a [`LegendCache`]. Text is ASCII: imgui's built-in font has nothing else.
use super::{group_thousands, si, FrameInfo, Section};
use crate::app::pick::{class_name, distance};
use crate::app::state::{AppState, BOOKMARKS};
use crate::input::Action;
use imgui::Condition;
use pcv_camera::{ControllerKind, UpAxis, View};
use pcv_io::attributes::{self, ColorMode, ColorSpec, Field, Ramp};
use pcv_io::filter::{PointFilter, Returns};
use pcv_render::look::{Background, PointShape, PointSize, Quality};
use pcv_render::RenderMode;

/// Where text wraps, in pixels from the panel's left edge.
const WRAP_PX: f32 = 330.0;
const DIM: [f32; 4] = [0.65, 0.65, 0.65, 1.0];
const PICK: [f32; 4] = [1.0, 0.85, 0.2, 1.0];
const MEASURE: [f32; 4] = [0.3, 0.95, 1.0, 1.0];
const ERROR: [f32; 4] = [1.0, 0.45, 0.35, 1.0];

/// One line of the colour legend.
#[derive(Clone, Debug, PartialEq)]
pub enum LegendEntry {
    /// The elevation ramp from `lo` to `hi` metres (file coordinates) along the up axis.
    Ramp {
        lo: f64,
        hi: f64,
        axis: UpAxis,
    },
    /// Intensity shown as gray from `lo` (black) to `hi` (white).
    Gray {
        lo: f32,
        hi: f32,
    },
    /// A field through a ramp from `lo` to `hi` (categorical ramps: the values' own colours), with a
    /// histogram of its values over that range (64 bins, each bin's share of the points in range).
    Field {
        name: &'static str,
        unit: &'static str,
        ramp: Ramp,
        lo: f64,
        hi: f64,
        histogram: Vec<f32>,
    },
    /// A class present in the cloud.
    Class {
        code: u8,
        count: u64,
        rgba: [u8; 4],
    },
    Note(String),
}

/// The legend of the cloud and mode it was made for.
#[derive(Clone, Debug, Default)]
pub struct LegendCache {
    key: Option<(usize, u64, ColorMode, UpAxis, Option<ColorSpec>)>,
    pub entries: Vec<LegendEntry>,
    /// A field look being dragged on a cloud whose recolour is costly (level of detail: its nodes
    /// load again; streamed: its files stream again): shown by the widgets, applied on release.
    pub pending_look: Option<pcv_io::attributes::FieldLook>,
}

impl LegendCache {
    /// The legend for the state's cloud and colour mode (recomputed when they change).
    pub fn get(&mut self, s: &AppState) -> &[LegendEntry] {
        let cloud = &s.layers.cloud;
        let spec = cloud.attributes.as_deref().and_then(|a| a.field_spec);
        let key = (std::sync::Arc::as_ptr(&cloud.points) as usize, cloud.len(), s.color_mode, s.nav.camera.up, spec);
        if self.key.as_ref() != Some(&key) {
            self.key = Some(key);
            self.entries = legend(s);
        }
        &self.entries
    }
}

/// Computes the legend (see the module doc).
pub fn legend(s: &AppState) -> Vec<LegendEntry> {
    let cloud = &s.layers.cloud;
    let up = s.nav.camera.up;
    let elevation = || {
        let (lo, hi) = attributes::height_range(&cloud.bounds, up.vector());
        let o = cloud.origin.dot(up.vector().as_dvec3());
        LegendEntry::Ramp { lo: lo as f64 + o, hi: hi as f64 + o, axis: up }
    };
    let attrs = cloud.attributes.as_deref();
    let mut out = match s.color_mode {
        ColorMode::Elevation => vec![elevation()],
        ColorMode::Rgb => {
            let colorless = attrs.map(|a| a.sources.iter().filter(|x| !x.has_rgb).count()).unwrap_or(0);
            if cloud.scene().is_some() {
                vec![LegendEntry::Note("the built-in scene's own colors".into())]
            } else if colorless > 0 {
                vec![
                    LegendEntry::Note(format!("file colors; {colorless} file(s) without colors by elevation:")),
                    elevation(),
                ]
            } else {
                vec![LegendEntry::Note("the files' own colors".into())]
            }
        }
        ColorMode::Intensity => match attrs.and_then(|a| a.intensity.as_deref()) {
            Some(v) => {
                let (lo, hi) = attributes::percentile_range(v, 0.01, 0.99);
                vec![LegendEntry::Gray { lo, hi }]
            }
            None => vec![],
        },
        ColorMode::Classification => vec![],
        m => match attrs.and_then(|a| a.field_spec) {
            Some(ColorSpec::Field { field, ramp, lo, hi, .. }) if Some(field) == m.field() => {
                // A streamed cloud has no column on the host: the histogram of the sample its range
                // came from.
                let sampled = || {
                    let s = cloud.files()?.field_samples.lock().ok()?;
                    let (_, v) = s.iter().find(|(f, _)| *f == field)?;
                    Some(pcv_io::attributes::Column::from_f64(field, v))
                };
                // Level of detail: the tiles' root nodes (a uniform sample).
                let roots = || match &s.lod_sample {
                    Some((m, v, _)) if m.field() == Some(field) && !v.is_empty() => {
                        Some(pcv_io::attributes::Column::from_f64(field, v))
                    }
                    _ => None,
                };
                let histogram = match attrs.and_then(|a| a.column(field)) {
                    Some(c) => histogram(c, lo, hi),
                    None => sampled().or_else(roots).map(|c| histogram(&c, lo, hi)).unwrap_or_default(),
                };
                vec![LegendEntry::Field { name: field.name(), unit: field.unit(), ramp, lo, hi, histogram }]
            }
            _ => vec![],
        },
    };
    // The classes present, with their toggles, under every mode (a device-only cloud's as its first
    // stream counted them).
    let streamed = cloud.files().and_then(|f| f.streamed.lock().ok()?.as_ref().map(|s| s.class_counts.clone()));
    let counts: Option<Vec<u64>> = match attrs.and_then(|a| a.classification.as_deref()) {
        Some(v) => {
            let mut counts = vec![0u64; 256];
            for &c in v {
                counts[c as usize] += 1;
            }
            Some(counts)
        }
        None => streamed.filter(|c| c.len() == 256 && c.iter().any(|&n| n > 0)),
    };
    // Level of detail: the classes of the root nodes' sample, said to be a sample.
    let counts = counts.or_else(|| {
        let (_, _, c) = s.lod_sample.as_ref()?;
        (c.iter().filter(|&&n| n > 0).count() > 1).then(|| {
            out.push(LegendEntry::Note("classes (counts in the root nodes' sample):".into()));
            c.clone()
        })
    });
    if let Some(counts) = counts {
        let present = counts.iter().filter(|&&n| n > 0).count();
        if present > 1 || s.color_mode == ColorMode::Classification {
            out.extend(counts.iter().enumerate().filter(|(_, &n)| n > 0).map(|(c, &n)| LegendEntry::Class {
                code: c as u8,
                count: n,
                rgba: attributes::class_color(c as u8),
            }));
        }
    }
    out
}

/// A field colour mode's controls: ramp, range, gamma, brightness, contrast, blend with the files' colours.
///
/// On a cloud whose recolour is costly (level of detail reloads its nodes, a streamed cloud streams
/// its files again), drags and sliders change a pending look that is applied when the widget is let
/// go, not at every step of the drag; choices (the ramp, 2-98%) apply at once.
fn field_look(
    ui: &imgui::Ui,
    s: &AppState,
    ramp: Ramp,
    (lo, hi): (f64, f64),
    pending: &mut Option<pcv_io::attributes::FieldLook>,
    actions: &mut Vec<Action>,
) {
    let costly = s.lod_modes.is_some() || s.layers.cloud.is_device_only();
    let mut look = pending.unwrap_or(s.field_look);
    let before = look;
    // Whether a drag or slider was let go after moving it.
    let mut released = false;
    let mut track = || released |= ui.is_item_deactivated_after_edit();
    let mut i = Ramp::ALL.iter().position(|&r| r == ramp).unwrap_or(0);
    let names: Vec<&str> = Ramp::ALL.iter().map(|r| r.name()).collect();
    ui.set_next_item_width(110.0);
    let mut chosen = false;
    if ui.combo_simple_string("ramp", &mut i, &names) {
        look.ramp = Some(Ramp::ALL[i]);
        chosen = true;
    }
    if ramp != Ramp::Categorical {
        let mut r = [lo, hi];
        ui.set_next_item_width(220.0);
        let speed = ((hi - lo).abs() / 200.0).max(1e-6) as f32;
        // Large values (GPS time) in fixed notation, so the steps of a drag can be read.
        let format = if lo.abs().max(hi.abs()) >= 1e4 { "%.2f" } else { "%.5g" };
        let moved = imgui::Drag::new("range").speed(speed).display_format(format).build_array(ui, &mut r);
        track();
        if moved && r[0] < r[1] {
            look.range = Some((r[0], r[1]));
        }
        ui.same_line();
        if ui.small_button("2-98%") {
            look.range = None;
            chosen = true;
        }
        ui.set_next_item_width(100.0);
        ui.slider_config("gamma", 0.2, 5.0).display_format("%.2f").build(&mut look.tone.gamma);
        track();
        ui.same_line();
        ui.set_next_item_width(100.0);
        ui.slider_config("brightness", -0.5, 0.5).display_format("%.2f").build(&mut look.tone.brightness);
        track();
        ui.set_next_item_width(100.0);
        ui.slider_config("contrast", 0.0, 3.0).display_format("%.2f").build(&mut look.tone.contrast);
        track();
    }
    if s.layers.cloud.attributes.as_deref().is_some_and(|a| a.has_rgb) {
        if ramp != Ramp::Categorical {
            ui.same_line();
        }
        ui.set_next_item_width(100.0);
        ui.slider_config("rgb mix", 0.0, 1.0).display_format("%.2f").build(&mut look.blend_rgb);
        track();
    }
    let apply_now = !costly || chosen || released;
    if apply_now && (look != s.field_look || pending.is_some()) {
        actions.push(Action::SetFieldLook(look));
        *pending = None;
    } else if look != before {
        *pending = Some(look);
    }
}

/// A field's values over `lo..=hi` in 64 bins (from at most about a million of them), each bin's share.
fn histogram(c: &pcv_io::attributes::Column, lo: f64, hi: f64) -> Vec<f32> {
    let mut bins = vec![0f32; 64];
    if hi <= lo {
        return bins;
    }
    let step = (c.values.len() / 1_000_000).max(1);
    let mut n = 0f32;
    for &v in c.values.iter().step_by(step) {
        let x = c.base + v as f64;
        if x >= lo && x <= hi {
            bins[(((x - lo) / (hi - lo)) * 63.999) as usize] += 1.0;
            n += 1.0;
        }
    }
    bins.iter_mut().for_each(|b| *b /= n.max(1.0));
    bins
}

/// The return filter and what the filter keeps.
fn filters(ui: &imgui::Ui, s: &AppState, actions: &mut Vec<Action>) {
    let attrs = s.layers.cloud.attributes.as_deref();
    let has_returns = attrs.is_some_and(|a| a.column(Field::ReturnNumber).is_some());
    if has_returns {
        let mut i = Returns::ALL.iter().position(|&r| r == s.layers.filter.returns).unwrap_or(0);
        let names: Vec<&str> = Returns::ALL.iter().map(|r| r.name()).collect();
        ui.set_next_item_width(100.0);
        if ui.combo_simple_string("returns", &mut i, &names) && Returns::ALL[i] != s.layers.filter.returns {
            actions.push(Action::SetReturns(Returns::ALL[i]));
        }
    }
    if !s.layers.filter.is_empty() {
        ui.text_wrapped(format!("showing {}", s.layers.filter.describe()));
        if let Some(k) = s.layers.filtered.as_ref().filter(|k| k.by_rasterizer) {
            ui.text_disabled(format!(
                "filtered by the GPU's culled passes ({} points uploaded)",
                group_thousands(k.points)
            ));
        } else if let Some(k) = s.layers.filtered.as_ref().filter(|k| **k != pcv_io::filter::Kept::default()) {
            ui.text_disabled(format!(
                "{} points kept; groups of {}: {} skipped, {} whole, {} tested",
                group_thousands(k.points),
                pcv_io::filter::GROUP_POINTS,
                k.groups_skipped,
                k.groups_whole,
                k.groups_tested
            ));
        }
        if ui.small_button("show every point") {
            actions.push(Action::SetFilter(PointFilter::default()));
        }
    }
    clip_boxes(ui, s, actions);
}

/// The clip boxes: add one around the middle of the cloud, then move, size, turn (angles about z, y
/// and x) or remove each by numbers in the file's coordinates, and keep its inside or outside; "edit"
/// shows the gizmo on a box to do the same with the mouse (a new box is edited at once), "done" (or
/// Esc) hides it. The numbers show the box as the gizmo changes it.
fn clip_boxes(ui: &imgui::Ui, s: &AppState, actions: &mut Vec<Action>) {
    use pcv_io::filter::{ClipBox, Keep};
    let cloud = &s.layers.cloud;
    if cloud.bounds.is_empty() {
        return;
    }
    let mut f = s.layers.filter.clone();
    let mut changed = false;
    let mut remove = None;
    let step = (cloud.bounds.radius() as f64 / 200.0).max(1e-3) as f32;
    for (i, b) in f.boxes.iter_mut().enumerate() {
        let _id = ui.push_id_usize(i);
        ui.text(format!("clip box {}", i + 1));
        ui.same_line();
        let mut outside = b.keep == Keep::Outside;
        if ui.checkbox("keep outside", &mut outside) {
            b.keep = if outside { Keep::Outside } else { Keep::Inside };
            changed = true;
        }
        ui.same_line();
        if ui.small_button("remove") {
            remove = Some(i);
        }
        ui.same_line();
        let editing = s.gizmo.selected == Some(i);
        if ui.small_button(if editing { "done" } else { "edit" }) {
            actions.push(Action::SelectClipBox(if editing { None } else { Some(i) }));
        }
        if ui.is_item_hovered() {
            ui.tooltip_text(if editing {
                "stop editing (Esc)"
            } else {
                "edit with the mouse: drag an arrow to move, a ring to turn, a face's square to resize (X: next box)"
            });
        }
        let mut c = b.center.to_array();
        ui.set_next_item_width(230.0);
        changed |= imgui::Drag::new("centre").speed(step).display_format("%.2f").build_array(ui, &mut c);
        let mut size = (b.half_extent * 2.0).to_array();
        ui.set_next_item_width(230.0);
        changed |=
            imgui::Drag::new("size").speed(step).range(0.0, f64::MAX).display_format("%.2f").build_array(ui, &mut size);
        // The turn as angles about z, then y, then x (the gizmo's rings turn about the box's own axes).
        let (z, y, x) = b.rotation.to_euler(glam::EulerRot::ZYX);
        let mut turn = [z.to_degrees() as f32, y.to_degrees() as f32, x.to_degrees() as f32];
        ui.set_next_item_width(230.0);
        if imgui::Drag::new("turn z,y,x (deg)")
            .speed(0.5)
            .range(-180.0, 180.0)
            .display_format("%.1f")
            .build_array(ui, &mut turn)
        {
            let [z, y, x] = turn.map(|d| (d as f64).to_radians());
            b.rotation = glam::DQuat::from_euler(glam::EulerRot::ZYX, z, y, x);
            changed = true;
        }
        b.center = glam::DVec3::from_array(c);
        b.half_extent = glam::DVec3::from_array(size) * 0.5;
    }
    let mut select = None;
    if let Some(i) = remove {
        f.boxes.remove(i);
        changed = true;
        // The box edited keeps being edited (its index may have moved); the removed one is done.
        select = Some(match s.gizmo.selected {
            Some(j) if j == i => None,
            Some(j) if j > i => Some(j - 1),
            other => other,
        });
    }
    if ui.small_button("add a clip box") {
        // A quarter of the cloud's extent across around its middle, its whole height along the up
        // axis, in the file's coordinates.
        let (lo, hi) = (cloud.bounds.min.as_dvec3(), cloud.bounds.max.as_dvec3());
        let up = s.nav.camera.up.vector().as_dvec3().abs();
        let (mid, quarter) = ((lo + hi) * 0.5, (hi - lo) * 0.125);
        let half = quarter * (glam::DVec3::ONE - up) + (hi - lo) * 0.5 * up;
        let (a, b) = (cloud.to_source((mid - half).as_vec3()), cloud.to_source((mid + half).as_vec3()));
        f.boxes.push(ClipBox::from_min_max(a.min(b), a.max(b), Keep::Inside));
        changed = true;
        // The new box is edited with the mouse.
        select = Some(Some(f.boxes.len() - 1));
    }
    if changed {
        actions.push(Action::SetFilter(f));
    }
    if let Some(i) = select {
        actions.push(Action::SelectClipBox(i));
    }
}

/// A value for a legend: integers as they are, others to four significant digits.
fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 1e4 {
        format!("{v:.1}")
    } else {
        format!("{v:.4}")
    }
}

fn rgba_f(c: [u8; 4]) -> [f32; 4] {
    [c[0] as f32 / 255.0, c[1] as f32 / 255.0, c[2] as f32 / 255.0, 1.0]
}

/// The file name of a path, for short labels.
fn short(label: &str) -> &str {
    std::path::Path::new(label).file_name().and_then(|n| n.to_str()).unwrap_or(label)
}

/// Builds the panel.
pub fn build(
    ui: &imgui::Ui,
    s: &AppState,
    info: &FrameInfo<'_>,
    section: &mut Option<Section>,
    legend: &mut LegendCache,
    actions: &mut Vec<Action>,
) {
    ui.window("##panel")
        // Pinned: imgui would otherwise push a movable window off to the side while the display is tiny
        // and leave it there.
        .position([6.0, 6.0], Condition::Always)
        .movable(false)
        .title_bar(false)
        .resizable(false)
        .always_auto_resize(true)
        .bg_alpha(0.72)
        .focus_on_appearing(false)
        .save_settings(false)
        .build(|| {
            let _wrap = ui.push_text_wrap_pos_with_pos(WRAP_PX);
            // The buttons come right after the status line, so that messages never move them.
            status(ui, s, info);
            tabs(ui, section, actions);
            notes(ui, s, actions);
            match *section {
                Some(Section::Files) => files(ui, s, actions),
                Some(Section::View) => view(ui, s, legend, actions),
                Some(Section::Camera) => camera(ui, s, actions),
                Some(Section::Performance) => performance(ui, info),
                Some(Section::Measure) => measure(ui, s, actions),
                None => {}
            }
        });
}

fn status(ui: &imgui::Ui, s: &AppState, info: &FrameInfo<'_>) {
    let t = info.frame_times;
    let rate = match t.fps() {
        fps if fps > 0.0 => format!("{fps:3.0} fps  {:.1} ms", t.smoothed_ms()),
        _ => format!("idle  {:.1} ms", t.last_ms()),
    };
    ui.text(format!(
        "{rate}  {} pts  {}  {}{}",
        si(info.stats.points.max(info.points) as f64).trim_end(),
        s.mode.name(),
        s.nav.active.name(),
        if s.mouselook { " [look]" } else { "" }
    ));
}

/// What is under the cursor, picked, measured, loading, and the messages.
fn notes(ui: &imgui::Ui, s: &AppState, actions: &mut Vec<Action>) {
    let u = s.units();
    let other_kind = s.measure.kind != pcv_model::measure::MeasureKind::Distance || s.measure.moving.is_some();
    if other_kind && (s.measure.active || !s.measure.points.is_empty()) {
        let c = s.measure.current();
        let text = match c.headline(s.nav.camera.up.vector().as_dvec3(), &u) {
            Some(h) if s.measure.moving.is_none() => format!("{} {h}  ({})", c.kind.name(), s.measure.prompt()),
            _ => format!("measure {}", s.measure.prompt()),
        };
        unwrapped(ui, MEASURE, &text);
    } else if s.measure.active || !s.measure.points.is_empty() {
        let m = &s.measure.points;
        let text = match (m.len(), &s.hover) {
            (0, _) => "measure: click the first point".to_string(),
            (1, Some(h)) if s.measure.active => {
                let d = distance(&m[0], h, s.nav.camera.up.vector(), &u);
                format!("measure: {:.3}{} to the cursor; click the second point", d.total, u.across_suffix())
            }
            (1, _) => "measure: click the second point".to_string(),
            _ => {
                let d = distance(&m[0], &m[1], s.nav.camera.up.vector(), &u);
                format!(
                    "distance {:.3}{}  horiz. {:.3}  vert. {:+.3}{}",
                    d.total,
                    u.across_suffix(),
                    d.horizontal,
                    d.vertical,
                    u.up_suffix()
                )
            }
        };
        unwrapped(ui, MEASURE, &text);
    }
    if let Some(p) = &s.picked {
        for (i, line) in p.lines().iter().enumerate() {
            let line = if i == 0 { format!("picked {line}{}", coordinate_unit(s)) } else { format!("       {line}") };
            unwrapped(ui, PICK, &line);
        }
    } else if let Some(h) = &s.hover {
        unwrapped(ui, DIM, &format!("cursor {}{}", h.position(), coordinate_unit(s)));
        let rest = h.attribute_summary();
        if !rest.is_empty() {
            unwrapped(ui, DIM, &format!("       {rest}"));
        }
    }
    if let Some(l) = &s.loader {
        let what = match &l.current {
            Some((path, i, n)) => format!("{} ({}/{})", short(&path.display().to_string()), i + 1, n),
            None => "files".to_string(),
        };
        let spin = ["|", "/", "-", "\\"][(l.started.elapsed().as_millis() / 150 % 4) as usize];
        ui.text(format!("{spin} loading {what}  {:.1} s", l.started.elapsed().as_secs_f64()));
    }
    let mut any_error = false;
    for m in &s.messages.list {
        match m.level {
            crate::app::messages::Level::Info => ui.text_colored(DIM, &m.text),
            crate::app::messages::Level::Error => {
                any_error = true;
                ui.text_colored(ERROR, &m.text);
            }
        }
    }
    if any_error && ui.small_button("dismiss") {
        actions.push(Action::DismissMessages);
    }
}

/// A line that never wraps (imgui breaks after '.' and ',', which would split a coordinate): the
/// panel grows to hold it.
fn unwrapped(ui: &imgui::Ui, color: [f32; 4], text: &str) {
    let _no_wrap = ui.push_text_wrap_pos_with_pos(-1.0);
    ui.text_colored(color, text);
}

fn tabs(ui: &imgui::Ui, section: &mut Option<Section>, actions: &mut Vec<Action>) {
    for (i, (name, sec)) in [
        ("Files", Section::Files),
        ("View", Section::View),
        ("Camera", Section::Camera),
        ("Perf", Section::Performance),
        ("Measure", Section::Measure),
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            ui.same_line();
        }
        let open = *section == Some(sec);
        let label = format!("{}{name}##tab", if open { "v " } else { "> " });
        if ui.small_button(label) {
            *section = if open { None } else { Some(sec) };
        }
    }
    ui.same_line();
    if ui.small_button("? help") {
        actions.push(Action::ToggleHelp);
    }
}

/// The unit after a position in file coordinates (` ft`; ` m/ftUS` across/up where they differ;
/// nothing when no coordinate system names it). Coordinates stay in the file's units under N.
fn coordinate_unit(s: &AppState) -> String {
    if let Some(f) = &s.layers.cloud.frame {
        return match f.kind {
            pcv_io::crs_model::CrsKind::Geographic => " (lon, lat deg; m)".into(),
            _ => " m (Earth-centred)".into(),
        };
    }
    let u = s.layers.cloud.units();
    match (u.known, u.horizontal == u.vertical) {
        (false, _) => String::new(),
        (true, true) => format!(" {}", u.horizontal.symbol()),
        (true, false) => format!(" {}/{}", u.horizontal.symbol(), u.vertical.symbol()),
    }
}

/// The coordinate system line of the Files section, and what the N switch shows.
fn crs_lines(ui: &imgui::Ui, s: &AppState, actions: &mut Vec<Action>) {
    match s.layers.cloud.crs() {
        Some(c) => {
            ui.text_wrapped(format!("crs: {}", c.summary()));
            if ui.is_item_hovered() {
                ui.tooltip_text(format!("read from {}", c.read_from));
            }
        }
        None => ui.text_disabled("crs: none named (lengths without a unit; --crs EPSG:N names it)"),
    }
    if let Some(f) = &s.layers.cloud.frame {
        ui.text_wrapped(f.note());
    }
    let mut metres = s.lengths_in_metres;
    if ui.checkbox("lengths in metres (N)", &mut metres) {
        actions.push(Action::ToggleMetres);
    }
}

fn files(ui: &imgui::Ui, s: &AppState, actions: &mut Vec<Action>) {
    ui.separator();
    crs_lines(ui, s, actions);
    if !s.node_errors.is_empty() {
        let n = s.failed_nodes.max(1);
        let what = if n == 1 { "1 node could not be read" } else { &format!("{n} nodes could not be read") };
        ui.text_colored(ERROR, format!("{what}; drawn without"));
        for e in &s.node_errors {
            ui.text_wrapped(e);
        }
    }
    if !s.lod_tiles.is_empty() {
        // Level of detail: its tiles stand for the layers (the loaded cloud is a placeholder).
        tiles(ui, s, actions);
        return;
    }
    let editable = s.layers.editable();
    for (i, l) in s.layers.layers.iter().enumerate() {
        let mut visible = l.visible;
        if editable {
            if ui.checkbox(format!("##layer{i}"), &mut visible) {
                actions.push(Action::SetLayerVisible { layer: i, visible });
            }
            ui.same_line();
        }
        if s.layers.color_by_layer {
            ui.color_button(format!("##swatch{i}"), rgba_f(l.color));
            ui.same_line();
        }
        ui.text(format!("{}  {} pts", short(&l.label), group_thousands(l.points.end - l.points.start)));
        if ui.is_item_hovered() {
            ui.tooltip_text(&l.label);
        }
    }
    if editable {
        let mut by_layer = s.layers.color_by_layer;
        if ui.checkbox("color by layer", &mut by_layer) {
            actions.push(Action::ToggleColorByLayer);
        }
        ui.text_disabled("drop files on the window to add layers (Shift: replace)");
    } else {
        ui.text_disabled("the built-in scene; drop files on the window to view them");
    }
}

/// Level of detail's tiles: how many, their points, how much of the view is drawn, the box switch, and a
/// line a tile (the first [`TILES_LISTED`]): its name, points, the share of its selected points drawn,
/// its failed nodes in red.
fn tiles(ui: &imgui::Ui, s: &AppState, actions: &mut Vec<Action>) {
    if s.lod_tiles.is_empty() {
        return;
    }
    let total: u64 = s.lod_tiles.iter().map(|t| t.points).sum();
    let (selected, drawn): (u64, u64) =
        s.lod_tiles.iter().fold((0, 0), |(a, b), t| (a + t.selected_points, b + t.drawn_points.min(t.selected_points)));
    let n = s.lod_tiles.len();
    let share = if selected > 0 { 100.0 * drawn as f64 / selected as f64 } else { 100.0 };
    ui.text(format!(
        "{n} tile{} · {} pts · view {share:.0}% drawn",
        if n == 1 { "" } else { "s" },
        group_thousands(total)
    ));
    if n > 1 {
        let mut show = s.show_tile_boxes;
        if ui.checkbox("tile boxes", &mut show) {
            actions.push(Action::ToggleTileBoxes);
        }
    }
    for t in s.lod_tiles.iter().take(TILES_LISTED) {
        let state = if t.selected_points == 0 {
            "out of view".to_string()
        } else {
            format!("{:.0}%", 100.0 * t.drawn_points.min(t.selected_points) as f64 / t.selected_points as f64)
        };
        let line = format!("{}  {} pts  {state}", short(&t.name), group_thousands(t.points));
        if t.failed_nodes > 0 || t.stopped.is_some() {
            ui.text_colored(ERROR, format!("{line}  {} node(s) failed", t.failed_nodes));
        } else {
            ui.text(line);
        }
        if ui.is_item_hovered() {
            ui.tooltip_text(t.stopped.as_deref().map_or(t.name.clone(), |w| format!("{}: {w}", t.name)));
        }
    }
    if n > TILES_LISTED {
        ui.text_disabled(format!("… and {} more", n - TILES_LISTED));
    }
}

/// Tiles listed one a line in the Files section (the rest counted).
const TILES_LISTED: usize = 50;

fn view(ui: &imgui::Ui, s: &AppState, legend: &mut LegendCache, actions: &mut Vec<Action>) {
    ui.separator();
    let mut modes = s.color_modes();
    if !modes.contains(&s.color_mode) {
        // A mode the cloud no longer offers (say a field of a file since closed): shown as it is.
        modes.push(s.color_mode);
    }
    let mut i = modes.iter().position(|&m| m == s.color_mode).unwrap_or(0);
    let names: Vec<&str> = modes.iter().map(|m| m.name()).collect();
    ui.set_next_item_width(160.0);
    if ui.combo_simple_string("color (C)", &mut i, &names) && modes.get(i).is_some_and(|&m| m != s.color_mode) {
        actions.push(Action::SetColor(modes[i]));
    }
    let entries = legend.get(s).to_vec();
    for e in &entries {
        match e {
            LegendEntry::Ramp { lo, hi, axis } => {
                let p = ui.cursor_screen_pos();
                let dl = ui.get_window_draw_list();
                let (w, h) = (160.0, 12.0);
                let steps = 32;
                for k in 0..steps {
                    let c = attributes::ramp_color(k as f32 / (steps - 1) as f32);
                    let x0 = p[0] + w * k as f32 / steps as f32;
                    dl.add_rect([x0, p[1]], [x0 + w / steps as f32 + 0.5, p[1] + h], rgba_f(c)).filled(true).build();
                }
                ui.dummy([w, h]);
                ui.same_line();
                let u = s.units();
                ui.text(format!("{} .. {}{} along {axis}", fmt_m(u.up(*lo)), fmt_m(u.up(*hi)), u.up_suffix()));
            }
            LegendEntry::Gray { lo, hi } => {
                ui.text(format!("intensity {lo} (black) .. {hi} (white), 1st..99th percentile"))
            }
            LegendEntry::Field { name, unit, ramp, lo, hi, histogram } => {
                if *ramp == Ramp::Categorical {
                    ui.text(format!("{name}: each value its own colour"));
                    for v in 0..10 {
                        if v > 0 {
                            ui.same_line();
                        }
                        ui.color_button(format!("{v}##cat{v}"), rgba_f(ramp.color(v as f32 / 9.0)));
                    }
                    ui.text_disabled("(by value, in turn: 0, 1, 2, ... then again from 10)");
                } else {
                    let p = ui.cursor_screen_pos();
                    let dl = ui.get_window_draw_list();
                    let (w, h) = (160.0, 12.0);
                    let steps = 32;
                    for k in 0..steps {
                        let c = ramp.color(k as f32 / (steps - 1) as f32);
                        let x0 = p[0] + w * k as f32 / steps as f32;
                        dl.add_rect([x0, p[1]], [x0 + w / steps as f32 + 0.5, p[1] + h], rgba_f(c))
                            .filled(true)
                            .build();
                    }
                    ui.dummy([w, h]);
                    ui.same_line();
                    ui.text(format!("{name} {} .. {}{unit}", fmt_value(*lo), fmt_value(*hi)));
                    ui.plot_histogram("##histogram", histogram).graph_size([160.0, 36.0]).scale_min(0.0).build();
                    ui.same_line();
                    ui.text_disabled("points by value\nover the range");
                }
                field_look(ui, s, *ramp, (*lo, *hi), &mut legend.pending_look, actions);
            }
            LegendEntry::Class { code, count, rgba } => {
                let mut shown = s.layers.filter.class_shown(*code);
                if ui.checkbox(format!("##show{code}"), &mut shown) {
                    actions.push(Action::SetClassShown { code: *code, shown });
                }
                ui.same_line();
                ui.color_button(format!("##class{code}"), rgba_f(*rgba));
                ui.same_line();
                let text = format!("{code} {}  {}", class_name(*code), group_thousands(*count));
                if shown {
                    ui.text(text);
                } else {
                    ui.text_disabled(text);
                }
            }
            LegendEntry::Note(t) => ui.text_disabled(t),
        }
    }
    filters(ui, s, actions);
    look(ui, s, actions);
    ui.text("up (U)");
    for a in UpAxis::ALL {
        ui.same_line();
        let mut current = s.nav.camera.up;
        if ui.radio_button(format!("{}##up", a.name()), &mut current, a) && a != s.nav.camera.up {
            actions.push(Action::SetUp(a));
        }
    }
    ui.text_disabled(format!("up: {}", s.up_reason));
    ui.text("view");
    for (label, v) in
        [("top (7)", View::Top), ("front (1)", View::Front), ("side (3)", View::Right), ("oblique", View::Oblique)]
    {
        ui.same_line();
        if ui.small_button(label) {
            actions.push(Action::View(v));
        }
    }
    ui.same_line();
    if ui.small_button("frame (F)") {
        actions.push(Action::FrameAll);
    }
    let mut ortho = s.nav.camera.is_ortho();
    if ui.checkbox("orthographic (I)", &mut ortho) {
        actions.push(Action::SetOrtho(ortho));
    }
    if ortho {
        match crate::app::raster::refusal(s) {
            None => {
                ui.text("GeoTIFF of the view");
                ui.same_line();
                if ui.small_button("orthophoto") {
                    actions.push(Action::ExportRaster(pcv_io::raster::RasterKind::Rgb));
                }
                ui.same_line();
                if ui.small_button("DSM") {
                    actions.push(Action::ExportRaster(pcv_io::raster::RasterKind::Dsm));
                }
                let mut cell = s.raster_cell as f32;
                ui.set_next_item_width(90.0);
                let unit = s.units().across_suffix();
                if imgui::Drag::new(format!("cell{unit} (0: a screen pixel)"))
                    .speed(0.01)
                    .range(0.0, f32::MAX)
                    .display_format("%.3f")
                    .build(ui, &mut cell)
                {
                    actions.push(Action::SetRasterCell(cell as f64));
                }
            }
            Some(why) => ui.text_disabled(why),
        }
    }
    let mut i = RenderMode::ALL.iter().position(|&m| m == s.mode).unwrap_or(0);
    let names: Vec<&str> = RenderMode::ALL.iter().map(|m| m.name()).collect();
    ui.set_next_item_width(120.0);
    if ui.combo_simple_string("render mode (M)", &mut i, &names) {
        actions.push(Action::SetMode(RenderMode::ALL[i]));
    }
}

/// Point size, eye-dome lighting and background.
fn look(ui: &imgui::Ui, s: &AppState, actions: &mut Vec<Action>) {
    let p = s.look.point_size;
    let mut adaptive = matches!(p, PointSize::Adaptive { .. });
    let mut size = match p {
        PointSize::Fixed(n) => n as i32,
        PointSize::Adaptive { max_px } => max_px as i32,
    };
    if ui.checkbox("adaptive", &mut adaptive) {
        actions.push(Action::SetPointSize(if adaptive {
            PointSize::Adaptive { max_px: size.clamp(2, 16) as u8 }
        } else {
            PointSize::Fixed(1)
        }));
    }
    ui.same_line();
    ui.set_next_item_width(110.0);
    let label = if adaptive { "largest point px (+/-)" } else { "point px (+/-)" };
    if ui.slider(label, if adaptive { 2 } else { 1 }, 16, &mut size) {
        let n = size.clamp(1, 16) as u8;
        actions.push(Action::SetPointSize(if adaptive {
            PointSize::Adaptive { max_px: n.max(2) }
        } else {
            PointSize::Fixed(n)
        }));
    }
    let mut square = s.look.shape == PointShape::Square;
    if ui.checkbox("square points (G)", &mut square) {
        actions.push(Action::SetPointShape(Some(if square { PointShape::Square } else { PointShape::Round })));
    }
    let mut high = s.look.quality == Quality::High;
    if ui.checkbox("high-quality points (J)", &mut high) {
        actions.push(Action::ToggleQuality);
    }
    if ui.is_item_hovered() {
        ui.tooltip_text(
            "Blends the points within 1 % of each pixel's nearest: smoother, steadier images, a second pass",
        );
    }
    let mut edl_on = s.look.edl.is_some();
    if ui.checkbox("eye-dome lighting (L)", &mut edl_on) {
        actions.push(Action::ToggleEdl);
    }
    if let Some(mut e) = s.look.edl {
        ui.set_next_item_width(110.0);
        let a = ui.slider("strength", 0.0f32, 4.0, &mut e.strength);
        ui.same_line();
        ui.set_next_item_width(90.0);
        let b = ui.slider("radius px", 1.0f32, 4.0, &mut e.radius_px);
        if a || b {
            actions.push(Action::SetEdl(Some(e)));
        }
    }
    let mut choices: Vec<Background> = Background::CYCLE.to_vec();
    if !choices.contains(&s.look.background) {
        choices.push(s.look.background);
    }
    let names: Vec<String> = choices.iter().map(|b| b.to_string()).collect();
    let mut i = choices.iter().position(|&b| b == s.look.background).unwrap_or(0);
    ui.set_next_item_width(110.0);
    if ui.combo_simple_string("background (B)", &mut i, &names) {
        actions.push(Action::SetBackground(choices[i]));
    }
}

/// Metres with a sensible number of decimals for the range shown.
fn fmt_m(v: f64) -> String {
    format!("{v:.2}")
}

/// The measuring tool: its kinds, what it wants next, every measurement with its values (vertices to
/// move, delete), and the exports.
fn measure(ui: &imgui::Ui, s: &AppState, actions: &mut Vec<Action>) {
    use crate::app::measure::ExportFormat;
    use pcv_model::measure::MeasureKind;
    ui.separator();
    let mut on = s.measure.active;
    if ui.checkbox("measure (T)", &mut on) {
        actions.push(Action::ToggleMeasure);
    }
    for (i, k) in MeasureKind::ALL.into_iter().enumerate() {
        if i % 3 != 0 {
            ui.same_line();
        }
        let mut current = s.measure.kind;
        if ui.radio_button(format!("{}##measure", k.name()), &mut current, k) && (k != s.measure.kind || !on) {
            actions.push(Action::SetMeasureKind(k));
        }
    }
    if s.measure.active {
        ui.text_colored(MEASURE, s.measure.prompt());
        if s.measure.kind.max_points().is_none() && !s.measure.points.is_empty() && ui.small_button("end (Enter)") {
            actions.push(Action::FinishMeasure);
        }
    }
    notes_list(ui, s, actions);
    if s.profile.is_some() {
        ui.text_colored(MEASURE, "profile");
        ui.same_line();
        if ui.small_button("close##profile") {
            actions.push(Action::CloseProfile);
        }
        ui.same_line();
        if ui.small_button("CSV##profile") {
            actions.push(Action::ExportProfile { svg: false });
        }
        ui.same_line();
        if ui.small_button("SVG##profile") {
            actions.push(Action::ExportProfile { svg: true });
        }
        ui.same_line();
        if ui.small_button("LAZ##profile") {
            actions.push(Action::ExportProfileLaz);
        }
    }
    let mut width = s.profile_width as f32;
    ui.set_next_item_width(90.0);
    if imgui::Drag::new("profile width (0: auto)")
        .speed(0.1)
        .range(0.0, f32::MAX)
        .display_format("%.2f")
        .build(ui, &mut width)
    {
        actions.push(Action::SetProfileWidth(width as f64));
    }
    let u = s.units();
    let up = s.nav.camera.up.vector().as_dvec3();
    let all = s.measure.all();
    if all.is_empty() {
        ui.text_disabled("no measurements yet");
        return;
    }
    for (i, m) in all.iter().enumerate() {
        let listed = i < s.measure.done.len();
        ui.text(format!("{}. {}{}", i + 1, m.kind.name(), if listed { "" } else { " (current)" }));
        if matches!(m.kind, MeasureKind::Distance | MeasureKind::Polyline) {
            ui.same_line();
            if ui.small_button(format!("profile##p{i}")) {
                actions.push(Action::ShowProfile(i));
            }
        }
        for v in m.values(up, &u) {
            ui.text_disabled(format!("   {} {}", v.name.replace('_', " "), v.describe(&u)));
        }
        if listed {
            ui.text_disabled("   move:");
            for j in 0..m.points.len() {
                ui.same_line();
                if ui.small_button(format!("{}##mv{i}-{j}", j + 1)) {
                    actions.push(Action::MoveMeasureVertex { measurement: i, vertex: j });
                }
            }
            ui.same_line();
            if ui.small_button(format!("delete##m{i}")) {
                actions.push(Action::DeleteMeasurement(i));
            }
        }
    }
    ui.text("export");
    ui.same_line();
    if ui.small_button("GeoJSON") {
        actions.push(Action::ExportMeasurements(ExportFormat::GeoJson));
    }
    ui.same_line();
    if ui.small_button("CSV") {
        actions.push(Action::ExportMeasurements(ExportFormat::Csv));
    }
    ui.text_disabled(format!("in {} with the file's coordinate system", u.describe()));
}

/// The notes: text to edit, fly to, delete.
fn notes_list(ui: &imgui::Ui, s: &AppState, actions: &mut Vec<Action>) {
    if s.notes.list.is_empty() {
        ui.text_disabled("notes: click a point, then Ctrl+A");
        return;
    }
    ui.text("notes");
    for (i, n) in s.notes.list.iter().enumerate() {
        let mut text = n.text.clone();
        ui.set_next_item_width(170.0);
        if ui.input_text(format!("##note{i}"), &mut text).build() {
            actions.push(Action::SetNoteText(i, text));
        }
        ui.same_line();
        if ui.small_button(format!("fly##note{i}")) {
            actions.push(Action::FlyToNote(i));
        }
        ui.same_line();
        if ui.small_button(format!("delete##note{i}")) {
            actions.push(Action::DeleteNote(i));
        }
        if !s.notes.visible.get(i).copied().unwrap_or(true) {
            ui.same_line();
            ui.text_disabled("(hidden)");
        }
    }
    ui.separator();
}

fn camera(ui: &imgui::Ui, s: &AppState, actions: &mut Vec<Action>) {
    ui.separator();
    let cam = &s.nav.camera;
    ui.text("controller (O)");
    for k in [ControllerKind::Orbit, ControllerKind::Fly] {
        ui.same_line();
        let mut current = s.nav.active;
        if ui.radio_button(k.name(), &mut current, k) && k != s.nav.active {
            actions.push(Action::SetController(k));
        }
    }
    let e = s.layers.cloud.to_source(cam.pose.eye);
    ui.text(format!("eye {:.3}, {:.3}, {:.3}", e.x, e.y, e.z));
    ui.text(format!(
        "yaw {:.1} deg  pitch {:.1} deg  up {}  speed {}{}/s",
        cam.pose.yaw_rad.to_degrees(),
        cam.pose.pitch_rad.to_degrees(),
        cam.up,
        si(s.units().across(cam.speed() as f64)).trim_end(),
        s.units().across_suffix()
    ));
    if let pcv_camera::Projection::Orthographic { half_height_m } = cam.projection {
        // What the frame shows across, in the file's units (the local frame is in them).
        let tall = 2.0 * half_height_m as f64;
        let wide = tall * s.aspect() as f64;
        ui.text(format!(
            "orthographic: {}{} x {}{}",
            si(s.units().across(wide)).trim_end(),
            s.units().across_suffix(),
            si(s.units().across(tall)).trim_end(),
            s.units().across_suffix()
        ));
    }
    if let Some(p) = s.nav.pivot() {
        let f = s.layers.cloud.to_source(p);
        ui.text_disabled(format!("pivot {:.3}, {:.3}, {:.3}", f.x, f.y, f.z));
    }
    ui.text_wrapped(crate::app::capture::pose_args(cam, s.layers.cloud.origin));
    if ui.small_button("print + copy (K)") {
        actions.push(Action::PrintPose);
    }
    ui.same_line();
    if ui.small_button("reset (R)") {
        actions.push(Action::Reset);
    }
    ui.same_line();
    if ui.small_button("screenshot (P)") {
        actions.push(Action::Screenshot { with_panel: false });
    }
    ui.text("bookmarks");
    for i in 0..BOOKMARKS {
        ui.same_line();
        let set = s.bookmarks[i].is_some();
        let label = if set { format!("{}##bm", i + 1) } else { format!("-##bm{i}") };
        if ui.small_button(label) && set {
            actions.push(Action::RecallBookmark(i));
        }
        if ui.is_item_hovered() {
            ui.tooltip_text(if set {
                format!("recall bookmark {} (key {})", i + 1, i + 1)
            } else {
                format!("empty: Ctrl+{} stores the view", i + 1)
            });
        }
    }
    if ui.small_button("store") {
        let slot = s.bookmarks.iter().position(|b| b.is_none()).unwrap_or(BOOKMARKS - 1);
        actions.push(Action::StoreBookmark(slot));
    }
    ui.same_line();
    if ui.small_button("save as path file") {
        actions.push(Action::SaveBookmarksAsPath);
    }
    if let Some(p) = &s.path {
        let label = if p.playing { "pause (Space)" } else { "play (Space)" };
        ui.text(format!("flight {:.1} / {:.1} s", p.t_s, p.path.duration_s()));
        ui.same_line();
        if ui.small_button(label) {
            actions.push(Action::TogglePath);
        }
    }
}

fn performance(ui: &imgui::Ui, info: &FrameInfo<'_>) {
    ui.separator();
    let t = info.frame_times;
    let (history, oldest) = t.history();
    let max_ms = t.max_ms().max(1.0);
    ui.plot_lines("##frame_ms", history)
        .values_offset(oldest)
        .scale_min(0.0)
        .scale_max(max_ms * 1.1)
        .graph_size([WRAP_PX - ui.cursor_pos()[0], 48.0])
        .overlay_text(format!("frame ms, last {} frames, max {max_ms:.1}", history.len()))
        .build();
    if !info.stats.passes.is_empty() {
        let passes: Vec<String> = info.stats.passes.iter().map(|p| format!("{} {:.2}", p.name, p.ms)).collect();
        ui.text_wrapped(format!("passes (ms): {}", passes.join(" | ")));
    }
    if !info.gpu_stages.is_empty() {
        let total: f64 = info.gpu_stages.iter().map(|p| p.ms).sum();
        let stages: Vec<String> = info.gpu_stages.iter().map(|p| format!("{} {:.2}", p.name, p.ms)).collect();
        ui.text_wrapped(format!("GPU frame {total:.2} ms: {}", stages.join(" | ")));
    }
    let frame_ms = if t.fps() > 0.0 { t.smoothed_ms() } else { t.last_ms() };
    let points_per_s = if frame_ms > 0.0 { info.points as f64 / (frame_ms * 1e-3) } else { 0.0 };
    ui.text(format!("points {}   {}points/s", group_thousands(info.points), si(points_per_s)));
    ui.text(format!("resolution {} x {} px", info.size_px.0, info.size_px.1));
    match info.frame_target_ms {
        Some(t) if info.render_scale < 1.0 => {
            let (w, h) = crate::app::resolution::scaled_size(info.size_px, info.render_scale);
            ui.text(format!("moving: rendered at {w} x {h} ({:.0}%) to hold {t:.0} ms", info.render_scale * 100.0))
        }
        Some(t) => ui.text(format!("adaptive resolution: full (target {t:.0} ms)")),
        None => ui.text("adaptive resolution: off"),
    }
    ui.text_wrapped(format!("backend {}: {}", info.backend_name, info.backend_description));
    if let Some(note) = info.backend_note {
        ui.text_colored([1.0, 0.8, 0.3, 1.0], format!("note: {note}"));
    }
    ui.text_wrapped(format!("pixels: {}", info.pixel_path));
    ui.text_wrapped(format!("display: {}", info.gl_renderer));
}
