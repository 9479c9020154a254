//! E57 (ASTM E2807): every scan of the file, in the file's common coordinate system.
//!
//! How it works: the `e57` crate parses the paged, CRC-checked file and its XML section over a cursor on
//! the memory-mapped bytes. Each `data3D` point cloud (a scan) is read with the crate's simple reader,
//! which converts spherical coordinates (range, azimuth, elevation) to Cartesian ones and applies the
//! scan's pose (rotation quaternion and translation), so all scans land in one frame. Colors are
//! normalized by the scan's color limits to 0..1 and stored as 8-bit; intensity is kept as stored (not
//! normalized), so integer intensities stay exact. Points whose coordinates are marked invalid or are
//! only a direction are dropped and counted with the non-finite ones. Each scan is one job (its packets
//! are sequential); its slot grows as points arrive, so a lying record count never reserves more than
//! the file could hold.
//!
//! Errors name their place: the 48-byte header's fields are checked here first (file length, XML
//! offset and length, page size), and an error of the crate is placed in its section — the XML section,
//! or a scan's binary section and the point — and, when the crate failed on a page whose CRC-32C does
//! not match (checked only then), on that page.
use super::{color_from_unit, Columns, DBounds, Decoded, FileInfo, FormatError, ReadOptions};
use crate::stream::{ChunkSource, Staging};
use std::io::Cursor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Whether `data` starts like an E57 file.
pub fn sniff(data: &[u8]) -> bool {
    data.starts_with(b"ASTM-E57")
}

/// The 48-byte file header's fields: XML section offset and length, page size.
struct FileHeader {
    xml_offset: u64,
    xml_length: u64,
}

fn file_header(data: &[u8]) -> Result<FileHeader, FormatError> {
    if !sniff(data) {
        return Err(FormatError::at_byte(0, "not an E57 file: it does not start with 'ASTM-E57'"));
    }
    if data.len() < 48 {
        return Err(FormatError::at_byte(data.len(), "the file ends inside the 48-byte E57 header"));
    }
    let u64at = |o: usize| u64::from_le_bytes(super::bytes(data, o));
    let (length, xml_offset, xml_length, page_size) = (u64at(16), u64at(24), u64at(32), u64at(40));
    if length != data.len() as u64 {
        return Err(FormatError::at_byte(
            16,
            format!("the header says the file is {length} bytes, but it is {}", data.len()),
        ));
    }
    if page_size != PAGE {
        return Err(FormatError::at_byte(40, format!("page size {page_size}: E57 pages are {PAGE} bytes")));
    }
    if xml_offset >= length || xml_offset % PAGE > PAGE - 4 {
        return Err(FormatError::at_byte(24, format!("XML section offset {xml_offset} is outside the file's pages")));
    }
    // The logical length (without the 4-byte checksum of each page) must fit the pages after the offset.
    let room = (length - xml_offset) - (length - xml_offset).div_ceil(PAGE) * 4;
    if xml_length > room {
        return Err(FormatError::at_byte(
            32,
            format!("XML section length {xml_length} is larger than the {room} bytes after its offset {xml_offset}"),
        ));
    }
    Ok(FileHeader { xml_offset, xml_length })
}

/// E57 pages: 1020 bytes of data and a CRC-32C of them.
const PAGE: u64 = 1024;

/// The CRC-32C (Castagnoli) of `data`, as E57 pages store it.
fn crc32c(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut v = i as u32;
            for _ in 0..8 {
                v = if v & 1 == 1 { (v >> 1) ^ 0x82F6_3B78 } else { v >> 1 };
            }
            *e = v;
        }
        t
    });
    !data.iter().fold(!0u32, |c, &b| table[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8))
}

/// The first page in `range` (physical bytes) whose checksum is wrong: its offset.
fn bad_page(data: &[u8], range: std::ops::Range<u64>) -> Option<u64> {
    let first = range.start / PAGE;
    let last = range.end.min(data.len() as u64).div_ceil(PAGE);
    (first..last).map(|p| p * PAGE).find(|&o| {
        let page = &data[o as usize..(o + PAGE).min(data.len() as u64) as usize];
        page.len() < PAGE as usize || crc32c(&page[..1020]).to_be_bytes() != page[1020..]
    })
}

/// An `e57` crate error with its place: the first page with a wrong checksum in `section` when there
/// is one (what the crate reports as a failed read), else the section's start.
fn placed(data: &[u8], section: std::ops::Range<u64>, what: &str, e: e57::Error) -> FormatError {
    match bad_page(data, section.clone()) {
        Some(o) => FormatError::AtByte {
            offset: o,
            msg: format!("{what}: page {} (bytes {o}..{}) does not match its checksum ({e})", o / PAGE, o + PAGE),
        },
        None => FormatError::AtByte { offset: section.start, msg: format!("{what}: {e}") },
    }
}

