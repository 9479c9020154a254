//! Boxes: [`Bounds`] of local f32 positions, and [`DBounds`] of a file's own f64 coordinates.
use crate::Point;
use glam::{DVec3, Vec3};
use rayon::prelude::*;

/// An axis-aligned box.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Bounds {
    pub min: Vec3,
    pub max: Vec3,
}

impl Bounds {
    pub const EMPTY: Bounds = Bounds { min: Vec3::splat(f32::INFINITY), max: Vec3::splat(f32::NEG_INFINITY) };

    pub fn is_empty(&self) -> bool {
        !(self.min.x <= self.max.x && self.min.y <= self.max.y && self.min.z <= self.max.z)
    }

    pub fn include(&mut self, p: Vec3) {
        self.min = self.min.min(p);
        self.max = self.max.max(p);
    }

    pub fn union(a: Bounds, b: Bounds) -> Bounds {
        Bounds { min: a.min.min(b.min), max: a.max.max(b.max) }
    }

    pub fn center(&self) -> Vec3 {
        if self.is_empty() {
            Vec3::ZERO
        } else {
            (self.min + self.max) * 0.5
        }
    }

    /// Half the diagonal: the radius of a sphere around the box (0 when empty).
    pub fn radius(&self) -> f32 {
        if self.is_empty() {
            0.0
        } else {
            (self.max - self.min).length() * 0.5
        }
    }

    /// Bounds of the finite points of `points`, in parallel.
    pub fn of_points(points: &[Point]) -> Bounds {
        points
            .par_chunks(1 << 16)
            .map(|chunk| {
                let mut b = Bounds::EMPTY;
                for p in chunk {
                    let v = Vec3::from_array(p.pos);
                    if v.is_finite() {
                        b.include(v);
                    }
                }
                b
            })
            .reduce(|| Bounds::EMPTY, Bounds::union)
    }
}

/// An axis-aligned box in f64, in a file's own coordinates.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct DBounds {
    pub min: [f64; 3],
    pub max: [f64; 3],
}

impl Default for DBounds {
    fn default() -> Self {
        DBounds::EMPTY
    }
}

impl DBounds {
    pub const EMPTY: DBounds = DBounds { min: [f64::INFINITY; 3], max: [f64::NEG_INFINITY; 3] };

    pub fn is_empty(&self) -> bool {
        !(0..3).all(|i| self.min[i] <= self.max[i])
    }

    /// Grows the box to hold `p` (which must be finite: plain compares, no NaN handling).
    #[inline(always)]
    pub fn include(&mut self, p: [f64; 3]) {
        for (i, &v) in p.iter().enumerate() {
            self.min[i] = if v < self.min[i] { v } else { self.min[i] };
            self.max[i] = if v > self.max[i] { v } else { self.max[i] };
        }
    }

    pub fn union(a: DBounds, b: DBounds) -> DBounds {
        let mut r = a;
        for i in 0..3 {
            r.min[i] = a.min[i].min(b.min[i]);
            r.max[i] = a.max[i].max(b.max[i]);
        }
        r
    }

    pub fn center(&self) -> DVec3 {
        if self.is_empty() {
            DVec3::ZERO
        } else {
            (DVec3::from_array(self.min) + DVec3::from_array(self.max)) * 0.5
        }
    }

    /// Half the diagonal (0 when empty).
    pub fn radius(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            (DVec3::from_array(self.max) - DVec3::from_array(self.min)).length() * 0.5
        }
    }

    /// These bounds moved by `-origin` and rounded to f32: exactly the bounds of the points' f32
    /// positions, since subtracting and rounding are monotonic.
    pub fn to_local(&self, origin: DVec3) -> crate::Bounds {
        if self.is_empty() {
            return crate::Bounds::EMPTY;
        }
        let o = origin.to_array();
        let f = |v: [f64; 3]| glam::Vec3::new((v[0] - o[0]) as f32, (v[1] - o[1]) as f32, (v[2] - o[2]) as f32);
        crate::Bounds { min: f(self.min), max: f(self.max) }
    }
}
