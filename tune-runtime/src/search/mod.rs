//! Search techniques behind one ask/tell trait.
//!
//! A technique proposes configurations by their index in the [`Space`] (so it only ever
//! proposes valid ones) and is told the outcome of each. The tuner memoises: a technique may
//! propose an index again and is then told the recorded outcome without a new measurement.

use crate::space::Space;

/// A search technique.
pub trait Technique: Send {
    /// A short name for logs and records, e.g. `"annealing"`.
    fn name(&self) -> &str;
    /// Called once, before the first [`Technique::ask`], with the run's seed.
    fn init(&mut self, space: &Space, seed: u64);
    /// Up to `n` indices to evaluate next. An empty answer means the technique has nothing
    /// left to propose (for example, exhaustive search is done) and ends the run.
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128>;
    /// The outcome of an index this technique proposed: its scalar cost (lower is better),
    /// or `None` if the configuration failed (compile error, wrong result, ...).
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>);
}
