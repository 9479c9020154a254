//! Decoding one COPC node: its LAZ chunk decompressed (by pcv-laz), its records turned into points by
//! the LAS loader's own code.
//!
//! How it works: a node's bytes are one LAZ chunk holding `point_count` records. They are decompressed
//! with [`laz_chunk_pieces`](crate::formats::las::laz_chunk_pieces) (the LAS reader's, which
//! pcv-laz decodes: the layered formats' size table checked against the chunk first, a decoder panic on
//! corrupt data turned into an error) and the records go through `push_las_records`, so a node's
//! points, intensity and classification are bit for bit what loading the file as LAZ gives for those
//! records (relative to the same origin). Points of formats without RGB get the elevation ramp over the
//! octree's z range. [`exact`] gives the records' exact values instead (f64 coordinates, 16-bit colors,
//! GPS time), for tests and tools.
use crate::attributes::ColorSpec;
use crate::formats::las::{layout, laz_chunk_pieces, push_las_records, record_fn, Chunk, Header};
use crate::formats::Columns;
use crate::octree::{NodePoints, Octree, OctreeNode};
use crate::stream::Staging;
use glam::DVec3;

/// Decompresses a node's chunk (`bytes`) into its raw records, decompressing the fields `selection`
/// names (the others are left zero).
pub fn decompress(
    bytes: &[u8],
    node: &OctreeNode,
    h: &Header,
    vlr: &laz::LazVlr,
    selection: laz::DecompressionSelection,
) -> Result<Vec<u8>, String> {
    let stride = h.record_len as usize;
    let chunk = [Chunk { byte: 0, bytes: bytes.len(), points: node.point_count as usize }];
    // Room for what the chunk's bytes can plausibly hold (LAZ compresses records 5-15 times), never
    // for what a damaged hierarchy claims: the buffer grows if the chunk really holds more.
    let plausible = bytes.len().saturating_mul(16) / stride.max(1) + 1024;
    let mut all = Vec::with_capacity((node.point_count as usize).min(1 << 20).min(plausible) * stride);
    let mut scratch = Vec::new();
    laz_chunk_pieces(bytes, vlr, &chunk, 0, selection, &mut scratch, &mut |p| all.extend_from_slice(p))
        .map_err(|e| format!("decoding its LAZ chunk: {}", strip_at(&e.to_string())))?;
    Ok(all)
}

/// The chunk reader's message without its "byte 0: LAZ chunk 0 of 1: " (the node's range replaces it).
fn strip_at(m: &str) -> &str {
    m.strip_prefix("byte 0: ").unwrap_or(m).strip_prefix("LAZ chunk 0 of 1: ").unwrap_or(m)
}

/// Whether the RGB fields of `records` hold 8-bit values (no component above 255, not all zero).
pub fn looks_8bit(h: &Header, records: &[u8]) -> bool {
    let f = record_fn(h, false);
    let max = records.chunks_exact(h.record_len as usize).map(|r| f(r).aux).max().unwrap_or(0);
    crate::formats::las::looks_8bit(max)
}

/// Decodes a node's chunk into points relative to `origin`, with `fields` (of those the file has).
/// Asked for fields, every layer is decompressed (the layered formats keep GPS time, scan angle and the
/// rest apart); without, only positions, returns, classes, intensity and colours.
#[allow(
    clippy::too_many_arguments,
    reason = "what a node's decode reads: its bytes, the node, the file's header, VLR and octree, the origin"
)]
pub fn decode_node(
    bytes: &[u8],
    node: &OctreeNode,
    h: &Header,
    vlr: &laz::LazVlr,
    eight_bit: bool,
    octree: &Octree,
    origin: DVec3,
    fields: crate::formats::FieldSet,
) -> Result<NodePoints, String> {
    let selection = match fields.is_empty() {
        true => laz::DecompressionSelection(
            laz::DecompressionSelection::XY_RETURNS_CHANNEL
                | laz::DecompressionSelection::Z
                | laz::DecompressionSelection::CLASSIFICATION
                | laz::DecompressionSelection::INTENSITY
                | laz::DecompressionSelection::RGB,
        ),
        false => laz::DecompressionSelection::all(),
    };
    let chunk = [Chunk { byte: 0, bytes: bytes.len(), points: node.point_count as usize }];
    let mut st = Staging::default();
    st.reset(0, Columns { intensity: true, classification: true, fields });
    let o = origin.to_array();
    let mut scratch = Vec::new();
    laz_chunk_pieces(bytes, vlr, &chunk, 0, selection, &mut scratch, &mut |p| {
        push_las_records(&mut st, p, h, eight_bit, &o)
    })
    .map_err(|e| format!("decoding its LAZ chunk: {}", strip_at(&e.to_string())))?;
    if layout(h.format).rgb.is_none() {
        let z = ((octree.points_min.z - origin.z) as f32, (octree.points_max.z - origin.z) as f32);
        let spec = ColorSpec::Rgb { z };
        for p in &mut st.points {
            p.rgba = spec.color(None, p.pos[2], 0.0, 0);
        }
    }
    let fields = fields.iter().zip(std::mem::take(&mut st.fields)).collect();
    Ok(NodePoints { points: st.points, intensity: Some(st.intensity), classification: Some(st.classification), fields })
}

/// The exact values of point records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExactPoints {
    /// Coordinates in the file's own coordinates (integer × scale + offset).
    pub xyz: Vec<[f64; 3]>,
    pub intensity: Vec<u16>,
    pub classification: Vec<u8>,
    /// 16-bit colors, for formats with RGB.
    pub rgb16: Option<Vec<[u16; 3]>>,
    /// GPS time, for formats with it (1 and 3–10).
    pub gps_time: Option<Vec<f64>>,
}

/// The exact values of `records` (of `h`'s point format).
pub fn exact(records: &[u8], h: &Header) -> ExactPoints {
    let f = record_fn(h, false);
    let has_rgb = layout(h.format).rgb.is_some();
    let gps_at = match h.format {
        1 | 3 | 4 | 5 => Some(20),
        6..=10 => Some(22),
        _ => None,
    };
    let mut e =
        ExactPoints { rgb16: has_rgb.then(Vec::new), gps_time: gps_at.map(|_| Vec::new()), ..Default::default() };
    for rec in records.chunks_exact(h.record_len as usize) {
        let r = f(rec);
        e.xyz.push(r.xyz);
        e.intensity.push(r.intensity as u16);
        e.classification.push(r.class);
        if let Some(c) = &mut e.rgb16 {
            c.push(r.rgb16());
        }
        if let (Some(g), Some(at)) = (&mut e.gps_time, gps_at) {
            g.push(f64::from_le_bytes(std::array::from_fn(|k| rec[at + k])));
        }
    }
    e
}
