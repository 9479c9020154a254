//! The point file formats pcv reads, by name (the readers themselves are in `pcv-io`).

/// The formats pcv reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Format {
    Ply,
    Las,
    Laz,
    Pcd,
    E57,
    /// XYZ, TXT, CSV, PTS: numbers in columns.
    Text,
    /// pcv's raw 16-byte records (`.bin`, `.pcv`).
    Raw,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Ply => "PLY",
            Format::Las => "LAS",
            Format::Laz => "LAZ",
            Format::Pcd => "PCD",
            Format::E57 => "E57",
            Format::Text => "text",
            Format::Raw => "raw",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
