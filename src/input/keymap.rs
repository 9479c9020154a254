//! The keymap: input events → actions, and the table of every binding (for the help window, `--help`
//! and the README).
//!
//! How it works: [`Keymap`] keeps what single events do not say: where the cursor is, which button is
//! down and whether it moved since the press (a press and release within [`CLICK_SLOP_PX`] is a click,
//! anything more a drag), when the last click was (a second click within [`DOUBLE_CLICK_S`] and
//! [`CLICK_SLOP_PX`] is a double-click, and replaces that click), which movement keys are held, and the
//! reference point of mouse-look motion (the first position after mouse-look starts only sets it:
//! GLFW warps the cursor when it captures it). A left press on a handle of the clip-box gizmo
//! ([`KeymapCtx::gizmo`]: the handles on screen) takes the mouse from the camera until its release:
//! it becomes a gizmo press, drag and release, never a camera drag or a click; Esc, while a box is
//! edited, ends the editing instead of starting mouse-look. The panel sees every event first; what it wants
//! ([`KeymapCtx::ui_mouse`], [`KeymapCtx::ui_keyboard`]) the keymap leaves alone. Key actions fire
//! on the press, not on repeats. [`BINDINGS`] is the one list of keys and mouse actions; the help
//! window and `--help` print it.
use super::action::Action;
use super::event::{Button, InputEvent, Mods};
use crate::app::gizmo::Handles;
use glam::Vec2;
use glfw::Key;
use pcv_camera::{DragButton, MoveInput, Nav, View};

/// Longest gap between the two clicks of a double-click.
pub const DOUBLE_CLICK_S: f64 = 0.4;
/// How far (screen coordinates) the cursor may move during a click and between the clicks of a
/// double-click.
pub const CLICK_SLOP_PX: f32 = 4.0;

/// A key or mouse action and what it does.
#[derive(Clone, Copy, Debug)]
pub struct Binding {
    pub input: &'static str,
    pub does: &'static str,
}

/// Every binding, in the order the help shows them.
pub const BINDINGS: &[Binding] = &[
    Binding { input: "Left-drag", does: "orbit around the point under the cursor (orbit) / turn (fly)" },
    Binding { input: "Right- or middle-drag", does: "pan" },
    Binding {
        input: "Wheel",
        does: "zoom to the cursor (orbit, and orthographic in both) / scale the speed (fly, mouse-look)",
    },
    Binding { input: "Double-click", does: "centre the view on the point" },
    Binding { input: "Click", does: "pick a point: file coordinates, file, intensity, class, RGB" },
    Binding { input: "W A S D", does: "forward, left, back, right (speed follows the depth ahead)" },
    Binding { input: "Q / E", does: "down / up along the up axis" },
    Binding { input: "Shift", does: "move four times faster" },
    Binding { input: "Esc", does: "mouse-look on / off (cursor captured); while editing a clip box: done" },
    Binding { input: "X", does: "edit the next clip box with the mouse (after the last: done)" },
    Binding { input: "Drag an arrow", does: "clip box being edited: move it along that axis" },
    Binding { input: "Drag a ring", does: "clip box being edited: turn it about that axis" },
    Binding { input: "Drag a square", does: "clip box being edited: move that face (resize; the opposite face stays)" },
    Binding { input: "O", does: "orbit / fly controller" },
    Binding { input: "F", does: "frame the cloud from the current direction" },
    Binding { input: "R", does: "reset the camera to the start view" },
    Binding {
        input: "Numpad 7 / 1 / 3",
        does: "top / front / side view, orthographic (Ctrl: bottom / back / other side)",
    },
    Binding { input: "V", does: "next view: top, front, side (orthographic), oblique (perspective)" },
    Binding { input: "I or Numpad 5", does: "perspective / orthographic (the wheel then zooms to the cursor)" },
    Binding { input: "U", does: "next up axis: z, y, x, -z, -y, -x" },
    Binding {
        input: "T",
        does: "measure: distance, polyline, area, height, angle or point (the Measure section; again: off)",
    },
    Binding { input: "Shift+T", does: "next measurement kind" },
    Binding { input: "Enter", does: "end the polyline or area being measured" },
    Binding { input: "Backspace", does: "clear the measurement and the picked point" },
    Binding { input: "Ctrl+A", does: "pin a note at the picked point (the Measure section edits its text)" },
    Binding {
        input: "Ctrl+S",
        does: "save the project (*.pcv.json): files, camera, look, filter, bookmarks, measurements",
    },
    Binding { input: "Ctrl+E", does: "export the measurements as GeoJSON (the Measure section: CSV too)" },
    Binding {
        input: "Ctrl+G / Ctrl+Shift+G",
        does: "GeoTIFF of the orthographic top view: orthophoto / surface model (cell: the View section)",
    },
    Binding { input: "Ctrl+P", does: "profile along the last distance or polyline (again: close it)" },
    Binding { input: "F12", does: "screenshot 7680 pixels across (8K), rendered offscreen, to ./pcv-8k-<time>.png" },
    Binding { input: "P / Shift+P", does: "screenshot to ./pcv-<time>.png (Shift: with the panel)" },
    Binding { input: "K", does: "print the pose as --camera arguments (and copy it)" },
    Binding { input: "1..9 / Ctrl+1..9", does: "recall / store a camera bookmark" },
    Binding { input: "Space", does: "play / pause the --path flight" },
    Binding { input: "+ / -", does: "point size larger / smaller (adaptive: its largest size)" },
    Binding { input: "G", does: "round / square points" },
    Binding { input: "L", does: "eye-dome lighting on / off" },
    Binding { input: "J", does: "high-quality points on / off (near points blended)" },
    Binding { input: "N", does: "lengths in metres / in the file's units (ft, ftUS, ...)" },
    Binding { input: "B", does: "next background: gradient, black, gray, white" },
    Binding { input: "M", does: "next render mode" },
    Binding { input: "C", does: "next color mode" },
    Binding { input: "Tab", does: "hide / show the panel" },
    Binding { input: "H or F1", does: "this help" },
    Binding { input: "Drop files", does: "add them as layers (hold Shift: replace)" },
];

