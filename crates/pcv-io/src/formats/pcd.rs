//! PCD (the Point Cloud Library's format), versions 0.5–0.7: `DATA ascii`, `binary` and
//! `binary_compressed`.
//!
//! How it works: the text header (`FIELDS`, `SIZE`, `TYPE`, `COUNT`, `WIDTH`, `HEIGHT`, `POINTS`,
//! `DATA`) gives every field's type and place in a record. Positions come from `x`, `y`, `z`; colors
//! from `rgb` or `rgba` (one 32-bit word, stored as a float's bits (TYPE F, PCL's habit) or as a u32,
//! 0x00RRGGBB) or from separate `r`/`g`/`b` fields; intensity from `intensity`; classification from
//! `classification`. Every other one-value field (`curvature`, `normal_x`, a sensor's `ring`, ...) is a
//! field by its own name ([`Field::Extra`](super::Field::Extra)), kept as a column when asked for
//! ([`PcdSource::keep_fields`]); padding (`_`) and multi-value fields (histograms) are skipped. `binary` records are fixed-size and are
//! decoded in jobs of 64 Ki from the memory-mapped file; `binary_compressed` data is LZF-decompressed (its
//! declared sizes checked against the point count and LZF's maximum ratio first), then transposed from
//! its field-by-field layout into records and decoded the same way; ascii lines are parsed in parallel
//! chunks, each line holding exactly the values the fields take. NaN points (the holes of organized clouds) are dropped and counted. The `VIEWPOINT` (the
//! sensor pose) is reported, not applied, as PCL does.
use super::{
    record_jobs, record_range, sample_bounds, sample_indices, text_chunks, Columns, DBounds, Decoded, FieldSet,
    FileInfo, FormatError, ReadOptions, Rec, Scalar, TextChunk,
};
use crate::stream::{ChunkSource, Precision, Staging, StreamStats, Verdict};
use rayon::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataKind {
    Ascii,
    Binary,
    BinaryCompressed,
}

#[derive(Clone, Debug)]
struct Field {
    name: String,
    ty: Scalar,
    count: usize,
    /// Byte offset in a record.
    offset: usize,
}

/// A parsed PCD header.
#[derive(Clone, Debug)]
pub struct Header {
    pub version: String,
    fields: Vec<Field>,
    pub points: u64,
    pub width: u64,
    pub height: u64,
    pub viewpoint: String,
    pub data: DataKind,
    /// Byte offset of the data.
    pub body: usize,
    /// Lines in the header.
    pub lines: u64,
    pub record_size: usize,
}

/// Whether `data` starts like a PCD file (its comment line or its first keyword).
pub fn sniff(data: &[u8]) -> bool {
    let head = &data[..data.len().min(512)];
    head.starts_with(b"# .PCD") || head.starts_with(b"VERSION") || head.starts_with(b"FIELDS")
}

