//! How a cost becomes trustworthy.
//!
//! - Every measurement an evaluator returns passes [`admit`] before the tuner ranks,
//!   records or tells it: a cost that is NaN or infinite (a `0.0 / 0.0` in a cost
//!   function, an overflowed timer), or a sample time that is not a finite, non-negative
//!   number, becomes [`Failure::InvalidCost`] instead of a best that sorts before
//!   everything and a log line that cannot be read back.
//! - [`Spread`] says how repeated measurements scatter (median, range, quartiles).
//! - The best cost of a search is the minimum of many noisy measurements, so it is
//!   optimistic (a winner's curse). At the end of a run the tuner measures the few best
//!   configurations again ([`Remeasure`]), interleaved round by round with each other, with
//!   the configuration recorded in the tuning database and with any baseline, through the
//!   same evaluator (prepare, then measure). The best re-measured median wins; each
//!   [`Finalist`] keeps both its search value and its re-measurement.
//!
//! ```
//! # fn main() -> tune_runtime::Result<()> {
//! use tune_runtime::abort::Evaluations;
//! use tune_runtime::evaluate::closure::Closure;
//! use tune_runtime::measure::Remeasure;
//! use tune_runtime::tuner::Tuner;
//! use tune_runtime::{Config, Failure, Param, SpaceBuilder};
//!
//! let space = SpaceBuilder::new().param(Param::<u32>::range("X", 0..50)).build()?;
//! let eval = Closure::new(|c: &Config| -> Result<f64, Failure> {
//!     Ok((c.get::<u32>(0) as f64 - 20.0).abs() + 1.0)
//! });
//! let result = Tuner::new(space, eval)
//!     .abort(Evaluations(30))
//!     .remeasure(Remeasure { finalists: 4, rounds: 3 })
//!     .baseline("constant", || Ok(10.0))
//!     .progress(false)
//!     .run()?;
//! let winner = result.best.remeasured.as_ref().expect("re-measured");
//! assert_eq!(winner.spread.n, 3);
//! assert_eq!(result.finalists.len(), 5); // four configurations and the baseline
//! # Ok(()) }
//! ```

mod finalists;
mod spread;

pub(crate) use finalists::{winner, Rounds};
pub use finalists::{Contender, Finalist, Remeasure, Remeasured};
pub use spread::Spread;

use crate::cost::Cost;
use crate::evaluate::{Failure, Measured};

/// Checks a measurement before it is ranked or recorded: its cost must pass
/// [`Cost::check`] (finite), and every sample must be a finite, non-negative time.
///
/// # Errors
/// [`Failure::InvalidCost`] saying which value is wrong.
pub fn admit<C: Cost>(m: Measured<C>) -> Result<Measured<C>, Failure> {
    m.cost.check().map_err(|why| {
        Failure::InvalidCost(format!(
            "{why}; the evaluator returned {:?} (look for a division by zero or a failed timer)",
            m.cost
        ))
    })?;
    if let Some(s) = m.samples.iter().find(|s| !(s.is_finite() && **s >= 0.0)) {
        return Err(Failure::InvalidCost(format!(
            "a sample time is {s} s; sample times must be finite and not negative"
        )));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use std::time::Duration;

    use super::*;

    #[test]
    fn finite_measurements_are_admitted() {
        let m = admit(Measured::new(1.5)).unwrap();
        assert_eq!(m.cost, 1.5);
        let m = Measured {
            samples: vec![0.0, 1e-6],
            ..Measured::new(Duration::from_micros(1))
        };
        assert!(admit(m).is_ok());
    }

    #[test]
    fn non_finite_costs_and_bad_samples_are_invalid_costs() {
        let negative_nan = f64::from_bits(0xfff8_0000_0000_0000);
        for bad in [negative_nan, f64::INFINITY, f64::NEG_INFINITY] {
            let f = admit(Measured::new(bad)).unwrap_err();
            assert_eq!(f.kind(), "invalid_cost", "{bad}");
            let f = admit(Measured::new((1.0, bad))).unwrap_err();
            assert_eq!(f.kind(), "invalid_cost", "{bad}");
        }
        for bad in [f64::NAN, -1e-3, f64::INFINITY] {
            let m = Measured {
                samples: vec![1.0, bad],
                ..Measured::new(1.0)
            };
            match admit(m) {
                Err(Failure::InvalidCost(msg)) => assert!(msg.contains("sample"), "{msg}"),
                other => panic!("{other:?}"),
            }
        }
    }
}
