//! What `pcv convert IN... -o OUT.copc.laz` carries from its LAS/LAZ inputs besides the points: the VLRs
//! (the CRS as WKT or GeoTIFF keys, the extra-bytes description, any others) and the extra bytes of each
//! point.
//!
//! How it works: the first LAS/LAZ input decides. Its VLRs, all but the LASzip and COPC ones (which the
//! output writes itself), are copied in their order after the output's COPC info and LASzip VLRs; its
//! CRS EVLRs (user "LASF_Projection", a LAS 1.4 file's WKT may be one) follow as VLRs when it has no VLR
//! of the same record ID and they fit one (65535 bytes). Its extra bytes per point (the record length
//! beyond its point format's fields, described or not by an extra-bytes VLR, LASF_Spec 4) become the
//! output's: point format 6/7/8 + N bytes, which LAZ compresses as an extra-bytes layer. A later LAS
//! input whose extra bytes have the same count and the same description carries its own; any other
//! input (another layout, or a format with no extra bytes: text, PLY, ...) gets zeros there, and the
//! console says so. A later input whose CRS VLRs differ from the first's is named on the console too
//! (the output keeps the first's: its points are written in the first input's coordinates, so the
//! inputs are expected to share one CRS).
//!
//! COPC requires the CRS as WKT (LASF_Projection 2112): a first input with GeoTIFF keys only gets a WKT
//! VLR made from them (the keys read as `crate::crs` reads them, written by proj-wkt) in place of the
//! keys; where no WKT can be made the keys are kept, the header's WKT bit is cleared and the console
//! says so.
use crate::convert::las_copy::Input;
use crate::formats::las::FORMAT_SIZES;
use std::path::{Path, PathBuf};

/// The user ID of CRS VLRs.
const PROJECTION: &str = "LASF_Projection";
/// The record IDs of a WKT CRS (OGC coordinate system WKT) and of GeoTIFF keys.
const WKT_ID: u16 = 2112;
const GEOTIFF_KEYS_ID: u16 = 34735;

/// The VLRs and extra bytes the output carries, gathered input by input ([`Carried::add`]).
#[derive(Debug, Default)]
pub(super) struct Carried {
    /// Whole VLR records (54-byte header and data) for the output, in order.
    pub records: Vec<Vec<u8>>,
    /// Extra bytes per point.
    pub extra: usize,
    /// The first LAS input's extra-bytes description (the VLR's data), if it has one.
    extra_description: Option<Vec<u8>>,
    /// The first LAS input, and its CRS VLRs (record ID, whole record).
    first: Option<PathBuf>,
    crs: Vec<(u16, Vec<u8>)>,
    /// What the console should say (one line each).
    pub notes: Vec<String>,
    /// The CRS is GeoTIFF keys that no WKT could be made of.
    geotiff_only: bool,
}

/// Whether a whole VLR record is a GeoTIFF key record (LASF_Projection 34735..=34737).
fn is_geotiff_record(r: &[u8]) -> bool {
    r.len() >= 54
        && crate::convert::las_copy::record_user(r) == PROJECTION.as_bytes()
        && (34735..=34737).contains(&u16::from_le_bytes([r[18], r[19]]))
}

/// A whole WKT VLR record (LASF_Projection 2112) holding `wkt` (NUL-terminated, as LAS asks).
fn wkt_record(wkt: &str) -> Vec<u8> {
    let data: Vec<u8> = wkt.bytes().chain([0]).collect();
    let mut r = Vec::with_capacity(54 + data.len());
    super::vlr_header(&mut r, PROJECTION, WKT_ID, data.len().min(u16::MAX as usize) as u16, "OGC WKT");
    r.extend_from_slice(&data);
    r
}

impl Carried {
    /// Adds the LAS/LAZ input `input` (at `path`); returns whether its extra bytes are the output's.
    pub fn add(&mut self, path: &Path, input: &Input) -> bool {
        let h = input.header();
        let extra = (h.record_len as usize).saturating_sub(FORMAT_SIZES[h.format as usize] as usize);
        let kept = input.kept_vlrs();
        let description = kept.iter().find(|v| v.0 == "LASF_Spec" && v.1 == 4).map(|v| v.2[54..].to_vec());
        let mut crs: Vec<(u16, Vec<u8>)> =
            kept.iter().filter(|v| v.0 == PROJECTION).map(|v| (v.1, v.2.to_vec())).collect();
        let evlrs: Vec<(u16, Vec<u8>)> =
            input.crs_evlrs_as_vlrs().into_iter().filter(|e| !crs.iter().any(|c| c.0 == e.0)).collect();
        crs.extend(evlrs.iter().cloned());
        let Some(first) = &self.first else {
            self.first = Some(path.into());
            self.records = kept.iter().map(|v| v.2.to_vec()).chain(evlrs.into_iter().map(|e| e.1)).collect();
            self.extra = extra;
            self.extra_description = description;
            let has = |id: u16| crs.iter().any(|c| c.0 == id);
            if has(GEOTIFF_KEYS_ID) && !has(WKT_ID) {
                let keys: Vec<(u16, &[u8])> =
                    crs.iter().filter(|c| (34735..=34737).contains(&c.0)).map(|c| (c.0, &c.1[54..])).collect();
                match crate::crs::wkt_from_geotiff(&keys) {
                    Ok((wkt, name)) => {
                        // The keys give way to the WKT made from them (one CRS, in the form COPC wants).
                        self.records.retain(|r| !is_geotiff_record(r));
                        self.records.push(wkt_record(&wkt));
                        self.notes.push(format!(
                            "{}: the CRS is GeoTIFF keys only; written as the OGC WKT COPC requires ({name})",
                            path.display()
                        ));
                    }
                    Err(e) => {
                        self.geotiff_only = true;
                        self.notes.push(format!(
                            "{}: the CRS is GeoTIFF keys only and no WKT could be made of them ({e}): the keys are kept and \
                             the WKT bit cleared; COPC readers want WKT (LASF_Projection 2112)",
                            path.display()
                        ));
                    }
                }
            }
            self.crs = crs;
            return extra > 0;
        };
        if crs != self.crs {
            self.notes.push(format!(
                "{}: its CRS VLRs differ from {}'s; the output keeps {}'s",
                path.display(),
                first.display(),
                first.display()
            ));
        }
        let same = extra == self.extra && description == self.extra_description;
        if !same && (extra > 0 || self.extra > 0) {
            self.notes.push(format!(
                "{}: its {extra} extra bytes a point are not {}'s {} (count or description): its points get zeros there",
                path.display(),
                first.display(),
                self.extra
            ));
        }
        same && extra > 0
    }

    /// Notes an input of a format without extra bytes (text, PLY, ...); called after every LAS input's
    /// [`Carried::add`].
    pub fn add_other(&mut self, path: &Path) {
        if self.extra > 0 {
            self.notes.push(format!(
                "{}: it has no extra bytes: its points get zeros in the output's {}",
                path.display(),
                self.extra
            ));
        }
    }

    /// Whether the header's WKT bit is set: the CRS carried is WKT, or there is none.
    pub fn wkt_bit(&self) -> bool {
        !self.geotiff_only
    }

    /// The bytes of the carried VLRs.
    pub fn bytes(&self) -> usize {
        self.records.iter().map(|r| r.len()).sum()
    }
}
