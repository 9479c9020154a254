//! Marks in the view: the picked point, the notes the surface does not hide (a leader line and their
//! text), the measurements (their vertices joined, an area's ring
//! closed, the first value beside them: the listed ones dimmer, the one being placed with the cursor as
//! its next vertex), the clip boxes' edges (green: kept inside; red: kept outside), the gizmo of the clip box being edited,
//! and level of detail's tiles' boxes (dim when drawn, yellow while refining, red with failed nodes).
//!
//! How it works: points are projected with the shown frame's `clip_from_world` to imgui's screen
//! coordinates (the window's, y down), the clip boxes and the gizmo on the foreground draw list (over
//! everything), the rest on the background draw list: above the points, under the
//! panel and the profile window. A point behind the camera is not drawn, nor a line that has one. While measuring
//! with a point placed, the line follows the point under the cursor, so the value shows before
//! the next click. The gizmo's handles come from [`crate::app::gizmo::handles`] in framebuffer
//! pixels (what the mouse is hit-tested in) and are scaled to imgui's coordinates: arrows, rings and
//! face squares in their axis's colour (x red, y green, z blue), the handle under the cursor or being
//! dragged in yellow and thicker.
use super::FrameInfo;
use crate::app::gizmo::{Axis, Handle, FACE_HALF_PX};
use crate::app::pick::PickedPoint;
use crate::app::state::AppState;
use glam::{Mat4, Vec2, Vec3};

const PICK: [f32; 4] = [1.0, 0.85, 0.2, 1.0];
const MEASURE: [f32; 4] = [0.3, 0.95, 1.0, 1.0];
const MEASURE_DONE: [f32; 4] = [0.55, 0.8, 1.0, 0.85];
const NOTE: [f32; 4] = [1.0, 0.95, 0.6, 1.0];
const NOTE_BOX: [f32; 4] = [0.1, 0.08, 0.02, 0.85];
const SHADOW: [f32; 4] = [0.0, 0.0, 0.0, 0.8];
const CLIP_INSIDE: [f32; 4] = [0.35, 1.0, 0.45, 0.9];
const CLIP_OUTSIDE: [f32; 4] = [1.0, 0.4, 0.35, 0.9];
const AXIS_COLOURS: [[f32; 4]; 3] = [[1.0, 0.3, 0.3, 1.0], [0.35, 0.95, 0.35, 1.0], [0.4, 0.6, 1.0, 1.0]];
const ACTIVE: [f32; 4] = [1.0, 0.9, 0.2, 1.0];
/// Tile boxes: drawn whole, still refining, with nodes that failed.
const TILE_DONE: [f32; 4] = [0.6, 0.7, 0.85, 0.45];
const TILE_LOADING: [f32; 4] = [1.0, 0.85, 0.3, 0.8];
const TILE_FAILED: [f32; 4] = [1.0, 0.35, 0.3, 0.9];

