//! The measuring tool: what clicks measure, the measurement being placed and the finished ones.
//!
//! How it works: while the tool is on, a click that finds a point adds it as the next vertex of the
//! measurement being placed ([`Measure::click`]); a kind with a fixed number of vertices (distance,
//! height, angle, point) is complete with its last one, and the next click starts a new one, the
//! complete one going to the list ([`Measure::done`]). Polylines and areas take vertices until Enter
//! ([`Measure::finish`]). A listed measurement's vertex is moved by choosing it in the panel
//! ([`Measure::moving`]) and clicking its new place. The values come from
//! [`pcv_io::measure`](pcv_model::measure) in the file's coordinates and units; the panel lists them,
//! the view draws them ([`crate::ui::marks`]), the trace records them and
//! [`pcv_io::export::MeasurementSet`] writes them as GeoJSON and CSV.
use super::pick::PickedPoint;
use pcv_model::measure::{MeasureKind, Measurement};

/// The file formats measurements are exported as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    GeoJson,
    Csv,
}

impl ExportFormat {
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::GeoJson => "geojson",
            ExportFormat::Csv => "csv",
        }
    }
}

/// The measuring tool's state.
#[derive(Clone, Debug, PartialEq)]
pub struct Measure {
    /// Clicks measure instead of picking.
    pub active: bool,
    /// What the next measurement measures.
    pub kind: MeasureKind,
    /// The measurement being placed (or the last one, until a click starts the next).
    pub points: Vec<PickedPoint>,
    /// Finished measurements, in file coordinates.
    pub done: Vec<Measurement>,
    /// The vertex the next click places again: (index in `done`, vertex).
    pub moving: Option<(usize, usize)>,
}

impl Default for Measure {
    fn default() -> Self {
        Measure { active: false, kind: MeasureKind::Distance, points: Vec::new(), done: Vec::new(), moving: None }
    }
}

impl Measure {
    /// The measurement being placed.
    pub fn current(&self) -> Measurement {
        Measurement { kind: self.kind, points: self.points.iter().map(|p| p.file).collect() }
    }

    /// Every measurement to list and export: the finished ones, then the current one if complete.
    pub fn all(&self) -> Vec<Measurement> {
        let mut all = self.done.clone();
        let c = self.current();
        if c.is_complete() {
            all.push(c);
        }
        all
    }

    /// Moves the current measurement to the list if it is complete (else drops it); whether it moved.
    pub fn finish(&mut self) -> bool {
        let c = self.current();
        self.points.clear();
        if c.is_complete() {
            self.done.push(c);
            true
        } else {
            false
        }
    }

    /// A click that found `p` while the tool is on; what to tell the person, if anything.
    pub fn click(&mut self, p: PickedPoint) -> Option<String> {
        if let Some((i, j)) = self.moving.take() {
            let m = self.done.get_mut(i).filter(|m| j < m.points.len())?;
            m.points[j] = p.file;
            return Some(format!("measurement {} ({}): vertex {} moved", i + 1, m.kind.name(), j + 1));
        }
        if !self.current().takes_more() {
            self.finish();
        }
        self.points.push(p);
        None
    }

    /// Another kind: the current measurement is finished (kept if complete) and the tool is on.
    pub fn set_kind(&mut self, kind: MeasureKind) {
        self.finish();
        self.kind = kind;
        self.active = true;
        self.moving = None;
    }

    /// Removes listed measurement `i`.
    pub fn delete(&mut self, i: usize) {
        if i < self.done.len() {
            self.done.remove(i);
            self.moving = None;
        }
    }

    /// What the panel says the tool wants next.
    pub fn prompt(&self) -> String {
        if let Some((i, j)) = self.moving {
            return format!("click the new place of vertex {} of measurement {}", j + 1, i + 1);
        }
        let c = self.current();
        let n = c.points.len();
        match (c.kind.max_points(), c.is_complete()) {
            (None, true) => format!("{}: {n} points; click more, Enter ends it", c.kind.name()),
            (_, false) => {
                format!("{}: {} (point {} of {})", c.kind.name(), c.kind.prompt(), n + 1, c.kind.min_points())
            }
            (Some(_), true) => format!("{}: done; the next click starts another", c.kind.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{DVec3, Vec3};

    fn p(x: f64, y: f64, z: f64) -> PickedPoint {
        PickedPoint::at(Vec3::ZERO, DVec3::new(x, y, z))
    }

    #[test]
    fn clicks_place_vertices_and_complete_measurements_go_to_the_list() {
        let mut m = Measure { kind: MeasureKind::Area, active: true, ..Default::default() };
        for (x, y) in [(0.0, 0.0), (10.0, 0.0), (10.0, 5.0)] {
            assert!(m.click(p(x, y, 1.0)).is_none());
        }
        assert!(m.current().is_complete() && m.current().takes_more());
        m.click(p(0.0, 5.0, 1.0));
        assert!(m.prompt().contains("4 points"));
        assert!(m.finish());
        assert_eq!(m.done.len(), 1);
        assert_eq!(m.done[0].points.len(), 4);
        // A fixed-size kind: the click after its last vertex starts the next one.
        m.set_kind(MeasureKind::Height);
        m.click(p(0.0, 0.0, 0.0));
        m.click(p(1.0, 0.0, 3.0));
        assert_eq!(m.all().len(), 2, "the complete current one is listed");
        m.click(p(2.0, 0.0, 0.0));
        assert_eq!((m.done.len(), m.points.len()), (2, 1));
        // An incomplete one is dropped by a change of kind.
        m.set_kind(MeasureKind::Angle);
        assert_eq!(m.done.len(), 2);
        // Moving a vertex: the next click places it.
        m.moving = Some((0, 2));
        assert!(m.prompt().contains("vertex 3 of measurement 1"));
        let said = m.click(p(12.0, 6.0, 1.0)).unwrap();
        assert!(said.contains("vertex 3 moved"), "{said}");
        assert_eq!(m.done[0].points[2], DVec3::new(12.0, 6.0, 1.0));
        assert!(m.points.is_empty(), "the move placed no new vertex");
        m.delete(0);
        assert_eq!(m.done.len(), 1);
        assert_eq!(m.done[0].kind, MeasureKind::Height);
    }
}
