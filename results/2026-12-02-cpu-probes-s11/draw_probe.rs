//! Probe (session 11, not kept): the draw loop's cost with Morton order against bit-reversed runs of 256,
//! alternated in one process (single thread and two threads, each into its own full-frame buffer).
use pcv::bench::{scenarios, Summary};
use pcv::camera::FlyCamera;
use pcv::cloud::Bounds;
use pcv::render::cpu::preprocess::{grid_params, sort_by_cells, split};
use pcv::render::cpu::scatter::{draw_points, Payload, Private};
use pcv::render::FrameParams;
use pcv::platform::cpu_time;

fn main() {
    let n: u64 = std::env::args().nth(1).map_or(10_000_000, |v| v.parse().unwrap());
    let pose = std::env::args().nth(2).unwrap_or_else(|| "start".into());
    let run: usize = std::env::args().nth(3).map_or(256, |v| v.parse().unwrap());
    let cloud = pcv::cloud::scene::generate(n, 1, false);
    let g = grid_params(&Bounds::of_points(&cloud.points), n);
    let sorted = sort_by_cells(&g, &cloud.points);
    let (pos, _) = split(&sorted);
    let mut order: Vec<u32> = (0..pos.len() as u32).collect();
    // Bit-reversed position inside each full run of `run` (a power of two) entries.
    let bits = run.trailing_zeros();
    for chunk in order.chunks_exact_mut(run) {
        let copy = chunk.to_vec();
        for (j, v) in chunk.iter_mut().enumerate() {
            *v = copy[j.reverse_bits() >> (usize::BITS - bits)];
        }
    }
    let rev: Vec<[f32; 3]> = order.iter().map(|&i| pos[i as usize]).collect();
    let (w, h) = (1920u32, 1080u32);
    let sc = scenarios(&cloud).into_iter().find(|s| s.name == pose).unwrap();
    let cam = FlyCamera::start_for(&cloud, Some(sc.pose));
    let f = FrameParams::new(cam.clip_from_world(w, h), w, h).with_depth_range(cam.depth_range().near, cam.depth_range().far).uniforms();
    let mut bufs = vec![vec![u64::MAX; (w * h) as usize]; 2];
    let mut one: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut two: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut two_wall: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..24 {
        let side = round % 2;
        let p = if side == 0 { &pos } else { &rev };
        for b in bufs.iter_mut() { b.fill(u64::MAX); }
        let t = cpu_time::thread_ns();
        draw_points(&f, p, Payload::Index(0), &mut Private(&mut bufs[0]));
        one[side].push((cpu_time::thread_ns() - t) as f64 / n as f64);
        for b in bufs.iter_mut() { b.fill(u64::MAX); }
        let half = p.len() / 2;
        let c = cpu_time::process_ns();
        let t = std::time::Instant::now();
        std::thread::scope(|s| {
            for (k, b) in bufs.iter_mut().enumerate() {
                let part = if k == 0 { &p[..half] } else { &p[half..] };
                let f = &f;
                s.spawn(move || draw_points(f, part, Payload::Index((k * half) as u64), &mut Private(b)));
            }
        });
        two_wall[side].push(t.elapsed().as_secs_f64() * 1e3);
        two[side].push((cpu_time::process_ns() - c) as f64 / n as f64);
    }
    for side in 0..2 {
        let (a, b, c) = (Summary::of(&one[side]), Summary::of(&two[side]), Summary::of(&two_wall[side]));
        println!("{pose} {:>7}: one thread {:.2}/{:.2} ns/pt; two threads cpu {:.2}/{:.2} ns/pt, wall {:.1}/{:.1} ms (min/median)",
            if side == 0 { "morton" } else { "bitrev" }, a.min_ms, a.median_ms, b.min_ms, b.median_ms, c.min_ms, c.median_ms);
    }
}
