//! The window: GLFW (X11 on Linux, Win32 on Windows) with an OpenGL 3.3 core context, and the glow function table for it.
//!
//! How it works: [`Window::open`] initializes GLFW with an error callback that keeps GLFW's last
//! message (so "X11: The DISPLAY environment variable is missing" reaches the user), asks for a 3.3
//! core, forward-compatible context, creates the window with every event polled, makes the context
//! current on this thread and loads [`glow`] through `glfwGetProcAddress`. The glow context is shared
//! (`Rc`) by the blit path and the overlay; the context stays current on this thread for the window's
//! whole life, which is what makes the `unsafe` glow calls elsewhere sound.
//!
//! Events are drained into a `Vec` each frame ([`Window::poll_events`]) so that the caller can handle
//! them while holding `&mut Window`. Mouse-look ([`Window::set_mouselook`]) disables and captures the
//! cursor and, where the platform has it, switches to raw (unaccelerated) mouse motion.
//!
//! Drop order matters: the caller must drop every GL object (blit surface, overlay) before the window;
//! the fields here drop the GLFW window before the `Glfw` token that terminates the library.
use glfw::Context as _;
use glow::HasContext;
use std::cell::RefCell;
use std::rc::Rc;

/// What to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowOptions {
    /// Client-area size in screen coordinates (pixels on an unscaled display).
    pub size_px: (u32, u32),
    pub title: String,
    /// Wait for vertical blank on swap.
    pub vsync: bool,
}

/// The advice every "no window" error carries (per system: `xvfb-run` on Linux, OpenGL 3.3 on Windows).
pub const NO_DISPLAY_ADVICE: &str = crate::platform::NO_DISPLAY_ADVICE;

/// Errors opening the window.
#[derive(Debug, thiserror::Error)]
pub enum WindowError {
    #[error("there is no display to open a window on (GLFW could not start: {reason}); {advice}", advice = NO_DISPLAY_ADVICE)]
    NoDisplay { reason: String },
    #[error("there is no display that can give pcv a window with an OpenGL 3.3 core context ({reason}); {advice}", advice = NO_DISPLAY_ADVICE)]
    NoWindow { reason: String },
    #[error("invalid window size {width}x{height}: both must be between 1 and {max}")]
    InvalidSize { width: u32, height: u32, max: u32 },
}

/// Largest window side pcv asks GLFW for.
pub const MAX_WINDOW_SIDE_PX: u32 = 16384;

/// An open window with a current GL context.
pub struct Window {
    gl: Rc<glow::Context>,
    events: glfw::GlfwReceiver<(f64, glfw::WindowEvent)>,
    window: glfw::PWindow,
    glfw: glfw::Glfw,
    mouselook: bool,
    gl_renderer: String,
}

/// Checks, without opening a window, that GLFW can start (a display is reachable): a cheap early
/// check before loading or uploading a large cloud. Window creation can still fail later (no GL 3.3).
pub fn check_display() -> Result<(), WindowError> {
    let (last_error, glfw) = init_glfw();
    glfw.map(drop).map_err(|e| WindowError::NoDisplay { reason: take_reason(&last_error, &e.to_string()) })
}

/// Initializes GLFW with an error callback that keeps the last error message.
fn init_glfw() -> (Rc<RefCell<Option<String>>>, Result<glfw::Glfw, glfw::InitError>) {
    let last_error: Rc<RefCell<Option<String>>> = Rc::new(RefCell::new(None));
    let sink = last_error.clone();
    let glfw = glfw::init(move |error: glfw::Error, description: String| {
        *sink.borrow_mut() = Some(format!("{description} ({error:?})"));
    });
    (last_error, glfw)
}

impl Window {
    /// Opens the window and makes its GL context current on this thread.
    pub fn open(opts: &WindowOptions) -> Result<Window, WindowError> {
        let (width, height) = opts.size_px;
        if !(1..=MAX_WINDOW_SIDE_PX).contains(&width) || !(1..=MAX_WINDOW_SIDE_PX).contains(&height) {
            return Err(WindowError::InvalidSize { width, height, max: MAX_WINDOW_SIDE_PX });
        }
        let (last_error, glfw) = init_glfw();
        let mut glfw = glfw.map_err(|e| WindowError::NoDisplay { reason: take_reason(&last_error, &e.to_string()) })?;

        glfw.window_hint(glfw::WindowHint::ContextVersion(3, 3));
        glfw.window_hint(glfw::WindowHint::OpenGlProfile(glfw::OpenGlProfileHint::Core));
        glfw.window_hint(glfw::WindowHint::OpenGlForwardCompat(true));
        glfw.window_hint(glfw::WindowHint::DoubleBuffer(true));
        // Pixels are what the renderer fills: keep one framebuffer pixel per screen coordinate where the
        // platform allows it (on X11 this is the default).
        glfw.window_hint(glfw::WindowHint::ScaleToMonitor(false));

        let (mut window, events) = glfw
            .create_window(width, height, &opts.title, glfw::WindowMode::Windowed)
            .ok_or_else(|| WindowError::NoWindow { reason: take_reason(&last_error, "window creation failed") })?;
        window.set_all_polling(true);
        window.make_current();
        glfw.set_swap_interval(if opts.vsync { glfw::SwapInterval::Sync(1) } else { glfw::SwapInterval::None });

        // SAFETY: the window's context was just made current on this thread, and it stays current for as
        // long as the returned `Window` (which owns the window) lives; the loader returns null for a name
        // the driver lacks, which glow records as "not loaded".
        let gl = unsafe {
            glow::Context::from_loader_function(|name| match window.get_proc_address(name) {
                Some(f) => f as *const std::ffi::c_void,
                None => std::ptr::null(),
            })
        };
        // SAFETY: the context is current; RENDERER and VERSION are valid string queries in every context.
        let gl_renderer = unsafe {
            format!("{} (OpenGL {})", gl.get_parameter_string(glow::RENDERER), gl.get_parameter_string(glow::VERSION))
        };
        Ok(Window { gl: Rc::new(gl), events, window, glfw, mouselook: false, gl_renderer })
    }

