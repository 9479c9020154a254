//! The viewer as a person uses it, in a real window on a virtual X display (Xvfb + Mesa; CPU backend).
//!
//! How it works: each test writes its own point files, starts its own `Xvfb` (it picks a free display
//! number and says which on `-displayfd`), and runs the built `pcv` there. Input comes from an input
//! script (`--input-script`: events at given frames, taking the same way through the keymap as the
//! window's own) or from the X server itself (`xdotool`, XTest events that GLFW receives like a
//! mouse's); what the viewer did comes back from `--trace` (one JSON line per frame drawn: camera, pivot,
//! picked point, measurement, layers, messages). The checks are the specification's: an orbit turns
//! by 3 radians per window height around the point under the cursor, which stays put; a pan keeps the
//! grabbed point under the cursor; a wheel notch moves a fifth of the way to the point under the
//! cursor; a double-click brings the point to the centre; a click picks the exact point of a LAS file
//! (its stored coordinates, intensity, class and colour); a printed pose given back to `pcv render`
//! gives the window's image; `pcv record` writes the path's frames (and an H.264 video through ffmpeg);
//! an idle window takes no CPU; dropped files load as layers, a bad one is reported; the closed panel
//! covers a small corner. Tests skip, saying why, where `Xvfb` (or, for the XTest test, `xdotool`; for
//! the video, `ffmpeg`) is not installed.
use glam::{Mat4, Vec2, Vec3};
use pcv_camera::{Pose, UpAxis, FOV_Y_RAD};
use pcv_render::image_io::Frame;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const PCV: &str = env!("CARGO_BIN_EXE_pcv");
const RUN_TIMEOUT: Duration = Duration::from_secs(240);
/// How far from the cursor the picked point may project: the disk of an adaptive point (up to 8 px
/// across) covers pixels up to 4 px from it, plus rounding.
const SPLAT_SLOP_PX: f32 = 6.0;
const W: u32 = 640;
const H: u32 = 360;

/// A virtual X display, stopped when dropped.
struct Display {
    child: Child,
    name: String,
}

impl Display {
    fn start() -> Option<Display> {
        let spawned = Command::new("Xvfb")
            .args(["-displayfd", "1", "-screen", "0", "1280x1024x24", "-nolisten", "tcp"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                eprintln!("SKIPPED: Xvfb could not start ({e}): apt-get install xvfb libgl1-mesa-dri");
                return None;
            }
        };
        let mut line = String::new();
        let stdout = child.stdout.take().expect("Xvfb's stdout");
        BufReader::new(stdout).read_line(&mut line).expect("reading Xvfb's display number");
        let n: u32 =
            line.trim().parse().unwrap_or_else(|_| panic!("Xvfb printed '{line}' instead of a display number"));
        Some(Display { child, name: format!(":{n}") })
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("DISPLAY", &self.name).env("LIBGL_ALWAYS_SOFTWARE", "1").env_remove("WAYLAND_DISPLAY");
        c
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits for `child` (killing it after [`RUN_TIMEOUT`]) and returns its output.
fn finish(mut child: Child, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("waiting for pcv").is_none() {
        if start.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collecting a killed child");
            panic!("{what} ran over {RUN_TIMEOUT:?}; stderr:\n{}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("collecting pcv's output");
    eprintln!("$ {what}\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn pcv_window(d: &Display, args: &[&str]) -> Output {
    let child = d.command(PCV).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("starting pcv");
    let out = finish(child, &format!("pcv {}", args.join(" ")));
    assert!(out.status.success(), "pcv {args:?} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out
}

fn pcv_headless(args: &[&str]) -> Output {
    let child = Command::new(PCV)
        .args(args)
        .env_remove("DISPLAY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting pcv");
    let out = finish(child, &format!("pcv {}", args.join(" ")));
    assert!(out.status.success(), "pcv {args:?} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out
}

fn s(p: &Path) -> &str {
    p.to_str().expect("the test's paths are UTF-8")
}

fn trace(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("trace line '{l}': {e}"))).collect()
}

fn write_script(dir: &Path, name: &str, steps: Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(&steps).unwrap()).unwrap();
    p
}

/// A 20 × 20 m ground of points every 10 cm with a 2 m box in the middle, around 0, as ASCII PLY.
/// A distance across the box in the top view, then Ctrl+P: the profile opens in a window of its own
/// (the main view's camera stays), drawn by a second rasterizer: the box's red roof shows in the
/// window along the bottom of the screen, where the main view's top view has only ground.
#[test]
fn ctrl_p_opens_the_profile_in_its_own_window_and_the_main_view_stays() {
    profile_in_its_own_window(false);
}

/// The same with the cloud streamed (no host copy: `PCV_HOST_BUDGET_MB=0`): the strip is read from the
/// file again on a thread, and the profile window shows it once read.
#[test]
fn a_streamed_clouds_profile_is_read_from_its_files_into_its_own_window() {
    profile_in_its_own_window(true);
}

fn profile_in_its_own_window(streamed: bool) {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    let (w, h) = (1280u32, 720u32);
    let size = format!("{w}x{h}");
    let run = |frames: u64, steps: Vec<Value>, shot: Option<&Path>| {
        let script = write_script(dir.path(), "p.json", Value::Array(steps));
        let tr = dir.path().join("p.jsonl");
        let _ = std::fs::remove_file(&tr);
        let frames = frames.to_string();
        let mut args = vec![s(&cloud), "--backend", "cpu", "--size", &size, "--frames", &frames];
        args.extend(["--projection", "ortho", "--view", "top", "--input-script", s(&script), "--trace", s(&tr)]);
        if let Some(p) = shot {
            args.extend(["--screenshot", s(p)]);
        }
        let mut c = d.command(PCV);
        if streamed {
            c.env("PCV_HOST_BUDGET_MB", "0");
        }
        let child = c.args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("starting pcv");
        let out = finish(child, &format!("pcv {}", args.join(" ")));
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "pcv {args:?} failed ({}):\n{stderr}", out.status);
        (trace(&tr), stderr)
    };
    // A streamed cloud comes in over the first frames: the clicks wait for it.
    let f0 = if streamed { 30 } else { 4 };
    let (first, _) = run(f0, vec![], None);
    let px = top_view_px(first.last().unwrap(), w, h);
    // T, a distance from (-3, 0.5) to (8, 0.5) across the box (clear of the panel), Ctrl+P.
    let mut steps = vec![key(f0, "T", true), key(f0 + 1, "T", false)];
    let mut fr = f0 + 3;
    for (x, y) in [(-3.0, 0.5), (8.0, 0.5)] {
        let p = px(x, y);
        steps.extend([cursor(fr, p.x, p.y), button(fr + 1, "left", true), button(fr + 2, "left", false)]);
        fr += 4;
    }
    let ctrl = |frame: u64, down: bool| json!({"frame": frame, "type": "key", "key": "P", "down": down, "mods": {"ctrl": true}});
    steps.extend([ctrl(fr, true), ctrl(fr + 1, false)]);
    // Then (host points) the window is docked: its title bar dragged to the dock space's bottom edge
    // marker. It opens along the bottom, 3/10 of the height tall, its top at h - that - 3 lines - 8.
    let dock_at = fr + 8;
    let mut last_frame = dock_at;
    if !streamed {
        let title_y = h as f32 - (h * 3 / 10) as f32 - 3.0 * 17.0 - 8.0 + 9.0;
        steps.extend([cursor(dock_at, w as f32 * 0.2 + 100.0, title_y), button(dock_at + 1, "left", true)]);
        let path = [(0.3, 0.72), (0.4, 0.85), (0.5, 0.95), (0.5, 0.975), (0.5, 0.978)];
        for (k, (x, y)) in path.iter().enumerate() {
            steps.push(cursor(dock_at + 3 + 2 * k as u64, w as f32 * x, h as f32 * y));
        }
        steps.push(button(dock_at + 14, "left", false));
        last_frame = dock_at + 20;
    }
    let shot = dir.path().join("profile.png");
    // A streamed strip is read on a thread: frames go on meanwhile (the window polls it).
    let t = run(if streamed { fr + 40 } else { last_frame }, steps, Some(&shot)).0;
    let before = t.iter().find(|l| l["frame"].as_u64() == Some(fr - 1)).expect("a frame before Ctrl+P");
    let last = t.last().unwrap();
    let profile = &last["profile"];
    let window = profile["window_px"].as_array().unwrap_or_else(|| panic!("a profile in a window: {profile}"));
    assert!(window.iter().all(|v| v.as_u64().unwrap() > 50), "{profile}");
    assert!((f(&profile["a"][0]) + 3.0).abs() < 0.2 && (f(&profile["b"][0]) - 8.0).abs() < 0.2, "{profile}");
    for k in ["eye_local", "yaw_deg", "pitch_deg", "projection"] {
        assert_eq!(before[k], last[k], "the main view's {k} stays");
    }
    if !streamed {
        // Docked along the bottom: the image spans the window's width.
        let open = t.iter().find(|l| l["frame"].as_u64() == Some(dock_at - 1)).expect("a frame before the drag");
        let was = open["profile"]["window_px"][0].as_u64().unwrap();
        let now = window[0].as_u64().unwrap();
        assert!(was < w as u64 * 7 / 10 && now > w as u64 * 9 / 10, "docked: {was} px wide, then {now} px");
    }
    // The roof (220, 80, 60) shows below the main view's box, in the profile window.
    let img = Frame::read_png(&shot).unwrap();
    let red_rows: Vec<u32> = (0..img.height)
        .filter(|&y| {
            (0..img.width).any(|x| {
                let c = img.get(x, y).to_le_bytes();
                c[0] > 170 && c[1] < 120 && c[2] < 110
            })
        })
        .collect();
    let box_bottom = px(0.0, -1.0).y as u32 + 4;
    assert!(red_rows.iter().any(|&y| y > box_bottom + 20), "no roof in the profile window: rows {red_rows:?}");
}

/// F12 renders the view offscreen 7680 pixels across (the window's aspect) into the working folder,
/// the same picture as the window's at 6 times the size.
#[test]
fn f12_saves_an_8k_screenshot_of_the_view() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    let script = write_script(dir.path(), "f12.json", json!([key(3, "F12", true), key(4, "F12", false)]));
    let shot = dir.path().join("window.png");
    let child = d
        .command(PCV)
        .args([s(&cloud), "--backend", "cpu", "--size", "1280x720", "--frames", "8", "--no-overlay"])
        .args(["--input-script", s(&script), "--screenshot", s(&shot)])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting pcv");
    let out = finish(child, "pcv with F12");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let big: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("pcv-8k-"))
        .collect();
    assert_eq!(big.len(), 1, "{big:?}");
    let img = Frame::read_png(&big[0]).unwrap();
    assert_eq!((img.width, img.height), (7680, 4320));
    // The box's red roof at the same place in both pictures (its centre, as a fraction of the size).
    let window = Frame::read_png(&shot).unwrap();
    let roof = |f: &Frame| {
        let (mut sum, mut n) = (Vec2::ZERO, 0.0);
        for y in 0..f.height {
            for x in 0..f.width {
                let c = f.get(x, y).to_le_bytes();
                if c[0] > 170 && c[1] < 120 && c[2] < 110 {
                    sum += Vec2::new(x as f32 / f.width as f32, y as f32 / f.height as f32);
                    n += 1.0;
                }
            }
        }
        assert!(n > 0.0, "no roof in a {}x{} picture", f.width, f.height);
        sum / n
    };
    let (a, b) = (roof(&window), roof(&img));
    assert!((a - b).length() < 0.01, "the roof at {a} in the window, {b} in the 8K picture");
}

/// A level-of-detail (COPC) cloud coloured by GPS time: dragging the colour range in the View section
/// reloads no node while the mouse is held (each step reloaded every node), and once when let go; the
/// legend lists the classes of the root nodes' sample (it had none), and a click on one hides it.
#[test]
fn dragging_a_copc_colour_range_reloads_once_when_let_go() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let las_path = dir.path().join("t.las");
    let mut w = centimetre_las(&las_path, 1);
    for i in 0..200 {
        for j in 0..200 {
            let k = (i * 200 + j) as f64;
            w.write_point(las::Point {
                x: i as f64 * 0.5,
                y: j as f64 * 0.5,
                z: ((i as f64) * 0.1).sin() * 3.0,
                gps_time: Some(315_000_000.0 + k * 0.025),
                classification: if (i + j) % 2 == 0 {
                    las::point::Classification::Ground
                } else {
                    las::point::Classification::HighVegetation
                },
                ..Default::default()
            })
            .unwrap();
        }
    }
    w.close().unwrap();
    let copc = dir.path().join("t.copc.laz");
    pcv_headless(&["convert", s(&las_path), "-o", s(&copc)]);
    // The View tab, then the range's low end dragged 120 px right over 10 frames, let go at 23.
    let mut steps = vec![cursor(3, 105.0, 37.0), button(4, "left", true), button(5, "left", false)];
    steps.extend([cursor(10, 68.0, 177.0), button(11, "left", true)]);
    for (k, f) in (12..22).enumerate() {
        steps.push(cursor(f, 68.0 + 12.0 * (k + 1) as f32, 177.0));
    }
    steps.push(button(23, "left", false));
    // Then the legend's class-5 box (the second class row).
    steps.extend([cursor(40, 22.0, 287.0), button(41, "left", true), button(42, "left", false)]);
    let script = write_script(dir.path(), "drag.json", Value::Array(steps));
    let tr = dir.path().join("drag.jsonl");
    let args = [s(&copc), "--backend", "cpu", "--size", "1600x900", "--color-by", "gps_time", "--frames", "100"];
    pcv_window(&d, &[&args[..], &["--input-script", s(&script), "--trace", s(&tr)]].concat());
    let t = trace(&tr);
    let lod = |frame: u64, key: &str| {
        let l = t.iter().find(|l| l["frame"].as_u64() == Some(frame)).expect("the frame");
        l["lod"][key].as_u64().unwrap()
    };
    let resident = |frame: u64| lod(frame, "resident_points");
    // A reload turns the resident nodes stale (drawn until their fresh copies are): stale nodes say it.
    let held: Vec<(u64, u64)> = (12..=23).map(|f| (resident(f), lod(f, "stale_nodes"))).collect();
    assert!(
        held.iter().all(|&r| r == (held[0].0, 0)) && held[0].0 > 0,
        "nothing reloads while the drag is held: {held:?}"
    );
    let after: Vec<u64> = (24..40).map(|f| lod(f, "stale_nodes")).collect();
    assert!(after.iter().any(|&n| n > 0), "the nodes load again, coloured, once let go: {after:?}");
    // Vegetation (every other point) hidden from the legend: half the points once loaded again.
    let last = t.last().unwrap();
    assert_eq!(last["lod"]["complete"], true, "{}", last["lod"]);
    assert_eq!(resident(last["frame"].as_u64().unwrap()), 20_000, "{}", last["lod"]);
}

