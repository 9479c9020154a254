//! Text point files: XYZ, TXT, CSV, ASC and PTS — numbers in columns, one point a line.
//!
//! How it works: the first lines decide the layout. Separators are commas, semicolons or whitespace
//! (the first data line tells). Lines starting with `#` or `//` are comments; a comment or a line of
//! words before the data is a header, and when its words name columns (`x`, `y`, `z`, `r`/`red`, ...,
//! `intensity`/`i`, `classification`/`class`), the names decide which column is what. A line holding a
//! single whole number is a PTS count line (Leica PTS starts each scan with one) and is skipped in
//! `.pts` files and before the data. Without names, the column count decides, with the common orders:
//! 3 `x y z`; 4 `x y z intensity`; 6 `x y z r g b`; 7 `x y z r g b intensity`, or `x y z intensity r g
//! b` in PTS files and wherever columns 5–7 look like colors and column 4 does not; more columns: `x y
//! z` then `r g b` when they look like colors (others are skipped). Colors are 0–255 integers, 0–1
//! floats or 16-bit integers, judged from the first 256 data lines. The data is then split into
//! line-aligned chunks parsed on all cores; every data line must hold as many values as the first one
//! (a line of 6 numbers in a file of 3 is two lines run together, not a point), and any line that is
//! not numbers in the expected columns is an error naming its line.
use super::{
    color_from_unit, sample_bounds, text_chunks, Columns, DBounds, Decoded, FileInfo, FormatError, ReadOptions, Rec,
    TextChunk,
};
use crate::stream::{ChunkSource, Precision, Staging};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sep {
    Comma,
    Semicolon,
    Space,
}

/// How color values are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColorScale {
    Byte,
    Unit,
    Word,
}

/// The layout the first lines gave.
#[derive(Clone, Debug)]
struct Layout {
    sep: Sep,
    xyz: [usize; 3],
    rgb: Option<([usize; 3], ColorScale)>,
    intensity: Option<usize>,
    class: Option<usize>,
    /// Columns a data line must have.
    min_cols: usize,
    columns: usize,
    names: Option<Vec<String>>,
    /// Byte offset and line number of the first data line.
    start: usize,
    first_line: u64,
    declared: Option<u64>,
}

/// Appends `line`'s fields to `out`.
fn split_into<'a>(line: &'a str, sep: Sep, out: &mut Vec<&'a str>) {
    match sep {
        Sep::Space => out.extend(line.split_ascii_whitespace()),
        Sep::Comma => out.extend(line.split(',').map(str::trim)),
        Sep::Semicolon => out.extend(line.split(';').map(str::trim)),
    }
}

fn split(line: &str, sep: Sep) -> Vec<&str> {
    let mut v = Vec::new();
    split_into(line, sep, &mut v);
    v
}

fn is_comment(t: &str) -> bool {
    t.starts_with('#') || t.starts_with("//")
}

fn numbers(line: &str, sep: Sep) -> Option<Vec<f64>> {
    split(line, sep).into_iter().map(|t| t.parse::<f64>().ok()).collect()
}

fn count_line(line: &str) -> Option<u64> {
    let mut w = line.split_ascii_whitespace();
    let n = w.next()?.parse::<u64>().ok()?;
    w.next().is_none().then_some(n)
}

/// How colors in these sampled values are written, if they look like colors at all.
fn color_scale(samples: &[Vec<f64>], cols: [usize; 3]) -> Option<ColorScale> {
    let vals: Vec<f64> = samples.iter().flat_map(|s| cols.iter().filter_map(|&c| s.get(c).copied())).collect();
    if vals.is_empty() || vals.iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
        return None;
    }
    let ints = vals.iter().all(|v| v.fract() == 0.0);
    let max = vals.iter().fold(0f64, |a, &b| a.max(b));
    if ints && max <= 255.0 {
        Some(ColorScale::Byte)
    } else if max <= 1.0 {
        Some(ColorScale::Unit)
    } else if ints && max <= 65535.0 {
        Some(ColorScale::Word)
    } else {
        None
    }
}

