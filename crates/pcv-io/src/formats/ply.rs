//! PLY (Stanford polygon format): ascii, binary little endian and binary big endian.
//!
//! How it works: the text header (up to `end_header`) is parsed into elements and their properties.
//! The `vertex` element gives the points: `x`, `y`, `z` (any numeric type, usually float or double),
//! colors from `red`/`green`/`blue`, `r`/`g`/`b` or `diffuse_red`/... (uchar as is, ushort shifted
//! right by 8, float/double as 0..1), intensity from `intensity`, `scalar_intensity` or `reflectance` (or else
//! the first `scalar_*` field, as CloudCompare writes them), classification from `classification`,
//! `scalar_classification` or `class`; every other scalar property (normals, alpha, CloudCompare's
//! `scalar_*` fields, ...) is a field by its own name ([`Field::Extra`]), kept as a column when asked
//! for ([`PlySource::keep_fields`]: colour and filter by it); list properties are skipped.
//!
//! Opening checks the whole file against its header before anything is decoded: the elements before
//! `vertex` are skipped (by arithmetic when their records are fixed-size, record by record when they
//! hold lists), the vertex records must fit, and the elements after them (faces) are walked too, with
//! every list's length as read, so a truncated face list or a vertex count one too high (which would
//! read face bytes as a vertex) is an error naming the element and the byte or line. In binary files
//! whose vertex records are fixed-size, the records are decoded in jobs of 64 Ki straight from the
//! memory-mapped file; vertex records with list properties are walked one by one. Ascii vertex lines
//! are parsed in line-aligned pieces, and a line must hold exactly the values its properties take.
use super::{
    color_from_unit, record_jobs, record_range, sample_bounds, sample_indices, text_chunks, Columns, DBounds, Decoded,
    Field, FieldSet, Fields, FileInfo, FormatError, ReadOptions, Rec, Scalar, TextChunk,
};
use crate::stream::{ChunkSource, Precision, Staging};

/// Headers longer than this are refused (real ones are a few hundred bytes).
const MAX_HEADER_BYTES: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Ascii,
    BinaryLittleEndian,
    BinaryBigEndian,
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Scalar(Scalar),
    List { count: Scalar, item: Scalar },
}

#[derive(Clone, Debug)]
struct Property {
    name: String,
    kind: Kind,
}

#[derive(Clone, Debug)]
struct Element {
    name: String,
    count: u64,
    props: Vec<Property>,
}

impl Element {
    /// Record size when every property is a scalar.
    fn fixed_size(&self) -> Option<usize> {
        self.props.iter().map(|p| if let Kind::Scalar(s) = p.kind { Some(s.size()) } else { None }).sum()
    }
}

/// A parsed PLY header.
#[derive(Clone, Debug)]
pub struct Header {
    pub encoding: Encoding,
    pub version: String,
    elements: Vec<Element>,
    /// Byte offset of the body.
    pub body: usize,
    /// Lines in the header (the body's first line is `lines + 1`).
    pub lines: u64,
}

fn scalar(name: &str) -> Option<Scalar> {
    Some(match name {
        "char" | "int8" => Scalar::I8,
        "uchar" | "uint8" => Scalar::U8,
        "short" | "int16" => Scalar::I16,
        "ushort" | "uint16" => Scalar::U16,
        "int" | "int32" => Scalar::I32,
        "uint" | "uint32" => Scalar::U32,
        "int64" | "long" => Scalar::I64,
        "uint64" | "ulong" => Scalar::U64,
        "float" | "float32" => Scalar::F32,
        "double" | "float64" => Scalar::F64,
        _ => return None,
    })
}

fn type_name(s: Scalar) -> &'static str {
    match s {
        Scalar::I8 => "char",
        Scalar::U8 => "uchar",
        Scalar::I16 => "short",
        Scalar::U16 => "ushort",
        Scalar::I32 => "int",
        Scalar::U32 => "uint",
        Scalar::I64 => "int64",
        Scalar::U64 => "uint64",
        Scalar::F32 => "float",
        Scalar::F64 => "double",
    }
}

/// Whether `data` starts like a PLY file.
pub fn sniff(data: &[u8]) -> bool {
    data.starts_with(b"ply\n") || data.starts_with(b"ply\r\n")
}

