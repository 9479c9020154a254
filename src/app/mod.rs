//! The viewer's model, as input → actions → state: pure, with no window and no GPU.
//!
//! How it works: window events become [`crate::input::Action`]s (the keymap; the panel's widgets return
//! the same actions); [`update`] carries them out on the [`state::AppState`] and says what must happen
//! ([`update::Effects`], as data), reading only what the viewer read of the last frame before the
//! update ([`pick::Reads`]). The viewer's loop ([`crate::viewer`]) does the effects and draws.
//! [`layers`] keeps the files shown and [`loading`] loads dropped ones in the background; [`pick`]
//! describes picked points in the files' own terms; [`gizmo`] is the geometry of the handles that move,
//! turn and resize the selected clip box; [`capture`] names screenshots and prints poses;
//! [`messages`] are what the panel reports; [`resolution`] picks the render scale that holds the
//! frame-time target while the camera moves.
pub mod capture;
pub mod gizmo;
pub mod layers;
pub mod loading;
pub mod measure;
pub mod messages;
pub mod notes;
pub mod pick;
pub mod profile;
pub mod project;
pub mod raster;
pub mod resolution;
pub mod state;
pub mod update;