/// The gizmo of the clip box being edited: rings, arrows with heads, face squares.
fn gizmo(ui: &imgui::Ui, s: &AppState, info: &FrameInfo<'_>) {
    let Some(h) = s.gizmo_handles(info.size_px) else { return };
    let display = ui.io().display_size;
    // Framebuffer pixels → imgui's coordinates.
    let k = Vec2::new(display[0] / info.size_px.0.max(1) as f32, display[1] / info.size_px.1.max(1) as f32);
    let at = |p: Vec2| (p * k).to_array();
    let active = s.gizmo.drag.as_ref().map(|d| d.handle).or(s.gizmo.hover);
    let look = |handle: Handle| {
        let on = active == Some(handle);
        (if on { ACTIVE } else { AXIS_COLOURS[handle.axis().index()] }, if on { 3.5 } else { 2.0 })
    };
    let dl = ui.get_foreground_draw_list();
    for axis in Axis::ALL {
        let Some(ring) = &h.rings[axis.index()] else { continue };
        let (colour, width) = look(Handle::Turn(axis));
        // Closed: back to the first point.
        let points: Vec<[f32; 2]> = ring.iter().chain(ring.first()).map(|&p| at(p)).collect();
        dl.add_polyline(points.clone(), SHADOW).thickness(width + 2.0).build();
        dl.add_polyline(points, colour).thickness(width).build();
    }
    for axis in Axis::ALL {
        let Some((from, to)) = h.arrows[axis.index()] else { continue };
        let (colour, width) = look(Handle::Move(axis));
        let dir = (to - from).normalize_or_zero();
        let (back, side) = (to - dir * 12.0, dir.perp() * 5.0);
        dl.add_line(at(from), at(back), SHADOW).thickness(width + 2.0).build();
        dl.add_line(at(from), at(back), colour).thickness(width).build();
        dl.add_triangle(at(to), at(back + side), at(back - side), colour).filled(true).build();
    }
    for axis in Axis::ALL {
        for (i, positive) in [(0, false), (1, true)] {
            let Some(p) = h.faces[axis.index()][i] else { continue };
            let (colour, width) = look(Handle::Face { axis, positive });
            let r = Vec2::splat(FACE_HALF_PX);
            dl.add_rect(at(p - r), at(p + r), colour).filled(true).build();
            dl.add_rect(at(p - r), at(p + r), SHADOW).thickness(width * 0.5).build();
        }
    }
    dl.add_circle(at(h.centre_px), 3.0, [1.0, 1.0, 1.0, 1.0]).filled(true).build();
}

/// The 12 edges of each clip box, from its corners in the file's coordinates to the view's.
fn clip_boxes(ui: &imgui::Ui, s: &AppState, info: &FrameInfo<'_>) {
    let display = ui.io().display_size;
    let dl = ui.get_foreground_draw_list();
    for b in &s.layers.filter.boxes {
        let corner = |i: usize| {
            let sign = glam::DVec3::new(
                if i & 1 == 0 { -1.0 } else { 1.0 },
                if i & 2 == 0 { -1.0 } else { 1.0 },
                if i & 4 == 0 { -1.0 } else { 1.0 },
            );
            let file = b.center + b.rotation * (sign * b.half_extent);
            s.layers.cloud.from_source(file).and_then(|local| to_screen(&info.clip_from_world, local, display))
        };
        let c: Vec<Option<Vec2>> = (0..8).map(corner).collect();
        let colour = match b.keep {
            pcv_io::filter::Keep::Inside => CLIP_INSIDE,
            pcv_io::filter::Keep::Outside => CLIP_OUTSIDE,
        };
        box_edges(&dl, &c, |dl, a, b| {
            dl.add_line(a, b, SHADOW).thickness(3.0).build();
            dl.add_line(a, b, colour).thickness(1.5).build();
        });
    }
}

/// Level of detail's tiles, each its points' box, when there are several and the Files section shows
/// them: dim when the tile is drawn as far as the view asks, yellow while its selected nodes still
/// come, red when some of its nodes failed. Under the panel (the background draw list).
fn tile_boxes(ui: &imgui::Ui, s: &AppState, info: &FrameInfo<'_>) {
    if s.lod_tiles.len() < 2 || !s.show_tile_boxes {
        return;
    }
    let display = ui.io().display_size;
    let dl = ui.get_background_draw_list();
    for t in &s.lod_tiles {
        let corner = |i: usize| {
            let file = glam::DVec3::new(
                if i & 1 == 0 { t.min.x } else { t.max.x },
                if i & 2 == 0 { t.min.y } else { t.max.y },
                if i & 4 == 0 { t.min.z } else { t.max.z },
            );
            s.layers.cloud.from_source(file).and_then(|local| to_screen(&info.clip_from_world, local, display))
        };
        let c: Vec<Option<Vec2>> = (0..8).map(corner).collect();
        let colour = if t.failed_nodes > 0 || t.stopped.is_some() {
            TILE_FAILED
        } else if t.drawn_points < t.selected_points {
            TILE_LOADING
        } else {
            TILE_DONE
        };
        box_edges(&dl, &c, |dl, a, b| dl.add_line(a, b, colour).thickness(1.0).build());
    }
}