fn ground_with_box(dir: &Path) -> PathBuf {
    let mut text = String::new();
    let mut n = 0;
    for i in 0..=200 {
        for j in 0..=200 {
            let (x, y) = (-10.0 + i as f32 * 0.1, -10.0 + j as f32 * 0.1);
            let z = if x.abs() <= 1.0 && y.abs() <= 1.0 { 2.0 } else { 0.0 };
            let c = if z > 0.0 {
                "220 80 60"
            } else if (i / 10 + j / 10) % 2 == 0 {
                "90 140 70"
            } else {
                "120 160 90"
            };
            text.push_str(&format!("{x} {y} {z} {c}\n"));
            n += 1;
        }
    }
    let p = dir.join("ground.ply");
    let header = format!("ply\nformat ascii 1.0\nelement vertex {n}\nproperty float x\nproperty float y\nproperty float z\nproperty uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n");
    std::fs::write(&p, header + &text).unwrap();
    p
}

/// A LAS 1.2 writer of point format `format` at `path`, coordinates on a 1 cm grid from 0.
fn centimetre_las(path: &Path, format: u8) -> las::Writer<std::io::BufWriter<std::fs::File>> {
    let mut b = las::Builder::from((1, 2));
    b.point_format = las::point::Format::new(format).unwrap();
    let t = las::Transform { scale: 0.01, offset: 0.0 };
    b.transforms = las::Vector { x: t, y: t, z: t };
    las::Writer::from_path(path, b.into_header().unwrap()).unwrap()
}

/// UTM corner of the LAS test tile.
const UTM: [f64; 3] = [512_340.0, 5_405_120.0, 200.0];

/// A 50 × 50 grid of points 1 m apart in UTM coordinates (scale 1 mm), with distinct intensity,
/// class and colour per point, as LAS 1.2 point format 3.
fn utm_grid_las(dir: &Path) -> PathBuf {
    let mut b = las::Builder::from((1, 2));
    b.point_format = las::point::Format::new(3).unwrap();
    let t = |o: f64| las::Transform { scale: 0.001, offset: o };
    b.transforms = las::Vector { x: t(UTM[0]), y: t(UTM[1]), z: t(UTM[2]) };
    let p = dir.join("grid.las");
    let mut w = las::Writer::from_path(&p, b.into_header().unwrap()).unwrap();
    for k in 0..2500u32 {
        let (i, j) = (k % 50, k / 50);
        w.write_point(las::Point {
            x: UTM[0] + i as f64 + 0.123,
            y: UTM[1] + j as f64 + 0.456,
            z: UTM[2] + 0.01 * i as f64 + 0.789,
            intensity: (k * 7 % 60_000) as u16,
            classification: las::point::Classification::new((k % 12) as u8).unwrap(),
            color: Some(las::Color { red: ((i * 5) << 8) as u16, green: ((j * 5) << 8) as u16, blue: 200 << 8 }),
            gps_time: Some(1.0),
            ..Default::default()
        })
        .unwrap();
    }
    w.close().unwrap();
    p
}

fn f(v: &Value) -> f32 {
    v.as_f64().unwrap_or_else(|| panic!("{v} is not a number")) as f32
}

fn vec3(v: &Value) -> Vec3 {
    Vec3::new(f(&v[0]), f(&v[1]), f(&v[2]))
}

/// The pose a trace line records.
fn pose(line: &Value) -> Pose {
    Pose {
        eye: vec3(&line["eye_local"]),
        yaw_rad: f(&line["yaw_deg"]).to_radians(),
        pitch_rad: f(&line["pitch_deg"]).to_radians(),
    }
}

