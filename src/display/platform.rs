//! imgui ↔ GLFW platform glue (imgui-glfw-support is too old for imgui 0.12, so this is our own).
//!
//! How it works: imgui 0.12 (Dear ImGui 1.89) takes input as a queue of events. [`GlfwPlatform`]
//! turns each [`glfw::WindowEvent`] into the matching `Io::add_*_event` call — cursor position (screen
//! coordinates, as imgui's display size), mouse buttons, wheel, keys (GLFW key → `imgui::Key`, plus
//! the Ctrl/Shift/Alt/Super modifier keys that 1.89 wants as `ImGuiMod_*` events) and typed
//! characters — and [`GlfwPlatform::prepare_frame`] sets what imgui reads once a frame: display size in
//! screen coordinates, framebuffer scale (framebuffer pixels per screen coordinate), and delta time.
//!
//! While the viewer has the mouse for mouse-look (cursor disabled), the cursor is reported to imgui as
//! absent (`-f32::MAX`, imgui's "no mouse") and mouse events are not forwarded, so the overlay neither
//! highlights nor captures anything. Whether imgui wants the mouse or keyboard is read back by the
//! overlay (`want_capture_mouse`, `want_capture_keyboard`) and decides who gets the input.
use glfw::{Action, WindowEvent};
use imgui::{Io, Key, MouseButton};

/// Platform state: whether the mouse is currently the viewer's (mouse-look).
#[derive(Debug, Default)]
pub struct GlfwPlatform {
    mouse_captured: bool,
}

impl GlfwPlatform {
    /// Configures `imgui` for this backend: no ini file, the platform's name, docking on (windows such
    /// as the profile's dock at the main view's edges: `ui::Overlay::draw` makes the dock space).
    pub fn init(imgui: &mut imgui::Context) -> GlfwPlatform {
        imgui.set_ini_filename(None);
        imgui.io_mut().config_flags |= imgui::ConfigFlags::DOCKING_ENABLE;
        imgui.set_log_filename(None);
        imgui.set_platform_name(Some(format!("pcv-glfw {}", env!("CARGO_PKG_VERSION"))));
        GlfwPlatform::default()
    }

    /// Mouse-look on: imgui no longer sees the mouse. Off: it sees it again from the next motion.
    pub fn set_mouse_captured(&mut self, io: &mut Io, captured: bool) {
        if captured && !self.mouse_captured {
            io.add_mouse_pos_event([-f32::MAX, -f32::MAX]);
            for button in
                [MouseButton::Left, MouseButton::Right, MouseButton::Middle, MouseButton::Extra1, MouseButton::Extra2]
            {
                io.add_mouse_button_event(button, false);
            }
        }
        self.mouse_captured = captured;
    }

    /// Forwards one window event to imgui.
    pub fn handle_event(&mut self, io: &mut Io, event: &WindowEvent) {
        match *event {
            WindowEvent::CursorPos(x, y) if !self.mouse_captured => io.add_mouse_pos_event([x as f32, y as f32]),
            WindowEvent::CursorEnter(false) if !self.mouse_captured => io.add_mouse_pos_event([-f32::MAX, -f32::MAX]),
            WindowEvent::MouseButton(button, action, _) if !self.mouse_captured => {
                if let Some(b) = to_imgui_button(button) {
                    io.add_mouse_button_event(b, action != Action::Release);
                }
            }
            WindowEvent::Scroll(dx, dy) if !self.mouse_captured => io.add_mouse_wheel_event([dx as f32, dy as f32]),
            WindowEvent::Key(key, _, action, mods) => {
                let down = action != Action::Release;
                io.add_key_event(Key::ModCtrl, mods.contains(glfw::Modifiers::Control));
                io.add_key_event(Key::ModShift, mods.contains(glfw::Modifiers::Shift));
                io.add_key_event(Key::ModAlt, mods.contains(glfw::Modifiers::Alt));
                io.add_key_event(Key::ModSuper, mods.contains(glfw::Modifiers::Super));
                if let Some(k) = to_imgui_key(key) {
                    io.add_key_event(k, down);
                }
            }
            WindowEvent::Char(c) => io.add_input_character(c),
            _ => {}
        }
    }

    /// Sets display size, framebuffer scale and delta time before `new_frame`.
    pub fn prepare_frame(&self, io: &mut Io, window: &glfw::Window, dt_s: f32) {
        let (w, h) = window.get_size();
        let (fb_w, fb_h) = window.get_framebuffer_size();
        io.display_size = [w.max(0) as f32, h.max(0) as f32];
        io.display_framebuffer_scale =
            if w > 0 && h > 0 { [fb_w as f32 / w as f32, fb_h as f32 / h as f32] } else { [1.0, 1.0] };
        // imgui asserts a positive delta time.
        io.delta_time = if dt_s.is_finite() && dt_s > 0.0 { dt_s } else { 1.0 / 60.0 };
    }
}

