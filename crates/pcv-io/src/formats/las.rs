//! LAS 1.0–1.4 and LAZ (LASzip-compressed LAS, COPC included), point formats 0–10.
//!
//! How it works: the public header (375 bytes at most) and the variable-length records are parsed here,
//! field by field at their ASPRS offsets, and every count and offset is checked against the file's
//! size. Point records are decoded by one function for both: x, y, z are the stored i32 times the
//! header's scale plus its offset (in f64), intensity is the u16 at byte 12, classification is the low 5
//! bits of byte 15 (formats 0–5) or byte 16 (formats 6–10), and RGB is at byte 20, 28 or 30 depending on
//! the format. 16-bit colors become 8-bit by `>> 8`, except in files that store 8-bit values in the
//! 16-bit fields (no component above 255): the first records (LAS) or the first chunk (LAZ) decide, and
//! the whole file is checked while decoding (a wrong guess decodes the colors again).
//!
//! LAS: the records are decoded in parallel straight from the memory-mapped file
//! ([`super::decode_fixed`]). LAZ: the LASzip VLR and the chunk table (fixed-size chunks, or
//! variable-size ones as in COPC) give each chunk's bytes and points; each chunk is decompressed on its
//! own core by the pcv-laz crate ([`pcv_laz::decode_chunk`]: the point-wise formats 0–3 and the layered
//! 6–8 by its own decoders, the `laz` crate's records bit for bit, faster, everything else by the `laz`
//! crate; skipping the fields pcv does not use where the layered formats 6–10 allow it) into a
//! per-thread buffer and decoded from there into its place in the output.
//! A LAZ file may declare at most 2048 bytes of point records per byte of file (real files: 5–15),
//! which bounds what a lying header can make pcv allocate; in the layered formats 6–10 pcv-laz checks
//! the size table at the start of each chunk against the chunk's bytes before `laz` allocates its layers.
use super::las_extra::ExtraBytes;
use super::{
    record_jobs, record_range, sample_bounds, sample_indices, Columns, DBounds, Decoded, Field, FieldSet, Fields,
    FileInfo, FormatError, ReadOptions, Rec,
};
use crate::point::Point;
use crate::stream::{ChunkSource, Precision, Staging, StreamStats, Verdict};
use laz::laszip::ChunkTableEntry;
use std::sync::atomic::{AtomicBool, Ordering};

/// Record sizes of point formats 0–10.
pub const FORMAT_SIZES: [u16; 11] = [20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67];
/// LAZ files may declare at most this many bytes of point records per byte of the file (real files:
/// 5–15; LASzip's best case, constant points, stays well below this).
const MAX_LAZ_RATIO: u64 = 2048;

/// The public header.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    pub version: (u8, u8),
    pub header_size: u16,
    pub data_offset: u32,
    pub num_vlrs: u32,
    /// Point format 0..=10.
    pub format: u8,
    pub compressed: bool,
    pub record_len: u16,
    pub count: u64,
    /// The byte offset `count` was read from (107, the legacy count, or 247 in LAS 1.4).
    pub count_at: usize,
    pub scale: [f64; 3],
    pub offset: [f64; 3],
    pub min: [f64; 3],
    pub max: [f64; 3],
    pub system: String,
    pub software: String,
    /// The fields the Extra Bytes VLR describes after the format's own bytes (empty until the VLRs are
    /// read: [`open`] fills it).
    pub extras: Vec<ExtraBytes>,
    /// What could not be read of those descriptors (for `pcv info`).
    pub extra_notes: Vec<String>,
}

/// A variable-length record's identity and where its data is.
#[derive(Clone, Debug)]
pub struct Vlr {
    pub user_id: String,
    pub record_id: u16,
    pub data: std::ops::Range<usize>,
}

fn u16le(d: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(super::bytes(d, o))
}
fn u32le(d: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(super::bytes(d, o))
}
fn u64le(d: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(super::bytes(d, o))
}
fn f64le(d: &[u8], o: usize) -> f64 {
    f64::from_le_bytes(super::bytes(d, o))
}
fn text(d: &[u8]) -> String {
    String::from_utf8_lossy(d).trim_end_matches(['\0', ' ']).to_string()
}

/// Whether `data` starts like a LAS or LAZ file.
pub fn sniff(data: &[u8]) -> bool {
    data.starts_with(b"LASF")
}

