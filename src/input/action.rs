//! Actions: everything the viewer can be asked to do, whether by a key, the mouse, the panel or a script.
//!
//! How it works: the keymap ([`super::keymap`]) turns input events into actions and the panel returns
//! the actions its widgets stand for, so a button and its key do the very same thing; the viewer's
//! update step ([`crate::app::update`]) is the only place that carries them out.
use crate::app::gizmo::Handle;
use glam::Vec2;
use pcv_camera::{ControllerKind, Nav, UpAxis, View};
use pcv_io::attributes::{ColorMode, FieldLook};
use pcv_io::filter::{PointFilter, Returns};
use pcv_render::look::{Background, Edl, PointShape, PointSize};
use pcv_render::RenderMode;
use std::path::PathBuf;

/// One thing to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Mouse navigation, for the active camera controller.
    Nav(Nav),
    /// Esc: mouse-look on or off.
    ToggleMouselook,
    /// A left click without a drag (framebuffer pixels from the top-left): pick, or measure.
    Click {
        at_px: Vec2,
    },
    /// The cursor rests at a pixel (`None`: it left the view, or the panel has it).
    Hover {
        at_px: Option<Vec2>,
    },
    FrameAll,
    Reset,
    /// A standard view: orthographic, except the oblique one (perspective).
    View(View),
    NextView,
    /// What the measuring tool measures next (and the tool on).
    SetMeasureKind(pcv_model::measure::MeasureKind),
    /// Shift+T: the next kind in [`pcv_model::measure::MeasureKind::ALL`].
    NextMeasureKind,
    /// Enter: ends the polyline or area being placed.
    FinishMeasure,
    /// Removes a listed measurement.
    DeleteMeasurement(usize),
    /// The next click places this vertex of a listed measurement again.
    MoveMeasureVertex {
        measurement: usize,
        vertex: usize,
    },
    /// Writes every measurement to `./pcv-measurements-<time>.<ext>`.
    ExportMeasurements(crate::app::measure::ExportFormat),
    /// F12: the view rendered offscreen 7680 pixels across, saved as `./pcv-8k-<time>.png`.
    HiResScreenshot,
    /// Writes the orthographic top view as a GeoTIFF (`./pcv-ortho-<time>.tif` or `pcv-dsm-…`).
    ExportRaster(pcv_io::raster::RasterKind),
    /// The GeoTIFF's cell size in the files' horizontal unit (0: a screen pixel's).
    SetRasterCell(f64),
    /// Shows the cross-section along listed measurement `i` (its first to its last vertex).
    ShowProfile(usize),
    /// Back to the camera and filter before the profile.
    CloseProfile,
    /// Ctrl+P: closes the profile, or shows one along the last measurement with two points or more.
    ToggleProfile,
    /// The strip's width for profiles (files' unit; 0: automatic).
    SetProfileWidth(f64),
    /// The profile window's image area changed to this size (pixels).
    ProfileViewSize(u32, u32),
    /// A click in the profile window's image, pixels from its top-left: picks there (measures there
    /// while measuring).
    ProfileClick {
        at_px: glam::Vec2,
    },
    /// Writes the strip's points as CSV (station, offset, height, x, y, z), or the profile as SVG.
    ExportProfile {
        svg: bool,
    },
    /// Writes the strip's points from the files as LAZ, every field kept (`pcv convert`'s copy).
    ExportProfileLaz,
    /// Ctrl+A: pins a note at the picked point.
    AddNote,
    SetNoteText(usize, String),
    /// Moves the camera to where note `i` was made from.
    FlyToNote(usize),
    DeleteNote(usize),
    /// Ctrl+S: writes the project (the one opened, or a new `./pcv-project-<time>.pcv.json`).
    SaveProject,
    /// Perspective ↔ orthographic, keeping the view.
    ToggleProjection,
    /// Orthographic (`true`) or perspective.
    SetOrtho(bool),
    NextUp,
    SetUp(UpAxis),
    ToggleController,
    SetController(ControllerKind),
    NextMode,
    SetMode(RenderMode),
    NextColor,
    SetColor(ColorMode),
    /// A field colour mode's ramp, range, tone or blend (the panel's legend).
    SetFieldLook(FieldLook),
    /// One point size larger (+1) or smaller (-1).
    PointSizeStep(i8),
    SetPointSize(PointSize),
    /// Points larger than a pixel round or square (`None`: the other shape).
    SetPointShape(Option<PointShape>),
    /// Eye-dome lighting on (with the last settings) or off.
    ToggleEdl,
    /// High quality (near points blended) on or off (J).
    ToggleQuality,
    /// Lengths in metres, or in the file's own units (N).
    ToggleMetres,
    SetEdl(Option<Edl>),
    NextBackground,
    SetBackground(Background),
    ToggleMeasure,
    ClearMeasure,
    /// Save a PNG of the view in the current directory (`with_panel`: as shown, panel included).
    Screenshot {
        with_panel: bool,
    },
    /// Print the pose as `--camera` arguments and copy it to the clipboard.
    PrintPose,
    /// Store the pose in bookmark slot 0..=8.
    StoreBookmark(usize),
    RecallBookmark(usize),
    /// Write the bookmarks as a camera path file (for `--path` and `pcv record`).
    SaveBookmarksAsPath,
    /// Play or pause the `--path` flight.
    TogglePath,
    ToggleHelp,
    TogglePanel,
    /// Load files as layers (`replace`: instead of the layers shown).
    Open {
        paths: Vec<PathBuf>,
        replace: bool,
    },
    SetLayerVisible {
        layer: usize,
        visible: bool,
    },
    ToggleColorByLayer,
    /// Show or hide the level-of-detail tiles' boxes (the Files section).
    ToggleTileBoxes,
    /// Show or hide a classification code (a click on its legend entry).
    SetClassShown {
        code: u8,
        shown: bool,
    },
    /// Which returns are shown.
    SetReturns(Returns),
    /// Replace the whole point filter (command line, bookmarks, the panel's clip boxes).
    SetFilter(PointFilter),
    /// Edit this clip box with the gizmo (`None`: done editing).
    SelectClipBox(Option<usize>),
    /// Edit the next clip box with the gizmo (after the last: none).
    NextClipBox,
    /// The left button went down on a handle of the gizmo (framebuffer pixels).
    GizmoPress {
        handle: Handle,
        at_px: Vec2,
    },
    /// The cursor moved to `at_px` with a handle held.
    GizmoDrag {
        at_px: Vec2,
    },
    /// The button holding a handle was released.
    GizmoRelease,
    /// Forget the messages shown (errors stay until dismissed).
    DismissMessages,
    Quit,
}
