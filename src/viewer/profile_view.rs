//! The profile window's image: the strip's points drawn side on by a second rasterizer of the window's
//! backend, into a GL texture the panel shows ([`crate::ui::profile_window`]).
//!
//! How it works: while a profile is open in a window of its own ([`crate::app::profile::Profile::window`]),
//! [`ProfileView::sync`] keeps two keys. The strip's key (the section, its width, the main view's
//! filter, the layers' upload count — colours, visibility) decides when the strip is taken again: the
//! visible layers' points that the filter with the strip keeps ([`pcv_io::filter::kept`], the filter
//! engine's own rule), copied with the colours shown into a cloud of the same origin, uploaded to the
//! second rasterizer, with a map back to the full cloud's indices. The frame's key (the strip's, the
//! image's size, the look) decides when it is drawn again: the profile's orthographic camera at the
//! image's size, the culled mode, into host memory, then into the texture. Nothing is drawn while
//! neither changes, so flying the main view costs the profile nothing. Clicks in the image pick on the
//! second rasterizer's last frame ([`ProfileView::pick`]) and name full-cloud points, so measuring in
//! the profile is measuring the cloud. The main rasterizer is never touched: its last frame (which the
//! main view's picks read) stays the main view's. The texture is deleted when the view is dropped (the
//! profile closed), before the window's GL context goes.
//!
//! A streamed cloud (its points only on the device) has no host points to take the strip from: its
//! strip is read from the files again, on a thread of its own ([`StripJob`]: the files' stream through
//! the main filter with the strip's box, at most [`LOD_STRIP_POINTS`] points evenly spread,
//! [`pcv_io::device::gather`]), while the window goes on; the profile shows the last strip (or a
//! progress line) until it is read, and a new section stops a read still running.
use crate::app::profile::{z_range, Profile};
use crate::app::state::AppState;
use glam::Vec2;
use glow::HasContext;
use pcv_io::filter::PointFilter;
use pcv_io::PointCloud;
use pcv_render::{BackendChoice, FrameParams, PickHit, Rasterizer, RenderMode, Target, CLEAR_COLOR};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

/// What the strip was taken for.
#[derive(Clone, Debug, PartialEq)]
struct StripKey {
    a: glam::DVec3,
    b: glam::DVec3,
    width: f64,
    filter: PointFilter,
    layers_version: u64,
    /// The colour asked for (a level-of-detail strip is coloured as it is read).
    color: (pcv_io::attributes::ColorMode, pcv_io::attributes::FieldLook),
}

/// Points a level-of-detail scene's strip holds at most ([`pcv_lod::LodScene::gather`]).
const LOD_STRIP_POINTS: u64 = 8_000_000;

/// A streamed cloud's strip being read from its files on a thread of its own.
struct StripJob {
    key: StripKey,
    stop: Arc<AtomicBool>,
    progress: Arc<pcv_io::progress::LoadProgress>,
    result: mpsc::Receiver<Result<(Vec<pcv_io::Point>, bool), String>>,
    started: Instant,
}

impl StripJob {
    fn start(files: &pcv_io::device::DeviceFiles, filter: PointFilter, key: StripKey) -> StripJob {
        let strip = files.with_filter(filter);
        let (stop, progress) = (Arc::new(AtomicBool::new(false)), strip.progress.clone());
        let (tx, result) = mpsc::channel();
        let stop_flag = stop.clone();
        std::thread::spawn(move || {
            let got = pcv_io::device::gather(&strip, LOD_STRIP_POINTS, &stop_flag).map_err(|e| e.to_string());
            let _ = tx.send(got); // the view may be gone: nothing waits then
        });
        StripJob { key, stop, progress, result, started: Instant::now() }
    }
}