/// Where `p` (local) appears in the window (pixels from the top-left) seen from `pose`.
fn screen(pose: &Pose, p: Vec3) -> Vec2 {
    let m =
        Mat4::perspective_rh_gl(FOV_Y_RAD, W as f32 / H as f32, 0.01, 1000.0) * pose.view_from_world_up(UpAxis::PosZ);
    let c = m * p.extend(1.0);
    Vec2::new((c.x / c.w + 1.0) * 0.5 * W as f32, (1.0 - c.y / c.w) * 0.5 * H as f32)
}

fn cursor(frame: u64, x: f32, y: f32) -> Value {
    json!({"frame": frame, "type": "cursor_pos", "x": x, "y": y})
}

fn button(frame: u64, b: &str, down: bool) -> Value {
    json!({"frame": frame, "type": "button", "button": b, "down": down})
}

#[test]
fn orbit_pan_dolly_and_double_click_move_the_camera_as_specified() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    let mut steps = vec![cursor(2, 320.0, 180.0), button(3, "left", true)];
    // Orbit: 100 px to the right, in five moves.
    for k in 1..=5 {
        steps.push(cursor(3 + k, 320.0 + 20.0 * k as f32, 180.0));
    }
    steps.push(button(9, "left", false));
    // Pan: grab at (320, 180), drag to (245, 230).
    steps.push(cursor(12, 320.0, 180.0));
    steps.push(button(13, "right", true));
    for k in 1..=5 {
        steps.push(cursor(13 + k, 320.0 - 15.0 * k as f32, 180.0 + 10.0 * k as f32));
    }
    steps.push(button(19, "right", false));
    // Dolly: one notch at (400, 200).
    steps.push(cursor(22, 400.0, 200.0));
    steps.push(json!({"frame": 23, "type": "scroll", "dy": 1.0}));
    // Double-click at (250, 250).
    steps.push(cursor(26, 250.0, 250.0));
    steps.extend([
        button(27, "left", true),
        button(27, "left", false),
        button(28, "left", true),
        button(28, "left", false),
    ]);
    let script = write_script(dir.path(), "nav.json", Value::Array(steps));
    let tr = dir.path().join("trace.jsonl");
    pcv_window(
        &d,
        &[
            s(&cloud),
            "--backend",
            "cpu",
            "--size",
            "640x360",
            "--up",
            "z",
            "--frames",
            "34",
            "--input-script",
            s(&script),
            "--trace",
            s(&tr),
            "--no-vsync",
        ],
    );
    let t = trace(&tr);
    assert_eq!(t.len(), 34, "one trace line per frame");
    assert_eq!(t[0]["controller"], "orbit", "files start in the orbit controller");

    // Orbit: turned 100/360 · 3 rad right about the point under the press, which stayed under it.
    let (before, after) = (pose(&t[2]), pose(&t[10]));
    let pivot = vec3(&t[10]["pivot"]);
    assert!(
        pivot.z > -0.01 && pivot.z < 2.01 && pivot.x.abs() <= 10.0,
        "the pivot {pivot} is not a point of the cloud"
    );
    let turned = before.yaw_rad - after.yaw_rad;
    assert!((turned - 100.0 / H as f32 * 3.0).abs() < 1e-3, "orbit turned {turned} rad");
    assert!(
        (before.eye.distance(pivot) - after.eye.distance(pivot)).abs() < 1e-3 * before.eye.distance(pivot),
        "orbit changed the distance"
    );
    // Under the press: the point whose disk covers the pixel (adaptive sizes draw up to 8 px across).
    let at = screen(&before, pivot);
    assert!(
        at.distance(Vec2::new(320.0, 180.0)) < SPLAT_SLOP_PX,
        "the pivot was at {at}, not under the press (320, 180)"
    );
    assert!(screen(&after, pivot).distance(screen(&before, pivot)) < 0.5, "the pivot moved on screen");

    // Pan: direction kept, the grabbed point follows the cursor to (245, 230).
    let (before, after) = (pose(&t[12]), pose(&t[20]));
    let grabbed = vec3(&t[20]["pivot"]);
    assert!(
        (before.yaw_rad - after.yaw_rad).abs() < 1e-6 && (before.pitch_rad - after.pitch_rad).abs() < 1e-6,
        "pan turned the camera"
    );
    assert!(
        screen(&before, grabbed).distance(Vec2::new(320.0, 180.0)) < SPLAT_SLOP_PX,
        "the grabbed point was not under the press"
    );
    let moved = screen(&after, grabbed) - screen(&before, grabbed);
    assert!(
        moved.distance(Vec2::new(-75.0, 50.0)) < 0.5,
        "the grabbed point moved by {moved}, the cursor by (-75, 50)"
    );

    // Dolly: a fifth of the way to the point under the cursor, which stays under it.
    let (before, after) = (pose(&t[22]), pose(&t[24]));
    let target = vec3(&t[24]["pivot"]);
    let ratio = after.eye.distance(target) / before.eye.distance(target);
    assert!((ratio - 0.8).abs() < 1e-3, "one notch moved to {ratio} of the distance");
    assert!(
        screen(&before, target).distance(Vec2::new(400.0, 200.0)) < SPLAT_SLOP_PX,
        "the zoom target was not under the cursor"
    );
    assert!(screen(&after, target).distance(screen(&before, target)) < 0.5, "the zoom target moved on screen");

    // Double-click: the point comes to the centre; the direction is kept.
    let (before, after) = (pose(&t[26]), pose(&t[30]));
    let centred = vec3(&t[30]["pivot"]);
    assert!(
        screen(&before, centred).distance(Vec2::new(250.0, 250.0)) < SPLAT_SLOP_PX,
        "the double-clicked point was not under the cursor"
    );
    assert!(
        screen(&after, centred).distance(Vec2::new(320.0, 180.0)) < 0.5,
        "the point is at {}, not centred",
        screen(&after, centred)
    );
    assert_eq!((before.yaw_rad, before.pitch_rad), (after.yaw_rad, after.pitch_rad));
}

/// Adaptive resolution: with a target no frame can meet (1 ms), an orbit renders below the window's
/// size, picking still finds the cloud on those frames (the orbit's pivot), and once the camera stops
/// the frames are at full resolution again within half a second.
/// The half height of an orthographic trace line's frame (`None`: perspective).
fn ortho_half_height(line: &Value) -> Option<f32> {
    (line["projection"]["kind"] == "orthographic").then(|| f(&line["projection"]["half_height_m"]))
}

/// Where a ground point (x, y, z 0) shows in a `w × h` window of the orthographic z-up view that
/// trace `line` drew.
fn top_view_px(line: &Value, w: u32, h: u32) -> impl Fn(f32, f32) -> Vec2 {
    let hh = ortho_half_height(line).expect("orthographic");
    let b = pose(line).basis(UpAxis::PosZ);
    // (x, y) in file coordinates: local + origin (zero for these small clouds unless streamed).
    let origin = if line["origin"].is_array() { vec3(&line["origin"]) } else { Vec3::ZERO };
    let eye = vec3(&line["eye_local"]) + origin;
    move |x: f32, y: f32| {
        let r = Vec3::new(x, y, 0.0) - eye;
        let aspect = w as f32 / h as f32;
        Vec2::new((r.dot(b.right) / (hh * aspect) + 1.0) * 0.5 * w as f32, (1.0 - r.dot(b.up) / hh) * 0.5 * h as f32)
    }
}

