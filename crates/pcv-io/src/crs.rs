//! Reading a file's coordinate reference system: the OGC WKT or GeoTIFF keys of LAS, LAZ and COPC
//! (VLRs and LAS 1.4 EVLRs), a `.prj` beside any file, or a definition given on the command line
//! (`--crs EPSG:N|WKT|file.prj`).
//!
//! How it works: definitions (WKT 1 and 2, PROJJSON, `EPSG:N`, `EPSG:H+V`) are parsed by proj-wkt, the
//! pure-Rust companion of proj-core (no C library to install on Windows or CI, its own EPSG registry;
//! PROJ through the `proj` crate would need libproj and its database on every machine). GeoTIFF keys
//! are decoded by the `las` crate ([`las::Header::get_geotiff_crs`]) and turned into `EPSG:N` (with the
//! vertical system as `EPSG:H+V`), with the linear-unit keys' units where the codes say more. What the
//! parse gives is kept as a [`Crs`]: name, EPSG codes, kind, the units across and up.
use crate::formats::las::{Header, Vlr};
use pcv_model::crs::{Crs, CrsKind, LengthUnit};
use pcv_model::Format;
use std::path::Path;

/// Why a CRS could not be read; it names where the definition came from.
#[derive(Debug, thiserror::Error)]
pub enum CrsError {
    #[error("{read_from}: {message}")]
    Unreadable { read_from: String, message: String },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
}

fn unreadable(read_from: &str, message: impl Into<String>) -> CrsError {
    CrsError::Unreadable { read_from: read_from.to_string(), message: message.into() }
}

/// Parses `definition` (WKT, PROJJSON, `EPSG:N`, `EPSG:H+V`, a PROJ string), read from `read_from`.
pub fn parse(definition: &str, read_from: &str) -> Result<Crs, CrsError> {
    let text = definition.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    if text.is_empty() {
        return Err(unreadable(read_from, "the definition is empty"));
    }
    let def = proj_wkt::parse_crs(text).map_err(|e| unreadable(read_from, e.to_string()))?;
    let horizontal = def.horizontal_crs();
    let h = horizontal.as_ref().unwrap_or(&def);
    let kind = if h.is_projected() {
        CrsKind::Projected
    } else if h.is_geographic() {
        CrsKind::Geographic
    } else if h.is_geocentric() {
        CrsKind::Geocentric
    } else {
        CrsKind::Vertical
    };
    let horizontal_unit = match h.as_projected() {
        Some(p) => LengthUnit { metres: p.linear_unit().meters_per_unit() },
        None => LengthUnit::METRE,
    };
    let vertical = def.vertical_crs();
    let vertical_unit = match vertical {
        Some(v) => LengthUnit { metres: v.linear_unit().meters_per_unit() },
        // Heights of a projected system without a vertical one are in its linear unit (as LAS files
        // in feet store them); geographic and geocentric heights are metres.
        None => horizontal_unit,
    };
    let nonzero = |c: u32| (c != 0).then_some(c);
    let name = [def.name(), h.name()]
        .into_iter()
        .find(|n| !n.is_empty())
        .map(str::to_string)
        .or_else(|| wkt_name(text))
        .unwrap_or_default();
    Ok(Crs {
        name,
        epsg: nonzero(def.epsg()).or_else(|| nonzero(h.epsg())),
        kind,
        horizontal_unit,
        vertical_name: vertical.map(|v| v.name().to_string()).filter(|n| !n.is_empty()),
        vertical_epsg: vertical.and_then(|v| nonzero(v.epsg())),
        vertical_unit,
        read_from: read_from.to_string(),
        definition: text.to_string(),
    })
}

/// The name a WKT definition gives itself (its first quoted string), for definitions proj-wkt parses
/// without naming them (custom ones, outside its registry).
fn wkt_name(text: &str) -> Option<String> {
    let start = text.find('"')? + 1;
    let len = text[start..].find('"')?;
    Some(text[start..start + len].to_string()).filter(|n| !n.is_empty())
}