/// Parses the header.
pub fn parse_header(data: &[u8]) -> Result<Header, FormatError> {
    let mut at = 0usize;
    let mut line_no = 0u64;
    let (mut names, mut sizes, mut types, mut counts): (Vec<String>, Vec<usize>, Vec<char>, Vec<usize>) =
        Default::default();
    let (mut version, mut viewpoint) = (String::new(), String::new());
    let (mut width, mut height, mut points) = (None, None, None);
    loop {
        if at >= data.len() || at > 1 << 20 {
            return Err(FormatError::at_line(line_no.max(1), "no DATA line: the PCD header is truncated"));
        }
        let end = memchr::memchr(b'\n', &data[at..]).map(|i| at + i + 1).unwrap_or(data.len());
        line_no += 1;
        let line = String::from_utf8_lossy(&data[at..end]);
        at = end;
        let line = line.trim();
        let err = |m: String| FormatError::at_line(line_no, m);
        let mut w = line.split_ascii_whitespace();
        let Some(key) = w.next() else { continue };
        if key.starts_with('#') {
            continue;
        }
        let rest: Vec<&str> = w.collect();
        let nums = |what: &str| -> Result<Vec<usize>, FormatError> {
            rest.iter()
                .map(|t| t.parse::<usize>().map_err(|_| err(format!("{what}: '{t}' is not a whole number"))))
                .collect()
        };
        let one = |what: &str| -> Result<u64, FormatError> {
            rest.first().and_then(|t| t.parse::<u64>().ok()).ok_or_else(|| err(format!("{what} needs a whole number")))
        };
        match key.to_ascii_uppercase().as_str() {
            "VERSION" => version = rest.join(" "),
            "FIELDS" | "COLUMNS" => names = rest.iter().map(|s| s.to_string()).collect(),
            "SIZE" => sizes = nums("SIZE")?,
            "TYPE" => {
                types = rest.iter().map(|t| t.chars().next().unwrap_or('?').to_ascii_uppercase()).collect();
            }
            "COUNT" => counts = nums("COUNT")?,
            "WIDTH" => width = Some(one("WIDTH")?),
            "HEIGHT" => height = Some(one("HEIGHT")?),
            "POINTS" => points = Some(one("POINTS")?),
            "VIEWPOINT" => viewpoint = rest.join(" "),
            "DATA" => {
                let data_kind = match rest.first().map(|s| s.to_ascii_lowercase()).as_deref() {
                    Some("ascii") => DataKind::Ascii,
                    Some("binary") => DataKind::Binary,
                    Some("binary_compressed") => DataKind::BinaryCompressed,
                    other => return Err(err(format!("unknown DATA kind '{}'", other.unwrap_or("")))),
                };
                if names.is_empty() {
                    return Err(err("no FIELDS line before DATA".into()));
                }
                if counts.is_empty() {
                    counts = vec![1; names.len()];
                }
                if sizes.len() != names.len() || types.len() != names.len() || counts.len() != names.len() {
                    return Err(err(format!(
                        "FIELDS has {} names but SIZE has {}, TYPE {} and COUNT {}",
                        names.len(),
                        sizes.len(),
                        types.len(),
                        counts.len()
                    )));
                }
                let mut fields = Vec::new();
                let mut offset = 0usize;
                for i in 0..names.len() {
                    let ty = match (types[i], sizes[i]) {
                        ('I', 1) => Scalar::I8,
                        ('I', 2) => Scalar::I16,
                        ('I', 4) => Scalar::I32,
                        ('I', 8) => Scalar::I64,
                        ('U', 1) => Scalar::U8,
                        ('U', 2) => Scalar::U16,
                        ('U', 4) => Scalar::U32,
                        ('U', 8) => Scalar::U64,
                        ('F', 4) => Scalar::F32,
                        ('F', 8) => Scalar::F64,
                        (t, s) => {
                            return Err(err(format!("field '{}': TYPE {t} with SIZE {s} is not a PCD type", names[i])))
                        }
                    };
                    if counts[i] == 0 || counts[i] > 1 << 16 {
                        return Err(err(format!("field '{}': COUNT {} is impossible", names[i], counts[i])));
                    }
                    fields.push(Field { name: names[i].clone(), ty, count: counts[i], offset });
                    offset += ty.size() * counts[i];
                }
                let (w, h) = (width.unwrap_or(0), height.unwrap_or(1));
                let points = match points {
                    Some(p) => p,
                    None => w.checked_mul(h).ok_or_else(|| err("WIDTH × HEIGHT overflows".into()))?,
                };
                return Ok(Header {
                    version,
                    fields,
                    points,
                    width: w,
                    height: h,
                    viewpoint,
                    data: data_kind,
                    body: at,
                    lines: line_no,
                    record_size: offset,
                });
            }
            other => return Err(err(format!("unknown PCD header keyword '{other}'"))),
        }
    }
}

/// Where each role's value is: (field index).
#[derive(Clone, Debug, Default)]
struct Roles {
    xyz: [usize; 3],
    packed: Option<usize>,
    rgb: Option<[usize; 3]>,
    intensity: Option<usize>,
    class: Option<usize>,
    /// The other one-value fields, each a field by its own name.
    extras: Vec<(usize, super::Field)>,
}

