//! Measurements written for other tools: GeoJSON with the coordinate system, and CSV.
//!
//! How it works: each [`Measurement`] becomes one GeoJSON feature (georust's `geojson` crate writes
//! them) in the file's own coordinates (x, y, z as the file stores them, so a GIS places them where
//! the points are): a point, a line (distance, polyline, height, angle) or a polygon (area, its ring
//! closed). The feature's properties are the measurement's number, kind and every value with its unit
//! (`length` and `length_unit`, ...: a flat table, as GIS attribute tables want). The collection names
//! the coordinate system the way GeoJSON readers that take one read it (the 2008 `crs` member,
//! `urn:ogc:def:crs:EPSG::N`, which GDAL and QGIS honour; RFC 7946 itself allows only WGS 84, which
//! projected lidar is not), plus `crs_name` and the units. The CSV (the `csv` crate) has one row a
//! measurement: its values in fixed columns (empty where the kind has none), the units, and the
//! geometry as WKT.
use crate::crs_model::{Crs, Units};
use geojson::{Feature, FeatureCollection, Geometry, JsonObject, JsonValue};
use glam::DVec3;
use pcv_model::measure::{MeasureKind, Measurement};
use std::path::{Path, PathBuf};

/// What could not be written, and where.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    Csv { path: PathBuf, source: csv::Error },
    #[error("nothing to export: no complete measurement")]
    Empty,
}

/// Measurements with what their values need: the up axis (file coordinates), the units to give
/// values in, and the file's coordinate system if known.
pub struct MeasurementSet<'a> {
    pub measurements: &'a [Measurement],
    pub up: DVec3,
    pub units: Units,
    pub crs: Option<&'a Crs>,
}

/// The CSV's value columns, in order.
pub const CSV_VALUES: [&str; 12] = [
    "length",
    "horizontal_length",
    "height_difference",
    "area_horizontal",
    "area_sloped",
    "perimeter",
    "slope_percent",
    "slope_deg",
    "angle_deg",
    "x",
    "y",
    "z",
];

impl MeasurementSet<'_> {
    fn complete(&self) -> impl Iterator<Item = (usize, &Measurement)> {
        self.measurements.iter().enumerate().filter(|(_, m)| m.is_complete()).map(|(i, m)| (i + 1, m))
    }

    /// The measurements as a GeoJSON feature collection (complete ones only; `id` is the
    /// measurement's number in the list, from 1).
    pub fn feature_collection(&self) -> FeatureCollection {
        let features = self
            .complete()
            .map(|(id, m)| {
                let pos = |p: &DVec3| [p.x, p.y, p.z];
                let geometry = match m.kind {
                    MeasureKind::Point => Geometry::new_point(pos(&m.points[0])),
                    MeasureKind::Area => {
                        let mut ring: Vec<[f64; 3]> = m.points.iter().map(pos).collect();
                        ring.push(pos(&m.points[0]));
                        Geometry::new_polygon([ring])
                    }
                    _ => Geometry::new_line_string(m.points.iter().map(pos)),
                };
                let mut props = JsonObject::new();
                props.insert("id".into(), id.into());
                props.insert("kind".into(), m.kind.name().into());
                for v in m.values(self.up, &self.units) {
                    props.insert(v.name.into(), round6(v.value).into());
                    props.insert(format!("{}_unit", v.name), v.unit(&self.units).into());
                }
                Feature { geometry: Some(geometry), properties: Some(props), ..Default::default() }
            })
            .collect();
        let mut members = JsonObject::new();
        if let Some(crs) = self.crs {
            if let Some(code) = crs.epsg {
                members.insert(
                    "crs".into(),
                    serde_json::json!({"type": "name", "properties": {"name": format!("urn:ogc:def:crs:EPSG::{code}")}}),
                );
            }
            members.insert("crs_name".into(), JsonValue::from(crs.name.clone()));
            if let Some(v) = &crs.vertical_name {
                members.insert("crs_vertical".into(), JsonValue::from(v.clone()));
            }
        }
        members.insert("horizontal_unit".into(), self.units.horizontal_shown().symbol().into());
        members.insert("vertical_unit".into(), self.units.vertical_shown().symbol().into());
        FeatureCollection { bbox: None, features, foreign_members: Some(members) }
    }

    /// Writes the GeoJSON to `path`; how many measurements it holds.
    pub fn write_geojson(&self, path: &Path) -> Result<usize, ExportError> {
        let fc = self.feature_collection();
        if fc.features.is_empty() {
            return Err(ExportError::Empty);
        }
        let text = geojson::GeoJson::from(fc.clone()).to_string();
        std::fs::write(path, text + "\n").map_err(|source| ExportError::Io { path: path.into(), source })?;
        Ok(fc.features.len())
    }

    /// Writes the CSV to `path`; how many rows.
    pub fn write_csv(&self, path: &Path) -> Result<usize, ExportError> {
        if self.complete().next().is_none() {
            return Err(ExportError::Empty);
        }
        let err = |source| ExportError::Csv { path: path.into(), source };
        let mut w = csv::Writer::from_path(path).map_err(err)?;
        let mut header = vec!["id", "kind", "vertices"];
        header.extend(CSV_VALUES);
        header.extend(["length_unit", "height_unit", "area_unit", "crs", "geometry_wkt"]);
        w.write_record(&header).map_err(err)?;
        let named = self.units.known || self.units.in_metres;
        let unit = |s: String| if named { s } else { String::new() };
        let crs = self.crs.map(|c| c.epsg.map_or(c.name.clone(), |e| format!("EPSG:{e}"))).unwrap_or_default();
        let mut rows = 0;
        for (id, m) in self.complete() {
            let values = m.values(self.up, &self.units);
            let mut row = vec![id.to_string(), m.kind.name().to_string(), m.points.len().to_string()];
            for name in CSV_VALUES {
                row.push(values.iter().find(|v| v.name == name).map_or(String::new(), |v| round6(v.value).to_string()));
            }
            row.push(unit(self.units.horizontal_shown().symbol()));
            row.push(unit(self.units.vertical_shown().symbol()));
            row.push(unit(format!("{}²", self.units.horizontal_shown().symbol())));
            row.push(crs.clone());
            row.push(wkt(m));
            w.write_record(&row).map_err(err)?;
            rows += 1;
        }
        w.flush().map_err(|source| ExportError::Io { path: path.into(), source })?;
        Ok(rows)
    }
}

