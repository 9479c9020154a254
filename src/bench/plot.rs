//! `pcv bench --plot FILE.svg`: frame time against point count, one panel per pose, one line per mode,
//! the prototype's beside ours.
//!
//! How it works: the results of a run (or of saved `--json` reports, `--from`) are grouped by pose and
//! by line — a mode and look (`culled`, `vis 3px+edl`) at one frame size, and `prototype` for the numba
//! peer's times on the same points and cameras — and each line's median frame times are drawn against
//! the point count, both axes logarithmic, in a grid of panels (plotters' SVG backend: text stays text,
//! no font is rasterized). A point count appears once per line: where a report repeats one, the last
//! wins.
use super::ScenarioResult;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Errors from plotting.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("{path}: only SVG charts are written (give a .svg file name)")]
    NotSvg { path: String },
    #[error("nothing to plot: the results hold no frame times")]
    Empty,
    #[error("drawing {path}: {message}")]
    Draw { path: String, message: String },
}

/// One line of a panel: (point count, median frame ms) sorted by count.
type Line = Vec<(u64, f64)>;

/// The lines of each pose, in the poses' first-seen order.
fn lines(results: &[ScenarioResult]) -> Vec<(String, BTreeMap<String, Line>)> {
    type Points = BTreeMap<u64, f64>;
    let mut poses: Vec<(String, BTreeMap<String, Points>)> = Vec::new();
    let sizes: std::collections::BTreeSet<(u32, u32)> = results.iter().map(|r| (r.width, r.height)).collect();
    for r in results.iter().filter(|r| r.frame.median_ms > 0.0) {
        let i = match poses.iter().position(|(p, _)| *p == r.pose) {
            Some(i) => i,
            None => {
                poses.push((r.pose.clone(), BTreeMap::new()));
                poses.len() - 1
            }
        };
        let size = if sizes.len() > 1 { format!(" {}x{}", r.width, r.height) } else { String::new() };
        let look = if r.look == "1px" { String::new() } else { format!(" {}", r.look) };
        let name = format!("{}{look}{size}", r.mode.name());
        poses[i].1.entry(name).or_default().insert(r.points, r.frame.median_ms);
        if let Some(p) = &r.peer {
            poses[i].1.entry(format!("prototype{size}")).or_default().insert(r.points, p.frame_ms_median);
        }
    }
    poses.into_iter().map(|(p, m)| (p, m.into_iter().map(|(k, v)| (k, v.into_iter().collect())).collect())).collect()
}

/// Draws `results` into the SVG file `path`.
/// Charts the saved `pcv bench --json` reports `from` (merged; the title names the last one's device,
/// date and commit) into `path`, and says so.
pub fn plot_reports(from: &[std::path::PathBuf], path: &Path) -> Result<(), super::BenchError> {
    let (mut results, mut title) = (Vec::new(), String::from("pcv bench"));
    for f in from {
        let report_error = |message: String| super::BenchError::Report { path: f.display().to_string(), message };
        let text = std::fs::read_to_string(f).map_err(|e| report_error(e.to_string()))?;
        let report: super::BenchReport =
            serde_json::from_str(&text).map_err(|e| report_error(format!("not a pcv bench --json report ({e})")))?;
        title = format!("pcv bench, {} ({}), commit {}", report.device, report.date_utc, report.commit);
        results.extend(report.results);
    }
    plot(&results, &title, path)
        .map_err(|e| super::BenchError::Report { path: path.display().to_string(), message: e.to_string() })?;
    println!("wrote {}", path.display());
    Ok(())
}

pub fn plot(results: &[ScenarioResult], title: &str, path: &Path) -> Result<(), PlotError> {
    let shown = path.display().to_string();
    if path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase()) != Some("svg".into()) {
        return Err(PlotError::NotSvg { path: shown });
    }
    let poses = lines(results);
    if poses.is_empty() {
        return Err(PlotError::Empty);
    }
    let draw_err = |e: &dyn std::fmt::Display| PlotError::Draw { path: shown.clone(), message: e.to_string() };
    let cols = poses.len().min(3);
    let rows = poses.len().div_ceil(cols);
    let (pw, ph) = (520u32, 380u32);
    let root = SVGBackend::new(path, (pw * cols as u32, ph * rows as u32 + 40)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_err(&e))?;
    let (head, body) = root.split_vertically(40);
    head.titled(title, ("sans-serif", 20)).map_err(|e| draw_err(&e))?;
    let panels = body.split_evenly((rows, cols));
    // One colour per line name, the same in every panel.
    let mut names: Vec<&String> = poses.iter().flat_map(|(_, l)| l.keys()).collect();
    names.sort();
    names.dedup();
    let colour = |name: &str| -> RGBColor {
        if name.starts_with("prototype") {
            return RGBColor(120, 120, 120);
        }
        let i = names.iter().position(|n| n.as_str() == name).unwrap_or(0);
        let c = Palette99::pick(i).to_rgba();
        RGBColor(c.0, c.1, c.2)
    };
    for ((pose, ls), area) in poses.iter().zip(panels.iter()) {
        let pts = ls.values().flatten();
        let (xmin, xmax) = pts.clone().fold((u64::MAX, 0), |(a, b), &(x, _)| (a.min(x), b.max(x)));
        let (ymin, ymax) = pts.fold((f64::INFINITY, 0.0f64), |(a, b), &(_, y)| (a.min(y), b.max(y)));
        let x_range = (xmin as f64 / 1.5).max(1.0)..(xmax as f64 * 1.5).max(10.0);
        let y_range = (ymin / 1.5).max(1e-3)..(ymax * 1.5).max(1e-2);
        let mut chart = ChartBuilder::on(area)
            .caption(pose, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(52)
            .build_cartesian_2d(x_range.log_scale(), y_range.log_scale())
            .map_err(|e| draw_err(&e))?;
        chart
            .configure_mesh()
            .x_desc("points")
            .y_desc("frame ms (median)")
            .x_label_formatter(&|v| count_label(*v))
            .y_label_formatter(&|v| format!("{v:.2}"))
            .draw()
            .map_err(|e| draw_err(&e))?;
        for (name, line) in ls {
            let c = colour(name);
            let data: Vec<(f64, f64)> = line.iter().map(|&(x, y)| (x as f64, y)).collect();
            chart
                .draw_series(LineSeries::new(data.clone(), c.stroke_width(2)))
                .map_err(|e| draw_err(&e))?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
            chart.draw_series(data.iter().map(|&p| Circle::new(p, 3, c.filled()))).map_err(|e| draw_err(&e))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(("sans-serif", 11))
            .draw()
            .map_err(|e| draw_err(&e))?;
    }
    root.present().map_err(|e| draw_err(&e))
}

/// 10M, 1B, 6B, 250k: point counts as people write them.
pub fn count_label(v: f64) -> String {
    let (d, s) = match v {
        v if v >= 1e9 => (1e9, "B"),
        v if v >= 1e6 => (1e6, "M"),
        v if v >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let x = v / d;
    if (x - x.round()).abs() < 1e-6 {
        format!("{}{s}", x.round())
    } else {
        format!("{x:.1}{s}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_people_write_them() {
        assert_eq!(count_label(10e6), "10M");
        assert_eq!(count_label(1e9), "1B");
        assert_eq!(count_label(6e9), "6B");
        assert_eq!(count_label(2.5e5), "250k");
        assert_eq!(count_label(1.5e9), "1.5B");
    }
}
