//! Files streamed straight into the CPU backend's arrays: no host cloud, no second copy.
//!
//! How it works: the backend's position (12 bytes a point) and color (4) arrays are reserved for the
//! points the files declare ([`DeviceFiles::planned_points`]); [`pcv_io::device::stream_files`]
//! decodes the files in chunks on all cores and each chunk, as it is ready, is appended to them in
//! place on the calling thread (the decoders' staging slots are the only other copy, a few MiB). Files
//! without colors of their own are then given the elevation ramp over the exact z range the stream
//! saw (the stream colored them over the planned estimate; a host load colors them over the exact
//! one, so both give the same image). The Morton order is computed from the positions without a key
//! per point ([`pcv_io::order::morton_order_positions`]: u32 indices, a radix sort whose scratch
//! is at most 4 bytes a point) and applied one column at a time (x, y, z, color) through one 4-byte
//! scratch column. Host memory at the peak: 16 bytes a point of arrays, the 4-byte order and one 4-byte
//! scratch: 24 bytes a point, and the backend keeps 20 (the order stays, for picking).
use crate::cpu::prepared::Prepared;
use crate::RenderError;
use pcv_io::device::{self, ColorSpec, DeviceFiles, DeviceLoadError};
use pcv_io::Bounds;
use rayon::prelude::*;
use std::time::Instant;

/// The backend's arrays for `files`, in Morton order, with the order (the stream's index of each
/// point; `None` past u32 indices, where the stream's order is kept) and when the stream ended (what
/// follows is the preprocessing).
pub fn stream_files(files: &DeviceFiles) -> Result<(Prepared, Option<Vec<u32>>, Instant), RenderError> {
    let planned = usize::try_from(files.planned_points()).unwrap_or(usize::MAX);
    let oom = |what: &str| {
        RenderError::Load(format!(
            "{}: no host memory for the {what} of {planned} points",
            files.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ))
    };
    let mut positions: Vec<[f32; 3]> = Vec::new();
    let mut colors: Vec<u32> = Vec::new();
    positions.try_reserve_exact(planned).map_err(|_| oom("positions"))?;
    colors.try_reserve_exact(planned).map_err(|_| oom("colors"))?;
    let r = device::stream_files(files, &mut |pts, _| {
        positions.extend(pts.iter().map(|p| p.pos));
        colors.extend(pts.iter().map(|p| p.color_word()));
        Ok(())
    });
    match r {
        Ok(_) => {}
        Err(DeviceLoadError::Load(e)) => return Err(RenderError::Load(e.to_string())),
        Err(DeviceLoadError::Sink(m)) => return Err(RenderError::Load(m)),
    }
    let streamed = Instant::now();
    let bounds = device::local_bounds(files).unwrap_or_else(|| bounds_of(&positions));
    recolor_colorless(files, &bounds, &positions, &mut colors);
    let order =
        (positions.len() < u32::MAX as usize).then(|| pcv_io::order::morton_order_positions(&positions, &bounds));
    if let Some(order) = &order {
        permute_columns(order, &mut positions, &mut colors);
    }
    Ok((Prepared::from_ordered(positions, colors), order, streamed))
}

/// Bounds of the finite positions.
fn bounds_of(positions: &[[f32; 3]]) -> Bounds {
    positions
        .par_chunks(1 << 16)
        .map(|c| {
            let mut b = Bounds::EMPTY;
            for p in c.iter().map(|p| glam::Vec3::from(*p)).filter(|p| p.is_finite()) {
                b.include(p);
            }
            b
        })
        .reduce(|| Bounds::EMPTY, Bounds::union)
}

/// Colors the points of files without colors by the elevation ramp over `bounds` (see the module doc),
/// when the cloud shows the files' colors.
fn recolor_colorless(files: &DeviceFiles, bounds: &Bounds, positions: &[[f32; 3]], colors: &mut [u32]) {
    if !matches!(files.color(), ColorSpec::Rgb { .. }) || bounds.is_empty() {
        return;
    }
    let Some(sources) = files.streamed.lock().ok().and_then(|s| s.as_ref().map(|s| s.sources.clone())) else {
        return;
    };
    let spec = ColorSpec::Rgb { z: (bounds.min.z, bounds.max.z) };
    for s in sources.iter().filter(|s| !s.has_rgb) {
        let (a, b) = (s.points.start as usize, (s.points.end as usize).min(colors.len()));
        if a >= b {
            continue;
        }
        colors[a..b]
            .par_iter_mut()
            .zip(&positions[a..b])
            .for_each(|(c, p)| *c = u32::from_le_bytes(spec.color(None, p[2], 0.0, 0)));
    }
}

/// Puts `positions` and `colors` in `order` (`new[i] = old[order[i]]`), one column at a time through
/// one scratch column: each column's old values are all read before any is overwritten, and the
/// other columns are untouched until their turn.
pub fn permute_columns(order: &[u32], positions: &mut [[f32; 3]], colors: &mut [u32]) {
    let mut scratch: Vec<u32> = Vec::with_capacity(order.len());
    for k in 0..3 {
        let src = &*positions;
        order.par_iter().map(|&i| src[i as usize][k].to_bits()).collect_into_vec(&mut scratch);
        positions.par_iter_mut().zip(&scratch).for_each(|(p, &v)| p[k] = f32::from_bits(v));
    }
    let src = &*colors;
    order.par_iter().map(|&i| src[i as usize]).collect_into_vec(&mut scratch);
    colors.copy_from_slice(&scratch);
}
