//! Measurements: what a surveyor reads off a cloud, from points picked in the file's own coordinates.
//!
//! How it works: a [`Measurement`] is a kind and its vertices in file coordinates (f64, as picked), so
//! nothing is lost to the local f32 frame. [`Measurement::values`] computes every quantity of its kind
//! in the file's units through [`Units`]: lengths across in the horizontal unit, heights in the
//! vertical one. Where a quantity mixes both (a 3D length, a sloped area, an angle), the vertical part
//! is first converted to the horizontal unit (a compound CRS in metres across and US survey feet up
//! measures right). "Horizontal" is the plane across the up axis the view stands on.
//!
//! - distance (2 points): 3D length, horizontal length, height difference;
//! - polyline (2 or more): 3D length, horizontal length, rise from the first to the last point;
//! - area (3 or more, closed): horizontal area (the polygon projected on the horizontal plane, by the
//!   shoelace formula), sloped area (the polygon's own area, by Newell's vector sum: exact for a
//!   planar polygon), 3D perimeter;
//! - height (2 points): height difference, horizontal distance, slope (percent and degrees);
//! - angle (3 points): the angle at the middle one, in degrees;
//! - point (1 point): its coordinates.
//!
//! Coordinates are taken relative to the first vertex before any product, so UTM-sized numbers keep
//! their millimetres.
use crate::crs::Units;
use glam::DVec3;

/// What a measurement measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeasureKind {
    Distance,
    Polyline,
    Area,
    Height,
    Angle,
    Point,
}

impl MeasureKind {
    pub const ALL: [MeasureKind; 6] = [
        MeasureKind::Distance,
        MeasureKind::Polyline,
        MeasureKind::Area,
        MeasureKind::Height,
        MeasureKind::Angle,
        MeasureKind::Point,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MeasureKind::Distance => "distance",
            MeasureKind::Polyline => "polyline",
            MeasureKind::Area => "area",
            MeasureKind::Height => "height",
            MeasureKind::Angle => "angle",
            MeasureKind::Point => "point",
        }
    }

    /// The fewest vertices that make it complete.
    pub fn min_points(self) -> usize {
        match self {
            MeasureKind::Point => 1,
            MeasureKind::Distance | MeasureKind::Polyline | MeasureKind::Height => 2,
            MeasureKind::Area | MeasureKind::Angle => 3,
        }
    }

    /// The most vertices it takes (`None`: any number, ended by the person).
    pub fn max_points(self) -> Option<usize> {
        match self {
            MeasureKind::Polyline | MeasureKind::Area => None,
            k => Some(k.min_points()),
        }
    }

    /// What to do, for the panel and the messages.
    pub fn prompt(self) -> &'static str {
        match self {
            MeasureKind::Distance => "click two points",
            MeasureKind::Polyline => "click the points of a line; Enter ends it",
            MeasureKind::Area => "click the corners of an area; Enter closes it",
            MeasureKind::Height => "click a low and a high point",
            MeasureKind::Angle => "click three points: the angle is at the second",
            MeasureKind::Point => "click a point",
        }
    }
}

/// A measurement: its kind and vertices in file coordinates.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Measurement {
    pub kind: MeasureKind,
    pub points: Vec<DVec3>,
}

/// How a value is measured: a length across, a height, an area, an angle, or a coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dimension {
    Across,
    Up,
    Area,
    Degrees,
    Percent,
    /// A coordinate as the file stores it (x, y across; z up).
    Coordinate,
}

/// One measured quantity, already in the shown units.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    /// `length`, `horizontal_length`, `height_difference`, `area_horizontal`, ... (the CSV's and
    /// GeoJSON's names).
    pub name: &'static str,
    pub value: f64,
    pub dimension: Dimension,
}

impl Value {
    /// The unit's symbol for `units` (`ft`, `m²`, `°`, `%`; empty when the units are unknown).
    pub fn unit(&self, units: &Units) -> String {
        let named = units.known || units.in_metres;
        match self.dimension {
            Dimension::Across | Dimension::Coordinate if named => units.horizontal_shown().symbol(),
            Dimension::Up if named => units.vertical_shown().symbol(),
            Dimension::Area if named => format!("{}²", units.horizontal_shown().symbol()),
            Dimension::Degrees => "°".into(),
            Dimension::Percent => "%".into(),
            _ => String::new(),
        }
    }

