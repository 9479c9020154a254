//! Streaming files to the device: decoding and the host-to-device copies overlap, and host memory
//! stays bounded (a few pinned slots and the decoders' staging) whatever the file size.
//!
//! How it works: the device buffer is allocated for the points the files declare (checked against
//! free memory first, as every upload is). [`pcv_io::device::stream_files`] decodes the files on
//! all cores and hands their points over in file order; they are copied into one of [`SLOTS`] pinned
//! (page-locked) host buffers of [`SLOT_POINTS`] points, and a full slot is sent with an asynchronous
//! `cuMemcpyHtoDAsync` on a copy stream of its own, followed by an event. Before a slot is filled again
//! its event is waited on, so the copy engine drains slot `k` while the decoders fill slot `k + 1`.
//! Pinned memory lets the copy run at the link's speed without the driver staging it again. At the
//! end the copy stream is synchronized and the buffer's length set to the points that arrived (files
//! may drop non-finite points, and text files declare lines, not points).
//!
//! With `files.carry_classes` set (a filter the culled passes apply hides a class), each point's class
//! code rides along in a pinned byte slot beside its point slot, copied into a device buffer of a byte
//! a point at the same offsets ([`upload_files`] returns it; the table turns it into its class column).
//!
//! Several GPUs (`--gpus`, [`upload_files_split`]): the files are decoded once and point `i` of the
//! stream goes to the device whose range holds `i` (contiguous, batch-aligned ranges of the files'
//! order: whole tiles of a tile set, consecutive flight lines of a scan); each device has its own
//! pinned slots and copy stream, so every device's copies run at once from the one sink thread.
use super::context::cuda_error;
use super::memory::DeviceBuffer;
use super::upload::alloc_points;
use crate::gpu_data::Point;
use crate::RenderError;
use cudarc::driver::{result, CudaContext, CudaEvent, CudaStream};
use pcv_io::device::{stream_files, DeviceFiles, DeviceLoadError};
use std::ops::Range;
use std::sync::Arc;

/// Pinned staging buffers.
pub const SLOTS: usize = 4;
/// Points per pinned buffer (16 MiB).
pub const SLOT_POINTS: usize = 1 << 20;

