//! Writes real-looking demo point clouds for trying the viewer as a user would.
//!
//! `cargo run --release --example demo_data -- OUT_DIR [--scale S]`
//!
//! How it works: each cloud is made from a fixed seed (the same files every run) and written with
//! pcv's own writers (`pcv_io::convert::write_cloud`), so the files are what `pcv info` and any LAS/PLY
//! reader see:
//! - `terrain.las`: a 300 × 200 m aerial lidar tile in UTM coordinates (zone 32N, around
//!   512 000 E, 5 405 000 N, 250 m above sea level): rolling ground (class 2), a dozen buildings with
//!   pitched roofs and walls (class 6), trees as crowns of points (class 5), a few birds 300 m up
//!   (class 7, outliers the framing must ignore), 16-bit RGB and intensity, and a scan's other
//!   fields (three flight lines: GPS time, point source, scan angle, returns); about 16 points/m².
//! - `terrain-sparse.laz`: the same tile at 0.5 points/m², LAZ — sparse points break up into dots.
//! - `road-strip.laz`: a 500 × 12 m mobile-mapping strip along a road (asphalt class 11, curbs,
//!   poles and a wire), UTM coordinates, z up: the framing must show it along its length.
//! - `bunny.ply`: a 15 cm scanned-object-like model (body, head, ears, tail) in the mesh tools'
//!   convention, y up and facing +z, float coordinates around 0, no colours: auto up must pick y.
//! - `room.pcd`: a 6 × 4 × 2.6 m room with a table, ascii PCD, z up. No axis is clearly thin and
//!   the coordinates are not georeferenced, so auto picks y (the mesh convention) and the room opens
//!   on its side: `--up z`, or U in the window, stands it up. The case the rule gets wrong.
//!
//! `--scale S` multiplies every point count (0.1 for a quick look, 4 for a denser tile).
use glam::DVec3;
use pcv_io::attributes::{Attributes, ColorMode, Column, Field, SourceSpan};
use pcv_io::formats::Format;
use pcv_io::{Point, PointCloud};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A cloud being built, in the file's own coordinates relative to `origin`.
struct Builder {
    origin: DVec3,
    points: Vec<Point>,
    intensity: Vec<f32>,
    class: Vec<u8>,
    /// The LAS record's other fields, when the cloud has them ([`Builder::flight_fields`]).
    columns: Vec<Column>,
}

impl Builder {
    fn new(origin: DVec3) -> Builder {
        Builder { origin, points: Vec::new(), intensity: Vec::new(), class: Vec::new(), columns: Vec::new() }
    }

    /// An airborne scan's other fields, made up from each point's place and class: three flight lines
    /// along x, 80 m apart with overlap (point source 101..103), flown one after the other at 60 m/s
    /// (GPS time in adjusted standard seconds), the scan angle across the line, and returns: vegetation
    /// points are return 1 or 2 of 2-3, ground under crowns the last of 2, other points 1 of 1.
    fn flight_fields(&mut self, seed: u64, crowns: &[(f64, f64, f64, f64)], shift: DVec3) {
        let mut rng = StdRng::seed_from_u64(seed);
        let n = self.points.len();
        let (mut src, mut time, mut angle, mut ret, mut nret) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for (p, &class) in self.points.iter().zip(&self.class) {
            let (x, y) = (p.pos[0] as f64 + shift.x, p.pos[1] as f64 + shift.y);
            let line = ((y / 80.0).floor().clamp(0.0, 2.0)) as u16;
            let centre = 40.0 + 80.0 * line as f64;
            src.push(101.0 + line as f64);
            time.push(315_000_000.0 + 900.0 * line as f64 + x / 60.0 + rng.random_range(0.0..0.01));
            angle.push(((y - centre) / 250.0).atan().to_degrees());
            let under_crown = crowns.iter().any(|t| (x - t.0).powi(2) + (y - t.1).powi(2) < t.2 * t.2);
            let (r, k) = match class {
                5 => {
                    let k = rng.random_range(2..=3);
                    (rng.random_range(1..k), k)
                }
                2 if under_crown => (2, 2),
                _ => (1, 1),
            };
            ret.push(r as f64);
            nret.push(k as f64);
        }
        self.columns = vec![
            Column::from_f64(Field::ReturnNumber, &ret),
            Column::from_f64(Field::NumberOfReturns, &nret),
            Column::from_f64(Field::ScanAngle, &angle),
            Column::from_f64(Field::PointSourceId, &src),
            Column::from_f64(Field::GpsTime, &time),
        ];
    }