fn roles(h: &Header) -> Result<Roles, FormatError> {
    let pos = |names: &[&str]| names.iter().find_map(|n| h.fields.iter().position(|f| f.name.eq_ignore_ascii_case(n)));
    let mut xyz = [0; 3];
    for (k, a) in ["x", "y", "z"].iter().enumerate() {
        xyz[k] = pos(&[a]).ok_or_else(|| {
            FormatError::Invalid(format!(
                "no '{a}' field (fields: {})",
                h.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ")
            ))
        })?;
    }
    let packed = pos(&["rgb", "rgba"]).filter(|&i| h.fields[i].ty.size() == 4);
    let sep = [pos(&["r", "red"]), pos(&["g", "green"]), pos(&["b", "blue"])];
    let rgb =
        if packed.is_none() && sep.iter().all(|s| s.is_some()) { Some(sep.map(|s| s.unwrap_or(0))) } else { None };
    let mut r =
        Roles { xyz, packed, rgb, intensity: pos(&["intensity"]), class: pos(&["classification"]), extras: vec![] };
    for (i, f) in h.fields.iter().enumerate() {
        if !used(&r, i) && f.count == 1 && f.name != "_" {
            if let Some(field) = super::Field::extra(&f.name) {
                r.extras.push((i, field));
            }
        }
    }
    Ok(r)
}

/// Whether field `i` has a role (position, colour, intensity, class).
fn used(r: &Roles, i: usize) -> bool {
    r.xyz.contains(&i)
        || r.packed == Some(i)
        || r.rgb.is_some_and(|c| c.contains(&i))
        || r.intensity == Some(i)
        || r.class == Some(i)
}

fn info(h: &Header, r: &Roles) -> FileInfo {
    let ty = |i: usize| {
        let f = &h.fields[i];
        let t = match f.ty {
            Scalar::F32 | Scalar::F64 => 'F',
            Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64 => 'U',
            _ => 'I',
        };
        format!("{t}{}", f.ty.size())
    };
    let mut attributes = vec![format!("xyz ({})", ty(r.xyz[0]))];
    if let Some(i) = r.packed {
        attributes.push(format!("rgb (packed in {} '{}')", ty(i), h.fields[i].name));
    }
    if let Some(c) = r.rgb {
        attributes.push(format!("rgb ({}, separate fields)", ty(c[0])));
    }
    if let Some(i) = r.intensity {
        attributes.push(format!("intensity ({})", ty(i)));
    }
    if let Some(i) = r.class {
        attributes.push(format!("classification ({})", ty(i)));
    }
    if !r.extras.is_empty() {
        let named = r.extras.iter().map(|&(i, f)| format!("{} ({})", f.name(), ty(i)));
        attributes.push(format!("{} (colour with --color-by NAME)", named.collect::<Vec<_>>().join(", ")));
    }
    let extra = |i: usize| r.extras.iter().any(|e| e.0 == i);
    let skipped =
        h.fields.iter().enumerate().filter(|(i, _)| !used(r, *i) && !extra(*i)).map(|(_, f)| f.name.clone()).collect();
    let data = match h.data {
        DataKind::Ascii => "ascii",
        DataKind::Binary => "binary",
        DataKind::BinaryCompressed => "binary_compressed",
    };
    let mut notes =
        vec![format!("width {} height {}{}", h.width, h.height, if h.height > 1 { " (organized)" } else { "" })];
    if !h.viewpoint.is_empty() {
        notes.push(format!("viewpoint {} (not applied)", h.viewpoint));
    }
    FileInfo {
        variant: format!(
            "{data}{}",
            if h.version.is_empty() { String::new() } else { format!(", version {}", h.version) }
        ),
        declared_points: Some(h.points),
        attributes,
        skipped,
        header_bounds: None,
        notes,
    }
}

