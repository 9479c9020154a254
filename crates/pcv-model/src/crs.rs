//! Coordinate reference systems as the viewer uses them: what a file's coordinates are (a name, an
//! EPSG code, a kind) and the units its lengths are in, across and up.
//!
//! How it works: `pcv_io::crs` reads a file's CRS (the OGC WKT or GeoTIFF keys of LAS, LAZ and COPC,
//! an E57 file's coordinate metadata, a `.prj` beside the file, `--crs`) through the proj-wkt library
//! and fills a [`Crs`]. Everything a person reads as a length goes through [`Units`]: local
//! coordinates are the file's own minus an origin, so a length along the ground is in the horizontal
//! unit and one up is in the vertical unit; [`Units`] names them (m, ft, ftUS) and converts to metres
//! when the viewer is asked to. A 3D distance in a system whose vertical unit differs from its
//! horizontal one (metres across, US survey feet up) converts the vertical part first.
use glam::DVec3;

/// A unit of length, as metres per unit.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct LengthUnit {
    pub metres: f64,
}

/// Units by their size, symbol and name (the symbols are the ones PDAL and surveyors print).
const KNOWN: &[(f64, &str, &str)] = &[
    (1.0, "m", "metre"),
    (0.3048, "ft", "foot"),
    (1200.0 / 3937.0, "ftUS", "US survey foot"),
    (1000.0, "km", "kilometre"),
    (0.01, "cm", "centimetre"),
    (0.001, "mm", "millimetre"),
    (0.9144, "yd", "yard"),
    (0.201_168, "ch", "Gunter's chain"),
];

impl LengthUnit {
    pub const METRE: LengthUnit = LengthUnit { metres: 1.0 };
    pub const FOOT: LengthUnit = LengthUnit { metres: 0.3048 };
    pub const US_SURVEY_FOOT: LengthUnit = LengthUnit { metres: 1200.0 / 3937.0 };

    fn known(self) -> Option<(&'static str, &'static str)> {
        KNOWN.iter().find(|(m, _, _)| (m - self.metres).abs() <= 1e-9 * m).map(|&(_, s, n)| (s, n))
    }

    /// The symbol a length is printed with: `m`, `ft`, `ftUS`, … (`u` and its size in metres for
    /// others, as `u(0.5 m)`).
    pub fn symbol(self) -> String {
        match self.known() {
            Some((s, _)) => s.to_string(),
            None => format!("u({} m)", self.metres),
        }
    }

    /// The unit's name (`metre`, `foot`, `US survey foot`, or its size).
    pub fn name(self) -> String {
        match self.known() {
            Some((_, n)) => n.to_string(),
            None => format!("{} m", self.metres),
        }
    }

    pub fn is_metre(self) -> bool {
        self.metres == 1.0
    }
}

/// What a CRS's coordinates are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CrsKind {
    /// Easting, northing and height in linear units.
    Projected,
    /// Longitude and latitude in degrees, height in linear units.
    Geographic,
    /// Earth-centred X, Y, Z in metres.
    Geocentric,
    /// A vertical system alone (heights; the horizontal coordinates are unnamed).
    Vertical,
}

impl std::fmt::Display for CrsKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CrsKind::Projected => "projected",
            CrsKind::Geographic => "geographic",
            CrsKind::Geocentric => "geocentric",
            CrsKind::Vertical => "vertical",
        })
    }
}

/// A file's coordinate reference system.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Crs {
    /// Its name as the definition gives it (the horizontal system's, for a compound one).
    pub name: String,
    /// The horizontal (or only) system's EPSG code, when known.
    pub epsg: Option<u32>,
    pub kind: CrsKind,
    /// The unit of the horizontal coordinates (projected) or of the geocentric ones; metres for
    /// geographic systems (their lengths are measured in a local metric frame).
    pub horizontal_unit: LengthUnit,
    /// The vertical system of a compound CRS: its name and EPSG code.
    pub vertical_name: Option<String>,
    pub vertical_epsg: Option<u32>,
    /// The unit of heights: the vertical system's, else the horizontal unit (projected) or metres.
    pub vertical_unit: LengthUnit,
    /// Where it was read: `OGC WKT VLR`, `GeoTIFF keys`, `--crs`, `terrain.prj`, `E57 coordinate metadata`.
    pub read_from: String,
    /// The definition as read (WKT, `EPSG:N`, PROJJSON, ...), for reprojection and `pcv info --json`.
    pub definition: String,
}

