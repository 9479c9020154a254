//! The quant mode's inner loop: points given as 10-bit quantized words (x in bits 0–9, y in 10–19,
//! z in 20–29, in their batch's box) decoded and drawn in one pass, 4 bytes read a point instead of 12.
//!
//! How it works: where the hand-written AVX2 loop runs ([`super::draw_points`]: AVX2 and FMA, no
//! AVX-512, `PCV_CPU_AVX2` and `PCV_CPU_FUSED` not `0`), [`draw_words`] loads 8 words, takes the three
//! fields with shifts and masks, converts them to floats (exact: below 2^24) and decodes each with one
//! FMA, `q · scale + min`, as [`crate::twins::batch::dequantize`] does (one rounding, so the same
//! bits); then the same projection, words, prefetch and minimum as the 12-byte loop
//! ([`super::Ahead`]). The last `len % 8` words, and every word elsewhere (AVX-512, the portable loop),
//! are decoded into a stack array first and drawn by [`super::draw_points`] ([`draw_decoded`]).
use super::{draw_points, Payload, Sink};
use crate::gpu_data::{Batch, FrameUniforms};
use crate::twins::batch::dequantize_pos;
use crate::twins::project::BATCH;

/// Every point of `words` (quantized in `batch`'s box) that [`crate::twins::project::project`] keeps
/// once decoded gives its word (depth bits, point index `first + j`) to `sink` at its pixel. Inlined:
/// called from code compiled with AVX2 and FMA ([`crate::simd::with_fma!`]), the decoding
/// of [`draw_decoded`] is vectorized there with one FMA a coordinate (elsewhere each is a call to
/// libm's `fmaf`).
#[inline(always)]
pub fn draw_words<S: Sink>(f: &FrameUniforms, batch: &Batch, words: &[u32], first: u64, sink: &mut S) {
    #[cfg(target_arch = "x86_64")]
    if f.width != 0
        && f.height != 0
        && fused_wanted()
        && !super::has_avx512()
        && crate::simd::has_avx2_fma()
        && super::has_avx2_loop()
    {
        // SAFETY (each): this CPU has AVX2 and FMA (asked at run time).
        if super::PREFETCH.on() {
            unsafe { draw_words_avx2::<S, { super::PREFETCH_BLOCKS }>(f, batch, words, first, sink) };
        } else {
            unsafe { draw_words_avx2::<S, 1>(f, batch, words, first, sink) };
        }
        return;
    }
    draw_decoded(f, batch, words, first, sink)
}

/// Whether [`draw_words`] runs the fused loop where it can: unless `PCV_CPU_FUSED=0` (then every word
/// goes through [`draw_decoded`], for comparisons; asked once).
pub fn fused_wanted() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("PCV_CPU_FUSED").is_none_or(|v| v != "0"))
}

/// [`draw_words`] by way of positions: [`BATCH`] words at a time decoded into a stack array, then
/// [`draw_points`].
#[inline(always)]
pub fn draw_decoded<S: Sink>(f: &FrameUniforms, batch: &Batch, words: &[u32], first: u64, sink: &mut S) {
    let mut pos = [[0f32; 3]; BATCH];
    for (k, group) in words.chunks(BATCH).enumerate() {
        for (p, &w) in pos.iter_mut().zip(group) {
            *p = dequantize_pos(batch, w);
        }
        draw_points(f, &pos[..group.len()], Payload::Index(first + (k * BATCH) as u64), sink);
    }
}

