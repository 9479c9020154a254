//! LAS extra bytes: the fields a file adds after its point format's record (amplitude, deviation,
//! echo width, ...), described by the Extra Bytes VLR (user `LASF_Spec`, record 4; LAS 1.4 R15 §2.5.2,
//! table 24) and read as columns under their own names ([`Field::Extra`]).
//!
//! How it works: the VLR holds one 192-byte descriptor per field, in record order: data type (1–10:
//! u8, i8, u16, i16, u32, i32, u64, i64, f32, f64; 0: `options` undocumented bytes), options (bit 0
//! no-data value set, bit 3 scale, bit 4 offset), a 32-byte name, the no-data value at byte 40, scale
//! at 112 and offset at 136. Field `k` starts where field `k-1` ends, after the format's own bytes.
//! A value is `raw × scale + offset` (as the spec says), NaN where the raw value is the no-data one.
//! Undocumented bytes and the deprecated 2- and 3-element arrays (types 11–30) take their room and
//! are not read; descriptors that overrun the record's extra bytes make the VLR invalid (the spec's
//! "extra bytes mismatch"): nothing of it is read, with a note.
//!
//! Why not a crate: the `las` crate keeps a record's extra bytes as raw bytes and does not read the
//! descriptors; pcv's own LAS reader decodes records at fixed offsets ([`super::las`]), so the
//! descriptors only need to say where each field is: 40 lines, tested on files the tests write.
use super::las::{Header, Vlr, FORMAT_SIZES};
use super::{bytes, Field, Scalar};

/// The Extra Bytes VLR's user ID and record ID.
const USER: &str = "LASF_Spec";
const RECORD: u16 = 4;
/// Bytes a descriptor takes.
const DESCRIPTOR_BYTES: usize = 192;

/// One extra-bytes field of a file's records.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtraBytes {
    pub field: Field,
    /// Its first byte in a record.
    pub offset: usize,
    ty: Scalar,
    /// `raw × scale + add`.
    scale: f64,
    add: f64,
    /// The raw value that means "no value" (read as NaN).
    no_data: Option<f64>,
}

impl ExtraBytes {
    /// The field's value in `rec` (a whole record of the file: at least the format's bytes plus every
    /// described field, checked when the descriptors were read).
    #[inline]
    pub fn value(&self, rec: &[u8]) -> f64 {
        let raw = self.ty.read(rec, self.offset, true);
        if self.no_data == Some(raw) {
            return f64::NAN;
        }
        raw * self.scale + self.add
    }

    /// Its storage, for `pcv info`: "Amplitude (f32)", "Deviation (u16 × 0.1)".
    pub fn describe(&self) -> String {
        let ty = format!("{:?}", self.ty).to_lowercase();
        let mut s = format!("{} ({ty}", self.field.name());
        if self.scale != 1.0 {
            s.push_str(&format!(" × {}", self.scale));
        }
        if self.add != 0.0 {
            s.push_str(&format!(" + {}", self.add));
        }
        s.push(')');
        s
    }
}

