//! `--trace`: one JSON line per frame drawn, for tests and scripted runs — the camera, the controller,
//! the picked point and the measurement, the layers, the clip boxes (file coordinates; rotation as a
//! quaternion x, y, z, w) and the gizmo (the box edited, the handle hovered and dragged, its handles on
//! screen in framebuffer pixels), the look, the messages, and level of detail's status, the render
//! scale (adaptive resolution) and the time since the window opened.
use crate::app::capture::pose_args;
use crate::app::gizmo::{Axis, Handle};
use crate::app::pick::{distance, PickedPoint};
use crate::app::state::AppState;
use pcv_lod::LodScene;
use std::io::Write;
use std::path::PathBuf;

/// The open trace file.
pub struct Trace {
    path: PathBuf,
    /// When the trace was opened: each line's `time_s` counts from here.
    start: std::time::Instant,
    out: std::io::BufWriter<std::fs::File>,
}

impl Trace {
    /// Creates `path` (`None`: no trace).
    pub fn create(path: Option<&PathBuf>) -> Result<Option<Trace>, super::ViewerError> {
        let Some(p) = path else { return Ok(None) };
        let file = std::fs::File::create(p).map_err(|source| super::ViewerError::Trace { path: p.clone(), source })?;
        Ok(Some(Trace { path: p.clone(), start: std::time::Instant::now(), out: std::io::BufWriter::new(file) }))
    }

    /// Writes frame `frame`'s line (`rendered`: it rendered the points, at `render_scale` of the
    /// framebuffer's size; `points`: how many are uploaded).
    pub fn write(
        &mut self,
        s: &AppState,
        frame: u64,
        rendered: bool,
        render_scale: f32,
        points: u64,
        lod: Option<&LodScene>,
    ) -> Result<(), super::ViewerError> {
        let mut line = trace_line(s, frame, rendered, points);
        line["render_scale"] = serde_json::json!(render_scale);
        line["time_s"] = serde_json::json!(self.start.elapsed().as_secs_f64());
        if let Some(l) = lod {
            let st = l.status();
            line["lod"] = serde_json::json!({
                "complete": st.complete, "selected_nodes": st.selected_nodes, "drawn_nodes": st.drawn_nodes,
                "drawn_points": st.drawn_points, "resident_points": st.resident_points, "loading": st.loading,
                "budget_hit": st.budget_hit, "spacing_m": st.spacing_m, "evictions": st.evictions,
                "stale_nodes": st.stale_nodes,
                "tiles": l.tile_states().iter().map(|t| serde_json::json!({
                    "name": t.name, "points": t.points, "min": t.min.to_array(), "max": t.max.to_array(),
                    "selected_points": t.selected_points, "drawn_points": t.drawn_points,
                    "failed_nodes": t.failed_nodes,
                })).collect::<Vec<_>>(),
            });
        }
        writeln!(self.out, "{line}")
            .and_then(|_| self.out.flush())
            .map_err(|source| super::ViewerError::Trace { path: self.path.clone(), source })
    }
}

/// Every measurement (listed, then the current one if complete) with its vertices (file coordinates)
/// and values in the shown units.
fn measurements(s: &AppState) -> serde_json::Value {
    let (up, u) = (s.nav.camera.up.vector().as_dvec3(), s.units());
    let all: Vec<serde_json::Value> = s
        .measure
        .all()
        .iter()
        .map(|m| {
            let values: serde_json::Map<String, serde_json::Value> =
                m.values(up, &u).into_iter().map(|v| (v.name.to_string(), serde_json::json!(v.value))).collect();
            serde_json::json!({
                "kind": m.kind.name(),
                "points": m.points.iter().map(|p| p.to_array()).collect::<Vec<_>>(),
                "values": values,
            })
        })
        .collect();
    serde_json::json!({"active": s.measure.active, "kind": s.measure.kind.name(), "placing": s.measure.points.len(), "all": all})
}