/// The 12 edges of a box whose 8 corners (bit 0: x, bit 1: y, bit 2: z high) are on screen at `c`,
/// each drawn by `line`; an edge with a corner behind the camera is left out.
fn box_edges(
    dl: &imgui::DrawListMut<'_>,
    c: &[Option<Vec2>],
    line: impl Fn(&imgui::DrawListMut<'_>, [f32; 2], [f32; 2]),
) {
    for (i, j) in [(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7)] {
        if let (Some(a), Some(b)) = (c[i], c[j]) {
            line(dl, a.to_array(), b.to_array());
        }
    }
}

/// Where `p` appears on screen (imgui coordinates), if in front of the camera.
pub fn to_screen(clip_from_world: &Mat4, p: Vec3, display: [f32; 2]) -> Option<Vec2> {
    let c = *clip_from_world * p.extend(1.0);
    if c.w.is_nan() || c.w <= 0.0 {
        return None;
    }
    let ndc = Vec2::new(c.x / c.w, c.y / c.w);
    if !ndc.is_finite() {
        return None;
    }
    Some(Vec2::new((ndc.x + 1.0) * 0.5 * display[0], (1.0 - ndc.y) * 0.5 * display[1]))
}

pub fn draw(ui: &imgui::Ui, s: &AppState, info: &FrameInfo<'_>) {
    tile_boxes(ui, s, info);
    clip_boxes(ui, s, info);
    gizmo(ui, s, info);
    let display = ui.io().display_size;
    let dl = ui.get_background_draw_list();
    let at = |p: &PickedPoint| to_screen(&info.clip_from_world, p.local, display);
    if let Some(p) = s.picked.as_ref().and_then(at) {
        dl.add_circle(p.to_array(), 6.0, SHADOW).thickness(3.0).build();
        dl.add_circle(p.to_array(), 6.0, PICK).thickness(1.5).build();
    }
    measurements(ui, &dl, s, &info.clip_from_world, [0.0, 0.0], display, &|_| true);
    notes(ui, &dl, s, info, display);
    profile_grid(ui, &dl, s, info, display);
}

/// The measurements seen with `clip_from_world` in the rectangle at `min` of `size`: the listed ones
/// dimmer, then the one being placed, with the point under the cursor as its next vertex.
pub fn measurements(
    ui: &imgui::Ui,
    dl: &imgui::DrawListMut<'_>,
    s: &AppState,
    clip_from_world: &Mat4,
    min: [f32; 2],
    size: [f32; 2],
    keep: &dyn Fn(&pcv_model::measure::Measurement) -> bool,
) {
    let up = s.nav.camera.up.vector().as_dvec3();
    let u = s.units();
    let at = |l: Vec3| to_screen(clip_from_world, l, size).map(|v| v + Vec2::from(min));
    for m in s.measure.done.iter().filter(|m| keep(m)) {
        let local: Vec<Option<Vec2>> = m.points.iter().map(|&f| s.layers.cloud.from_source(f).and_then(at)).collect();
        measurement(ui, dl, m, &local, MEASURE_DONE, up, &u);
    }
    let mut current = s.measure.current();
    let mut on_screen: Vec<Option<Vec2>> = s.measure.points.iter().map(|p| at(p.local)).collect();
    if s.measure.active && s.measure.moving.is_none() && current.takes_more() && !current.points.is_empty() {
        if let Some(h) = &s.hover {
            current.points.push(h.file);
            on_screen.push(at(h.local));
        }
    }
    if keep(&current) {
        measurement(ui, dl, &current, &on_screen, MEASURE, up, &u);
    }
}

/// The profile's grid over the main view (a profile drawn there).
fn profile_grid(ui: &imgui::Ui, dl: &imgui::DrawListMut<'_>, s: &AppState, info: &FrameInfo<'_>, display: [f32; 2]) {
    if s.profile.as_ref().is_some_and(|p| p.window.is_none()) {
        section_grid(ui, dl, s, &info.clip_from_world, [0.0, 0.0], display);
    }
}

/// The profile's grid in the rectangle at `min` of `size` (pixels) whose frame `clip_from_world`
/// drew: stations along the section (from its start) and heights, at round steps in the file's units,
/// labelled near the bottom and the right.
pub fn section_grid(
    ui: &imgui::Ui,
    dl: &imgui::DrawListMut<'_>,
    s: &AppState,
    clip_from_world: &Mat4,
    min: [f32; 2],
    size: [f32; 2],
) {
    let Some(p) = &s.profile else { return };
    let (dir, len) = p.direction();
    let u = s.units();
    let at = |station: f64, z: f64| {
        let f = p.a + dir * station;
        s.layers
            .cloud
            .from_source(glam::DVec3::new(f.x, f.y, z))
            .and_then(|l| to_screen(clip_from_world, l, size))
            .map(|v| v + Vec2::from(min))
    };
    let (Some(o), Some(x1), Some(y1)) = (at(0.0, p.a.z), at(len, p.a.z), at(0.0, p.a.z + len.max(1e-9))) else {
        return;
    };
    let (px_per_station, px_per_z) = ((x1.x - o.x) as f64 / len, (o.y - y1.y) as f64 / len.max(1e-9));
    if !(px_per_station.abs() > 1e-9 && px_per_z.abs() > 1e-9) {
        return;
    }
    let (left, top, right, bottom) = (min[0], min[1], min[0] + size[0], min[1] + size[1]);
    let station_at = |x: f32| (x - o.x) as f64 / px_per_station;
    let z_at = |y: f32| p.a.z + (o.y - y) as f64 / px_per_z;
    let (s0, s1) = (station_at(left).min(station_at(right)), station_at(left).max(station_at(right)));
    let (z0, z1) = (z_at(bottom).min(z_at(top)), z_at(bottom).max(z_at(top)));
    const GRID: [f32; 4] = [1.0, 1.0, 1.0, 0.18];
    const LABEL: [f32; 4] = [1.0, 1.0, 1.0, 0.8];
    // Steps: round lengths of the shown unit, about 120 px apart.
    let step_of = |per_px: f64, to_shown: &dyn Fn(f64) -> f64| {
        let shown = super::scale::round_length(to_shown(120.0 / per_px.abs()));
        shown / to_shown(1.0)
    };
    let ds = step_of(px_per_station, &|v| u.across(v));
    let dz = step_of(px_per_z, &|v| u.up(v));
    if !(ds > 0.0 && dz > 0.0) || (s1 - s0) / ds > 200.0 || (z1 - z0) / dz > 200.0 {
        return;
    }
    // In the main view the labels keep clear of the scale bar, the axes and the north arrow.
    let main = min == [0.0, 0.0];
    let (label_row, label_right) = if main { (bottom - 70.0, right - 90.0) } else { (bottom - 18.0, right - 4.0) };
    let mut st = (s0 / ds).ceil() * ds;
    while st <= s1 {
        let x = o.x + (st * px_per_station) as f32;
        dl.add_line([x, top], [x, bottom], GRID).thickness(1.0).build();
        // "+ 0.0": no "-0".
        let label =
            format!("{}{}", pcv_model::number::readable((u.across(st) * 1e6).round() / 1e6 + 0.0), u.across_suffix());
        if x < label_right {
            dl.add_text([x + 3.0, label_row], LABEL, &label);
        }
        st += ds;
    }
    let mut z = (z0 / dz).ceil() * dz;
    while z <= z1 {
        let y = o.y - ((z - p.a.z) * px_per_z) as f32;
        dl.add_line([left, y], [right, y], GRID).thickness(1.0).build();
        let label = format!("{}{}", pcv_model::number::readable((u.up(z) * 1e6).round() / 1e6 + 0.0), u.up_suffix());
        let w = ui.calc_text_size(&label)[0];
        let x = if main { right - w - 80.0 } else { right - w - 4.0 };
        if y < label_row - 20.0 && y - 16.0 > top {
            dl.add_text([x, y - 16.0], LABEL, &label);
        }
        z += dz;
    }
}

/// The notes the surface does not hide: a ring at the point, a leader line up and the text in a box.
fn notes(ui: &imgui::Ui, dl: &imgui::DrawListMut<'_>, s: &AppState, info: &FrameInfo<'_>, display: [f32; 2]) {
    for (n, _) in s.notes.list.iter().zip(&s.notes.visible).filter(|(_, v)| **v) {
        let Some(p) = s.layers.cloud.from_source(n.file).and_then(|l| to_screen(&info.clip_from_world, l, display))
        else {
            continue;
        };
        let top = p - Vec2::new(0.0, 36.0);
        dl.add_line(p.to_array(), top.to_array(), SHADOW).thickness(3.0).build();
        dl.add_line(p.to_array(), top.to_array(), NOTE).thickness(1.5).build();
        dl.add_circle(p.to_array(), 4.0, SHADOW).thickness(3.0).build();
        dl.add_circle(p.to_array(), 4.0, NOTE).thickness(1.5).build();
        let size = ui.calc_text_size(&n.text);
        let at = top - Vec2::new(size[0] * 0.5, size[1] + 2.0);
        boxed_text(dl, at, size, &n.text, NOTE, NOTE_BOX, 4.0);
    }
}

/// `text` of `size` at `at` (its top-left) on a filled box `pad` pixels larger, rounded by `pad`.
fn boxed_text(
    dl: &imgui::DrawListMut<'_>,
    at: Vec2,
    size: [f32; 2],
    text: &str,
    colour: [f32; 4],
    fill: [f32; 4],
    pad: f32,
) {
    dl.add_rect((at - Vec2::splat(pad)).to_array(), (at + Vec2::from(size) + Vec2::splat(pad)).to_array(), fill)
        .filled(true)
        .rounding(pad)
        .build();
    dl.add_text(at.to_array(), colour, text);
}

/// One measurement: its vertices joined (an area's ring closed), dots at the vertices, and its first
/// value at its last vertex (an area's at its centre).
fn measurement(
    ui: &imgui::Ui,
    dl: &imgui::DrawListMut<'_>,
    m: &pcv_model::measure::Measurement,
    screen: &[Option<Vec2>],
    colour: [f32; 4],
    up: glam::DVec3,
    u: &pcv_io::crs_model::Units,
) {
    use pcv_model::measure::MeasureKind;
    let n = screen.len();
    let closed = m.kind == MeasureKind::Area && n >= 3;
    let segments = if closed { n } else { n.saturating_sub(1) };
    for i in 0..segments {
        if let (Some(a), Some(b)) = (screen[i], screen[(i + 1) % n]) {
            dl.add_line(a.to_array(), b.to_array(), SHADOW).thickness(4.0).build();
            dl.add_line(a.to_array(), b.to_array(), colour).thickness(2.0).build();
        }
    }
    for p in screen.iter().flatten() {
        dl.add_circle(p.to_array(), 4.5, SHADOW).filled(true).build();
        dl.add_circle(p.to_array(), 3.5, colour).filled(true).build();
    }
    let Some(label) = m.headline(up, u) else { return };
    let shown: Vec<Vec2> = screen.iter().flatten().copied().collect();
    let Some(&last) = shown.last() else { return };
    let anchor = if closed { shown.iter().copied().sum::<Vec2>() / shown.len() as f32 } else { last };
    let size = ui.calc_text_size(&label);
    let at = anchor + Vec2::new(8.0, -size[1] - 4.0);
    boxed_text(dl, at, size, &label, colour, SHADOW, 3.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_project_to_window_coordinates_and_behind_is_hidden() {
        let cam = pcv_camera::Camera::for_cloud(pcv_io::Bounds::EMPTY, true);
        let m = cam.clip_from_world(200, 100);
        // The point the prototype camera looks at is the window's centre.
        assert!(to_screen(&m, Vec3::ZERO, [200.0, 100.0]).unwrap().abs_diff_eq(Vec2::new(100.0, 50.0), 1e-4));
        // Up is up on screen (y down).
        assert!(to_screen(&m, Vec3::new(0.0, 0.0, 0.5), [200.0, 100.0]).unwrap().y < 50.0);
        assert_eq!(to_screen(&m, Vec3::new(-10.0, 0.0, 0.0), [200.0, 100.0]), None);
    }
}