/// A cross-section's points as CSV: `station, offset, height, x, y, z` (file coordinates and units;
/// station along the section from its start, offset across it, left negative); how many rows.
pub fn write_profile_csv(path: &Path, rows: &[[f64; 6]]) -> Result<usize, ExportError> {
    let err = |source| ExportError::Csv { path: path.into(), source };
    let mut w = csv::Writer::from_path(path).map_err(err)?;
    w.write_record(["station", "offset", "height", "x", "y", "z"]).map_err(err)?;
    for r in rows {
        w.write_record(r.iter().map(|v| round6(*v).to_string())).map_err(err)?;
    }
    w.flush().map_err(|source| ExportError::Io { path: path.into(), source })?;
    Ok(rows.len())
}

/// A cross-section as SVG: each point `(station, height, rgb)` a dot, over a grid of round station and
/// height steps labelled with `unit` (the file's: station and height are in it), 1 unit across = 1
/// unit up (no exaggeration), `width_px` wide; how many points.
pub fn write_profile_svg(
    path: &Path,
    points: &[(f64, f64, [u8; 3])],
    unit: &str,
    width_px: f64,
) -> Result<usize, ExportError> {
    use std::fmt::Write as _;
    if points.is_empty() {
        return Err(ExportError::Empty);
    }
    let (mut s0, mut s1, mut z0, mut z1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(s, z, _) in points {
        (s0, s1, z0, z1) = (s0.min(s), s1.max(s), z0.min(z), z1.max(z));
    }
    let span = (s1 - s0).max(z1 - z0).max(1e-9);
    let (margin, k) = (60.0, width_px / span.max(s1 - s0).max(1e-9));
    let (w, h) = ((s1 - s0) * k + 2.0 * margin, (z1 - z0) * k + 2.0 * margin);
    let x = |s: f64| margin + (s - s0) * k;
    let y = |z: f64| h - margin - (z - z0) * k;
    let step = pcv_model::number::round_length(span / 8.0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.1} {h:.1}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r##"<rect width="100%" height="100%" fill="white"/><g stroke="#ccc" stroke-width="0.5">"##);
    let mut st = (s0 / step).ceil() * step;
    while st <= s1 {
        let _ = writeln!(
            out,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
            x(st),
            margin * 0.5,
            x(st),
            h - margin
        );
        st += step;
    }
    let mut z = (z0 / step).ceil() * step;
    while z <= z1 {
        let _ = writeln!(
            out,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
            margin,
            y(z),
            w - margin * 0.5,
            y(z)
        );
        z += step;
    }
    let _ = writeln!(out, "</g><g fill=\"#333\">");
    let mut st = (s0 / step).ceil() * step;
    while st <= s1 {
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{} {unit}</text>"#,
            x(st),
            h - margin + 16.0,
            round6(st)
        );
        st += step;
    }
    let mut z = (z0 / step).ceil() * step;
    while z <= z1 {
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{} {unit}</text>"#,
            margin - 6.0,
            y(z) + 4.0,
            round6(z)
        );
        z += step;
    }
    let _ = writeln!(out, "</g><g>");
    for &(s, z, c) in points {
        let _ = writeln!(
            out,
            r#"<circle cx="{:.2}" cy="{:.2}" r="1" fill="rgb({},{},{})"/>"#,
            x(s),
            y(z),
            c[0],
            c[1],
            c[2]
        );
    }
    let _ = writeln!(out, "</g></svg>");
    std::fs::write(path, out).map_err(|source| ExportError::Io { path: path.into(), source })?;
    Ok(points.len())
}