/// Parses and checks the public header.
pub fn parse_header(data: &[u8]) -> Result<Header, FormatError> {
    if !sniff(data) {
        return Err(FormatError::at_byte(0, "not a LAS file: it does not start with 'LASF'"));
    }
    if data.len() < 227 {
        return Err(FormatError::at_byte(
            data.len(),
            format!("the file ends inside the LAS header ({} of at least 227 bytes)", data.len()),
        ));
    }
    let version = (data[24], data[25]);
    if version.0 != 1 || version.1 > 4 {
        return Err(FormatError::at_byte(24, format!("LAS version {}.{} is not 1.0–1.4", version.0, version.1)));
    }
    let header_size = u16le(data, 94);
    let min_header = match version.1 {
        0..=2 => 227,
        3 => 235,
        _ => 375,
    };
    if (header_size as usize) < min_header || header_size as usize > data.len() {
        return Err(FormatError::at_byte(
            94,
            format!("header size {header_size} is impossible for LAS 1.{} in a {}-byte file", version.1, data.len()),
        ));
    }
    let data_offset = u32le(data, 96);
    let num_vlrs = u32le(data, 100);
    let format_byte = data[104];
    let compressed = format_byte & 0xc0 != 0;
    let format = format_byte & 0x3f;
    if format > 10 {
        return Err(FormatError::at_byte(104, format!("point format {format} is not 0–10")));
    }
    let record_len = u16le(data, 105);
    if record_len < FORMAT_SIZES[format as usize] {
        return Err(FormatError::at_byte(
            105,
            format!(
                "point record length {record_len} is shorter than point format {format}'s {} bytes",
                FORMAT_SIZES[format as usize]
            ),
        ));
    }
    let legacy = u32le(data, 107) as u64;
    let (count, count_at) = if version.1 >= 4 && header_size >= 255 {
        match u64le(data, 247) {
            0 => (legacy, 107),
            n => (n, 247),
        }
    } else {
        (legacy, 107)
    };
    let v3 = |o: usize| [f64le(data, o), f64le(data, o + 8), f64le(data, o + 16)];
    let scale = v3(131);
    let offset = v3(155);
    for (k, axis) in ["x", "y", "z"].iter().enumerate() {
        if !(scale[k].is_finite() && scale[k] != 0.0) {
            return Err(FormatError::at_byte(
                131 + 8 * k,
                format!("{axis} scale {} is not a finite non-zero number", scale[k]),
            ));
        }
        if !offset[k].is_finite() {
            return Err(FormatError::at_byte(155 + 8 * k, format!("{axis} offset {} is not finite", offset[k])));
        }
    }
    let max = [f64le(data, 179), f64le(data, 195), f64le(data, 211)];
    let min = [f64le(data, 187), f64le(data, 203), f64le(data, 219)];
    if (data_offset as usize) < header_size as usize || data_offset as usize > data.len() {
        return Err(FormatError::at_byte(
            96,
            format!("offset to point data {data_offset} is outside the {}-byte file", data.len()),
        ));
    }
    Ok(Header {
        version,
        header_size,
        data_offset,
        num_vlrs,
        format,
        compressed,
        record_len,
        count,
        count_at,
        scale,
        offset,
        min,
        max,
        system: text(&data[26..58]),
        software: text(&data[58..90]),
        extras: Vec::new(),
        extra_notes: Vec::new(),
    })
}

/// The VLRs between the header and the point data.
pub fn vlrs(data: &[u8], h: &Header) -> Result<Vec<Vlr>, FormatError> {
    let mut at = h.header_size as usize;
    let end = h.data_offset as usize;
    let mut out = Vec::new();
    for k in 0..h.num_vlrs {
        if at + 54 > end {
            return Err(FormatError::at_byte(
                at,
                format!("VLR {k} of {} runs past the start of the point data (byte {end})", h.num_vlrs),
            ));
        }
        let len = u16le(data, at + 20) as usize;
        let data_start = at + 54;
        if data_start + len > end {
            return Err(FormatError::at_byte(
                at,
                format!("VLR {k} ({len} bytes) runs past the start of the point data (byte {end})"),
            ));
        }
        out.push(Vlr {
            user_id: text(&data[at + 2..at + 18]),
            record_id: u16le(data, at + 18),
            data: data_start..data_start + len,
        });
        at = data_start + len;
    }
    Ok(out)
}

/// Where a format keeps its fields.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    pub rgb: Option<usize>,
    pub class_byte: usize,
    pub class_mask: u8,
}

pub(crate) fn layout(format: u8) -> Layout {
    let rgb = match format {
        2 => Some(20),
        3 | 5 => Some(28),
        7 | 8 | 10 => Some(30),
        _ => None,
    };
    if format >= 6 {
        Layout { rgb, class_byte: 16, class_mask: 0xff }
    } else {
        Layout { rgb, class_byte: 15, class_mask: 0x1f }
    }
}

/// The record decoder for `h`'s format; `eight_bit`: colors are 8-bit values in 16-bit fields.
pub(crate) fn record_fn(h: &Header, eight_bit: bool) -> impl Fn(&[u8]) -> Rec + Sync + Copy {
    let (scale, offset) = (h.scale, h.offset);
    let l = layout(h.format);
    move |rec: &[u8]| {
        let c = |o: usize| i32::from_le_bytes(super::bytes(rec, o)) as f64;
        let mut r = Rec {
            xyz: [c(0) * scale[0] + offset[0], c(4) * scale[1] + offset[1], c(8) * scale[2] + offset[2]],
            rgba: [0, 0, 0, 255],
            intensity: u16le(rec, 12) as f32,
            class: rec[l.class_byte] & l.class_mask,
            ..Default::default()
        };
        if let Some(o) = l.rgb {
            let v = [u16le(rec, o), u16le(rec, o + 2), u16le(rec, o + 4)];
            r.aux = v[0].max(v[1]).max(v[2]);
            r.rgb16 = Some(v);
            r.rgba = if eight_bit {
                [v[0] as u8, v[1] as u8, v[2] as u8, 255]
            } else {
                [(v[0] >> 8) as u8, (v[1] >> 8) as u8, (v[2] >> 8) as u8, 255]
            };
        }
        r
    }
}

