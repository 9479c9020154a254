//! Points in someone else's arrays: what an array is (pointer, shape, strides, dtype), which layouts
//! pcv reads, and the errors that say why it does not read one.
//!
//! How it works: a caller (the Python module, `py/`) describes each array it was handed — from
//! `__cuda_array_interface__`, `__dlpack__` or numpy's `__array_interface__` — as an [`ArrayDesc`]:
//! the address of element [0, 0], the shape, the strides in bytes (none: C-contiguous) and the dtype.
//! [`ExternalPoints::new`] checks the two arrays against what the kernels read and turns them into
//! layouts: positions float32 (N, 3) or (N, 4) with any strides (the fourth column is not read), colours
//! uint8 (N, 3) / (N, 4), packed RGBA8 words uint32 (N,) (r in the low byte) or float32 (N, 3) / (N, 4)
//! in 0..1, or none (every point [`DEFAULT_COLOR`]). A layout is a base pointer and two signed strides
//! in bytes, row (point to point) and column (coordinate or channel), plus the byte span the array
//! covers, so that device memory can be checked against its allocation (`cuda/external.rs`) and host
//! memory viewed as a slice ([`ExternalPoints::host_views`]).
//!
//! Nothing is copied for any of these layouts: `kernels/external.cu` reads positions at their strides
//! (C-contiguous (N, 3) ones through `kernels/vis.cu`'s own pass) and converts each visible point's
//! colour as the resolve reads it. Only point size by scatter (`pcv_vis_disk`, which reads packed
//! positions) packs positions that are not (N, 3) C-contiguous, into a buffer the backend keeps.
//! Sorted and batched modes (`culled`, `quant`) need the upload's spatial sort, so arrays render in
//! `vis`.
use super::twins::external::{HostColors, Strided};

/// The colour of every point when no colours are given: opaque white (RGBA8, r in the low byte).
pub const DEFAULT_COLOR: u32 = 0xffff_ffff;

/// The most points one frame indexes (a visibility word's payload 2^34 - 1 marks an empty pixel).
pub const MAX_POINTS: u64 = crate::gpu_data::EMPTY_PAYLOAD - 1;

/// An element type as numpy's array interface spells it: a kind (`f` float, `u` unsigned, `i` signed,
/// `b` boolean, ...) and a size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dtype {
    pub kind: char,
    pub bytes: u8,
}

impl Dtype {
    pub const F32: Dtype = Dtype { kind: 'f', bytes: 4 };
    pub const U8: Dtype = Dtype { kind: 'u', bytes: 1 };
    pub const U32: Dtype = Dtype { kind: 'u', bytes: 4 };

    /// Parses a typestr such as `<f4`, `|u1` or `=u4` (big-endian types are not read: `None`).
    pub fn from_typestr(s: &str) -> Option<Dtype> {
        let mut c = s.chars();
        let order = c.next()?;
        let kind = c.next()?;
        let bytes: u8 = c.as_str().parse().ok()?;
        let native = order == '<' || order == '|' || order == '=' || (bytes == 1 && order == '>');
        native.then_some(Dtype { kind, bytes })
    }
}

impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.kind {
            'f' => "float",
            'u' => "uint",
            'i' => "int",
            'b' => return f.write_str("bool"),
            'c' => "complex",
            k => return write!(f, "'{k}{}'", self.bytes),
        };
        write!(f, "{name}{}", 8 * self.bytes as u32)
    }
}

/// One array as its producer describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayDesc {
    /// The address of element [0, 0] (host or device).
    pub ptr: u64,
    pub shape: Vec<u64>,
    /// Bytes between neighbours along each dimension (`None`: C-contiguous).
    pub strides_bytes: Option<Vec<i64>>,
    pub dtype: Dtype,
}

