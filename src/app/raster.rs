//! The window's GeoTIFF of what an orthographic top view shows: its orthophoto (the colours on screen)
//! or its surface model.
//!
//! How it works: the view must be orthographic, straight down and north up (Numpad 7), so that its
//! frame is a rectangle of the files' x and y: the eye ± the half width and half height. The points
//! the view shows (visible layers, through the filter and clip volumes) go into a
//! [`pcv_io::raster::Raster`] of that rectangle, one cell a screen pixel unless a cell size is given,
//! each cell keeping its highest point's height and colour (the colours as coloured now: by RGB,
//! class, a field...); [`pcv_io::geotiff`] writes it with the files' coordinate system. Clouds whose
//! points are not in memory (streamed to the GPU, level of detail) are exported by `pcv raster`.
use super::state::AppState;
use pcv_io::raster::{Raster, RasterKind};

/// Why the view cannot be exported.
pub fn refusal(s: &AppState) -> Option<&'static str> {
    let cam = &s.nav.camera;
    let b = cam.basis();
    if !cam.is_ortho() {
        return Some("a GeoTIFF needs the orthographic top view (Numpad 7)");
    }
    if cam.up != pcv_camera::UpAxis::PosZ
        || b.forward.dot(glam::Vec3::NEG_Z) < 0.9999
        || b.right.dot(glam::Vec3::X) < 0.9999
    {
        return Some("a GeoTIFF needs the top view looking straight down, north up (Numpad 7)");
    }
    let c = &s.layers.cloud;
    if c.frame.is_some() {
        return Some("this cloud is shown in a local frame (geographic or geocentric): use pcv raster FILES");
    }
    if c.points.is_empty() || c.is_lazy_scene() || c.is_device_only() {
        return Some("these points are not in memory (streamed or level of detail): use pcv raster FILES");
    }
    None
}

/// The raster of the view's rectangle at `cell` (file units; `None`: a screen pixel's size), from the
/// points shown.
pub fn view_raster(s: &AppState, cell: Option<f64>) -> Result<Raster, String> {
    if let Some(why) = refusal(s) {
        return Err(why.into());
    }
    let cam = &s.nav.camera;
    let pcv_camera::Projection::Orthographic { half_height_m } = cam.projection else { unreachable!("checked") };
    let (w, h) = s.size_px;
    let half_width = half_height_m * w.max(1) as f32 / h.max(1) as f32;
    let cloud = &s.layers.cloud;
    let centre = cloud.to_source(cam.pose.eye);
    let (hw, hh) = (half_width as f64, half_height_m as f64);
    let cell = cell.unwrap_or(2.0 * hh / h.max(1) as f64);
    let mut r = Raster::covering(centre.x - hw, centre.y - hh, centre.x + hw, centre.y + hh, cell)
        .map_err(|e| e.to_string())?;
    for layer in s.layers.layers.iter().filter(|l| l.visible) {
        let range = layer.points.start as usize..layer.points.end as usize;
        for run in pcv_io::filter::kept(cloud, &s.layers.filter, range).runs {
            for p in &cloud.points[run] {
                let f = cloud.to_source(glam::Vec3::from_array(p.pos));
                r.add(f.x, f.y, f.z, [p.rgba[0], p.rgba[1], p.rgba[2]]);
            }
        }
    }
    if r.points == 0 {
        return Err("no point of the view falls in the frame".into());
    }
    Ok(r)
}

/// The file name's part for `kind`.
pub fn suffix(kind: RasterKind) -> &'static str {
    match kind {
        RasterKind::Dsm => "dsm",
        RasterKind::Rgb => "ortho",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::DVec3;

    use pcv_io::{Point, PointCloud};

    /// A 40 × 20 m tile of ground (z 0) with a 4 m block at x 10..14, y 5..9, every 0.25 m, around a
    /// UTM-sized origin; the window 800 × 400.
    fn state() -> AppState {
        let mut points = Vec::new();
        for i in 0..160 {
            for j in 0..80 {
                let (x, y) = (i as f32 * 0.25 + 0.125, j as f32 * 0.25 + 0.125);
                let block = (10.0..14.0).contains(&x) && (5.0..9.0).contains(&y);
                points.push(Point::new(
                    [x, y, if block { 4.0 } else { 0.0 }],
                    if block { [200, 0, 0, 255] } else { [0, 150, 0, 255] },
                ));
            }
        }
        let cloud = PointCloud::from_points(points, DVec3::new(500_000.0, 4_000_000.0, 100.0), "t.las");
        AppState::for_test(cloud, (800, 400))
    }

    #[test]
    fn the_top_view_exports_its_frame_with_the_heights_and_colours_shown() {
        let mut s = state();
        assert!(refusal(&s).unwrap().contains("orthographic"), "perspective is refused");
        s.nav.camera.set_projection(true);
        s.nav.camera.set_view(pcv_camera::View::Front, 2.0);
        assert!(refusal(&s).unwrap().contains("straight down"));
        s.nav.camera.set_view(pcv_camera::View::Top, 2.0);
        assert_eq!(refusal(&s), None);
        let r = view_raster(&s, Some(1.0)).unwrap();
        // The frame holds the whole tile (with the framing's margin), one cell a metre.
        assert!(r.west <= 500_000.0 && r.north >= 4_000_020.0, "{} {}", r.west, r.north);
        assert_eq!(r.points, 160 * 80);
        let (c, row) = r.cell_at(500_012.0, 4_000_007.0).unwrap();
        let k = row as usize * r.width as usize + c as usize;
        assert_eq!((r.z[k], r.rgb[k]), (104.0, [200, 0, 0]), "the block's top, in file heights");
        let (c, row) = r.cell_at(500_030.5, 4_000_015.5).unwrap();
        let k = row as usize * r.width as usize + c as usize;
        assert_eq!((r.z[k], r.rgb[k]), (100.0, [0, 150, 0]));
        // One cell a screen pixel by default: the frame's height over 400 rows.
        let px = view_raster(&s, None).unwrap();
        let pcv_camera::Projection::Orthographic { half_height_m } = s.nav.camera.projection else { unreachable!() };
        assert!((px.cell - 2.0 * half_height_m as f64 / 400.0).abs() < 1e-9);
        // What the view shows: a clip box above the ground keeps the block alone.
        let block = pcv_io::filter::ClipBox::parse("500009,4000004,102,500015,4000010,200").unwrap();
        s.layers.filter = pcv_io::filter::PointFilter { boxes: vec![block], ..Default::default() };
        assert_eq!(view_raster(&s, Some(1.0)).unwrap().points, 16 * 16);
        let far = pcv_io::filter::ClipBox::parse("0,0,0,1,1,1").unwrap();
        s.layers.filter = pcv_io::filter::PointFilter { boxes: vec![far], ..Default::default() };
        assert!(view_raster(&s, Some(1.0)).is_err());
    }
}
