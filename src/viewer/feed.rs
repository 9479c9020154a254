//! Points fed to a running window from another thread: the Python module's `Viewer.update`.
//!
//! How it works: a [`PointFeed`] is shared (an `Arc`) by the thread that runs the window's loop and the
//! threads that send it points. [`PointFeed::send`] puts a [`PointSet`] in a one-slot mailbox (a set
//! the loop has not taken yet is replaced: the window shows the newest, never a backlog) and wakes the
//! loop out of its idle wait (`glfwPostEmptyEvent`, through the thread-safe GLFW handle the loop gave
//! with [`PointFeed::attach`]). Each turn the loop calls [`poll`], which takes the set and makes it
//! what the rasterizer draws: host points are uploaded like a loaded file, device arrays are shown in
//! place ([`pcv_render::Rasterizer::show_external`]: no copy, no allocation); the camera's
//! planes follow the new bounds and the frame is drawn again. After each frame that rendered the
//! points the loop calls [`PointFeed::rendered`], which wakes senders waiting in
//! [`PointFeed::wait_rendered`] for their set to be on screen. [`PointFeed::request_close`] closes the
//! window from the sending side; when the loop ends for any reason, its thread calls
//! [`PointFeed::detach`], after which sends are refused and waits return.
//!
//! Sets are numbered in the order they were sent; `applied` and `rendered` say how far the loop got, so
//! a sender knows when the set it sent (or a newer one) has been drawn.
use crate::app::layers::Layers;
use crate::app::state::AppState;
use crate::app::update::Effects;
use pcv_io::PointCloud;
use pcv_render::external::ExternalPoints;
use pcv_render::{Rasterizer, RenderError};
use std::any::Any;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Points for the window.
pub enum PointSet {
    /// Host points, uploaded like a loaded file.
    Host(PointCloud),
    /// Device arrays drawn where they are (CUDA backend), and what keeps them allocated. Made by
    /// [`PointSet::device`].
    Device { points: ExternalPoints, keepalive: Box<dyn Any + Send> },
}

impl PointSet {
    /// Device arrays for the window.
    ///
    /// # Safety
    /// As [`pcv_render::Rasterizer::show_external`]: the arrays are device memory of the
    /// window's CUDA context holding what `points` describes, kept allocated by `keepalive`, and the
    /// streams that wrote them are ordered before the window's stream.
    pub unsafe fn device(points: ExternalPoints, keepalive: Box<dyn Any + Send>) -> PointSet {
        PointSet::Device { points, keepalive }
    }
}

/// Where the window is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Its thread is starting it.
    Starting,
    Open,
    /// It closed (with the loop's error, if it ended with one).
    Closed(Option<String>),
}

struct State {
    pending: Option<(u64, PointSet)>,
    sent: u64,
    applied: u64,
    rendered: u64,
    /// The last set that failed to apply, and why.
    failed: Option<(u64, String)>,
    phase: Phase,
    close_requested: bool,
    waker: Option<glfw::ThreadSafeGlfw>,
}

/// A mailbox of point sets for a window's loop (see the module doc).
pub struct PointFeed {
    state: Mutex<State>,
    changed: Condvar,
}

impl std::fmt::Debug for PointFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("PointFeed")
            .field("sent", &s.sent)
            .field("rendered", &s.rendered)
            .field("phase", &s.phase)
            .finish()
    }
}

