//! Input events: what the window reports, in a form a script can hold.
//!
//! How it works: [`InputEvent::from_glfw`] keeps the GLFW events the viewer acts on (cursor, buttons,
//! wheel, keys, dropped files, focus) and drops the rest. Keys are named as GLFW names them in its
//! `Key` enum's `Debug` form (`"W"`, `"Escape"`, `"Kp7"`, `"Num1"`, `"LeftShift"`), which is also how a
//! script ([`super::script`]) spells them; [`key_by_name`] reads them back. Positions are GLFW's
//! screen coordinates, from the window's top-left corner.
use glfw::{Action, Key, Modifiers, MouseButton, WindowEvent};
use std::path::PathBuf;

/// Modifier keys held with a key or button.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Mods {
    #[serde(default)]
    pub shift: bool,
    #[serde(default)]
    pub ctrl: bool,
    #[serde(default)]
    pub alt: bool,
}

impl Mods {
    pub fn from_glfw(m: Modifiers) -> Mods {
        Mods {
            shift: m.contains(Modifiers::Shift),
            ctrl: m.contains(Modifiers::Control),
            alt: m.contains(Modifiers::Alt),
        }
    }
}

/// A mouse button the viewer uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Button {
    Left,
    Right,
    Middle,
}

/// One input event.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputEvent {
    /// The cursor moved to (x, y), screen coordinates from the top-left.
    CursorPos {
        x: f64,
        y: f64,
    },
    Button {
        button: Button,
        down: bool,
        #[serde(default)]
        mods: Mods,
    },
    /// Wheel notches, positive away from the user.
    Scroll {
        dy: f64,
    },
    Key {
        #[serde(with = "key_serde")]
        key: Key,
        down: bool,
        #[serde(default)]
        repeat: bool,
        #[serde(default)]
        mods: Mods,
    },
    /// Files dropped on the window.
    Drop {
        paths: Vec<PathBuf>,
    },
    Focus {
        focused: bool,
    },
}

impl InputEvent {
    /// The event the viewer acts on for a GLFW event, if any.
    pub fn from_glfw(e: &WindowEvent) -> Option<InputEvent> {
        Some(match e {
            WindowEvent::CursorPos(x, y) => InputEvent::CursorPos { x: *x, y: *y },
            WindowEvent::MouseButton(b, action, mods) => InputEvent::Button {
                button: match b {
                    MouseButton::Button1 => Button::Left,
                    MouseButton::Button2 => Button::Right,
                    MouseButton::Button3 => Button::Middle,
                    _ => return None,
                },
                down: *action != Action::Release,
                mods: Mods::from_glfw(*mods),
            },
            WindowEvent::Scroll(_, dy) => InputEvent::Scroll { dy: *dy },
            WindowEvent::Key(key, _, action, mods) => InputEvent::Key {
                key: *key,
                down: *action != Action::Release,
                repeat: *action == Action::Repeat,
                mods: Mods::from_glfw(*mods),
            },
            WindowEvent::FileDrop(paths) => InputEvent::Drop { paths: paths.clone() },
            WindowEvent::Focus(f) => InputEvent::Focus { focused: *f },
            _ => return None,
        })
    }
}

impl InputEvent {
    /// The GLFW event `self` stands for (what [`InputEvent::from_glfw`] read), so that a scripted
    /// event reaches the panel as the window's own would; `None` for drops and focus, which the panel
    /// does not take.
    pub fn to_glfw(&self) -> Option<WindowEvent> {
        let mods = |m: &Mods| {
            let mut g = Modifiers::empty();
            g.set(Modifiers::Shift, m.shift);
            g.set(Modifiers::Control, m.ctrl);
            g.set(Modifiers::Alt, m.alt);
            g
        };
        let action = |down: bool, repeat: bool| match (down, repeat) {
            (false, _) => Action::Release,
            (true, true) => Action::Repeat,
            (true, false) => Action::Press,
        };
        Some(match self {
            InputEvent::CursorPos { x, y } => WindowEvent::CursorPos(*x, *y),
            InputEvent::Button { button, down, mods: m } => WindowEvent::MouseButton(
                match button {
                    Button::Left => MouseButton::Button1,
                    Button::Right => MouseButton::Button2,
                    Button::Middle => MouseButton::Button3,
                },
                action(*down, false),
                mods(m),
            ),
            InputEvent::Scroll { dy } => WindowEvent::Scroll(0.0, *dy),
            InputEvent::Key { key, down, repeat, mods: m } => {
                WindowEvent::Key(*key, 0, action(*down, *repeat), mods(m))
            }
            InputEvent::Drop { .. } | InputEvent::Focus { .. } => return None,
        })
    }
}

