//! Point fields beyond position, colour, intensity and class: the LAS record's other fields, kept as
//! columns a cloud can be coloured by.
//!
//! How it works: a [`Field`] names one field as laspy and PDAL spell it (`gps_time`, `return_number`,
//! ...), or one a file names itself ([`Field::Extra`]: LAS extra bytes, PLY and PCD scalar properties,
//! by their own names). Those names are interned once per process (a table of at most
//! [`MAX_EXTRA`] names, each leaked once: a field is a `Copy` value wherever it goes, and the same name
//! in two files is the same field). A [`FieldSet`] is a bit set of fields (what a loader is asked to
//! keep): the standard ones first, then the extras in the order their names were first seen. A loaded field is a
//! [`Column`]: one f32 a point, index-aligned with the cloud's points, holding the value less the
//! column's `base` (its smallest value, in f64), so a GPS time of 3·10^8 s keeps sub-millisecond steps
//! across a flight of hours. Points of files without the field hold NaN. Scan angles are in degrees
//! in every LAS format (the 1-degree rank of formats 0–5, the 0.006-degree steps of 6–10).

use std::sync::Mutex;

/// A point field that can be loaded as a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    ReturnNumber,
    NumberOfReturns,
    ScanAngle,
    UserData,
    PointSourceId,
    GpsTime,
    Nir,
    /// A field a file names itself (LAS extra bytes, a PLY or PCD scalar property): the index of its
    /// name among those interned ([`Field::extra`]).
    Extra(u8),
}

/// How many distinct extra field names a process keeps (the bits of a [`FieldSet`] past the standard
/// fields); a file's extras past them are not loaded, and say so.
pub const MAX_EXTRA: usize = 64 - Field::STANDARD.len();

/// The extra fields' names, interned: index `i` is `Field::Extra(i)`'s.
static EXTRA_NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

fn extra_names() -> std::sync::MutexGuard<'static, Vec<&'static str>> {
    // A poisoned table still holds whole names (a push is the only write).
    EXTRA_NAMES.lock().unwrap_or_else(|e| e.into_inner())
}

impl Field {
    /// The fields of the LAS point formats, in the order columns come in.
    pub const STANDARD: [Field; 7] = [
        Field::ReturnNumber,
        Field::NumberOfReturns,
        Field::ScanAngle,
        Field::UserData,
        Field::PointSourceId,
        Field::GpsTime,
        Field::Nir,
    ];

    /// The extra field named `name` (a file's own field), interned on first sight; `None` when the
    /// table is full ([`MAX_EXTRA`]) or the name is empty.
    pub fn extra(name: &str) -> Option<Field> {
        if name.is_empty() {
            return None;
        }
        let mut names = extra_names();
        if let Some(i) = names.iter().position(|n| *n == name) {
            return Some(Field::Extra(i as u8));
        }
        if names.len() >= MAX_EXTRA {
            return None;
        }
        // Leaked once per distinct name (at most MAX_EXTRA of them in a process): names live as long as
        // the fields that carry them.
        names.push(Box::leak(name.to_owned().into_boxed_str()));
        Some(Field::Extra((names.len() - 1) as u8))
    }

    /// The field called `name`: a standard one, or an extra already seen in a file.
    pub fn named(name: &str) -> Option<Field> {
        Field::STANDARD.into_iter().find(|f| f.name() == name).or_else(|| {
            let names = extra_names();
            names.iter().position(|n| *n == name).map(|i| Field::Extra(i as u8))
        })
    }

    /// The field a user named (`--color-by`, `--filter`): a standard one, else an extra by that name
    /// (interned, so that a file loaded next can fill it).
    pub fn parse(name: &str) -> Option<Field> {
        Field::named(name).or_else(|| Field::extra(name))
    }

    /// The standard fields, then every extra seen so far: the order columns are kept in.
    pub fn known() -> Vec<Field> {
        let extras = extra_names().len();
        Field::STANDARD.into_iter().chain((0..extras).map(|i| Field::Extra(i as u8))).collect()
    }

    /// The name laspy and PDAL use (a file's own name for an extra).
    pub fn name(self) -> &'static str {
        match self {
            Field::Extra(i) => extra_names().get(i as usize).copied().unwrap_or("extra"),
            Field::ReturnNumber => "return_number",
            Field::NumberOfReturns => "number_of_returns",
            Field::ScanAngle => "scan_angle",
            Field::UserData => "user_data",
            Field::PointSourceId => "point_source_id",
            Field::GpsTime => "gps_time",
            Field::Nir => "nir",
        }
    }

    /// The unit its values are in, for legends ("" for counts and codes).
    pub fn unit(self) -> &'static str {
        match self {
            Field::ScanAngle => "°",
            Field::GpsTime => "s",
            _ => "",
        }
    }

    /// Whether its values are categories (codes, IDs, counts) rather than measurements.
    pub fn categorical(self) -> bool {
        // Extras are measurements unless a file says otherwise (none does: LAS extra bytes have no kind).
        matches!(self, Field::ReturnNumber | Field::NumberOfReturns | Field::PointSourceId)
    }

    /// The ramp it is shown with unless another is asked for.
    pub fn default_ramp(self) -> crate::ramp::Ramp {
        use crate::ramp::Ramp;
        match self {
            f if f.categorical() => Ramp::Categorical,
            Field::ScanAngle => Ramp::Diverging,
            Field::Nir => Ramp::Gray,
            _ => Ramp::Viridis,
        }
    }

    /// Its bit in a [`FieldSet`].
    fn bit(self) -> u64 {
        1 << self.index()
    }

    /// The field's bit in a [`FieldSet`] (0..63): the standard fields first, then the extras.
    pub fn index(self) -> u32 {
        match self {
            Field::ReturnNumber => 0,
            Field::NumberOfReturns => 1,
            Field::ScanAngle => 2,
            Field::UserData => 3,
            Field::PointSourceId => 4,
            Field::GpsTime => 5,
            Field::Nir => 6,
            Field::Extra(i) => Field::STANDARD.len() as u32 + i as u32,
        }
    }

    /// The field of [`Field::index`] `i` (below 64).
    pub fn of_index(i: u32) -> Field {
        match Field::STANDARD.get(i as usize) {
            Some(f) => *f,
            None => Field::Extra((i - Field::STANDARD.len() as u32) as u8),
        }
    }
}

