//! The blit path: a texture the frame reaches (from host memory, or from a pixel buffer (PBO) CUDA
//! fills) and blitted to the window; and screenshots read back from the window.
//!
//! How it works (the prototype's `OpenglScreenBuffer`): a [`PixelSurface`] owns an RGBA8 texture of the
//! frame's size, a framebuffer object with the texture as its color attachment, and, for CUDA-GL
//! interop, a pixel-unpack buffer of `width × height` RGBA8 words. A frame from host memory (the CPU
//! backend, or CUDA where the GL driver cannot share a buffer) goes straight into the texture
//! ([`PixelSurface::upload_host`], `glTexSubImage2D` from the slice): one copy, where going through a
//! PBO (`glBufferSubData`, then the PBO into the texture) made two — on a software GL (Mesa's llvmpipe)
//! each is a CPU copy of the frame, measured in `results/2026-12-03-s19-every-machine/`. CUDA writes
//! the PBO through a mapping (its name is [`PixelSurface::pbo_name`]), and
//! [`PixelSurface::copy_to_texture`] copies it into the texture with the PBO bound as
//! `GL_PIXEL_UNPACK_BUFFER` (a GPU-side copy, no host round trip; nothing to do after a host upload).
//! [`PixelSurface::blit_to_default_framebuffer`] (= [`PixelSurface::copy_to_texture`] then
//! [`PixelSurface::blit`], apart so that their GPU times can be taken) ends with `glBlitFramebuffer`
//! from the FBO to the default framebuffer, 1:1 and `GL_NEAREST`, so the window shows exactly the
//! rasterizer's pixels. The words are RGBA8 with r in the low byte, i.e. the bytes R, G, B, A: `GL_RGBA` /
//! `GL_UNSIGNED_BYTE`. A frame's row 0 is its top row and GL's row 0 its bottom: the texture holds the
//! frame as it is (upside down for GL) and the blit flips it, by giving `glBlitFramebuffer` the
//! destination's rows swapped (the same cost as a plain blit).
//!
//! GL 3.3 core has no immutable storage (`glBufferStorage`, `glTexStorage2D` are 4.x), so the PBO uses
//! `glBufferData` and the texture `glTexImage2D`. A size change means a new surface: drop the old one
//! (after releasing any CUDA registration of its PBO) and make another.
//!
//! [`read_default_framebuffer`] reads the back buffer with `glReadPixels` (pack alignment 1) into an
//! [`image_io::Frame`](pcv_render::image_io::Frame), its rows reversed into top row first, as frames are.
//!
//! Every function here needs the surface's GL context current on the calling thread; the
//! [`Window`](super::window::Window) keeps it so for its whole life.
use glow::{HasContext, PixelPackData, PixelUnpackData};
use pcv_render::image_io::Frame;
use std::rc::Rc;

