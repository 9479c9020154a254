//! The viewer in a real window, on a virtual X display (Xvfb + Mesa llvmpipe; no GPU needed).
//!
//! How it works: each test runs the built `pcv` binary under `xvfb-run -a` with the CPU backend and
//! compares the screenshot it takes (`--frames N --screenshot`, read back with glReadPixels from the
//! window) with `pcv render` (headless, host memory) of the same scene, camera and size. Without the
//! overlay the two must match (the PBO → texture → blit path must not change a pixel; only exact depth
//! ties may differ); with the overlay the top-left corner must differ and the far corner must not.
//! The images are left in `CARGO_TARGET_TMPDIR/window_xvfb/` for inspection. The tests skip (with a
//! message on stderr) where `xvfb-run` is not installed. The no-display test runs everywhere: it unsets
//! `DISPLAY` and checks that the error names both ways out (`pcv render`, `xvfb-run`).
use pcv_render::image_io::Frame;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const PCV: &str = env!("CARGO_BIN_EXE_pcv");
const SCENE: [&str; 6] = ["--points", "200000", "--camera", "-3,0,0,0,0", "--backend", "cpu"];
/// Differing pixels allowed between two renders of one frame: exact depth ties, at most 0.1%.
const MAX_TIE_FRACTION: f64 = 0.001;
/// Longest a pcv run may take before the test kills it.
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// `xvfb-run -a` picks a free display number racily: one virtual display at a time.
static XVFB: Mutex<()> = Mutex::new(());

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("window_xvfb");
    std::fs::create_dir_all(&dir).expect("creating the test's output directory");
    dir
}

fn have_xvfb_run() -> bool {
    let found = Command::new("xvfb-run").arg("--help").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !found {
        eprintln!("SKIPPED: xvfb-run is not installed (apt-get install xvfb xauth libgl1-mesa-dri) — the window tests need a virtual display");
    }
    found
}

/// Runs `cmd`, killing it after [`RUN_TIMEOUT`].
fn run(mut cmd: Command) -> Output {
    let what = format!("{cmd:?}");
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > RUN_TIMEOUT => {
                let _ = child.kill();
                let out = child.wait_with_output().expect("collecting a killed child");
                panic!("{what} ran over {RUN_TIMEOUT:?}; stderr:\n{}", String::from_utf8_lossy(&out.stderr));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("{what}: {e}"),
        }
    }
    let out = child.wait_with_output().expect("collecting the child's output");
    eprintln!("$ {what}\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// `pcv <args>` in a window on a fresh virtual display.
fn pcv_windowed(args: &[&str]) -> Output {
    let _one_display = XVFB.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut cmd = Command::new("xvfb-run");
    cmd.args(["-a", "-s", "-screen 0 1280x1024x24", PCV]).args(args).env("LIBGL_ALWAYS_SOFTWARE", "1");
    run(cmd)
}

/// `pcv render <args>`, headless.
fn pcv_render(args: &[&str]) -> Output {
    let mut cmd = Command::new(PCV);
    cmd.arg("render").args(args);
    run(cmd)
}

fn assert_ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
}

fn read(path: &Path) -> Frame {
    Frame::read_png(path).unwrap_or_else(|e| panic!("{e}"))
}

/// Pixels whose RGB differ inside `x0..x1 × y0..y1`, with y counted from the top (as frames count).
fn differences_in(a: &Frame, b: &Frame, x0: u32, x1: u32, y0: u32, y1: u32) -> usize {
    assert_eq!((a.width, a.height), (b.width, b.height), "image sizes differ");
    let mut n = 0;
    for y in y0..y1 {
        for x in x0..x1 {
            if (a.get(x, y) ^ b.get(x, y)) & 0x00ff_ffff != 0 {
                n += 1;
            }
        }
    }
    n
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("the test's paths are UTF-8")
}

