//! The display: window, blit path and imgui's GLFW glue.
//!
//! How it works: [`window`] opens a GLFW window with an OpenGL 3.3 core context and loads `glow` for it.
//! A frame goes through [`blit::PixelSurface`]: from host memory straight into its texture (the CPU
//! backend), or on the CUDA backend into its pixel buffer directly, through the render crate's CUDA-GL
//! interop ([`pcv_render::cuda::interop`], which registers and maps that buffer), then copied to the
//! texture on the GPU; the texture is blitted to the window.
//! The panel ([`crate::ui`]) draws on top with imgui, fed by [`platform`]'s GLFW input glue. The loop
//! that ties them together is the viewer's; [`gl_timer`] times its GL stages on the GPU.
//!
//! Everything GL here runs on the thread that opened the window, whose context stays current; GL objects
//! must be dropped before the [`window::Window`] (and a CUDA registration before the buffer it names).
pub mod blit;
pub mod gl_timer;
pub mod platform;
pub mod window;
