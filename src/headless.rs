//! One frame with no window and no GL (`pcv render`): the rasterizer renders into host memory.
use crate::camera::FlyCamera;
use crate::image_io::Frame;
use crate::render::look::Look;
use crate::render::{FrameParams, FrameStats, Rasterizer, RenderError, RenderMode, Target};

/// Renders one `width × height` frame of the uploaded points from `camera` in `mode` with `look`
/// (`spacing_m`: the cloud's point spacing, for adaptive point sizes).
pub fn render_frame(
    rasterizer: &mut dyn Rasterizer,
    camera: &FlyCamera,
    width_px: u32,
    height_px: u32,
    mode: RenderMode,
    look: &Look,
    spacing_m: f32,
) -> Result<(Frame, FrameStats), RenderError> {
    let frame = FrameParams::new(camera.clip_from_world(width_px, height_px), width_px, height_px)
        .with_mode(mode)
        .with_look(*look)
        .with_depth_range(camera.depth.near, camera.depth.far)
        .with_spacing(spacing_m);
    let mut pixels = vec![0u32; frame.num_pixels()];
    let stats = rasterizer.render(&frame, Target::Host(&mut pixels))?;
    Ok((Frame::new(width_px, height_px, pixels), stats))
}
