//! `pcv raster`: a constructed tile (flat ground, a box building, a hole with no points) in US survey
//! feet, rasterized as a surface model and an orthophoto, read back by an independent reader (Python's
//! `tifffile`, which scripts/setup.sh installs into .tools/venv; the test says SKIPPED without it):
//! the size, the placement tags (pixel scale, tiepoint at the north-west corner), the EPSG code in the
//! GeoKeys, the heights of known cells (ground, roof, no-data in the hole) and a class filter that
//! makes a terrain model (the roof's cells empty: no ground was measured under it).
mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const PCV: &str = env!("CARGO_BIN_EXE_pcv");
/// The tile's south-west corner (file coordinates, US survey feet).
const SW: [f64; 2] = [1_500_000.0, 1_200_000.0];

/// 100 × 60 ft of ground (z 50, class 2, brown) every 0.5 ft, except a 10 × 10 ft hole at (70..80,
/// 40..50); a 20 × 10 ft building (roof at z 62, class 6, red) over (20..40, 10..20), with no ground
/// under it.
fn tile(dir: &Path) -> PathBuf {
    let mut b = las::Builder::from((1, 2));
    b.point_format = las::point::Format::new(2).unwrap();
    let t = |o: f64| las::Transform { scale: 0.001, offset: o };
    b.transforms = las::Vector { x: t(SW[0]), y: t(SW[1]), z: t(0.0) };
    let p = dir.join("tile.las");
    let mut w = las::Writer::from_path(&p, b.into_header().unwrap()).unwrap();
    for i in 0..200 {
        for j in 0..120 {
            let (x, y) = (i as f64 * 0.5 + 0.25, j as f64 * 0.5 + 0.25);
            let roof = (20.0..40.0).contains(&x) && (10.0..20.0).contains(&y);
            if (70.0..80.0).contains(&x) && (40.0..50.0).contains(&y) {
                continue;
            }
            let (z, class, rgb) = if roof { (62.0, 6, [200u16, 40, 30]) } else { (50.0, 2, [120, 90, 60]) };
            w.write_point(las::Point {
                x: SW[0] + x,
                y: SW[1] + y,
                z,
                classification: las::point::Classification::new(class).unwrap(),
                color: Some(las::Color { red: rgb[0] << 8, green: rgb[1] << 8, blue: rgb[2] << 8 }),
                ..Default::default()
            })
            .unwrap();
        }
    }
    w.close().unwrap();
    p
}

fn pcv(args: &[&str]) -> String {
    let out = Command::new(PCV).args(args).output().expect("running pcv");
    assert!(out.status.success(), "pcv {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Python with tifffile, or `None` (said).
fn python() -> Option<PathBuf> {
    common::python_with("tifffile, numpy", "tifffile")
}

/// What tifffile reads: shape, dtype, tags, GeoKeys, and the values at the given cells (row, col).
fn read_back(python: &Path, tif: &Path, cells: &[(usize, usize)]) -> Value {
    let script = r#"
import sys, json, tifffile, numpy as np
cells = json.loads(sys.argv[2])
with tifffile.TiffFile(sys.argv[1]) as t:
    p = t.pages[0]
    a = p.asarray()
    keys = p.tags['GeoKeyDirectoryTag'].value
    geokeys = {int(keys[i]): int(keys[i + 3]) for i in range(4, len(keys), 4)}
    nodata = p.tags.get('GDAL_NODATA')
    vals = []
    for r, c in cells:
        v = a[r, c]
        vals.append(None if (a.dtype.kind == 'f' and np.isnan(v)) else v.tolist())
    print(json.dumps({
        'shape': list(a.shape), 'dtype': str(a.dtype),
        'scale': list(p.tags['ModelPixelScaleTag'].value), 'tiepoint': list(p.tags['ModelTiepointTag'].value),
        'geokeys': geokeys, 'nodata': nodata.value if nodata else None, 'values': vals,
    }))
"#;
    let cells = serde_json::to_string(cells).unwrap();
    let out = Command::new(python).args(["-c", script, tif.to_str().unwrap(), &cells]).output().unwrap();
    assert!(out.status.success(), "tifffile: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn surface_model_and_orthophoto_read_back_in_place() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let las = tile(dir.path());
    let dsm = dir.path().join("dsm.tif");
    let said =
        pcv(&["raster", las.to_str().unwrap(), "--cell", "1", "--crs", "EPSG:2258", "-o", dsm.to_str().unwrap()]);
    assert!(said.contains("100 x 60 cells of 1 ftUS") && said.contains("EPSG:2258"), "{said}");
    // Cells (row from the north edge, column from the west): ground at (5, 5) → row 54; the roof at
    // (30, 15) → row 44, column 30; the hole at (75, 45) → row 14, column 75.
    let cells = [(54, 5), (44, 30), (14, 75), (59, 99)];
    let r = read_back(&py, &dsm, &cells);
    assert_eq!(r["shape"], serde_json::json!([60, 100]));
    assert_eq!(r["dtype"], "float32");
    assert_eq!(r["scale"], serde_json::json!([1.0, 1.0, 0.0]));
    assert_eq!(r["tiepoint"], serde_json::json!([0.0, 0.0, 0.0, SW[0], SW[1] + 60.0, 0.0]));
    assert_eq!(r["geokeys"]["3072"], 2258, "ProjectedCSTypeGeoKey");
    assert_eq!(r["geokeys"]["1024"], 1, "projected model");
    assert_eq!(r["geokeys"]["1025"], 1, "PixelIsArea");
    assert_eq!(r["values"], serde_json::json!([50.0, 62.0, null, 50.0]));
    // A terrain model from the ground points: the roof's cells are empty.
    let dtm = dir.path().join("dtm.tif");
    pcv(&[
        "raster",
        las.to_str().unwrap(),
        "--cell",
        "1",
        "--classes",
        "2",
        "--crs",
        "EPSG:2258",
        "-o",
        dtm.to_str().unwrap(),
    ]);
    assert_eq!(read_back(&py, &dtm, &cells)["values"], serde_json::json!([50.0, null, null, 50.0]));
    // The orthophoto: the highest point's colour, black (no-data 0) in the hole.
    let rgb = dir.path().join("rgb.tif");
    pcv(&[
        "raster",
        las.to_str().unwrap(),
        "--cell",
        "2",
        "--what",
        "rgb",
        "--crs",
        "EPSG:2258",
        "-o",
        rgb.to_str().unwrap(),
    ]);
    let r = read_back(&py, &rgb, &[(27, 2), (22, 15), (7, 37)]);
    assert_eq!(r["shape"], serde_json::json!([30, 50, 3]));
    assert_eq!(r["scale"], serde_json::json!([2.0, 2.0, 0.0]));
    assert_eq!(r["values"], serde_json::json!([[120, 90, 60], [200, 40, 30], [0, 0, 0]]));
    assert_eq!(r["nodata"], "0");
}

#[test]
fn bad_cells_and_huge_rasters_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let las = tile(dir.path());
    let out = dir.path().join("x.tif");
    for (cell, want) in [("0", "--cell must be a positive length"), ("0.001", "choose a larger --cell")] {
        let o = Command::new(PCV)
            .args(["raster", las.to_str().unwrap(), "--cell", cell, "-o", out.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(want), "--cell {cell}: {err}");
    }
    assert!(!out.exists());
}