/// The extra-bytes fields `h`'s records carry, as the file's Extra Bytes VLR describes them, and notes on
/// what could not be read (for `pcv info`).
pub fn describe(data: &[u8], h: &Header, vlrs: &[Vlr]) -> (Vec<ExtraBytes>, Vec<String>) {
    let (mut out, mut notes) = (Vec::new(), Vec::new());
    let Some(v) = vlrs.iter().find(|v| v.user_id == USER && v.record_id == RECORD) else { return (out, notes) };
    let Some(body) = data.get(v.data.clone()) else { return (out, notes) };
    let own = FORMAT_SIZES.get(h.format as usize).copied().unwrap_or(h.record_len) as usize;
    let room = (h.record_len as usize).saturating_sub(own);
    if body.len() % DESCRIPTOR_BYTES != 0 {
        notes.push(format!(
            "the Extra Bytes VLR holds {} bytes, not a whole number of 192-byte descriptors",
            body.len()
        ));
    }
    let mut at = 0;
    for (k, d) in body.chunks_exact(DESCRIPTOR_BYTES).enumerate() {
        let (data_type, options) = (d[2], d[3]);
        let name = String::from_utf8_lossy(&d[4..36]).trim_end_matches('\0').trim().to_string();
        let name = if name.is_empty() { format!("extra_{k}") } else { name };
        let (ty, size) = match data_type {
            0 => (None, options as usize),
            1..=10 => (Some(scalar(data_type)), scalar(data_type).size()),
            11..=30 => (None, scalar(1 + (data_type - 11) % 10).size() * if data_type <= 20 { 2 } else { 3 }),
            t => {
                notes.push(format!(
                    "extra bytes '{name}': data type {t} is not defined; the fields after it are not read"
                ));
                break;
            }
        };
        if at + size > room {
            // "An extra bytes mismatch renders the Extra Bytes VLR invalid" (the spec).
            notes.push(format!(
                "the Extra Bytes VLR is not used: '{name}' ({size} bytes at byte {at} of the record's {room} extra bytes) overruns the record"
            ));
            out.clear();
            break;
        }
        let offset = own + at;
        at += size;
        let Some(ty) = ty else {
            notes.push(format!("extra bytes '{name}' ({size} bytes, type {data_type}) not read: not a single number"));
            continue;
        };
        let Some(field) = Field::extra(&name) else {
            notes.push(format!(
                "extra bytes '{name}' not read: more than {} extra fields",
                pcv_model::fields::MAX_EXTRA
            ));
            continue;
        };
        let f64_at = |o: usize| f64::from_le_bytes(bytes(d, o));
        // The no-data value is stored as the field's type widened to 8 bytes (u64, i64 or f64).
        let no_data = (options & 1 != 0).then(|| match ty {
            Scalar::F32 | Scalar::F64 => f64_at(40),
            Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => i64::from_le_bytes(bytes(d, 40)) as f64,
            _ => u64::from_le_bytes(bytes(d, 40)) as f64,
        });
        let scale = if options & 8 != 0 { f64_at(112) } else { 1.0 };
        let add = if options & 16 != 0 { f64_at(136) } else { 0.0 };
        if !scale.is_finite() || scale == 0.0 || !add.is_finite() {
            notes.push(format!("extra bytes '{name}' not read: scale {scale}, offset {add}"));
            continue;
        }
        out.push(ExtraBytes { field, offset, ty, scale, add, no_data });
    }
    (out, notes)
}

/// Data types 1–10.
fn scalar(t: u8) -> Scalar {
    [
        Scalar::U8,
        Scalar::I8,
        Scalar::U16,
        Scalar::I16,
        Scalar::U32,
        Scalar::I32,
        Scalar::U64,
        Scalar::I64,
        Scalar::F32,
        Scalar::F64,
    ][(t as usize - 1).min(9)]
}

/// One descriptor (for tests and writers of test files): `name` of `data_type`, with `scale`/`offset`
/// when given and `no_data` when given.
pub fn descriptor(name: &str, data_type: u8, scale: Option<f64>, offset: Option<f64>, no_data: Option<f64>) -> Vec<u8> {
    let mut d = vec![0u8; DESCRIPTOR_BYTES];
    d[2] = data_type;
    let n = name.as_bytes();
    d[4..4 + n.len().min(32)].copy_from_slice(&n[..n.len().min(32)]);
    let mut options = 0;
    if let Some(v) = no_data {
        options |= 1;
        let b = if matches!(data_type, 9 | 10) {
            v.to_le_bytes()
        } else if matches!(data_type, 2 | 4 | 6 | 8) {
            (v as i64).to_le_bytes()
        } else {
            (v as u64).to_le_bytes()
        };
        d[40..48].copy_from_slice(&b);
    }
    if let Some(s) = scale {
        options |= 8;
        d[112..120].copy_from_slice(&s.to_le_bytes());
    }
    if let Some(o) = offset {
        options |= 16;
        d[136..144].copy_from_slice(&o.to_le_bytes());
    }
    d[3] = options;
    d
}