fn info(h: &Header, vlrs: &[Vlr], eight_bit: Option<bool>) -> FileInfo {
    let copc = vlrs.iter().any(|v| v.user_id == "copc");
    let kind = if h.compressed { "LAZ" } else { "LAS" };
    let mut variant =
        format!("{kind} {}.{}, point format {} ({}-byte records)", h.version.0, h.version.1, h.format, h.record_len);
    if copc {
        variant.push_str(", COPC (read as plain LAZ)");
    }
    let l = layout(h.format);
    let mut attributes = vec!["xyz (i32 × scale + offset)".to_string(), "intensity (u16)".to_string()];
    attributes.push(if h.format >= 6 { "classification (u8)".into() } else { "classification (5 bits)".into() });
    if l.rgb.is_some() {
        attributes.push(match eight_bit {
            Some(true) => "rgb (u16 fields holding 8-bit values)".into(),
            _ => "rgb (u16)".into(),
        });
    }
    let named = fields_of(h.format).iter().map(|f| f.name().to_string());
    let extras = h.extras.iter().map(ExtraBytes::describe);
    attributes.push(format!("{} (colour with --color-by NAME)", named.chain(extras).collect::<Vec<_>>().join(", ")));
    let mut skipped = vec!["flags".to_string()];
    if matches!(h.format, 4 | 5 | 9 | 10) {
        skipped.push("wave packets".into());
    }
    let extra = h.record_len - FORMAT_SIZES[h.format as usize];
    if extra > 0 && h.extras.is_empty() && h.extra_notes.is_empty() {
        skipped.push(format!("{extra} extra bytes per point (no Extra Bytes VLR names them)"));
    }
    let mut notes = vec![
        format!("scale {}", pcv_model::number::readable3(h.scale)),
        format!("offset {}", pcv_model::number::readable3(h.offset)),
    ];
    if !h.system.is_empty() || !h.software.is_empty() {
        notes.push(format!("system '{}', software '{}'", h.system, h.software));
    }
    notes.extend(h.extra_notes.iter().cloned());
    if !vlrs.is_empty() {
        notes.push(format!(
            "VLRs: {}",
            vlrs.iter().map(|v| format!("{}/{}", v.user_id, v.record_id)).collect::<Vec<_>>().join(", ")
        ));
    }
    FileInfo {
        variant,
        declared_points: Some(h.count),
        attributes,
        skipped,
        header_bounds: Some(DBounds { min: h.min, max: h.max })
            .filter(|b| !b.is_empty() && b.min.iter().chain(&b.max).all(|v| v.is_finite())),
        notes,
    }
}

/// The header's bounds, or a sample of the records' (for choosing the origin before decoding).
pub fn estimate(data: &[u8]) -> Option<DBounds> {
    let h = parse_header(data).ok()?;
    let b = DBounds { min: h.min, max: h.max };
    if !b.is_empty() && b.min.iter().chain(&b.max).all(|v| v.is_finite()) {
        return Some(b);
    }
    if h.compressed {
        return None;
    }
    let body = &data[h.data_offset as usize..];
    let stride = h.record_len as usize;
    let n = (h.count as usize).min(body.len() / stride);
    let f = record_fn(&h, false);
    sample_bounds(sample_indices(n, 1024).map(|k| f(&body[k * stride..(k + 1) * stride]).xyz))
}

/// Reads a LAS or LAZ file.
pub fn read(data: &[u8], opts: &ReadOptions) -> Result<Decoded, FormatError> {
    let mut src = open(data)?;
    src.keep_fields(opts.fields.for_points(src.h.count));
    opts.progress.add_total(src.total_points());
    crate::stream::collect(&src, &opts.origin.to_array(), opts.progress)
}

/// Whether colors are 8-bit values in 16-bit fields, judged from `max`, the largest component seen
/// (all-zero colors count as 16-bit).
pub(crate) fn looks_8bit(max: u16) -> bool {
    max > 0 && max <= 255
}

/// One LAZ chunk: where its bytes are and how many points it holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chunk {
    pub byte: usize,
    pub bytes: usize,
    pub points: usize,
}

/// The point records of a LAS file, or the chunks of a LAZ file.
enum Body<'a> {
    Las { records: &'a [u8], count: usize },
    Laz { vlr: Box<laz::LazVlr>, chunks: Vec<Chunk> },
}