    fn push(&mut self, local: [f64; 3], rgb: [u8; 3], intensity: f32, class: u8) {
        self.points
            .push(Point::new([local[0] as f32, local[1] as f32, local[2] as f32], [rgb[0], rgb[1], rgb[2], 255]));
        self.intensity.push(intensity.clamp(0.0, 65535.0).round());
        self.class.push(class);
    }

    fn finish(self, label: &str, rgb: bool, intensity: bool, class: bool) -> PointCloud {
        let n = self.points.len() as u64;
        let mut c = PointCloud::from_points(self.points, self.origin, label);
        c.attributes = Some(Arc::new(Attributes {
            intensity: intensity.then_some(self.intensity),
            classification: class.then_some(self.class),
            columns: self.columns,
            field_spec: None,
            has_rgb: rgb,
            sources: vec![SourceSpan {
                label: label.into(),
                format: Format::Raw,
                points: 0..n,
                has_rgb: rgb,
                has_intensity: intensity,
                has_classification: class,
                uniform_rgb: None,
                crs: None,
            }],
            mode: ColorMode::Rgb,
            loaded_rgba: None,
            color_note: None,
        }));
        c
    }
}

fn jitter(rng: &mut StdRng, c: [u8; 3], amount: i32) -> [u8; 3] {
    c.map(|v| (v as i32 + rng.random_range(-amount..=amount)).clamp(0, 255) as u8)
}

fn ground_height(x: f64, y: f64) -> f64 {
    4.0 * (x / 47.0).sin() * (y / 61.0).cos() + 2.5 * (x / 19.0 + y / 23.0).sin() + 0.02 * x
}

struct House {
    x: f64,
    y: f64,
    w: f64,
    d: f64,
    wall_h: f64,
    roof_h: f64,
    roof: [u8; 3],
}