/// Every key a script may name (those the viewer binds, plus the modifiers).
const KEYS: &[Key] = &[
    Key::A,
    Key::B,
    Key::C,
    Key::D,
    Key::E,
    Key::F,
    Key::G,
    Key::H,
    Key::I,
    Key::J,
    Key::K,
    Key::L,
    Key::M,
    Key::N,
    Key::O,
    Key::P,
    Key::Q,
    Key::R,
    Key::S,
    Key::T,
    Key::U,
    Key::V,
    Key::W,
    Key::X,
    Key::Y,
    Key::Z,
    Key::Num0,
    Key::Num1,
    Key::Num2,
    Key::Num3,
    Key::Num4,
    Key::Num5,
    Key::Num6,
    Key::Num7,
    Key::Num8,
    Key::Num9,
    Key::Kp0,
    Key::Kp1,
    Key::Kp2,
    Key::Kp3,
    Key::Kp4,
    Key::Kp5,
    Key::Kp6,
    Key::Kp7,
    Key::Kp8,
    Key::Kp9,
    Key::KpAdd,
    Key::KpSubtract,
    Key::Equal,
    Key::Minus,
    Key::LeftBracket,
    Key::RightBracket,
    Key::Escape,
    Key::Tab,
    Key::Space,
    Key::Enter,
    Key::Backspace,
    Key::Delete,
    Key::F1,
    Key::F2,
    Key::F3,
    Key::F4,
    Key::F5,
    Key::F6,
    Key::F7,
    Key::F8,
    Key::F9,
    Key::F10,
    Key::F11,
    Key::F12,
    Key::LeftShift,
    Key::RightShift,
    Key::LeftControl,
    Key::RightControl,
    Key::LeftAlt,
    Key::RightAlt,
    Key::Up,
    Key::Down,
    Key::Left,
    Key::Right,
    Key::PageUp,
    Key::PageDown,
    Key::Home,
    Key::End,
];

/// A key's name (GLFW's `Debug` form).
pub fn key_name(key: Key) -> String {
    format!("{key:?}")
}

/// The key named `name` (case-insensitive; digits and single letters also as `"1"`, `"w"`).
pub fn key_by_name(name: &str) -> Option<Key> {
    let n = name.trim();
    let n = if n.len() == 1 && n.as_bytes()[0].is_ascii_digit() { format!("Num{n}") } else { n.to_string() };
    KEYS.iter().copied().find(|k| key_name(*k).eq_ignore_ascii_case(&n))
}

mod key_serde {
    use glfw::Key;
    pub fn serialize<S: serde::Serializer>(key: &Key, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::key_name(*key))
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        let name: String = serde::Deserialize::deserialize(d)?;
        super::key_by_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown key '{name}' (examples: W, Escape, Kp7, Num1, LeftShift)"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glfw_events_convert_and_others_are_dropped() {
        let drop = WindowEvent::FileDrop(vec![PathBuf::from("/tmp/a.las"), PathBuf::from("b.ply")]);
        assert_eq!(
            InputEvent::from_glfw(&drop),
            Some(InputEvent::Drop { paths: vec!["/tmp/a.las".into(), "b.ply".into()] })
        );
        let key = WindowEvent::Key(Key::W, 25, Action::Repeat, Modifiers::Shift);
        assert_eq!(
            InputEvent::from_glfw(&key),
            Some(InputEvent::Key {
                key: Key::W,
                down: true,
                repeat: true,
                mods: Mods { shift: true, ..Default::default() }
            })
        );
        let b = WindowEvent::MouseButton(MouseButton::Button3, Action::Release, Modifiers::empty());
        assert_eq!(
            InputEvent::from_glfw(&b),
            Some(InputEvent::Button { button: Button::Middle, down: false, mods: Mods::default() })
        );
        assert_eq!(
            InputEvent::from_glfw(&WindowEvent::MouseButton(MouseButton::Button6, Action::Press, Modifiers::empty())),
            None
        );
        assert_eq!(InputEvent::from_glfw(&WindowEvent::Refresh), None);
    }

    #[test]
    fn events_go_back_to_the_glfw_events_they_came_from() {
        let glfw_events = [
            WindowEvent::CursorPos(105.0, 37.5),
            WindowEvent::MouseButton(MouseButton::Button1, Action::Press, Modifiers::Control),
            WindowEvent::MouseButton(MouseButton::Button2, Action::Release, Modifiers::empty()),
            WindowEvent::Scroll(0.0, -2.0),
            WindowEvent::Key(Key::W, 0, Action::Repeat, Modifiers::Shift | Modifiers::Alt),
            WindowEvent::Key(Key::Escape, 0, Action::Release, Modifiers::empty()),
        ];
        for e in glfw_events {
            let ours = InputEvent::from_glfw(&e).expect("kept");
            assert_eq!(ours.to_glfw(), Some(e.clone()), "{e:?}");
        }
        assert_eq!(InputEvent::Drop { paths: vec![] }.to_glfw(), None);
    }

    #[test]
    fn keys_round_trip_through_their_names_and_json() {
        for &k in KEYS {
            assert_eq!(key_by_name(&key_name(k)), Some(k));
        }
        assert_eq!(key_by_name("w"), Some(Key::W));
        assert_eq!(key_by_name("3"), Some(Key::Num3));
        assert_eq!(key_by_name("kp7"), Some(Key::Kp7));
        assert_eq!(key_by_name("nope"), None);
        let e: InputEvent = serde_json::from_str(r#"{"type": "key", "key": "Escape", "down": true}"#).unwrap();
        assert_eq!(e, InputEvent::Key { key: Key::Escape, down: true, repeat: false, mods: Mods::default() });
        assert_eq!(serde_json::from_str::<InputEvent>(&serde_json::to_string(&e).unwrap()).unwrap(), e);
        let bad = serde_json::from_str::<InputEvent>(r#"{"type": "key", "key": "Nope", "down": true}"#).unwrap_err();
        assert!(bad.to_string().contains("unknown key 'Nope'"), "{bad}");
    }
}