/// Errors from the blit path.
#[derive(Debug, thiserror::Error)]
pub enum BlitError {
    #[error("OpenGL could not create a {what}: {message}")]
    Create { what: &'static str, message: String },
    #[error("a {width}x{height} frame is too large for this OpenGL driver (largest texture side {max_side_px}, largest buffer {max_bytes} bytes)")]
    TooLarge { width: u32, height: u32, max_side_px: u32, max_bytes: u64 },
    #[error("the blit framebuffer is incomplete (status 0x{status:04x})")]
    Incomplete { status: u32 },
    #[error("OpenGL error 0x{code:04x} ({name}) in {context}")]
    Gl { context: &'static str, code: u32, name: &'static str },
    #[error("{got} pixels given for a {width}x{height} surface")]
    PixelCount { got: usize, width: u32, height: u32 },
}

/// A texture, an FBO and (for interop) a PBO of one size: where a frame goes on its way to the window.
pub struct PixelSurface {
    gl: Rc<glow::Context>,
    /// The pixel buffer CUDA writes (`None`: host frames only).
    pbo: Option<glow::Buffer>,
    texture: glow::Texture,
    fbo: glow::Framebuffer,
    width_px: u32,
    height_px: u32,
    /// The frame in use: the bottom-left `frame_w × frame_h` of the objects, rows packed at its width
    /// (smaller while adaptive resolution renders below the window's size).
    frame_w: u32,
    frame_h: u32,
    /// The texture holds the last frame uploaded from host memory (no PBO copy to make).
    host_fed: bool,
}

impl PixelSurface {
    /// Makes the objects for a `width_px × height_px` frame (the pixel buffer only `with_pbo`, for CUDA).
    pub fn new(
        gl: Rc<glow::Context>,
        width_px: u32,
        height_px: u32,
        with_pbo: bool,
    ) -> Result<PixelSurface, BlitError> {
        let bytes = width_px as u64 * height_px as u64 * 4;
        // SAFETY: the context is current (module contract); MAX_TEXTURE_SIZE is a valid integer query.
        let max_side_px = unsafe { gl.get_parameter_i32(glow::MAX_TEXTURE_SIZE) }.max(0) as u32;
        let max_bytes = i32::MAX as u64;
        if width_px == 0 || height_px == 0 || width_px > max_side_px || height_px > max_side_px || bytes > max_bytes {
            return Err(BlitError::TooLarge { width: width_px, height: height_px, max_side_px, max_bytes });
        }
        let (w, h) = (width_px as i32, height_px as i32);
        // Drain earlier errors so that the checks below see only this function's.
        drain_gl_errors(&gl);

        // SAFETY: the context is current; creating a name has no preconditions.
        let texture =
            unsafe { gl.create_texture() }.map_err(|message| BlitError::Create { what: "texture", message })?;
        // SAFETY: as above.
        let fbo = match unsafe { gl.create_framebuffer() } {
            Ok(f) => f,
            Err(message) => {
                // SAFETY: the texture was created above in this context and is not used after this.
                unsafe { gl.delete_texture(texture) };
                return Err(BlitError::Create { what: "framebuffer", message });
            }
        };
        // From here on `Drop` deletes the objects whatever goes wrong.
        let mut surface = PixelSurface {
            gl,
            pbo: None,
            texture,
            fbo,
            width_px,
            height_px,
            frame_w: width_px,
            frame_h: height_px,
            host_fed: false,
        };
        if with_pbo {
            // SAFETY: as above.
            let pbo = unsafe { surface.gl.create_buffer() }
                .map_err(|message| BlitError::Create { what: "pixel buffer", message })?;
            surface.pbo = Some(pbo);
            // SAFETY: the context is current and `pbo` a live name of it; the size was checked to fit an
            // i32 above.
            unsafe {
                surface.gl.bind_buffer(glow::PIXEL_UNPACK_BUFFER, Some(pbo));
                surface.gl.buffer_data_size(glow::PIXEL_UNPACK_BUFFER, bytes as i32, glow::STREAM_DRAW);
                surface.gl.bind_buffer(glow::PIXEL_UNPACK_BUFFER, None);
            }
        }
        let gl = &surface.gl;

        // SAFETY: the context is current and the texture is a live name of it. `tex_image_2d` with `None`
        // allocates without reading host memory, and the PIXEL_UNPACK binding is cleared first so that
        // `None` is not taken as a buffer offset.
        unsafe {
            gl.bind_buffer(glow::PIXEL_UNPACK_BUFFER, None);
            gl.bind_texture(glow::TEXTURE_2D, Some(surface.texture));
            gl.tex_image_2d(glow::TEXTURE_2D, 0, glow::RGBA8 as i32, w, h, 0, glow::RGBA, glow::UNSIGNED_BYTE, None);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MIN_FILTER, glow::NEAREST as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MAG_FILTER, glow::NEAREST as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MAX_LEVEL, 0);
            gl.bind_texture(glow::TEXTURE_2D, None);
        }
        check_gl_error(gl, "allocating the pixel buffer and texture")?;

        // SAFETY: the context is current; the texture is a complete level-0 RGBA8 image of this context.
        let status = unsafe {
            gl.bind_framebuffer(glow::FRAMEBUFFER, Some(surface.fbo));
            gl.framebuffer_texture_2d(
                glow::FRAMEBUFFER,
                glow::COLOR_ATTACHMENT0,
                glow::TEXTURE_2D,
                Some(surface.texture),
                0,
            );
            let status = gl.check_framebuffer_status(glow::FRAMEBUFFER);
            gl.bind_framebuffer(glow::FRAMEBUFFER, None);
            status
        };
        if status != glow::FRAMEBUFFER_COMPLETE {
            return Err(BlitError::Incomplete { status });
        }
        check_gl_error(gl, "attaching the texture to the framebuffer")?;
        Ok(surface)
    }

    /// Width and height in pixels.
    pub fn size_px(&self) -> (u32, u32) {
        (self.width_px, self.height_px)
    }

    /// Number of pixels (and of RGBA8 words in the PBO).
    pub fn num_pixels(&self) -> usize {
        self.width_px as usize * self.height_px as usize
    }

    /// Uses the bottom-left `width_px × height_px` of the surface for the next frames (at most its
    /// size): the frame is uploaded with rows of that width and stretched to the window by the blit.
    pub fn set_frame_size(&mut self, width_px: u32, height_px: u32) {
        self.frame_w = width_px.clamp(1, self.width_px);
        self.frame_h = height_px.clamp(1, self.height_px);
    }

    /// The frame in use ([`PixelSurface::set_frame_size`]; the surface's size unless set).
    pub fn frame_size_px(&self) -> (u32, u32) {
        (self.frame_w, self.frame_h)
    }