/// An opened LAS or LAZ file (see [`ChunkSource`]). Jobs are 64 Ki records of a LAS file or one chunk
/// of a LAZ file.
pub struct LasSource<'a> {
    data: &'a [u8],
    h: Header,
    vlrs: Vec<Vlr>,
    body: Body<'a>,
    has_rgb: bool,
    /// Colors are 8-bit values in 16-bit fields (guessed at opening, checked by `finish`).
    eight_bit: AtomicBool,
    /// The other fields kept as columns ([`LasSource::keep_fields`]).
    fields: FieldSet,
}

/// Opens a LAS or LAZ file: header, VLRs, and for LAZ the LASzip VLR and the chunk table, all checked
/// against the file's size.
pub fn open(data: &[u8]) -> Result<LasSource<'_>, FormatError> {
    let mut h = parse_header(data)?;
    let vl = vlrs(data, &h)?;
    (h.extras, h.extra_notes) = super::las_extra::describe(data, &h, &vl);
    let has_rgb = layout(h.format).rgb.is_some();
    let body = if h.compressed { open_laz(data, &h, &vl)? } else { open_las(data, &h)? };
    let src = LasSource { data, h, vlrs: vl, body, has_rgb, eight_bit: AtomicBool::new(false), fields: FieldSet::NONE };
    if has_rgb {
        // The first records (LAS) or the first chunk (LAZ) decide; `finish` checks the whole file.
        let max = match &src.body {
            Body::Las { records, count } => {
                let (f, stride) = (record_fn(&src.h, false), src.h.record_len as usize);
                sample_indices(*count, 4096).map(|k| f(&records[k * stride..(k + 1) * stride]).aux).max().unwrap_or(0)
            }
            Body::Laz { chunks, .. } if !chunks.is_empty() => {
                let mut st = Staging::default();
                src.decode(0, &[0.0; 3], &mut st)?;
                st.aux_max
            }
            Body::Laz { .. } => 0,
        };
        src.eight_bit.store(looks_8bit(max), Ordering::Relaxed);
    }
    Ok(src)
}

impl LasSource<'_> {
    /// Keeps `fields` (those the point format has) as columns: decoding then reads each record's
    /// fields one at a time, slower than the fixed loops of [`push_las_records`].
    pub fn keep_fields(&mut self, fields: FieldSet) {
        self.fields = fields.intersect(fields_of_header(&self.h));
    }
}

/// The fields `h`'s records have: its format's and its extra bytes.
pub fn fields_of_header(h: &Header) -> FieldSet {
    h.extras.iter().fold(fields_of(h.format), |s, e| s.with(e.field))
}

/// Field `f` of a record of `h` (NaN where the record has none): the format's fields at the ASPRS
/// offsets ([`las_field`]), extra bytes where `h`'s descriptors put them.
#[inline]
pub fn record_field(rec: &[u8], h: &Header, f: Field) -> f64 {
    match f {
        Field::Extra(_) => h.extras.iter().find(|e| e.field == f).map_or(f64::NAN, |e| e.value(rec)),
        f => las_field(rec, h.format, f),
    }
}

/// The fields point format `format` has.
pub fn fields_of(format: u8) -> FieldSet {
    let mut s = FieldSet::of(&[
        Field::ReturnNumber,
        Field::NumberOfReturns,
        Field::ScanAngle,
        Field::UserData,
        Field::PointSourceId,
    ]);
    if !matches!(format, 0 | 2) {
        s = s.with(Field::GpsTime);
    }
    if matches!(format, 8 | 10) {
        s = s.with(Field::Nir);
    }
    s
}

/// Field `f` of a record of point format `format` (NaN where the format lacks it): the ASPRS offsets
/// (LAS 1.4 R15, tables 7–16). Scan angles in degrees: the i8 rank of formats 0–5, the i16 in 0.006°
/// steps of 6–10. The record is at least the format's size (checked at opening).
pub fn las_field(rec: &[u8], format: u8, f: Field) -> f64 {
    let legacy = format < 6;
    match f {
        Field::ReturnNumber => (if legacy { rec[14] & 7 } else { rec[14] & 15 }) as f64,
        Field::NumberOfReturns => (if legacy { (rec[14] >> 3) & 7 } else { rec[14] >> 4 }) as f64,
        Field::ScanAngle => {
            if legacy {
                rec[16] as i8 as f64
            } else {
                i16::from_le_bytes([rec[18], rec[19]]) as f64 * 0.006
            }
        }
        Field::UserData => rec[17] as f64,
        Field::PointSourceId => u16le(rec, if legacy { 18 } else { 20 }) as f64,
        Field::GpsTime => match format {
            1 | 3 | 4 | 5 => f64le(rec, 20),
            6..=10 => f64le(rec, 22),
            _ => f64::NAN,
        },
        Field::Nir => match format {
            8 | 10 => u16le(rec, 36) as f64,
            _ => f64::NAN,
        },
        // A file's own fields: [`record_field`] reads them where its descriptors say.
        Field::Extra(_) => f64::NAN,
    }
}

