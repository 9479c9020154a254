//! Messages the window shows: what just happened (a screenshot saved, a file loaded) and what went
//! wrong (a file that could not be read).
//!
//! How it works: information fades after [`INFO_S`] seconds; errors stay until the next batch of
//! files is dropped or they are dismissed. Each message is also printed (information on stdout,
//! errors on stderr), so scripted runs and terminals see them too.
use std::time::{Duration, Instant};

/// How long information stays on screen.
pub const INFO_S: f64 = 6.0;
/// Messages kept at most (the oldest go first).
const MAX: usize = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Error,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub level: Level,
    pub text: String,
    /// When it disappears (`None`: when dismissed).
    pub until: Option<Instant>,
}

#[derive(Clone, Debug, Default)]
pub struct Messages {
    pub list: Vec<Message>,
    /// Print messages as they come (off in tests).
    pub quiet: bool,
}

impl Messages {
    pub fn info(&mut self, text: impl Into<String>) {
        let text = text.into();
        if !self.quiet {
            println!("pcv: {text}");
        }
        self.push(Message { level: Level::Info, text, until: Some(Instant::now() + Duration::from_secs_f64(INFO_S)) });
    }

    /// An info line printed already (by a loading thread: `pcv_io::notices`): shown, not printed again.
    pub fn printed(&mut self, text: impl Into<String>) {
        let text = text.into();
        self.push(Message { level: Level::Info, text, until: Some(Instant::now() + Duration::from_secs_f64(INFO_S)) });
    }

    pub fn error(&mut self, text: impl Into<String>) {
        let text = text.into();
        if !self.quiet {
            eprintln!("pcv: error: {text}");
        }
        self.push(Message { level: Level::Error, text, until: None });
    }

    fn push(&mut self, m: Message) {
        self.list.push(m);
        if self.list.len() > MAX {
            self.list.remove(0);
        }
    }

    /// Drops the messages whose time is up; whether any went.
    pub fn expire(&mut self, now: Instant) -> bool {
        let before = self.list.len();
        self.list.retain(|m| m.until.is_none_or(|t| t > now));
        self.list.len() != before
    }

    /// When the next message disappears.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.list.iter().filter_map(|m| m.until).min()
    }

    pub fn clear(&mut self) {
        self.list.clear();
    }

    pub fn clear_errors(&mut self) {
        self.list.retain(|m| m.level != Level::Error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn information_fades_and_errors_stay() {
        let mut m = Messages { quiet: true, ..Default::default() };
        m.info("saved");
        m.error("bad file");
        assert!(m.next_expiry().is_some());
        assert!(!m.expire(Instant::now()));
        assert!(m.expire(Instant::now() + Duration::from_secs(7)));
        assert_eq!(m.list.len(), 1);
        assert_eq!(m.list[0].level, Level::Error);
        assert_eq!(m.next_expiry(), None);
        for i in 0..10 {
            m.info(format!("{i}"));
        }
        assert_eq!(m.list.len(), MAX);
    }
}
