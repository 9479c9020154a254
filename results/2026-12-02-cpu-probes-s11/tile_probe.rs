//! Probe (session 11, not kept): screen tiles in L2 instead of full-frame private buffers, all points drawn
//! (no occlusion culling), against the `vis` mode's figures. Not bit-exact (the tile's projection is shifted).
use pcv::bench::scenarios;
use pcv::camera::FlyCamera;
use pcv::cloud::Bounds;
use pcv::render::cpu::preprocess::{grid_params, group_bounds, sort_by_cells, split};
use pcv::render::cpu::scatter::{draw_points, Payload, Private};
use pcv::render::FrameParams;
use pcv::render::gpu_data::FrameUniforms;
use rayon::prelude::*;
use std::time::Instant;

fn rect(f: &FrameUniforms, b: &pcv::render::gpu_data::Batch) -> Option<[u32; 4]> {
    let m = &f.screen_from_world;
    let (mut x0, mut y0, mut x1, mut y1) = (f32::INFINITY, f32::INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY);
    let (mut dmin, mut dmax) = (f32::INFINITY, f32::NEG_INFINITY);
    for c in 0..8 {
        let p = [if c & 1 == 0 { b.min[0] } else { b.max[0] }, if c & 2 == 0 { b.min[1] } else { b.max[1] }, if c & 4 == 0 { b.min[2] } else { b.max[2] }];
        let row = |r: usize| m[r] * p[0] + m[4 + r] * p[1] + m[8 + r] * p[2] + m[12 + r];
        let w = row(3);
        if w <= 1e-6 {
            return Some([0, 0, f.width, f.height]);
        }
        let (sx, sy, d) = (row(0) / w, row(1) / w, row(2) / w);
        x0 = x0.min(sx); x1 = x1.max(sx); y0 = y0.min(sy); y1 = y1.max(sy); dmin = dmin.min(d); dmax = dmax.max(d);
    }
    if dmax <= 0.0 || dmin >= 1.0 || x1 < 0.0 || y1 < 0.0 || x0 >= f.width as f32 || y0 >= f.height as f32 {
        return None;
    }
    let cl = |v: f32, hi: u32| (v.max(0.0) as u32).min(hi);
    Some([cl(x0 - 1.0, f.width), cl(y0 - 1.0, f.height), cl(x1 + 2.0, f.width), cl(y1 + 2.0, f.height)])
}

fn main() {
    let n: u64 = std::env::args().nth(1).map_or(10_000_000, |v| v.parse().unwrap());
    let pose = std::env::args().nth(2).unwrap_or_else(|| "start".into());
    let (tw, th): (u32, u32) = std::env::args().nth(3).map_or((256, 128), |v| { let (a, b) = v.split_once('x').unwrap(); (a.parse().unwrap(), b.parse().unwrap()) });
    let cloud = pcv::cloud::scene::generate(n, 1, false);
    let g = grid_params(&Bounds::of_points(&cloud.points), n);
    let sorted = sort_by_cells(&g, &cloud.points);
    let (pos, colors) = split(&sorted);
    let groups = group_bounds(&pos);
    let gp = pos.len().div_ceil(groups.len());
    let (w, h) = (1920u32, 1080u32);
    let sc = scenarios(&cloud).into_iter().find(|s| s.name == pose).unwrap();
    let cam = FlyCamera::start_for(&cloud, Some(sc.pose));
    let f = FrameParams::new(cam.clip_from_world(w, h), w, h).with_depth_range(cam.depth_range().near, cam.depth_range().far).uniforms();
    let (ntx, nty) = (w.div_ceil(tw), h.div_ceil(th));
    let mut vis = vec![u64::MAX; (w * h) as usize];
    let mut image = vec![0u32; (w * h) as usize];
    for frame in 0..8 {
        let t0 = Instant::now();
        // Bin: per group its rect, then per tile the groups that overlap it.
        let rects: Vec<Option<[u32; 4]>> = groups.par_iter().map(|b| rect(&f, b)).collect();
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); (ntx * nty) as usize];
        let mut projected = 0usize;
        for (gi, r) in rects.iter().enumerate() {
            if let Some([x0, y0, x1, y1]) = *r {
                if x1 <= x0 || y1 <= y0 { continue; }
                for ty in y0 / th..=(y1 - 1) / th {
                    for tx in x0 / tw..=(x1 - 1) / tw {
                        lists[(ty * ntx + tx) as usize].push(gi as u32);
                        projected += groups[gi].num_points as usize;
                    }
                }
            }
        }
        let t1 = Instant::now();
        // Draw tiles; each writes its own rows of vis and image.
        let vis_ptr = vis.as_mut_ptr() as usize;
        let img_ptr = image.as_mut_ptr() as usize;
        let mut order: Vec<usize> = (0..lists.len()).collect();
        order.sort_by_key(|&t| std::cmp::Reverse(lists[t].len()));
        order.par_iter().for_each_init(|| vec![u64::MAX; (tw * th) as usize], |buf, &t| {
            let (tx, ty) = (t as u32 % ntx, t as u32 / ntx);
            let (x0, y0) = (tx * tw, ty * th);
            let (cw, ch) = (tw.min(w - x0), th.min(h - y0));
            let mut ft = f;
            let m = &mut ft.screen_from_world;
            for c in 0..4 {
                m[4 * c] -= x0 as f32 * m[4 * c + 3];
                m[4 * c + 1] -= y0 as f32 * m[4 * c + 3];
            }
            ft.width = cw;
            ft.height = ch;
            for &gi in &lists[t] {
                let from = gi as usize * gp;
                let to = (from + gp).min(pos.len());
                draw_points(&ft, &pos[from..to], Payload::Index(from as u64), &mut Private(&mut buf[..(cw * ch) as usize]));
            }
            for y in 0..ch {
                let row = &mut buf[(y * cw) as usize..((y + 1) * cw) as usize];
                let at = ((y0 + y) * w + x0) as usize;
                // SAFETY (probe): tiles are disjoint rectangles of the frame.
                let out = unsafe { std::slice::from_raw_parts_mut((vis_ptr as *mut u64).add(at), cw as usize) };
                let img = unsafe { std::slice::from_raw_parts_mut((img_ptr as *mut u32).add(at), cw as usize) };
                for ((o, c), v) in out.iter_mut().zip(img.iter_mut()).zip(row.iter_mut()) {
                    *o = *v;
                    *c = if *v == u64::MAX { 0x202020ff } else { colors[(*v & ((1 << 34) - 1)) as usize] };
                    *v = u64::MAX;
                }
            }
        });
        let t2 = Instant::now();
        println!("frame {frame}: bin {:.2} ms, draw+writeout {:.2} ms, total {:.2} ms; {} tiles, points projected {:.2}M ({:.1}% dup)",
            (t1 - t0).as_secs_f64() * 1e3, (t2 - t1).as_secs_f64() * 1e3, (t2 - t0).as_secs_f64() * 1e3, lists.len(), projected as f64 * 1e-6,
            100.0 * (projected as f64 / n as f64 - 1.0));
    }
}
