//! Input: window events → actions.
//!
//! How it works: [`event::InputEvent`] is what the window (or an input [`script`]) reports;
//! [`keymap::Keymap`] turns events into [`action::Action`]s, which the viewer's update step carries
//! out. The panel emits the same actions, so every key and its button do one thing.
pub mod action;
pub mod event;
pub mod keymap;
pub mod script;

pub use action::Action;
pub use event::InputEvent;
pub use keymap::{Keymap, KeymapCtx, BINDINGS};
