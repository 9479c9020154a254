//! What a picture needs to be read on its own: a scale bar, a north arrow and an axis gizmo.
//!
//! How it works: the scale bar (bottom left) is a round length — 1, 2 or 5 times a power of ten of the
//! shown unit — about [`BAR_PX`] long at the frame's scale: exact at every depth in an orthographic
//! view; in perspective, at the depth of the framed cloud's centre, marked `~` (the font has no `≈`). The north arrow (top
//! right) is drawn for clouds with a coordinate system (projected, or geographic shown in its local
//! east-north-up frame): grid north, +y of the files' coordinates, projected through the frame's
//! `clip_from_world` from the view's centre; it is left out when the view looks along north. The axis
//! gizmo (bottom right) turns the x, y and z axes by the view's rotation (x red, y green, z blue; an
//! axis pointing away from the viewer dimmer). All three are drawn by the overlay, so they are in the
//! window and in its screenshots with the panel (Shift+P).
use super::FrameInfo;
use crate::app::state::AppState;
use glam::{Vec2, Vec3};

/// The scale bar's target length on screen.
pub const BAR_PX: f32 = 130.0;
const INK: [f32; 4] = [1.0, 1.0, 1.0, 0.95];
const SHADOW: [f32; 4] = [0.0, 0.0, 0.0, 0.75];
const AXES: [[f32; 4]; 3] = [[1.0, 0.35, 0.35, 1.0], [0.4, 0.95, 0.4, 1.0], [0.45, 0.65, 1.0, 1.0]];

pub use pcv_model::number::round_length;

/// The screen direction (imgui's, y down) of grid north at the view's centre, if the view does not
/// look along it.
pub fn north_on_screen(clip_from_world: &glam::Mat4, centre: Vec3, step: f32) -> Option<Vec2> {
    let to_ndc = |p: Vec3| {
        let c = *clip_from_world * p.extend(1.0);
        (c.w > 0.0).then(|| Vec2::new(c.x / c.w, -c.y / c.w))
    };
    let d = to_ndc(centre + Vec3::Y * step)? - to_ndc(centre)?;
    (d.length() > 1e-4).then(|| d.normalize())
}

