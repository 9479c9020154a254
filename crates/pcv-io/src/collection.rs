//! Collections of tiles as sources: besides files and folders, a glob (`tiles/*.laz`), a list file
//! (`tiles.lst`, `tiles.list`, or any file given as `@FILE`: one path or URL a line) and a virtual
//! point cloud (`.vpc`, the STAC ItemCollection PDAL's `wrench` and QGIS write: one item a tile, its
//! data asset's `href`), local or over HTTP(S). [`expand`] turns them into the tiles' paths and URLs;
//! [`headers`] reads every tile's header (format, points, bounds, CRS) on all cores before any point is
//! decoded, so a collection is placed and summed first and a tile that fails is named and left out.
//!
//! How it works: a glob goes through the `glob` crate (its patterns: `*`, `?`, `[..]`, `**`), matched
//! files sorted; a list file's lines are trimmed, `#` starts a comment, relative entries are relative to
//! the list's folder; a `.vpc` is parsed with serde_json: each feature's `assets` gives the tile (the
//! `data` asset, else the first whose href names a point file), a relative href is relative to the
//! `.vpc`'s folder or URL, and the item's `pc:count` and `proj:bbox` (or its `bbox`) are kept for tiles
//! read over HTTP (their headers are not fetched here). A `.vpc` at a URL is fetched whole with ureq
//! (timeouts as the COPC reader's). Entries that are folders, globs or lists are expanded in turn (a
//! list naming itself is refused). Errors name the collection, the line or item, and the reason.
use crate::formats::copc::http::is_url;
use crate::formats::Format;
use crate::load::{self, FileBytes, LoadError};
use pcv_model::bounds::DBounds;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a collection could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CollectionError {
    #[error("{what}: {why}")]
    Bad { what: String, why: String },
}

fn bad(what: impl std::fmt::Display, why: impl std::fmt::Display) -> LoadError {
    LoadError::Collection(CollectionError::Bad { what: what.to_string(), why: why.to_string() })
}

/// What a source names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A virtual point cloud (`.vpc`).
    Vpc,
    /// A list of paths (`.lst`, `.list`, `@FILE`).
    List,
    /// A glob pattern.
    Glob,
    /// A folder, a file or a URL.
    Plain,
}

/// What `s` names.
pub fn kind(s: &str) -> Kind {
    let lower = s.to_ascii_lowercase();
    let path = lower.split(['?', '#']).next().unwrap_or("");
    if path.ends_with(".vpc") {
        Kind::Vpc
    } else if s.starts_with('@') || path.ends_with(".lst") || path.ends_with(".list") {
        Kind::List
    } else if !is_url(s) && s.contains(['*', '?', '[']) && !Path::new(s).exists() {
        Kind::Glob
    } else {
        Kind::Plain
    }
}

/// A tile as a `.vpc` describes it: its path or URL, and the points and bounds the item gives.
#[derive(Clone, Debug, PartialEq)]
pub struct VpcTile {
    pub href: PathBuf,
    pub points: Option<u64>,
    pub bounds: Option<DBounds>,
}

/// The tiles `inputs` name, in order: folders (with `recursive`, their subfolders), globs, list files and
/// `.vpc` collections expanded; plain files and URLs kept.
pub fn expand(inputs: &[PathBuf], recursive: bool) -> Result<Vec<PathBuf>, LoadError> {
    let mut out = Vec::with_capacity(inputs.len());
    for p in inputs {
        expand_one(p, recursive, &mut out, 0)?;
    }
    Ok(out)
}

fn expand_one(p: &Path, recursive: bool, out: &mut Vec<PathBuf>, depth: u32) -> Result<(), LoadError> {
    if depth > 8 {
        return Err(bad(p.display(), "lists nest more than 8 deep (does a list name itself?)"));
    }
    let s = p.to_string_lossy();
    match kind(&s) {
        Kind::Vpc => out.extend(read_vpc(&s)?.into_iter().map(|t| t.href)),
        Kind::List => {
            let file = Path::new(s.strip_prefix('@').unwrap_or(&s));
            let text = std::fs::read_to_string(file).map_err(|e| bad(file.display(), e))?;
            let dir = file.parent().unwrap_or(Path::new("."));
            let before = out.len();
            for (n, line) in text.lines().enumerate() {
                let entry = line.split('#').next().unwrap_or("").trim();
                if entry.is_empty() {
                    continue;
                }
                let target = if is_url(entry) || Path::new(entry).is_absolute() {
                    PathBuf::from(entry)
                } else {
                    dir.join(entry)
                };
                if target == file {
                    return Err(bad(format!("{} line {}", file.display(), n + 1), "the list names itself"));
                }
                expand_one(&target, recursive, out, depth + 1)
                    .map_err(|e| bad(format!("{} line {}", file.display(), n + 1), e))?;
            }
            if out.len() == before {
                return Err(bad(file.display(), "the list names no point files"));
            }
        }
        Kind::Glob => {
            let paths = glob::glob(&s).map_err(|e| bad(&s, format!("not a pattern: {e}")))?;
            let mut found: Vec<PathBuf> = paths
                .filter_map(|r| r.ok())
                .filter(|p| p.is_dir() || load::SUPPORTED_EXTENSIONS.iter().any(|(e, _)| *e == extension(p)))
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(bad(&s, "the pattern matches no point files"));
            }
            for f in found {
                expand_one(&f, recursive, out, depth + 1)?;
            }
        }
        Kind::Plain => out.extend(load::point_files(&[p.to_path_buf()], recursive)?),
    }
    Ok(())
}

