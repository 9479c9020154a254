//! Which points are shown: classification toggles, return filters, value ranges on any attribute, and
//! clip volumes (oriented boxes, planes).
//!
//! How it works: a [`PointFilter`] is plain data that the viewer's panel, the command line
//! (`--classes`, `--returns`, `--filter`, `--clip-box`) and bookmarks all edit. [`PointFilter::passes`]
//! is the one rule that says whether a point stays, given its [`PointValues`] (classification, return
//! number and count, the other attributes by name, and its position in the file's own coordinates).
//! The parts combine with AND: a point stays when its class is shown, its returns pass, each range
//! holds its value (a point without the attribute fails a range on it), it lies inside at least one
//! keep-inside box (when there are any), outside every keep-outside box, and on the kept side of every
//! plane. Clip volumes are in the file's coordinates (f64), so `--clip-box` takes the numbers
//! `pcv info` prints. [`PointFilter::box_may_pass`] answers the same for a whole box of points with
//! known value ranges (a batch's or a node's summary): `false` only when no point inside can pass,
//! which lets a renderer skip it.
use crate::fields::Field;
use glam::{DMat3, DQuat, DVec3};

/// Which returns of a pulse are shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Returns {
    /// Every return.
    #[default]
    All,
    /// First returns (return number 1): canopy tops, roofs.
    First,
    /// Last returns (return number = number of returns): mostly ground under vegetation.
    Last,
    /// Pulses with a single return (open ground, roofs).
    Only,
    /// Returns of pulses with several returns (vegetation, edges).
    Multiple,
}

impl Returns {
    pub const ALL: [Returns; 5] = [Returns::All, Returns::First, Returns::Last, Returns::Only, Returns::Multiple];

    pub fn name(self) -> &'static str {
        match self {
            Returns::All => "all",
            Returns::First => "first",
            Returns::Last => "last",
            Returns::Only => "only",
            Returns::Multiple => "multiple",
        }
    }

    /// Whether a point with return number `r` of `n` returns passes (NaN: the file has no returns,
    /// and only `all` passes it).
    pub fn passes(self, r: f64, n: f64) -> bool {
        match self {
            Returns::All => true,
            Returns::First => r == 1.0,
            Returns::Last => r.is_finite() && r == n,
            Returns::Only => n == 1.0,
            Returns::Multiple => n > 1.0,
        }
    }

    /// The fields this filter reads.
    pub fn fields(self) -> &'static [Field] {
        match self {
            Returns::All => &[],
            Returns::First => &[Field::ReturnNumber],
            Returns::Only | Returns::Multiple => &[Field::NumberOfReturns],
            Returns::Last => &[Field::ReturnNumber, Field::NumberOfReturns],
        }
    }
}

impl std::fmt::Display for Returns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An attribute a range can hold: intensity, or one of the [`Field`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RangeOf {
    Intensity,
    Field(Field),
}

impl RangeOf {
    pub fn name(self) -> &'static str {
        match self {
            RangeOf::Intensity => "intensity",
            RangeOf::Field(f) => f.name(),
        }
    }

    /// A number naming the attribute, for a backend that keeps columns by it: a field's
    /// [`Field::index`] (0..63), 64 for intensity.
    pub fn column_id(self) -> u32 {
        match self {
            RangeOf::Intensity => 64,
            RangeOf::Field(f) => f.index(),
        }
    }

    /// The attribute of [`RangeOf::column_id`] `id`.
    pub fn of_column_id(id: u32) -> Option<RangeOf> {
        match id {
            64 => Some(RangeOf::Intensity),
            0..64 => Some(RangeOf::Field(Field::of_index(id))),
            _ => None,
        }
    }

    /// The attribute named `name` as laspy and PDAL spell it, or a file's own field by its name (LAS
    /// extra bytes, PLY/PCD properties; whether a file has it is known once it is read).
    pub fn parse(name: &str) -> Option<RangeOf> {
        if name == "intensity" {
            return Some(RangeOf::Intensity);
        }
        Field::parse(name).map(RangeOf::Field)
    }
}