#[test]
fn the_top_view_is_orthographic_picks_and_zooms_to_the_cursor() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    // Numpad 7: the top view, orthographic. A click on the box in the middle of the screen; the wheel
    // two notches in at (500, 100); I: back to perspective.
    let steps = vec![
        key(3, "Kp7", true),
        key(4, "Kp7", false),
        cursor(6, 320.0, 180.0),
        button(7, "left", true),
        button(7, "left", false),
        cursor(9, 500.0, 100.0),
        json!({"frame": 10, "type": "scroll", "dy": 2.0}),
        key(12, "K", true),
        key(12, "K", false),
        key(13, "I", true),
        key(14, "I", false),
    ];
    let script = write_script(dir.path(), "top.json", Value::Array(steps));
    let tr = dir.path().join("trace.jsonl");
    let out = pcv_window(
        &d,
        &[
            s(&cloud),
            "--backend",
            "cpu",
            "--size",
            "640x360",
            "--frames",
            "17",
            "--input-script",
            s(&script),
            "--trace",
            s(&tr),
        ],
    );
    let t = trace(&tr);
    let at = |frame: u64| t.iter().rev().find(|l| l["frame"].as_u64().unwrap() <= frame).expect("a trace line");
    assert_eq!(ortho_half_height(at(2)), None, "the start view is in perspective");
    let before = at(9);
    let hh = ortho_half_height(before).expect("Numpad 7 gives an orthographic view");
    assert!((f(&before["pitch_deg"]) + 90.0).abs() < 1e-3, "straight down");
    // The whole 20 m ground fits the 16:9 frame's height with the margin.
    assert!(hh > 10.0 && hh < 11.0, "half height {hh}");
    // The click in the middle picked the box's top (2 m), not the ground around it.
    let picked = &before["picked"];
    assert!((f(&picked["file"][2]) - 2.0).abs() < 1e-4, "picked {picked}");
    assert!(vec3(&picked["file"]).truncate().length() < 1.5, "picked {picked}");
    // Two notches: the half height by 0.8², and the ground point under the cursor stays there.
    let after = at(12);
    let hh2 = ortho_half_height(after).expect("still orthographic");
    assert!((hh2 - hh * 0.64).abs() < 1e-3 * hh, "{hh} -> {hh2}");
    let on_screen = |line: &Value, hh: f32, p: Vec3| {
        let b = pose(line).basis(UpAxis::PosZ);
        let r = p - vec3(&line["eye_local"]);
        let aspect = W as f32 / H as f32;
        Vec2::new((r.dot(b.right) / (hh * aspect) + 1.0) * 0.5 * W as f32, (1.0 - r.dot(b.up) / hh) * 0.5 * H as f32)
    };
    let b0 = pose(before).basis(UpAxis::PosZ);
    let (ndc_x, ndc_y) = (500.0 / W as f32 * 2.0 - 1.0, 1.0 - 100.0 / H as f32 * 2.0);
    let under = vec3(&before["eye_local"]) + b0.right * ndc_x * hh * W as f32 / H as f32 + b0.up * ndc_y * hh;
    assert!(on_screen(before, hh, under).distance(Vec2::new(500.0, 100.0)) < 0.01);
    let moved = on_screen(after, hh2, under);
    assert!(moved.distance(Vec2::new(500.0, 100.0)) < 0.5, "the point under the cursor went to {moved}");
    // K prints the orthographic frame's height with the pose (what `--ortho-height` takes back).
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|l| l.strip_prefix("pcv: camera ")).expect("K printed the pose");
    let height: f32 = line
        .split_once("--projection ortho --ortho-height ")
        .and_then(|(_, h)| h.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no orthographic height in '{line}'"));
    assert!((height - 2.0 * hh2).abs() < 1e-3 * hh2, "{line}");
    // I: perspective again, looking the same way.
    let last = t.last().unwrap();
    assert_eq!(ortho_half_height(last), None);
    assert!((f(&last["pitch_deg"]) + 90.0).abs() < 1e-3);
}

#[test]
fn an_area_and_a_height_are_measured_with_clicks_in_the_top_view() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    // The orthographic top view (Numpad 7) shows the 20 m ground across the frame's height. Its
    // half height, from the first run's trace, places the ground's points on screen.
    let top = |frames: u64, extra: Vec<Value>| {
        let mut steps = vec![key(2, "Kp7", true), key(3, "Kp7", false)];
        steps.extend(extra);
        let script = write_script(dir.path(), "m.json", Value::Array(steps));
        let tr = dir.path().join("m.jsonl");
        let _ = std::fs::remove_file(&tr);
        let frames = frames.to_string();
        pcv_window(
            &d,
            &[
                s(&cloud),
                "--backend",
                "cpu",
                "--size",
                "640x360",
                "--frames",
                &frames,
                "--input-script",
                s(&script),
                "--trace",
                s(&tr),
                // The panel would take the clicks on the square's left corners.
                "--no-overlay",
            ],
        );
        trace(&tr)
    };
    let first = top(6, vec![]);
    let px = top_view_px(first.last().unwrap(), W, H);
    // Shift+T twice: distance → polyline → area (the tool comes on with the kind). Four corners of a
    // 14 m square on the ground, Enter. Then Shift+T once more (height): the ground beside the box and
    // the box's roof, a 2 m height.
    let shift_t =
        |frame: u64| json!({"frame": frame, "type": "key", "key": "T", "down": true, "mods": {"shift": true}});
    let mut steps = vec![shift_t(5), key(5, "T", false), shift_t(6), key(6, "T", false)];
    let mut fr = 8;
    for (x, y) in [(-7.0, -7.0), (7.0, -7.0), (7.0, 7.0), (-7.0, 7.0)] {
        let p = px(x, y);
        steps.extend([cursor(fr, p.x, p.y), button(fr + 1, "left", true), button(fr + 1, "left", false)]);
        fr += 3;
    }
    steps.extend([key(fr, "Enter", true), key(fr, "Enter", false)]);
    fr += 2;
    steps.extend([shift_t(fr), key(fr, "T", false)]);
    fr += 2;
    for (x, y) in [(-5.0, 0.0), (0.0, 0.0)] {
        let p = px(x, y);
        steps.extend([cursor(fr, p.x, p.y), button(fr + 1, "left", true), button(fr + 1, "left", false)]);
        fr += 3;
    }
    let t = top(fr + 3, steps);
    let m = &t.last().unwrap()["measurements"];
    let all = m["all"].as_array().expect("measurements");
    assert_eq!(all.len(), 2, "{m}");
    assert_eq!(all[0]["kind"], "area");
    assert_eq!(all[0]["points"].as_array().unwrap().len(), 4);
    // Picks land on the nearest point of a 10 cm grid: the area within a few percent of 196 m².
    let area = f(&all[0]["values"]["area_horizontal"]);
    assert!((area - 196.0).abs() < 196.0 * 0.03, "area {area}");
    assert!((f(&all[0]["values"]["area_sloped"]) - area).abs() < 1e-3, "the ground is flat");
    assert_eq!(all[1]["kind"], "height");
    let h = f(&all[1]["values"]["height_difference"]);
    assert!((h - 2.0).abs() < 1e-4, "the box is 2 m tall: {h}");
}