/// The aerial tile: ground, buildings, trees, birds (see the module doc).
fn terrain(density_per_m2: f64, seed: u64) -> Builder {
    let mut rng = StdRng::seed_from_u64(seed);
    let origin = DVec3::new(512_000.0, 5_405_000.0, 250.0);
    let mut b = Builder::new(origin);
    let (sx, sy) = (300.0, 200.0);
    let houses: Vec<House> = (0..12)
        .map(|i| {
            let row = (i / 4) as f64;
            let col = (i % 4) as f64;
            House {
                x: 40.0 + col * 60.0 + rng.random_range(-8.0..8.0),
                y: 35.0 + row * 60.0 + rng.random_range(-8.0..8.0),
                w: rng.random_range(10.0..22.0),
                d: rng.random_range(8.0..14.0),
                wall_h: rng.random_range(5.0..9.0),
                roof_h: rng.random_range(2.0..5.0),
                roof: [[170, 70, 55], [120, 120, 125], [150, 90, 60]][i % 3],
            }
        })
        .collect();
    let trees: Vec<(f64, f64, f64, f64)> = (0..140)
        .filter_map(|_| {
            let (x, y) = (rng.random_range(5.0..sx - 5.0), rng.random_range(5.0..sy - 5.0));
            let clear = houses.iter().all(|h| (x - h.x).abs() > h.w / 2.0 + 4.0 || (y - h.y).abs() > h.d / 2.0 + 4.0);
            clear.then(|| (x, y, rng.random_range(2.5..6.0), rng.random_range(8.0..18.0)))
        })
        .collect();
    let inside = |h: &House, x: f64, y: f64| (x - h.x).abs() < h.w / 2.0 && (y - h.y).abs() < h.d / 2.0;
    // Ground and roofs: one last return per sample on a jittered grid.
    let n = (sx * sy * density_per_m2) as usize;
    for _ in 0..n {
        let (x, y) = (rng.random_range(0.0..sx), rng.random_range(0.0..sy));
        let g = ground_height(x, y);
        if let Some(h) = houses.iter().find(|h| inside(h, x, y)) {
            let ridge = 1.0 - ((y - h.y).abs() / (h.d / 2.0));
            let z = ground_height(h.x, h.y) + h.wall_h + h.roof_h * ridge;
            b.push(
                [x, y, z + rng.random_range(-0.03..0.03)],
                jitter(&mut rng, h.roof, 12),
                900.0 + rng.random_range(0.0..300.0),
                6,
            );
            continue;
        }
        if let Some(&(tx, ty, r, height)) = trees.iter().find(|t| (x - t.0).powi(2) + (y - t.1).powi(2) < t.2 * t.2) {
            let d = ((x - tx).powi(2) + (y - ty).powi(2)).sqrt() / r;
            if rng.random_bool(0.8) {
                let z = ground_height(tx, ty)
                    + height * (0.55 + 0.45 * (1.0 - d * d).max(0.0).sqrt())
                    + rng.random_range(-0.8..0.8);
                b.push([x, y, z], jitter(&mut rng, [60, 120, 45], 25), 300.0 + rng.random_range(0.0..400.0), 5);
                continue;
            }
        }
        let grass = [110 + (g * 4.0) as i32, 130, 70].map(|v| v.clamp(0, 255) as u8);
        b.push(
            [x, y, g + rng.random_range(-0.04..0.04)],
            jitter(&mut rng, grass, 15),
            1400.0 + rng.random_range(0.0..500.0),
            2,
        );
    }
    // Walls: seen at a slant by the scanner, fewer points.
    for h in &houses {
        let g = ground_height(h.x, h.y);
        let perimeter = 2.0 * (h.w + h.d);
        let m = (perimeter * h.wall_h * density_per_m2 * 0.3) as usize;
        for _ in 0..m {
            let t = rng.random_range(0.0..perimeter);
            let (x, y) = if t < h.w {
                (h.x - h.w / 2.0 + t, h.y - h.d / 2.0)
            } else if t < h.w + h.d {
                (h.x + h.w / 2.0, h.y - h.d / 2.0 + (t - h.w))
            } else if t < 2.0 * h.w + h.d {
                (h.x + h.w / 2.0 - (t - h.w - h.d), h.y + h.d / 2.0)
            } else {
                (h.x - h.w / 2.0, h.y + h.d / 2.0 - (t - 2.0 * h.w - h.d))
            };
            b.push([x, y, g + rng.random_range(0.0..h.wall_h)], jitter(&mut rng, [200, 195, 180], 10), 1100.0, 6);
        }
    }
    // Birds: outliers far above.
    for _ in 0..6 {
        b.push(
            [rng.random_range(0.0..sx), rng.random_range(0.0..sy), rng.random_range(280.0..320.0)],
            [255, 255, 255],
            50.0,
            7,
        );
    }
    b.flight_fields(seed + 100, &trees, DVec3::ZERO);
    // Recentre: local coordinates around the tile's middle.
    let shift = DVec3::new(sx / 2.0, sy / 2.0, 0.0);
    for p in &mut b.points {
        p.pos = [p.pos[0] - shift.x as f32, p.pos[1] - shift.y as f32, p.pos[2]];
    }
    b.origin += shift;
    b
}