fn extension(p: &Path) -> String {
    p.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default()
}

/// The tiles of the `.vpc` at `source` (a path or an `http(s)://` URL).
pub fn read_vpc(source: &str) -> Result<Vec<VpcTile>, LoadError> {
    let text =
        if is_url(source) { fetch(source)? } else { std::fs::read_to_string(source).map_err(|e| bad(source, e))? };
    parse_vpc(&text, source)
}

/// A `.vpc` over HTTP, whole (at most 256 MiB).
fn fetch(url: &str) -> Result<String, LoadError> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(60)))
        .timeout_connect(Some(Duration::from_secs(5)))
        .timeout_per_read(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut resp = agent.get(url).call().map_err(|e| bad(url, format!("fetching it: {e}")))?;
    resp.body_mut().with_config().limit(256 << 20).read_to_string().map_err(|e| bad(url, format!("reading it: {e}")))
}

/// The tiles of a `.vpc`'s text; `source` names it in errors and resolves relative hrefs.
pub fn parse_vpc(text: &str, source: &str) -> Result<Vec<VpcTile>, LoadError> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(source, format!("not JSON: {e}")))?;
    let features = doc
        .get("features")
        .and_then(|f| f.as_array())
        .ok_or_else(|| bad(source, "no \"features\" list (a .vpc is a STAC ItemCollection)"))?;
    if features.is_empty() {
        return Err(bad(source, "the collection holds no items"));
    }
    let mut tiles = Vec::with_capacity(features.len());
    for (i, item) in features.iter().enumerate() {
        let id = item.get("id").and_then(|v| v.as_str()).map_or_else(|| format!("item {i}"), |s| format!("item '{s}'"));
        let what = || format!("{source}: {id}");
        let assets = item.get("assets").and_then(|a| a.as_object()).ok_or_else(|| bad(what(), "no assets"))?;
        let href_of = |a: &serde_json::Value| a.get("href").and_then(|h| h.as_str()).map(str::to_string);
        let point_file = |h: &str| {
            let p = h.split(['?', '#']).next().unwrap_or("");
            load::SUPPORTED_EXTENSIONS.iter().any(|(e, _)| *e == extension(Path::new(p)))
        };
        let href = assets
            .get("data")
            .and_then(href_of)
            .or_else(|| assets.values().filter_map(href_of).find(|h| point_file(h)))
            .ok_or_else(|| bad(what(), "no data asset with an href"))?;
        let props = item.get("properties");
        let points = props.and_then(|p| p.get("pc:count")).and_then(|c| c.as_u64());
        let bbox = props.and_then(|p| p.get("proj:bbox")).or_else(|| item.get("bbox"));
        let bounds = bbox.and_then(|b| b.as_array()).and_then(|b| {
            let v: Vec<f64> = b.iter().filter_map(|x| x.as_f64()).collect();
            match v.len() {
                6 => Some(DBounds { min: [v[0], v[1], v[2]], max: [v[3], v[4], v[5]] }),
                4 => Some(DBounds { min: [v[0], v[1], 0.0], max: [v[2], v[3], 0.0] }),
                _ => None,
            }
        });
        tiles.push(VpcTile { href: resolve(source, &href), points, bounds });
    }
    Ok(tiles)
}

/// `href` relative to the collection at `source` (a path or a URL); absolute paths and URLs as given.
fn resolve(source: &str, href: &str) -> PathBuf {
    let href = href.strip_prefix("file://").unwrap_or(href);
    if is_url(href) || Path::new(href).is_absolute() {
        return PathBuf::from(href);
    }
    let rel = href.strip_prefix("./").unwrap_or(href);
    if is_url(source) {
        let base = source.split(['?', '#']).next().unwrap_or(source);
        let dir = &base[..base.rfind('/').map_or(base.len(), |i| i + 1)];
        return PathBuf::from(format!("{dir}{rel}"));
    }
    Path::new(source).parent().unwrap_or(Path::new(".")).join(rel)
}