fn name_role(name: &str) -> Option<&'static str> {
    let n = name.trim().trim_start_matches("//").trim_start_matches('#').trim().to_ascii_lowercase();
    let n = n.trim_start_matches("scalar_");
    Some(match n {
        "x" | "east" | "easting" => "x",
        "y" | "north" | "northing" => "y",
        "z" | "elevation" | "height" | "alt" => "z",
        "r" | "red" => "r",
        "g" | "green" => "g",
        "b" | "blue" => "b",
        "i" | "intensity" | "reflectance" => "i",
        "classification" | "class" => "c",
        _ => return None,
    })
}

fn layout(data: &[u8], pts: bool) -> Result<Layout, FormatError> {
    let head = &data[..data.len().min(1 << 20)];
    let head = match std::str::from_utf8(head) {
        Ok(s) => s,
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""),
        Err(e) => {
            let line = memchr::memchr_iter(b'\n', &head[..e.valid_up_to()]).count() as u64 + 1;
            return Err(FormatError::at_line(line, "not text (invalid UTF-8)"));
        }
    };
    let mut at = 0usize;
    let mut names: Option<Vec<String>> = None;
    let mut declared = None;
    let mut first: Option<(usize, u64, &str)> = None;
    let mut samples_text = Vec::new();
    for (k, raw) in head.split_inclusive('\n').enumerate() {
        let line_no = k as u64 + 1;
        let line = raw.trim();
        let here = at;
        at += raw.len();
        if line.is_empty() {
            continue;
        }
        if first.is_none() {
            if let Some(n) = count_line(line) {
                declared = Some(declared.unwrap_or(0) + n);
                continue;
            }
            let sep = if line.contains(',') {
                Sep::Comma
            } else if line.contains(';') {
                Sep::Semicolon
            } else {
                Sep::Space
            };
            let is_data = !is_comment(line) && numbers(line, sep).is_some_and(|v| v.len() >= 3);
            if !is_data {
                // A header: keep its words if they name columns.
                let words: Vec<String> = split(line.trim_start_matches("//").trim_start_matches('#'), sep)
                    .into_iter()
                    .flat_map(|w| w.split_ascii_whitespace())
                    .map(|w| w.to_string())
                    .collect();
                if words.iter().filter(|w| name_role(w).is_some()).count() >= 3 {
                    names = Some(words);
                }
                if !is_comment(line) && names.is_none() && k > 64 {
                    return Err(FormatError::at_line(line_no, "no numeric data in the first 64 lines"));
                }
                continue;
            }
            first = Some((here, line_no, line));
        }
        if !is_comment(line) && (!pts || count_line(line).is_none()) {
            samples_text.push(line);
        }
        if samples_text.len() >= 256 {
            break;
        }
    }
    let Some((start, first_line, first_text)) = first else {
        return Err(FormatError::at_line(1, "no line with at least three numbers"));
    };
    let sep = if first_text.contains(',') {
        Sep::Comma
    } else if first_text.contains(';') {
        Sep::Semicolon
    } else {
        Sep::Space
    };
    let samples: Vec<Vec<f64>> = samples_text.iter().filter_map(|l| numbers(l, sep)).collect();
    let columns = samples.first().map(|s| s.len()).unwrap_or(0);
    let mut l = Layout {
        sep,
        xyz: [0, 1, 2],
        rgb: None,
        intensity: None,
        class: None,
        min_cols: 3,
        columns,
        names: names.clone(),
        start,
        first_line,
        declared,
    };
    if let Some(names) = &names {
        let pos = |role: &str| names.iter().position(|n| name_role(n) == Some(role));
        match (pos("x"), pos("y"), pos("z")) {
            (Some(x), Some(y), Some(z)) => l.xyz = [x, y, z],
            _ => {
                return Err(FormatError::at_line(
                    first_line.saturating_sub(1).max(1),
                    format!("the header names no x, y and z columns: {}", names.join(" ")),
                ))
            }
        }
        if let (Some(r), Some(g), Some(b)) = (pos("r"), pos("g"), pos("b")) {
            l.rgb = Some(([r, g, b], color_scale(&samples, [r, g, b]).unwrap_or(ColorScale::Byte)));
        }
        l.intensity = pos("i");
        l.class = pos("c");
    } else {
        let looks = |c: [usize; 3]| if c[2] < columns { color_scale(&samples, c) } else { None };
        match columns {
            0..=2 => return Err(FormatError::at_line(first_line, format!("{columns} columns; x y z needs 3"))),
            3 => {}
            4 => l.intensity = Some(3),
            5 => l.intensity = Some(3),
            6 => l.rgb = looks([3, 4, 5]).map(|s| ([3, 4, 5], s)),
            7 => {
                let rgb_first = looks([3, 4, 5]);
                let rgb_last = looks([4, 5, 6]);
                if pts || (rgb_last.is_some() && rgb_first.is_none()) {
                    l.intensity = Some(3);
                    l.rgb = rgb_last.map(|s| ([4, 5, 6], s));
                } else {
                    l.rgb = rgb_first.map(|s| ([3, 4, 5], s));
                    l.intensity = Some(6);
                }
            }
            _ => {
                l.rgb = looks([3, 4, 5]).map(|s| ([3, 4, 5], s));
                if pts && l.rgb.is_none() {
                    l.intensity = Some(3);
                    l.rgb = looks([4, 5, 6]).map(|s| ([4, 5, 6], s));
                }
            }
        }
    }
    l.min_cols = [
        Some(l.xyz[0]),
        Some(l.xyz[1]),
        Some(l.xyz[2]),
        l.rgb.map(|c| c.0[0]),
        l.rgb.map(|c| c.0[1]),
        l.rgb.map(|c| c.0[2]),
        l.intensity,
        l.class,
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(2)
        + 1;
    if l.min_cols > l.columns {
        return Err(FormatError::at_line(
            first_line,
            format!("{} values, but the header's names need {} columns", l.columns, l.min_cols),
        ));
    }
    Ok(l)
}