impl ArrayDesc {
    /// The strides in bytes, C-contiguous ones when none were given.
    pub fn strides(&self) -> Vec<i64> {
        match &self.strides_bytes {
            Some(s) => s.clone(),
            None => {
                let mut s = vec![0i64; self.shape.len()];
                let mut step = self.dtype.bytes as i64;
                for d in (0..self.shape.len()).rev() {
                    s[d] = step;
                    step = step.saturating_mul(self.shape[d] as i64);
                }
                s
            }
        }
    }

    /// The bytes the array covers, relative to `ptr`: (first byte's offset, length); `None` when empty.
    pub fn byte_span(&self) -> Option<(i64, u64)> {
        if self.shape.contains(&0) {
            return None;
        }
        let (mut lo, mut hi) = (0i64, 0i64);
        for (&n, &s) in self.shape.iter().zip(&self.strides()) {
            let far = (n as i64 - 1).saturating_mul(s);
            lo = lo.saturating_add(far.min(0));
            hi = hi.saturating_add(far.max(0));
        }
        Some((lo, (hi - lo) as u64 + self.dtype.bytes as u64))
    }
}

/// An array of rows as the kernels read it: element (i, k) at `ptr + i * row_bytes + k * col_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridedLayout {
    pub ptr: u64,
    pub rows: u64,
    pub row_bytes: i64,
    pub col_bytes: i64,
    /// What [`ArrayDesc::byte_span`] gave (`None`: no rows).
    pub span: Option<(i64, u64)>,
}

/// How colours are stored (`PCV_COLOR_*` in kernels/external.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ColorKind {
    /// No array: every point has the constant.
    Constant = 0,
    /// uint32 (N,): RGBA8 words, r in the low byte.
    Rgba32 = 1,
    /// uint8 (N, 3); alpha 255.
    U8x3 = 2,
    /// uint8 (N, 4).
    U8x4 = 3,
    /// float32 (N, 3) in 0..1; alpha 255.
    F32x3 = 4,
    /// float32 (N, 4) in 0..1.
    F32x4 = 5,
}

/// The colours of [`ExternalPoints`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColorsLayout {
    pub kind: ColorKind,
    /// Ignored for [`ColorKind::Constant`].
    pub array: StridedLayout,
    /// The colour of every point for [`ColorKind::Constant`].
    pub constant: u32,
}