/// The record decoder (little-endian records, as PCL writes them).
fn record_fn<'a>(h: &'a Header, r: &Roles) -> impl Fn(&[u8]) -> Rec + Sync + 'a {
    let f = |i: usize| (h.fields[i].ty, h.fields[i].offset);
    let xyz = r.xyz.map(f);
    let packed = r.packed.map(f);
    let rgb = r.rgb.map(|c| c.map(f));
    let inten = r.intensity.map(f);
    let class = r.class.map(f);
    move |rec: &[u8]| {
        let mut out = Rec {
            xyz: [
                xyz[0].0.read(rec, xyz[0].1, true),
                xyz[1].0.read(rec, xyz[1].1, true),
                xyz[2].0.read(rec, xyz[2].1, true),
            ],
            rgba: [0, 0, 0, 255],
            ..Default::default()
        };
        if let Some((_, o)) = packed {
            let w = u32::from_le_bytes(super::bytes(rec, o));
            out.rgba = [(w >> 16) as u8, (w >> 8) as u8, w as u8, 255];
        }
        if let Some(c) = rgb {
            out.rgba = [
                c[0].0.read_color(rec, c[0].1, true),
                c[1].0.read_color(rec, c[1].1, true),
                c[2].0.read_color(rec, c[2].1, true),
                255,
            ];
        }
        if let Some((t, o)) = inten {
            out.intensity = t.read(rec, o, true) as f32;
        }
        if let Some((t, o)) = class {
            out.class = t.read(rec, o, true) as u8;
        }
        out
    }
}

/// A sample's bounds, for choosing the origin before decoding.
pub fn estimate(data: &[u8]) -> Option<DBounds> {
    let h = parse_header(data).ok()?;
    let r = roles(&h).ok()?;
    match h.data {
        DataKind::Binary => {
            let n = (h.points as usize).min((data.len() - h.body) / h.record_size.max(1));
            let f = record_fn(&h, &r);
            let s = h.record_size;
            sample_bounds(sample_indices(n, 1024).map(|k| f(&data[h.body + k * s..h.body + (k + 1) * s]).xyz))
        }
        DataKind::Ascii => {
            let text = std::str::from_utf8(&data[h.body..data.len().min(h.body + (1 << 16))]).ok()?;
            let col = column_starts(&h);
            sample_bounds(text.lines().take(64).filter_map(|l| {
                let v: Vec<&str> = l.split_ascii_whitespace().collect();
                let g = |k: usize| v.get(col[r.xyz[k]]).and_then(|t| t.parse::<f64>().ok());
                Some([g(0)?, g(1)?, g(2)?])
            }))
        }
        DataKind::BinaryCompressed => None,
    }
}

/// Index of each field's first value in an ascii line.
fn column_starts(h: &Header) -> Vec<usize> {
    let mut c = 0;
    h.fields
        .iter()
        .map(|f| {
            let here = c;
            c += f.count;
            here
        })
        .collect()
}

/// Reads the file.
pub fn read(data: &[u8], opts: &ReadOptions) -> Result<Decoded, FormatError> {
    let mut src = open(data)?;
    src.keep_fields(opts.fields.for_points(src.h.points));
    opts.progress.add_total(src.h.points.min(data.len() as u64 * LZF_MAX_RATIO));
    crate::stream::collect(&src, &opts.origin.to_array(), opts.progress)
}

/// How the records are read.
enum Body<'a> {
    /// `binary`: the records in the file.
    Binary(&'a [u8]),
    /// `binary_compressed`: the records decompressed at opening (LZF, at most 88 times the file).
    Decompressed(Vec<u8>),
    /// `ascii`: line-aligned pieces.
    Ascii(Vec<TextChunk<'a>>),
}

/// An opened PCD file (see [`ChunkSource`]).
pub struct PcdSource<'a> {
    data: &'a [u8],
    h: Header,
    roles: Roles,
    body: Body<'a>,
    /// The extra fields kept as columns ([`PcdSource::keep_fields`]), in [`FieldSet`] order: each one's
    /// field index in the header.
    kept: Vec<(super::Field, usize)>,
}

