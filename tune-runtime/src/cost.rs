//! Costs: what a measurement yields. Lower is better.
//!
//! A cost is anything with a total order: a time, a float, a tuple compared
//! lexicographically (time, then energy), or a user type. Search techniques steer by its
//! [`Cost::scalar`]; the tuner ranks configurations by [`Cost::compare`], and only costs
//! that pass [`Cost::check`] (no NaN, no infinity) rank at all.

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
    /// Whether this value can rank configurations and be recorded: `Err` says why not.
    /// The default accepts a value whose scalar and objectives are all finite numbers
    /// (a NaN would sort before or after everything, and JSON cannot hold it). Tuples check
    /// every component.
    ///
    /// # Errors
    /// A message naming the offending objective, e.g. ``"`cost` is NaN"``.
    fn check(&self) -> Result<(), String> {
        finite("cost", self.scalar())?;
        for (name, v) in self.objectives() {
            finite(&name, v)?;
        }
        Ok(())
    }
}

/// `Ok` if `v` is a finite number, else a message that names it.
fn finite(name: &str, v: f64) -> Result<(), String> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(format!("`{name}` is {v}; a cost must be a finite number"))
    }
}

impl Cost for f64 {
    fn compare(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
    fn scalar(&self) -> f64 {
        *self
    }
    fn check(&self) -> Result<(), String> {
        finite("cost", *self) // without building the objectives: this runs per evaluation
    }
}

impl Cost for f32 {
    fn compare(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
    fn scalar(&self) -> f64 {
        *self as f64
    }
    fn check(&self) -> Result<(), String> {
        finite("cost", *self as f64)
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
    fn check(&self) -> Result<(), String> {
        Ok(()) // never negative, never NaN
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
    fn check(&self) -> Result<(), String> {
        self.0.check()?;
        self.1.check()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn non_finite_costs_do_not_pass_the_check() {
        let negative_nan = f64::from_bits(0xfff8_0000_0000_0000); // x86's 0.0 / 0.0
        for bad in [negative_nan, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(bad.check().is_err(), "{bad}");
            assert!((1.0, bad).check().is_err(), "{bad}");
            assert!((bad, 1.0).check().is_err(), "{bad}");
            assert!((Duration::from_secs(1), bad).check().is_err(), "{bad}");
        }
        assert!((f32::NAN).check().is_err());
        assert!(
            (-1.5f64).check().is_ok(),
            "negative scores are fine as f64 costs"
        );
        assert!((Duration::ZERO, 0.0).check().is_ok());
        let msg = (1.0, f64::NAN).check().unwrap_err();
        assert!(msg.contains("NaN") && msg.contains("finite"), "{msg}");
    }
}
