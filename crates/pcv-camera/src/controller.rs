//! What a camera controller is: a type that turns navigation input into moves of the one [`Camera`].
//!
//! How it works: the viewer keeps one [`Camera`] (pose, up axis, lens) and two controllers, [`Fly`]
//! and [`Orbit`](super::orbit::Orbit), of which one is active. Mouse input reaches the active one as
//! [`Nav`] events (pixel positions in the framebuffer, y down as GLFW reports them); held movement
//! keys reach it every frame through [`CameraController::tick`]. Controllers that need to know what
//! is under a pixel (the orbit pivot, zoom to the cursor, the fly speed from the depth ahead) ask a
//! [`DepthProbe`]: in the window, the rasterizer's pick on the last frame; in tests, a double. Every
//! method returns whether the camera moved, which is what decides that the window must draw again.
//! Switching controllers keeps the pose: both work on the same camera.
//!
//! [`Fly`]: super::fly::Fly
use super::lens::FOV_Y_RAD;
use super::Camera;
use glam::{Vec2, Vec3};

/// Which controller is active.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ControllerKind {
    /// Left-drag orbits around the point under the cursor, the wheel zooms to the cursor.
    #[default]
    Orbit,
    /// Left-drag (or Esc mouse-look) turns the camera, the wheel scales the speed.
    Fly,
}

impl ControllerKind {
    pub fn name(self) -> &'static str {
        match self {
            ControllerKind::Orbit => "orbit",
            ControllerKind::Fly => "fly",
        }
    }

    pub fn other(self) -> ControllerKind {
        match self {
            ControllerKind::Orbit => ControllerKind::Fly,
            ControllerKind::Fly => ControllerKind::Orbit,
        }
    }
}

/// A mouse button as navigation sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DragButton {
    Left,
    Right,
    Middle,
}

/// Navigation input. Positions are framebuffer pixels from the top-left corner.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Nav {
    /// Mouse-look motion (Esc), in pixels of a window `height_px` tall.
    Look { dx_px: f32, dy_px: f32 },
    /// A button went down at `at_px` (a drag may follow).
    DragStart { button: DragButton, at_px: Vec2 },
    /// The cursor moved to `at_px` with `button` held.
    DragTo { button: DragButton, at_px: Vec2 },
    /// The button was released.
    DragEnd,
    /// Wheel notches (positive: away from the user, "zoom in") with the cursor at `at_px`.
    Wheel { notches: f32, at_px: Vec2 },
    /// A double click at `at_px`.
    DoubleClick { at_px: Vec2 },
}

/// Held movement keys, as axes.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MoveInput {
    /// +1 forward (W), -1 back (S).
    pub forward: f32,
    /// +1 right (D), -1 left (A).
    pub right: f32,
    /// +1 up (E), -1 down (Q), along the up axis.
    pub up: f32,
    /// Shift: four times faster.
    pub fast: bool,
}

impl MoveInput {
    pub fn is_moving(&self) -> bool {
        self.forward != 0.0 || self.right != 0.0 || self.up != 0.0
    }
}

/// What is under a pixel of the last frame.
pub trait DepthProbe {
    /// The local position of the nearest point drawn within `radius_px` of `at_px` (framebuffer
    /// pixels from the top-left corner), if any.
    fn probe(&mut self, at_px: Vec2, radius_px: u32) -> Option<Vec3>;
}

/// A probe that never finds anything (before the first frame, or headless).
pub struct NoProbe;

impl DepthProbe for NoProbe {
    fn probe(&mut self, _at_px: Vec2, _radius_px: u32) -> Option<Vec3> {
        None
    }
}

/// What a controller may read besides the camera.
pub struct NavCtx<'a> {
    /// The framebuffer's size.
    pub size_px: (u32, u32),
    pub probe: &'a mut dyn DepthProbe,
}

/// Pixels around the cursor searched for a point to orbit around or zoom to.
pub const PICK_RADIUS_PX: u32 = 8;
/// Pixels around the screen centre searched for the depth ahead (the adaptive walking speed).
pub const AHEAD_RADIUS_PX: u32 = 24;
/// Mouse sensitivity of turning (drag, mouse-look and orbit): radians per window height of motion (the
/// prototype's 3).
pub const LOOK_RAD_PER_HEIGHT: f32 = 3.0;