/// Opens a PCD file: the header, its counts checked against the data that follows.
pub fn open(data: &[u8]) -> Result<PcdSource<'_>, FormatError> {
    let h = parse_header(data)?;
    let roles = roles(&h)?;
    let body = match h.data {
        DataKind::Binary => {
            let avail = (data.len() - h.body) as u128;
            let need = h.points as u128 * h.record_size as u128;
            if need > avail || (h.record_size == 0 && h.points > 0) {
                return Err(FormatError::at_byte(
                    h.body,
                    format!(
                        "the header declares {} points of {} bytes ({need} bytes), but only {avail} bytes follow it",
                        h.points, h.record_size
                    ),
                ));
            }
            Body::Binary(&data[h.body..h.body + need as usize])
        }
        DataKind::BinaryCompressed => Body::Decompressed(decompress(data, &h)?),
        DataKind::Ascii => {
            let start = h.body;
            if h.points > (data.len() - start) as u64 / 2 + 1 {
                return Err(FormatError::at_line(
                    h.lines + 1,
                    format!(
                        "the header declares {} points, more than the {} bytes after it can hold",
                        h.points,
                        data.len() - start
                    ),
                ));
            }
            Body::Ascii(text_chunks(&data[start..], h.lines + 1, 4 << 20))
        }
    };
    Ok(PcdSource { data, h, roles, body, kept: Vec::new() })
}

impl PcdSource<'_> {
    /// Keeps `fields` (those of the file's own fields among them) as columns.
    pub fn keep_fields(&mut self, fields: FieldSet) {
        let mine = FieldSet::of(&self.roles.extras.iter().map(|e| e.1).collect::<Vec<_>>());
        self.kept = fields
            .intersect(mine)
            .iter()
            .filter_map(|f| self.roles.extras.iter().find(|e| e.1 == f).map(|e| (f, e.0)))
            .collect();
    }

    fn decode_ascii(&self, c: &TextChunk, origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError> {
        let (h, r) = (&self.h, &self.roles);
        let col = column_starts(h);
        let width: usize = h.fields.iter().map(|f| f.count).sum();
        let text = std::str::from_utf8(c.text).map_err(|_| FormatError::at_line(c.first_line, "not UTF-8 text"))?;
        let mut vals: Vec<&str> = Vec::with_capacity(width);
        let mut extra = Vec::with_capacity(self.kept.len());
        for (k, line) in text.split('\n').enumerate() {
            let line_no = c.first_line + k as u64;
            vals.clear();
            vals.extend(line.split_ascii_whitespace());
            if vals.is_empty() {
                continue;
            }
            if vals.len() != width {
                return Err(FormatError::at_line(
                    line_no,
                    format!("{} values, the header's fields take {width}", vals.len()),
                ));
            }
            let num = |i: usize| -> Result<f64, FormatError> {
                let t = vals[col[i]];
                t.parse::<f64>()
                    .map_err(|_| FormatError::at_line(line_no, format!("'{t}' is not a number ({})", h.fields[i].name)))
            };
            let xyz = [num(r.xyz[0])?, num(r.xyz[1])?, num(r.xyz[2])?];
            let mut rgba = [0, 0, 0, 255];
            if let Some(i) = r.packed {
                let t = vals[col[i]];
                let w = if h.fields[i].ty == Scalar::F32 {
                    t.parse::<f32>().map(f32::to_bits).ok()
                } else {
                    t.parse::<u32>().ok().or_else(|| t.parse::<f64>().ok().map(|v| v as u32))
                }
                .ok_or_else(|| FormatError::at_line(line_no, format!("'{t}' is not a packed color")))?;
                rgba = [(w >> 16) as u8, (w >> 8) as u8, w as u8, 255];
            }
            if let Some(c) = r.rgb {
                for k in 0..3 {
                    let v = num(c[k])?;
                    rgba[k] = match h.fields[c[k]].ty {
                        Scalar::F32 | Scalar::F64 => super::color_from_unit(v),
                        Scalar::U16 | Scalar::I16 => (v.clamp(0.0, 65535.0) as u32 >> 8) as u8,
                        _ => v.clamp(0.0, 255.0) as u8,
                    };
                }
            }
            let inten = r.intensity.map(num).transpose()?.map(|v| v as f32).unwrap_or(0.0);
            let class = r.class.map(num).transpose()?.map(|v| v as u8).unwrap_or(0);
            extra.clear();
            for &(_, i) in &self.kept {
                extra.push(num(i)?);
            }
            out.push_with_fields(&Rec { xyz, rgba, intensity: inten, class, ..Default::default() }, &extra, origin);
        }
        Ok(())
    }
}