/// Parses the header.
pub fn parse_header(data: &[u8]) -> Result<Header, FormatError> {
    if !sniff(data) {
        return Err(FormatError::at_byte(0, "not a PLY file: it does not start with 'ply'"));
    }
    let window = &data[..data.len().min(MAX_HEADER_BYTES)];
    let end = find(window, b"\nend_header").map(|i| i + 1).ok_or_else(|| {
        FormatError::at_byte(
            0,
            if data.len() > MAX_HEADER_BYTES {
                "no 'end_header' in the first MiB"
            } else {
                "no 'end_header': the header is truncated"
            },
        )
    })?;
    // The body starts after the end_header line's newline.
    let after = end + b"end_header".len();
    let body = match window[after..].iter().position(|&c| c == b'\n') {
        Some(i) if window[after..after + i].iter().all(|c| c.is_ascii_whitespace()) => after + i + 1,
        _ if after == data.len() => after,
        _ => return Err(FormatError::at_byte(after, "'end_header' is not followed by a line end")),
    };
    let text = String::from_utf8_lossy(&data[..after]);
    let mut encoding = None;
    let mut version = String::new();
    let mut elements: Vec<Element> = Vec::new();
    let mut lines = 0u64;
    for (i, raw) in text.split('\n').enumerate() {
        let line_no = i as u64 + 1;
        lines = line_no;
        let line = raw.trim();
        let mut w = line.split_ascii_whitespace();
        let err = |m: String| FormatError::at_line(line_no, m);
        match w.next() {
            None | Some("ply") | Some("comment") | Some("obj_info") | Some("end_header") => {}
            Some("format") => {
                encoding = Some(match w.next() {
                    Some("ascii") => Encoding::Ascii,
                    Some("binary_little_endian") => Encoding::BinaryLittleEndian,
                    Some("binary_big_endian") => Encoding::BinaryBigEndian,
                    other => return Err(err(format!("unknown format '{}'", other.unwrap_or("")))),
                });
                version = w.next().unwrap_or("").to_string();
            }
            Some("element") => {
                let name = w.next().ok_or_else(|| err("element without a name".into()))?.to_string();
                let count_text = w.next().unwrap_or("");
                let count = count_text
                    .parse::<u64>()
                    .map_err(|_| err(format!("element '{name}': '{count_text}' is not a count")))?;
                elements.push(Element { name, count, props: Vec::new() });
            }
            Some("property") => {
                let el = elements.last_mut().ok_or_else(|| err("property before any element".into()))?;
                let t = w.next().unwrap_or("");
                let kind = if t == "list" {
                    let c = w.next().unwrap_or("");
                    let it = w.next().unwrap_or("");
                    match (scalar(c), scalar(it)) {
                        (Some(count), Some(item)) if !count.is_float() => Kind::List { count, item },
                        _ => return Err(err(format!("bad list property types '{c} {it}'"))),
                    }
                } else {
                    Kind::Scalar(scalar(t).ok_or_else(|| err(format!("unknown property type '{t}'")))?)
                };
                let name = w.next().ok_or_else(|| err("property without a name".into()))?.to_string();
                el.props.push(Property { name, kind });
            }
            Some(other) => return Err(err(format!("unknown header keyword '{other}'"))),
        }
    }
    let encoding = encoding.ok_or_else(|| FormatError::at_line(2, "no 'format' line in the header"))?;
    Ok(Header { encoding, version, elements, body, lines })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// What each vertex property is used for.
#[derive(Clone, Debug, Default)]
struct Roles {
    xyz: [Option<usize>; 3],
    rgb: [Option<usize>; 3],
    intensity: Option<usize>,
    class: Option<usize>,
    /// The other scalar properties, each a field by its own name.
    extras: Vec<(usize, Field)>,
}

fn roles(el: &Element) -> Result<(Roles, Vec<String>), FormatError> {
    let mut r = Roles::default();
    let names: Vec<String> = el.props.iter().map(|p| p.name.to_ascii_lowercase()).collect();
    let pos = |cands: &[&str]| cands.iter().find_map(|c| names.iter().position(|n| n == c));
    for (k, axis) in ["x", "y", "z"].iter().enumerate() {
        r.xyz[k] = pos(&[axis]);
    }
    for set in [["red", "green", "blue"], ["r", "g", "b"], ["diffuse_red", "diffuse_green", "diffuse_blue"]] {
        let idx = [pos(&[set[0]]), pos(&[set[1]]), pos(&[set[2]])];
        if idx.iter().all(|i| i.is_some()) {
            r.rgb = idx;
            break;
        }
    }
    r.intensity = pos(&["intensity", "scalar_intensity", "reflectance"])
        .or_else(|| names.iter().position(|n| n.starts_with("scalar_") && n != "scalar_classification"));
    r.class = pos(&["classification", "scalar_classification", "class"]);
    let missing: Vec<&str> =
        ["x", "y", "z"].into_iter().zip(r.xyz).filter(|(_, i)| i.is_none()).map(|(a, _)| a).collect();
    if !missing.is_empty() {
        return Err(FormatError::Invalid(format!(
            "the vertex element has no '{}' property (it has: {})",
            missing.join("', '"),
            el.props.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    for (i, p) in el.props.iter().enumerate() {
        let role = r.xyz.contains(&Some(i)) || r.rgb.contains(&Some(i)) || r.intensity == Some(i) || r.class == Some(i);
        if role && matches!(p.kind, Kind::List { .. }) {
            return Err(FormatError::Invalid(format!("vertex property '{}' is a list, not a number", p.name)));
        }
    }
    let mut skipped = Vec::new();
    for (i, p) in el.props.iter().enumerate() {
        let s = Some(i);
        if r.xyz.contains(&s) || r.rgb.contains(&s) || r.intensity == s || r.class == s {
            continue;
        }
        match (&p.kind, Field::extra(&p.name)) {
            (Kind::Scalar(_), Some(f)) => r.extras.push((i, f)),
            (Kind::Scalar(_), None) => {
                skipped.push(format!("{} (more than {} extra fields)", p.name, pcv_model::fields::MAX_EXTRA))
            }
            (Kind::List { .. }, _) => skipped.push(p.name.clone()),
        }
    }
    Ok((r, skipped))
}

fn kind_scalar(p: &Property) -> Scalar {
    match p.kind {
        Kind::Scalar(s) => s,
        Kind::List { item, .. } => item,
    }
}

fn info_of(h: &Header, el: &Element, r: &Roles, skipped: Vec<String>) -> FileInfo {
    let enc = match h.encoding {
        Encoding::Ascii => "ascii",
        Encoding::BinaryLittleEndian => "binary_little_endian",
        Encoding::BinaryBigEndian => "binary_big_endian",
    };
    let ty = |i: Option<usize>| i.map(|i| type_name(kind_scalar(&el.props[i]))).unwrap_or("");
    let mut attributes = vec![format!("xyz ({})", ty(r.xyz[0]))];
    if let Some(i) = r.rgb[0] {
        attributes.push(format!("rgb ({}, {})", ty(Some(i)), el.props[i].name));
    }
    if let Some(i) = r.intensity {
        attributes.push(format!("intensity ({}, {})", ty(Some(i)), el.props[i].name));
    }
    if let Some(i) = r.class {
        attributes.push(format!("classification ({}, {})", ty(Some(i)), el.props[i].name));
    }
    if !r.extras.is_empty() {
        let named = r.extras.iter().map(|&(i, f)| format!("{} ({})", f.name(), ty(Some(i))));
        attributes.push(format!("{} (colour with --color-by NAME)", named.collect::<Vec<_>>().join(", ")));
    }
    let others: Vec<String> = h
        .elements
        .iter()
        .filter(|e| e.name != el.name)
        .map(|e| format!("element {} ({} items, not read)", e.name, e.count))
        .collect();
    FileInfo {
        variant: format!("{enc} {}", h.version),
        declared_points: Some(el.count),
        attributes,
        skipped,
        header_bounds: None,
        notes: others,
    }
}

/// Where the vertex element's data starts (bytes for binary, lines for ascii), skipping the elements
/// before it.
fn vertex_element(h: &Header) -> Result<usize, FormatError> {
    h.elements.iter().position(|e| e.name == "vertex").ok_or_else(|| {
        FormatError::Invalid(format!(
            "no 'vertex' element (elements: {})",
            h.elements.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", ")
        ))
    })
}

/// Whether `p` of `el` is a face's list of vertex indices (whose entries must name vertices).
fn is_face_list(el: &Element, p: &Property) -> bool {
    el.name == "face" && matches!(p.name.as_str(), "vertex_indices" | "vertex_index")
}

/// The end of `el.count` binary records of `el` starting at `start`, walking lists where needed
/// (their sizes as read), or an error naming the element, the record and the byte. Faces must have at
/// least 3 vertices, each an index below `vertices`: a face list read from the wrong place fails that.
fn skip_binary(data: &[u8], start: usize, el: &Element, le: bool, vertices: u64) -> Result<usize, FormatError> {
    let short = |at: usize, k: u64| {
        FormatError::at_byte(
            at,
            format!("the file ends inside element '{}' (in record {k} of the {} declared)", el.name, el.count),
        )
    };
    if let Some(size) = el.fixed_size() {
        let left = (data.len() - start) as u64;
        return match (size as u64).checked_mul(el.count) {
            Some(total) if total <= left => Ok(start + total as usize),
            _ => Err(short(data.len(), if size == 0 { 0 } else { left / size as u64 })),
        };
    }
    let mut at = start;
    for k in 0..el.count {
        for p in &el.props {
            match p.kind {
                Kind::Scalar(s) => at += s.size(),
                Kind::List { count, item } => {
                    if at + count.size() > data.len() {
                        return Err(short(at, k));
                    }
                    let n = count.read(data, at, le);
                    if !(0.0..=(data.len() - at) as f64).contains(&n) {
                        return Err(FormatError::at_byte(
                            at,
                            format!(
                                "list '{}' of element '{}' (record {k}): length {n} is impossible here",
                                p.name, el.name
                            ),
                        ));
                    }
                    let items = at + count.size();
                    at = items + n as usize * item.size();
                    if at <= data.len() && is_face_list(el, p) {
                        let bad = |m: String| {
                            FormatError::at_byte(items - count.size(), format!("element '{}' record {k}: {m}", el.name))
                        };
                        if n < 3.0 {
                            return Err(bad(format!("a face of {n} vertices (a face needs at least 3)")));
                        }
                        for i in 0..n as usize {
                            let v = item.read(data, items + i * item.size(), le);
                            if !(0.0..vertices as f64).contains(&v) {
                                return Err(bad(format!("vertex index {v} is not one of the {vertices} vertices")));
                            }
                        }
                    }
                }
            }
            if at > data.len() {
                return Err(short(data.len(), k));
            }
        }
    }
    Ok(at)
}

/// The bounds of a sample of the vertices, read cheaply (for choosing the origin before decoding).
pub fn estimate(data: &[u8]) -> Option<DBounds> {
    let h = parse_header(data).ok()?;
    let vi = vertex_element(&h).ok()?;
    let el = &h.elements[vi];
    let (r, _) = roles(el).ok()?;
    match h.encoding {
        Encoding::Ascii => {
            let start =
                ascii_skip_lines(data, h.body, h.lines + 1, h.elements[..vi].iter().map(|e| e.count).sum()).ok()?.0;
            let text = std::str::from_utf8(&data[start..data.len().min(start + (1 << 16))]).ok()?;
            sample_bounds(text.lines().take(64).filter_map(|l| {
                let v: Vec<f64> = l.split_ascii_whitespace().filter_map(|t| t.parse().ok()).collect();
                let g = |k: usize| r.xyz[k].and_then(|i| v.get(i).copied());
                Some([g(0)?, g(1)?, g(2)?])
            }))
        }
        _ => {
            let le = h.encoding == Encoding::BinaryLittleEndian;
            let mut start = h.body;
            for e in &h.elements[..vi] {
                start = skip_binary(data, start, e, le, el.count).ok()?;
            }
            let size = el.fixed_size()?;
            let n = (el.count as usize).min((data.len() - start) / size.max(1));
            let offs = offsets(el);
            let sc = |i: usize| kind_scalar(&el.props[i]);
            sample_bounds(sample_indices(n, 1024).map(|k| {
                let rec = &data[start + k * size..start + (k + 1) * size];
                let g = |a: usize| r.xyz[a].map(|i| sc(i).read(rec, offs[i], le)).unwrap_or(f64::NAN);
                [g(0), g(1), g(2)]
            }))
        }
    }
}

fn offsets(el: &Element) -> Vec<usize> {
    let mut o = 0;
    el.props
        .iter()
        .map(|p| {
            let here = o;
            o += kind_scalar(p).size();
            here
        })
        .collect()
}

/// Reads the file's vertices.
pub fn read(data: &[u8], opts: &ReadOptions) -> Result<Decoded, FormatError> {
    let mut src = open(data)?;
    src.keep_fields(opts.fields.for_points(src.declared()));
    opts.progress.add_total(src.declared());
    crate::stream::collect(&src, &opts.origin.to_array(), opts.progress)
}

/// How the vertex records are read.
enum Body<'a> {
    /// Binary, every vertex property a scalar: 64 Ki records a job.
    Fixed { records: &'a [u8], size: usize, count: usize, dec: FixedDec },
    /// Binary with list properties in the vertices: one job that walks them.
    Lists { start: usize },
    /// Ascii: line-aligned pieces of the vertex lines.
    Ascii { chunks: Vec<TextChunk<'a>> },
}

/// Where a fixed-size vertex record keeps what pcv reads.
#[derive(Clone, Copy, Debug)]
struct FixedDec {
    le: bool,
    xyz: [(Scalar, usize); 3],
    rgb: Option<[(Scalar, usize); 3]>,
    inten: Option<(Scalar, usize)>,
    class: Option<(Scalar, usize)>,
    /// Little-endian float positions, uchar colors and nothing else: the common layout, with its own loop.
    fast: bool,
}

impl FixedDec {
    #[inline(always)]
    fn rec(&self, rec: &[u8]) -> Rec {
        let (xyz, le) = (self.xyz, self.le);
        let mut out = Rec {
            xyz: [xyz[0].0.read(rec, xyz[0].1, le), xyz[1].0.read(rec, xyz[1].1, le), xyz[2].0.read(rec, xyz[2].1, le)],
            rgba: [0, 0, 0, 255],
            ..Default::default()
        };
        if let Some(c) = self.rgb {
            out.rgba = [
                c[0].0.read_color(rec, c[0].1, le),
                c[1].0.read_color(rec, c[1].1, le),
                c[2].0.read_color(rec, c[2].1, le),
                255,
            ];
            if c[0].0 != Scalar::U8 {
                out.rgb16 = Some([
                    c[0].0.read_color16(rec, c[0].1, le),
                    c[1].0.read_color16(rec, c[1].1, le),
                    c[2].0.read_color16(rec, c[2].1, le),
                ]);
            }
        }
        if let Some((s, o)) = self.inten {
            out.intensity = s.read(rec, o, le) as f32;
        }
        if let Some((s, o)) = self.class {
            out.class = s.read(rec, o, le) as u8;
        }
        out
    }

    /// The common layout's loop (little-endian float positions, uchar colors or none, nothing else):
    /// positions copied as they are when the origin is 0, bounds kept in f32 (exact: the values are
    /// f32), non-finite points dropped. The usual order — x, y, z first, then red, green, blue — gets
    /// its own copy with constant offsets, so the fields load as whole words.
    fn push_fast(&self, src: &[u8], size: usize, origin: &[f64; 3], out: &mut Staging) {
        let xo = self.xyz.map(|f| f.1);
        match self.rgb.map(|c| c.map(|f| f.1)) {
            Some([12, 13, 14]) if xo == [0, 4, 8] => self.push_fast_in::<true, true>(src, size, origin, out),
            None if xo == [0, 4, 8] => self.push_fast_in::<false, true>(src, size, origin, out),
            Some(_) => self.push_fast_in::<true, false>(src, size, origin, out),
            None => self.push_fast_in::<false, false>(src, size, origin, out),
        }
    }

    /// Runs the loop compiled for AVX2 where the CPU has it, else the baseline one.
    fn push_fast_in<const RGB: bool, const STD: bool>(
        &self,
        src: &[u8],
        size: usize,
        origin: &[f64; 3],
        out: &mut Staging,
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above), all `push_avx2` asks for.
            return unsafe { self.push_avx2::<RGB, STD>(src, size, origin, out) };
        }
        self.push_loop::<RGB, STD>(src, size, origin, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn push_avx2<const RGB: bool, const STD: bool>(
        &self,
        src: &[u8],
        size: usize,
        origin: &[f64; 3],
        out: &mut Staging,
    ) {
        self.push_loop::<RGB, STD>(src, size, origin, out)
    }

    #[inline(always)]
    fn push_loop<const RGB: bool, const STD: bool>(
        &self,
        src: &[u8],
        size: usize,
        origin: &[f64; 3],
        out: &mut Staging,
    ) {
        let n = src.len() / size;
        let (xo, c) = if STD {
            ([0, 4, 8], [12, 13, 14])
        } else {
            (self.xyz.map(|f| f.1), self.rgb.map(|c| c.map(|f| f.1)).unwrap_or([0; 3]))
        };
        let zero = *origin == [0.0; 3];
        let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
        let mut kept = 0usize;
        {
            let (pts, _, _) = out.spare(n);
            // Every field read below ends within the record (checked once per record, cheaply).
            let needed = (xo.iter().max().copied().unwrap_or(0) + 4).max(if RGB {
                c.iter().max().copied().unwrap_or(0) + 1
            } else {
                0
            });
            for rec in src.chunks_exact(size).take(n) {
                let f = Fields::new(rec, needed);
                // SAFETY (every `get` below): the offsets are this layout's fields, all under `needed`.
                let g = |o: usize| f32::from_le_bytes(unsafe { f.get::<4>(o) });
                let v = [g(xo[0]), g(xo[1]), g(xo[2])];
                // 0 for finite coordinates, NaN when any is NaN or infinite.
                let t = v[0] * 0.0 + v[1] * 0.0 + v[2] * 0.0;
                if t != 0.0 {
                    continue;
                }
                // Plain compares (the values are finite here): one min/max instruction each, where
                // `f32::min` would add NaN handling.
                for a in 0..3 {
                    lo[a] = if v[a] < lo[a] { v[a] } else { lo[a] };
                    hi[a] = if v[a] > hi[a] { v[a] } else { hi[a] };
                }
                let pos = if zero {
                    v
                } else {
                    [
                        (v[0] as f64 - origin[0]) as f32,
                        (v[1] as f64 - origin[1]) as f32,
                        (v[2] as f64 - origin[2]) as f32,
                    ]
                };
                let rgba = if RGB {
                    if STD {
                        let b: [u8; 3] = unsafe { f.get::<3>(12) };
                        [b[0], b[1], b[2], 255]
                    } else {
                        [
                            unsafe { f.get::<1>(c[0]) }[0],
                            unsafe { f.get::<1>(c[1]) }[0],
                            unsafe { f.get::<1>(c[2]) }[0],
                            255,
                        ]
                    }
                } else {
                    [0, 0, 0, 255]
                };
                pts[kept].write(crate::point::Point { pos, rgba });
                kept += 1;
            }
        }
        // SAFETY: the first `kept` spare points were written above; this layout has no intensity or
        // classification column (`fast` requires it), so those slices are empty and stay so.
        unsafe { out.commit(kept) };
        out.nonfinite += (n - kept) as u64;
        if kept > 0 {
            let b = DBounds { min: lo.map(|v| v as f64), max: hi.map(|v| v as f64) };
            out.bounds = DBounds::union(out.bounds, b);
        }
    }
}

/// An opened PLY file (see [`ChunkSource`]).
pub struct PlySource<'a> {
    data: &'a [u8],
    h: Header,
    vi: usize,
    roles: Roles,
    body: Body<'a>,
    info: FileInfo,
    /// The extra fields kept as columns ([`PlySource::keep_fields`]), in [`FieldSet`] order: each one's
    /// property index.
    kept: Vec<(Field, usize)>,
}

/// Opens a PLY file: parses the header and checks that the file holds every element it declares —
/// those before the vertices (skipped), the vertices, and those after them (faces: list sizes as read)
/// — before anything is decoded.
pub fn open(data: &[u8]) -> Result<PlySource<'_>, FormatError> {
    let h = parse_header(data)?;
    let vi = vertex_element(&h)?;
    let el = &h.elements[vi];
    let (roles, skipped) = roles(el)?;
    let mut info = info_of(&h, el, &roles, skipped);
    let body = match h.encoding {
        Encoding::Ascii => open_ascii(data, &h, vi, &mut info)?,
        _ => open_binary(data, &h, vi, &roles, &mut info)?,
    };
    Ok(PlySource { data, h, vi, roles, body, info, kept: Vec::new() })
}

fn open_binary<'a>(
    data: &'a [u8],
    h: &Header,
    vi: usize,
    r: &Roles,
    info: &mut FileInfo,
) -> Result<Body<'a>, FormatError> {
    let le = h.encoding == Encoding::BinaryLittleEndian;
    let mut start = h.body;
    let vertices = h.elements[vi].count;
    for e in &h.elements[..vi] {
        start = skip_binary(data, start, e, le, vertices)?;
    }
    let el = &h.elements[vi];
    let end = match el.fixed_size() {
        Some(size) => {
            let avail = data.len() - start;
            let need = (size as u128) * el.count as u128;
            if need > avail as u128 || (size == 0 && el.count > 0) {
                return Err(FormatError::at_byte(
                    start,
                    format!("the header declares {} vertices of {size} bytes ({need} bytes), but only {avail} bytes follow the header", el.count),
                ));
            }
            start + need as usize
        }
        None => skip_binary(data, start, el, le, vertices)?,
    };
    let mut at = end;
    for e in &h.elements[vi + 1..] {
        at = skip_binary(data, at, e, le, vertices)?;
    }
    if at < data.len() {
        info.notes.push(format!("{} bytes after the last element, not read", data.len() - at));
    }
    let Some(size) = el.fixed_size() else { return Ok(Body::Lists { start }) };
    let offs = offsets(el);
    let field = |i: Option<usize>| i.map(|i| (kind_scalar(&el.props[i]), offs[i]));
    let xyz = [field(r.xyz[0]), field(r.xyz[1]), field(r.xyz[2])].map(|f| f.unwrap_or((Scalar::F32, 0)));
    let rgb = r.rgb.map(field);
    let rgb = if rgb.iter().all(|c| c.is_some()) { Some(rgb.map(|c| c.unwrap_or((Scalar::U8, 0)))) } else { None };
    let (inten, class) = (field(r.intensity), field(r.class));
    let fast = le
        && xyz.iter().all(|f| f.0 == Scalar::F32)
        && rgb.is_none_or(|c| c.iter().all(|f| f.0 == Scalar::U8))
        && inten.is_none()
        && class.is_none();
    let dec = FixedDec { le, xyz, rgb, inten, class, fast };
    Ok(Body::Fixed { records: &data[start..end], size, count: el.count as usize, dec })
}

fn open_ascii<'a>(data: &'a [u8], h: &Header, vi: usize, info: &mut FileInfo) -> Result<Body<'a>, FormatError> {
    let el = &h.elements[vi];
    let (mut at, mut line) = (h.body, h.lines + 1);
    for e in &h.elements[..vi] {
        (at, line) = ascii_element(data, at, line, e, el.count)?;
    }
    let (start, first_line) = (at, line);
    // A vertex line holds at least one character and a line end per property.
    let min_line = 2 * el.props.len().max(1) as u64;
    if el.count > (data.len() - start) as u64 / min_line + 1 {
        return Err(FormatError::at_line(
            first_line,
            format!(
                "the header declares {} vertices, more than the {} bytes after it can hold",
                el.count,
                data.len() - start
            ),
        ));
    }
    let (end, mut line) = ascii_skip_lines(data, start, first_line, el.count).map_err(|e| {
        FormatError::at_line(
            first_line,
            format!("the header declares {} vertices but fewer vertex lines follow ({e})", el.count),
        )
    })?;
    let mut at = end;
    for e in &h.elements[vi + 1..] {
        (at, line) = ascii_element(data, at, line, e, el.count)?;
    }
    if data[at..].iter().any(|c| !c.is_ascii_whitespace()) {
        info.notes.push(format!("lines from line {line} on follow the last element, not read"));
    }
    Ok(Body::Ascii { chunks: text_chunks(&data[start..end], first_line, 4 << 20) })
}