fn open_las<'a>(data: &'a [u8], h: &Header) -> Result<Body<'a>, FormatError> {
    let start = h.data_offset as usize;
    let stride = h.record_len as usize;
    let avail = (data.len() - start) as u64;
    let need = h.count as u128 * stride as u128;
    if need > avail as u128 {
        return Err(FormatError::at_byte(
            start,
            format!("the header declares {} points of {stride} bytes ({need} bytes), but only {avail} bytes follow the point data offset", h.count),
        ));
    }
    let count = h.count as usize;
    Ok(Body::Las { records: &data[start..start + count * stride], count })
}

fn open_laz<'a>(data: &'a [u8], h: &Header, vl: &[Vlr]) -> Result<Body<'a>, FormatError> {
    let lz = vl.iter().find(|v| v.user_id == "laszip encoded" && v.record_id == 22204).ok_or_else(|| {
        FormatError::Invalid("compressed point format but no LASzip VLR (laszip encoded/22204)".into())
    })?;
    let vlr = laz::LazVlr::from_buffer(&data[lz.data.clone()])
        .map_err(|e| FormatError::at_byte(lz.data.start, format!("LASzip VLR: {e}")))?;
    let items_size: u64 = vlr.items().iter().map(|i| i.size() as u64).sum();
    if items_size != h.record_len as u64 {
        return Err(FormatError::at_byte(
            lz.data.start,
            format!("the LASzip VLR describes {items_size}-byte points but the header says {}", h.record_len),
        ));
    }
    if vlr.items().is_empty() {
        return Err(FormatError::at_byte(lz.data.start, "the LASzip VLR lists no point items"));
    }
    if h.count as u128 * h.record_len as u128 > data.len() as u128 * MAX_LAZ_RATIO as u128 {
        return Err(FormatError::at_byte(
            h.count_at,
            format!(
                "the header declares {} points of {} bytes, more than a {}-byte LAZ file can hold",
                h.count,
                h.record_len,
                data.len()
            ),
        ));
    }
    let chunks = chunk_table(data, h, &vlr)?;
    Ok(Body::Laz { vlr: Box::new(vlr), chunks })
}

impl LasSource<'_> {
    /// The points the header declares (LAZ: as its chunk table confirms).
    pub fn total_points(&self) -> u64 {
        self.h.count
    }

    pub fn header(&self) -> &Header {
        &self.h
    }

    /// Decompresses LAZ chunk `k` into `out`, a piece at a time: the slot grows with the points the
    /// chunk's bytes actually hold, whatever count its entry declares.
    fn decode_laz(
        &self,
        k: usize,
        vlr: &laz::LazVlr,
        chunks: &[Chunk],
        origin: &[f64; 3],
        out: &mut Staging,
    ) -> Result<(), FormatError> {
        use laz::DecompressionSelection as D;
        let mut selection = D::XY_RETURNS_CHANNEL | D::Z | D::CLASSIFICATION | D::INTENSITY | D::RGB;
        for f in self.fields.iter() {
            selection |= match f {
                Field::ScanAngle => D::SCAN_ANGLE,
                Field::UserData => D::USER_DATA,
                Field::PointSourceId => D::POINT_SOURCE_ID,
                Field::GpsTime => D::GPS_TIME,
                Field::Nir => D::NIR,
                Field::Extra(_) => D::ALL_EXTRA_BYTES,
                // Returns are in the first layer, always decoded.
                Field::ReturnNumber | Field::NumberOfReturns => 0,
            };
        }
        let selection = D(selection);
        let mut scratch = std::mem::take(&mut out.scratch);
        let eight_bit = self.eight_bit.load(Ordering::Relaxed);
        let r = laz_chunk_pieces(self.data, vlr, chunks, k, selection, &mut scratch, &mut |piece| {
            push_las_records(out, piece, &self.h, eight_bit, origin)
        });
        out.scratch = scratch;
        r
    }
}

/// Whether `scale × any i32 + offset` is finite on every axis (then no record's coordinate can be
/// infinite, and the fast path need not check).
pub(crate) fn always_finite(h: &Header) -> bool {
    (0..3).all(|k| (h.scale[k].abs() * 2_147_483_648.0 + h.offset[k].abs()).is_finite())
}