impl Crs {
    /// One line: name, EPSG code, kind and units (`NAD83 / Oregon GIC Lambert (ft) (EPSG:2992),
    /// projected, ft` or `…, m across, ftUS up`).
    pub fn summary(&self) -> String {
        let mut s = self.name.clone();
        if s.is_empty() {
            s = "unnamed".into();
        }
        if let Some(c) = self.epsg {
            s.push_str(&format!(" (EPSG:{c})"));
        }
        if let Some(v) = &self.vertical_name {
            s.push_str(&format!(" + {v}"));
            if let Some(c) = self.vertical_epsg {
                s.push_str(&format!(" (EPSG:{c})"));
            }
        }
        s.push_str(&match self.kind {
            CrsKind::Geographic => format!(", geographic (degrees; heights in {})", self.vertical_unit.symbol()),
            CrsKind::Geocentric => ", geocentric (m)".to_string(),
            _ => format!(", {}, {}", self.kind, self.units().describe()),
        });
        s
    }

    /// The units its lengths are read in.
    pub fn units(&self) -> Units {
        Units { horizontal: self.horizontal_unit, vertical: self.vertical_unit, known: true, in_metres: false }
    }

    /// Whether two files' systems are the same (by EPSG codes where both have them, else by definition).
    pub fn same_as(&self, other: &Crs) -> bool {
        match (self.epsg, other.epsg) {
            (Some(a), Some(b)) => a == b && self.vertical_epsg == other.vertical_epsg,
            _ => self.definition == other.definition,
        }
    }
}

/// The units the viewer prints lengths in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Units {
    /// The file's units across and up.
    pub horizontal: LengthUnit,
    pub vertical: LengthUnit,
    /// Whether a CRS named them (without one, lengths print without a unit).
    pub known: bool,
    /// Print every length in metres instead (the viewer's switch).
    pub in_metres: bool,
}

impl Default for Units {
    fn default() -> Self {
        Units::UNKNOWN
    }
}

/// A distance between two points and its parts along the ground and up, in [`Units`]' display units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Distance {
    /// The 3D distance (the vertical part converted to the horizontal unit first).
    pub total: f64,
    pub horizontal: f64,
    /// Signed, along the up axis.
    pub vertical: f64,
}

impl Units {
    /// No CRS: the file's units, unnamed.
    pub const UNKNOWN: Units =
        Units { horizontal: LengthUnit::METRE, vertical: LengthUnit::METRE, known: false, in_metres: false };

    /// The file's units in words: `ft`, or `m across, ftUS up` when they differ.
    pub fn describe(&self) -> String {
        if !self.known {
            return "units unknown".into();
        }
        match self.horizontal == self.vertical {
            true => self.horizontal.symbol(),
            false => format!("{} across, {} up", self.horizontal.symbol(), self.vertical.symbol()),
        }
    }

    /// These units with lengths printed in metres (`true`) or the file's own.
    pub fn with_metres(self, in_metres: bool) -> Units {
        Units { in_metres, ..self }
    }

    /// The unit lengths across are printed in.
    pub fn horizontal_shown(&self) -> LengthUnit {
        if self.in_metres {
            LengthUnit::METRE
        } else {
            self.horizontal
        }
    }

    /// The unit heights are printed in.
    pub fn vertical_shown(&self) -> LengthUnit {
        if self.in_metres {
            LengthUnit::METRE
        } else {
            self.vertical
        }
    }

    /// `v` (in the file's horizontal unit) in the shown horizontal unit.
    pub fn across(&self, v: f64) -> f64 {
        v * self.horizontal.metres / self.horizontal_shown().metres
    }

    /// `v` (in the file's vertical unit) in the shown vertical unit.
    pub fn up(&self, v: f64) -> f64 {
        v * self.vertical.metres / self.vertical_shown().metres
    }

    /// The suffix for lengths across: ` ft`, ` m`, or nothing when the unit is unknown.
    pub fn across_suffix(&self) -> String {
        match self.known || self.in_metres {
            true => format!(" {}", self.horizontal_shown().symbol()),
            false => String::new(),
        }
    }

    /// The suffix for heights.
    pub fn up_suffix(&self) -> String {
        match self.known || self.in_metres {
            true => format!(" {}", self.vertical_shown().symbol()),
            false => String::new(),
        }
    }