/// Checks the `el.count` ascii lines of `el` from `at` (line number `line`): each must hold the values
/// its properties take (lists: their length, then that many; faces: at least 3 indices below
/// `vertices`). Returns the offset and line after them.
fn ascii_element(
    data: &[u8],
    mut at: usize,
    mut line: u64,
    el: &Element,
    vertices: u64,
) -> Result<(usize, u64), FormatError> {
    for k in 0..el.count {
        // The next non-empty line.
        let text = loop {
            if at >= data.len() {
                return Err(FormatError::at_line(
                    line,
                    format!("the file ends inside element '{}' ({k} of its {} lines)", el.name, el.count),
                ));
            }
            let end = memchr::memchr(b'\n', &data[at..]).map(|i| at + i + 1).unwrap_or(data.len());
            let l = &data[at..end];
            at = end;
            line += 1;
            if !l.iter().all(|c| c.is_ascii_whitespace()) {
                break l;
            }
        };
        let here = line - 1;
        let text = std::str::from_utf8(text).map_err(|_| FormatError::at_line(here, "not UTF-8 text"))?;
        let mut tokens = text.split_ascii_whitespace();
        for p in &el.props {
            let missing =
                || FormatError::at_line(here, format!("element '{}': the line ends before '{}'", el.name, p.name));
            let t = tokens.next().ok_or_else(missing)?;
            if let Kind::List { .. } = p.kind {
                let n = t.parse::<u64>().map_err(|_| {
                    FormatError::at_line(here, format!("element '{}': list length '{t}' is not a count", el.name))
                })?;
                let face = is_face_list(el, p);
                if face && n < 3 {
                    return Err(FormatError::at_line(
                        here,
                        format!("element '{}': a face of {n} vertices (a face needs at least 3)", el.name),
                    ));
                }
                for _ in 0..n {
                    let v = tokens.next().ok_or_else(missing)?;
                    if face && v.parse::<u64>().map_or(true, |v| v >= vertices) {
                        return Err(FormatError::at_line(
                            here,
                            format!("element '{}': vertex index '{v}' is not one of the {vertices} vertices", el.name),
                        ));
                    }
                }
            }
        }
        if tokens.next().is_some() {
            return Err(FormatError::at_line(
                here,
                format!("element '{}': more values on the line than its properties take", el.name),
            ));
        }
    }
    Ok((at, line))
}