/// The bindings as text, one a line (for `--help`).
pub fn help_text() -> String {
    let width = BINDINGS.iter().map(|b| b.input.len()).max().unwrap_or(0);
    let mut s = String::from("Keys and mouse in the window (H or F1 shows them there):\n");
    for b in BINDINGS {
        s.push_str(&format!("  {:width$}  {}\n", b.input, b.does));
    }
    s
}

/// What the keymap needs to know besides the event.
#[derive(Clone, Copy, Debug)]
pub struct KeymapCtx<'a> {
    /// Mouse-look is on (the cursor is captured).
    pub mouselook: bool,
    /// The panel wants the mouse (it is over the panel, or a widget is being dragged).
    pub ui_mouse: bool,
    /// The panel wants the keyboard (a text field is active).
    pub ui_keyboard: bool,
    /// Framebuffer pixels per screen coordinate.
    pub px_per_coord: Vec2,
    /// Seconds, for double-clicks.
    pub time_s: f64,
    /// The clip-box gizmo's handles on screen (framebuffer pixels), where a box is edited and in view.
    pub gizmo: Option<&'a Handles>,
    /// A clip box is being edited (Esc ends it).
    pub editing: bool,
}

#[derive(Clone, Copy, Debug)]
struct Press {
    button: DragButton,
    at: Vec2,
    moved: bool,
    /// The press took a gizmo handle (the camera leaves the drag alone).
    gizmo: bool,
}

/// Input state between events.
#[derive(Clone, Debug, Default)]
pub struct Keymap {
    /// Cursor in screen coordinates.
    cursor: Option<Vec2>,
    look_from: Option<Vec2>,
    press: Option<Press>,
    last_click: Option<(f64, Vec2)>,
    held: Held,
}

#[derive(Clone, Copy, Debug, Default)]
struct Held {
    w: bool,
    a: bool,
    s: bool,
    d: bool,
    q: bool,
    e: bool,
    shift: bool,
}

fn drag_button(b: Button) -> DragButton {
    match b {
        Button::Left => DragButton::Left,
        Button::Right => DragButton::Right,
        Button::Middle => DragButton::Middle,
    }
}

impl Keymap {
    /// The held movement keys.
    pub fn held(&self) -> MoveInput {
        let h = &self.held;
        let axis = |p: bool, n: bool| p as i32 as f32 - n as i32 as f32;
        MoveInput { forward: axis(h.w, h.s), right: axis(h.d, h.a), up: axis(h.e, h.q), fast: h.shift }
    }

    /// The cursor in framebuffer pixels, if it is in the window.
    pub fn cursor_px(&self, px_per_coord: Vec2) -> Option<Vec2> {
        self.cursor.map(|c| c * px_per_coord)
    }

