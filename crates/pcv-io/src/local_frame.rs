//! A local metric frame for clouds whose coordinates are not metres on a plane: geographic ones
//! (longitude and latitude in degrees, height in metres) and geocentric ones (Earth-centred X, Y, Z).
//!
//! How it works: such a cloud is drawn in east-north-up metres at its centre. A point's file
//! coordinates go to Earth-centred coordinates (proj-core's transform to EPSG:4978 for a geographic
//! system; geocentric ones already are), then through the tangent plane's basis at the centre
//! (east, north, up, from the centre's longitude and latitude). [`LocalFrame::to_file`] goes back, so
//! picking and the panel report the file's own coordinates. The frame is exact up to f64 rounding;
//! its axes are the true east, north and up at the centre only (a cloud 100 km across bends 0.9° at
//! its edges, as any tangent plane does).
use crate::crs::CrsError;
use glam::DVec3;
use pcv_model::crs::{Crs, CrsKind};
use proj_core::Transform;

/// East-north-up metres at a centre, for a geographic or geocentric cloud.
#[derive(Clone)]
pub struct LocalFrame {
    pub kind: CrsKind,
    /// The centre in the file's coordinates (degrees and metres, or Earth-centred metres).
    pub centre_file: DVec3,
    /// Its longitude and latitude in degrees.
    pub centre_lon_lat_deg: (f64, f64),
    centre_ecef: DVec3,
    /// East, north and up at the centre, in Earth-centred coordinates.
    basis: [DVec3; 3],
    /// File coordinates to Earth-centred ones and back (geographic systems only).
    to_ecef: Option<Transform>,
    from_ecef: Option<Transform>,
}

impl std::fmt::Debug for LocalFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalFrame")
            .field("kind", &self.kind)
            .field("centre_file", &self.centre_file)
            .field("centre_lon_lat_deg", &self.centre_lon_lat_deg)
            .finish()
    }
}

fn fail(crs: &Crs, e: impl std::fmt::Display) -> CrsError {
    CrsError::Unreadable { read_from: crs.read_from.clone(), message: format!("no local frame for {}: {e}", crs.name) }
}

impl LocalFrame {
    /// The frame for a cloud in `crs` centred at `centre_file` (its file coordinates); `None` for
    /// systems already in linear units on a plane (projected, vertical).
    pub fn for_crs(crs: &Crs, centre_file: DVec3) -> Result<Option<LocalFrame>, CrsError> {
        let (to_ecef, from_ecef) = match crs.kind {
            CrsKind::Geographic => {
                let def = proj_wkt::parse_crs(&crs.definition).map_err(|e| fail(crs, e))?;
                let horizontal = def.horizontal_crs().unwrap_or(def);
                let ecef = proj_wkt::parse_crs("EPSG:4978").map_err(|e| fail(crs, e))?;
                (
                    Some(Transform::from_crs_defs(&horizontal, &ecef).map_err(|e| fail(crs, e))?),
                    Some(Transform::from_crs_defs(&ecef, &horizontal).map_err(|e| fail(crs, e))?),
                )
            }
            CrsKind::Geocentric => (None, None),
            CrsKind::Projected | CrsKind::Vertical => return Ok(None),
        };
        let centre_ecef = match &to_ecef {
            Some(t) => {
                let (x, y, z) =
                    t.convert_3d((centre_file.x, centre_file.y, centre_file.z)).map_err(|e| fail(crs, e))?;
                DVec3::new(x, y, z)
            }
            None => centre_file,
        };
        let (lon, lat) = match crs.kind {
            CrsKind::Geographic => (centre_file.x.to_radians(), centre_file.y.to_radians()),
            _ => geodetic_lon_lat(centre_ecef),
        };
        let (sl, cl, sp, cp) = (lon.sin(), lon.cos(), lat.sin(), lat.cos());
        let basis = [DVec3::new(-sl, cl, 0.0), DVec3::new(-sp * cl, -sp * sl, cp), DVec3::new(cp * cl, cp * sl, sp)];
        Ok(Some(LocalFrame {
            kind: crs.kind,
            centre_file,
            centre_lon_lat_deg: (lon.to_degrees(), lat.to_degrees()),
            centre_ecef,
            basis,
            to_ecef,
            from_ecef,
        }))
    }