impl PlySource<'_> {
    /// The vertices the header declares.
    pub fn declared(&self) -> u64 {
        self.h.elements[self.vi].count
    }

    /// Keeps `fields` (those of the file's own properties among them) as columns.
    pub fn keep_fields(&mut self, fields: FieldSet) {
        let mine = FieldSet::of(&self.roles.extras.iter().map(|e| e.1).collect::<Vec<_>>());
        self.kept = fields
            .intersect(mine)
            .iter()
            .filter_map(|f| self.roles.extras.iter().find(|e| e.1 == f).map(|e| (f, e.0)))
            .collect();
    }

    /// For each vertex property, the column its value goes to (kept extra fields only).
    fn slots(&self) -> Vec<Option<usize>> {
        let mut slots = vec![None; self.h.elements[self.vi].props.len()];
        for (k, &(_, i)) in self.kept.iter().enumerate() {
            slots[i] = Some(k);
        }
        slots
    }

    /// The vertex records with lists, one after another (one job).
    fn decode_lists(&self, start: usize, origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError> {
        let (data, el, r) = (self.data, &self.h.elements[self.vi], &self.roles);
        let le = self.h.encoding == Encoding::BinaryLittleEndian;
        let mut at = start;
        let (slots, mut extra) = (self.slots(), vec![f64::NAN; self.kept.len()]);
        for _ in 0..el.count {
            let mut vals = [f64::NAN; 3];
            let mut rgba = [0, 0, 0, 255];
            let (mut inten, mut class) = (0f32, 0u8);
            for (i, p) in el.props.iter().enumerate() {
                // `open` walked these records, so every read is inside the file.
                match p.kind {
                    Kind::Scalar(s) => {
                        let v = s.read(data, at, le);
                        assign(r, i, s, v, &mut vals, &mut rgba, &mut inten, &mut class);
                        if let Some(k) = slots[i] {
                            extra[k] = v;
                        }
                        at += s.size();
                    }
                    Kind::List { count, item } => at += count.size() + count.read(data, at, le) as usize * item.size(),
                }
            }
            out.push_with_fields(
                &Rec { xyz: vals, rgba, intensity: inten, class, ..Default::default() },
                &extra,
                origin,
            );
        }
        Ok(())
    }

    /// One piece of vertex lines.
    fn decode_ascii(&self, c: &TextChunk, origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError> {
        let (el, r) = (&self.h.elements[self.vi], &self.roles);
        let text = std::str::from_utf8(c.text).map_err(|e| {
            FormatError::at_line(
                c.first_line + memchr::memchr_iter(b'\n', &c.text[..e.valid_up_to()]).count() as u64,
                "not UTF-8 text",
            )
        })?;
        let (slots, mut extra) = (self.slots(), vec![f64::NAN; self.kept.len()]);
        for (k, line) in text.split('\n').enumerate() {
            let line_no = c.first_line + k as u64;
            let mut tokens = line.split_ascii_whitespace().peekable();
            if tokens.peek().is_none() {
                continue;
            }
            let mut vals = [f64::NAN; 3];
            let mut rgba = [0, 0, 0, 255];
            let (mut inten, mut class) = (0f32, 0u8);
            for (i, p) in el.props.iter().enumerate() {
                let mut next = || -> Result<f64, FormatError> {
                    let t = tokens.next().ok_or_else(|| {
                        FormatError::at_line(line_no, format!("the vertex has too few values: '{}' is missing", p.name))
                    })?;
                    t.parse::<f64>()
                        .map_err(|_| FormatError::at_line(line_no, format!("'{t}' is not a number ({})", p.name)))
                };
                match p.kind {
                    Kind::Scalar(s) => {
                        let v = next()?;
                        assign(r, i, s, v, &mut vals, &mut rgba, &mut inten, &mut class);
                        if let Some(k) = slots[i] {
                            extra[k] = v;
                        }
                    }
                    Kind::List { .. } => {
                        let n = next()?;
                        if !(0.0..=1e6).contains(&n) {
                            return Err(FormatError::at_line(line_no, format!("list length {n} is impossible")));
                        }
                        for _ in 0..n as usize {
                            next()?;
                        }
                    }
                }
            }
            if tokens.next().is_some() {
                return Err(FormatError::at_line(
                    line_no,
                    format!("the vertex line has more values than its {} properties take", el.props.len()),
                ));
            }
            out.push_with_fields(
                &Rec { xyz: vals, rgba, intensity: inten, class, ..Default::default() },
                &extra,
                origin,
            );
        }
        Ok(())
    }
}

impl ChunkSource for PlySource<'_> {
    fn jobs(&self) -> usize {
        match &self.body {
            Body::Fixed { count, .. } => record_jobs(*count),
            Body::Lists { .. } => 1,
            Body::Ascii { chunks } => chunks.len(),
        }
    }

    fn job_points(&self, job: usize) -> u64 {
        match &self.body {
            Body::Fixed { count, .. } => record_range(job, *count).len() as u64,
            Body::Lists { .. } => self.declared(),
            Body::Ascii { chunks } => memchr::memchr_iter(b'\n', chunks[job].text).count() as u64 + 1,
        }
    }

    fn reserve_points(&self) -> u64 {
        // `open` checked that the file holds every declared vertex.
        self.declared()
    }

    fn exact_jobs(&self) -> bool {
        matches!(self.body, Body::Fixed { .. })
    }

    fn job_bytes(&self, job: usize) -> Option<std::ops::Range<usize>> {
        match &self.body {
            Body::Fixed { records, size, count, .. } => {
                let (r, at) = (record_range(job, *count), records.as_ptr() as usize - self.data.as_ptr() as usize);
                Some(at + r.start * size..at + r.end * size)
            }
            Body::Lists { .. } => None,
            Body::Ascii { chunks } => {
                let at = chunks[job].text.as_ptr() as usize - self.data.as_ptr() as usize;
                Some(at..at + chunks[job].text.len())
            }
        }
    }

    fn columns(&self) -> Columns {
        Columns {
            intensity: self.roles.intensity.is_some(),
            classification: self.roles.class.is_some(),
            fields: FieldSet::of(&self.kept.iter().map(|k| k.0).collect::<Vec<_>>()),
        }
    }

    fn has_rgb(&self) -> bool {
        self.roles.rgb[0].is_some()
    }

    fn decode(&self, job: usize, origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError> {
        match &self.body {
            Body::Fixed { records, size, count, dec } => {
                let r = record_range(job, *count);
                let src = &records[r.start * size..r.end * size];
                if !self.kept.is_empty() && !out.keep_f64 {
                    let offs = offsets(&self.h.elements[self.vi]);
                    let props = &self.h.elements[self.vi].props;
                    let at: Vec<(Field, Scalar, usize)> =
                        self.kept.iter().map(|&(f, i)| (f, kind_scalar(&props[i]), offs[i])).collect();
                    let field = |rec: &[u8], f: Field| {
                        at.iter().find(|a| a.0 == f).map_or(f64::NAN, |&(_, s, o)| s.read(rec, o, dec.le))
                    };
                    out.push_records_with_fields(src, *size, &|rec: &[u8]| dec.rec(rec), &field, origin);
                } else if dec.fast && !out.keep_f64 {
                    dec.push_fast(src, *size, origin, out);
                } else {
                    out.push_records(src, *size, &|rec: &[u8]| dec.rec(rec), origin);
                }
                Ok(())
            }
            Body::Lists { start } => self.decode_lists(*start, origin, out),
            Body::Ascii { chunks } => self.decode_ascii(&chunks[job], origin, out),
        }
    }

    fn info(&self) -> FileInfo {
        self.info.clone()
    }

    fn estimate(&self) -> Option<DBounds> {
        estimate(self.data)
    }

    fn precision(&self) -> Precision {
        let el = &self.h.elements[self.vi];
        let f32_only = self.roles.xyz.iter().all(|i| {
            i.is_some_and(|i| {
                matches!(kind_scalar(&el.props[i]), Scalar::F32 | Scalar::I8 | Scalar::U8 | Scalar::I16 | Scalar::U16)
            })
        });
        if f32_only {
            Precision::F32
        } else {
            Precision::F64
        }
    }
}

/// Stores value `v` of vertex property `i` where its role says.
#[expect(
    clippy::too_many_arguments,
    reason = "the per-value hot path writes into the record's fields directly (no struct to rebuild per value)"
)]
#[inline]
fn assign(
    r: &Roles,
    i: usize,
    s: Scalar,
    v: f64,
    xyz: &mut [f64; 3],
    rgba: &mut [u8; 4],
    inten: &mut f32,
    class: &mut u8,
) {
    for k in 0..3 {
        if r.xyz[k] == Some(i) {
            xyz[k] = v;
        }
        if r.rgb[k] == Some(i) {
            rgba[k] = color_value(s, v);
        }
    }
    if r.intensity == Some(i) {
        *inten = v as f32;
    }
    if r.class == Some(i) {
        *class = v as u8;
    }
}