impl Drop for StripJob {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The strip's points drawn side on, and the texture that shows them.
pub struct ProfileView {
    gl: Rc<glow::Context>,
    rasterizer: Box<dyn Rasterizer>,
    strip: Option<StripKey>,
    /// Strip index ranges → full cloud ([`crate::app::layers::Gathered::map`]).
    map: Vec<(u64, u64, u64)>,
    /// What the last frame was drawn for: the strip, the image's size and the look.
    frame: Option<(StripKey, (u32, u32), pcv_render::look::Look)>,
    px: Vec<u32>,
    texture: Option<glow::Texture>,
    /// The texture's size and the camera it was drawn with.
    pub shown: Option<((u32, u32), glam::Mat4)>,
    /// The strip's points, and how long the last strip and draw took (ms).
    pub points: u64,
    /// A level-of-detail strip left its finer levels out for [`LOD_STRIP_POINTS`].
    pub truncated: bool,
    pub strip_ms: f64,
    pub render_ms: f64,
    /// A streamed cloud's strip being read from its files.
    job: Option<StripJob>,
}

impl ProfileView {
    /// A second rasterizer of the backend named `backend` (`Rasterizer::name`: CUDA's, else the CPU's).
    pub fn new(gl: &Rc<glow::Context>, backend: &str) -> Result<ProfileView, String> {
        let choice = if backend == "cuda" { BackendChoice::Cuda } else { BackendChoice::Cpu };
        let (rasterizer, _) =
            pcv_render::make_rasterizer(choice).map_err(|e| format!("the profile's {backend} rasterizer: {e}"))?;
        Ok(ProfileView {
            gl: gl.clone(),
            rasterizer,
            strip: None,
            map: Vec::new(),
            frame: None,
            px: Vec::new(),
            texture: None,
            shown: None,
            truncated: false,
            points: 0,
            strip_ms: 0.0,
            render_ms: 0.0,
            job: None,
        })
    }

    /// Takes the strip again and draws it when what it shows changed; whether it drew.
    pub fn sync(&mut self, s: &AppState, lod: Option<&pcv_lod::LodScene>) -> Result<bool, String> {
        let Some(p) = s.profile.as_ref() else { return Ok(false) };
        let Some((w, h)) = p.window.filter(|&(w, h)| w > 0 && h > 0) else { return Ok(false) };
        let key = StripKey {
            a: p.a,
            b: p.b,
            width: p.width,
            filter: s.layers.filter.clone(),
            layers_version: s.layers.version,
            color: (s.color_mode, s.field_look),
        };
        if self.strip.as_ref() != Some(&key) {
            // None: a streamed cloud's strip is still being read (the last one stays shown).
            let Some((strip, t)) = self.take_strip(s, p, lod, &key)? else { return Ok(false) };
            self.rasterizer.upload(&strip).map_err(|e| format!("the profile's points: {e}"))?;
            self.points = strip.len();
            self.strip = Some(key.clone());
            self.strip_ms = t.elapsed().as_secs_f64() * 1e3;
        }
        let look = s.look;
        let frame_key = (key, (w, h), look);
        if self.frame.as_ref() == Some(&frame_key) {
            return Ok(false);
        }
        let t = Instant::now();
        let camera = p.camera(&s.nav.camera, &s.layers.cloud, z_range(&s.layers.cloud), w as f32 / h as f32);
        let frame = FrameParams::of_camera(&camera, w, h)
            .with_mode(RenderMode::Culled)
            .with_look(look)
            .with_spacing(s.spacing_m);
        self.px.clear();
        self.px.resize(frame.num_pixels(), CLEAR_COLOR);
        self.rasterizer.render(&frame, Target::Host(&mut self.px)).map_err(|e| format!("the profile: {e}"))?;
        self.upload_texture(w, h)?;
        self.shown = Some(((w, h), camera.clip_from_world(w, h)));
        self.frame = Some(frame_key);
        self.render_ms = t.elapsed().as_secs_f64() * 1e3;
        Ok(true)
    }