    /// Forgets held keys and the drag (the window lost focus: releases may never come).
    pub fn release_all(&mut self) {
        self.held = Held::default();
        self.press = None;
        self.look_from = None;
    }

    /// The actions one event stands for.
    pub fn handle(&mut self, ev: &InputEvent, ctx: &KeymapCtx) -> Vec<Action> {
        let mut out = Vec::new();
        let px = |p: Vec2| p * ctx.px_per_coord;
        match ev {
            InputEvent::CursorPos { x, y } => {
                let at = Vec2::new(*x as f32, *y as f32);
                self.cursor = Some(at);
                if ctx.mouselook {
                    if let Some(from) = self.look_from {
                        let d = at - from;
                        out.push(Action::Nav(Nav::Look { dx_px: d.x, dy_px: d.y }));
                    }
                    self.look_from = Some(at);
                } else if let Some(p) = self.press.as_mut() {
                    if at.distance(p.at) > CLICK_SLOP_PX {
                        p.moved = true;
                    }
                    out.push(if p.gizmo {
                        Action::GizmoDrag { at_px: px(at) }
                    } else {
                        Action::Nav(Nav::DragTo { button: p.button, at_px: px(at) })
                    });
                } else if ctx.ui_mouse {
                    out.push(Action::Hover { at_px: None });
                } else {
                    out.push(Action::Hover { at_px: Some(px(at)) });
                }
            }
            InputEvent::Button { button, down: true, .. } => {
                if ctx.mouselook || ctx.ui_mouse || self.press.is_some() {
                    return out;
                }
                let Some(at) = self.cursor else { return out };
                let b = drag_button(*button);
                let handle = ctx.gizmo.filter(|_| b == DragButton::Left).and_then(|g| g.hit(px(at)));
                self.press = Some(Press { button: b, at, moved: false, gizmo: handle.is_some() });
                out.push(match handle {
                    Some(handle) => Action::GizmoPress { handle, at_px: px(at) },
                    None => Action::Nav(Nav::DragStart { button: b, at_px: px(at) }),
                });
            }
            InputEvent::Button { button, down: false, .. } => {
                let Some(p) = self.press.filter(|p| p.button == drag_button(*button)) else { return out };
                self.press = None;
                if p.gizmo {
                    out.push(Action::GizmoRelease);
                    return out;
                }
                out.push(Action::Nav(Nav::DragEnd));
                if p.button != DragButton::Left || p.moved {
                    return out;
                }
                match self.last_click {
                    Some((t, at)) if ctx.time_s - t <= DOUBLE_CLICK_S && at.distance(p.at) <= CLICK_SLOP_PX => {
                        self.last_click = None;
                        out.push(Action::Nav(Nav::DoubleClick { at_px: px(p.at) }));
                    }
                    _ => {
                        self.last_click = Some((ctx.time_s, p.at));
                        out.push(Action::Click { at_px: px(p.at) });
                    }
                }
            }
            InputEvent::Scroll { dy } => {
                if (ctx.ui_mouse && !ctx.mouselook) || *dy == 0.0 {
                    return out;
                }
                let at = self.cursor.map(px).unwrap_or(Vec2::ZERO);
                out.push(Action::Nav(Nav::Wheel { notches: *dy as f32, at_px: at }));
            }
            InputEvent::Key { key, down, repeat, mods } => {
                // Ctrl+S saves; it does not start walking back.
                if !(mods.ctrl && *down) {
                    self.track_held(*key, *down);
                }
                if *down && !*repeat && (!ctx.ui_keyboard || (*key == Key::Escape && ctx.mouselook)) {
                    if let Some(a) = key_action(*key, mods) {
                        let a = if a == Action::ToggleMouselook && ctx.editing && !ctx.mouselook {
                            Action::SelectClipBox(None)
                        } else {
                            a
                        };
                        if matches!(a, Action::ToggleMouselook | Action::SelectClipBox(None)) {
                            self.look_from = None;
                            self.press = None;
                        }
                        out.push(a);
                    }
                }
            }
            InputEvent::Drop { paths } => {
                let replace = self.held.shift;
                out.push(Action::Open { paths: paths.clone(), replace });
            }
            InputEvent::Focus { focused } => {
                // Focus changes re-centre a captured cursor, and releases may be lost while away.
                self.look_from = None;
                if !focused {
                    self.release_all();
                }
            }
        }
        out
    }