/// Bounds of the first lines, for choosing the origin before decoding.
pub fn estimate(data: &[u8], pts: bool) -> Option<DBounds> {
    let l = layout(data, pts).ok()?;
    let text = &data[l.start..data.len().min(l.start + (1 << 16))];
    let text =
        std::str::from_utf8(text).ok().or_else(|| std::str::from_utf8(&text[..text.len().saturating_sub(4)]).ok())?;
    sample_bounds(text.lines().take(256).filter_map(|line| {
        let v = numbers(line.trim(), l.sep)?;
        Some([*v.get(l.xyz[0])?, *v.get(l.xyz[1])?, *v.get(l.xyz[2])?])
    }))
}

/// Whether `data` looks like numeric text (for files without an extension).
pub fn sniff(data: &[u8]) -> bool {
    let head = &data[..data.len().min(4096)];
    let text = match std::str::from_utf8(head) {
        Ok(s) => s,
        Err(e) => match std::str::from_utf8(&head[..e.valid_up_to()]) {
            Ok(s) if e.error_len().is_none() => s,
            _ => return false,
        },
    };
    layout(text.as_bytes(), false).is_ok_and(|l| l.columns >= 3)
}

/// Reads the file; `pts`: the file is Leica PTS (count lines, `x y z intensity r g b`).
pub fn read(data: &[u8], pts: bool, opts: &ReadOptions) -> Result<Decoded, FormatError> {
    let src = open(data, pts)?;
    opts.progress.add_total(src.reserve_points());
    crate::stream::collect(&src, &opts.origin.to_array(), opts.progress)
}

/// An opened text file (see [`ChunkSource`]): its layout, and line-aligned pieces of about 4 MiB.
pub struct TextSource<'a> {
    data: &'a [u8],
    pts: bool,
    l: Layout,
    chunks: Vec<TextChunk<'a>>,
    /// The most digits after the decimal point seen on each axis so far ([`EXPONENT`] once a
    /// coordinate was written with an exponent): what `pcv convert` must keep.
    decimals: [std::sync::atomic::AtomicU8; 3],
}

/// [`TextSource::decimals`]' mark of a coordinate in exponent notation (`1.5e-3`).
const EXPONENT: u8 = u8::MAX;

/// Digits after the decimal point of a number as written ([`EXPONENT`] with an exponent).
fn decimals_of(t: &str) -> u8 {
    if t.bytes().any(|c| c == b'e' || c == b'E') {
        return EXPONENT;
    }
    t.find('.').map_or(0, |at| (t.len() - at - 1).min(usize::from(EXPONENT - 1)) as u8)
}

/// Opens a text file: the first lines decide the layout.
pub fn open(data: &[u8], pts: bool) -> Result<TextSource<'_>, FormatError> {
    let l = layout(data, pts)?;
    let chunks = text_chunks(&data[l.start..], l.first_line, 4 << 20);
    Ok(TextSource { data, pts, l, chunks, decimals: Default::default() })
}