/// A closed range of values an attribute must fall in.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ValueRange {
    pub of: RangeOf,
    pub min: f64,
    pub max: f64,
}

impl ValueRange {
    /// `NAME:MIN..MAX` (either end may be left out: `gps_time:..1000`).
    pub fn parse(s: &str) -> Result<ValueRange, FilterError> {
        let bad = |why: &str| FilterError::Parse { what: s.to_string(), why: why.to_string() };
        let (name, range) = s.split_once(':').ok_or_else(|| bad("expected NAME:MIN..MAX"))?;
        let of = RangeOf::parse(name.trim()).ok_or_else(|| {
            let names: Vec<&str> =
                std::iter::once("intensity").chain(Field::STANDARD.iter().map(|f| f.name())).collect();
            bad(&format!(
                "no attribute '{}' (the standard ones: {}; or a file's own field)",
                name.trim(),
                names.join(", ")
            ))
        })?;
        let (lo, hi) = range.split_once("..").ok_or_else(|| bad("expected MIN..MAX"))?;
        let num = |t: &str, default: f64| -> Result<f64, FilterError> {
            let t = t.trim();
            if t.is_empty() {
                return Ok(default);
            }
            t.parse::<f64>().ok().filter(|v| !v.is_nan()).ok_or_else(|| bad(&format!("'{t}' is not a number")))
        };
        let (min, max) = (num(lo, f64::NEG_INFINITY)?, num(hi, f64::INFINITY)?);
        if min > max {
            return Err(bad("MIN is above MAX"));
        }
        Ok(ValueRange { of, min, max })
    }

    pub fn holds(&self, v: f64) -> bool {
        v >= self.min && v <= self.max
    }
}

impl std::fmt::Display for ValueRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let end = |v: f64| if v.is_finite() { format!("{v}") } else { String::new() };
        write!(f, "{}:{}..{}", self.of.name(), end(self.min), end(self.max))
    }
}

/// Whether a clip volume keeps what is inside it or what is outside.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Keep {
    #[default]
    Inside,
    Outside,
}

/// An oriented box in the file's coordinates: `center`, half extents along its own axes, and the
/// rotation from the box's axes to the file's.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ClipBox {
    pub center: DVec3,
    pub half_extent: DVec3,
    #[serde(skip)]
    pub rotation: DQuat,
    pub keep: Keep,
}

impl ClipBox {
    /// The axis-aligned box from `min` to `max`.
    pub fn from_min_max(min: DVec3, max: DVec3, keep: Keep) -> ClipBox {
        ClipBox { center: (min + max) * 0.5, half_extent: (max - min) * 0.5, rotation: DQuat::IDENTITY, keep }
    }

    /// `XMIN,YMIN,ZMIN,XMAX,YMAX,ZMAX` in the file's coordinates, `:outside` after it to keep what is
    /// outside.
    pub fn parse(s: &str) -> Result<ClipBox, FilterError> {
        let bad = |why: &str| FilterError::Parse { what: s.to_string(), why: why.to_string() };
        let (nums, keep) = match s.rsplit_once(':') {
            Some((n, "outside")) => (n, Keep::Outside),
            Some((n, "inside")) => (n, Keep::Inside),
            Some((_, k)) => return Err(bad(&format!("'{k}': expected :inside or :outside"))),
            None => (s, Keep::Inside),
        };
        let v: Vec<f64> = nums
            .split(',')
            .map(|t| t.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("expected six numbers XMIN,YMIN,ZMIN,XMAX,YMAX,ZMAX"))?;
        if v.len() != 6 {
            return Err(bad(&format!("expected six numbers XMIN,YMIN,ZMIN,XMAX,YMAX,ZMAX, got {}", v.len())));
        }
        let (min, max) = (DVec3::new(v[0], v[1], v[2]), DVec3::new(v[3], v[4], v[5]));
        if min.cmpgt(max).any() {
            return Err(bad("a minimum is above its maximum"));
        }
        Ok(ClipBox::from_min_max(min, max, keep))
    }

