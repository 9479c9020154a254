//! PLY (Stanford polygon format): ascii, binary little endian and binary big endian.
//!
//! How it works: the text header (up to `end_header`) is parsed into elements and their properties.
//! The `vertex` element gives the points: `x`, `y`, `z` (any numeric type, usually float or double),
//! colors from `red`/`green`/`blue`, `r`/`g`/`b` or `diffuse_red`/... (uchar as is, ushort shifted
//! right by 8, float/double as 0..1), intensity from `intensity`, `scalar_intensity` or `reflectance` (or else
//! the first `scalar_*` field, as CloudCompare writes them), classification from `classification`,
//! `scalar_classification` or `class`; other properties (normals, alpha, ...) are skipped. Elements
//! before `vertex` are skipped (by arithmetic when their records are fixed-size, record by record when
//! they hold lists); elements after it are never read. In binary files whose vertex records are
//! fixed-size, the records are decoded in parallel straight from the memory-mapped file
//! ([`super::decode_fixed`]); vertex records with list properties are walked one by one. Ascii vertex
//! lines are parsed in parallel chunks ([`super::text_chunks`]). The declared vertex count is checked
//! against the bytes that follow the header before anything is allocated.
use super::{
    color_from_unit, decode_fixed, sample_bounds, sample_indices, text_chunks, Columns, DBounds, Decoded, FileInfo, FormatError,
    Gathered, ReadOptions, Rec, Scalar,
};
use rayon::prelude::*;

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
            if data.len() > MAX_HEADER_BYTES { "no 'end_header' in the first MiB" } else { "no 'end_header': the header is truncated" },
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
                let count = count_text.parse::<u64>().map_err(|_| err(format!("element '{name}': '{count_text}' is not a count")))?;
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
#[derive(Clone, Copy, Debug, Default)]
struct Roles {
    xyz: [Option<usize>; 3],
    rgb: [Option<usize>; 3],
    intensity: Option<usize>,
    class: Option<usize>,
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
    let missing: Vec<&str> = ["x", "y", "z"].into_iter().zip(r.xyz).filter(|(_, i)| i.is_none()).map(|(a, _)| a).collect();
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
    let skipped = el
        .props
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            let i = Some(*i);
            !(r.xyz.contains(&i) || r.rgb.contains(&i) || r.intensity == i || r.class == i)
        })
        .map(|(_, p)| p.name.clone())
        .collect();
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
    let others: Vec<String> =
        h.elements.iter().filter(|e| e.name != el.name).map(|e| format!("element {} ({} items, not read)", e.name, e.count)).collect();
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
    h.elements
        .iter()
        .position(|e| e.name == "vertex")
        .ok_or_else(|| FormatError::Invalid(format!("no 'vertex' element (elements: {})", h.elements.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", "))))
}

