//! Costs: what a measurement yields. Lower is better.
//!
//! A cost is anything with a total order: a time, a float, a tuple compared
//! lexicographically (time, then energy), or a user type. Search techniques steer by its
//! [`Cost::scalar`]; the tuner ranks configurations by [`Cost::compare`].

use std::cmp::Ordering;
use std::fmt;
use std::time::Duration;

/// A measured cost. Lower is better.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as a tuning cost",
    note = "implement `tune::cost::Cost` for it: a total order (`compare`), a scalar for the search techniques and named objectives for the records"
)]
pub trait Cost: Clone + fmt::Debug + Send + Sync + 'static {
    /// Total order; `Less` means better.
    fn compare(&self, other: &Self) -> Ordering;
    /// The number the search techniques minimise (the primary objective).
    fn scalar(&self) -> f64;
    /// Named objectives, as recorded in the results.
    fn objectives(&self) -> Vec<(String, f64)> {
        vec![("cost".into(), self.scalar())]
    }
}

impl Cost for f64 {
    fn compare(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
    fn scalar(&self) -> f64 {
        *self
    }
}

impl Cost for f32 {
    fn compare(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
    fn scalar(&self) -> f64 {
        *self as f64
    }
}

impl Cost for Duration {
    fn compare(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
    fn scalar(&self) -> f64 {
        self.as_secs_f64()
    }
    fn objectives(&self) -> Vec<(String, f64)> {
        vec![("time_s".into(), self.as_secs_f64())]
    }
}

impl<A: Cost, B: Cost> Cost for (A, B) {
    fn compare(&self, other: &Self) -> Ordering {
        self.0
            .compare(&other.0)
            .then_with(|| self.1.compare(&other.1))
    }
    fn scalar(&self) -> f64 {
        self.0.scalar()
    }
    fn objectives(&self) -> Vec<(String, f64)> {
        let mut v = self.0.objectives();
        v.extend(self.1.objectives());
        v
    }
}