    /// Whether `p` (file coordinates) is inside the box (its faces included, within a nanometre-scale
    /// tolerance so that a face given as a number holds the points written at that number).
    pub fn contains(&self, p: DVec3) -> bool {
        let local = self.rotation.inverse() * (p - self.center);
        let slack = (self.center.abs() + self.half_extent) * 1e-12 + DVec3::splat(1e-9);
        local.abs().cmple(self.half_extent + slack).all()
    }

    /// The axis-aligned box around it (file coordinates).
    pub fn aabb(&self) -> (DVec3, DVec3) {
        let m = DMat3::from_quat(self.rotation);
        let reach = m.x_axis.abs() * self.half_extent.x
            + m.y_axis.abs() * self.half_extent.y
            + m.z_axis.abs() * self.half_extent.z;
        (self.center - reach, self.center + reach)
    }

    /// Whether the whole axis-aligned box `min..max` is inside (its eight corners are: a box is convex).
    fn contains_box(&self, min: DVec3, max: DVec3) -> bool {
        corners(min, max).iter().all(|&c| self.contains(c))
    }

    /// Whether the axis-aligned box `min..max` may hold points inside it (false: surely not; a
    /// separating-axis test on the three world axes, conservative for rotated boxes).
    fn may_touch(&self, min: DVec3, max: DVec3) -> bool {
        let (a, b) = self.aabb();
        a.cmple(max).all() && min.cmple(b).all()
    }
}

/// The half-space `normal · (p - point) >= 0` is kept (file coordinates).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ClipPlane {
    pub point: DVec3,
    pub normal: DVec3,
}

impl ClipPlane {
    pub fn keeps(&self, p: DVec3) -> bool {
        self.normal.dot(p - self.point) >= 0.0
    }
}

/// The eight corners of the axis-aligned box `min..max` (bit 0 of the index picks x's end, bit 1 y's,
/// bit 2 z's).
pub fn corners(min: DVec3, max: DVec3) -> [DVec3; 8] {
    std::array::from_fn(|i| {
        DVec3::new(
            if i & 1 == 0 { min.x } else { max.x },
            if i & 2 == 0 { min.y } else { max.y },
            if i & 4 == 0 { min.z } else { max.z },
        )
    })
}

/// A filter description that could not be read.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum FilterError {
    #[error("'{what}': {why}")]
    Parse { what: String, why: String },
}

/// Which points are shown (see the module doc). The default shows every point.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PointFilter {
    /// Classification codes hidden: bit `c` of word `c / 64`.
    pub hidden_classes: [u64; 4],
    pub returns: Returns,
    pub ranges: Vec<ValueRange>,
    pub boxes: Vec<ClipBox>,
    pub planes: Vec<ClipPlane>,
}

/// What the filter reads of one point.
#[derive(Clone, Copy)]
pub struct PointValues<'a> {
    /// Its classification (0 for files without one).
    pub class: u8,
    /// Its intensity (NaN where the file has none).
    pub intensity: f64,
    /// The value of a field (NaN where the point's file has none).
    pub field: &'a dyn Fn(Field) -> f64,
    /// Its position in the file's coordinates.
    pub pos: DVec3,
}

impl PointFilter {
    /// Whether every point passes (nothing to test).
    pub fn is_empty(&self) -> bool {
        self.hidden_classes == [0; 4]
            && self.returns == Returns::All
            && self.ranges.is_empty()
            && self.boxes.is_empty()
            && self.planes.is_empty()
    }

    /// Shows only the classes in `codes` (`--classes 2,6`).
    pub fn show_only_classes(&mut self, codes: &[u8]) {
        self.hidden_classes = [u64::MAX; 4];
        for &c in codes {
            self.set_class_shown(c, true);
        }
    }

    pub fn class_shown(&self, c: u8) -> bool {
        self.hidden_classes[(c / 64) as usize] & (1 << (c % 64)) == 0
    }

    pub fn set_class_shown(&mut self, c: u8, shown: bool) {
        let (w, b) = ((c / 64) as usize, 1u64 << (c % 64));
        if shown {
            self.hidden_classes[w] &= !b;
        } else {
            self.hidden_classes[w] |= b;
        }
    }