    /// The PBO's GL name, for registering it with CUDA (`None`: made without one).
    pub fn pbo_name(&self) -> Option<u32> {
        self.pbo.map(|b| b.0.get())
    }

    /// Copies a host frame (RGBA8 words, row 0 at the top, the frame in use's size) straight into the
    /// texture (whose row 0 is GL's bottom: [`Self::blit_to`] flips).
    pub fn upload_host(&mut self, pixels: &[u32]) -> Result<(), BlitError> {
        if pixels.len() != self.frame_w as usize * self.frame_h as usize {
            return Err(BlitError::PixelCount { got: pixels.len(), width: self.frame_w, height: self.frame_h });
        }
        // SAFETY: no PIXEL_UNPACK buffer, so GL reads w·h·4 bytes from the slice, which holds exactly w·h
        // words (checked above).
        unsafe { self.write_texture(None, PixelUnpackData::Slice(bytemuck::cast_slice(pixels))) };
        self.host_fed = true;
        check_gl_error(&self.gl, "uploading the frame to the texture")
    }

    /// PBO → texture → default framebuffer, 1:1 at the bottom-left corner. The PBO must not be mapped by
    /// CUDA at this point (drop the mapping first).
    pub fn blit_to_default_framebuffer(&self) -> Result<(), BlitError> {
        self.copy_to_texture()?;
        self.blit()
    }

    /// PBO → texture (a GPU-side copy of the frame in use; nothing to do when the frame came from host
    /// memory or there is no PBO). The PBO must not be mapped by CUDA.
    pub fn copy_to_texture(&self) -> Result<(), BlitError> {
        let Some(pbo) = self.pbo.filter(|_| !self.host_fed) else { return Ok(()) };
        // SAFETY: with the PBO bound, `BufferOffset(0)` makes GL read w·h·4 bytes from the start of the
        // PBO, at most its size (`new` allocated width × height words; the frame in use is clamped to it).
        unsafe { self.write_texture(Some(pbo), PixelUnpackData::BufferOffset(0)) };
        check_gl_error(&self.gl, "copying the frame to the texture")
    }

    /// Writes the frame in use (w × h RGBA8 words, rows packed) into the texture from `data`: host
    /// memory when `pbo` is `None`, else an offset into `pbo`, bound as PIXEL_UNPACK_BUFFER meanwhile.
    ///
    /// # Safety
    /// `data` must hold the frame's w·h·4 bytes: a slice of that length, or an offset into `pbo` with
    /// that many bytes after it.
    unsafe fn write_texture(&self, pbo: Option<glow::Buffer>, data: PixelUnpackData<'_>) {
        let gl = &self.gl;
        let (w, h) = (self.frame_w as i32, self.frame_h as i32);
        // SAFETY: the context is current and the texture (and `pbo`) are live names of it. The caller
        // guarantees w·h·4 readable bytes at `data` (a slice without a bound buffer, or an offset into
        // the bound PBO); rows are 4·w bytes, a multiple of the unpack alignment 4, with no row length,
        // and the w × h region lies inside the texture (the frame in use is clamped to its size).
        unsafe {
            gl.bind_buffer(glow::PIXEL_UNPACK_BUFFER, pbo);
            gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 4);
            gl.pixel_store_i32(glow::UNPACK_ROW_LENGTH, 0);
            gl.bind_texture(glow::TEXTURE_2D, Some(self.texture));
            gl.tex_sub_image_2d(glow::TEXTURE_2D, 0, 0, 0, w, h, glow::RGBA, glow::UNSIGNED_BYTE, data);
            gl.bind_texture(glow::TEXTURE_2D, None);
            gl.bind_buffer(glow::PIXEL_UNPACK_BUFFER, None);
        }
    }

    /// Texture → default framebuffer, 1:1 at the bottom-left corner.
    pub fn blit(&self) -> Result<(), BlitError> {
        self.blit_to(self.frame_w, self.frame_h)
    }

    /// Texture → default framebuffer's `dst_w × dst_h` rectangle at the bottom-left corner, flipped
    /// upside down (the frame's row 0, its top, goes to the window's top): 1:1 and `GL_NEAREST` at the
    /// surface's own size, else stretched with `GL_LINEAR` (adaptive resolution's frames rendered below
    /// the window's size).
    pub fn blit_to(&self, dst_w: u32, dst_h: u32) -> Result<(), BlitError> {
        let gl = &self.gl;
        let (w, h) = (self.frame_w as i32, self.frame_h as i32);
        let (dw, dh) = (dst_w as i32, dst_h as i32);
        let filter = if (dw, dh) == (w, h) { glow::NEAREST } else { glow::LINEAR };
        // SAFETY: the context is current and the FBO (with the texture attached) is live; the blit reads
        // the frame's w × h of the texture and writes the dw × dh rectangle of the default framebuffer (GL clips what
        // lies outside it). A scissor test would clip it, so it is switched off first.
        unsafe {
            gl.disable(glow::SCISSOR_TEST);
            gl.disable(glow::FRAMEBUFFER_SRGB);
            gl.bind_framebuffer(glow::READ_FRAMEBUFFER, Some(self.fbo));
            gl.bind_framebuffer(glow::DRAW_FRAMEBUFFER, None);
            // Frames count rows from the top and GL from the bottom: the destination's rows are swapped,
            // so the blit flips (no extra pass or copy).
            gl.blit_framebuffer(0, 0, w, h, 0, dh, dw, 0, glow::COLOR_BUFFER_BIT, filter);
            gl.bind_framebuffer(glow::FRAMEBUFFER, None);
        }
        check_gl_error(gl, "blitting the frame to the window")
    }
}