    /// File coordinates to east-north-up metres at the centre (`None` where the transform fails: a
    /// latitude beyond ±90°).
    pub fn to_local(&self, file: DVec3) -> Option<DVec3> {
        let ecef = match &self.to_ecef {
            Some(t) => {
                let (x, y, z) = t.convert_3d((file.x, file.y, file.z)).ok()?;
                DVec3::new(x, y, z)
            }
            None => file,
        };
        let d = ecef - self.centre_ecef;
        Some(DVec3::new(d.dot(self.basis[0]), d.dot(self.basis[1]), d.dot(self.basis[2])))
    }

    /// East-north-up metres at the centre back to file coordinates.
    pub fn to_file(&self, local: DVec3) -> DVec3 {
        let ecef = self.centre_ecef + self.basis[0] * local.x + self.basis[1] * local.y + self.basis[2] * local.z;
        match &self.from_ecef {
            Some(t) => {
                t.convert_3d((ecef.x, ecef.y, ecef.z)).map(|(x, y, z)| DVec3::new(x, y, z)).unwrap_or(DVec3::NAN)
            }
            None => ecef,
        }
    }

    /// What the window and the log say about it.
    pub fn note(&self) -> String {
        let (lon, lat) = self.centre_lon_lat_deg;
        format!(
            "{} coordinates are shown in east-north-up metres at lon {lon:.6}, lat {lat:.6}; picks report the file's own coordinates",
            self.kind
        )
    }
}

/// The geodetic longitude and latitude (radians) of an Earth-centred point on WGS 84 (Bowring's
/// formula: exact to well under a millimetre near the surface).
fn geodetic_lon_lat(p: DVec3) -> (f64, f64) {
    const A: f64 = 6_378_137.0;
    const F: f64 = 1.0 / 298.257_223_563;
    let b = A * (1.0 - F);
    let e2 = F * (2.0 - F);
    let ep2 = (A * A - b * b) / (b * b);
    let r = (p.x * p.x + p.y * p.y).sqrt();
    let theta = (p.z * A).atan2(r * b);
    let lat = (p.z + ep2 * b * theta.sin().powi(3)).atan2(r - e2 * A * theta.cos().powi(3));
    (p.y.atan2(p.x), lat)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crs(def: &str) -> Crs {
        crate::crs::parse(def, "test").unwrap()
    }

    #[test]
    fn a_geographic_cloud_gets_metres_east_north_and_up() {
        // Around Paris: 0.001° of latitude is 111.2 m, of longitude 111.3 m × cos(48.85°) = 73.3 m.
        let c = DVec3::new(2.35, 48.85, 35.0);
        let f = LocalFrame::for_crs(&crs("EPSG:4326"), c).unwrap().unwrap();
        assert!(f.to_local(c).unwrap().length() < 1e-6);
        let north = f.to_local(c + DVec3::new(0.0, 0.001, 0.0)).unwrap();
        assert!((north.y - 111.2).abs() < 0.2 && north.x.abs() < 1e-6, "{north:?}");
        let east = f.to_local(c + DVec3::new(0.001, 0.0, 0.0)).unwrap();
        assert!((east.x - 73.3).abs() < 0.2 && east.y.abs() < 0.01, "{east:?}");
        let up = f.to_local(c + DVec3::new(0.0, 0.0, 10.0)).unwrap();
        assert!((up.z - 10.0).abs() < 1e-6, "{up:?}");
        // Back to the file's own degrees.
        let back = f.to_file(east);
        assert!((back - (c + DVec3::new(0.001, 0.0, 0.0))).abs().max_element() < 1e-9, "{back:?}");
        assert!(f.note().contains("lat 48.850000"), "{}", f.note());
    }

    #[test]
    fn a_geocentric_cloud_gets_the_same_frame() {
        let geo = LocalFrame::for_crs(&crs("EPSG:4326"), DVec3::new(2.35, 48.85, 35.0)).unwrap().unwrap();
        let centre = geo.centre_ecef;
        let f = LocalFrame::for_crs(&crs("EPSG:4978"), centre).unwrap().unwrap();
        let (lon, lat) = f.centre_lon_lat_deg;
        assert!((lon - 2.35).abs() < 1e-9 && (lat - 48.85).abs() < 1e-9, "{lon} {lat}");
        // 10 m up at the centre, along the ellipsoid's normal.
        let up = f.to_local(centre + geo.basis[2] * 10.0).unwrap();
        assert!((up - DVec3::new(0.0, 0.0, 10.0)).length() < 1e-6, "{up:?}");
        assert!((f.to_file(up) - (centre + geo.basis[2] * 10.0)).length() < 1e-6);
        // A projected system needs none.
        assert!(LocalFrame::for_crs(&crs("EPSG:32610"), DVec3::ZERO).unwrap().is_none());
    }
}