/// A color channel value of type `s` as 0..=255.
fn color_value(s: Scalar, v: f64) -> u8 {
    match s {
        Scalar::U8 | Scalar::I8 => v.clamp(0.0, 255.0) as u8,
        Scalar::U16 | Scalar::I16 => (v.clamp(0.0, 65535.0) as u32 >> 8) as u8,
        Scalar::U32 | Scalar::I32 | Scalar::U64 | Scalar::I64 => (v.clamp(0.0, 4294967295.0) as u64 >> 24) as u8,
        Scalar::F32 | Scalar::F64 => color_from_unit(v),
    }
}

/// Skips `n` non-empty lines from `at` (line number `line`); returns the new offset and line number.
fn ascii_skip_lines(data: &[u8], mut at: usize, mut line: u64, n: u64) -> Result<(usize, u64), FormatError> {
    let mut left = n;
    while left > 0 {
        if at >= data.len() {
            return Err(FormatError::at_line(line, format!("the file ends {left} lines early")));
        }
        let end = memchr::memchr(b'\n', &data[at..]).map(|i| at + i + 1).unwrap_or(data.len());
        if !data[at..end].iter().all(|c| c.is_ascii_whitespace()) {
            left -= 1;
        }
        at = end;
        line += 1;
    }
    Ok((at, line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::Progress;
    use glam::DVec3;

    fn read_bytes(b: &[u8]) -> Result<Decoded, FormatError> {
        read(b, &ReadOptions { origin: DVec3::ZERO, progress: &Progress::hidden(), fields: Default::default() })
    }

    #[test]
    fn ascii_with_faces_and_crlf() {
        let text = "ply\r\nformat ascii 1.0\r\ncomment hi\r\nelement vertex 2\r\nproperty float x\r\nproperty float y\r\nproperty float z\r\nproperty uchar red\r\nproperty uchar green\r\nproperty uchar blue\r\nelement face 1\r\nproperty list uchar int vertex_indices\r\nend_header\r\n1 2 3 255 0 10\r\n-1 -2 -3.5 0 255 20\r\n3 0 1 1\r\n";
        let d = read_bytes(text.as_bytes()).unwrap();
        assert_eq!(d.points.len(), 2);
        assert_eq!(d.points[1].pos, [-1.0, -2.0, -3.5]);
        assert_eq!(d.points[0].rgba, [255, 0, 10, 255]);
        assert_eq!(d.bounds.min, [-1.0, -2.0, -3.5]);
        assert_eq!(d.info.variant, "ascii 1.0");
    }

    #[test]
    fn truncated_binary_names_the_byte() {
        let mut b = b"ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nend_header\n".to_vec();
        let body = b.len();
        b.extend_from_slice(&[0u8; 20]);
        let e = read_bytes(&b).unwrap_err();
        assert_eq!(
            e,
            FormatError::at_byte(
                body,
                "the header declares 3 vertices of 12 bytes (36 bytes), but only 20 bytes follow the header"
            )
        );
    }

    #[test]
    fn missing_z_is_named() {
        let b = b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nend_header\n1 2\n";
        let e = read_bytes(b).unwrap_err().to_string();
        assert!(e.contains("no 'z' property") && e.contains("x, y"), "{e}");
    }
}