/// The road strip (see the module doc).
fn road_strip(density_per_m2: f64, seed: u64) -> Builder {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut b = Builder::new(DVec3::new(688_250.0, 5_330_100.0, 310.0));
    let (len, width) = (500.0, 12.0);
    let n = (len * width * density_per_m2) as usize;
    for _ in 0..n {
        let x = rng.random_range(-len / 2.0..len / 2.0);
        let y = rng.random_range(-width / 2.0..width / 2.0);
        let z0 = 0.004 * x + 0.5 * (x / 90.0).sin();
        let (z, rgb, i, c) = if y.abs() < 3.5 {
            // Asphalt with a crown, and a dashed centre line.
            let line = y.abs() < 0.08 && (x.rem_euclid(12.0)) < 6.0;
            let rgb = if line { [235, 235, 230] } else { jitter(&mut rng, [70, 70, 75], 8) };
            (z0 + 0.06 * (1.0 - y.abs() / 3.5), rgb, if line { 3000.0 } else { 700.0 }, 11)
        } else if y.abs() < 3.65 {
            (z0 + 0.12, jitter(&mut rng, [170, 170, 165], 8), 1500.0, 2)
        } else {
            (z0 + 0.15 + 0.05 * rng.random::<f64>(), jitter(&mut rng, [95, 140, 70], 20), 1200.0, 2)
        };
        b.push([x, y, z + rng.random_range(-0.01..0.01)], rgb, i + rng.random_range(0.0..200.0), c);
    }
    // Poles every 40 m on one side, a wire between their tops.
    for k in 0..13 {
        let x = -len / 2.0 + 10.0 + k as f64 * 40.0;
        let z0 = 0.004 * x + 0.5 * (x / 90.0).sin();
        for _ in 0..400 {
            let a = rng.random_range(0.0..std::f64::consts::TAU);
            b.push(
                [x + 0.12 * a.cos(), 5.0 + 0.12 * a.sin(), z0 + rng.random_range(0.0..8.0)],
                [120, 120, 120],
                1800.0,
                15,
            );
        }
    }
    for _ in 0..(len * 20.0) as usize {
        let x = rng.random_range(-len / 2.0 + 10.0..len / 2.0 - 10.0);
        let z0 = 0.004 * x + 0.5 * (x / 90.0).sin();
        let sag = 0.6 * (1.0 - (((x + len / 2.0 - 10.0) % 40.0) / 20.0 - 1.0).powi(2));
        b.push([x, 5.0, z0 + 7.8 - sag], [40, 40, 40], 400.0, 14);
    }
    b
}

/// The bunny-like object, y up, facing +z, 15 cm (see the module doc).
fn bunny(count: usize, seed: u64) -> Builder {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut b = Builder::new(DVec3::ZERO);
    // Ellipsoids: centre, radii (metres).
    let parts: [([f64; 3], [f64; 3], f64); 6] = [
        ([0.0, 0.045, -0.01], [0.05, 0.042, 0.065], 0.46),    // body
        ([0.0, 0.095, 0.055], [0.028, 0.027, 0.03], 0.17),    // head
        ([-0.011, 0.14, 0.045], [0.007, 0.03, 0.011], 0.07),  // left ear
        ([0.013, 0.138, 0.048], [0.007, 0.028, 0.011], 0.07), // right ear
        ([0.0, 0.035, -0.078], [0.014, 0.014, 0.012], 0.05),  // tail
        ([0.0, 0.01, 0.03], [0.035, 0.012, 0.03], 0.18),      // front paws
    ];
    for (c, r, share) in parts {
        for _ in 0..(count as f64 * share) as usize {
            // A uniform direction, on the ellipsoid's surface, with scanner noise.
            let v = loop {
                let v = glam::DVec3::new(
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-1.0..1.0),
                );
                if v.length_squared() <= 1.0 && v.length_squared() > 1e-6 {
                    break v.normalize();
                }
            };
            let p = [c[0] + v.x * r[0], c[1] + v.y * r[1], c[2] + v.z * r[2]];
            if p[1] < 0.0 {
                continue;
            }
            let noise = 0.0003;
            b.push(
                [
                    p[0] + rng.random_range(-noise..noise),
                    p[1] + rng.random_range(-noise..noise),
                    p[2] + rng.random_range(-noise..noise),
                ],
                [200, 200, 200],
                0.0,
                0,
            );
        }
    }
    b
}