/// The CRS `--crs` names: a definition, or a file (`.prj`, `.wkt`) holding one.
pub fn from_argument(arg: &str) -> Result<Crs, CrsError> {
    let p = Path::new(arg);
    if p.is_file() {
        let text = std::fs::read_to_string(p).map_err(|source| CrsError::Io { path: arg.to_string(), source })?;
        return parse(&text, &format!("--crs {arg}"));
    }
    parse(arg, &format!("--crs {arg}"))
}

/// The CRS in a `.prj` file beside `path` (`terrain.prj` for `terrain.ply`), if there is one.
pub fn sidecar(path: &Path) -> Option<Result<Crs, CrsError>> {
    let prj = path.with_extension("prj");
    if !prj.is_file() {
        return None;
    }
    let name = prj.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Some(match std::fs::read_to_string(&prj) {
        Ok(text) => parse(&text, &name),
        Err(source) => Err(CrsError::Io { path: prj.display().to_string(), source }),
    })
}

/// The CRS of the file at `path` (its bytes `data`, its format `format`): what the file says
/// (LAS/LAZ/COPC records, E57 coordinate metadata), else a `.prj` beside it; `None` when neither names one.
pub fn of_file(path: &Path, data: &[u8], format: Format) -> Option<Result<Crs, CrsError>> {
    let own = match format {
        Format::Las | Format::Laz => crate::formats::las::parse_header(data).ok().and_then(|h| {
            let vlrs = crate::formats::las::vlrs(data, &h).unwrap_or_default();
            from_las(data, &h, &vlrs)
        }),
        Format::E57 => e57_metadata(data),
        _ => None,
    };
    own.or_else(|| sidecar(path))
}

/// An E57 file's `coordinateMetadata` (a WKT or an EPSG code, by the standard's advice), when it has one.
fn e57_metadata(data: &[u8]) -> Option<Result<Crs, CrsError>> {
    let r = crate::formats::catch_quietly(|| e57::E57Reader::new(std::io::Cursor::new(data)).ok()).ok().flatten()?;
    let text = r.coordinate_metadata()?.trim().to_string();
    (!text.is_empty()).then(|| parse(&text, "the E57 coordinate metadata"))
}

const PROJECTION: &str = "lasf_projection";
const WKT_RECORD: u16 = 2112;

/// A LAS file's CRS from its VLRs and EVLRs: the OGC WKT record where there is one, else the GeoTIFF
/// keys; `None` when it has neither.
pub fn from_las(data: &[u8], header: &Header, vlrs: &[Vlr]) -> Option<Result<Crs, CrsError>> {
    let evlrs = evlrs(data, header);
    let all = || vlrs.iter().map(|v| (v, "VLR")).chain(evlrs.iter().map(|v| (v, "EVLR")));
    let is_projection = |v: &Vlr| v.user_id.eq_ignore_ascii_case(PROJECTION);
    if let Some((v, kind)) = all().find(|(v, _)| is_projection(v) && v.record_id == WKT_RECORD) {
        let text = String::from_utf8_lossy(&data[v.data.clone()]);
        return Some(parse(&text, &format!("the OGC WKT {kind}")));
    }
    let geotiff: Vec<las::Vlr> = all()
        .filter(|(v, _)| is_projection(v) && (34735..=34737).contains(&v.record_id))
        .map(|(v, _)| las::Vlr {
            user_id: v.user_id.clone(),
            record_id: v.record_id,
            description: String::new(),
            data: data[v.data.clone()].to_vec(),
        })
        .collect();
    if !geotiff.iter().any(|v| v.record_id == 34735) {
        return None;
    }
    Some(from_geotiff(geotiff))
}

/// An OGC WKT (WKT1, as LAS's 2112 record holds it) of the CRS GeoTIFF key records (record ID and data:
/// 34735 the key directory, 34736 doubles, 34737 ASCII) name, written by proj-wkt, and the CRS's name.
pub fn wkt_from_geotiff(records: &[(u16, &[u8])]) -> Result<(String, String), CrsError> {
    let vlrs = records
        .iter()
        .map(|(id, data)| las::Vlr {
            user_id: "LASF_Projection".into(),
            record_id: *id,
            description: String::new(),
            data: data.to_vec(),
        })
        .collect();
    let crs = from_geotiff(vlrs)?;
    let def = proj_wkt::parse_crs(&crs.definition).map_err(|e| unreadable("the GeoTIFF keys", e.to_string()))?;
    let wkt = proj_wkt::to_wkt(&def).map_err(|e| unreadable("the GeoTIFF keys", e.to_string()))?;
    Ok((wkt, crs.summary()))
}