/// Draws the scale bar (bottom left), the north arrow (top right) and the axes (bottom right) inside
/// `area` (x0, y0, x1, y1: the part of the window no docked window covers).
pub fn draw(ui: &imgui::Ui, s: &AppState, info: &FrameInfo<'_>, area: [f32; 4]) {
    let display = ui.io().display_size;
    let dl = ui.get_foreground_draw_list();
    let cam = &s.nav.camera;
    let b = cam.basis();
    let u = s.units();
    // World units a screen coordinate spans at the framed box's depth (in perspective).
    let depth = (cam.frame_box.center() - cam.pose.eye).dot(b.forward).max(cam.frame_box.radius() * 1e-3).max(1e-6);
    let per_coord = cam.units_per_px(depth, display[1].max(1.0) as u32) as f64;
    let label_of = |v: f64| {
        format!("{}{}{}", if cam.is_ortho() { "" } else { "~ " }, pcv_model::number::readable(v), u.across_suffix())
    };
    if per_coord.is_finite() && per_coord > 0.0 {
        let shown_per_coord = u.across(per_coord);
        let length = round_length(shown_per_coord * BAR_PX as f64);
        let px = (length / shown_per_coord) as f32;
        if px.is_finite() && px > 8.0 {
            let (x0, y) = (area[0] + 16.0, area[3] - 22.0);
            let (a, z) = ([x0, y], [x0 + px, y]);
            dl.add_line(a, z, SHADOW).thickness(5.0).build();
            dl.add_line(a, z, INK).thickness(2.0).build();
            for x in [x0, x0 + px * 0.5, x0 + px] {
                let h = if x == x0 + px * 0.5 { 4.0 } else { 7.0 };
                dl.add_line([x, y - h], [x, y + 1.0], INK).thickness(2.0).build();
            }
            let text = label_of(length);
            let size = ui.calc_text_size(&text);
            let at = [x0 + px * 0.5 - size[0] * 0.5, y - 10.0 - size[1]];
            dl.add_rect([at[0] - 3.0, at[1] - 1.0], [at[0] + size[0] + 3.0, at[1] + size[1] + 1.0], SHADOW)
                .filled(true)
                .rounding(3.0)
                .build();
            dl.add_text(at, INK, &text);
        }
    }
    // North: for clouds placed on the Earth.
    if s.layers.cloud.crs().is_some() {
        let centre = cam.pose.eye + b.forward * depth;
        if let Some(dir) = north_on_screen(&info.clip_from_world, centre, cam.frame_box.radius().max(1e-3) * 0.05) {
            let c = Vec2::new(area[2] - 40.0, area[1] + 70.0);
            let (tip, tail) = (c + dir * 22.0, c - dir * 22.0);
            let side = dir.perp() * 8.0;
            dl.add_line(tail.to_array(), tip.to_array(), SHADOW).thickness(5.0).build();
            dl.add_line(tail.to_array(), tip.to_array(), INK).thickness(2.0).build();
            dl.add_triangle(
                tip.to_array(),
                (tip - dir * 12.0 + side).to_array(),
                (tip - dir * 12.0 - side).to_array(),
                INK,
            )
            .filled(true)
            .build();
            let n = tip + dir * 12.0 - Vec2::new(4.0, 7.0);
            dl.add_text(n.to_array(), INK, "N");
        }
    }
    // Axes: the view's rotation of x, y, z.
    let view = cam.view_from_world();
    let origin = Vec2::new(area[2] - 46.0, area[3] - 46.0);
    let mut axes: Vec<(f32, usize, Vec3)> =
        [Vec3::X, Vec3::Y, Vec3::Z].iter().enumerate().map(|(i, a)| (0.0, i, view.transform_vector3(*a))).collect();
    // Far ones first, so the near ones draw over them.
    for a in &mut axes {
        a.0 = a.2.z;
    }
    axes.sort_by(|p, q| p.0.total_cmp(&q.0));
    for (_, i, v) in axes {
        let end = origin + Vec2::new(v.x, -v.y) * 28.0;
        let mut colour = AXES[i];
        if v.z < -0.3 {
            colour[3] = 0.45;
        }
        dl.add_line(origin.to_array(), end.to_array(), SHADOW).thickness(4.0).build();
        dl.add_line(origin.to_array(), end.to_array(), colour).thickness(2.0).build();
        dl.add_text((end + Vec2::new(-3.0, -7.0)).to_array(), colour, ["x", "y", "z"][i]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_lengths_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(round_length(137.0), 100.0);
        assert_eq!(round_length(250.0), 200.0);
        assert_eq!(round_length(0.73), 0.5);
        assert_eq!(round_length(5.0), 5.0);
        assert_eq!(round_length(19.99), 10.0);
        assert_eq!(round_length(0.0), 0.0);
        assert_eq!(round_length(f64::NAN), 0.0);
    }

    #[test]
    fn north_points_up_in_a_top_view_and_is_absent_looking_north() {
        let b = pcv_io::Bounds { min: Vec3::new(-50.0, -50.0, 0.0), max: Vec3::new(50.0, 50.0, 10.0) };
        let mut cam = pcv_camera::Camera::for_cloud(b, false);
        cam.set_view(pcv_camera::View::Top, 1.5);
        let m = cam.clip_from_world(300, 200);
        let d = north_on_screen(&m, Vec3::ZERO, 1.0).unwrap();
        assert!(d.abs_diff_eq(Vec2::new(0.0, -1.0), 1e-4), "up the screen: {d}");
        // Looking along +y, level: north is straight ahead.
        cam.pose =
            pcv_camera::Pose { eye: Vec3::new(0.0, -200.0, 5.0), yaw_rad: std::f32::consts::FRAC_PI_2, pitch_rad: 0.0 };
        let m = cam.clip_from_world(300, 200);
        assert!(north_on_screen(&m, Vec3::new(0.0, 0.0, 5.0), 1.0).is_none());
    }
}
