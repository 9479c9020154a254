//! Point fields beyond position, colour, intensity and class: the LAS record's other fields, kept as
//! columns a cloud can be coloured by.
//!
//! How it works: a [`Field`] names one field as laspy and PDAL spell it (`gps_time`, `return_number`,
//! ...); a [`FieldSet`] is a bit set of them (what a loader is asked to keep). A loaded field is a
//! [`Column`]: one f32 a point, index-aligned with the cloud's points, holding the value less the
//! column's `base` (its smallest value, in f64), so a GPS time of 3·10^8 s keeps sub-millisecond steps
//! across a flight of hours. Points of files without the field hold NaN. Scan angles are in degrees
//! in every LAS format (the 1-degree rank of formats 0–5, the 0.006-degree steps of 6–10).

/// A point field that can be loaded as a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    ReturnNumber,
    NumberOfReturns,
    ScanAngle,
    UserData,
    PointSourceId,
    GpsTime,
    Nir,
}

impl Field {
    pub const ALL: [Field; 7] = [
        Field::ReturnNumber,
        Field::NumberOfReturns,
        Field::ScanAngle,
        Field::UserData,
        Field::PointSourceId,
        Field::GpsTime,
        Field::Nir,
    ];

    /// The name laspy and PDAL use.
    pub fn name(self) -> &'static str {
        match self {
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

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldSet(u16);

impl FieldSet {
    pub const NONE: FieldSet = FieldSet(0);
    pub const ALL: FieldSet = FieldSet((1 << Field::ALL.len()) - 1);

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
    /// The fields, in [`Field::ALL`]'s order (the order a decoder's columns come in).
    pub fn iter(self) -> impl Iterator<Item = Field> {
        Field::ALL.into_iter().filter(move |f| self.contains(*f))
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
        assert_eq!(FieldSet::ALL.len(), 7);
        assert!(FieldSet::NONE.is_empty());
        assert_eq!(s.intersect(FieldSet::of(&[Field::Nir])), FieldSet::NONE);
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
