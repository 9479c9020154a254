//! One frame with no window and no GL (`pcv render`): the rasterizer renders into host memory.
use crate::camera::Camera;
use crate::image_io::Frame;
use crate::render::{FrameParams, FrameStats, Rasterizer, RenderError, RenderMode, Target};

/// Renders one `width × height` frame of the uploaded points from `camera` in `mode`.
pub fn render_frame(
    rasterizer: &mut dyn Rasterizer,
    camera: &Camera,
    width_px: u32,
    height_px: u32,
    mode: RenderMode,
) -> Result<(Frame, FrameStats), RenderError> {
    let frame = FrameParams::new(camera.clip_from_world(width_px, height_px), width_px, height_px).with_mode(mode);
    let mut pixels = vec![0u32; frame.num_pixels()];
    let stats = rasterizer.render(&frame, Target::Host(&mut pixels))?;
    Ok((Frame::new(width_px, height_px, pixels), stats))
}