/// Appends the points of `src`'s LAS records (of `h`'s format; `eight_bit`: 8-bit colors in 16-bit
/// fields) to `out`. The fast path, for every file whose coordinates cannot overflow: one loop per
/// layout with the fields at fixed offsets, the bounds kept as integer minima and maxima (scale and
/// offset are monotonic, so they give the f64 bounds exactly), no per-point checks.
pub(crate) fn push_las_records(out: &mut Staging, src: &[u8], h: &Header, eight_bit: bool, origin: &[f64; 3]) {
    let stride = h.record_len as usize;
    if !out.cols.fields.is_empty() && !out.keep_f64 {
        return out.push_records_with_fields(
            src,
            stride,
            &record_fn(h, eight_bit),
            &|rec: &[u8], f| record_field(rec, h, f),
            origin,
        );
    }
    if out.keep_f64 || !always_finite(h) || !(out.cols.intensity && out.cols.classification) {
        return out.push_records(src, stride, &record_fn(h, eight_bit), origin);
    }
    let l = layout(h.format);
    let p = LasFast {
        stride,
        rgb: l.rgb.unwrap_or(0),
        class_byte: l.class_byte,
        class_mask: l.class_mask,
        scale: h.scale,
        offset: h.offset,
        origin: *origin,
    };
    match (l.rgb.is_some(), eight_bit) {
        (true, false) => p.run::<true, false>(src, out),
        (true, true) => p.run::<true, true>(src, out),
        (false, _) => p.run::<false, false>(src, out),
    }
}

/// The fixed layout of one file's records, for [`push_las_records`].
struct LasFast {
    stride: usize,
    rgb: usize,
    class_byte: usize,
    class_mask: u8,
    scale: [f64; 3],
    offset: [f64; 3],
    origin: [f64; 3],
}

impl LasFast {
    /// Runs the loop compiled for AVX2 where the CPU has it (the release build targets baseline
    /// x86-64), else the baseline one.
    fn run<const RGB: bool, const EIGHT: bool>(&self, src: &[u8], out: &mut Staging) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above), all `run_avx2` asks for.
            return unsafe { self.run_avx2::<RGB, EIGHT>(src, out) };
        }
        self.run_in::<RGB, EIGHT>(src, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn run_avx2<const RGB: bool, const EIGHT: bool>(&self, src: &[u8], out: &mut Staging) {
        self.run_in::<RGB, EIGHT>(src, out)
    }

    #[inline(always)]
    fn run_in<const RGB: bool, const EIGHT: bool>(&self, src: &[u8], out: &mut Staging) {
        let n = src.len() / self.stride;
        let (mut lo, mut hi) = ([i32::MAX; 3], [i32::MIN; 3]);
        let mut aux = 0u16;
        let (s, o, org) = (self.scale, self.offset, self.origin);
        {
            let (pts, inten, cls) = out.spare(n);
            // Every field read below ends within the format's record (checked once per job).
            let needed = 14.max(self.class_byte + 1).max(if RGB { self.rgb + 6 } else { 0 });
            for (k, rec) in src.chunks_exact(self.stride).take(n).enumerate() {
                let f = Fields::new(rec, needed);
                // SAFETY (every `get` below): the offsets are the format's fields, all under `needed`.
                let i = |at: usize| i32::from_le_bytes(unsafe { f.get::<4>(at) });
                let xyz = [i(0), i(4), i(8)];
                for a in 0..3 {
                    lo[a] = lo[a].min(xyz[a]);
                    hi[a] = hi[a].max(xyz[a]);
                }
                // (Written out: `[0, 1, 2].map(..)` is not inlined here and costs a call per point.)
                let pos = [
                    ((xyz[0] as f64 * s[0] + o[0]) - org[0]) as f32,
                    ((xyz[1] as f64 * s[1] + o[1]) - org[1]) as f32,
                    ((xyz[2] as f64 * s[2] + o[2]) - org[2]) as f32,
                ];
                let mut rgba = [0, 0, 0, 255];
                if RGB {
                    let c: [u8; 6] = unsafe { f.get::<6>(self.rgb) };
                    let v = [
                        u16::from_le_bytes([c[0], c[1]]),
                        u16::from_le_bytes([c[2], c[3]]),
                        u16::from_le_bytes([c[4], c[5]]),
                    ];
                    aux = aux.max(v[0]).max(v[1]).max(v[2]);
                    rgba = if EIGHT { [c[0], c[2], c[4], 255] } else { [c[1], c[3], c[5], 255] };
                }
                pts[k].write(Point { pos, rgba });
                inten[k].write(u16::from_le_bytes(unsafe { f.get::<2>(12) }) as f32);
                cls[k].write(unsafe { f.get::<1>(self.class_byte) }[0] & self.class_mask);
            }
        }
        // SAFETY: every one of the `n` spare points, intensities and classes was written above (the
        // source decodes both columns: checked by the caller).
        unsafe { out.commit(n) };
        if n > 0 {
            let mut b = DBounds::EMPTY;
            for a in 0..3 {
                let (x, y) = (lo[a] as f64 * s[a] + o[a], hi[a] as f64 * s[a] + o[a]);
                b.min[a] = x.min(y);
                b.max[a] = x.max(y);
            }
            out.bounds = DBounds::union(out.bounds, b);
        }
        out.aux_max = out.aux_max.max(aux);
    }
}