#[test]
fn viewer_screenshot_matches_headless_render() {
    if !have_xvfb_run() {
        return;
    }
    let dir = out_dir();
    let (a, b) = (dir.join("A.png"), dir.join("B.png"));
    let size = ["--size", "320x180"];
    let shot = ["--frames", "30", "--screenshot", path_str(&a), "--no-overlay"];
    assert_ok(&pcv_windowed(&[&SCENE[..], &size, &shot].concat()), "pcv (window, no overlay)");
    assert_ok(&pcv_render(&[&SCENE[..], &size, &["-o", path_str(&b)]].concat()), "pcv render");

    let (fa, fb) = (read(&a), read(&b));
    assert_eq!((fa.width, fa.height), (320, 180), "the window's framebuffer is not the size asked for");
    assert_eq!((fb.width, fb.height), (320, 180));
    let lit = fb.pixels.iter().filter(|p| *p & 0x00ff_ffff != 0).count();
    assert!(
        lit > 1000,
        "the headless render shows almost no points ({lit} lit pixels): the comparison would prove nothing"
    );
    let differing = fa.count_rgb_differences(&fb);
    let allowed = (fa.pixels.len() as f64 * MAX_TIE_FRACTION) as usize;
    eprintln!("window vs headless: {differing} of {} pixels differ (allowed {allowed}); {lit} lit", fa.pixels.len());
    assert!(
        differing <= allowed,
        "{differing} pixels differ between {} and {} (allowed {allowed})",
        a.display(),
        b.display()
    );
}

#[test]
fn overlay_covers_the_top_left_and_nothing_else() {
    if !have_xvfb_run() {
        return;
    }
    // Large enough that the overlay (about 400 × 280 px) leaves the bottom-right quarter alone.
    let (w, h) = (960u32, 540u32);
    let size_arg = format!("{w}x{h}");
    let dir = out_dir();
    let (a2, b2) = (dir.join("A2.png"), dir.join("B2.png"));
    let size = ["--size", size_arg.as_str()];
    let shot = ["--frames", "30", "--screenshot", path_str(&a2)];
    assert_ok(&pcv_windowed(&[&SCENE[..], &size, &shot].concat()), "pcv (window, overlay)");
    assert_ok(&pcv_render(&[&SCENE[..], &size, &["-o", path_str(&b2)]].concat()), "pcv render");

    let (fa, fb) = (read(&a2), read(&b2));
    let top_left = differences_in(&fa, &fb, 0, 200, 0, 100);
    // The bottom-right quarter but its last 90 columns (the axes the panel draws in the corner).
    let bottom_right = differences_in(&fa, &fb, w / 2, w - 90, h / 2, h);
    let quarter_px = ((w / 2 - 90) * h / 2) as usize;
    let allowed = (quarter_px as f64 * MAX_TIE_FRACTION) as usize;
    eprintln!("overlay: {top_left} of 20000 top-left pixels differ; {bottom_right} of {quarter_px} bottom-right (allowed {allowed})");
    assert!(
        top_left > 2000,
        "the overlay is missing from the top-left of {} ({top_left} pixels differ from {})",
        a2.display(),
        b2.display()
    );
    assert!(
        bottom_right <= allowed,
        "{bottom_right} pixels differ in the bottom-right quarter of {} (allowed {allowed})",
        a2.display()
    );
}

#[test]
#[cfg_attr(windows, ignore = "Linux advice (xvfb-run); a Windows session has a display, and its advice differs")]
fn no_display_error_names_render_and_xvfb_run() {
    let mut cmd = Command::new(PCV);
    cmd.args(["--points", "1000", "--backend", "cpu", "--frames", "1"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY");
    let out = run(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "pcv opened a window with no DISPLAY:\n{stderr}");
    assert!(stderr.contains("pcv render"), "the error does not mention `pcv render`:\n{stderr}");
    assert!(stderr.contains("xvfb-run"), "the error does not mention `xvfb-run`:\n{stderr}");
    assert!(stderr.contains("no display"), "the error does not say there is no display:\n{stderr}");
}