/// The room (see the module doc).
fn room(density_per_m2: f64, seed: u64) -> Builder {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut b = Builder::new(DVec3::ZERO);
    let (sx, sy, sz) = (6.0, 4.0, 2.6);
    let faces: [(f64, [u8; 3]); 6] = [
        (sx * sy, [150, 120, 90]),
        (sx * sy, [230, 230, 225]),
        (sx * sz, [210, 205, 190]),
        (sx * sz, [210, 205, 190]),
        (sy * sz, [190, 200, 210]),
        (sy * sz, [190, 200, 210]),
    ];
    for (k, (area, rgb)) in faces.iter().enumerate() {
        for _ in 0..(area * density_per_m2) as usize {
            let (u, v) = (rng.random::<f64>(), rng.random::<f64>());
            let p = match k {
                0 => [u * sx, v * sy, 0.0],
                1 => [u * sx, v * sy, sz],
                2 => [u * sx, 0.0, v * sz],
                3 => [u * sx, sy, v * sz],
                4 => [0.0, u * sy, v * sz],
                _ => [sx, u * sy, v * sz],
            };
            b.push(p, jitter(&mut rng, *rgb, 10), 0.0, 0);
        }
    }
    // A table.
    for _ in 0..(1.6 * 0.9 * density_per_m2 * 2.0) as usize {
        let p = [2.2 + rng.random_range(0.0..1.6), 1.5 + rng.random_range(0.0..0.9), 0.75];
        b.push(p, [120, 80, 40], 0.0, 0);
    }
    for (lx, ly) in [(2.25, 1.55), (3.75, 1.55), (2.25, 2.35), (3.75, 2.35)] {
        for _ in 0..300 {
            b.push([lx, ly, rng.random_range(0.0..0.75)], [90, 60, 30], 0.0, 0);
        }
    }
    b
}

/// Writes `cloud` as ascii PCD (pcv writes no PCD; the format is three lines of header).
fn write_pcd(cloud: &PointCloud, path: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    let n = cloud.points.len();
    writeln!(w, "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS x y z rgb\nSIZE 4 4 4 4\nTYPE F F F U\nCOUNT 1 1 1 1")?;
    writeln!(w, "WIDTH {n}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {n}\nDATA ascii")?;
    for p in cloud.points.iter() {
        let rgb = (p.rgba[0] as u32) << 16 | (p.rgba[1] as u32) << 8 | p.rgba[2] as u32;
        writeln!(w, "{:.4} {:.4} {:.4} {rgb}", p.pos[0], p.pos[1], p.pos[2])?;
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out: Option<PathBuf> = None;
    let mut scale = 1.0f64;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--scale" => {
                scale = args.get(i + 1).and_then(|s| s.parse().ok()).filter(|s: &f64| *s > 0.0).unwrap_or_else(|| {
                    eprintln!("demo_data: --scale takes a positive number");
                    std::process::exit(2)
                });
                i += 1;
            }
            a if out.is_none() => out = Some(PathBuf::from(a)),
            a => {
                eprintln!("demo_data: unexpected argument '{a}'\nusage: demo_data OUT_DIR [--scale S]");
                std::process::exit(2)
            }
        }
        i += 1;
    }
    let Some(dir) = out else {
        eprintln!("usage: cargo run --release --example demo_data -- OUT_DIR [--scale S]");
        std::process::exit(2)
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("demo_data: {}: {e}", dir.display());
        std::process::exit(1);
    }
    let write = |cloud: PointCloud, name: &str| {
        let path = dir.join(name);
        let n = cloud.points.len();
        let result = if name.ends_with(".pcd") {
            write_pcd(&cloud, &path).map_err(|e| e.to_string())
        } else {
            pcv_io::convert::write_cloud(&cloud, &path).map_err(|e| e.to_string())
        };
        match result {
            Ok(()) => println!("{} ({n} points)", path.display()),
            Err(e) => {
                eprintln!("demo_data: {}: {e}", path.display());
                std::process::exit(1);
            }
        }
    };
    write(terrain(16.0 * scale, 1).finish("terrain.las", true, true, true), "terrain.las");
    write(terrain(0.5 * scale, 1).finish("terrain-sparse.laz", true, true, true), "terrain-sparse.laz");
    write(road_strip(60.0 * scale, 2).finish("road-strip.laz", true, true, true), "road-strip.laz");
    write(bunny((200_000.0 * scale) as usize, 3).finish("bunny.ply", false, false, false), "bunny.ply");
    write(room(2000.0 * scale, 4).finish("room.pcd", true, false, false), "room.pcd");
}