/// A page-locked host buffer of `cap` elements (points here; bytes for the level-of-detail pool's
/// staging, `slot_upload.rs`); freed on drop.
pub(super) struct Pinned<T: bytemuck::Pod = Point> {
    ptr: *mut T,
    cap: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: a `Pinned` owns its allocation as a `Box<[T]>` owns its own (no aliases: elements are reached
// only through `&self`/`&mut self`), and freeing it binds the context first, which any thread may do. So
// moving one to another thread (a rasterizer rendering on a GPU's thread, `render/multi.rs`) is sound.
unsafe impl<T: bytemuck::Pod> Send for Pinned<T> {}

impl<T: bytemuck::Pod> Pinned<T> {
    pub(super) fn new(ctx: &Arc<CudaContext>, cap: usize) -> Result<Pinned<T>, RenderError> {
        ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let bytes = cap * std::mem::size_of::<T>();
        // SAFETY: the context is current; the returned buffer is owned by this value alone and freed
        // once, in Drop; it is only read through slices of the points written into it.
        let ptr = unsafe { result::malloc_host(bytes, 0) }
            .map_err(cuda_error(format!("cuMemHostAlloc of {bytes} bytes")))? as *mut T;
        Ok(Pinned { ptr, cap, ctx: ctx.clone() })
    }

    pub(super) fn capacity(&self) -> usize {
        self.cap
    }

    /// Elements `at..at + len` (written before).
    ///
    /// # Safety
    /// Those elements (`at + len <= cap`) must have been written.
    pub(super) unsafe fn filled_at(&self, at: usize, len: usize) -> &[T] {
        // SAFETY: the caller wrote elements `at..at + len` (within `cap`) of `ptr`, a live allocation of
        // `cap` elements.
        unsafe { std::slice::from_raw_parts(self.ptr.add(at), len) }
    }

    /// The first `len` points (written before).
    ///
    /// # Safety
    /// The first `len <= cap` points must have been written.
    unsafe fn filled(&self, len: usize) -> &[T] {
        // SAFETY: the caller wrote `len <= cap` points from `ptr`, a live allocation of `cap` points.
        unsafe { std::slice::from_raw_parts(self.ptr, len) }
    }

    /// Copies `src` to points `at..at + src.len()` (within `cap`), large copies on rayon's threads: one
    /// thread copied about 6 GB/s into pinned memory, which held the 1B-point LAS stream to 386 M
    /// points/s on the H200 machine while its 16 cores decoded at 669 M/s.
    pub(super) fn write(&mut self, at: usize, src: &[T])
    where
        T: Sync,
    {
        use rayon::prelude::*;
        // About 1 MiB a piece, whatever the element.
        let piece_len = ((1usize << 20) / std::mem::size_of::<T>().max(1)).max(1);
        assert!(at + src.len() <= self.cap, "pinned slot overflow");
        // Addresses cross threads as integers (raw pointers are not Send).
        let dst = self.ptr as usize + at * std::mem::size_of::<T>();
        src.par_chunks(piece_len).enumerate().with_min_len(2).for_each(|(k, piece)| {
            // SAFETY: piece k goes to elements at + k·piece_len .. + piece.len(), inside the allocation (the
            // whole range was asserted above) and disjoint from every other piece's; `src` is host memory
            // of another allocation; no copy reading this slot is in flight (the caller waited for its
            // event), and `&mut self` keeps other writers out until every piece is done.
            unsafe { std::ptr::copy_nonoverlapping(piece.as_ptr(), (dst as *mut T).add(k * piece_len), piece.len()) };
        });
    }
}

impl<T: bytemuck::Pod> Drop for Pinned<T> {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: `ptr` came from cuMemHostAlloc and is freed once; every copy reading it was waited on
        // (the upload synchronizes its copy stream before the slots drop).
        self.ctx.record_err(unsafe { result::free_host(self.ptr as *mut std::ffi::c_void) });
    }
}

/// One staging slot: its buffer, the points in it (and their class codes when they are carried), and
/// the event that marks its last copy done.
struct Slot {
    host: Pinned,
    codes: Option<Pinned<u8>>,
    len: usize,
    sent: CudaEvent,
    in_flight: bool,
}

/// The copy side of a streaming upload to one device.
struct Uploader<'a> {
    dst: &'a mut DeviceBuffer<Point>,
    /// The class codes' device buffer (as long as `dst`), when they are carried.
    codes_dst: Option<&'a mut DeviceBuffer<u8>>,
    ctx: Arc<CudaContext>,
    copy: Arc<CudaStream>,
    slots: Vec<Slot>,
    current: usize,
    /// Points sent or in the current slot.
    at: usize,
}

impl<'a> Uploader<'a> {
    fn new(
        ctx: &Arc<CudaContext>,
        dst: &'a mut DeviceBuffer<Point>,
        codes_dst: Option<&'a mut DeviceBuffer<u8>>,
    ) -> Result<Self, RenderError> {
        ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let copy = ctx.new_stream().map_err(cuda_error("cuStreamCreate for the upload copies"))?;
        let carry = codes_dst.is_some();
        let slots = (0..SLOTS)
            .map(|_| {
                Ok(Slot {
                    host: Pinned::new(ctx, SLOT_POINTS)?,
                    codes: if carry { Some(Pinned::new(ctx, SLOT_POINTS)?) } else { None },
                    len: 0,
                    sent: ctx.new_event(None).map_err(cuda_error("cuEventCreate"))?,
                    in_flight: false,
                })
            })
            .collect::<Result<Vec<_>, RenderError>>()?;
        Ok(Uploader { dst, codes_dst, ctx: ctx.clone(), copy, slots, current: 0, at: 0 })
    }