/// The `e57` crate's reader over a file's bytes.
type Reader<'a> = e57::E57Reader<Cursor<&'a [u8]>>;

fn open_reader(data: &[u8]) -> Result<Reader<'_>, FormatError> {
    let fh = file_header(data)?;
    // The XML section's physical bytes: its logical length plus 4 checksum bytes a page.
    let phys_end = fh.xml_offset + fh.xml_length + fh.xml_length.div_ceil(PAGE - 4) * 4 + 4;
    let r = e57::E57Reader::new(Cursor::new(data)).map_err(|e| {
        placed(
            data,
            fh.xml_offset..phys_end,
            &format!("the XML section (byte {}, {} bytes)", fh.xml_offset, fh.xml_length),
            e,
        )
    })?;
    Ok(r)
}

/// `data` with every 1024-byte page's CRC-32C checksum (its last 4 bytes, big-endian) made right. For
/// fuzzing: mutated files then get past the page checks, into the XML and point parsers.
pub fn with_valid_checksums(data: &[u8]) -> Vec<u8> {
    let mut table = [0u32; 256];
    for (i, t) in table.iter_mut().enumerate() {
        let mut v = i as u32;
        for _ in 0..8 {
            v = if v & 1 == 1 { (v >> 1) ^ 0x82F6_3B78 } else { v >> 1 };
        }
        *t = v;
    }
    let mut out = data.to_vec();
    for page in out.chunks_exact_mut(1024) {
        let crc = !page[..1020].iter().fold(!0u32, |c, &b| table[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8));
        page[1020..].copy_from_slice(&crc.to_be_bytes());
    }
    out
}

/// What is in a file's scans, without reading their points: bounds from the scans' cartesian bounds
/// moved by their poses (the corners' box), when every scan has them.
pub fn estimate(data: &[u8]) -> Option<DBounds> {
    bounds_of(&open_reader(data).ok()?.pointclouds())
}

fn bounds_of(pcs: &[e57::PointCloud]) -> Option<DBounds> {
    let mut b = DBounds::EMPTY;
    for pc in pcs {
        let cb = pc.cartesian_bounds.as_ref()?;
        let (lo, hi) = ([cb.x_min?, cb.y_min?, cb.z_min?], [cb.x_max?, cb.y_max?, cb.z_max?]);
        for k in 0..8 {
            let p = [
                if k & 1 == 0 { lo[0] } else { hi[0] },
                if k & 2 == 0 { lo[1] } else { hi[1] },
                if k & 4 == 0 { lo[2] } else { hi[2] },
            ];
            b.include(pose(pc, p));
        }
    }
    (!b.is_empty() && b.min.iter().chain(&b.max).all(|v| v.is_finite())).then_some(b)
}

/// `p` in the file's frame: the scan's rotation, then its translation.
fn pose(pc: &e57::PointCloud, p: [f64; 3]) -> [f64; 3] {
    let Some(t) = &pc.transform else { return p };
    let q = &t.rotation;
    let (w, x, y, z) = (q.w, q.x, q.y, q.z);
    let m = [
        [w * w + x * x - y * y - z * z, 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)],
        [2.0 * (x * y + w * z), w * w - x * x + y * y - z * z, 2.0 * (y * z - w * x)],
        [2.0 * (x * z - w * y), 2.0 * (y * z + w * x), w * w - x * x - y * y + z * z],
    ];
    let tr = [t.translation.x, t.translation.y, t.translation.z];
    std::array::from_fn(|i| m[i][0] * p[0] + m[i][1] * p[1] + m[i][2] * p[2] + tr[i])
}

/// Reads every scan.
pub fn read(data: &[u8], opts: &ReadOptions) -> Result<Decoded, FormatError> {
    let src = open(data)?;
    opts.progress.add_total(src.declared().min(data.len() as u64 * 8));
    crate::stream::collect(&src, &opts.origin.to_array(), opts.progress)
}

/// An opened E57 file (see [`ChunkSource`]): one job per scan. The format's packets are read in
/// order, so a scan is one job; its slot grows as its points arrive.
pub struct E57Source<'a> {
    data: &'a [u8],
    reader: Mutex<Reader<'a>>,
    pcs: Vec<e57::PointCloud>,
    has_rgb: bool,
    has_intensity: bool,
    /// Points whose coordinates the file marks invalid (or only a direction).
    invalid: AtomicU64,
}

