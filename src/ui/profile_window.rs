//! The profile window: the strip's points drawn side on ([`crate::viewer::profile_view`]), with the
//! station and height grid and the measurements over them.
//!
//! How it works: an imgui window (moved and resized by the user; first placed along the bottom of
//! the main view) shows the profile's texture as an image filling the window's content area below
//! one line of figures. When that area's size differs from the image's, it asks for the new size
//! ([`Action::ProfileViewSize`]) and the next frame draws the strip at it. The grid
//! ([`super::marks::section_grid`]) and the measurements ([`super::marks::measurements`]) are
//! projected with the profile frame's `clip_from_world` into the image's rectangle. A click on the
//! image is [`Action::ProfileClick`] at its pixel from the image's top-left (the frame is drawn
//! at the image's size, so image pixels are frame pixels): it picks, and measures while measuring.
use super::FrameInfo;
use crate::app::state::AppState;
use crate::input::Action;
use glam::Vec2;

/// The profile's image as the frontend drew it.
#[derive(Clone, Copy, Debug)]
pub struct ProfileImage {
    pub texture: imgui::TextureId,
    pub size_px: (u32, u32),
    pub clip_from_world: glam::Mat4,
    pub points: u64,
    /// Level of detail: the strip holds only the coarser levels (its point budget).
    pub coarse: bool,
    pub render_ms: f64,
}

/// Lines above the image (the figures).
const HEADER_LINES: f32 = 1.0;

pub fn build(ui: &imgui::Ui, s: &AppState, info: &FrameInfo<'_>, actions: &mut Vec<Action>) {
    let Some(p) = s.profile.as_ref().filter(|p| p.window.is_some()) else { return };
    let display = ui.io().display_size;
    let (w0, h0) = p.window.unwrap_or((400, 200));
    let line = ui.text_line_height_with_spacing();
    ui.window("Profile")
        .position(
            [display[0] * 0.2, display[1] - h0 as f32 - line * (HEADER_LINES + 2.0) - 8.0],
            imgui::Condition::FirstUseEver,
        )
        .size([w0 as f32 + 16.0, h0 as f32 + line * (HEADER_LINES + 2.0)], imgui::Condition::FirstUseEver)
        .bg_alpha(0.95)
        // No scroll bar: one would take width from the image, which would then fit again without it.
        .scroll_bar(false)
        .scrollable(false)
        .build(|| {
            let (_, len) = p.direction();
            let u = s.units();
            let fig = |v: f64| pcv_model::number::readable((v * 1e3).round() / 1e3);
            let timing = info.profile.map_or(String::new(), |im| {
                let coarse = if im.coarse { " (coarser levels: the strip's budget)" } else { "" };
                format!("; {} points{coarse}, drawn in {:.1} ms", super::group_thousands(im.points), im.render_ms)
            });
            ui.text(format!(
                "{}{} long, {}{} wide{timing}",
                fig(u.across(len)),
                u.across_suffix(),
                fig(u.across(p.width)),
                u.across_suffix()
            ));
            if let Some(f) = info.profile_reading {
                ui.text_colored([1.0, 0.85, 0.4, 1.0], format!("reading the strip from the files: {:.0} %", f * 100.0));
            }
            let avail = ui.content_region_avail();
            let want = (avail[0].max(16.0) as u32, (avail[1] - 1.0).max(16.0) as u32);
            if Some(want) != p.window {
                actions.push(Action::ProfileViewSize(want.0, want.1));
            }
            let Some(im) = info.profile else { return };
            let min = ui.cursor_screen_pos();
            let size = [im.size_px.0 as f32, im.size_px.1 as f32];
            // Frames count rows from the top, as imgui's texture coordinates do.
            imgui::Image::new(im.texture, size).build(ui);
            if ui.is_item_clicked() {
                let at = Vec2::from(ui.io().mouse_pos) - Vec2::from(min);
                actions.push(Action::ProfileClick { at_px: at });
            }
            let dl = ui.get_window_draw_list();
            dl.with_clip_rect_intersect(min, [min[0] + size[0], min[1] + size[1]], || {
                super::marks::section_grid(ui, &dl, s, &im.clip_from_world, min, size);
                // Only what lies in the strip (a parcel's outline elsewhere would cross it edge on).
                let in_strip =
                    |m: &pcv_model::measure::Measurement| m.points.iter().all(|&f| p.offset_of(f).abs() <= p.width);
                super::marks::measurements(ui, &dl, s, &im.clip_from_world, min, size, &in_strip);
            });
        });
}
