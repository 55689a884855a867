//! One library, every input size (Lawson's SYCL-DNN study): tune a kernel over many
//! inputs, choose a few configurations that together cover them, and ship a decision tree
//! that picks one per call (feature `select`).
//!
//! - [`cross`]: tuning over many inputs: a search per input, then a cross-evaluation of
//!   strong candidates on other inputs, a fraction of the full grid, into a [`Matrix`]
//!   (kept in the tuning database: `Database::record_matrix`).
//! - [`set`]: choosing k configurations from the matrix: Top-N, k-means and PCA + k-means
//!   on normalised performance (linfa), greedy max-coverage.
//! - [`classify`]: picking one of them per input: decision trees (linfa), 1-nearest
//!   neighbour, the nearest recorded input.
//! - [`cost`]: cost-sensitive trees (splits that win performance, not labels) and the
//!   set's most robust configuration.
//! - [`model`]: a model per configuration of its share of the best, fitted on every
//!   measured cell of the set, not only the winners (select8).
//! - [`fit_guard`]: at dispatch, no configuration whose tile wastes half the best-fitting
//!   one's useful work or more (select9).
//! - [`fit_shift`]: at dispatch, a tree's pick re-weighed where its output tile fits the
//!   shape worse than every training shape of its leaf (select10).
//! - [`deploy`]: the [`Selector`] that ships, and its Rust source for
//!   `#[tunable(select = "..")]`.
//! - [`report`]: splits of the inputs and the tables (every method x classifier x k).
//! - [`nested`]: which set method and tree ship, chosen by cross-validation inside the
//!   training inputs ([`Nested`]), so that a test score of the choice is not peeked at.
//!
//! ```
//! # fn main() -> tune_runtime::Result<()> {
//! use tune_runtime::param::Value;
//! use tune_runtime::results::Named;
//! use tune_runtime::select::{Input, Matrix, Selector, SetMethod, TreeLimits};
//!
//! // Two configurations: `TILE=8` is best for small `n`, `TILE=64` for large.
//! let mut m = Matrix::new("gemm", "gpu", vec!["n".into()]);
//! let small = m.add_config(Named(vec![("TILE".into(), Value::Int(8))]));
//! let large = m.add_config(Named(vec![("TILE".into(), Value::Int(64))]));
//! for n in [16, 32, 64, 4096, 8192, 16384] {
//!     let i = m.add_input(Input { key: format!("n={n}"), features: vec![n as f64], groups: vec![] });
//!     m.set(i, small, if n < 1000 { 1.0 } else { 3.0 })?;
//!     m.set(i, large, if n < 1000 { 2.0 } else { 1.0 })?;
//! }
//! let train: Vec<usize> = (0..6).collect();
//! let s = Selector::fit(&m, &train, 2, SetMethod::Greedy, TreeLimits::A)?;
//! assert_eq!(s.choose(&[100.0]).unwrap().get("TILE"), Some(&Value::Int(8)));
//! assert_eq!(s.choose(&[1e9]).unwrap().get("TILE"), Some(&Value::Int(64)));
//! assert!(s.rust("fingerprint")?.contains("if n <= "));
//! # Ok(()) }
//! ```

pub mod classify;
pub mod cost;
pub mod cross;
pub mod deploy;
pub mod features;
pub mod fit_guard;
pub mod fit_shift;
pub mod matrix;
pub mod model;
pub mod nested;
pub mod report;
pub mod scheme_choice;
pub mod set;

pub use classify::{Classifier, Node, TreeLimits};
pub use cost::Objective;
pub use cross::{measured, tune_inputs, Plan, Stats};
pub use deploy::Selector;
pub use fit_guard::FitGuard;
pub use fit_shift::FitShift;
pub use matrix::{Input, Matrix, Normalisation, Score};
pub use model::{Basis, Models};
pub use nested::{Choice, Nested, Recipe};
pub use report::{evaluate, group_splits, needed, random_split, Report, Split};
pub use scheme_choice::{SchemeChoice, SchemeScores};
pub use set::SetMethod;