/// One `--trace` line: what a test needs to know about the frame just drawn.
fn trace_line(s: &AppState, frame: u64, rendered: bool, points: u64) -> serde_json::Value {
    let point = |p: &PickedPoint| {
        serde_json::json!({
            "file": [p.file.x, p.file.y, p.file.z],
            "local": [p.local.x, p.local.y, p.local.z],
            "index": p.index,
            "source": p.source.as_ref().map(|s| s.0.clone()),
            "intensity": p.intensity,
            "classification": p.classification,
            "rgb": p.rgb,
            "snapped": p.snapped,
        })
    };
    let measure = match s.measure.points.as_slice() {
        [a, b] => {
            let u = s.units();
            let d = distance(a, b, s.nav.camera.up.vector(), &u);
            serde_json::json!({
                "total": d.total, "horizontal": d.horizontal, "vertical": d.vertical,
                "unit": u.horizontal_shown().symbol(), "vertical_unit": u.vertical_shown().symbol(),
                "units_known": u.known || u.in_metres,
            })
        }
        _ => serde_json::Value::Null,
    };
    let clip_boxes: Vec<serde_json::Value> = s
        .layers
        .filter
        .boxes
        .iter()
        .map(|b| {
            serde_json::json!({
                "center": b.center.to_array(),
                "half_extent": b.half_extent.to_array(),
                "rotation": b.rotation.to_array(),
                "keep": b.keep,
            })
        })
        .collect();
    let gizmo = s.gizmo.selected.map(|i| {
        let handles = s.gizmo_handles(s.size_px).map(|h| {
            let mut m = serde_json::Map::new();
            m.insert("centre".into(), serde_json::json!(h.centre_px.to_array()));
            for axis in Axis::ALL {
                let i = axis.index();
                if let Some((from, to)) = h.arrows[i] {
                    m.insert(Handle::Move(axis).name(), serde_json::json!([from.to_array(), to.to_array()]));
                }
                for (k, positive) in [(0, false), (1, true)] {
                    if let Some(p) = h.faces[i][k] {
                        m.insert(Handle::Face { axis, positive }.name(), serde_json::json!(p.to_array()));
                    }
                }
                if let Some(ring) = &h.rings[i] {
                    let points: Vec<[f32; 2]> = ring.iter().map(|p| p.to_array()).collect();
                    m.insert(Handle::Turn(axis).name(), serde_json::json!(points));
                }
            }
            serde_json::Value::Object(m)
        });
        serde_json::json!({
            "selected": i,
            "hover": s.gizmo.hover.map(Handle::name),
            "drag": s.gizmo.drag.as_ref().map(|d| d.handle.name()),
            "handles": handles,
        })
    });
    serde_json::json!({
        "frame": frame,
        "rendered": rendered,
        "camera": pose_args(&s.nav.camera, s.layers.cloud.origin),
        "eye_local": s.nav.camera.pose.eye.to_array(),
        // File coordinates = local + origin (a streamed cloud's origin is its files' bounds' centre).
        "origin": s.layers.cloud.origin.to_array(),
        "yaw_deg": s.nav.camera.pose.yaw_rad.to_degrees(),
        "pitch_deg": s.nav.camera.pose.pitch_rad.to_degrees(),
        "up": s.nav.camera.up.name(),
        "controller": s.nav.active.name(),
        "projection": s.nav.camera.projection,
        "mouselook": s.mouselook,
        "pivot": s.nav.pivot().map(|p| p.to_array()),
        "picked": s.picked.as_ref().map(point),
        "measure": measure,
        "measurements": measurements(s),
        "profile": s.profile.as_ref().map(|p| serde_json::json!({"a": p.a.to_array(), "b": p.b.to_array(), "width": p.width, "window_px": p.window})),
        "notes": s.notes.list.iter().zip(&s.notes.visible).map(|(n, v)| serde_json::json!({"text": n.text, "file": n.file.to_array(), "visible": v})).collect::<Vec<_>>(),
        "layers": s.layers.layers.iter().map(|l| serde_json::json!({"label": l.label, "points": l.points.end - l.points.start, "visible": l.visible})).collect::<Vec<_>>(),
        "clip_boxes": clip_boxes,
        "gizmo": gizmo,
        "points": points,
        "mode": s.mode.name(),
        "point_size": s.look.point_size.to_string(),
        "point_shape": s.look.shape.to_string(),
        "quality": s.look.quality.to_string(),
        "edl": s.look.edl.map(|e| [e.strength, e.radius_px]),
        "background": s.look.background.to_string(),
        "color": s.color_mode.name(),
        "loading": s.loader.is_some(),
        "help": s.ui.help,
        "panel": s.ui.panel,
        "messages": s.messages.list.iter().map(|m| m.text.clone()).collect::<Vec<_>>(),
    })
}