/// A tile's header: what is known before any point is decoded.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TileHeader {
    pub path: String,
    pub format: Format,
    /// Points the header declares.
    pub points: u64,
    /// Bounds the header gives (LAS/LAZ/COPC) or a cheap estimate (other formats).
    pub bounds: Option<DBounds>,
    /// The coordinate system's name and EPSG code, when it names one.
    pub crs: Option<String>,
    pub epsg: Option<u32>,
}

/// Every tile's header, read on all cores in the tiles' order (a tile over HTTP is not fetched: an
/// error saying so; a `.vpc`'s counts and bounds stand for it).
pub fn headers(paths: &[PathBuf]) -> Vec<Result<TileHeader, LoadError>> {
    paths.par_iter().map(|p| header(p)).collect()
}

/// One tile's header.
pub fn header(path: &Path) -> Result<TileHeader, LoadError> {
    if is_url(&path.to_string_lossy()) {
        return Err(bad(path.display(), "a tile over HTTP: its header is read when it is opened"));
    }
    let bytes = FileBytes::open(path)?;
    let data = bytes.bytes();
    let format = load::detect(path, data)?;
    let pts = load::is_pts(path);
    let src = load::open_source(data, format, pts).map_err(|source| LoadError::Format {
        path: path.to_path_buf(),
        format,
        source,
    })?;
    let points = (0..src.jobs()).map(|j| src.job_points(j)).sum();
    let crs = load::file_crs(path, data, format, false);
    Ok(TileHeader {
        path: path.display().to_string(),
        format,
        points,
        bounds: load::estimate(data, format, pts),
        crs: crs.as_ref().map(|c| c.name.clone()),
        epsg: crs.as_ref().and_then(|c| c.epsg),
    })
}

/// What a collection's headers add up to: tiles read, points, bounds, coordinate systems, failures.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Summary {
    pub tiles: usize,
    pub points: u64,
    pub bounds: Option<DBounds>,
    /// Each coordinate system named, with how many tiles name it ("none" for tiles without one).
    pub crs: Vec<(String, usize)>,
    /// The tiles that could not be read, with why.
    pub failed: Vec<(String, String)>,
}

/// Adds up `headers` of `paths` (in the same order).
pub fn summarize(paths: &[PathBuf], headers: &[Result<TileHeader, LoadError>]) -> Summary {
    let mut s = Summary::default();
    for (p, h) in paths.iter().zip(headers) {
        match h {
            Ok(h) => {
                s.tiles += 1;
                s.points += h.points;
                if let Some(b) = h.bounds {
                    s.bounds = Some(s.bounds.map_or(b, |a| DBounds::union(a, b)));
                }
                let name = match (&h.crs, h.epsg) {
                    (Some(n), Some(e)) => format!("{n} (EPSG:{e})"),
                    (Some(n), None) => n.clone(),
                    _ => "none".to_string(),
                };
                match s.crs.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, k)) => *k += 1,
                    None => s.crs.push((name, 1)),
                }
            }
            Err(e) => s.failed.push((p.display().to_string(), e.to_string())),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_told_apart_and_hrefs_resolved_against_their_collection() {
        assert_eq!(kind("a/b.vpc"), Kind::Vpc);
        assert_eq!(kind("https://h/x/c.VPC?sig=1"), Kind::Vpc);
        assert_eq!(kind("@tiles.txt"), Kind::List);
        assert_eq!(kind("t.lst"), Kind::List);
        assert_eq!(kind("no-such-dir/*.laz"), Kind::Glob);
        assert_eq!(kind("https://h/t?.laz"), Kind::Plain, "a URL's query is not a pattern");
        assert_eq!(kind("t.laz"), Kind::Plain);
        assert_eq!(resolve("https://h/a/c.vpc?s=1", "./t/1.laz"), PathBuf::from("https://h/a/t/1.laz"));
        assert_eq!(resolve("https://h/a/c.vpc", "https://g/2.laz"), PathBuf::from("https://g/2.laz"));
        assert_eq!(resolve("dir/c.vpc", "t/1.laz"), PathBuf::from("dir/t/1.laz"));
        assert_eq!(resolve("dir/c.vpc", "/abs/1.laz"), PathBuf::from("/abs/1.laz"));
        assert_eq!(resolve("c.vpc", "file:///abs/2.las"), PathBuf::from("/abs/2.las"));
        let v = parse_vpc(
            r#"{"features":[{"id":"a","bbox":[1,2,3,4],"properties":{"pc:count":7},"assets":{"thumb":{"href":"a.png"},"x":{"href":"a.copc.laz"}}}]}"#,
            "d/c.vpc",
        )
        .unwrap();
        assert_eq!(v[0].href, PathBuf::from("d/a.copc.laz"), "the first asset naming a point file");
        assert_eq!(v[0].points, Some(7));
        assert_eq!(v[0].bounds.map(|b| (b.min[0], b.max[1])), Some((1.0, 4.0)));
    }
}