/// Decompresses LAZ chunk `k` (of `chunks`, in `data`; records of `vlr`'s item set, whose size the
/// caller checked against the header's record length) a piece of at most [`LAZ_PIECE_POINTS`] points at
/// a time into `scratch`, and hands each piece's records to `piece`, by [`pcv_laz::decode_chunk`] (the
/// point-wise item sets of formats 0–3 and the layered ones of formats 6–8 by pcv-laz's decoders, the
/// same records, the others by the `laz` crate). Errors name the chunk, its byte and the point where its
/// data ended; a decoder panic on corrupt data becomes such an error.
pub(crate) fn laz_chunk_pieces(
    data: &[u8],
    vlr: &laz::LazVlr,
    chunks: &[Chunk],
    k: usize,
    selection: laz::DecompressionSelection,
    scratch: &mut Vec<u8>,
    piece: &mut dyn FnMut(&[u8]),
) -> Result<(), FormatError> {
    let c = chunks[k];
    let bytes = &data[c.byte..c.byte + c.bytes];
    pcv_laz::decode_chunk(vlr.items(), bytes, c.points, selection, LAZ_PIECE_POINTS, scratch, piece)
        .map_err(|e| FormatError::at_byte(c.byte, format!("LAZ chunk {k} of {}: {e}", chunks.len())))
}

/// Points a LAZ chunk is decompressed in at a time: 2048 records (68–74 KiB for formats 3 and 7) stay in
/// the core's L2 cache (512 KiB on the Zen 3 dev box) between the decoder writing them and
/// [`push_las_records`] reading them; 16384 (~560 KiB) spilled to L3, half of the conversion's time was
/// those reads, and the stream evicted the decoder's models: 2048 measured 2–3 % less CPU for the decode
/// and conversion of formats 3 and 7, 512–4096 within ~1.5 % of it (results/2026-12-01-s10-merge-draw-laz-pieces/2026-12-01-laz-pipeline-2core-s10.md).
pub(crate) const LAZ_PIECE_POINTS: usize = 1 << 11;

impl ChunkSource for LasSource<'_> {
    fn jobs(&self) -> usize {
        match &self.body {
            Body::Las { count, .. } => record_jobs(*count),
            Body::Laz { chunks, .. } => chunks.len(),
        }
    }

    fn job_points(&self, job: usize) -> u64 {
        match &self.body {
            Body::Las { count, .. } => record_range(job, *count).len() as u64,
            Body::Laz { chunks, .. } => chunks[job].points as u64,
        }
    }

    fn reserve_points(&self) -> u64 {
        match &self.body {
            Body::Las { count, .. } => *count as u64,
            // A LAZ point takes at least a few bits; real files hold 2–5 points per kilobyte... per
            // byte of file at most a few. Beyond this the vectors grow as the chunks decode.
            Body::Laz { .. } => self.h.count.min(self.data.len() as u64),
        }
    }

    fn exact_jobs(&self) -> bool {
        match &self.body {
            Body::Las { .. } => true,
            // Every chunk decodes exactly the points its entry declares or fails (`laz_chunk_pieces`),
            // so the workers may place chunks at their offsets wherever the entries' total is within
            // what the file's size allows (a lying table takes the appending path, which grows).
            Body::Laz { chunks, .. } => chunks.iter().map(|c| c.points as u64).sum::<u64>() <= self.reserve_points(),
        }
    }

    fn job_bytes(&self, job: usize) -> Option<std::ops::Range<usize>> {
        Some(match &self.body {
            Body::Las { count, .. } => {
                let (r, stride, at) =
                    (record_range(job, *count), self.h.record_len as usize, self.h.data_offset as usize);
                at + r.start * stride..at + r.end * stride
            }
            Body::Laz { chunks, .. } => chunks[job].byte..chunks[job].byte + chunks[job].bytes,
        })
    }

    fn columns(&self) -> Columns {
        Columns { intensity: true, classification: true, fields: self.fields }
    }

    fn has_rgb(&self) -> bool {
        self.has_rgb
    }

    fn decode(&self, job: usize, origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError> {
        match &self.body {
            Body::Las { records, count } => {
                let stride = self.h.record_len as usize;
                let r = record_range(job, *count);
                push_las_records(
                    out,
                    &records[r.start * stride..r.end * stride],
                    &self.h,
                    self.eight_bit.load(Ordering::Relaxed),
                    origin,
                );
                Ok(())
            }
            Body::Laz { vlr, chunks } => self.decode_laz(job, vlr, chunks, origin, out),
        }
    }

    fn finish(&self, stats: &StreamStats) -> Result<Verdict, FormatError> {
        let guess = self.eight_bit.load(Ordering::Relaxed);
        if self.has_rgb && looks_8bit(stats.aux_max) != guess {
            // The first records looked 8-bit (or 16-bit) but the rest did not: decode the colors again.
            self.eight_bit.store(!guess, Ordering::Relaxed);
            return Ok(Verdict::Again);
        }
        Ok(Verdict::Done)
    }

    fn info(&self) -> FileInfo {
        info(&self.h, &self.vlrs, self.has_rgb.then_some(self.eight_bit.load(Ordering::Relaxed)))
    }

    fn estimate(&self) -> Option<DBounds> {
        estimate(self.data)
    }

    fn precision(&self) -> Precision {
        Precision::Scaled(self.h.scale)
    }
}

