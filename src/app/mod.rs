//! The interactive viewer, as input → actions → state → frame.
//!
//! How it works: [`run::run`] is the loop. Window events become [`crate::input::Action`]s (the
//! keymap; the panel's widgets return the same actions); [`update`] carries them out on the
//! [`state::AppState`] and says what must happen ([`update::Effects`]); [`frame`] renders the points
//! into the window's pixel buffer and the panel ([`crate::ui`]) draws over them. [`layers`] keeps the
//! files shown and [`loading`] loads dropped ones in the background; [`pick`] describes picked points
//! in the files' own terms; [`capture`] names screenshots and prints poses; [`messages`] are what the
//! panel reports; [`feed`] takes points sent from another thread (the Python module's window).
pub mod capture;
pub mod feed;
pub mod frame;
pub mod layers;
pub mod loading;
pub mod messages;
pub mod pick;
pub mod run;
pub mod state;
pub mod update;