impl Drop for PixelSurface {
    fn drop(&mut self) {
        // SAFETY: the objects are live names of this context, which is still current (the window outlives
        // every surface); nothing uses them after this. Any CUDA registration of the PBO was released
        // before (the caller's RAII order).
        unsafe {
            self.gl.delete_framebuffer(self.fbo);
            self.gl.delete_texture(self.texture);
            if let Some(pbo) = self.pbo {
                self.gl.delete_buffer(pbo);
            }
        }
    }
}

/// Reads the default framebuffer's back buffer (what the next swap shows) as an opaque RGBA8 frame,
/// row 0 at the top (GL's bottom row first, reversed).
pub fn read_default_framebuffer(gl: &glow::Context, width_px: u32, height_px: u32) -> Result<Frame, BlitError> {
    let bytes = width_px as u64 * height_px as u64 * 4;
    if width_px == 0
        || height_px == 0
        || bytes > isize::MAX as u64
        || width_px > i32::MAX as u32
        || height_px > i32::MAX as u32
    {
        return Err(BlitError::TooLarge {
            width: width_px,
            height: height_px,
            max_side_px: i32::MAX as u32,
            max_bytes: isize::MAX as u64,
        });
    }
    drain_gl_errors(gl);
    let mut rgba = vec![0u8; bytes as usize];
    // SAFETY: the context is current. No PIXEL_PACK buffer is bound (cleared here), so GL writes
    // width·height·4 bytes into `rgba`, which has exactly that many with pack alignment 1.
    unsafe {
        gl.bind_buffer(glow::PIXEL_PACK_BUFFER, None);
        gl.bind_framebuffer(glow::READ_FRAMEBUFFER, None);
        gl.read_buffer(glow::BACK);
        gl.pixel_store_i32(glow::PACK_ALIGNMENT, 1);
        gl.pixel_store_i32(glow::PACK_ROW_LENGTH, 0);
        gl.read_pixels(
            0,
            0,
            width_px as i32,
            height_px as i32,
            glow::RGBA,
            glow::UNSIGNED_BYTE,
            PixelPackData::Slice(&mut rgba),
        );
    }
    check_gl_error(gl, "reading the window back (glReadPixels)")?;
    // A window is opaque: the default framebuffer may have no alpha channel at all, or an alpha that the
    // overlay's blending touched.
    // GL reads rows from the bottom; frames count them from the top.
    let pixels = rgba
        .chunks_exact(width_px as usize * 4)
        .rev()
        .flat_map(|row| row.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], 0xff])))
        .collect();
    Ok(Frame::new(width_px, height_px, pixels))
}

/// The first pending GL error, if any, as a [`BlitError::Gl`] naming `context`.
pub fn check_gl_error(gl: &glow::Context, context: &'static str) -> Result<(), BlitError> {
    // SAFETY: the context is current; glGetError has no other preconditions.
    let code = unsafe { gl.get_error() };
    if code == glow::NO_ERROR {
        return Ok(());
    }
    drain_gl_errors(gl);
    Err(BlitError::Gl { context, code, name: gl_error_name(code) })
}

/// Clears pending GL errors (bounded: a lost context can report errors forever).
fn drain_gl_errors(gl: &glow::Context) {
    for _ in 0..16 {
        // SAFETY: as in `check_gl_error`.
        if unsafe { gl.get_error() } == glow::NO_ERROR {
            break;
        }
    }
}

fn gl_error_name(code: u32) -> &'static str {
    match code {
        glow::INVALID_ENUM => "GL_INVALID_ENUM",
        glow::INVALID_VALUE => "GL_INVALID_VALUE",
        glow::INVALID_OPERATION => "GL_INVALID_OPERATION",
        glow::INVALID_FRAMEBUFFER_OPERATION => "GL_INVALID_FRAMEBUFFER_OPERATION",
        glow::OUT_OF_MEMORY => "GL_OUT_OF_MEMORY",
        _ => "unknown",
    }
}