    /// Stages `pts` (and their class `codes` when carried; empty: class 0).
    fn push(&mut self, mut pts: &[Point], mut codes: &[u8]) -> Result<(), RenderError> {
        const ZEROS: [u8; 4096] = [0; 4096];
        while !pts.is_empty() {
            let slot = &mut self.slots[self.current];
            if slot.in_flight {
                slot.sent.synchronize().map_err(cuda_error("cuEventSynchronize on a staging slot"))?;
                slot.in_flight = false;
            }
            let n = pts.len().min(SLOT_POINTS - slot.len);
            slot.host.write(slot.len, &pts[..n]);
            if let Some(c) = &mut slot.codes {
                if codes.len() >= n {
                    c.write(slot.len, &codes[..n]);
                    codes = &codes[n..];
                } else {
                    // A file without classification: class 0.
                    for k in (0..n).step_by(ZEROS.len()) {
                        c.write(slot.len + k, &ZEROS[..(n - k).min(ZEROS.len())]);
                    }
                }
            }
            slot.len += n;
            pts = &pts[n..];
            if slot.len == SLOT_POINTS {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Sends the current slot's points and moves to the next slot.
    fn flush(&mut self) -> Result<(), RenderError> {
        let slot = &mut self.slots[self.current];
        if slot.len == 0 {
            return Ok(());
        }
        if self.at + slot.len > self.dst.len() {
            return Err(RenderError::Cuda {
                context: "streaming upload".into(),
                message: format!("the files gave more than the {} points they declared", self.dst.len()),
            });
        }
        // Several devices are fed from one thread: the copy is enqueued in its own device's context.
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let dst = self.dst.ptr() + (self.at * std::mem::size_of::<Point>()) as u64;
        // SAFETY: `at + len <= dst.len()` (checked above): the destination range is inside the live
        // buffer; the source is the slot's first `len` written points, in pinned memory that stays
        // untouched until `sent` (recorded right after on the same stream) has completed; the copy
        // stream belongs to the buffer's context, which is current.
        unsafe { result::memcpy_htod_async(dst, slot.host.filled(slot.len), self.copy.cu_stream()) }
            .map_err(cuda_error("cuMemcpyHtoDAsync from a staging slot"))?;
        if let (Some(codes), Some(codes_dst)) = (&slot.codes, &self.codes_dst) {
            // SAFETY: as above: `codes_dst` holds as many bytes as `dst` holds points, so `at + len` is
            // inside it; the slot's first `len` codes were written with its points.
            unsafe {
                result::memcpy_htod_async(
                    codes_dst.ptr() + self.at as u64,
                    codes.filled(slot.len),
                    self.copy.cu_stream(),
                )
            }
            .map_err(cuda_error("cuMemcpyHtoDAsync of class codes from a staging slot"))?;
        }
        slot.sent.record(&self.copy).map_err(cuda_error("cuEventRecord after a staging copy"))?;
        slot.in_flight = true;
        self.at += slot.len;
        slot.len = 0;
        self.current = (self.current + 1) % self.slots.len();
        Ok(())
    }

    /// Sends what is left and waits for every copy (whatever happened before: the slots must not be
    /// freed under a copy). Returns the points that arrived.
    fn finish(&mut self) -> Result<usize, RenderError> {
        let flushed = self.flush();
        let synced = self.copy.synchronize().map_err(cuda_error("cuStreamSynchronize after the upload copies"));
        flushed?;
        synced?;
        Ok(self.at)
    }
}

/// Routes the stream's points to the devices by their index in the stream: device `k` takes the
/// points of `ranges[k]` (contiguous, in order).
struct Router<'a> {
    ups: Vec<Uploader<'a>>,
    ranges: Vec<Range<u64>>,
    /// Points of the stream seen so far.
    seen: u64,
}

impl Router<'_> {
    fn push(&mut self, mut pts: &[Point], codes: &[u8]) -> Result<(), RenderError> {
        while !pts.is_empty() {
            // The range holding point `seen`; points past the last range go to the last device (the
            // uploader refuses more than its buffer holds).
            let k = self.ranges.iter().position(|r| self.seen < r.end).unwrap_or(self.ranges.len() - 1);
            let room = self.ranges[k].end.saturating_sub(self.seen);
            let n = if room == 0 { pts.len() } else { pts.len().min(usize::try_from(room).unwrap_or(usize::MAX)) };
            // Class codes are carried only to a single device (one range).
            self.ups[k].push(&pts[..n], if self.ranges.len() == 1 { codes } else { &[] })?;
            self.seen += n as u64;
            pts = &pts[n..];
        }
        Ok(())
    }
}

/// Decodes `files` into a new device buffer (see the module doc). Returns the buffer, holding exactly
/// the points that arrived, and with `files.carry_classes` their class codes (a byte a point).
pub fn upload_files(ctx: &Arc<CudaContext>, files: &DeviceFiles) -> Result<Streamed, RenderError> {
    let whole = 0..files.planned_points();
    let carry = files.carry_classes.load(std::sync::atomic::Ordering::Relaxed);
    let mut out = upload_ranges(std::slice::from_ref(ctx), files, std::slice::from_ref(&whole), carry)?;
    Ok(out.remove(0))
}

/// Decodes `files` once and sends the points of the stream's index range `ranges[k]` to a new buffer
/// on device `ctxs[k]` (`--gpus`: each device takes a contiguous part of the files' order; the copies
/// of every device run at once, on their own copy streams, while the decoders go on). Each buffer
/// holds exactly the points of its range that arrived (files may drop non-finite points).
pub fn upload_files_split(
    ctxs: &[Arc<CudaContext>],
    files: &DeviceFiles,
    ranges: &[Range<u64>],
) -> Result<Vec<DeviceBuffer<Point>>, RenderError> {
    Ok(upload_ranges(ctxs, files, ranges, false)?.into_iter().map(|(p, _)| p).collect())
}

/// A streamed device buffer and its class codes, when carried.
type Streamed = (DeviceBuffer<Point>, Option<DeviceBuffer<u8>>);

/// [`upload_files_split`], with each buffer's class codes when `carry` (one device only).
fn upload_ranges(
    ctxs: &[Arc<CudaContext>],
    files: &DeviceFiles,
    ranges: &[Range<u64>],
    carry: bool,
) -> Result<Vec<Streamed>, RenderError> {
    if ctxs.is_empty() || ctxs.len() != ranges.len() {
        return Err(RenderError::Cuda {
            context: "streaming upload".into(),
            message: format!("{} devices for {} ranges", ctxs.len(), ranges.len()),
        });
    }
    let carry = carry && ctxs.len() == 1;
    let mut dsts =
        ctxs.iter().zip(ranges).map(|(ctx, r)| alloc_points(ctx, r.end - r.start)).collect::<Result<Vec<_>, _>>()?;
    let mut codes = ctxs
        .iter()
        .zip(ranges)
        .map(|(ctx, r)| match carry {
            true => DeviceBuffer::<u8>::alloc(ctx, ((r.end - r.start) as usize).max(1), "the streamed class codes")
                .map(Some),
            false => Ok(None),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let ups = ctxs
        .iter()
        .zip(dsts.iter_mut())
        .zip(codes.iter_mut())
        .map(|((ctx, dst), c)| Uploader::new(ctx, dst, c.as_mut()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut router = Router { ups, ranges: ranges.to_vec(), seen: 0 };
    let r = stream_files(files, &mut |pts, c| router.push(pts, c).map_err(|e| e.to_string()));
    // Every copy must finish before the slots are freed, whatever happened.
    let finished: Vec<Result<usize, RenderError>> = router.ups.iter_mut().map(|u| u.finish()).collect();
    drop(router);
    match r {
        Ok(_) => {}
        Err(DeviceLoadError::Load(e)) => {
            return Err(RenderError::Cuda { context: "streaming the files".into(), message: e.to_string() })
        }
        Err(DeviceLoadError::Sink(m)) => {
            return Err(RenderError::Cuda { context: "streaming upload".into(), message: m })
        }
    }
    let mut out = Vec::with_capacity(dsts.len());
    for ((mut dst, mut c), arrived) in dsts.into_iter().zip(codes).zip(finished) {
        let arrived = arrived?;
        dst.truncate(arrived);
        if let Some(c) = &mut c {
            c.truncate(arrived);
        }
        out.push((dst, c));
    }
    Ok(out)
}