impl ChunkSource for PcdSource<'_> {
    fn jobs(&self) -> usize {
        match &self.body {
            Body::Binary(_) | Body::Decompressed(_) => record_jobs(self.h.points as usize),
            Body::Ascii(chunks) => chunks.len(),
        }
    }

    fn job_points(&self, job: usize) -> u64 {
        match &self.body {
            Body::Binary(_) | Body::Decompressed(_) => record_range(job, self.h.points as usize).len() as u64,
            Body::Ascii(chunks) => memchr::memchr_iter(b'\n', chunks[job].text).count() as u64 + 1,
        }
    }

    fn reserve_points(&self) -> u64 {
        // Checked against the data at opening.
        self.h.points
    }

    fn exact_jobs(&self) -> bool {
        !matches!(self.body, Body::Ascii(_))
    }

    fn columns(&self) -> Columns {
        Columns {
            intensity: self.roles.intensity.is_some(),
            classification: self.roles.class.is_some(),
            fields: FieldSet::of(&self.kept.iter().map(|k| k.0).collect::<Vec<_>>()),
        }
    }

    fn has_rgb(&self) -> bool {
        self.roles.packed.is_some() || self.roles.rgb.is_some()
    }

    fn decode(&self, job: usize, origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError> {
        let records: &[u8] = match &self.body {
            Body::Binary(b) => b,
            Body::Decompressed(b) => b,
            Body::Ascii(chunks) => return self.decode_ascii(&chunks[job], origin, out),
        };
        let (rs, r) = (self.h.record_size, record_range(job, self.h.points as usize));
        let src = &records[r.start * rs..r.end * rs];
        if self.kept.is_empty() || out.keep_f64 {
            out.push_records(src, rs, &record_fn(&self.h, &self.roles), origin);
        } else {
            let at: Vec<(super::Field, Scalar, usize)> =
                self.kept.iter().map(|&(f, i)| (f, self.h.fields[i].ty, self.h.fields[i].offset)).collect();
            let field = |rec: &[u8], f: super::Field| {
                at.iter().find(|a| a.0 == f).map_or(f64::NAN, |&(_, s, o)| s.read(rec, o, true))
            };
            out.push_records_with_fields(src, rs, &record_fn(&self.h, &self.roles), &field, origin);
        }
        Ok(())
    }

    fn finish(&self, stats: &StreamStats) -> Result<Verdict, FormatError> {
        let lines = stats.kept + stats.nonfinite;
        if matches!(self.body, Body::Ascii(_)) && lines != self.h.points {
            return Err(FormatError::at_line(
                self.h.lines + 1 + lines,
                format!("the header declares {} points but {lines} point lines follow", self.h.points),
            ));
        }
        Ok(Verdict::Done)
    }

    fn info(&self) -> FileInfo {
        info(&self.h, &self.roles)
    }

    fn estimate(&self) -> Option<DBounds> {
        estimate(self.data)
    }

    fn precision(&self) -> Precision {
        if self
            .roles
            .xyz
            .iter()
            .all(|&i| matches!(self.h.fields[i].ty, Scalar::F32 | Scalar::I8 | Scalar::U8 | Scalar::I16 | Scalar::U16))
        {
            Precision::F32
        } else {
            Precision::F64
        }
    }
}

/// LZF's largest expansion: a 3-byte back reference can stand for 264 bytes.
const LZF_MAX_RATIO: u64 = 88;