/// Size of `count` binary records of `el` starting at `start`, walking lists where needed.
fn skip_binary(data: &[u8], start: usize, el: &Element, le: bool) -> Result<usize, FormatError> {
    let short = |at: usize| FormatError::at_byte(at, format!("the file ends inside element '{}' ({} declared)", el.name, el.count));
    if let Some(size) = el.fixed_size() {
        let total = (size as u64).checked_mul(el.count).filter(|&t| t <= (data.len() - start) as u64).ok_or_else(|| short(data.len()))?;
        return Ok(start + total as usize);
    }
    let mut at = start;
    for _ in 0..el.count {
        for p in &el.props {
            match p.kind {
                Kind::Scalar(s) => at += s.size(),
                Kind::List { count, item } => {
                    if at + count.size() > data.len() {
                        return Err(short(at));
                    }
                    let n = count.read(data, at, le);
                    if !(0.0..=data.len() as f64).contains(&n) {
                        return Err(FormatError::at_byte(at, format!("list length {n} in element '{}' is impossible", el.name)));
                    }
                    at += count.size() + n as usize * item.size();
                }
            }
            if at > data.len() {
                return Err(short(data.len()));
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
            let start = ascii_skip_lines(data, h.body, h.lines + 1, h.elements[..vi].iter().map(|e| e.count).sum()).ok()?.0;
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
                start = skip_binary(data, start, e, le).ok()?;
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
    let h = parse_header(data)?;
    let vi = vertex_element(&h)?;
    let el = &h.elements[vi];
    let (r, skipped) = roles(el)?;
    let info = info_of(&h, el, &r, skipped);
    opts.progress.add_total(el.count.min(data.len() as u64));
    let cols = Columns { intensity: r.intensity.is_some(), classification: r.class.is_some() };
    let mut out = match h.encoding {
        Encoding::Ascii => read_ascii(data, &h, vi, &r, cols, opts)?,
        _ => read_binary(data, &h, vi, &r, cols, opts)?,
    };
    out.has_rgb = r.rgb[0].is_some();
    out.info = info;
    Ok(out)
}

fn read_binary(data: &[u8], h: &Header, vi: usize, r: &Roles, cols: Columns, opts: &ReadOptions) -> Result<Decoded, FormatError> {
    let le = h.encoding == Encoding::BinaryLittleEndian;
    let mut start = h.body;
    for e in &h.elements[..vi] {
        start = skip_binary(data, start, e, le)?;
    }
    let el = &h.elements[vi];
    let sc = |i: usize| kind_scalar(&el.props[i]);
    if let Some(size) = el.fixed_size() {
        let avail = data.len() - start;
        let need = (size as u128) * el.count as u128;
        if need > avail as u128 || (size == 0 && el.count > 0) {
            return Err(FormatError::at_byte(
                start,
                format!("the header declares {} vertices of {size} bytes ({need} bytes), but only {avail} bytes follow the header", el.count),
            ));
        }
        let offs = offsets(el);
        let field = |i: Option<usize>| i.map(|i| (sc(i), offs[i]));
        let xyz = [field(r.xyz[0]), field(r.xyz[1]), field(r.xyz[2])].map(|f| f.unwrap_or((Scalar::F32, 0)));
        let rgb = r.rgb.map(field);
        let rgb = if rgb.iter().all(|c| c.is_some()) { Some(rgb.map(|c| c.unwrap_or((Scalar::U8, 0)))) } else { None };
        let inten = field(r.intensity);
        let class = field(r.class);
        let f = |rec: &[u8]| {
            let mut out = Rec {
                xyz: [xyz[0].0.read(rec, xyz[0].1, le), xyz[1].0.read(rec, xyz[1].1, le), xyz[2].0.read(rec, xyz[2].1, le)],
                rgba: [0, 0, 0, 255],
                ..Default::default()
            };
            if let Some(c) = rgb {
                out.rgba = [c[0].0.read_color(rec, c[0].1, le), c[1].0.read_color(rec, c[1].1, le), c[2].0.read_color(rec, c[2].1, le), 255];
            }
            if let Some((s, o)) = inten {
                out.intensity = s.read(rec, o, le) as f32;
            }
            if let Some((s, o)) = class {
                out.class = s.read(rec, o, le) as u8;
            }
            out
        };
        // The common layouts get their own copy of the loop, so their reads compile to plain loads.
        let fx = if le && xyz.iter().all(|f| f.0 == Scalar::F32) && rgb.is_none_or(|c| c.iter().all(|f| f.0 == Scalar::U8)) && inten.is_none() && class.is_none() {
            let rgb_off = rgb.map(|c| c.map(|f| f.1));
            let xo = xyz.map(|f| f.1);
            let fast = move |rec: &[u8]| {
                let g = |o: usize| f32::from_le_bytes(super::bytes::<4>(rec, o)) as f64;
                Rec {
                    xyz: [g(xo[0]), g(xo[1]), g(xo[2])],
                    rgba: match rgb_off {
                        Some(c) => [rec[c[0]], rec[c[1]], rec[c[2]], 255],
                        None => [0, 0, 0, 255],
                    },
                    ..Default::default()
                }
            };
            decode_fixed(&data[start..], size, el.count as usize, cols, opts, fast)
        } else {
            decode_fixed(&data[start..], size, el.count as usize, cols, opts, f)
        };
        return Ok(Decoded {
            points: fx.points,
            intensity: fx.intensity,
            classification: fx.classification,
            bounds: fx.bounds,
            nonfinite: fx.nonfinite,
            ..Default::default()
        });
    }
    // Vertex records with lists: one at a time.
    let mut g = Gathered::new();
    let origin = opts.origin.to_array();
    let mut at = start;
    let short = |at: usize| FormatError::at_byte(at, format!("the file ends inside vertex data ({} vertices declared)", el.count));
    for _ in 0..el.count {
        let mut vals = [f64::NAN; 3];
        let mut rgba = [0, 0, 0, 255];
        let (mut inten, mut class) = (0f32, 0u8);
        for (i, p) in el.props.iter().enumerate() {
            match p.kind {
                Kind::Scalar(s) => {
                    if at + s.size() > data.len() {
                        return Err(short(at));
                    }
                    let v = s.read(data, at, le);
                    assign(r, i, s, v, &mut vals, &mut rgba, &mut inten, &mut class);
                    at += s.size();
                }
                Kind::List { count, item } => {
                    if at + count.size() > data.len() {
                        return Err(short(at));
                    }
                    let n = count.read(data, at, le);
                    if !(0.0..=data.len() as f64).contains(&n) {
                        return Err(FormatError::at_byte(at, format!("list length {n} is impossible")));
                    }
                    at += count.size() + n as usize * item.size();
                    if at > data.len() {
                        return Err(short(data.len()));
                    }
                }
            }
        }
        g.push(vals, rgba, cols.intensity.then_some(inten), cols.classification.then_some(class), &origin);
        opts.progress.inc(1);
    }
    Ok(gathered(g, cols))
}

/// Stores value `v` of vertex property `i` where its role says.
#[allow(clippy::too_many_arguments)]
#[inline]
fn assign(r: &Roles, i: usize, s: Scalar, v: f64, xyz: &mut [f64; 3], rgba: &mut [u8; 4], inten: &mut f32, class: &mut u8) {
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

pub(crate) fn gathered(g: Gathered, cols: Columns) -> Decoded {
    Decoded {
        points: g.points,
        intensity: cols.intensity.then_some(g.intensity),
        classification: cols.classification.then_some(g.classification),
        bounds: g.bounds,
        nonfinite: g.nonfinite,
        ..Default::default()
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

fn read_ascii(data: &[u8], h: &Header, vi: usize, r: &Roles, cols: Columns, opts: &ReadOptions) -> Result<Decoded, FormatError> {
    let el = &h.elements[vi];
    let before: u64 = h.elements[..vi].iter().map(|e| e.count).sum();
    let (start, first_line) = ascii_skip_lines(data, h.body, h.lines + 1, before)?;
    // A vertex line holds at least one character and a line end per property.
    let min_line = 2 * el.props.len().max(1) as u64;
    if el.count > (data.len() - start) as u64 / min_line + 1 {
        return Err(FormatError::at_line(
            first_line,
            format!("the header declares {} vertices, more than the {} bytes after it can hold", el.count, data.len() - start),
        ));
    }
    let (end, _) = ascii_skip_lines(data, start, first_line, el.count)
        .map_err(|e| FormatError::at_line(first_line, format!("the header declares {} vertices but fewer vertex lines follow ({e})", el.count)))?;
    let origin = opts.origin.to_array();
    let chunks = text_chunks(&data[start..end], first_line, 4 << 20);
    let parts = chunks
        .par_iter()
        .map(|c| {
            let mut g = Gathered::new();
            let text = std::str::from_utf8(c.text)
                .map_err(|e| FormatError::at_line(c.first_line + memchr::memchr_iter(b'\n', &c.text[..e.valid_up_to()]).count() as u64, "not UTF-8 text"))?;
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
                        t.parse::<f64>().map_err(|_| FormatError::at_line(line_no, format!("'{t}' is not a number ({})", p.name)))
                    };
                    match p.kind {
                        Kind::Scalar(s) => {
                            let v = next()?;
                            assign(r, i, s, v, &mut vals, &mut rgba, &mut inten, &mut class);
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
                g.push(vals, rgba, cols.intensity.then_some(inten), cols.classification.then_some(class), &origin);
            }
            opts.progress.inc((g.points.len() as u64) + g.nonfinite);
            Ok(g)
        })
        .collect::<Result<Vec<_>, FormatError>>()?;
    Ok(gathered(Gathered::concat(parts), cols))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::formats::Progress;
    use glam::DVec3;

    fn read_bytes(b: &[u8]) -> Result<Decoded, FormatError> {
        read(b, &ReadOptions { origin: DVec3::ZERO, progress: &Progress::hidden() })
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
        assert_eq!(e, FormatError::at_byte(body, "the header declares 3 vertices of 12 bytes (36 bytes), but only 20 bytes follow the header"));
    }

    #[test]
    fn missing_z_is_named() {
        let b = b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nend_header\n1 2\n";
        let e = read_bytes(b).unwrap_err().to_string();
        assert!(e.contains("no 'z' property") && e.contains("x, y"), "{e}");
    }
}