    fn track_held(&mut self, key: Key, down: bool) {
        let h = &mut self.held;
        match key {
            Key::W => h.w = down,
            Key::A => h.a = down,
            Key::S => h.s = down,
            Key::D => h.d = down,
            Key::Q => h.q = down,
            Key::E => h.e = down,
            Key::LeftShift | Key::RightShift => h.shift = down,
            _ => {}
        }
    }
}

/// The action a key press stands for.
fn key_action(key: Key, mods: &Mods) -> Option<Action> {
    let digit = |k: Key| -> Option<usize> {
        [Key::Num1, Key::Num2, Key::Num3, Key::Num4, Key::Num5, Key::Num6, Key::Num7, Key::Num8, Key::Num9]
            .iter()
            .position(|&d| d == k)
    };
    if let Some(i) = digit(key) {
        return Some(if mods.ctrl { Action::StoreBookmark(i) } else { Action::RecallBookmark(i) });
    }
    Some(match key {
        Key::Escape => Action::ToggleMouselook,
        Key::F => Action::FrameAll,
        Key::R => Action::Reset,
        Key::M => Action::NextMode,
        Key::C => Action::NextColor,
        Key::V => Action::NextView,
        Key::I | Key::Kp5 => Action::ToggleProjection,
        Key::Kp7 => Action::View(if mods.ctrl { View::Bottom } else { View::Top }),
        Key::Kp1 => Action::View(if mods.ctrl { View::Back } else { View::Front }),
        Key::Kp3 => Action::View(if mods.ctrl { View::Left } else { View::Right }),
        Key::U => Action::NextUp,
        Key::O => Action::ToggleController,
        Key::S if mods.ctrl => Action::SaveProject,
        Key::A if mods.ctrl => Action::AddNote,
        Key::T if mods.shift => Action::NextMeasureKind,
        Key::T => Action::ToggleMeasure,
        Key::Enter | Key::KpEnter => Action::FinishMeasure,
        Key::Backspace | Key::Delete => Action::ClearMeasure,
        Key::P if mods.ctrl => Action::ToggleProfile,
        Key::E if mods.ctrl => Action::ExportMeasurements(crate::app::measure::ExportFormat::GeoJson),
        Key::G if mods.ctrl && mods.shift => Action::ExportRaster(pcv_io::raster::RasterKind::Dsm),
        Key::G if mods.ctrl => Action::ExportRaster(pcv_io::raster::RasterKind::Rgb),
        Key::P => Action::Screenshot { with_panel: mods.shift },
        Key::K => Action::PrintPose,
        Key::Space => Action::TogglePath,
        Key::Tab => Action::TogglePanel,
        Key::Equal | Key::KpAdd | Key::RightBracket => Action::PointSizeStep(1),
        Key::Minus | Key::KpSubtract | Key::LeftBracket => Action::PointSizeStep(-1),
        Key::G => Action::SetPointShape(None),
        Key::L => Action::ToggleEdl,
        Key::J => Action::ToggleQuality,
        Key::N => Action::ToggleMetres,
        Key::B => Action::NextBackground,
        Key::X => Action::NextClipBox,
        Key::H | Key::F1 => Action::ToggleHelp,
        Key::F12 => Action::HiResScreenshot,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(t: f64) -> KeymapCtx<'static> {
        KeymapCtx {
            mouselook: false,
            ui_mouse: false,
            ui_keyboard: false,
            px_per_coord: Vec2::ONE,
            time_s: t,
            gizmo: None,
            editing: false,
        }
    }

    fn key(k: Key, down: bool) -> InputEvent {
        InputEvent::Key { key: k, down, repeat: false, mods: Mods::default() }
    }

    fn button(down: bool) -> InputEvent {
        InputEvent::Button { button: Button::Left, down, mods: Mods::default() }
    }

    fn at(x: f64, y: f64) -> InputEvent {
        InputEvent::CursorPos { x, y }
    }

    #[test]
    fn press_move_release_is_a_drag_and_a_still_press_a_click() {
        let mut k = Keymap::default();
        let c = ctx(0.0);
        assert_eq!(k.handle(&at(10.0, 10.0), &c), vec![Action::Hover { at_px: Some(Vec2::new(10.0, 10.0)) }]);
        assert_eq!(
            k.handle(&button(true), &c),
            vec![Action::Nav(Nav::DragStart { button: DragButton::Left, at_px: Vec2::new(10.0, 10.0) })]
        );
        assert_eq!(
            k.handle(&at(30.0, 12.0), &c),
            vec![Action::Nav(Nav::DragTo { button: DragButton::Left, at_px: Vec2::new(30.0, 12.0) })]
        );
        // A drag ends without a click.
        assert_eq!(k.handle(&button(false), &c), vec![Action::Nav(Nav::DragEnd)]);
        // Press and release in place: a click; again soon after: a double-click instead of a second click.
        k.handle(&button(true), &ctx(1.0));
        assert_eq!(
            k.handle(&button(false), &ctx(1.0)),
            vec![Action::Nav(Nav::DragEnd), Action::Click { at_px: Vec2::new(30.0, 12.0) }]
        );
        k.handle(&button(true), &ctx(1.2));
        assert_eq!(
            k.handle(&button(false), &ctx(1.2)),
            vec![Action::Nav(Nav::DragEnd), Action::Nav(Nav::DoubleClick { at_px: Vec2::new(30.0, 12.0) })]
        );
        // Too slow: two clicks.
        k.handle(&button(true), &ctx(3.0));
        k.handle(&button(false), &ctx(3.0));
        k.handle(&button(true), &ctx(3.5));
        assert!(matches!(k.handle(&button(false), &ctx(3.5))[1], Action::Click { .. }));
    }

    #[test]
    fn positions_are_framebuffer_pixels_and_the_panel_keeps_its_input() {
        let mut k = Keymap::default();
        let hidpi = KeymapCtx { px_per_coord: Vec2::splat(2.0), ..ctx(0.0) };
        assert_eq!(k.handle(&at(5.0, 6.0), &hidpi), vec![Action::Hover { at_px: Some(Vec2::new(10.0, 12.0)) }]);
        let ui = KeymapCtx { ui_mouse: true, ui_keyboard: true, ..ctx(0.0) };
        assert_eq!(k.handle(&at(5.0, 6.0), &ui), vec![Action::Hover { at_px: None }]);
        assert!(k.handle(&button(true), &ui).is_empty());
        assert!(k.handle(&InputEvent::Scroll { dy: 1.0 }, &ui).is_empty());
        assert!(k.handle(&key(Key::F, true), &ui).is_empty());
        // Held keys are still tracked (their releases must not be lost).
        k.handle(&key(Key::W, true), &ui);
        assert_eq!(k.held().forward, 1.0);
        k.handle(&key(Key::W, false), &ctx(0.0));
        assert_eq!(k.held(), MoveInput::default());
    }

    #[test]
    fn a_press_on_a_gizmo_handle_drags_it_and_leaves_the_camera_alone() {
        use crate::app::gizmo::{Axis, Handle, Handles};
        let c = Vec2::new(100.0, 100.0);
        let handles = Handles {
            centre_px: c,
            arrows: [Some((c, c + Vec2::new(90.0, 0.0))), None, None],
            rings: [None, None, None],
            faces: [[None; 2]; 3],
        };
        let g = KeymapCtx { gizmo: Some(&handles), editing: true, ..ctx(0.0) };
        let mut k = Keymap::default();
        k.handle(&at(150.0, 101.0), &g);
        assert_eq!(
            k.handle(&button(true), &g),
            vec![Action::GizmoPress { handle: Handle::Move(Axis::X), at_px: Vec2::new(150.0, 101.0) }]
        );
        assert_eq!(k.handle(&at(170.0, 120.0), &g), vec![Action::GizmoDrag { at_px: Vec2::new(170.0, 120.0) }]);
        assert_eq!(k.handle(&button(false), &g), vec![Action::GizmoRelease]);
        // A press and release in place on a handle is no click either.
        k.handle(&at(120.0, 98.0), &g);
        k.handle(&button(true), &g);
        assert_eq!(k.handle(&button(false), &g), vec![Action::GizmoRelease]);
        // Away from the handles, the camera as before; the right button never takes a handle.
        k.handle(&at(300.0, 300.0), &g);
        assert!(matches!(k.handle(&button(true), &g)[..], [Action::Nav(Nav::DragStart { .. })]));
        k.handle(&button(false), &g);
        k.handle(&at(150.0, 101.0), &g);
        let right = InputEvent::Button { button: Button::Right, down: true, mods: Mods::default() };
        assert!(matches!(k.handle(&right, &g)[..], [Action::Nav(Nav::DragStart { button: DragButton::Right, .. })]));
        // Esc ends the editing (not mouse-look); X edits the next box.
        assert_eq!(k.handle(&key(Key::Escape, true), &g), vec![Action::SelectClipBox(None)]);
        assert_eq!(k.handle(&key(Key::X, true), &ctx(0.0)), vec![Action::NextClipBox]);
        assert_eq!(k.handle(&key(Key::Escape, true), &ctx(0.0)), vec![Action::ToggleMouselook]);
    }

    #[test]
    fn mouselook_motion_starts_from_the_first_position() {
        let mut k = Keymap::default();
        assert_eq!(k.handle(&key(Key::Escape, true), &ctx(0.0)), vec![Action::ToggleMouselook]);
        let look = KeymapCtx { mouselook: true, ..ctx(0.0) };
        assert!(k.handle(&at(400.0, 300.0), &look).is_empty());
        assert_eq!(k.handle(&at(410.0, 295.0), &look), vec![Action::Nav(Nav::Look { dx_px: 10.0, dy_px: -5.0 })]);
        // Clicks do nothing in mouse-look; the wheel still scales the speed.
        assert!(k.handle(&button(true), &look).is_empty());
        assert!(matches!(k.handle(&InputEvent::Scroll { dy: -1.0 }, &look)[0], Action::Nav(Nav::Wheel { .. })));
        // Esc works even when the panel has the keyboard, while mouse-look is on.
        let ui = KeymapCtx { ui_keyboard: true, ..look };
        assert_eq!(k.handle(&key(Key::Escape, true), &ui), vec![Action::ToggleMouselook]);
    }

    #[test]
    fn keys_map_to_their_actions() {
        let mut k = Keymap::default();
        let ctrl = Mods { ctrl: true, ..Default::default() };
        let press = |k: &mut Keymap, key: Key, mods: Mods| {
            k.handle(&InputEvent::Key { key, down: true, repeat: false, mods }, &ctx(0.0))
        };
        assert_eq!(press(&mut k, Key::Kp7, Mods::default()), vec![Action::View(View::Top)]);
        assert_eq!(press(&mut k, Key::Kp7, ctrl), vec![Action::View(View::Bottom)]);
        assert_eq!(press(&mut k, Key::Num3, ctrl), vec![Action::StoreBookmark(2)]);
        assert_eq!(press(&mut k, Key::Num3, Mods::default()), vec![Action::RecallBookmark(2)]);
        assert_eq!(
            press(&mut k, Key::P, Mods { shift: true, ..Default::default() }),
            vec![Action::Screenshot { with_panel: true }]
        );
        assert_eq!(press(&mut k, Key::F1, Mods::default()), vec![Action::ToggleHelp]);
        assert_eq!(press(&mut k, Key::KpAdd, Mods::default()), vec![Action::PointSizeStep(1)]);
        assert_eq!(press(&mut k, Key::Minus, Mods::default()), vec![Action::PointSizeStep(-1)]);
        assert_eq!(press(&mut k, Key::L, Mods::default()), vec![Action::ToggleEdl]);
        assert_eq!(press(&mut k, Key::J, Mods::default()), vec![Action::ToggleQuality]);
        assert_eq!(press(&mut k, Key::G, Mods::default()), vec![Action::SetPointShape(None)]);
        assert_eq!(press(&mut k, Key::B, Mods::default()), vec![Action::NextBackground]);
        assert!(press(&mut k, Key::W, Mods::default()).is_empty());
        // Repeats do not fire actions.
        assert!(k
            .handle(&InputEvent::Key { key: Key::F, down: true, repeat: true, mods: Mods::default() }, &ctx(0.0))
            .is_empty());
        // Shift held while files drop: replace.
        k.handle(&key(Key::LeftShift, true), &ctx(0.0));
        assert_eq!(
            k.handle(&InputEvent::Drop { paths: vec!["a.ply".into()] }, &ctx(0.0)),
            vec![Action::Open { paths: vec!["a.ply".into()], replace: true }]
        );
        k.handle(&InputEvent::Focus { focused: false }, &ctx(0.0));
        assert_eq!(k.held(), MoveInput::default());
    }

    #[test]
    fn the_help_lists_every_bound_key() {
        let text = help_text();
        for word in ["Esc", "W A S D", "Numpad 7", "H or F1", "Drop files", "Double-click", "mouse-look"] {
            assert!(text.contains(word), "help lacks {word}:\n{text}");
        }
    }
}