/// Opens an E57 file: the header, the XML section and the scans' descriptions.
pub fn open(data: &[u8]) -> Result<E57Source<'_>, FormatError> {
    let r = open_reader(data)?;
    let pcs = r.pointclouds();
    let has_rgb = pcs.iter().any(|p| p.has_color());
    let has_intensity = pcs.iter().any(|p| p.has_intensity());
    Ok(E57Source { data, reader: Mutex::new(r), pcs, has_rgb, has_intensity, invalid: AtomicU64::new(0) })
}

impl E57Source<'_> {
    /// The records the scans declare.
    pub fn declared(&self) -> u64 {
        self.pcs.iter().map(|p| p.records).fold(0u64, |a, b| a.saturating_add(b))
    }
}

impl ChunkSource for E57Source<'_> {
    fn jobs(&self) -> usize {
        self.pcs.len()
    }

    fn job_points(&self, job: usize) -> u64 {
        self.pcs[job].records
    }

    fn reserve_points(&self) -> u64 {
        // Records are at least a few bits; a lying count grows the vectors as points arrive.
        self.declared().min(self.data.len() as u64 / 4)
    }

    fn columns(&self) -> Columns {
        Columns { intensity: self.has_intensity, classification: false, ..Default::default() }
    }

    fn has_rgb(&self) -> bool {
        self.has_rgb
    }

    fn decode(&self, k: usize, origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError> {
        let pc = &self.pcs[k];
        let section = pc.file_offset..self.data.len() as u64;
        let what = |i: Option<usize>| {
            let name = pc.name.as_ref().map(|n| format!(" ('{n}')")).unwrap_or_default();
            match i {
                Some(i) => {
                    format!("scan {k}{name}, point {i} of {} (binary section at byte {})", pc.records, pc.file_offset)
                }
                None => format!("scan {k}{name} (binary section at byte {})", pc.file_offset),
            }
        };
        let mut r = self.reader.lock().unwrap_or_else(|p| p.into_inner());
        let mut it = r.pointcloud_simple(pc).map_err(|e| placed(self.data, section.clone(), &what(None), e))?;
        it.spherical_to_cartesian(true);
        it.apply_pose(true);
        it.intensity_to_color(false);
        it.normalize_intensity(false);
        it.normalize_color(true);
        let mut invalid = 0u64;
        for (i, p) in it.enumerate() {
            let p = p.map_err(|e| placed(self.data, section.clone(), &what(Some(i)), e))?;
            let e57::CartesianCoordinate::Valid { x, y, z } = p.cartesian else {
                invalid += 1;
                continue;
            };
            let rgba = match &p.color {
                Some(c) => [
                    color_from_unit(c.red as f64),
                    color_from_unit(c.green as f64),
                    color_from_unit(c.blue as f64),
                    255,
                ],
                None => [0, 0, 0, 255],
            };
            out.push([x, y, z], rgba, p.intensity.unwrap_or(0.0), 0, origin);
        }
        out.nonfinite += invalid;
        self.invalid.fetch_add(invalid, Ordering::Relaxed);
        out.colorless = self.has_rgb && !pc.has_color();
        Ok(())
    }

    fn info(&self) -> FileInfo {
        let pcs = &self.pcs;
        let spherical = pcs.iter().filter(|pc| pc.has_spherical() && !pc.has_cartesian()).count();
        let posed = pcs.iter().filter(|pc| pc.transform.is_some()).count();
        let mut attributes = vec!["xyz (cartesian or spherical, poses applied)".to_string()];
        if self.has_rgb {
            attributes.push("rgb (normalized by the color limits)".into());
        }
        if self.has_intensity {
            attributes.push("intensity (as stored)".into());
        }
        let mut notes = vec![format!("{} scans: {} with a pose, {} spherical", pcs.len(), posed, spherical)];
        for (k, pc) in pcs.iter().enumerate() {
            notes.push(format!(
                "scan {k}: {} records{}{}",
                pc.records,
                pc.name.as_ref().map(|n| format!(", '{n}'")).unwrap_or_default(),
                pc.sensor_model.as_ref().map(|n| format!(", sensor '{n}'")).unwrap_or_default()
            ));
        }
        let invalid = self.invalid.load(Ordering::Relaxed);
        if invalid > 0 {
            notes.push(format!("{invalid} points with invalid coordinates dropped"));
        }
        FileInfo {
            variant: format!("E57 {} scan{}", pcs.len(), if pcs.len() == 1 { "" } else { "s" }),
            declared_points: Some(self.declared()),
            attributes,
            skipped: vec![],
            header_bounds: self.estimate(),
            notes,
        }
    }

    fn estimate(&self) -> Option<DBounds> {
        bounds_of(&self.pcs)
    }
}