#[test]
fn a_saved_project_reopens_the_same_view_and_renders_it() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let las_path = utm_grid_las(dir.path());
    // The orthographic top view, two notches in, EDL off (L), high quality (J), a point measured, Ctrl+S.
    let steps = json!([
        key(2, "Kp7", true), key(3, "Kp7", false),
        cursor(4, 400.0, 120.0), {"frame": 5, "type": "scroll", "dy": 2.0},
        key(6, "L", true), key(6, "L", false),
        key(6, "J", true), key(6, "J", false),
        {"frame": 7, "type": "key", "key": "T", "down": true, "mods": {"shift": true}}, key(7, "T", false),
        {"frame": 8, "type": "key", "key": "T", "down": true, "mods": {"shift": true}}, key(8, "T", false),
        {"frame": 9, "type": "key", "key": "T", "down": true, "mods": {"shift": true}}, key(9, "T", false),
        {"frame": 10, "type": "key", "key": "T", "down": true, "mods": {"shift": true}}, key(10, "T", false),
        {"frame": 11, "type": "key", "key": "T", "down": true, "mods": {"shift": true}}, key(11, "T", false),
        cursor(12, 320.0, 180.0), button(13, "left", true), button(13, "left", false),
        {"frame": 15, "type": "key", "key": "S", "down": true, "mods": {"ctrl": true}}, key(16, "S", false)
    ]);
    let script = write_script(dir.path(), "save.json", steps);
    let (before, after, rendered) =
        (dir.path().join("before.png"), dir.path().join("after.png"), dir.path().join("r.png"));
    let (t1, t2) = (dir.path().join("t1.jsonl"), dir.path().join("t2.jsonl"));
    let run = |args: &[&str]| {
        let child = d
            .command(PCV)
            .args(args)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = finish(child, "pcv");
        assert!(out.status.success(), "pcv {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    };
    let common = ["--backend", "cpu", "--size", "640x360", "--no-overlay"];
    let out = run(&[
        &[s(&las_path), "--frames", "18", "--input-script", s(&script), "--trace", s(&t1), "--screenshot", s(&before)],
        &common[..],
    ]
    .concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let saved = stdout
        .lines()
        .find_map(|l| l.strip_prefix("pcv: project saved to "))
        .unwrap_or_else(|| panic!("Ctrl+S saved nothing:\n{stdout}"));
    let project = PathBuf::from(saved.trim());
    assert!(
        project.starts_with(dir.path()) && project.to_string_lossy().ends_with(".pcv.json"),
        "{}",
        project.display()
    );
    let text = std::fs::read_to_string(&project).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["pcv_project"], 1);
    assert_eq!(v["sources"], json!(["grid.las"]), "the source relative to the project's folder");
    // Reopened: the same camera, projection, look and measurement, and the same image.
    run(&[&[project.to_str().unwrap(), "--frames", "3", "--trace", s(&t2), "--screenshot", s(&after)], &common[..]]
        .concat());
    let (a, b) = (trace(&t1).pop().unwrap(), trace(&t2).pop().unwrap());
    for k in ["camera", "projection", "edl", "point_size", "up", "quality"] {
        assert_eq!(a[k], b[k], "{k}");
    }
    assert_eq!((&a["quality"], &v["look"]["quality"]), (&json!("high"), &json!("high")), "J: high quality, saved");
    assert_eq!(a["measurements"]["all"], b["measurements"]["all"]);
    assert_eq!(b["measurements"]["all"][0]["kind"], "point");
    let (fa, fb) = (Frame::read_png(&before).unwrap(), Frame::read_png(&after).unwrap());
    assert_eq!(fa.count_rgb_differences(&fb), 0, "the reopened window shows the saved view");
    // pcv render of the project draws its saved view.
    let out = Command::new(PCV)
        .args(["render", project.to_str().unwrap(), "--backend", "cpu", "--size", "640x360", "-o", s(&rendered)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fr = Frame::read_png(&rendered).unwrap();
    assert_eq!(fa.count_rgb_differences(&fr), 0, "pcv render of the project draws the window's view");
}

#[test]
fn notes_pin_to_picked_points_and_hide_behind_the_surface() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    let run = |frames: u64, steps: Vec<Value>| {
        let script = write_script(dir.path(), "notes.json", Value::Array(steps));
        let tr = dir.path().join("notes.jsonl");
        let _ = std::fs::remove_file(&tr);
        let frames = frames.to_string();
        let args = [s(&cloud), "--backend", "cpu", "--size", "640x360", "--frames", &frames, "--no-overlay"];
        pcv_window(&d, &[&args[..], &["--input-script", s(&script), "--trace", s(&tr)]].concat());
        trace(&tr)
    };
    // The top view's geometry, from a first run.
    let first = run(5, vec![key(2, "Kp7", true), key(3, "Kp7", false)]);
    let line = first.last().unwrap();
    let (hh, b, eye) = (ortho_half_height(line).unwrap(), pose(line).basis(UpAxis::PosZ), vec3(&line["eye_local"]));
    let px = |x: f32, y: f32| {
        let r = Vec3::new(x, y, 0.0) - eye;
        Vec2::new(
            (r.dot(b.right) / (hh * W as f32 / H as f32) + 1.0) * 0.5 * W as f32,
            (1.0 - r.dot(b.up) / hh) * 0.5 * H as f32,
        )
    };
    let ctrl_a = |frame: u64| json!({"frame": frame, "type": "key", "key": "A", "down": true, "mods": {"ctrl": true}});
    // Pin one on the roof (0, 0, 2) and one on the ground north of it (0, 5, 0); then the front view
    // (Numpad 1: looking north, level), where the roof's front edge hides the ground behind it.
    let (roof, ground) = (px(0.0, 0.0), px(0.0, 5.0));
    let steps = vec![
        key(2, "Kp7", true),
        key(3, "Kp7", false),
        cursor(5, roof.x, roof.y),
        button(6, "left", true),
        button(6, "left", false),
        ctrl_a(7),
        key(7, "A", false),
        cursor(9, ground.x, ground.y),
        button(10, "left", true),
        button(10, "left", false),
        ctrl_a(11),
        key(11, "A", false),
        key(14, "Kp1", true),
        key(15, "Kp1", false),
    ];
    let t = run(20, steps);
    let at = |frame: u64| t.iter().rev().find(|l| l["frame"].as_u64().unwrap() <= frame).unwrap();
    let top = &at(13)["notes"];
    assert_eq!(top.as_array().unwrap().len(), 2, "{top}");
    assert_eq!(top[0]["text"], "note 1");
    assert!((f(&top[0]["file"][2]) - 2.0).abs() < 1e-4 && f(&top[1]["file"][2]).abs() < 1e-4, "{top}");
    assert!((f(&top[1]["file"][1]) - 5.0).abs() < 0.2, "{top}");
    assert_eq!(
        (top[0]["visible"].as_bool(), top[1]["visible"].as_bool()),
        (Some(true), Some(true)),
        "both show from above"
    );
    let front = &t.last().unwrap()["notes"];
    assert_eq!(front[1]["visible"], false, "the ground behind the roof is hidden from the front: {front}");
}

#[test]
fn a_moving_camera_renders_below_full_resolution_and_refines_when_it_stops() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    let mut steps = vec![cursor(2, 320.0, 180.0), button(3, "left", true)];
    for k in 1..=12 {
        steps.push(cursor(3 + k, 320.0 + 8.0 * k as f32, 180.0));
    }
    steps.push(button(16, "left", false));
    let script = write_script(dir.path(), "orbit.json", Value::Array(steps));
    let (tr, shot) = (dir.path().join("trace.jsonl"), dir.path().join("last.png"));
    #[rustfmt::skip]
    let args = [s(&cloud), "--backend", "cpu", "--size", "640x360", "--up", "z", "--frames", "160", "--input-script", s(&script),
        "--trace", s(&tr), "--no-vsync", "--frame-target-ms", "1", "--screenshot", s(&shot)];
    pcv_window(&d, &args);
    let t = trace(&tr);
    let scale = |l: &Value| l["render_scale"].as_f64().unwrap();
    let moving: Vec<f64> = t[5..16].iter().map(scale).collect();
    assert!(moving.iter().all(|&s| s < 1.0), "frames during the orbit render below full resolution: {moving:?}");
    assert!(moving.iter().any(|&s| s <= 0.5), "the scale comes down to what the target asks: {moving:?}");
    let pivot = vec3(&t[15]["pivot"]);
    assert!(pivot.z > -0.01 && pivot.z < 2.01 && pivot.x.abs() <= 10.0, "the pivot {pivot} is a point of the cloud");
    // The camera's last move shows in frame 15's or 16's line; the first full frame after it:
    let stop_s = t[16]["time_s"].as_f64().unwrap();
    let full = t[17..].iter().find(|l| scale(l) == 1.0).expect("a full-resolution frame after the orbit");
    let after_s = full["time_s"].as_f64().unwrap() - stop_s;
    assert!(after_s <= 0.5, "full resolution {after_s:.3} s after the camera stopped");
    assert_eq!(scale(t.last().unwrap()), 1.0);
    // The last frame (a screenshot) renders at full resolution whatever the target.
    assert!(shot.exists(), "the screenshot was written");
}

#[test]
fn xtest_mouse_and_keys_reach_the_viewer() {
    let Some(d) = Display::start() else { return };
    if d.command("xdotool").arg("version").output().is_err() {
        eprintln!("SKIPPED: xdotool is not installed (apt-get install xdotool)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    let tr = dir.path().join("trace.jsonl");
    let child = d
        .command(PCV)
        .args([s(&cloud), "--backend", "cpu", "--size", "640x360", "--up", "z", "--trace", s(&tr)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting pcv");
    let wait_for = |what: &str, cond: &dyn Fn(&[Value]) -> bool| {
        let start = Instant::now();
        loop {
            let t = trace(&tr);
            if cond(&t) {
                return t;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let first = wait_for("the first frame", &|t| !t.is_empty());
    let yaw0 = f(&first[0]["yaw_deg"]);
    let xdo = |args: &[&str]| {
        let o = d.command("xdotool").args(args).output().expect("xdotool");
        assert!(o.status.success(), "xdotool {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    // A real left-drag, 120 px to the right.
    xdo(&["mousemove", "320", "180"]);
    std::thread::sleep(Duration::from_millis(300));
    xdo(&["mousedown", "1"]);
    for k in 1..=6 {
        xdo(&["mousemove", &(320 + 20 * k).to_string(), "180"]);
        std::thread::sleep(Duration::from_millis(60));
    }
    xdo(&["mouseup", "1"]);
    // The viewer may still be working through the motion: wait for the whole drag, then for quiet.
    let expected = (120.0 / H as f32 * 3.0).to_degrees();
    wait_for("the orbit", &|t| t.last().is_some_and(|l| yaw0 - f(&l["yaw_deg"]) > expected - 0.5));
    std::thread::sleep(Duration::from_millis(500));
    let t = trace(&tr);
    let turned = yaw0 - f(&t.last().unwrap()["yaw_deg"]);
    assert!((turned - expected).abs() < 0.5, "the drag turned {turned} deg, expected {expected}");
    // Esc: mouse-look (the prototype's control); motion turns the view, 3 radians per window height.
    // The first motion after capturing the cursor only sets the reference (GLFW warps the cursor).
    let yaw1 = f(&t.last().unwrap()["yaw_deg"]);
    xdo(&["key", "Escape"]);
    wait_for("mouse-look", &|t| t.last().is_some_and(|l| l["mouselook"] == true));
    for _ in 0..4 {
        xdo(&["mousemove_relative", "20", "0"]);
        std::thread::sleep(Duration::from_millis(150));
    }
    let per_px = (3.0 / H as f32).to_degrees();
    wait_for("mouse-look motion", &|t| t.last().is_some_and(|l| yaw1 - f(&l["yaw_deg"]) > 35.0 * per_px));
    std::thread::sleep(Duration::from_millis(500));
    let looked = yaw1 - f(&trace(&tr).last().unwrap()["yaw_deg"]);
    assert!(
        looked > 35.0 * per_px && looked < 85.0 * per_px,
        "80 px of mouse-look turned {looked} deg ({per_px} deg a pixel)"
    );
    xdo(&["key", "Escape"]);
    wait_for("mouse-look off", &|t| t.last().is_some_and(|l| l["mouselook"] == false));
    // Keys: F1 opens the help, K prints the pose.
    xdo(&["key", "F1"]);
    wait_for("the help", &|t| t.last().is_some_and(|l| l["help"] == true));
    xdo(&["key", "k"]);
    wait_for("the pose message", &|t| t.last().is_some_and(|l| l["messages"].to_string().contains("pose printed")));
    let mut child = child;
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("pcv: camera --camera ") && stdout.contains("--up z"), "K printed:\n{stdout}");
}

#[test]
fn a_scripted_click_reaches_the_panel() {
    // The panel's "? help" tab, at the top left whatever the window's size: a script's click must reach
    // the panel as a person's does (scripts drive panel buttons in the GPU machine's window runs).
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    let steps =
        json!([cursor(3, 370.0, 37.0), button(4, "left", true), button(5, "left", false), cursor(7, 500.0, 300.0)]);
    let script = write_script(dir.path(), "help.json", steps);
    let tr = dir.path().join("trace.jsonl");
    pcv_window(
        &d,
        &[
            s(&cloud),
            "--backend",
            "cpu",
            "--size",
            "640x360",
            "--frames",
            "10",
            "--input-script",
            s(&script),
            "--trace",
            s(&tr),
        ],
    );
    let t = trace(&tr);
    assert_eq!(t[2]["help"], false, "help was open before the click");
    assert_eq!(t.last().unwrap()["help"], true, "the scripted click on '? help' did not open the help");
    assert!(t.last().unwrap()["picked"].is_null(), "the click on the panel also picked a point");
}

#[test]
fn a_click_picks_the_exact_point_of_a_las_file() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let las_path = utm_grid_las(dir.path());
    // Straight down from 30 m above grid point (20, 30), in the file's coordinates.
    let (i, j) = (20u32, 30u32);
    let k = (j * 50 + i) as usize;
    let target = [UTM[0] + i as f64 + 0.123, UTM[1] + j as f64 + 0.456, UTM[2] + 0.01 * i as f64 + 0.789];
    let camera = format!("{},{},{},90,-90", target[0], target[1], target[2] + 30.0);
    let steps = json!([cursor(2, 320.0, 180.0), button(3, "left", true), button(3, "left", false)]);
    let script = write_script(dir.path(), "pick.json", steps);
    let tr = dir.path().join("trace.jsonl");
    pcv_window(
        &d,
        &[
            s(&las_path),
            "--backend",
            "cpu",
            "--size",
            "640x360",
            "--camera",
            &camera,
            "--frames",
            "6",
            "--input-script",
            s(&script),
            "--trace",
            s(&tr),
        ],
    );
    let t = trace(&tr);
    let picked = &t.last().unwrap()["picked"];
    assert!(!picked.is_null(), "nothing was picked: {}", t.last().unwrap());
    // The file's own values, read back by an independent reader.
    let mut r = las::Reader::from_path(&las_path).unwrap();
    let data = r.read_all().unwrap();
    let p = data.points().nth(k).unwrap().unwrap();
    let file: Vec<f64> = picked["file"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(file, vec![p.x, p.y, p.z], "the picked coordinates are not the stored ones");
    assert_eq!(picked["snapped"], true);
    assert_eq!(picked["index"], k as u64);
    assert_eq!(picked["intensity"].as_f64().unwrap(), p.intensity as f64);
    assert_eq!(picked["classification"].as_u64().unwrap(), u8::from(p.classification) as u64);
    let c = p.color.unwrap();
    assert_eq!(picked["rgb"], json!([c.red >> 8, c.green >> 8, c.blue >> 8]));
    assert!(picked["source"].as_str().unwrap().ends_with("grid.las"));
}

#[test]
fn a_printed_pose_given_back_to_render_gives_the_same_image() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let las_path = utm_grid_las(dir.path());
    // Turn the view (orbit), print the pose (K), then stay still until the last frame.
    let mut steps = vec![cursor(2, 300.0, 200.0), button(3, "left", true)];
    for k in 1..=4 {
        steps.push(cursor(3 + k, 300.0 + 15.0 * k as f32, 200.0 - 8.0 * k as f32));
    }
    steps.push(button(8, "left", false));
    steps.push(json!({"frame": 10, "type": "key", "key": "K", "down": true}));
    steps.push(json!({"frame": 11, "type": "key", "key": "K", "down": false}));
    let script = write_script(dir.path(), "pose.json", Value::Array(steps));
    let shot = dir.path().join("window.png");
    let out = pcv_window(
        &d,
        &[
            s(&las_path),
            "--backend",
            "cpu",
            "--size",
            "640x360",
            "--frames",
            "14",
            "--input-script",
            s(&script),
            "--screenshot",
            s(&shot),
            "--no-overlay",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("pcv: camera "))
        .unwrap_or_else(|| panic!("K printed no pose:\n{stdout}"));
    // File coordinates: the UTM easting is in the printed pose.
    assert!(line.contains("--camera 5123") || line.contains("--camera 5124"), "not file coordinates: {line}");
    let mut args: Vec<&str> = line.split_whitespace().collect();
    let rendered = dir.path().join("render.png");
    args.extend(["--backend", "cpu", "--size", "640x360", "-o", s(&rendered)]);
    let mut full = vec!["render", s(&las_path)];
    full.extend(args);
    pcv_headless(&full);
    let (a, b) = (Frame::read_png(&shot).unwrap(), Frame::read_png(&rendered).unwrap());
    let lit = b.pixels.iter().filter(|&&p| p != b.pixels[0]).count();
    assert!(lit > 5000, "the render shows almost nothing ({lit} pixels): the comparison would prove nothing");
    let differing = a.count_rgb_differences(&b);
    assert!(differing <= a.pixels.len() / 1000, "{differing} pixels differ between the window and `pcv render {line}`");
}

#[test]
fn record_writes_the_frames_of_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let las_path = utm_grid_las(dir.path());
    let path = dir.path().join("poses.json");
    let a = format!("{},{},{},45,-30", UTM[0] - 20.0, UTM[1] - 20.0, UTM[2] + 30.0);
    let b = format!("{},{},{},135,-50", UTM[0] + 70.0, UTM[1] - 10.0, UTM[2] + 40.0);
    std::fs::write(&path, json!({"keyframes": [{"t": 0, "camera": a}, {"t": 1.0, "camera": b}]}).to_string()).unwrap();
    let out_dir = dir.path().join("frames");
    pcv_headless(&[
        "record",
        s(&las_path),
        "--path",
        s(&path),
        "--fps",
        "10",
        "-o",
        s(&out_dir),
        "--size",
        "160x90",
        "--backend",
        "cpu",
        "--no-video",
    ]);
    let pngs = (0..20).filter(|k| out_dir.join(format!("frame-{k:05}.png")).exists()).count();
    assert_eq!(pngs, 11, "1 s at 10 fps is 11 frames, both ends included");
    let poses = std::fs::read_to_string(out_dir.join("poses.txt")).unwrap();
    let poses: Vec<&str> = poses.lines().collect();
    assert_eq!(poses.len(), 11);
    // Each frame's pose is the path's at k/10 s.
    let cloud = pcv_io::load::load_files(std::slice::from_ref(&las_path)).unwrap();
    let cam_path = pcv_camera::path::CameraPath::load(&path).unwrap();
    for (k, line) in poses.iter().enumerate() {
        let p = cam_path.sample(k as f64 / 10.0).to_pose(cloud.origin);
        let expected = format!("--camera {} --up z", pcv_camera::PoseArg::format(&p, cloud.origin));
        assert_eq!(*line, expected, "frame {k}");
    }
    // A frame rendered again from its printed pose is the same image.
    let again = dir.path().join("again.png");
    let mut args = vec!["render", s(&las_path), "--size", "160x90", "--backend", "cpu", "-o", s(&again)];
    args.extend(poses[5].split_whitespace());
    pcv_headless(&args);
    let (f5, r5) = (Frame::read_png(&out_dir.join("frame-00005.png")).unwrap(), Frame::read_png(&again).unwrap());
    assert_eq!(f5.count_rgb_differences(&r5), 0, "frame 5 differs from `pcv render {}`", poses[5]);
    // The camera moves: the first and last frames differ.
    let (f0, f10) = (
        Frame::read_png(&out_dir.join("frame-00000.png")).unwrap(),
        Frame::read_png(&out_dir.join("frame-00010.png")).unwrap(),
    );
    assert!(f0.count_rgb_differences(&f10) > 1000);
}

/// CPU seconds `pid` has used (user + system), from /proc.
fn cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("reading /proc/PID/stat");
    // Fields after the command name (which is in parentheses): utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

#[test]
fn an_idle_window_takes_no_cpu_and_continuous_keeps_drawing() {
    let Some(d) = Display::start() else { return };
    if !Path::new("/proc/self/stat").exists() {
        eprintln!("SKIPPED: no /proc to read CPU times from");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    for continuous in [false, true] {
        let tr = dir.path().join(format!("trace-{continuous}.jsonl"));
        let mut args = vec![s(&cloud), "--backend", "cpu", "--size", "640x360", "--trace", s(&tr)];
        if continuous {
            args.push("--continuous");
        }
        let mut child =
            d.command(PCV).args(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("starting pcv");
        let start = Instant::now();
        while trace(&tr).len() < 2 && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(100));
        }
        // Let the panel settle, then measure two seconds.
        std::thread::sleep(Duration::from_millis(1500));
        let (cpu0, frames0) = (cpu_s(child.id()), trace(&tr).len());
        std::thread::sleep(Duration::from_secs(2));
        let (cpu1, frames1) = (cpu_s(child.id()), trace(&tr).len());
        let _ = child.kill();
        let _ = child.wait();
        let (cpu, frames) = (cpu1 - cpu0, frames1 - frames0);
        eprintln!("continuous {continuous}: {cpu:.2} s of CPU and {frames} frames in 2 s");
        if continuous {
            assert!(frames >= 4, "--continuous drew only {frames} frames in 2 s");
        } else {
            assert_eq!(frames, 0, "an idle window drew {frames} frames");
            assert!(cpu < 0.1, "an idle window used {cpu:.2} s of CPU in 2 s");
        }
    }
}

#[test]
fn dropped_files_load_as_layers_and_a_bad_one_is_reported() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    let more = dir.path().join("more.xyz");
    std::fs::write(&more, (0..500).map(|i| format!("{} {} 3\n", i % 20, i / 20)).collect::<String>()).unwrap();
    let bad = dir.path().join("bad.ply");
    std::fs::write(&bad, "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nend_header\n1\n").unwrap();
    for replace in [false, true] {
        let mut steps = vec![];
        if replace {
            steps.push(json!({"frame": 2, "type": "key", "key": "LeftShift", "down": true}));
        }
        steps.push(json!({"frame": 3, "type": "drop", "paths": [s(&bad), s(&more)]}));
        let script = write_script(dir.path(), "drop.json", Value::Array(steps));
        let tr = dir.path().join("trace.jsonl");
        pcv_window(
            &d,
            &[
                s(&cloud),
                "--backend",
                "cpu",
                "--size",
                "320x180",
                "--frames",
                "60",
                "--input-script",
                s(&script),
                "--trace",
                s(&tr),
            ],
        );
        let t = trace(&tr);
        let last = t.last().unwrap();
        let layers: Vec<&str> =
            last["layers"].as_array().unwrap().iter().map(|l| l["label"].as_str().unwrap()).collect();
        if replace {
            assert_eq!(layers.len(), 1, "Shift+drop should replace: {layers:?}");
            assert!(layers[0].ends_with("more.xyz"));
            assert_eq!(last["points"], 500);
        } else {
            assert_eq!(layers.len(), 2, "{layers:?}");
            assert!(layers[0].ends_with("ground.ply") && layers[1].ends_with("more.xyz"));
            assert_eq!(last["points"], 201 * 201 + 500);
        }
        let messages = last["messages"].to_string();
        assert!(messages.contains("bad.ply"), "the bad file is not reported in the window: {messages}");
        assert!(t.iter().any(|l| l["loading"] == true), "no frame showed the load in progress");
    }
}

#[test]
fn the_closed_panel_covers_a_small_corner() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    let (with, without) = (dir.path().join("with.png"), dir.path().join("without.png"));
    let base = [s(&cloud), "--backend", "cpu", "--size", "800x450", "--frames", "4"];
    pcv_window(&d, &[&base[..], &["--screenshot", s(&with)]].concat());
    pcv_window(&d, &[&base[..], &["--screenshot", s(&without), "--no-overlay"]].concat());
    let (a, b) = (Frame::read_png(&with).unwrap(), Frame::read_png(&without).unwrap());
    let (mut x1, mut y1, mut n) = (0u32, 0u32, 0usize);
    // The top-left 600 × 225 px: the scale bar (bottom left), the axes (bottom right) and the north
    // arrow (top right, for georeferenced clouds) are drawn with the panel too, elsewhere.
    for y in 0..a.height / 2 {
        for x in 0..600 {
            if (a.get(x, y) ^ b.get(x, y)) & 0x00ff_ffff != 0 {
                n += 1;
                x1 = x1.max(x);
                y1 = y1.max(y);
            }
        }
    }
    assert!(n > 2000, "the panel is not there ({n} pixels differ)");
    let share = (x1 + 1) as f64 * (y1 + 1) as f64 / (800.0 * 450.0);
    eprintln!("the panel covers {}x{} px from the top-left corner: {:.1}% of 800x450", x1 + 1, y1 + 1, share * 100.0);
    // The status line and the five section tabs with help (about 400 px wide), two lines tall.
    assert!(x1 < 420 && y1 < 80 && share < 0.08, "the closed panel reaches ({x1}, {y1}): more than a small corner");
}

#[test]
fn record_makes_a_video_when_ffmpeg_is_on_path() {
    if Command::new("ffmpeg").arg("-version").output().is_err() {
        eprintln!("SKIPPED: ffmpeg is not on PATH (apt-get install ffmpeg); pcv record then writes PNG frames only");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let las_path = utm_grid_las(dir.path());
    let path = dir.path().join("poses.json");
    let a = format!("{},{},{},45,-30", UTM[0] - 20.0, UTM[1] - 20.0, UTM[2] + 30.0);
    let b = format!("{},{},{},90,-40", UTM[0] + 25.0, UTM[1] - 30.0, UTM[2] + 35.0);
    std::fs::write(&path, json!({"keyframes": [{"camera": a}, {"camera": b}]}).to_string()).unwrap();
    let out_dir = dir.path().join("frames");
    // An odd size: the video's sides are rounded down to even numbers.
    let out = pcv_headless(&[
        "record",
        s(&las_path),
        "--path",
        s(&path),
        "--fps",
        "5",
        "-o",
        s(&out_dir),
        "--size",
        "161x91",
        "--backend",
        "cpu",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let video = out_dir.join("flight.mp4");
    assert!(video.exists() && std::fs::metadata(&video).unwrap().len() > 1000, "no video:\n{stderr}");
    assert!(stderr.contains("flight.mp4"), "the video's path is not reported:\n{stderr}");
    if let Ok(probe) = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-count_frames",
            "-show_entries",
            "stream=width,height,nb_read_frames",
            "-of",
            "csv=p=0",
            s(&video),
        ])
        .output()
    {
        // 2 s (the default keyframe step) at 5 fps: 11 frames, 160 x 90.
        assert_eq!(String::from_utf8_lossy(&probe.stdout).trim(), "160,90,11");
    }
}

fn key(frame: u64, k: &str, down: bool) -> Value {
    json!({"frame": frame, "type": "key", "key": k, "down": down})
}

fn px(v: &Value) -> Vec2 {
    Vec2::new(f(&v[0]), f(&v[1]))
}

/// A clip box's centre and half extents from a trace line (file coordinates).
fn clip_box(line: &Value) -> (glam::DVec3, glam::DVec3) {
    let d = |v: &Value| glam::DVec3::new(v[0].as_f64().unwrap(), v[1].as_f64().unwrap(), v[2].as_f64().unwrap());
    let b = &line["clip_boxes"][0];
    (d(&b["center"]), d(&b["half_extent"]))
}

/// The clip-box gizmo with scripted input: X edits the `--clip-box` box; the z ring swept a quarter turn
/// counterclockwise around the centre turns the box +90° about z (seen from above); the +x arrow dragged 40 px
/// along its direction on screen moves the box along x so that its centre shows 40 px further along
/// that direction; the +y face's square dragged 32 px moves the +y face (it shows 32 px further on)
/// while the −y face stays; the camera never moves while a handle is held. The last frame shows the
/// handles in their axes' colours, the one under the cursor (the +y face's) in yellow.
#[test]
fn the_gizmo_moves_and_resizes_a_clip_box_and_the_camera_stays() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cloud = ground_with_box(dir.path());
    let run = |name: &str, steps: Vec<Value>, frames: u32, shot: Option<&Path>| {
        let script = write_script(dir.path(), &format!("{name}.json"), Value::Array(steps));
        let tr = dir.path().join(format!("{name}.jsonl"));
        let frames = frames.to_string();
        let mut args = vec![s(&cloud), "--backend", "cpu", "--size", "640x360", "--up", "z", "--no-vsync"];
        args.extend(["--clip-box", "-2,-2,-1,2,2,3", "--frames", &frames, "--input-script", s(&script)]);
        args.extend(["--trace", s(&tr)]);
        if let Some(p) = shot {
            args.extend(["--screenshot", s(p)]);
        }
        pcv_window(&d, &args);
        trace(&tr)
    };
    // First: where the handles show once the box is edited.
    let t = run("select", vec![key(2, "X", true), key(3, "X", false)], 5, None);
    let g = &t[4]["gizmo"];
    assert_eq!(g["selected"], 0, "X edits the first clip box: {g}");
    let handles = &g["handles"];
    let centre = px(&handles["centre"]);
    let tip = px(&handles["move x"][1]);
    let face_y = px(&handles["face +y"]);
    let along_x = (tip - centre).normalize();
    let along_y = (face_y - centre).normalize();
    eprintln!("centre {centre}, +x tip {tip}, +y face {face_y}");

    // A turn: the z ring taken where it is clearest of the other handles, swept a quarter turn
    // counterclockwise around the centre in four steps; seen from above, that is +90° about z.
    let others: Vec<Vec2> = ["face +x", "face -x", "face +y", "face -y", "face -z", "face +z"]
        .iter()
        .filter_map(|k| handles.get(*k).map(px))
        .chain(["move x", "move y", "move z"].iter().flat_map(|k| {
            // Points along each arrow.
            let a = handles.get(*k).map(|a| (px(&a[0]), px(&a[1])));
            (0..=10).filter_map(move |i| a.map(|(p, q)| p + (q - p) * (i as f32 / 10.0)))
        }))
        .collect();
    let ring: Vec<Vec2> = handles["turn z"].as_array().unwrap().iter().map(px).collect();
    let clearance = |p: Vec2| others.iter().map(|o| o.distance(p)).fold(f32::INFINITY, f32::min);
    let grab = ring.iter().copied().max_by(|a, b| clearance(*a).total_cmp(&clearance(*b))).unwrap();
    let turned = |p: Vec2, deg: f32| {
        let (v, (sin, cos)) = (p - centre, deg.to_radians().sin_cos());
        // Counterclockwise as seen: screen y points down.
        centre + Vec2::new(v.x * cos + v.y * sin, -v.x * sin + v.y * cos)
    };
    let mut steps = vec![key(2, "X", true), key(3, "X", false), cursor(4, grab.x, grab.y), button(5, "left", true)];
    for k in 1..=4 {
        let p = turned(grab, 22.5 * k as f32);
        steps.push(cursor(5 + k, p.x, p.y));
    }
    steps.push(button(10, "left", false));
    let t = run("turn", steps, 12, None);
    assert_eq!(t[4]["gizmo"]["hover"], "turn z", "the cursor is on the z ring");
    assert_eq!(t[7]["gizmo"]["drag"], "turn z");
    let q: Vec<f64> =
        t[11]["clip_boxes"][0]["rotation"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let quarter = std::f64::consts::FRAC_PI_4;
    assert!(
        q[0].abs() < 1e-6
            && q[1].abs() < 1e-6
            && (q[2] - quarter.sin()).abs() < 1e-4
            && (q[3] - quarter.cos()).abs() < 1e-4,
        "not a quarter turn about z: {q:?}"
    );
    assert_eq!(clip_box(&t[11]), clip_box(&t[3]), "a turn keeps the centre and the size");
    for l in &t[2..] {
        assert_eq!((&l["eye_local"], &l["yaw_deg"]), (&t[1]["eye_local"], &t[1]["yaw_deg"]), "the camera moved");
    }
    // The arrow near its tip, clear of the rings and the faces.
    let press_x = centre + (tip - centre) * 0.92;
    // After the move the +y face shows about 40 px further along x (exactly so at the centre's depth).
    let press_y = face_y + along_x * 40.0;
    let shot = dir.path().join("gizmo.png");
    let at = |frame: u64, p: Vec2| cursor(frame, p.x, p.y);
    let mut steps = vec![key(2, "X", true), key(3, "X", false), at(4, press_x), button(5, "left", true)];
    for k in 1..=4 {
        steps.push(at(5 + k, press_x + along_x * 10.0 * k as f32));
    }
    steps.extend([button(10, "left", false), at(12, press_y), button(13, "left", true)]);
    for k in 1..=4 {
        steps.push(at(13 + k, press_y + along_y * 8.0 * k as f32));
    }
    steps.push(button(18, "left", false));
    let t = run("drag", steps, 24, Some(&shot));
    let gizmo = |i: usize, k: &str| t[i]["gizmo"][k].clone();
    assert_eq!(gizmo(4, "hover"), "move x", "the cursor is on the +x arrow");
    assert_eq!(gizmo(7, "drag"), "move x");
    assert_eq!(gizmo(12, "hover"), "face +y", "the cursor is on the +y face's square");
    assert_eq!(gizmo(15, "drag"), "face +y");
    assert_eq!(gizmo(20, "drag"), Value::Null, "the release ended the drag");

    // The move: along x only, and the centre shows 40 px further along the arrow.
    let ((c0, h0), (c1, h1)) = (clip_box(&t[4]), clip_box(&t[11]));
    assert!(c1.x - c0.x > 0.1 && (c1.y - c0.y).abs() < 1e-9 && (c1.z - c0.z).abs() < 1e-9, "{c0} -> {c1}");
    assert_eq!(h0, h1, "a move keeps the size");
    let centre_after = px(&t[11]["gizmo"]["handles"]["centre"]);
    let moved = centre_after - centre;
    assert!((moved.dot(along_x) - 40.0).abs() < 0.5 && moved.dot(along_x.perp()).abs() < 0.5, "moved {moved}");

    // The resize: the +y face moved 32 px along y on screen, the −y face stayed, nothing else changed.
    let (c2, h2) = clip_box(&t[20]);
    assert!(h2.y - h1.y > 0.1, "the box grew along y: {h1} -> {h2}");
    assert!(((c2.y - h2.y) - (c1.y - h1.y)).abs() < 1e-6, "the -y face moved: {} -> {}", c1.y - h1.y, c2.y - h2.y);
    assert!((c2.x - c1.x).abs() < 1e-9 && (c2.z - c1.z).abs() < 1e-9 && h2.x == h1.x && h2.z == h1.z);
    let (face_before, face_after) =
        (px(&t[12]["gizmo"]["handles"]["face +y"]), px(&t[20]["gizmo"]["handles"]["face +y"]));
    // Along the +y axis as it shows after the move (the script's motion was along it as it showed before).
    let along_y_now = (face_before - centre_after).normalize();
    let moved = face_after - face_before;
    let expected = 32.0 * along_y.dot(along_y_now);
    assert!((moved.dot(along_y_now) - expected).abs() < 0.5, "the +y face moved {moved} on screen, not {expected}");

    // The camera never moved.
    for l in &t[2..] {
        assert_eq!(
            (&l["eye_local"], &l["yaw_deg"], &l["pitch_deg"]),
            (&t[1]["eye_local"], &t[1]["yaw_deg"], &t[1]["pitch_deg"]),
            "the camera moved at frame {}",
            l["frame"]
        );
    }

    // PCV_GIZMO_SHOT=path keeps the picture.
    if let Some(p) = std::env::var_os("PCV_GIZMO_SHOT") {
        std::fs::copy(&shot, p).unwrap();
    }
    // The last frame shows the handles: red along the +x arrow, green on the −y face's square, and the
    // +y face's, still under the cursor, yellow.
    let last = &t[t.len() - 1]["gizmo"]["handles"];
    let frame = Frame::read_png(&shot).unwrap();
    let colour_near = |p: Vec2, want: &dyn Fn([u8; 4]) -> bool| {
        (-3..=3).any(|dy| {
            (-3..=3).any(|dx| {
                let (x, y) = ((p.x.round() as i32 + dx) as u32, (p.y.round() as i32 + dy) as u32);
                want(frame.get(x, y).to_le_bytes())
            })
        })
    };
    let (c, tip) = (px(&last["move x"][0]), px(&last["move x"][1]));
    assert!(colour_near(c + (tip - c) * 0.75, &|p| p[0] > 200 && p[1] < 120 && p[2] < 120), "no red +x arrow");
    assert!(colour_near(px(&last["face -y"]), &|p| p[1] > 200 && p[0] < 150 && p[2] < 150), "no green -y square");
    assert_eq!(t[t.len() - 1]["gizmo"]["hover"], "face +y");
    assert!(colour_near(px(&last["face +y"]), &|p| p[0] > 200 && p[1] > 180 && p[2] < 100), "no yellow +y square");
}

/// Several COPC tiles in the window: the Files section lists each tile (name, points, how much of it is
/// drawn) and the view draws their boxes, from the tiles' headers at once; once refined, each tile is
/// drawn whole (the trace carries what the panel lists).
#[test]
fn copc_tiles_are_listed_with_their_boxes_and_drawn_share() {
    let Some(d) = Display::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut copcs = Vec::new();
    for (k, x0) in [0.0, 60.0].into_iter().enumerate() {
        let las_path = dir.path().join(format!("tile{k}.las"));
        let mut w = centimetre_las(&las_path, 0);
        for i in 0..100 {
            for j in 0..100 {
                let (x, y) = (x0 + i as f64 * 0.5, j as f64 * 0.5);
                w.write_point(las::Point { x, y, z: (x * 0.1).sin() * 2.0, ..Default::default() }).unwrap();
            }
        }
        w.close().unwrap();
        let copc = dir.path().join(format!("tile{k}.copc.laz"));
        pcv_headless(&["convert", s(&las_path), "-o", s(&copc)]);
        copcs.push(copc);
    }
    let tr = dir.path().join("tiles.jsonl");
    pcv_window(
        &d,
        &[s(&copcs[0]), s(&copcs[1]), "--backend", "cpu", "--size", "640x360", "--frames", "30", "--trace", s(&tr)],
    );
    let t = trace(&tr);
    let tiles = t.last().unwrap()["lod"]["tiles"].as_array().expect("the tiles in the trace").clone();
    assert_eq!(tiles.len(), 2, "{tiles:?}");
    for (k, tile) in tiles.iter().enumerate() {
        assert!(tile["name"].as_str().unwrap().ends_with(&format!("tile{k}.copc.laz")), "{tile}");
        assert_eq!(tile["points"], 10_000, "{tile}");
        assert_eq!(tile["failed_nodes"], 0, "{tile}");
        let (sel, drawn) = (tile["selected_points"].as_u64().unwrap(), tile["drawn_points"].as_u64().unwrap());
        assert!(sel > 0 && drawn == sel, "{tile}: drawn whole once refined");
    }
    let x = |tile: &Value, end: &str, i: usize| tile[end][i].as_f64().unwrap();
    assert!((x(&tiles[0], "min", 0) - 0.0).abs() < 0.01 && (x(&tiles[0], "max", 0) - 49.5).abs() < 0.01);
    assert!((x(&tiles[1], "min", 0) - 60.0).abs() < 0.01 && (x(&tiles[1], "max", 0) - 109.5).abs() < 0.01);
}
