//! One frame on the screen: the pixel surface, rendering into it, and showing it.
//! The surface has the framebuffer's size; a frame rendered below it (adaptive resolution) uses its
//! bottom-left part, so changing the render scale makes no new GL objects and no new registration.
//!
//! How it works: [`Surface`] is the pixel surface of the current framebuffer size and, on the CUDA
//! backend, the registration of its pixel buffer with CUDA. [`Surface::render`] renders a frame into
//! it: the CPU backend into a host buffer then copied straight into the surface's texture; the CUDA
//! backend into the pixel buffer, mapped for the duration of the render and unmapped before GL reads
//! it. Where CUDA cannot register the GL buffer (the GL driver is not NVIDIA's: Mesa, a remote X
//! server), the CUDA backend renders into host memory and takes the CPU backend's path, and the panel
//! says why. The surface keeps the last rendered frame, so the panel can be redrawn over it without
//! rendering the points again. On the CUDA backend, events around the map and the unmap time them on the GPU
//! ([`Surface::cuda_stages`]). Fields drop in declaration order: the registration is released before
//! the buffer it names is deleted.
use super::ViewerError;
use crate::display::blit::PixelSurface;
use pcv_render::cuda::interop::GlBufferRegistration;
use pcv_render::{FrameParams, FrameStats, PassTime, Rasterizer, RenderError, Target, CLEAR_COLOR};
use std::rc::Rc;

/// The pixel surface of the current size.
pub struct Surface {
    /// CUDA events around mapping and unmapping the pixel buffer (interop only).
    events: Option<[cudarc::driver::CudaEvent; 4]>,
    registration: Option<GlBufferRegistration>,
    pub pixels: PixelSurface,
    /// The CPU backend's frame (empty on the CUDA backend).
    host_px: Vec<u32>,
    /// The last render's CUDA-side stage times: mapping and unmapping the pixel buffer.
    pub cuda_stages: Vec<PassTime>,
}

impl Surface {
    /// Makes the GL objects and, on the CUDA backend when `allow_interop`, registers the pixel buffer.
    /// A registration that fails is returned as the second value: the surface then takes the host path.
    pub fn new(
        gl: &Rc<glow::Context>,
        width_px: u32,
        height_px: u32,
        rasterizer: &mut dyn Rasterizer,
        allow_interop: bool,
    ) -> Result<(Surface, Option<RenderError>), ViewerError> {
        let cuda = rasterizer.cuda_handle();
        let pixels = PixelSurface::new(gl.clone(), width_px, height_px, cuda.is_some() && allow_interop)?;
        let (registration, interop_error) = match (&cuda, pixels.pbo_name()) {
            (Some(cuda), Some(pbo)) => match GlBufferRegistration::register(cuda, pbo) {
                Ok(r) => (Some(r), None),
                Err(e) => (None, Some(e)),
            },
            _ => (None, None),
        };
        let host_px = if registration.is_some() { Vec::new() } else { vec![CLEAR_COLOR; pixels.num_pixels()] };
        let events = match (&registration, &cuda) {
            (Some(_), Some(cuda)) => {
                let make = || cuda.ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT));
                match (make(), make(), make(), make()) {
                    (Ok(a), Ok(b), Ok(c), Ok(d)) => Some([a, b, c, d]),
                    _ => None, // no stage times, the frames still go through
                }
            }
            _ => None,
        };
        Ok((Surface { events, registration, pixels, host_px, cuda_stages: Vec::new() }, interop_error))
    }

    pub fn uses_interop(&self) -> bool {
        self.registration.is_some()
    }

    /// Renders `frame` into the pixel buffer: its size may be below the surface's (adaptive
    /// resolution), and is then the part of the buffer the blit stretches to the window.
    pub fn render(&mut self, rasterizer: &mut dyn Rasterizer, frame: &FrameParams) -> Result<FrameStats, ViewerError> {
        self.pixels.set_frame_size(frame.width_px, frame.height_px);
        match &mut self.registration {
            Some(registration) => {
                let stream = rasterizer.cuda_handle().map(|c| c.stream);
                let mark = |k: usize| {
                    if let (Some(ev), Some(s)) = (&self.events, &stream) {
                        let _ = ev[k].record(s);
                    }
                };
                mark(0);
                let mapped = registration.map().map_err(ViewerError::Interop)?;
                mark(1);
                let needed_bytes = frame.num_pixels() * 4;
                if mapped.size_bytes() < needed_bytes {
                    return Err(ViewerError::MappedSize { got_bytes: mapped.size_bytes(), needed_bytes });
                }
                let target = Target::Device { ptr: mapped.device_ptr(), len_px: frame.num_pixels() };
                let stats = rasterizer.render(frame, target)?;
                mark(2);
                // Unmap before GL reads the buffer.
                drop(mapped);
                mark(3);
                self.cuda_stages.clear();
                if let Some(ev) = &self.events {
                    if ev[3].synchronize().is_ok() {
                        for (name, a, b) in [("map", 0, 1), ("unmap", 2, 3)] {
                            if let Ok(ms) = ev[a].elapsed_ms(&ev[b]) {
                                self.cuda_stages.push(PassTime { name, ms: ms as f64 });
                            }
                        }
                    }
                }
                Ok(stats)
            }
            None => {
                self.host_px.resize(frame.num_pixels(), CLEAR_COLOR);
                let stats = rasterizer.render(frame, Target::Host(&mut self.host_px))?;
                self.pixels.upload_host(&self.host_px)?;
                Ok(stats)
            }
        }
    }
}

/// How frames reach the window, in words for the panel.
pub fn pixel_path(surface: &Surface, interop_fallback: Option<&str>) -> String {
    match (surface.uses_interop(), interop_fallback) {
        (true, _) => "CUDA writes the GL pixel buffer (interop)".to_string(),
        (false, Some(why)) => format!("host memory -> GL texture: {why}"),
        (false, None) => "host memory -> GL texture".to_string(),
    }
}