    /// Whether the filter reads classification codes.
    pub fn tests_classes(&self) -> bool {
        self.hidden_classes != [0; 4]
    }

    /// Whether it reads positions (clip volumes).
    pub fn clips(&self) -> bool {
        !self.boxes.is_empty() || !self.planes.is_empty()
    }

    /// The fields it reads (so a loader can be asked for them).
    pub fn fields(&self) -> Vec<Field> {
        let mut f: Vec<Field> = self.returns.fields().to_vec();
        for r in &self.ranges {
            if let RangeOf::Field(x) = r.of {
                f.push(x);
            }
        }
        f.sort();
        f.dedup();
        f
    }

    /// Whether a point passes (the one rule; see the module doc).
    pub fn passes(&self, v: &PointValues) -> bool {
        if !self.class_shown(v.class) {
            return false;
        }
        if self.returns != Returns::All
            && !self.returns.passes((v.field)(Field::ReturnNumber), (v.field)(Field::NumberOfReturns))
        {
            return false;
        }
        for r in &self.ranges {
            let x = match r.of {
                RangeOf::Intensity => v.intensity,
                RangeOf::Field(f) => (v.field)(f),
            };
            if !r.holds(x) {
                return false;
            }
        }
        self.keeps_position(v.pos)
    }

    /// Whether the clip volumes keep position `p` (file coordinates).
    pub fn keeps_position(&self, p: DVec3) -> bool {
        let mut inside_any = None;
        for b in &self.boxes {
            match b.keep {
                Keep::Inside => *inside_any.get_or_insert(false) |= b.contains(p),
                Keep::Outside => {
                    if b.contains(p) {
                        return false;
                    }
                }
            }
        }
        inside_any.unwrap_or(true) && self.planes.iter().all(|pl| pl.keeps(p))
    }

    /// Whether any point of a group may pass, knowing the group's box (file coordinates) and the set
    /// of classes it holds (bit c of word c / 64). `false` only when none can: every class it holds
    /// is hidden, or the clip volumes drop the whole box.
    pub fn box_may_pass(&self, min: DVec3, max: DVec3, classes: &[u64; 4]) -> bool {
        if (0..4).all(|w| classes[w] & !self.hidden_classes[w] == 0) {
            return false;
        }
        let inside: Vec<&ClipBox> = self.boxes.iter().filter(|b| b.keep == Keep::Inside).collect();
        if !inside.is_empty() && !inside.iter().any(|b| b.may_touch(min, max)) {
            return false;
        }
        if self.boxes.iter().any(|b| b.keep == Keep::Outside && b.contains_box(min, max)) {
            return false;
        }
        // A plane drops the box when every corner is on the dropped side.
        !self.planes.iter().any(|pl| corners(min, max).iter().all(|&c| !pl.keeps(c)))
    }

    /// Whether every point of a group passes, knowing the same summary as [`Self::box_may_pass`]:
    /// only when nothing but classes and clip volumes filter, every class the group holds is shown,
    /// and the clip volumes keep the whole box (its corners: boxes and half-spaces are convex; a
    /// keep-outside box must not touch it). An empty box (no finite point) is not known to pass.
    pub fn box_all_pass(&self, min: DVec3, max: DVec3, classes: &[u64; 4]) -> bool {
        if self.returns != Returns::All || !self.ranges.is_empty() {
            return false;
        }
        if (0..4).any(|w| classes[w] & self.hidden_classes[w] != 0) {
            return false;
        }
        if !self.clips() {
            return true;
        }
        if !(min.is_finite() && max.is_finite()) {
            return false;
        }
        let c = corners(min, max);
        let inside: Vec<&ClipBox> = self.boxes.iter().filter(|b| b.keep == Keep::Inside).collect();
        let in_one = inside.is_empty() || inside.iter().any(|b| b.contains_box(min, max));
        let clear_of_outside = self.boxes.iter().filter(|b| b.keep == Keep::Outside).all(|b| !b.may_touch(min, max));
        in_one && clear_of_outside && self.planes.iter().all(|p| c.iter().all(|&x| p.keeps(x)))
    }