    /// The value as a person reads it: `12.345 ft`, `3.2 %`.
    pub fn describe(&self, units: &Units) -> String {
        let unit = self.unit(units);
        let digits = match self.dimension {
            Dimension::Degrees | Dimension::Percent => 2,
            _ => 3,
        };
        let sep = if unit.is_empty() || unit == "°" { "" } else { " " };
        format!("{:.*}{sep}{unit}", digits, self.value)
    }
}

/// Two unit vectors across `up` (a right-handed frame with it).
fn across_basis(up: DVec3) -> (DVec3, DVec3) {
    let up = up.normalize_or_zero();
    let helper = if up.x.abs() < 0.9 { DVec3::X } else { DVec3::Y };
    let e1 = helper.cross(up).normalize_or_zero();
    let e2 = up.cross(e1);
    (e1, e2)
}

impl Measurement {
    pub fn new(kind: MeasureKind) -> Measurement {
        Measurement { kind, points: Vec::new() }
    }

    /// Whether it has the vertices its kind needs.
    pub fn is_complete(&self) -> bool {
        self.points.len() >= self.kind.min_points() && self.kind.max_points().is_none_or(|m| self.points.len() <= m)
    }

    /// Whether it takes another vertex.
    pub fn takes_more(&self) -> bool {
        self.kind.max_points().is_none_or(|m| self.points.len() < m)
    }

    /// The vertices relative to the first, with the vertical part in the horizontal unit: a frame in
    /// which 3D lengths, areas and angles are right when the two units differ.
    fn iso(&self, up: DVec3, units: &Units) -> Vec<DVec3> {
        let up = up.normalize_or_zero();
        let k = units.vertical.metres / units.horizontal.metres;
        let o = self.points.first().copied().unwrap_or(DVec3::ZERO);
        self.points
            .iter()
            .map(|&p| {
                let d = p - o;
                let v = d.dot(up);
                d - up * v + up * (v * k)
            })
            .collect()
    }