/// `v` to a millionth of its unit (a micrometre of a metre: far below what lidar resolves), so that
/// the float noise of a difference (`23.673000000000002`) is not written.
fn round6(v: f64) -> f64 {
    if v.is_finite() && v.abs() < 1e12 {
        // + 0.0: a negative zero prints as "0".
        (v * 1e6).round() / 1e6 + 0.0
    } else {
        v
    }
}

/// A measurement's geometry as WKT with z: `POINT Z (x y z)`, `LINESTRING Z (...)`, `POLYGON Z ((...))`.
pub fn wkt(m: &Measurement) -> String {
    let coords = |pts: &mut dyn Iterator<Item = &DVec3>| {
        pts.map(|p| format!("{} {} {}", p.x, p.y, p.z)).collect::<Vec<_>>().join(", ")
    };
    match m.kind {
        MeasureKind::Point => format!("POINT Z ({})", coords(&mut m.points.iter())),
        MeasureKind::Area => format!("POLYGON Z (({}))", coords(&mut m.points.iter().chain(m.points.first()))),
        _ => format!("LINESTRING Z ({})", coords(&mut m.points.iter())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crs_model::{CrsKind, LengthUnit};

    fn set_up() -> (Vec<Measurement>, Crs) {
        let (x, y) = (1_500_000.25, 1_200_000.5);
        let ms = vec![
            Measurement {
                kind: MeasureKind::Area,
                points: vec![
                    DVec3::new(x, y, 5000.0),
                    DVec3::new(x + 100.0, y, 5000.0),
                    DVec3::new(x + 100.0, y + 50.0, 5000.0),
                    DVec3::new(x, y + 50.0, 5000.0),
                ],
            },
            Measurement { kind: MeasureKind::Distance, points: vec![DVec3::new(x, y, 5000.0)] }, // incomplete
            Measurement { kind: MeasureKind::Point, points: vec![DVec3::new(x, y, 5001.5)] },
            Measurement {
                kind: MeasureKind::Height,
                points: vec![DVec3::new(x, y, 5000.1), DVec3::new(x + 30.0, y + 40.0, 5025.3)],
            },
        ];
        let crs = Crs {
            name: "NAD83 / New Mexico Central (ftUS)".into(),
            epsg: Some(2258),
            kind: CrsKind::Projected,
            horizontal_unit: LengthUnit::US_SURVEY_FOOT,
            vertical_name: None,
            vertical_epsg: None,
            vertical_unit: LengthUnit::US_SURVEY_FOOT,
            read_from: "test".into(),
            definition: "EPSG:2258".into(),
        };
        (ms, crs)
    }

    #[test]
    fn geojson_reads_back_with_the_crs_and_values() {
        let (ms, crs) = set_up();
        let set = MeasurementSet { measurements: &ms, up: DVec3::Z, units: crs.units(), crs: Some(&crs) };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.geojson");
        assert_eq!(set.write_geojson(&path).unwrap(), 3);
        // Read back as plain JSON (not through the writer's crate).
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["type"], "FeatureCollection");
        assert_eq!(v["crs"]["properties"]["name"], "urn:ogc:def:crs:EPSG::2258");
        assert_eq!(v["horizontal_unit"], "ftUS");
        let f = v["features"].as_array().unwrap();
        assert_eq!(f.len(), 3, "the incomplete distance is left out");
        assert_eq!(f[0]["geometry"]["type"], "Polygon");
        let ring = f[0]["geometry"]["coordinates"][0].as_array().unwrap();
        assert_eq!(ring.len(), 5, "closed");
        assert_eq!(ring[0], ring[4]);
        assert_eq!(ring[1][0].as_f64().unwrap(), 1_500_100.25);
        assert_eq!(f[0]["properties"]["area_horizontal"].as_f64().unwrap(), 5000.0);
        assert_eq!(f[0]["properties"]["area_horizontal_unit"], "ftUS²");
        assert_eq!(f[1]["geometry"]["type"], "Point");
        assert_eq!(f[1]["properties"]["id"], 3);
        assert_eq!(f[2]["geometry"]["type"], "LineString");
        // 5025.3 − 5000.1 is 25.199999999999818 in f64: written as 25.2.
        assert_eq!(f[2]["properties"]["height_difference"].as_f64().unwrap(), 25.2);
        assert_eq!(f[2]["properties"]["horizontal_length"].as_f64().unwrap(), 50.0);
        // The crate's own reader takes it too.
        let parsed: geojson::GeoJson = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        assert!(matches!(parsed, geojson::GeoJson::FeatureCollection(ref c) if c.features.len() == 3));
    }

    #[test]
    fn profile_svg_places_points_on_a_labelled_grid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.svg");
        let pts = [(0.0, 100.0, [10, 20, 30]), (40.0, 100.0, [10, 20, 30]), (20.0, 106.0, [200, 0, 0])];
        assert_eq!(write_profile_svg(&path, &pts, "m", 400.0).unwrap(), 3);
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(
            svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"520\" height=\"180\""),
            "{}",
            &svg[..120]
        );
        assert_eq!(svg.matches("<circle").count(), 3);
        // 10 m per 100 px: the roof point 6 m above the ground points, 20 m along.
        assert!(svg.contains(r#"<circle cx="260.00" cy="60.00" r="1" fill="rgb(200,0,0)"/>"#), "{svg}");
        assert!(svg.contains(r#"<circle cx="60.00" cy="120.00""#));
        assert!(svg.contains(">20 m</text>") && svg.contains(">105 m</text>"), "grid labels");
        assert!(matches!(write_profile_svg(&path, &[], "m", 400.0), Err(ExportError::Empty)));
        assert_eq!(round6(-1e-9).to_string(), "0");
    }

    #[test]
    fn csv_has_a_row_a_measurement_and_empty_cells_elsewhere() {
        let (ms, crs) = set_up();
        let units = crs.units().with_metres(true);
        let set = MeasurementSet { measurements: &ms, up: DVec3::Z, units, crs: Some(&crs) };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csv");
        assert_eq!(set.write_csv(&path).unwrap(), 3);
        let mut r = csv::Reader::from_path(&path).unwrap();
        let header = r.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = r.records().map(|r| r.unwrap()).collect();
        assert_eq!(&rows[0][col("kind")], "area");
        let ft = 1200.0 / 3937.0;
        let area: f64 = rows[0][col("area_horizontal")].parse().unwrap();
        assert!((area - 5000.0 * ft * ft).abs() < 1e-6, "in square metres: {area}");
        assert_eq!(&rows[0][col("angle_deg")], "");
        assert_eq!(&rows[0][col("area_unit")], "m²");
        assert_eq!(&rows[0][col("crs")], "EPSG:2258");
        assert!(rows[0][col("geometry_wkt")].starts_with("POLYGON Z ((1500000.25 1200000.5 5000, "));
        assert_eq!(&rows[1][col("z")], "5001.5", "a point's coordinates are the file's");
        assert_eq!(&rows[2][col("vertices")], "2");
        let ftus_m = 1200.0 / 3937.0;
        assert_eq!(&rows[2][col("height_difference")], format!("{}", round6(25.2 * ftus_m)), "no float noise");
        // Nothing complete: an error, no file.
        let empty = MeasurementSet { measurements: &ms[1..2], up: DVec3::Z, units, crs: None };
        assert!(matches!(empty.write_csv(&dir.path().join("e.csv")), Err(ExportError::Empty)));
        let bad = MeasurementSet { measurements: &ms, up: DVec3::Z, units, crs: None };
        let e = bad.write_geojson(Path::new("/nonexistent-dir/m.geojson")).unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent-dir/m.geojson: "), "{e}");
    }
}
