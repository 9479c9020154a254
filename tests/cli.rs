//! The command line: help, bad arguments, missing files, `render` and `bench` end to end (CPU backend).
use std::process::{Command, Output};

fn pcv(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pcv")).args(args).env_remove("DISPLAY").output().expect("run pcv")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_explains_the_commands_and_controls() {
    let o = pcv(&["--help"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for word in [
        "render",
        "bench",
        "record",
        "--points",
        "--backend",
        "--camera",
        "--camera-frame",
        "--up",
        "--screenshot",
        "mouse-look",
        "H or F1",
        "Double-click",
    ] {
        assert!(out.contains(word), "--help does not mention {word}:\n{out}");
    }
}

#[test]
fn bad_arguments_exit_nonzero_with_a_message() {
    for (args, expect) in [
        (&["--size", "12"][..], "WIDTHxHEIGHT"),
        (&["--points", "ten"][..], "not a count"),
        (&["--camera", "1,2,3"][..], "expected 5 numbers"),
        (&["--backend", "opencl"][..], "invalid value"),
        (&["render", "--size", "0x5", "-o", "x.png"][..], "1..=16384"),
        (&["render"][..], "--output"),
        (&["--no-such-flag"][..], "unexpected argument"),
    ] {
        let o = pcv(args);
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(stderr(&o).contains(expect), "{args:?}: stderr lacks '{expect}':\n{}", stderr(&o));
    }
}

#[test]
fn missing_and_bad_files_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.bin");
    let o = pcv(&[
        "render",
        missing.to_str().unwrap(),
        "-o",
        dir.path().join("a.png").to_str().unwrap(),
        "--backend",
        "cpu",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nope.bin"), "{}", stderr(&o));

    let odd = dir.path().join("odd.bin");
    std::fs::write(&odd, [0u8; 40]).unwrap();
    let o =
        pcv(&["render", odd.to_str().unwrap(), "-o", dir.path().join("a.png").to_str().unwrap(), "--backend", "cpu"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("odd.bin") && e.contains("byte 32"), "{e}");

    let unknown = dir.path().join("cloud.xyzw");
    std::fs::write(&unknown, b"1 2 3").unwrap();
    let o = pcv(&[
        "render",
        unknown.to_str().unwrap(),
        "-o",
        dir.path().join("a.png").to_str().unwrap(),
        "--backend",
        "cpu",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unsupported format"), "{}", stderr(&o));
}

#[test]
#[cfg_attr(windows, ignore = "Linux advice (xvfb-run); a Windows session has a display, and its advice differs")]
fn viewer_without_a_display_says_what_to_do() {
    let o = pcv(&["--points", "1000", "--frames", "1", "--backend", "cpu"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("pcv render") && e.contains("xvfb-run"), "{e}");
}

#[test]
fn render_writes_the_png_and_raw_points_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.png");
    let o = pcv(&["render", "--points", "100k", "--size", "96x54", "--backend", "cpu", "-o", a.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let img = pcv_render::image_io::Frame::read_png(&a).unwrap();
    assert_eq!((img.width, img.height), (96, 54));
    let covered = img.pixels.iter().filter(|&&p| p & 0x00ff_ffff != 0).count();
    assert!(covered > 300, "only {covered} pixels covered");

    // The same scene written as raw records and loaded as a file renders the same image from the same pose.
    let cloud = pcv_io::scene::generate(100_000, 1, false);
    let raw = dir.path().join("scene.bin");
    pcv_io::load::write_raw(&raw, &cloud.points).unwrap();
    let b = dir.path().join("b.png");
    // Files get adaptive points, EDL and a gradient by default: ask for the built-in scene's look.
    let look = ["--point-size", "1", "--no-edl", "--background", "black"];
    let args = [
        &["render", raw.to_str().unwrap(), "--camera", "-3,0,0,0,0", "--size", "96x54", "--backend", "cpu"][..],
        &look,
        &["-o", b.to_str().unwrap()],
    ]
    .concat();
    let o = pcv(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let img_b = pcv_render::image_io::Frame::read_png(&b).unwrap();
    // The built-in scene keeps the prototype's planes (0.01, 100); a loaded cloud's follow the eye
    // (here about 0.8 and 4.4), so the depth buffer rounds differently: where two points are within a
    // depth step of each other either may win. Every other pixel is the same.
    let diff = img.count_rgb_differences(&img_b);
    let allowed = img.pixels.len() / 200;
    assert!(diff <= allowed, "{diff} pixels differ (allowed {allowed}: depth rounding between near-coincident points)");
}

#[test]
fn bench_prints_a_table_and_writes_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let o = pcv(&[
        "bench",
        "--points",
        "50k,100k",
        "--size",
        "64x36",
        "--warmup",
        "1",
        "--frames",
        "3",
        "--backend",
        "cpu",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("close-up") && out.contains("far"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 12, "2 counts × 6 poses");
    for r in results {
        assert!(r["frame"]["median_ms"].as_f64().unwrap() > 0.0);
        assert!(r["gpoints_per_s"].as_f64().unwrap() > 0.0);
        assert_eq!(r["frames"], 3);
    }
    assert_eq!(v["backend"], "cpu");
}

#[test]
fn more_gpus_than_the_machine_has_is_a_clear_error_not_a_panic() {
    // No machine has 64 GPUs: without CUDA the driver is missing, with it the count is short, and
    // --backend cpu is refused before either. Each exits 1 with a message naming --gpus.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.png");
    for args in [
        &["render", "--gpus", "64", "--points", "10k", "-o", out.to_str().unwrap()][..],
        &["render", "--gpus", "2", "--backend", "cpu", "--points", "10k", "-o", out.to_str().unwrap()][..],
        &[
            "bench",
            "--gpus",
            "64,1",
            "--points",
            "10k",
            "--size",
            "32x18",
            "--frames",
            "1",
            "--warmup",
            "0",
            "--backend",
            "cuda",
        ][..],
    ] {
        let o = pcv(args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(e.contains("--gpus"), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
    }
    assert!(!out.exists(), "no image for a refused run");
    let o = pcv(&["render", "--gpus", "0", "-o", out.to_str().unwrap()]);
    assert!(stderr(&o).contains("not a GPU count"), "{}", stderr(&o));
}