    /// Every quantity of its kind, in the shown units (empty until it is complete).
    pub fn values(&self, up: DVec3, units: &Units) -> Vec<Value> {
        if !self.is_complete() {
            return Vec::new();
        }
        let up = up.normalize_or_zero();
        let p = &self.points;
        let iso = self.iso(up, units);
        let across = |v: f64, name| Value { name, value: units.across(v), dimension: Dimension::Across };
        let height = |v: f64, name| Value { name, value: units.up(v), dimension: Dimension::Up };
        // Horizontal parts (file units across).
        let flat = |d: DVec3| (d - up * d.dot(up)).length();
        let path = |closed: bool| {
            let n = p.len();
            let segs = if closed { n } else { n - 1 };
            (0..segs).fold((0.0, 0.0), |(l3, lh), i| {
                let j = (i + 1) % n;
                (l3 + (iso[j] - iso[i]).length(), lh + flat(p[j] - p[i]))
            })
        };
        match self.kind {
            MeasureKind::Distance => {
                let d = units.distance(p[0], p[1], up);
                vec![
                    Value { name: "length", value: d.total, dimension: Dimension::Across },
                    Value { name: "horizontal_length", value: d.horizontal, dimension: Dimension::Across },
                    Value { name: "height_difference", value: d.vertical, dimension: Dimension::Up },
                ]
            }
            MeasureKind::Polyline => {
                let (l3, lh) = path(false);
                vec![
                    across(l3, "length"),
                    across(lh, "horizontal_length"),
                    height((p[p.len() - 1] - p[0]).dot(up), "height_difference"),
                ]
            }
            MeasureKind::Area => {
                let (e1, e2) = across_basis(up);
                let n = iso.len();
                let (mut shoelace, mut newell) = (0.0, DVec3::ZERO);
                for i in 0..n {
                    let (a, b) = (iso[i], iso[(i + 1) % n]);
                    shoelace += a.dot(e1) * b.dot(e2) - b.dot(e1) * a.dot(e2);
                    newell += a.cross(b);
                }
                let (perimeter, _) = path(true);
                let area = |a: f64| units.across(units.across(a));
                vec![
                    Value { name: "area_horizontal", value: area(shoelace.abs() * 0.5), dimension: Dimension::Area },
                    Value { name: "area_sloped", value: area(newell.length() * 0.5), dimension: Dimension::Area },
                    across(perimeter, "perimeter"),
                ]
            }
            MeasureKind::Height => {
                let d = p[1] - p[0];
                let v = d.dot(up);
                let h = flat(d);
                let v_across = v * units.vertical.metres / units.horizontal.metres;
                let mut out = vec![height(v, "height_difference"), across(h, "horizontal_length")];
                if h > 0.0 {
                    out.push(Value {
                        name: "slope_percent",
                        value: v_across / h * 100.0,
                        dimension: Dimension::Percent,
                    });
                    out.push(Value {
                        name: "slope_deg",
                        value: v_across.atan2(h).to_degrees(),
                        dimension: Dimension::Degrees,
                    });
                }
                out
            }
            MeasureKind::Angle => {
                let (a, c) = (iso[0] - iso[1], iso[2] - iso[1]);
                let deg = if a.length() > 0.0 && c.length() > 0.0 { a.angle_between(c).to_degrees() } else { 0.0 };
                vec![Value { name: "angle_deg", value: deg, dimension: Dimension::Degrees }]
            }
            MeasureKind::Point => vec![
                Value { name: "x", value: p[0].x, dimension: Dimension::Coordinate },
                Value { name: "y", value: p[0].y, dimension: Dimension::Coordinate },
                Value { name: "z", value: p[0].z, dimension: Dimension::Coordinate },
            ],
        }
    }