    /// The points the main filter with the strip keeps, as the main view draws them, for `key`, and when it began to be taken: the visible layers' (with a map back
    /// to the full cloud), a level-of-detail scene's read from its nodes, or a streamed cloud's read
    /// from its files on a thread ([`StripJob`], started or restarted for a new key; `None` while it
    /// reads). The last two have no map: picks there give positions.
    fn take_strip(
        &mut self,
        s: &AppState,
        p: &Profile,
        lod: Option<&pcv_lod::LodScene>,
        key: &StripKey,
    ) -> Result<Option<(PointCloud, Instant)>, String> {
        let t = Instant::now();
        let cloud = &s.layers.cloud;
        let filter = p.strip_filter(&s.layers.filter, z_range(cloud));
        let label = format!("{} (profile)", cloud.label);
        if let Some(l) = lod {
            let (points, truncated) = l.gather(&filter, LOD_STRIP_POINTS);
            self.map = Vec::new();
            self.truncated = truncated;
            return Ok(Some((PointCloud::from_points(points, l.origin(), label), t)));
        }
        if let Some(files) = cloud.files().filter(|_| cloud.is_device_only()) {
            if self.job.as_ref().is_none_or(|j| j.key != *key) {
                self.job = Some(StripJob::start(files, filter, key.clone()));
            }
            let job = self.job.as_ref().expect("started above");
            let got = match job.result.try_recv() {
                Ok(got) => got,
                Err(mpsc::TryRecvError::Empty) => return Ok(None),
                Err(mpsc::TryRecvError::Disconnected) => Err("the reading thread ended without a strip".into()),
            };
            let started = self.job.take().expect("looked at above").started;
            // A strip that failed is not read again until the section changes.
            self.strip = Some(key.clone());
            let (points, truncated) = got.map_err(|e| format!("reading the profile's strip from the files: {e}"))?;
            self.map = Vec::new();
            self.truncated = truncated;
            return Ok(Some((PointCloud::from_points(points, cloud.origin, label), started)));
        }
        let g = s.layers.gather(&filter);
        self.map = g.map;
        self.truncated = false;
        Ok(Some((PointCloud::from_points(g.points, cloud.origin, label), t)))
    }

    fn upload_texture(&mut self, w: u32, h: u32) -> Result<(), String> {
        let gl = &self.gl;
        // SAFETY: the window's context is current on this thread (the frontend draws on it); the upload
        // reads w·h·4 bytes from `px`, which holds exactly w·h words (resized for this frame above).
        unsafe {
            let tex = match self.texture {
                Some(t) => t,
                None => {
                    let t = gl.create_texture().map_err(|e| format!("the profile's texture: {e}"))?;
                    self.texture = Some(t);
                    t
                }
            };
            gl.bind_texture(glow::TEXTURE_2D, Some(tex));
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MIN_FILTER, glow::NEAREST as i32);
            gl.tex_parameter_i32(glow::TEXTURE_2D, glow::TEXTURE_MAG_FILTER, glow::NEAREST as i32);
            gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 4);
            // sRGB: the overlay's shader writes sRGB (`output_srgb`), taking what it samples as linear;
            // stored as sRGB the image is decoded to linear when sampled and comes out with the
            // colours the rasterizer wrote (as RGBA8 it showed lighter: (220, 80, 60) as (239, 153, 134)).
            gl.tex_image_2d(
                glow::TEXTURE_2D,
                0,
                glow::SRGB8_ALPHA8 as i32,
                w as i32,
                h as i32,
                0,
                glow::RGBA,
                glow::UNSIGNED_BYTE,
                Some(bytemuck::cast_slice(&self.px)),
            );
            gl.bind_texture(glow::TEXTURE_2D, None);
            match gl.get_error() {
                glow::NO_ERROR => Ok(()),
                e => Err(format!("uploading the profile's image: GL error 0x{e:x}")),
            }
        }
    }

    /// While a streamed cloud's strip is read from its files: how far (0..=1).
    pub fn reading(&self) -> Option<f64> {
        self.job.as_ref().map(|j| j.progress.snapshot().fraction)
    }

    /// The texture showing the profile (row 0 at the top, as frames are).
    pub fn texture(&self) -> Option<glow::Texture> {
        self.texture
    }

    /// The nearest strip point drawn within `radius_px` of `at_px` (pixels from the image's top-left),
    /// its index turned into the full cloud's.
    pub fn pick(&mut self, at_px: Vec2, radius_px: u32) -> Option<PickHit> {
        let ((w, h), _) = self.shown?;
        if !(at_px.x >= 0.0 && at_px.y >= 0.0 && at_px.x < w as f32 && at_px.y < h as f32) {
            return None;
        }
        let (x, y) = ((at_px.x as u32).min(w - 1), (at_px.y as u32).min(h - 1));
        let mut hit = self.rasterizer.pick(x, y, radius_px).ok().flatten()?;
        hit.point_index = hit.point_index.and_then(|i| crate::app::layers::full_index(&self.map, i));
        Some(hit)
    }
}

impl Drop for ProfileView {
    fn drop(&mut self) {
        if let Some(t) = self.texture.take() {
            // SAFETY: the texture was made on the window's context, which outlives the view (the
            // frontend drops the view before the window) and is current on this thread.
            unsafe { self.gl.delete_texture(t) };
        }
    }
}