/// The EVLRs of a LAS 1.4 file (none for older versions, or where the header's count or offset is
/// impossible: a damaged EVLR table is not worth failing the file for).
fn evlrs(data: &[u8], h: &Header) -> Vec<Vlr> {
    if h.version.1 < 4 || data.len() < 247 {
        return Vec::new();
    }
    let start = u64::from_le_bytes(data[235..243].try_into().unwrap_or_default());
    let count = u32::from_le_bytes(data[243..247].try_into().unwrap_or_default());
    let mut out = Vec::new();
    let mut at = start as usize;
    for _ in 0..count.min(1024) {
        let Some(head) = data.get(at..at + 60) else { break };
        let len = u64::from_le_bytes(head[20..28].try_into().unwrap_or_default()) as usize;
        let body = at + 60;
        if body.checked_add(len).is_none_or(|end| end > data.len()) {
            break;
        }
        let user_id = String::from_utf8_lossy(&head[2..18]).trim_end_matches('\0').to_string();
        out.push(Vlr { user_id, record_id: u16::from_le_bytes([head[18], head[19]]), data: body..body + len });
        at = body + len;
    }
    out
}

/// GeoTIFF's linear-unit codes (EPSG unit codes) and their sizes in metres.
fn geotiff_unit(code: u16) -> Option<LengthUnit> {
    let metres = match code {
        9001 => 1.0,
        9002 => 0.3048,
        9003 => 1200.0 / 3937.0,
        9036 => 1000.0,
        9096 => 0.9144,
        _ => return None,
    };
    Some(LengthUnit { metres })
}