    /// One line for the panel and the console ("classes 2, 6 · first returns · 1 clip box").
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.tests_classes() {
            let hidden = (0..=255u8).filter(|&c| !self.class_shown(c)).count();
            if hidden > 128 {
                let shown: Vec<String> = (0..=255u8).filter(|&c| self.class_shown(c)).map(|c| c.to_string()).collect();
                parts.push(format!("classes {}", if shown.is_empty() { "none".into() } else { shown.join(", ") }));
            } else {
                let h: Vec<String> = (0..=255u8).filter(|&c| !self.class_shown(c)).map(|c| c.to_string()).collect();
                parts.push(format!("classes {} hidden", h.join(", ")));
            }
        }
        if self.returns != Returns::All {
            parts.push(format!("{} returns", self.returns));
        }
        parts.extend(self.ranges.iter().map(|r| r.to_string()));
        let b = self.boxes.len();
        if b > 0 {
            parts.push(format!("{b} clip box{}", if b == 1 { "" } else { "es" }));
        }
        let p = self.planes.len();
        if p > 0 {
            parts.push(format!("{p} clip plane{}", if p == 1 { "" } else { "s" }));
        }
        if parts.is_empty() {
            "every point".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Classification codes from `2,6` or `2-5,9`.
pub fn parse_classes(s: &str) -> Result<Vec<u8>, FilterError> {
    let bad = |why: String| FilterError::Parse { what: s.to_string(), why };
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let code = |t: &str| t.trim().parse::<u8>().map_err(|_| bad(format!("'{t}' is not a class code 0..255")));
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (code(a)?, code(b)?);
                if a > b {
                    return Err(bad(format!("'{part}': the range runs backwards")));
                }
                out.extend(a..=b);
            }
            None => out.push(code(part)?),
        }
    }
    if out.is_empty() {
        return Err(bad("no class codes".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(class: u8, pos: DVec3) -> bool {
        let f = PointFilter { ..Default::default() };
        f.passes(&PointValues { class, intensity: 1.0, field: &|_| f64::NAN, pos })
    }

    fn values(class: u8, r: f64, n: f64, pos: DVec3) -> impl Fn(&PointFilter) -> bool {
        move |f: &PointFilter| {
            let field = move |x: Field| match x {
                Field::ReturnNumber => r,
                Field::NumberOfReturns => n,
                Field::GpsTime => 1000.0 + r,
                _ => f64::NAN,
            };
            f.passes(&PointValues { class, intensity: 40.0, field: &field, pos })
        }
    }

    #[test]
    fn the_default_filter_passes_everything() {
        assert!(PointFilter::default().is_empty());
        assert!(at(7, DVec3::splat(1e9)));
        assert_eq!(PointFilter::default().describe(), "every point");
    }

    #[test]
    fn classes_hide_and_show() {
        let mut f = PointFilter::default();
        f.show_only_classes(&[2, 6]);
        assert!(values(2, 1.0, 1.0, DVec3::ZERO)(&f));
        assert!(values(6, 1.0, 1.0, DVec3::ZERO)(&f));
        assert!(!values(5, 1.0, 1.0, DVec3::ZERO)(&f));
        assert!(!values(200, 1.0, 1.0, DVec3::ZERO)(&f));
        assert_eq!(f.describe(), "classes 2, 6");
        let mut g = PointFilter::default();
        g.set_class_shown(5, false);
        assert!(!values(5, 1.0, 1.0, DVec3::ZERO)(&g) && values(4, 1.0, 1.0, DVec3::ZERO)(&g));
        assert_eq!(g.describe(), "classes 5 hidden");
        g.set_class_shown(5, true);
        assert!(g.is_empty());
    }

    #[test]
    fn returns_pick_first_last_only_and_multiple() {
        let f = |r| PointFilter { returns: r, ..Default::default() };
        let first_of_three = values(1, 1.0, 3.0, DVec3::ZERO);
        let last_of_three = values(1, 3.0, 3.0, DVec3::ZERO);
        let single = values(1, 1.0, 1.0, DVec3::ZERO);
        let none = values(1, f64::NAN, f64::NAN, DVec3::ZERO);
        assert!(first_of_three(&f(Returns::First)) && !last_of_three(&f(Returns::First)));
        assert!(last_of_three(&f(Returns::Last)) && !first_of_three(&f(Returns::Last)));
        assert!(single(&f(Returns::First)) && single(&f(Returns::Last)) && single(&f(Returns::Only)));
        assert!(!first_of_three(&f(Returns::Only)) && first_of_three(&f(Returns::Multiple)));
        assert!(!single(&f(Returns::Multiple)));
        assert!(none(&f(Returns::All)) && !none(&f(Returns::First)) && !none(&f(Returns::Last)));
        assert_eq!(f(Returns::Last).fields(), vec![Field::ReturnNumber, Field::NumberOfReturns]);
    }

    #[test]
    fn ranges_parse_and_hold() {
        let r = ValueRange::parse("gps_time:1000.5..1002").unwrap();
        assert_eq!((r.of, r.min, r.max), (RangeOf::Field(Field::GpsTime), 1000.5, 1002.0));
        let open = ValueRange::parse("intensity:30..").unwrap();
        assert_eq!((open.min, open.max), (30.0, f64::INFINITY));
        assert_eq!(open.to_string(), "intensity:30..");
        let f = PointFilter { ranges: vec![r], ..Default::default() };
        assert!(values(1, 1.0, 1.0, DVec3::ZERO)(&f)); // gps 1001
        assert!(!values(1, 3.0, 3.0, DVec3::ZERO)(&f)); // gps 1003
                                                        // Any other name is a file's own field, known once a file is read ("pcv info" lists them).
        let own = ValueRange::parse("height:1..2").unwrap();
        assert_eq!(own.of.name(), "height");
        let e = ValueRange::parse(":1..2").unwrap_err().to_string();
        assert!(e.contains("no attribute ''") && e.contains("gps_time"), "{e}");
        assert!(ValueRange::parse("gps_time:2..1").unwrap_err().to_string().contains("MIN is above MAX"));
        assert!(ValueRange::parse("gps_time:a..1").unwrap_err().to_string().contains("'a' is not a number"));
        assert!(ValueRange::parse("gps_time").is_err());
    }

    #[test]
    fn boxes_keep_inside_or_outside_and_rotate() {
        let b = ClipBox::parse("0,0,0,10,10,10").unwrap();
        assert_eq!(b.keep, Keep::Inside);
        let inside = PointFilter { boxes: vec![b], ..Default::default() };
        assert!(inside.keeps_position(DVec3::new(5.0, 5.0, 10.0)));
        assert!(!inside.keeps_position(DVec3::new(5.0, 5.0, 10.1)));
        let out = PointFilter { boxes: vec![ClipBox::parse("0,0,0,10,10,10:outside").unwrap()], ..Default::default() };
        assert!(!out.keeps_position(DVec3::splat(5.0)) && out.keeps_position(DVec3::splat(11.0)));
        // Two keep-inside boxes: a point in either stays.
        let two = PointFilter { boxes: vec![b, ClipBox::parse("20,0,0,30,10,10").unwrap()], ..Default::default() };
        assert!(two.keeps_position(DVec3::new(25.0, 5.0, 5.0)) && !two.keeps_position(DVec3::new(15.0, 5.0, 5.0)));
        // A box turned 45 degrees about z: (7, 0) lies inside its diagonal reach, (6, 6) outside.
        let r = ClipBox {
            center: DVec3::ZERO,
            half_extent: DVec3::new(5.0, 5.0, 1.0),
            rotation: DQuat::from_rotation_z(std::f64::consts::FRAC_PI_4),
            keep: Keep::Inside,
        };
        assert!(r.contains(DVec3::new(7.0, 0.0, 0.0)) && !r.contains(DVec3::new(6.0, 6.0, 0.0)));
        let (lo, hi) = r.aabb();
        assert!((hi.x - 50f64.sqrt()).abs() < 1e-9 && (lo.y + 50f64.sqrt()).abs() < 1e-9);
        assert!(ClipBox::parse("1,2,3").unwrap_err().to_string().contains("got 3"));
        assert!(ClipBox::parse("0,0,0,1,1,1:sideways").is_err());
        assert!(ClipBox::parse("5,0,0,1,1,1").unwrap_err().to_string().contains("above its maximum"));
    }

    #[test]
    fn planes_keep_their_positive_side() {
        let f = PointFilter {
            planes: vec![ClipPlane { point: DVec3::new(0.0, 0.0, 5.0), normal: DVec3::Z }],
            ..Default::default()
        };
        assert!(f.keeps_position(DVec3::new(0.0, 0.0, 6.0)) && !f.keeps_position(DVec3::new(0.0, 0.0, 4.0)));
        assert!(!f.box_may_pass(DVec3::ZERO, DVec3::splat(4.0), &[u64::MAX; 4]));
        assert!(f.box_may_pass(DVec3::ZERO, DVec3::splat(6.0), &[u64::MAX; 4]));
    }

    #[test]
    fn whole_groups_are_skipped_only_when_no_point_can_pass() {
        let mut f = PointFilter::default();
        f.show_only_classes(&[2]);
        let mut veg = [0u64; 4];
        veg[0] = (1 << 3) | (1 << 4) | (1 << 5);
        let mut mixed = veg;
        mixed[0] |= 1 << 2;
        let (lo, hi) = (DVec3::ZERO, DVec3::splat(1.0));
        assert!(!f.box_may_pass(lo, hi, &veg));
        assert!(f.box_may_pass(lo, hi, &mixed));
        let boxed = PointFilter { boxes: vec![ClipBox::parse("10,10,10,20,20,20").unwrap()], ..Default::default() };
        assert!(!boxed.box_may_pass(lo, hi, &mixed));
        assert!(boxed.box_may_pass(DVec3::splat(5.0), DVec3::splat(11.0), &mixed));
        let out = PointFilter { boxes: vec![ClipBox::parse("-1,-1,-1,2,2,2:outside").unwrap()], ..Default::default() };
        assert!(!out.box_may_pass(lo, hi, &mixed));
        assert!(out.box_may_pass(lo, DVec3::splat(3.0), &mixed));
    }

    #[test]
    fn whole_groups_are_kept_only_when_every_point_passes() {
        let mut ground = [0u64; 4];
        ground[0] = 1 << 2;
        let mut veg = [0u64; 4];
        veg[0] = 1 << 5;
        let (lo, hi) = (DVec3::ZERO, DVec3::splat(1.0));
        let mut f = PointFilter::default();
        f.set_class_shown(5, false);
        assert!(f.box_all_pass(lo, hi, &ground) && !f.box_all_pass(lo, hi, &veg));
        // Returns and ranges are per point: never decided for a whole group.
        assert!(!PointFilter { returns: Returns::First, ..Default::default() }.box_all_pass(lo, hi, &ground));
        let inside = PointFilter { boxes: vec![ClipBox::parse("-1,-1,-1,2,2,2").unwrap()], ..Default::default() };
        assert!(inside.box_all_pass(lo, hi, &ground));
        assert!(!inside.box_all_pass(lo, DVec3::splat(3.0), &ground));
        assert!(!inside.box_all_pass(DVec3::INFINITY, DVec3::NEG_INFINITY, &ground));
        let out = PointFilter { boxes: vec![ClipBox::parse("5,5,5,6,6,6:outside").unwrap()], ..Default::default() };
        assert!(out.box_all_pass(lo, hi, &ground) && !out.box_all_pass(lo, DVec3::splat(5.5), &ground));
    }

    #[test]
    fn class_lists_take_codes_and_ranges() {
        assert_eq!(parse_classes("2,6").unwrap(), vec![2, 6]);
        assert_eq!(parse_classes("3-5, 9").unwrap(), vec![3, 4, 5, 9]);
        assert!(parse_classes("2,300").unwrap_err().to_string().contains("'300' is not a class code"));
        assert!(parse_classes("5-3").is_err() && parse_classes("").is_err());
    }
}