impl ChunkSource for TextSource<'_> {
    fn jobs(&self) -> usize {
        self.chunks.len()
    }

    fn job_points(&self, job: usize) -> u64 {
        memchr::memchr_iter(b'\n', self.chunks[job].text).count() as u64 + 1
    }

    fn job_bytes(&self, job: usize) -> Option<std::ops::Range<usize>> {
        let at = self.chunks[job].text.as_ptr() as usize - self.data.as_ptr() as usize;
        Some(at..at + self.chunks[job].text.len())
    }

    fn reserve_points(&self) -> u64 {
        // About as many as the first line's length says (each line is at least 6 bytes: "x y z\n").
        let data = &self.data[self.l.start..];
        let first_len = data.iter().position(|&c| c == b'\n').unwrap_or(data.len()) + 1;
        (data.len() / first_len.max(6)) as u64
    }

    fn columns(&self) -> Columns {
        Columns { intensity: self.l.intensity.is_some(), classification: self.l.class.is_some(), ..Default::default() }
    }

    fn has_rgb(&self) -> bool {
        self.l.rgb.is_some()
    }

    fn decode(&self, job: usize, origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError> {
        let (c, l) = (&self.chunks[job], &self.l);
        let text = std::str::from_utf8(c.text).map_err(|e| {
            FormatError::at_line(
                c.first_line + memchr::memchr_iter(b'\n', &c.text[..e.valid_up_to()]).count() as u64,
                "not text (invalid UTF-8)",
            )
        })?;
        let mut vals: Vec<&str> = Vec::with_capacity(l.columns.max(8));
        let mut decimals = [0u8; 3];
        for (k, line) in text.split('\n').enumerate() {
            let line_no = c.first_line + k as u64;
            let line = line.trim();
            if line.is_empty() || is_comment(line) {
                continue;
            }
            vals.clear();
            split_into(line, l.sep, &mut vals);
            if vals.len() == 1 && count_line(line).is_some() {
                continue; // a PTS count line (one per scan)
            }
            if vals.len() != l.columns {
                return Err(FormatError::at_line(
                    line_no,
                    format!(
                        "{} values, but the file's lines have {} (line {} has)",
                        vals.len(),
                        l.columns,
                        l.first_line
                    ),
                ));
            }
            let num = |i: usize| -> Result<f64, FormatError> {
                let t = vals[i];
                t.parse::<f64>()
                    .map_err(|_| FormatError::at_line(line_no, format!("'{t}' is not a number (column {})", i + 1)))
            };
            for (d, &c) in decimals.iter_mut().zip(&l.xyz) {
                *d = (*d).max(decimals_of(vals[c]));
            }
            let mut r = Rec {
                xyz: [num(l.xyz[0])?, num(l.xyz[1])?, num(l.xyz[2])?],
                rgba: [0, 0, 0, 255],
                ..Default::default()
            };
            if let Some((c, scale)) = l.rgb {
                let mut wide = [0u16; 3];
                for k in 0..3 {
                    let v = num(c[k])?;
                    (r.rgba[k], wide[k]) = match scale {
                        ColorScale::Byte => {
                            (v.round().clamp(0.0, 255.0) as u8, v.round().clamp(0.0, 255.0) as u16 * 257)
                        }
                        ColorScale::Unit => (color_from_unit(v), (v * 65535.0).round().clamp(0.0, 65535.0) as u16),
                        ColorScale::Word => {
                            ((v.clamp(0.0, 65535.0) as u32 >> 8) as u8, v.round().clamp(0.0, 65535.0) as u16)
                        }
                    };
                }
                r.rgb16 = Some(wide);
            }
            r.intensity = l.intensity.map(num).transpose()?.map(|v| v as f32).unwrap_or(0.0);
            r.class = l.class.map(num).transpose()?.map(|v| v.clamp(0.0, 255.0) as u8).unwrap_or(0);
            out.push_rec(&r, origin);
        }
        for (seen, d) in self.decimals.iter().zip(decimals) {
            seen.fetch_max(d, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    fn precision(&self) -> Precision {
        let d = self.decimals.each_ref().map(|a| a.load(std::sync::atomic::Ordering::Relaxed));
        if d.contains(&EXPONENT) {
            Precision::F64
        } else {
            Precision::Decimals(d)
        }
    }

    fn info(&self) -> FileInfo {
        let (l, pts) = (&self.l, self.pts);
        let sep = match l.sep {
            Sep::Comma => "comma",
            Sep::Semicolon => "semicolon",
            Sep::Space => "whitespace",
        };
        let col_name = |i: usize| -> String {
            if let Some(n) = l.names.as_ref().and_then(|n| n.get(i)) {
                return n.clone();
            }
            if l.xyz.contains(&i) {
                ["x", "y", "z"][l.xyz.iter().position(|&c| c == i).unwrap_or(0)].into()
            } else if let Some(k) = l.rgb.and_then(|c| c.0.iter().position(|&c| c == i)) {
                ["r", "g", "b"][k].into()
            } else if l.intensity == Some(i) {
                "intensity".into()
            } else if l.class == Some(i) {
                "classification".into()
            } else {
                "(skipped)".into()
            }
        };
        let mut attributes = vec!["xyz".to_string()];
        if let Some((_, s)) = l.rgb {
            attributes.push(format!(
                "rgb ({})",
                match s {
                    ColorScale::Byte => "0-255",
                    ColorScale::Unit => "0-1",
                    ColorScale::Word => "0-65535",
                }
            ));
        }
        if l.intensity.is_some() {
            attributes.push("intensity".into());
        }
        if l.class.is_some() {
            attributes.push("classification".into());
        }
        let used = |i: usize| {
            l.xyz.contains(&i)
                || l.rgb.is_some_and(|c| c.0.contains(&i))
                || l.intensity == Some(i)
                || l.class == Some(i)
        };
        FileInfo {
            variant: format!(
                "{}{sep}-separated, columns: {}",
                if pts { "PTS, " } else { "" },
                (0..l.columns).map(col_name).collect::<Vec<_>>().join(" ")
            ),
            declared_points: l.declared,
            attributes,
            skipped: (0..l.columns).filter(|&i| !used(i)).map(|i| format!("column {}", i + 1)).collect(),
            header_bounds: None,
            notes: if l.first_line > 1 { vec![format!("data starts on line {}", l.first_line)] } else { vec![] },
        }
    }

    fn estimate(&self) -> Option<DBounds> {
        estimate(self.data, self.pts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::Progress;
    use glam::DVec3;

    fn rd(s: &str, pts: bool) -> Result<Decoded, FormatError> {
        read(
            s.as_bytes(),
            pts,
            &ReadOptions { origin: DVec3::ZERO, progress: &Progress::hidden(), fields: Default::default() },
        )
    }

    #[test]
    fn orders_and_headers() {
        let d = rd("x,y,z,intensity,red,green,blue\n1,2,3,77,255,0,9\n4,5,6,78,1,2,3\n", false).unwrap();
        assert_eq!(d.points[0].rgba, [255, 0, 9, 255]);
        assert_eq!(d.intensity.as_deref(), Some(&[77.0, 78.0][..]));
        let d = rd("2\n1 2 3 -50 10 20 30\n4 5 6 60 40 50 60\n", true).unwrap();
        assert_eq!(d.info.declared_points, Some(2));
        assert_eq!(d.points[1].rgba, [40, 50, 60, 255]);
        assert_eq!(d.intensity.as_deref(), Some(&[-50.0, 60.0][..]));
        let d = rd("# comment\n1 2 3 0.5 0.25 1\n", false).unwrap();
        assert_eq!(d.points[0].rgba, [128, 64, 255, 255]);
        let d = rd("1 2 3 10 20 30 0.7\n", false).unwrap();
        assert_eq!(d.points[0].rgba, [10, 20, 30, 255]);
        assert_eq!(d.intensity.as_deref(), Some(&[0.7][..]));
    }

    #[test]
    fn bad_lines_are_named() {
        let e = rd("1 2 3\n4 5 6\n7 x 9\n", false).unwrap_err();
        assert_eq!(e, FormatError::at_line(3, "'x' is not a number (column 2)"));
        let e = rd("1 2 3\n4 5\n", false).unwrap_err();
        assert_eq!(e, FormatError::at_line(2, "2 values, but the file's lines have 3 (line 1 has)"));
        assert!(rd("hello\nworld\n", false).is_err());
        let d = rd("1 2 3\nnan 0 0\n4 5 inf\n", false).unwrap();
        assert_eq!((d.points.len(), d.nonfinite), (1, 2));
    }
}
