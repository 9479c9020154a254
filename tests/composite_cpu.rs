//! The multi-GPU composite (`render/multi.rs`) on the CPU twins, in CI: the points in Morton order are
//! split into contiguous batch-aligned shares (`multi::split`), each share is rasterized on its own with
//! local indices, and `cpu::composite::composite_shares` (payload offsets, min over the shares, colour
//! gather, min over the gathered words) makes the frame. Because a share's global indices are its
//! place in the one order every share is cut from, the composite equals the single image bit for bit
//! in `vis` mode — ties included — and in `packed` mode; depths equal everywhere. Several poses (the
//! bench's start, close-up, far, top and grazing), 2, 3 and 5 shares, a gradient background.
use pcv_camera::scenarios::scenarios;
use pcv_camera::FlyCamera;
use pcv_io::{order::morton_order, scene};
use pcv_render::gpu_data::{word_depth, word_payload, FrameUniforms, Point};
use pcv_render::look::{Background, Look};
use pcv_render::multi::split;
use pcv_render::twins::composite::{composite_shares, words_gather, words_min, words_offset, ShareWords};
use pcv_render::twins::{packed, preprocess, vis};
use pcv_render::FrameParams;
use std::sync::atomic::{AtomicU64, Ordering};

const W: u32 = 320;
const H: u32 = 180;

fn words(buf: &[AtomicU64]) -> Vec<u64> {
    buf.iter().map(|w| w.load(Ordering::Relaxed)).collect()
}

fn vis_words(f: &FrameUniforms, positions: &[[f32; 3]]) -> Vec<u64> {
    let mut buf: Vec<AtomicU64> = (0..(W * H) as usize).map(|_| AtomicU64::new(0)).collect();
    vis::vis_clear(&mut buf);
    vis::vis(f, positions, &buf);
    words(&buf)
}

fn packed_words(f: &FrameUniforms, points: &[Point]) -> Vec<u64> {
    let mut buf: Vec<AtomicU64> = (0..(W * H) as usize).map(|_| AtomicU64::new(0)).collect();
    packed::packed_clear(f, &mut buf);
    let positions: Vec<[f32; 3]> = points.iter().map(|p| p.pos).collect();
    let colors: Vec<u32> = points.iter().map(|p| p.color_word()).collect();
    packed::packed(f, &positions, &colors, &buf);
    words(&buf)
}

/// The colours the packed resolve reads from colour words.
fn colours(words: &[u64]) -> Vec<u32> {
    words.iter().map(|&w| word_payload(w) as u32).collect()
}

#[test]
fn composite_of_shares_equals_the_single_image() {
    let cloud = scene::generate(400_000, 3, false);
    let order = morton_order(&cloud.points, &cloud.bounds);
    let sorted: Vec<Point> = order.iter().map(|&i| cloud.points[i as usize]).collect();
    let prep = preprocess::prepare(&sorted);
    let look = Look { background: Background::parse("gradient").expect("background"), ..Look::PLAIN };
    let mut checked = 0;
    for sc in scenarios(&cloud) {
        let cam = FlyCamera::start_for(&cloud, Some(sc.pose));
        let frame = FrameParams::new(cam.clip_from_world(W, H), W, H).with_look(look);
        let f = frame.uniforms();
        // One GPU: the vis pass over every point and its resolve.
        let single = vis_words(&f, &prep.positions);
        let single_buf: Vec<AtomicU64> = single.iter().map(|&w| AtomicU64::new(w)).collect();
        let mut single_img = vec![0u32; (W * H) as usize];
        vis::vis_resolve(&f, &single_buf, &prep.colors, &mut single_img);
        let covered = single.iter().filter(|&&w| word_payload(w) != vis::EMPTY_INDEX).count();
        let single_packed = packed_words(&f, &sorted);
        for parts in [2, 3, 5] {
            let ranges = split(sorted.len() as u64, parts).expect("split");
            let shares = ranges
                .iter()
                .map(|r| ShareWords {
                    first: r.start,
                    words: vis_words(&f, &prep.positions[r.start as usize..r.end as usize]),
                    colors: &prep.colors[r.start as usize..r.end as usize],
                })
                .collect();
            let composite = composite_shares(&f, shares);
            let depth_diff = composite.iter().zip(&single).filter(|(a, b)| word_depth(**a) != word_depth(**b)).count();
            assert_eq!(depth_diff, 0, "{} {parts} shares: depths differ at {depth_diff} pixels", sc.name);
            let img = colours(&composite);
            let diff = img.iter().zip(&single_img).filter(|(a, b)| a != b).count();
            assert_eq!(diff, 0, "{} {parts} shares: vis colours differ at {diff} of {covered} covered pixels", sc.name);
            // Packed: colour words; the composite is the min over the shares.
            let mut all = vec![u64::MAX; (W * H) as usize];
            for r in &ranges {
                words_min(&mut all, &packed_words(&f, &sorted[r.start as usize..r.end as usize]));
            }
            assert!(all == single_packed, "{} {parts} shares: the packed composite differs", sc.name);
            checked += 1;
        }
        if sc.name == "start" {
            assert!(covered > (W * H / 20) as usize, "start: only {covered} pixels covered");
        }
    }
    assert!(checked >= 9, "only {checked} pose/share combinations checked");
}

#[test]
fn a_wrong_offset_or_a_missing_share_shows() {
    // The composite must depend on each step: without the offsets, shares' indices collide; without a
    // share, its pixels go to the others or the background.
    let cloud = scene::generate(100_000, 5, false);
    let order = morton_order(&cloud.points, &cloud.bounds);
    let sorted: Vec<Point> = order.iter().map(|&i| cloud.points[i as usize]).collect();
    let prep = preprocess::prepare(&sorted);
    let cam = FlyCamera::start_for(&cloud, None);
    let f = FrameParams::new(cam.clip_from_world(W, H), W, H).uniforms();
    let single = colours(&{
        let s = vis_words(&f, &prep.positions);
        let mut out = vec![u64::MAX; s.len()];
        words_gather(&f, &s, &prep.colors, 0, true, &mut out);
        out
    });
    let ranges = split(sorted.len() as u64, 2).expect("split");
    let share = |r: &std::ops::Range<u64>| vis_words(&f, &prep.positions[r.start as usize..r.end as usize]);
    // No offsets: gather each share's words as if its indices were global.
    let (a, b) = (share(&ranges[0]), share(&ranges[1]));
    let mut bad = a.clone();
    words_min(&mut bad, &b);
    let mut out = vec![u64::MAX; bad.len()];
    words_gather(&f, &bad, &prep.colors, 0, true, &mut out);
    assert_ne!(colours(&out), single, "without offsets the composite should be wrong");
    // With offsets but one share left out.
    let mut b_off = b.clone();
    words_offset(&mut b_off, ranges[1].start);
    let mut only_b = vec![u64::MAX; b_off.len()];
    words_gather(&f, &b_off, &prep.colors[ranges[1].start as usize..], ranges[1].start, true, &mut only_b);
    assert_ne!(colours(&only_b), single, "one share alone should not make the whole image");
}