/// Decompresses `binary_compressed` data and transposes it into records.
fn decompress(data: &[u8], h: &Header) -> Result<Vec<u8>, FormatError> {
    let at = h.body;
    if at + 8 > data.len() {
        return Err(FormatError::at_byte(data.len(), "the file ends before the compressed data's sizes"));
    }
    let compressed = u32::from_le_bytes(super::bytes(data, at)) as usize;
    let uncompressed = u32::from_le_bytes(super::bytes(data, at + 4)) as u64;
    let expect = h.points as u128 * h.record_size as u128;
    if uncompressed as u128 != expect {
        return Err(FormatError::at_byte(
            at + 4,
            format!(
                "the uncompressed size {uncompressed} is not {} points × {} bytes = {expect}",
                h.points, h.record_size
            ),
        ));
    }
    if compressed > data.len() - at - 8 {
        return Err(FormatError::at_byte(
            at,
            format!("the compressed size {compressed} is larger than the {} bytes that follow", data.len() - at - 8),
        ));
    }
    if uncompressed > compressed as u64 * LZF_MAX_RATIO {
        return Err(FormatError::at_byte(at + 4, format!("{compressed} LZF bytes cannot hold {uncompressed} bytes")));
    }
    let soa = lzf_decompress(&data[at + 8..at + 8 + compressed], uncompressed as usize)
        .map_err(|(off, m)| FormatError::at_byte(at + 8 + off, m))?;
    // Field by field (each field's values for all points) → record by record.
    let n = h.points as usize;
    let rs = h.record_size;
    let mut records = vec![0u8; soa.len()];
    let mut col_start = 0;
    let fields: Vec<(usize, usize, usize)> = h
        .fields
        .iter()
        .map(|f| {
            let w = f.ty.size() * f.count;
            let here = (col_start, f.offset, w);
            col_start += w * n;
            here
        })
        .collect();
    records.par_chunks_mut(rs.max(1) * 4096).enumerate().for_each(|(c, out)| {
        for (k, rec) in out.chunks_exact_mut(rs.max(1)).enumerate() {
            let i = c * 4096 + k;
            for &(start, off, w) in &fields {
                rec[off..off + w].copy_from_slice(&soa[start + i * w..start + (i + 1) * w]);
            }
        }
    });
    Ok(records)
}

/// LZF decompression (liblzf's format) into exactly `out_len` bytes; errors carry the input offset.
pub fn lzf_decompress(input: &[u8], out_len: usize) -> Result<Vec<u8>, (usize, String)> {
    let mut out = Vec::with_capacity(out_len);
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = input[ip] as usize;
        let at = ip;
        ip += 1;
        if ctrl < 32 {
            let len = ctrl + 1;
            if ip + len > input.len() {
                return Err((at, "LZF literal run past the end of the data".into()));
            }
            if out.len() + len > out_len {
                return Err((at, format!("LZF data expands past the declared {out_len} bytes")));
            }
            out.extend_from_slice(&input[ip..ip + len]);
            ip += len;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                let Some(&extra) = input.get(ip) else {
                    return Err((at, "LZF back reference past the end of the data".into()));
                };
                len += extra as usize;
                ip += 1;
            }
            let Some(&low) = input.get(ip) else {
                return Err((at, "LZF back reference past the end of the data".into()));
            };
            ip += 1;
            let dist = ((ctrl & 0x1f) << 8) + low as usize + 1;
            let len = len + 2;
            if dist > out.len() {
                return Err((at, format!("LZF back reference {dist} bytes back, before the start of the output")));
            }
            if out.len() + len > out_len {
                return Err((at, format!("LZF data expands past the declared {out_len} bytes")));
            }
            let from = out.len() - dist;
            for k in 0..len {
                let b = out[from + k];
                out.push(b);
            }
        }
    }
    if out.len() != out_len {
        return Err((input.len(), format!("LZF data expands to {} bytes, not the declared {out_len}", out.len())));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lzf_literals_and_back_references() {
        // "abcabcabcX": literal "abc", back reference len 6 dist 3, literal "X".
        let input = [2, b'a', b'b', b'c', (4 << 5), 2, 0, b'X'];
        assert_eq!(lzf_decompress(&input, 10).unwrap(), b"abcabcabcX");
        assert!(lzf_decompress(&input, 9).is_err());
        assert!(lzf_decompress(&[(1 << 5), 5], 3).unwrap_err().1.contains("before the start"));
        assert!(lzf_decompress(&[5, 1], 6).unwrap_err().1.contains("past the end"));
    }
}