/// A controller: turns input into moves of the camera.
pub trait CameraController {
    fn kind(&self) -> ControllerKind;
    /// One mouse event. Returns whether the camera moved.
    fn handle(&mut self, cam: &mut Camera, nav: &Nav, ctx: &mut NavCtx<'_>) -> bool;
    /// Held keys for `dt_s` seconds (WASD, Q/E, Shift), in either controller. Returns whether the
    /// camera moved.
    fn tick(&mut self, cam: &mut Camera, held: &MoveInput, dt_s: f32, ctx: &mut NavCtx<'_>) -> bool {
        shared::walk(cam, held, dt_s, ctx)
    }
    /// The point the controller turns around, if it has one (the panel shows it).
    fn pivot(&self) -> Option<Vec3> {
        None
    }
}

/// Moves both controllers share: walking (WASD), panning, centring on a double-click.
pub mod shared {
    use super::*;

    /// WASD, Q/E along the up axis, Shift ×4, at the camera's speed, adapted first to the depth ahead
    /// (see [`Camera::adapt_speed`]).
    pub fn walk(cam: &mut Camera, held: &MoveInput, dt_s: f32, ctx: &mut NavCtx<'_>) -> bool {
        if !held.is_moving() || dt_s <= 0.0 {
            return false;
        }
        if cam.adaptive_speed {
            let (w, h) = ctx.size_px;
            let center = Vec2::new(w as f32 * 0.5, h as f32 * 0.5);
            let ahead = ctx.probe.probe(center, AHEAD_RADIUS_PX).map(|p| (p - cam.pose.eye).dot(cam.basis().forward));
            cam.adapt_speed(ahead, dt_s);
        }
        cam.walk(held, dt_s);
        true
    }

    /// The view depth to pan at when the press at `at_px` found nothing: the framed box's centre.
    pub fn fallback_depth(cam: &Camera) -> f32 {
        let d = (cam.frame_box.center() - cam.pose.eye).dot(cam.basis().forward);
        if d > 0.0 {
            d
        } else {
            cam.frame_box.radius().max(1e-3)
        }
    }

    /// Moves the eye in the view plane by `delta_px` (framebuffer pixels, y down), so that what lies at
    /// view depth `depth` follows the cursor.
    pub fn pan(cam: &mut Camera, delta_px: Vec2, depth: f32, height_px: u32) -> bool {
        if delta_px == Vec2::ZERO {
            return false;
        }
        let upp = cam.units_per_px(depth, height_px);
        let b = cam.basis();
        cam.pose.eye += (-b.right * delta_px.x + b.up * delta_px.y) * upp;
        true
    }

    /// The wheel of an orthographic camera, in either controller: zooms about the point under the
    /// cursor by the orbit's dolly ratio a notch. Whether it did (perspective: it does not).
    pub fn zoom_ortho(cam: &mut Camera, notches: f32, at_px: Vec2, size_px: (u32, u32)) -> bool {
        if !cam.is_ortho() || notches == 0.0 {
            return false;
        }
        cam.zoom_ortho((1.0 - super::super::orbit::DOLLY_PER_NOTCH).powf(notches), at_px, size_px);
        true
    }

    /// The world direction of the ray through `at_px` (perspective).
    pub fn ray(cam: &Camera, at_px: Vec2, size_px: (u32, u32)) -> Vec3 {
        let (w, h) = (size_px.0.max(1) as f32, size_px.1.max(1) as f32);
        let t = (FOV_Y_RAD * 0.5).tan();
        let x = (at_px.x / w * 2.0 - 1.0) * t * w / h;
        let y = (1.0 - at_px.y / h * 2.0) * t;
        let b = cam.basis();
        (b.forward + b.right * x + b.up * y).normalize()
    }

    /// Double-click: slides the camera in its view plane so that the point under `at_px` comes to the
    /// centre of the screen; returns that point.
    pub fn center_on(cam: &mut Camera, at_px: Vec2, ctx: &mut NavCtx<'_>) -> Option<Vec3> {
        let hit = ctx.probe.probe(at_px, PICK_RADIUS_PX)?;
        let f = cam.basis().forward;
        let offset = hit - cam.pose.eye;
        cam.pose.eye += offset - f * offset.dot(f);
        Some(hit)
    }
}