    /// A length across (file horizontal units) with `decimals` and its unit: `721.737 ft`.
    pub fn length(&self, v: f64, decimals: usize) -> String {
        format!("{:.decimals$}{}", self.across(v), self.across_suffix())
    }

    /// A height (file vertical units) with `decimals` and its unit.
    pub fn height(&self, v: f64, decimals: usize) -> String {
        format!("{:.decimals$}{}", self.up(v), self.up_suffix())
    }

    /// The distance from `a` to `b` (file coordinates) with `up` the unit up axis: the vertical part in
    /// the vertical unit, the rest in the horizontal one, the total in the horizontal one.
    pub fn distance(&self, a: DVec3, b: DVec3, up: DVec3) -> Distance {
        let d = b - a;
        let vertical_file = d.dot(up);
        let horizontal_file = (d - up * vertical_file).length();
        // The vertical part in horizontal file units, for the 3D distance.
        let vertical_across = vertical_file * self.vertical.metres / self.horizontal.metres;
        let total_file = (horizontal_file * horizontal_file + vertical_across * vertical_across).sqrt();
        Distance {
            total: self.across(total_file),
            horizontal: self.across(horizontal_file),
            vertical: self.up(vertical_file),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crs(h: LengthUnit, v: LengthUnit) -> Crs {
        Crs {
            name: "test".into(),
            epsg: Some(2992),
            kind: CrsKind::Projected,
            horizontal_unit: h,
            vertical_name: None,
            vertical_epsg: None,
            vertical_unit: v,
            read_from: "test".into(),
            definition: "EPSG:2992".into(),
        }
    }

    #[test]
    fn units_are_named_as_surveyors_write_them() {
        assert_eq!(LengthUnit::METRE.symbol(), "m");
        assert_eq!(LengthUnit::FOOT.symbol(), "ft");
        assert_eq!(LengthUnit { metres: 0.304_800_609_601_219 }.symbol(), "ftUS");
        assert_eq!(LengthUnit { metres: 0.5 }.symbol(), "u(0.5 m)");
        assert_eq!(LengthUnit::US_SURVEY_FOOT.name(), "US survey foot");
    }

    #[test]
    fn a_feet_file_measures_in_feet_and_in_metres_when_asked() {
        let u = crs(LengthUnit::FOOT, LengthUnit::FOOT).units();
        assert_eq!(u.length(721.737, 3), "721.737 ft");
        assert_eq!(u.with_metres(true).length(721.737, 3), "219.985 m");
        let d = u.distance(DVec3::ZERO, DVec3::new(300.0, 400.0, 0.0), DVec3::Z);
        assert_eq!((d.total, d.horizontal, d.vertical), (500.0, 500.0, 0.0));
        // No CRS: plain numbers.
        assert_eq!(Units::UNKNOWN.length(2.5, 2), "2.50");
        assert_eq!(Units::UNKNOWN.with_metres(true).length(2.5, 2), "2.50 m");
    }

    #[test]
    fn a_compound_system_converts_heights_before_the_3d_distance() {
        // Metres across, US survey feet up: 30 m across and 131.23 ftUS (40 m) up is 50 m.
        let up_ft = 40.0 / LengthUnit::US_SURVEY_FOOT.metres;
        let u = crs(LengthUnit::METRE, LengthUnit::US_SURVEY_FOOT).units();
        let d = u.distance(DVec3::ZERO, DVec3::new(30.0, 0.0, up_ft), DVec3::Z);
        assert!((d.total - 50.0).abs() < 1e-9 && (d.horizontal - 30.0).abs() < 1e-12, "{d:?}");
        assert!((d.vertical - up_ft).abs() < 1e-9, "heights stay in their own unit: {d:?}");
        assert_eq!(u.height(up_ft, 2), "131.23 ftUS");
        let m = u.with_metres(true).distance(DVec3::ZERO, DVec3::new(30.0, 0.0, up_ft), DVec3::Z);
        assert!((m.total - 50.0).abs() < 1e-9 && (m.vertical - 40.0).abs() < 1e-9, "{m:?}");
        assert!(crs(LengthUnit::METRE, LengthUnit::US_SURVEY_FOOT).summary().ends_with("m across, ftUS up"));
    }
}