/// [`draw_words`] 8 words at a time in AVX2 registers, `AHEAD` blocks in flight ([`super::Ahead`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn draw_words_avx2<S: Sink, const AHEAD: usize>(
    f: &FrameUniforms,
    batch: &Batch,
    words: &[u32],
    first: u64,
    sink: &mut S,
) {
    use std::arch::x86_64::*;
    let field = _mm256_set1_epi32(1023);
    let (scale, min) = (batch.scale.map(|v| _mm256_set1_ps(v)), batch.min.map(|v| _mm256_set1_ps(v)));
    let blocks = words.len() / 8;
    let load = |k: usize| {
        // SAFETY: words `8k .. 8k + 8` lie inside `words` (k < blocks).
        let v = unsafe { _mm256_loadu_si256(words.as_ptr().add(8 * k).cast()) };
        // (q as f32).mul_add(scale[k], min[k]) per field, as `dequantize`.
        let x = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v, field)), scale[0], min[0]);
        let y =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32::<10>(v), field)), scale[1], min[1]);
        let z =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32::<20>(v), field)), scale[2], min[2]);
        (x, y, z)
    };
    // SAFETY: this function's features; `load` reads blocks below `blocks`; the payload is an index.
    unsafe { super::Ahead::<AHEAD>::run(f, blocks, super::IndexWords::new(first), sink, load) };
    draw_decoded(f, batch, &words[8 * blocks..], first + (8 * blocks) as u64, sink);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::scatter::{Private, Shared};
    use std::sync::atomic::AtomicU64;

    /// Reference: each word decoded by `dequantize_pos`, then the portable loop.
    fn reference(f: &FrameUniforms, batch: &Batch, words: &[u32], first: u64, buf: &mut [u64]) {
        let pos: Vec<[f32; 3]> = words.iter().map(|&w| dequantize_pos(batch, w)).collect();
        super::super::draw_lanes(f, &pos, Payload::Index(first), &mut Private(buf));
    }

    /// Words of batches of the built-in scene seen from several poses (some batches across the view's
    /// edges and behind the camera), and of made-up boxes around the camera (points at and behind it,
    /// on the near plane, with bits 30 and 31 set): the fused loop, with and without prefetch, private
    /// and shared, gives the buffer of decoding then drawing, for every length of a run mod 8.
    #[test]
    fn the_fused_loop_gives_the_buffer_of_decoding_then_drawing() {
        let cloud = pcv_io::scene::generate(60_000, 3, false);
        let g = crate::twins::preprocess::grid_params(&cloud.bounds, cloud.points.len() as u64);
        let p = crate::twins::preprocess::prepare(&crate::twins::preprocess::sort_by_cells(&g, &cloud.points));
        let mut cam = pcv_camera::FlyCamera::for_cloud(cloud.bounds, true);
        let (w, h) = (97u32, 61u32);
        let n = (w * h) as usize;
        let per = crate::gpu_data::BATCH_POINTS as usize;
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut checked = 0;
        let mut landed = 0;
        for k in 0..6 {
            cam.pose.yaw_rad = cam.start.yaw_rad + k as f32 * 0.5;
            cam.pose.eye = cam.start.eye + (cloud.bounds.center() - cam.start.eye) * (k as f32 * 0.2);
            let f = crate::FrameParams::new(cam.clip_from_world(w, h), w, h).uniforms();
            let eye = cam.pose.eye.to_array();
            // The scene's batches, and boxes around the eye whose words are random (any 32 bits).
            let mut cases: Vec<(Batch, Vec<u32>, u64)> = p
                .batches
                .iter()
                .enumerate()
                .map(|(b, batch)| {
                    (*batch, p.quant[b * per..b * per + batch.num_points as usize].to_vec(), (b * per) as u64)
                })
                .collect();
            for size in [1e-3f32, 0.1, 3.0] {
                let batch = Batch {
                    min: eye.map(|v| v - size * 0.5),
                    max: eye.map(|v| v + size * 0.5),
                    scale: [size / 1023.0; 3],
                    num_points: 1000,
                };
                let mut words: Vec<u32> = (0..1000).map(|_| rnd() as u32).collect();
                words[3] = 511 | 511 << 10 | 511 << 20; // near the eye
                cases.push((batch, words.clone(), 1 << 33));
                // A first index whose low 32 bits carry into the high ones inside a block of 8.
                cases.push((batch, words, (1 << 32) - 21));
            }
            for (batch, words, first) in &cases {
                for len in [0usize, 1, 7, 8, 9, 63, 64, 65, 200, words.len()] {
                    let (len, words) = (len.min(words.len()), &words[..len.min(words.len())]);
                    let mut want = vec![u64::MAX; n];
                    reference(&f, batch, words, *first, &mut want);
                    landed += want.iter().filter(|&&v| v != u64::MAX).count();
                    let mut got = vec![u64::MAX; n];
                    draw_words(&f, batch, words, *first, &mut Private(&mut got));
                    assert!(got == want, "private, {len} words, first {first}");
                    let mut shared: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(u64::MAX)).collect();
                    draw_words(&f, batch, words, *first, &mut Shared(&shared));
                    assert!(shared.iter_mut().map(|v| *v.get_mut()).eq(want.iter().copied()), "shared, {len} words");
                    let mut got = vec![u64::MAX; n];
                    draw_decoded(&f, batch, words, *first, &mut Private(&mut got));
                    assert!(got == want, "decoded, {len} words");
                    #[cfg(target_arch = "x86_64")]
                    if crate::simd::has_avx2_fma() {
                        let mut got = vec![u64::MAX; n];
                        // SAFETY: this CPU has AVX2 and FMA (asked just above).
                        unsafe { draw_words_avx2::<_, 1>(&f, batch, words, *first, &mut Private(&mut got)) };
                        assert!(got == want, "fused, {len} words");
                        let mut shared: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(u64::MAX)).collect();
                        // SAFETY: as above.
                        unsafe {
                            draw_words_avx2::<_, { super::super::PREFETCH_BLOCKS }>(
                                &f,
                                batch,
                                words,
                                *first,
                                &mut Shared(&shared),
                            )
                        };
                        assert!(
                            shared.iter_mut().map(|v| *v.get_mut()).eq(want.iter().copied()),
                            "fused with prefetch, shared, {len} words"
                        );
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 100 && landed > 10_000, "{checked} runs, {landed} pixels written");
    }
}