/// Reads and checks the chunk table: every chunk's bytes inside the point data, the points adding up
/// to the header's count.
pub(crate) fn chunk_table(data: &[u8], h: &Header, vlr: &laz::LazVlr) -> Result<Vec<Chunk>, FormatError> {
    let start = h.data_offset as usize;
    if h.count == 0 {
        return Ok(Vec::new());
    }
    if start + 8 > data.len() {
        return Err(FormatError::at_byte(start, "the file ends before the LAZ chunk table offset"));
    }
    let mut table_at = i64::from_le_bytes(super::bytes(data, start));
    if table_at <= start as i64 && data.len() >= 8 {
        // A writer that could not seek back stores the offset in the last 8 bytes.
        table_at = i64::from_le_bytes(super::bytes(data, data.len() - 8));
    }
    // The table follows the 8-byte offset itself and the chunks, and holds at least its 8-byte head.
    if table_at < start as i64 + 8 || table_at as u64 + 8 > data.len() as u64 {
        return Err(FormatError::at_byte(
            start,
            format!("LAZ chunk table offset {table_at} is outside the point data"),
        ));
    }
    let table_at = table_at as usize;
    let n_chunks = u32le(data, table_at + 4) as usize;
    let data_bytes = table_at - start - 8;
    if n_chunks > data_bytes / 8 + 1 {
        return Err(FormatError::at_byte(
            table_at,
            format!("the LAZ chunk table lists {n_chunks} chunks, more than {data_bytes} bytes of point data can hold"),
        ));
    }
    let mut cursor = std::io::Cursor::new(data);
    cursor.set_position(start as u64);
    let table = super::catch_quietly(|| laz::laszip::ChunkTable::read_from(&mut cursor, vlr))
        .map_err(|m| {
            FormatError::at_byte(table_at, format!("the LAZ chunk table is corrupt (the decoder failed: {m})"))
        })?
        .map_err(|e| FormatError::at_byte(table_at, format!("LAZ chunk table: {e}")))?;
    let entries: &[ChunkTableEntry] = table.as_ref();
    let mut chunks = Vec::with_capacity(entries.len());
    let mut byte = start + 8;
    let mut left = h.count;
    for (k, e) in entries.iter().enumerate() {
        let last = k + 1 == entries.len();
        let points = if vlr.uses_variable_size_chunks() || !last { e.point_count } else { left };
        if !vlr.uses_variable_size_chunks() && last && points > vlr.chunk_size() as u64 {
            // Fixed-size chunks hold `chunk_size` points each, the last one at most that: a header
            // count beyond it is a lie (decoding the last chunk would fail only after allocating it).
            let most = entries.len() as u64 * vlr.chunk_size() as u64;
            return Err(FormatError::at_byte(
                h.count_at,
                format!(
                    "the header declares {} points, but the LAZ chunk table's {} chunks of at most {} points hold at most {most}",
                    h.count,
                    entries.len(),
                    vlr.chunk_size()
                ),
            ));
        }
        if points > left || (!vlr.uses_variable_size_chunks() && points == 0) {
            return Err(FormatError::at_byte(
                table_at,
                format!(
                    "the LAZ chunk table's chunks hold more than the {} points the header declares (chunk {k})",
                    h.count
                ),
            ));
        }
        if e.byte_count > (table_at - byte) as u64 {
            return Err(FormatError::at_byte(
                byte,
                format!("LAZ chunk {k} ({} bytes) runs past the chunk table at byte {table_at}", e.byte_count),
            ));
        }
        chunks.push(Chunk { byte, bytes: e.byte_count as usize, points: points as usize });
        byte += e.byte_count as usize;
        left -= points;
    }
    if left != 0 {
        return Err(FormatError::at_byte(
            h.count_at,
            format!("the LAZ chunks hold {} points but the header declares {}", h.count - left, h.count),
        ));
    }
    Ok(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_follow_the_spec() {
        assert_eq!(layout(2).rgb, Some(20));
        assert_eq!(layout(3).rgb, Some(28));
        assert_eq!(layout(7).rgb, Some(30));
        assert_eq!(layout(10).rgb, Some(30));
        assert_eq!(layout(6).rgb, None);
        assert_eq!(layout(1).class_byte, 15);
        assert_eq!(layout(6).class_byte, 16);
        assert!(looks_8bit(255) && !looks_8bit(256) && !looks_8bit(0));
    }

    #[test]
    fn short_and_foreign_headers_are_errors() {
        assert!(parse_header(b"LASF").unwrap_err().to_string().contains("ends inside the LAS header"));
        assert!(parse_header(b"PLY!").is_err());
        let mut d = vec![0u8; 400];
        d[..4].copy_from_slice(b"LASF");
        d[24] = 2;
        assert!(parse_header(&d).unwrap_err().to_string().contains("byte 24"));
    }
}