impl PointFeed {
    pub fn new() -> Arc<PointFeed> {
        Arc::new(PointFeed {
            state: Mutex::new(State {
                pending: None,
                sent: 0,
                applied: 0,
                rendered: 0,
                failed: None,
                phase: Phase::Starting,
                close_requested: false,
                waker: None,
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain counters behind: keep going with them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wake(s: &State) {
        if let Some(w) = &s.waker {
            w.post_empty_event();
        }
    }

    /// Sends `set` (replacing one not taken yet, which is returned so the caller can drop it where it
    /// should). Returns the set's number, or the set itself when the window has closed.
    pub fn send(&self, set: PointSet) -> Result<(u64, Option<PointSet>), Box<PointSet>> {
        let mut s = self.lock();
        if matches!(s.phase, Phase::Closed(_)) {
            return Err(Box::new(set));
        }
        s.sent += 1;
        let n = s.sent;
        let replaced = s.pending.replace((n, set)).map(|(_, old)| old);
        Self::wake(&s);
        Ok((n, replaced))
    }

    /// Waits until set `n` (or a newer one) has been rendered: `Ok`; the set failed to apply, or the
    /// window closed first, or `timeout` passed: why.
    pub fn wait_rendered(&self, n: u64, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        let mut s = self.lock();
        loop {
            if let Some((f, why)) = &s.failed {
                if *f == n {
                    return Err(why.clone());
                }
            }
            if s.rendered >= n {
                return Ok(());
            }
            if let Phase::Closed(e) = &s.phase {
                return Err(e.clone().unwrap_or_else(|| "the window was closed".into()));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("set {n} was not drawn within {:.1} s", timeout.as_secs_f64()));
            }
            s = self.changed.wait_timeout(s, left).map(|r| r.0).unwrap_or_else(|e| e.into_inner().0);
        }
    }

    /// Waits until the window is open (or failed to open, or `timeout` passed) and returns its phase.
    pub fn wait_open(&self, timeout: Duration) -> Phase {
        self.wait_phase(timeout, |p| *p != Phase::Starting)
    }

    /// Waits until the window has closed (or `timeout` passed) and returns its phase.
    pub fn wait_closed(&self, timeout: Duration) -> Phase {
        self.wait_phase(timeout, |p| matches!(p, Phase::Closed(_)))
    }

    fn wait_phase(&self, timeout: Duration, done: impl Fn(&Phase) -> bool) -> Phase {
        let deadline = Instant::now() + timeout;
        let mut s = self.lock();
        while !done(&s.phase) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = self.changed.wait_timeout(s, left).map(|r| r.0).unwrap_or_else(|e| e.into_inner().0);
        }
        s.phase.clone()
    }

    pub fn phase(&self) -> Phase {
        self.lock().phase.clone()
    }

    /// Asks the loop to close the window.
    pub fn request_close(&self) {
        let mut s = self.lock();
        s.close_requested = true;
        Self::wake(&s);
    }

    // The loop's side.

    /// The window is open; `waker` wakes its loop.
    pub fn attach(&self, waker: glfw::ThreadSafeGlfw) {
        let mut s = self.lock();
        s.waker = Some(waker);
        s.phase = Phase::Open;
        self.changed.notify_all();
    }

    /// Whether a set waits to be taken (or a close to be done).
    pub fn pending(&self) -> bool {
        let s = self.lock();
        s.pending.is_some() || s.close_requested
    }

    /// The frame after the last applied set has been rendered.
    pub fn rendered(&self) {
        let mut s = self.lock();
        s.rendered = s.applied;
        self.changed.notify_all();
    }

    /// The loop has ended (`error`: why, if it failed). Returns a set sent but never taken, for the
    /// caller to drop where it should.
    pub fn detach(&self, error: Option<String>) -> Option<PointSet> {
        let mut s = self.lock();
        s.waker = None;
        s.phase = Phase::Closed(error);
        self.changed.notify_all();
        s.pending.take().map(|(_, set)| set)
    }
}

/// The loop's turn: takes a set sent since the last turn and makes it what the window shows, and
/// carries out a close request. Effects for the loop: draw again, or quit.
pub fn poll(feed: &PointFeed, state: &mut AppState, rasterizer: &mut dyn Rasterizer) -> Effects {
    let (taken, quit) = {
        let mut s = feed.lock();
        (s.pending.take(), std::mem::take(&mut s.close_requested))
    };
    let mut fx = Effects { quit, ..Default::default() };
    if let Some((n, set)) = taken {
        let result = apply(state, rasterizer, set);
        let mut s = feed.lock();
        match result {
            Ok(()) => s.applied = n,
            Err(e) => {
                state.messages.error(format!("the points sent could not be shown: {e}"));
                s.failed = Some((n, e.to_string()));
            }
        }
        feed.changed.notify_all();
        fx.redraw_scene = true;
    }
    fx
}

/// Makes `set` what the window draws: uploads host points, shows device arrays in place; the layers
/// become the new points and the camera's planes follow their bounds (the pose stays).
pub fn apply(state: &mut AppState, rasterizer: &mut dyn Rasterizer, set: PointSet) -> Result<(), RenderError> {
    let cloud = match set {
        PointSet::Host(cloud) => {
            rasterizer.upload(&cloud)?;
            if state.spacing_m == 0.0 {
                state.spacing_m = pcv_io::spacing::estimate(&cloud);
            }
            cloud
        }
        PointSet::Device { points, keepalive } => {
            let n = points.num_points();
            // SAFETY: PointSet::device's contract, which its maker promised, is show_external's.
            let bounds = unsafe { rasterizer.show_external(points, keepalive) }?;
            let mut c = PointCloud::from_points(
                Vec::new(),
                glam::DVec3::ZERO,
                format!("{n} points from Python (device arrays)"),
            );
            c.bounds = bounds;
            c
        }
    };
    let bounds = cloud.bounds;
    state.layers = Layers::new(cloud);
    let _ = state.layers.uploaded();
    if !bounds.is_empty() {
        state.nav.camera.set_bounds(bounds, bounds);
    }
    Ok(())
}