    /// The GL function table of this window's context (current on this thread).
    pub fn gl(&self) -> &Rc<glow::Context> {
        &self.gl
    }

    /// The driver's renderer and version strings, e.g. "llvmpipe (LLVM 15.0.7, 256 bits) (OpenGL 4.5 ...)".
    pub fn gl_renderer(&self) -> &str {
        &self.gl_renderer
    }

    /// The GLFW window, for the overlay's platform glue.
    pub fn glfw_window(&self) -> &glfw::Window {
        &self.window
    }

    /// Framebuffer size in pixels; (0, 0) while minimized.
    pub fn framebuffer_size_px(&self) -> (u32, u32) {
        if self.window.is_iconified() {
            return (0, 0);
        }
        let (w, h) = self.window.get_framebuffer_size();
        (w.max(0) as u32, h.max(0) as u32)
    }

    /// Drains the events that arrived since the last call (after polling for new ones).
    pub fn poll_events(&mut self) -> Vec<glfw::WindowEvent> {
        self.glfw.poll_events();
        glfw::flush_messages(&self.events).map(|(_, e)| e).collect()
    }

    /// Window size in screen coordinates (what cursor positions are in).
    pub fn window_size(&self) -> (u32, u32) {
        let (w, h) = self.window.get_size();
        (w.max(0) as u32, h.max(0) as u32)
    }

    /// Puts `text` on the clipboard.
    pub fn set_clipboard(&mut self, text: &str) {
        self.window.set_clipboard_string(text);
    }

    pub fn set_title(&mut self, title: &str) {
        self.window.set_title(title);
    }

    /// Sleeps until an event arrives or `timeout_s` passes (an idle viewer, a minimized window).
    pub fn wait_events_timeout(&mut self, timeout_s: f64) {
        self.glfw.wait_events_timeout(timeout_s);
    }

    pub fn should_close(&self) -> bool {
        self.window.should_close()
    }

    pub fn set_should_close(&mut self, close: bool) {
        self.window.set_should_close(close);
    }

    /// Whether `key` is held now.
    pub fn key_down(&self, key: glfw::Key) -> bool {
        self.window.get_key(key) != glfw::Action::Release
    }

    /// Cursor position in screen coordinates (unbounded while mouse-look has the cursor disabled).
    pub fn cursor_pos(&self) -> (f64, f64) {
        self.window.get_cursor_pos()
    }

    pub fn mouselook(&self) -> bool {
        self.mouselook
    }

    /// Mouse-look on: cursor hidden and captured, raw motion where supported. Off: a normal cursor.
    pub fn set_mouselook(&mut self, on: bool) {
        self.mouselook = on;
        if on {
            self.window.set_cursor_mode(glfw::CursorMode::Disabled);
            if self.glfw.supports_raw_motion() {
                self.window.set_raw_mouse_motion(true);
            }
        } else {
            if self.glfw.supports_raw_motion() {
                self.window.set_raw_mouse_motion(false);
            }
            self.window.set_cursor_mode(glfw::CursorMode::Normal);
        }
    }

    /// Seconds since GLFW started.
    pub fn time_s(&self) -> f64 {
        self.glfw.get_time()
    }

    /// A handle other threads may use to wake this window's event wait (`post_empty_event`); GLFW stays
    /// initialized while it lives.
    pub fn thread_safe_glfw(&mut self) -> glfw::ThreadSafeGlfw {
        glfw::ThreadSafeGlfw::from(&mut self.glfw)
    }

    /// Shows the back buffer.
    pub fn swap_buffers(&mut self) {
        self.window.swap_buffers();
    }
}

/// GLFW's own message when its error callback gave one, else `fallback`.
fn take_reason(last_error: &Rc<RefCell<Option<String>>>, fallback: &str) -> String {
    last_error.borrow_mut().take().unwrap_or_else(|| fallback.to_string())
}
