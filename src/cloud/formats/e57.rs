//! E57 (ASTM E2807): every scan of the file, in the file's common coordinate system.
//!
//! How it works: the `e57` crate parses the paged, CRC-checked file and its XML section over a cursor on
//! the memory-mapped bytes. Each `data3D` point cloud (a scan) is read with the crate's simple reader,
//! which converts spherical coordinates (range, azimuth, elevation) to Cartesian ones and applies the
//! scan's pose (rotation quaternion and translation), so all scans land in one frame. Colors are
//! normalized by the scan's color limits to 0..1 and stored as 8-bit; intensity is kept as stored (not
//! normalized), so integer intensities stay exact. Points whose coordinates are marked invalid or are
//! only a direction are dropped and counted with the non-finite ones. Scans are read one after another
//! (the format's packets are sequential); the output grows as points arrive, so a lying record count
//! never reserves more than the file could hold.
use super::{color_from_unit, DBounds, Decoded, FileInfo, FormatError, Gathered, ReadOptions};
use std::io::Cursor;
use std::ops::Range;

/// Whether `data` starts like an E57 file.
pub fn sniff(data: &[u8]) -> bool {
    data.starts_with(b"ASTM-E57")
}

fn err(e: e57::Error) -> FormatError {
    FormatError::Invalid(format!("E57: {e}"))
}

fn open(data: &[u8]) -> Result<e57::E57Reader<Cursor<&[u8]>>, FormatError> {
    if !sniff(data) {
        return Err(FormatError::at_byte(0, "not an E57 file: it does not start with 'ASTM-E57'"));
    }
    if data.len() < 48 {
        return Err(FormatError::at_byte(data.len(), "the file ends inside the 48-byte E57 header"));
    }
    let xml_length = u64::from_le_bytes(super::bytes(data, 32));
    if xml_length > data.len() as u64 {
        return Err(FormatError::at_byte(32, format!("XML section length {xml_length} is larger than the {}-byte file", data.len())));
    }
    e57::E57Reader::new(Cursor::new(data)).map_err(err)
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
    let r = open(data).ok()?;
    let mut b = DBounds::EMPTY;
    for pc in r.pointclouds() {
        let cb = pc.cartesian_bounds.as_ref()?;
        let (lo, hi) = ([cb.x_min?, cb.y_min?, cb.z_min?], [cb.x_max?, cb.y_max?, cb.z_max?]);
        for k in 0..8 {
            let p = [if k & 1 == 0 { lo[0] } else { hi[0] }, if k & 2 == 0 { lo[1] } else { hi[1] }, if k & 4 == 0 { lo[2] } else { hi[2] }];
            b.include(pose(&pc, p));
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
    let mut r = open(data)?;
    let pcs = r.pointclouds();
    let declared: u64 = pcs.iter().map(|p| p.records).fold(0u64, |a, b| a.saturating_add(b));
    let has_rgb = pcs.iter().any(|p| p.has_color());
    let has_intensity = pcs.iter().any(|p| p.has_intensity());
    let origin = opts.origin.to_array();
    opts.progress.add_total(declared.min(data.len() as u64 * 8));
    let mut g = Gathered::new();
    g.points.reserve((declared as usize).min(data.len() / 4));
    let mut colorless: Vec<Range<usize>> = Vec::new();
    let mut spherical = 0;
    let mut posed = 0;
    let mut invalid = 0u64;
    for (k, pc) in pcs.iter().enumerate() {
        let first = g.points.len();
        spherical += usize::from(pc.has_spherical() && !pc.has_cartesian());
        posed += usize::from(pc.transform.is_some());
        let mut it = r.pointcloud_simple(pc).map_err(|e| FormatError::Invalid(format!("E57 scan {k}: {e}")))?;
        it.spherical_to_cartesian(true);
        it.apply_pose(true);
        it.intensity_to_color(false);
        it.normalize_intensity(false);
        it.normalize_color(true);
        let mut since = 0u64;
        for p in it {
            let p = p.map_err(|e| FormatError::Invalid(format!("E57 scan {k}, point {}: {e}", g.points.len() - first)))?;
            since += 1;
            if since == 1 << 16 {
                opts.progress.inc(since);
                since = 0;
            }
            let e57::CartesianCoordinate::Valid { x, y, z } = p.cartesian else {
                invalid += 1;
                continue;
            };
            let rgba = match &p.color {
                Some(c) => [color_from_unit(c.red as f64), color_from_unit(c.green as f64), color_from_unit(c.blue as f64), 255],
                None => [0, 0, 0, 255],
            };
            g.push([x, y, z], rgba, has_intensity.then_some(p.intensity.unwrap_or(0.0)), None, &origin);
        }
        opts.progress.inc(since);
        if has_rgb && !pc.has_color() {
            colorless.push(first..g.points.len());
        }
    }
    g.nonfinite += invalid;
    let mut attributes = vec!["xyz (cartesian or spherical, poses applied)".to_string()];
    if has_rgb {
        attributes.push("rgb (normalized by the color limits)".into());
    }
    if has_intensity {
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
    if invalid > 0 {
        notes.push(format!("{invalid} points with invalid coordinates dropped"));
    }
    let cols = super::Columns { intensity: has_intensity, classification: false };
    let mut d = super::ply::gathered(g, cols);
    d.has_rgb = has_rgb;
    d.colorless = colorless;
    d.info = FileInfo {
        variant: format!("E57 {} scan{}", pcs.len(), if pcs.len() == 1 { "" } else { "s" }),
        declared_points: Some(declared),
        attributes,
        skipped: vec![],
        header_bounds: estimate(data),
        notes,
    };
    Ok(d)
}