fn to_imgui_button(button: glfw::MouseButton) -> Option<MouseButton> {
    match button {
        glfw::MouseButton::Button1 => Some(MouseButton::Left),
        glfw::MouseButton::Button2 => Some(MouseButton::Right),
        glfw::MouseButton::Button3 => Some(MouseButton::Middle),
        glfw::MouseButton::Button4 => Some(MouseButton::Extra1),
        glfw::MouseButton::Button5 => Some(MouseButton::Extra2),
        _ => None,
    }
}

/// GLFW key → imgui key (the keys imgui has; the rest are dropped).
fn to_imgui_key(key: glfw::Key) -> Option<Key> {
    use glfw::Key as G;
    Some(match key {
        G::Tab => Key::Tab,
        G::Left => Key::LeftArrow,
        G::Right => Key::RightArrow,
        G::Up => Key::UpArrow,
        G::Down => Key::DownArrow,
        G::PageUp => Key::PageUp,
        G::PageDown => Key::PageDown,
        G::Home => Key::Home,
        G::End => Key::End,
        G::Insert => Key::Insert,
        G::Delete => Key::Delete,
        G::Backspace => Key::Backspace,
        G::Space => Key::Space,
        G::Enter => Key::Enter,
        G::Escape => Key::Escape,
        G::LeftControl => Key::LeftCtrl,
        G::LeftShift => Key::LeftShift,
        G::LeftAlt => Key::LeftAlt,
        G::LeftSuper => Key::LeftSuper,
        G::RightControl => Key::RightCtrl,
        G::RightShift => Key::RightShift,
        G::RightAlt => Key::RightAlt,
        G::RightSuper => Key::RightSuper,
        G::Menu => Key::Menu,
        G::Num0 => Key::Alpha0,
        G::Num1 => Key::Alpha1,
        G::Num2 => Key::Alpha2,
        G::Num3 => Key::Alpha3,
        G::Num4 => Key::Alpha4,
        G::Num5 => Key::Alpha5,
        G::Num6 => Key::Alpha6,
        G::Num7 => Key::Alpha7,
        G::Num8 => Key::Alpha8,
        G::Num9 => Key::Alpha9,
        G::A => Key::A,
        G::B => Key::B,
        G::C => Key::C,
        G::D => Key::D,
        G::E => Key::E,
        G::F => Key::F,
        G::G => Key::G,
        G::H => Key::H,
        G::I => Key::I,
        G::J => Key::J,
        G::K => Key::K,
        G::L => Key::L,
        G::M => Key::M,
        G::N => Key::N,
        G::O => Key::O,
        G::P => Key::P,
        G::Q => Key::Q,
        G::R => Key::R,
        G::S => Key::S,
        G::T => Key::T,
        G::U => Key::U,
        G::V => Key::V,
        G::W => Key::W,
        G::X => Key::X,
        G::Y => Key::Y,
        G::Z => Key::Z,
        G::F1 => Key::F1,
        G::F2 => Key::F2,
        G::F3 => Key::F3,
        G::F4 => Key::F4,
        G::F5 => Key::F5,
        G::F6 => Key::F6,
        G::F7 => Key::F7,
        G::F8 => Key::F8,
        G::F9 => Key::F9,
        G::F10 => Key::F10,
        G::F11 => Key::F11,
        G::F12 => Key::F12,
        G::Apostrophe => Key::Apostrophe,
        G::Comma => Key::Comma,
        G::Minus => Key::Minus,
        G::Period => Key::Period,
        G::Slash => Key::Slash,
        G::Semicolon => Key::Semicolon,
        G::Equal => Key::Equal,
        G::LeftBracket => Key::LeftBracket,
        G::Backslash => Key::Backslash,
        G::RightBracket => Key::RightBracket,
        G::GraveAccent => Key::GraveAccent,
        G::CapsLock => Key::CapsLock,
        G::ScrollLock => Key::ScrollLock,
        G::NumLock => Key::NumLock,
        G::PrintScreen => Key::PrintScreen,
        G::Pause => Key::Pause,
        G::Kp0 => Key::Keypad0,
        G::Kp1 => Key::Keypad1,
        G::Kp2 => Key::Keypad2,
        G::Kp3 => Key::Keypad3,
        G::Kp4 => Key::Keypad4,
        G::Kp5 => Key::Keypad5,
        G::Kp6 => Key::Keypad6,
        G::Kp7 => Key::Keypad7,
        G::Kp8 => Key::Keypad8,
        G::Kp9 => Key::Keypad9,
        G::KpDecimal => Key::KeypadDecimal,
        G::KpDivide => Key::KeypadDivide,
        G::KpMultiply => Key::KeypadMultiply,
        G::KpSubtract => Key::KeypadSubtract,
        G::KpAdd => Key::KeypadAdd,
        G::KpEnter => Key::KeypadEnter,
        G::KpEqual => Key::KeypadEqual,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_buttons_map() {
        assert_eq!(to_imgui_key(glfw::Key::W), Some(Key::W));
        assert_eq!(to_imgui_key(glfw::Key::Escape), Some(Key::Escape));
        assert_eq!(to_imgui_key(glfw::Key::F25), None);
        assert_eq!(to_imgui_button(glfw::MouseButton::Button2), Some(MouseButton::Right));
        assert_eq!(to_imgui_button(glfw::MouseButton::Button8), None);
    }
}