impl serde::Serialize for Field {
    /// As its name (`"gps_time"`, a file's own name for an extra).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldSet(u64);

impl FieldSet {
    pub const NONE: FieldSet = FieldSet(0);
    /// Every field, the extras included.
    pub const ALL: FieldSet = FieldSet(u64::MAX);
    /// The standard fields ([`Field::STANDARD`]).
    pub const STANDARD: FieldSet = FieldSet((1 << Field::STANDARD.len()) - 1);

    pub fn of(fields: &[Field]) -> FieldSet {
        FieldSet(fields.iter().fold(0, |b, f| b | f.bit()))
    }
    pub fn contains(self, f: Field) -> bool {
        self.0 & f.bit() != 0
    }
    pub fn with(self, f: Field) -> FieldSet {
        FieldSet(self.0 | f.bit())
    }
    pub fn union(self, o: FieldSet) -> FieldSet {
        FieldSet(self.0 | o.0)
    }
    pub fn intersect(self, o: FieldSet) -> FieldSet {
        FieldSet(self.0 & o.0)
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }
    /// The fields, in [`Field::known`]'s order (the order a decoder's columns come in).
    pub fn iter(self) -> impl Iterator<Item = Field> {
        let bits = self.0;
        (0..64).filter(move |i| bits & (1 << i) != 0).map(Field::of_index)
    }
}

/// One loaded field: value `i` is `base + values[i]` (NaN for points of files without it).
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub field: Field,
    pub base: f64,
    pub values: Vec<f32>,
}

impl Column {
    /// A column of `values` (NaN where a point has none), stored relative to their smallest finite value.
    pub fn from_f64(field: Field, values: &[f64]) -> Column {
        use rayon::prelude::*;
        let base = values.par_iter().copied().filter(|v| v.is_finite()).reduce(|| f64::INFINITY, f64::min);
        let base = if base.is_finite() { base } else { 0.0 };
        Column { field, base, values: values.par_iter().map(|v| (v - base) as f32).collect() }
    }

    /// Point `i`'s value (NaN where its file had none).
    pub fn get(&self, i: usize) -> f64 {
        self.values.get(i).map_or(f64::NAN, |&v| self.base + v as f64)
    }

    /// Whether any point has a value.
    pub fn any(&self) -> bool {
        self.values.iter().any(|v| !v.is_nan())
    }

    /// The 2nd..98th percentile of the values (every distinct value shows for narrow distributions).
    pub fn default_range(&self) -> (f64, f64) {
        let (lo, hi) = crate::attributes::percentile_range(&self.values, 0.02, 0.98);
        (self.base + lo as f64, self.base + hi as f64)
    }

    /// Bytes a point this column takes (on the host; what a device column would too).
    pub const BYTES_PER_POINT: usize = 4;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_hold_what_was_put_in_and_iterate_in_order() {
        let s = FieldSet::of(&[Field::GpsTime, Field::ReturnNumber]);
        assert!(s.contains(Field::GpsTime) && s.contains(Field::ReturnNumber) && !s.contains(Field::Nir));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![Field::ReturnNumber, Field::GpsTime]);
        assert_eq!(FieldSet::STANDARD.len(), 7);
        assert!(FieldSet::NONE.is_empty());
        assert_eq!(s.intersect(FieldSet::of(&[Field::Nir])), FieldSet::NONE);
    }

    #[test]
    fn extras_are_interned_by_name_and_come_after_the_standard_fields() {
        let a = Field::extra("Amplitude").unwrap();
        assert_eq!(Field::extra("Amplitude"), Some(a), "one name, one field");
        assert_eq!(a.name(), "Amplitude");
        assert_eq!(Field::named("Amplitude"), Some(a));
        assert_eq!(Field::named("gps_time"), Some(Field::GpsTime));
        assert_eq!(Field::parse("Deviation"), Field::named("Deviation"), "parse interns");
        assert_eq!(Field::extra(""), None);
        let s = FieldSet::of(&[a, Field::Nir, Field::ReturnNumber]);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![Field::ReturnNumber, Field::Nir, a]);
        assert!(FieldSet::ALL.contains(a) && !FieldSet::STANDARD.contains(a));
        assert!(Field::known().contains(&a));
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"Amplitude\"");
        assert_eq!(serde_json::to_string(&Field::GpsTime).unwrap(), "\"gps_time\"");
    }

    #[test]
    fn columns_keep_large_values_precise_relative_to_their_base() {
        let v = [315_000_000.25, 315_000_000.5, f64::NAN, 315_003_600.0];
        let c = Column::from_f64(Field::GpsTime, &v);
        assert_eq!(c.base, 315_000_000.25);
        assert_eq!(c.get(1), 315_000_000.5);
        assert!(c.get(2).is_nan() && c.get(9).is_nan());
        assert!((c.get(3) - 315_003_600.0).abs() < 1e-3);
        assert!(c.any());
    }
}
