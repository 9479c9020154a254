//! The built-in scene as a cloud: made on the host ([`generate`]) or left for each backend to make
//! ([`lazy`]); its definition (cylinders, parameters, the point formula) is [`pcv_model::scene`].
pub use pcv_model::scene::*;

use super::{Bounds, PointCloud};
use crate::point::Point;
use glam::DVec3;
use indicatif::{ProgressBar, ProgressStyle};

/// Makes the scene on the CPU (all cores), with a progress bar when it takes a while.
pub fn generate(num_points: u64, seed: u64, show_progress: bool) -> PointCloud {
    let s = params(num_points, seed);
    let cyl = cylinders(seed);
    let mut points = vec![Point::default(); num_points as usize];
    let chunk = 8 << 20;
    let bar = if show_progress && num_points >= 50_000_000 {
        let b = ProgressBar::new(num_points);
        b.set_style(
            ProgressStyle::with_template("generating {bar:40} {human_pos}/{human_len} points ({per_sec}, {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    for (c, out) in points.chunks_mut(chunk).enumerate() {
        points::scene(&s, &cyl, (c * chunk) as u64, out);
        if let Some(b) = &bar {
            b.inc(out.len() as u64);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut cloud = PointCloud::from_points(points, DVec3::ZERO, label(num_points, seed));
    cloud.source = crate::CloudSource::Scene(SceneSpec { num_points, seed });
    cloud
}

fn label(num_points: u64, seed: u64) -> String {
    format!("built-in scene ({num_points} points, seed {seed})")
}

/// The scene with no points made yet: each backend makes them itself. Its bounds are the cylinders'
/// boxes (a little larger than the points' own bounds).
pub fn lazy(num_points: u64, seed: u64) -> PointCloud {
    let bounds = if num_points == 0 { Bounds::EMPTY } else { analytic_bounds(&cylinders(seed)) };
    PointCloud {
        points: Default::default(),
        bounds,
        origin: DVec3::ZERO,
        frame: None,
        label: label(num_points, seed),
        source: crate::CloudSource::Scene(SceneSpec { num_points, seed }),
        attributes: None,
    }
}
