//! PNG in and out for frames: RGBA8 words (r in the low byte), row 0 at the top, as in a PNG.
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: PNG encoding failed: {message}")]
    Encode { path: String, message: String },
    #[error("{path}: not a PNG pcv can read: {message}")]
    Decode { path: String, message: String },
}

/// An image in memory: RGBA8 words, row 0 at the top.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u32>,
}

impl Frame {
    pub fn new(width: u32, height: u32, pixels: Vec<u32>) -> Self {
        assert_eq!(pixels.len(), width as usize * height as usize, "pixel count");
        Self { width, height, pixels }
    }

    /// Pixel (x, y), y counted from the top.
    pub fn get(&self, x: u32, y: u32) -> u32 {
        self.pixels[y as usize * self.width as usize + x as usize]
    }

    /// Rows top to bottom as RGBA bytes (PNG order).
    pub fn to_rgba_top_down(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.pixels.len() * 4);
        for p in &self.pixels {
            out.extend_from_slice(&p.to_le_bytes());
        }
        out
    }

    /// From RGBA bytes, rows top to bottom.
    pub fn from_rgba_top_down(width: u32, height: u32, bytes: &[u8]) -> Self {
        let w = width as usize;
        let mut pixels = Vec::with_capacity(w * height as usize);
        pixels.extend(
            bytes[..w * height as usize * 4].chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
        Frame::new(width, height, pixels)
    }

    /// Number of pixels whose RGB differ (alpha ignored).
    pub fn count_rgb_differences(&self, other: &Frame) -> usize {
        assert_eq!((self.width, self.height), (other.width, other.height), "frame sizes differ");
        self.pixels.iter().zip(&other.pixels).filter(|(a, b)| (*a ^ *b) & 0x00ff_ffff != 0).count()
    }

    pub fn write_png(&self, path: &Path) -> Result<(), ImageError> {
        let p = path.display().to_string();
        let file = std::fs::File::create(path).map_err(|source| ImageError::Io { path: p.clone(), source })?;
        let mut enc = png::Encoder::new(std::io::BufWriter::new(file), self.width, self.height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        let enc_err = |e: png::EncodingError| ImageError::Encode { path: p.clone(), message: e.to_string() };
        let mut w = enc.write_header().map_err(enc_err)?;
        w.write_image_data(&self.to_rgba_top_down()).map_err(enc_err)?;
        w.finish().map_err(enc_err)
    }

    pub fn read_png(path: &Path) -> Result<Frame, ImageError> {
        let p = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| ImageError::Io { path: p.clone(), source })?;
        let dec_err = |e: png::DecodingError| ImageError::Decode { path: p.clone(), message: e.to_string() };
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        decoder.set_transformations(png::Transformations::EXPAND);
        let mut reader = decoder.read_info().map_err(dec_err)?;
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).map_err(dec_err)?;
        if info.bit_depth != png::BitDepth::Eight {
            return Err(ImageError::Decode { path: p, message: "only 8-bit images".into() });
        }
        let rgba: Vec<u8> = match info.color_type {
            png::ColorType::Rgba => buf[..info.buffer_size()].to_vec(),
            png::ColorType::Rgb => {
                buf[..info.buffer_size()].chunks_exact(3).flat_map(|c| [c[0], c[1], c[2], 255]).collect()
            }
            other => return Err(ImageError::Decode { path: p, message: format!("color type {other:?}") }),
        };
        Ok(Frame::from_rgba_top_down(info.width, info.height, &rgba))
    }
}

/// How two frames of the same size differ ([`diff_frames`]).
#[derive(Clone, Debug, PartialEq)]
pub struct FrameDiff {
    /// Pixels of the region whose RGB differ.
    pub differing: u64,
    /// Pixels compared.
    pub compared: u64,
    /// White where RGB differ, black elsewhere (the whole frame's size).
    pub mask: Frame,
}

/// Compares the RGB of `a` and `b` (alpha aside) in `region` (x, y, width, height in pixels from the
/// top-left corner; `None`: everywhere). Errors say what does not fit: different sizes, a region
/// outside the frames.
pub fn diff_frames(a: &Frame, b: &Frame, region: Option<(u32, u32, u32, u32)>) -> Result<FrameDiff, String> {
    if (a.width, a.height) != (b.width, b.height) {
        return Err(format!("the images are {}x{} and {}x{}", a.width, a.height, b.width, b.height));
    }
    let (w, h) = (a.width, a.height);
    let (x0, y0, rw, rh) = region.unwrap_or((0, 0, w, h));
    if x0.saturating_add(rw) > w || y0.saturating_add(rh) > h {
        return Err(format!("region {x0},{y0},{rw},{rh} is outside the {w}x{h} images"));
    }
    let mut differing = 0u64;
    let mut mask = vec![0xff00_0000u32; a.pixels.len()];
    for y in y0..y0 + rh {
        for x in x0..x0 + rw {
            let i = (y * w + x) as usize;
            if (a.pixels[i] ^ b.pixels[i]) & 0x00ff_ffff != 0 {
                differing += 1;
                mask[i] = 0xffff_ffff;
            }
        }
    }
    Ok(FrameDiff { differing, compared: rw as u64 * rh as u64, mask: Frame::new(w, h, mask) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_counts_rgb_differences_in_a_region_and_masks_them() {
        let a = Frame::new(4, 3, vec![0xff00_0000; 12]);
        let mut px = vec![0xff00_0000u32; 12];
        px[8] = 0xff00_00ff; // bottom-left pixel (row 2's first): red differs
        px[3] = 0x0000_0000; // top-right: only alpha differs, which does not count
        let b = Frame::new(4, 3, px);
        let d = diff_frames(&a, &b, None).unwrap();
        assert_eq!((d.differing, d.compared), (1, 12));
        assert_eq!(d.mask.pixels[8], 0xffff_ffff);
        assert_eq!(d.mask.pixels.iter().filter(|&&m| m == 0xffff_ffff).count(), 1);
        // The top row only: the bottom-left pixel is outside it; the bottom row holds it.
        let top = diff_frames(&a, &b, Some((0, 0, 4, 1))).unwrap();
        assert_eq!((top.differing, top.compared), (0, 4));
        assert_eq!(diff_frames(&a, &b, Some((0, 2, 4, 1))).unwrap().differing, 1);
        assert!(diff_frames(&a, &b, Some((2, 0, 3, 1))).unwrap_err().contains("outside"));
        assert!(diff_frames(&a, &Frame::new(3, 3, vec![0; 9]), None).unwrap_err().contains("4x3 and 3x3"));
    }
}