/// Why an array cannot be read; each names the argument.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExternalError {
    #[error("{arg}: expected {expected}, got dtype {got}")]
    Dtype { arg: &'static str, expected: &'static str, got: String },
    #[error("{arg}: expected shape {expected}, got {got:?}")]
    Shape { arg: &'static str, expected: String, got: Vec<u64> },
    #[error("{arg}: {got} rows, but points has {expected}")]
    Length { arg: &'static str, expected: u64, got: u64 },
    #[error("{arg}: {what} is not a multiple of 4 bytes (float32 and uint32 arrays must be 4-byte aligned)")]
    Misaligned { arg: &'static str, what: String },
    #[error("{arg}: {got} points; one frame indexes at most {max}")]
    TooMany { arg: &'static str, got: u64, max: u64 },
}

/// Two arrays the kernels read as they are: positions and colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExternalPoints {
    pub positions: StridedLayout,
    pub colors: ColorsLayout,
}

fn layout(desc: &ArrayDesc) -> StridedLayout {
    let s = desc.strides();
    StridedLayout {
        ptr: desc.ptr,
        rows: desc.shape.first().copied().unwrap_or(0),
        row_bytes: s.first().copied().unwrap_or(0),
        col_bytes: s.get(1).copied().unwrap_or(0),
        span: desc.byte_span(),
    }
}

fn check_aligned(arg: &'static str, l: &StridedLayout) -> Result<(), ExternalError> {
    if l.rows == 0 {
        return Ok(());
    }
    let bad = |what: String| Err(ExternalError::Misaligned { arg, what });
    if !l.ptr.is_multiple_of(4) {
        return bad(format!("the address {:#x}", l.ptr));
    }
    if l.row_bytes % 4 != 0 || l.col_bytes % 4 != 0 {
        return bad(format!("a stride of ({}, {}) bytes", l.row_bytes, l.col_bytes));
    }
    Ok(())
}

impl ExternalPoints {
    /// Checks `points` (argument name `points`) and `colors` (`colors`) and makes their layouts.
    pub fn new(points: &ArrayDesc, colors: Option<&ArrayDesc>) -> Result<ExternalPoints, ExternalError> {
        const POS: &str = "points";
        const COL: &str = "colors";
        if points.dtype != Dtype::F32 {
            return Err(ExternalError::Dtype {
                arg: POS,
                expected: "float32 positions",
                got: points.dtype.to_string(),
            });
        }
        if points.shape.len() != 2 || !(points.shape[1] == 3 || points.shape[1] == 4) {
            return Err(ExternalError::Shape {
                arg: POS,
                expected: "(N, 3) or (N, 4)".into(),
                got: points.shape.clone(),
            });
        }
        let positions = layout(points);
        check_aligned(POS, &positions)?;
        if positions.rows > MAX_POINTS {
            return Err(ExternalError::TooMany { arg: POS, got: positions.rows, max: MAX_POINTS });
        }
        let n = positions.rows;
        let Some(c) = colors else {
            let none = StridedLayout { ptr: 0, rows: 0, row_bytes: 0, col_bytes: 0, span: None };
            return Ok(ExternalPoints {
                positions,
                colors: ColorsLayout { kind: ColorKind::Constant, array: none, constant: DEFAULT_COLOR },
            });
        };
        let expected = "uint8 (N, 3) or (N, 4), uint32 (N,) packed RGBA8, or float32 (N, 3) or (N, 4) in 0..1";
        let kind = match (c.dtype, c.shape.as_slice()) {
            (Dtype::U32, [_]) => ColorKind::Rgba32,
            (Dtype::U8, [_, 3]) => ColorKind::U8x3,
            (Dtype::U8, [_, 4]) => ColorKind::U8x4,
            (Dtype::F32, [_, 3]) => ColorKind::F32x3,
            (Dtype::F32, [_, 4]) => ColorKind::F32x4,
            (Dtype::U32 | Dtype::U8 | Dtype::F32, _) => {
                return Err(ExternalError::Shape { arg: COL, expected: expected.into(), got: c.shape.clone() })
            }
            (d, _) => return Err(ExternalError::Dtype { arg: COL, expected, got: d.to_string() }),
        };
        let array = layout(c);
        if array.rows != n {
            return Err(ExternalError::Length { arg: COL, expected: n, got: array.rows });
        }
        if c.dtype.bytes == 4 {
            check_aligned(COL, &array)?;
        }
        Ok(ExternalPoints { positions, colors: ColorsLayout { kind, array, constant: DEFAULT_COLOR } })
    }

    pub fn num_points(&self) -> u64 {
        self.positions.rows
    }

    /// Whether the positions are C-contiguous (N, 3) float32: what `pcv_vis` and `pcv_vis_disk` read.
    pub fn positions_packed(&self) -> bool {
        self.positions.rows == 0 || (self.positions.row_bytes == 12 && self.positions.col_bytes == 4)
    }

    /// Views of both arrays in host memory, for the CPU backend.
    ///
    /// # Safety
    /// Both arrays must be host memory that holds every byte of their spans and stays alive and
    /// unwritten for `'a`.
    pub unsafe fn host_views<'a>(&self) -> (Strided<'a>, HostColors<'a>) {
        // SAFETY: forwarded from this function's contract.
        let positions = unsafe { strided(&self.positions) };
        let colors = match self.colors.kind {
            ColorKind::Constant => None,
            // SAFETY: as above.
            _ => Some(unsafe { strided(&self.colors.array) }),
        };
        (positions, HostColors { kind: self.colors.kind, array: colors, constant: self.colors.constant })
    }
}

/// A host slice over `l`'s span.
///
/// # Safety
/// As [`ExternalPoints::host_views`].
unsafe fn strided<'a>(l: &StridedLayout) -> Strided<'a> {
    match l.span {
        Some((first, len)) => {
            let start = (l.ptr as i64).wrapping_add(first) as usize as *const u8;
            // SAFETY: the caller promises that the span's `len` bytes from `start` are live host memory
            // for 'a, unwritten while borrowed.
            let bytes = unsafe { std::slice::from_raw_parts(start, len as usize) };
            Strided { bytes, base: (-first) as usize, row: l.row_bytes, col: l.col_bytes }
        }
        None => Strided { bytes: &[], base: 0, row: 0, col: 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(shape: &[u64], strides: Option<&[i64]>, dtype: Dtype) -> ArrayDesc {
        ArrayDesc { ptr: 0x1000, shape: shape.to_vec(), strides_bytes: strides.map(<[i64]>::to_vec), dtype }
    }

    #[test]
    fn typestrs_and_names() {
        assert_eq!(Dtype::from_typestr("<f4"), Some(Dtype::F32));
        assert_eq!(Dtype::from_typestr("|u1"), Some(Dtype::U8));
        assert_eq!(Dtype::from_typestr(">f4"), None);
        assert_eq!(Dtype::from_typestr("<f8").unwrap().to_string(), "float64");
        assert_eq!(Dtype::from_typestr("|b1").unwrap().to_string(), "bool");
    }

    #[test]
    fn spans_cover_negative_and_padded_strides() {
        assert_eq!(desc(&[10, 3], None, Dtype::F32).byte_span(), Some((0, 120)));
        // Every other row of an (N, 4) array, reversed.
        assert_eq!(desc(&[5, 3], Some(&[-32, 4]), Dtype::F32).byte_span(), Some((-128, 140)));
        assert_eq!(desc(&[0, 3], None, Dtype::F32).byte_span(), None);
    }

    #[test]
    fn layouts_and_errors_name_the_argument() {
        let p = desc(&[7, 4], None, Dtype::F32);
        let e = ExternalPoints::new(&p, None).unwrap();
        assert_eq!((e.positions.row_bytes, e.positions.col_bytes, e.num_points()), (16, 4, 7));
        assert!(!e.positions_packed());
        assert_eq!(e.colors.kind, ColorKind::Constant);
        assert!(ExternalPoints::new(&desc(&[7, 3], None, Dtype::F32), None).unwrap().positions_packed());
        let c = ExternalPoints::new(&p, Some(&desc(&[7, 3], None, Dtype::U8))).unwrap();
        assert_eq!((c.colors.kind, c.colors.array.row_bytes, c.colors.array.col_bytes), (ColorKind::U8x3, 3, 1));

        let err = |p: &ArrayDesc, c: Option<&ArrayDesc>| ExternalPoints::new(p, c).unwrap_err().to_string();
        assert_eq!(
            err(&desc(&[7, 3], None, Dtype { kind: 'f', bytes: 8 }), None),
            "points: expected float32 positions, got dtype float64"
        );
        assert!(err(&desc(&[7], None, Dtype::F32), None).starts_with("points: expected shape (N, 3) or (N, 4)"));
        assert_eq!(err(&p, Some(&desc(&[6, 3], None, Dtype::U8))), "colors: 6 rows, but points has 7");
        assert!(err(&p, Some(&desc(&[7, 3], None, Dtype { kind: 'i', bytes: 8 }))).contains("got dtype int64"));
        assert!(err(&p, Some(&desc(&[7, 2], None, Dtype::U8))).starts_with("colors: expected shape"));
        let odd = ArrayDesc { ptr: 0x1002, ..p.clone() };
        assert!(err(&odd, None).contains("not a multiple of 4 bytes"));
        assert!(err(&desc(&[7, 3], Some(&[13, 4]), Dtype::F32), None).contains("stride of (13, 4) bytes"));
    }
}