/// A CRS from GeoTIFF key records (34735 the key directory, 34736 doubles, 34737 ASCII).
fn from_geotiff(records: Vec<las::Vlr>) -> Result<Crs, CrsError> {
    const FROM: &str = "the GeoTIFF keys";
    let mut b = las::Builder::default();
    b.vlrs = records;
    let header = b.into_header().map_err(|e| unreadable(FROM, e.to_string()))?;
    let keys = header
        .get_geotiff_crs()
        .map_err(|e| unreadable(FROM, e.to_string()))?
        .ok_or_else(|| unreadable(FROM, "no key directory"))?;
    let key = |id: u16| {
        keys.entries.iter().find(|e| e.id == id).and_then(|e| match e.data {
            las::crs::GeoTiffData::U16(v) => Some(v),
            _ => None,
        })
    };
    let citation = keys.entries.iter().find_map(|e| match (&e.data, e.id) {
        (las::crs::GeoTiffData::String(s), 1026 | 3073) => Some(s.trim_end_matches(['|', '\0']).to_string()),
        _ => None,
    });
    let epsg = |v: Option<u16>| v.filter(|c| (1024..32767).contains(c));
    let horizontal = epsg(key(3072)).or(epsg(key(2048)));
    let vertical = epsg(key(4096));
    let mut crs = match (horizontal, vertical) {
        (Some(h), Some(v)) => parse(&format!("EPSG:{h}+{v}"), FROM).or_else(|_| parse(&format!("EPSG:{h}"), FROM)),
        (Some(h), None) => parse(&format!("EPSG:{h}"), FROM),
        (None, _) => Err(unreadable(
            FROM,
            format!(
                "a user-defined system{} (no EPSG code; a WKT record would name it)",
                citation.as_ref().map(|c| format!(" '{c}'")).unwrap_or_default()
            ),
        )),
    }?;
    // The unit keys say what the coordinates are in where a code alone would not.
    if let Some(u) = key(3076).and_then(geotiff_unit) {
        if crs.kind == CrsKind::Projected {
            crs.horizontal_unit = u;
            if crs.vertical_name.is_none() {
                crs.vertical_unit = u;
            }
        }
    }
    if let Some(u) = key(4099).and_then(geotiff_unit) {
        crs.vertical_unit = u;
    }
    Ok(crs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NAD83 / Oregon GIC Lambert (ft), as PDAL's autzen files carry it (abridged).
    pub const OREGON_FT: &str = r#"PROJCS["NAD83 / Oregon GIC Lambert (ft)",GEOGCS["NAD83",DATUM["North_American_Datum_1983",SPHEROID["GRS 1980",6378137,298.257222101]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic_2SP"],PARAMETER["standard_parallel_1",43],PARAMETER["standard_parallel_2",45.5],PARAMETER["latitude_of_origin",41.75],PARAMETER["central_meridian",-120.5],PARAMETER["false_easting",1312335.958],PARAMETER["false_northing",0],UNIT["foot",0.3048],AUTHORITY["EPSG","2992"]]"#;

    #[test]
    fn wkt_in_feet_reads_as_feet() {
        let c = parse(OREGON_FT, "test").unwrap();
        assert_eq!(
            (c.kind, c.epsg, c.horizontal_unit, c.vertical_unit),
            (CrsKind::Projected, Some(2992), LengthUnit::FOOT, LengthUnit::FOOT)
        );
        assert_eq!(c.name, "NAD83 / Oregon GIC Lambert (ft)");
        // Without its AUTHORITY: the same units, the WKT's own name, no code.
        let bare = OREGON_FT.replace(r#",AUTHORITY["EPSG","2992"]"#, "");
        let c = parse(&bare, "test").unwrap();
        assert_eq!(
            (c.epsg, c.horizontal_unit.symbol(), c.name.as_str()),
            (None, "ft".into(), "NAD83 / Oregon GIC Lambert (ft)")
        );
    }

    #[test]
    fn codes_name_us_feet_compounds_geographic_and_geocentric_systems() {
        let c = parse("EPSG:2258", "test").unwrap();
        assert_eq!((c.horizontal_unit.symbol(), c.kind), ("ftUS".into(), CrsKind::Projected));
        let c = parse("EPSG:26913+6360", "test").unwrap();
        assert_eq!((c.horizontal_unit.symbol(), c.vertical_unit.symbol()), ("m".into(), "ftUS".into()));
        assert_eq!(c.vertical_epsg, Some(6360));
        assert_eq!(parse("EPSG:4326", "t").unwrap().kind, CrsKind::Geographic);
        assert_eq!(parse("EPSG:4978", "t").unwrap().kind, CrsKind::Geocentric);
        let e = parse("not a crs", "--crs x").unwrap_err().to_string();
        assert!(e.starts_with("--crs x: "), "{e}");
        assert!(parse("", "the OGC WKT VLR").unwrap_err().to_string().contains("empty"));
    }

    #[test]
    fn geotiff_keys_give_codes_and_units() {
        // Key directory: version 1.1.0, 3 keys: model type projected, ProjectedCSTypeGeoKey 2992,
        // ProjLinearUnitsGeoKey 9002 (foot).
        let words: [u16; 16] = [1, 1, 0, 3, 1024, 0, 1, 1, 3072, 0, 1, 2992, 3076, 0, 1, 9002];
        let data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let v = las::Vlr { user_id: "LASF_Projection".into(), record_id: 34735, description: String::new(), data };
        let c = from_geotiff(vec![v]).unwrap();
        assert_eq!(
            (c.epsg, c.horizontal_unit, c.read_from.as_str()),
            (Some(2992), LengthUnit::FOOT, "the GeoTIFF keys")
        );
        // A user-defined system with no WKT: said so.
        let words: [u16; 8] = [1, 1, 0, 1, 3072, 0, 1, 32767];
        let data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let v = las::Vlr { user_id: "LASF_Projection".into(), record_id: 34735, description: String::new(), data };
        assert!(from_geotiff(vec![v]).unwrap_err().to_string().contains("user-defined"));
    }
}