    /// The first value (what the view's label shows), described.
    pub fn headline(&self, up: DVec3, units: &Units) -> Option<String> {
        let v = self.values(up, units);
        match self.kind {
            MeasureKind::Point => {
                Some(format!("{:.3}, {:.3}, {:.3}", self.points[0].x, self.points[0].y, self.points[0].z))
            }
            _ => v.first().map(|v| v.describe(units)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crs::LengthUnit;

    fn m(kind: MeasureKind, pts: &[[f64; 3]]) -> Measurement {
        Measurement { kind, points: pts.iter().map(|p| DVec3::from_array(*p)).collect() }
    }

    fn get(v: &[Value], name: &str) -> f64 {
        v.iter().find(|x| x.name == name).unwrap_or_else(|| panic!("no {name} in {v:?}")).value
    }

    const METRES: Units =
        Units { horizontal: LengthUnit::METRE, vertical: LengthUnit::METRE, known: true, in_metres: false };

    #[test]
    fn areas_of_a_roof_and_its_footprint() {
        // A 10 × 6 m roof rising 3 m over its 6 m width, at UTM-sized coordinates: the footprint is
        // 60 m², the roof itself 10 × √(36 + 9) = 67.08 m².
        let (x, y) = (512_340.25, 5_405_120.5);
        let roof = m(
            MeasureKind::Area,
            &[[x, y, 100.0], [x + 10.0, y, 100.0], [x + 10.0, y + 6.0, 103.0], [x, y + 6.0, 103.0]],
        );
        let v = roof.values(DVec3::Z, &METRES);
        assert!((get(&v, "area_horizontal") - 60.0).abs() < 1e-9, "{v:?}");
        assert!((get(&v, "area_sloped") - 10.0 * 45f64.sqrt()).abs() < 1e-9, "{v:?}");
        assert!((get(&v, "perimeter") - (20.0 + 2.0 * 45f64.sqrt())).abs() < 1e-9);
        // The same in the other winding, and as seen by a y-up file.
        let mut back = roof.clone();
        back.points.reverse();
        assert!((get(&back.values(DVec3::Z, &METRES), "area_horizontal") - 60.0).abs() < 1e-9);
        let yup = Measurement {
            kind: MeasureKind::Area,
            points: roof.points.iter().map(|p| DVec3::new(p.x, p.z, p.y)).collect(),
        };
        assert!((get(&yup.values(DVec3::Y, &METRES), "area_horizontal") - 60.0).abs() < 1e-9);
        // Incomplete: nothing.
        assert!(m(MeasureKind::Area, &[[0.0; 3], [1.0, 0.0, 0.0]]).values(DVec3::Z, &METRES).is_empty());
    }

    #[test]
    fn lengths_heights_and_angles() {
        let line = m(MeasureKind::Polyline, &[[0.0, 0.0, 0.0], [3.0, 4.0, 0.0], [3.0, 4.0, 12.0]]);
        let v = line.values(DVec3::Z, &METRES);
        assert_eq!((get(&v, "length"), get(&v, "horizontal_length"), get(&v, "height_difference")), (17.0, 5.0, 12.0));
        let h = m(MeasureKind::Height, &[[0.0, 0.0, 10.0], [4.0, 3.0, 15.0]]).values(DVec3::Z, &METRES);
        assert_eq!(
            (get(&h, "height_difference"), get(&h, "horizontal_length"), get(&h, "slope_percent")),
            (5.0, 5.0, 100.0)
        );
        assert!((get(&h, "slope_deg") - 45.0).abs() < 1e-12);
        let a = m(MeasureKind::Angle, &[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]).values(DVec3::Z, &METRES);
        assert!((get(&a, "angle_deg") - 45.0).abs() < 1e-12);
        let right =
            m(MeasureKind::Angle, &[[5.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 7.0]]).values(DVec3::Z, &METRES);
        assert!((get(&right, "angle_deg") - 90.0).abs() < 1e-12);
        let p = m(MeasureKind::Point, &[[1.5, 2.5, 3.5]]);
        assert_eq!(p.headline(DVec3::Z, &METRES).unwrap(), "1.500, 2.500, 3.500");
        assert!(p.is_complete() && !p.takes_more());
        assert!(line.takes_more() && line.is_complete());
    }

    #[test]
    fn metres_across_and_survey_feet_up() {
        // A compound CRS: x, y in metres, z in US survey feet. 3 m across and 4 m up (13.1234 ftUS).
        let units = Units {
            horizontal: LengthUnit::METRE,
            vertical: LengthUnit::US_SURVEY_FOOT,
            known: true,
            in_metres: false,
        };
        let up_ftus = 4.0 / LengthUnit::US_SURVEY_FOOT.metres;
        let d = m(MeasureKind::Distance, &[[0.0, 0.0, 0.0], [3.0, 0.0, up_ftus]]).values(DVec3::Z, &units);
        assert!((get(&d, "length") - 5.0).abs() < 1e-9, "{d:?}");
        assert!((get(&d, "height_difference") - up_ftus).abs() < 1e-9);
        let h = m(MeasureKind::Height, &[[0.0, 0.0, 0.0], [4.0, 0.0, up_ftus]]).values(DVec3::Z, &units);
        assert!((get(&h, "slope_deg") - 45.0).abs() < 1e-9, "{h:?}");
        let v = Value { name: "height_difference", value: 13.123, dimension: Dimension::Up };
        assert_eq!(v.describe(&units), "13.123 ftUS");
        // A feet file's area in square feet, and in square metres after N.
        let ft = Units { horizontal: LengthUnit::FOOT, vertical: LengthUnit::FOOT, known: true, in_metres: false };
        let sq = m(MeasureKind::Area, &[[0.0, 0.0, 0.0], [100.0, 0.0, 0.0], [100.0, 100.0, 0.0], [0.0, 100.0, 0.0]]);
        let a = sq.values(DVec3::Z, &ft);
        assert_eq!(get(&a, "area_horizontal"), 10_000.0);
        assert_eq!(a[0].unit(&ft), "ft²");
        let in_m = sq.values(DVec3::Z, &ft.with_metres(true));
        assert!((get(&in_m, "area_horizontal") - 10_000.0 * 0.3048 * 0.3048).abs() < 1e-9);
    }
}
