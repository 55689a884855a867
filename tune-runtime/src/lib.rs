//! The engine of tune: tuning parameters, constrained search spaces, the tuning loop,
//! evaluators, abort conditions and results.
//!
//! Users normally depend on the facade crate `tune`, whose macros expand to this crate's
//! builder API ([`space::SpaceBuilder`], [`param::Param`]); the same API declares spaces at
//! run time. The facade re-exports this crate's public modules and root items by name, so
//! what is public here is tune's public API.
//!
//! # Modules
//!
//! Each module is one piece of the design, in the order data flows through them; a module
//! is public when a user of the library (or the `tune` command line, which holds no logic
//! of its own) names what is in it.
//!
//! - Declaring: [`param`] (typed ranges and constraints), [`space`] (the constrained
//!   space, built parameter by parameter, and configurations).
//! - Searching: [`search`] (techniques behind one ask/tell trait), [`abort`] (when a run
//!   stops).
//! - Evaluating: [`cost`] (what a measurement yields), [`evaluate`] (the evaluator trait,
//!   closures, external programs), [`backend`] (OpenCL, CUDA, a worker process; kernel
//!   specs and validation), [`measure`] (repetitions, spread, finalists measured again),
//!   [`simulate`] (recorded brute-force data replayed as an evaluator).
//! - Tuning: [`tuner`] (the loop and its result; [`testing`] for `cargo test`).
//! - Results: [`results`] (the evaluation log, the tuning database, exports).
//! - Tools over results: [`import`] (other tuners' files), [`t1`] (Kernel Tuner's T1
//!   input), [`summary`], [`score`] (the methodology score), `plot` (feature `plot`) and
//!   [`watch`] (a live view of a log).
//!
//! Private: `error` (its [`Error`] and [`Result`] are at the root) and `macro_support`
//! (what the macros expand to, reachable only through the hidden `__private` module, which
//! is no public API and may change in any release). Hooks that only tests and benches use
//! are `#[doc(hidden)]` and named `__*` (e.g. `SpaceBuilder::__parallel_work`).
//!
//! # At the root
//!
//! The names most programs write, re-exported from their modules: [`Error`] and
//! [`Result`]; the declaration types ([`Space`], [`SpaceBuilder`], [`Param`], [`Bound`],
//! [`Config`], [`Value`], [`Neighbourhood`], and [`ParamType`], [`EnumParam`] and [`Kind`]
//! for parameters of user types); evaluation ([`Evaluator`], [`Measured`], [`Failure`],
//! [`Cost`]); techniques ([`Technique`], [`TechniqueKind`], [`technique_by_name`]); and the
//! tuner ([`Tuner`], [`TuningResult`], [`testing`]). `cuda` (feature `cuda`) is
//! `backend::cuda`, and [`testgen_backend!`] generates the backend conformance tests.
#![warn(missing_docs)]

pub mod abort;
pub mod backend;
pub mod cost;
mod error;
pub mod evaluate;
pub mod import;
mod macro_support;
pub mod measure;
pub mod param;
#[cfg(feature = "plot")]
#[cfg_attr(docsrs, doc(cfg(feature = "plot")))]
pub mod plot;
pub mod results;
pub mod score;
pub mod search;
pub mod simulate;
pub mod space;
pub mod summary;
pub mod t1;
pub mod tuner;
pub mod watch;

/// The CUDA backend (feature `cuda`), also at `backend::cuda`.
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use backend::cuda;

pub use cost::Cost;
pub use error::{Error, Result};
pub use evaluate::{Evaluator, Failure, Measured};
pub use param::{Bound, EnumParam, Kind, Param, ParamType, Value};
pub use search::{technique_by_name, Technique, TechniqueKind};
pub use space::{Config, Neighbourhood, Space, SpaceBuilder};
pub use tuner::testing;
pub use tuner::{Tuner, TuningResult};

/// Items the macros expand to. Not public API: may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::evaluate::closure::Closure;
    pub use crate::evaluate::{Evaluator, Failure, Measured};
    pub use crate::macro_support::{
        check_len, choose, default_database, field, input_key, invalid_declaration, lock, position,
        result_failure, technique, timed, to_string, AsFailure, IntoCost, Tunable, Unranged,
    };
    pub use crate::param::Kind;
    pub use crate::param::{Bound, EnumParam, Integer, Param, ParamType, Value};
    pub use crate::results::database::dispatch as best_config;
    pub use crate::results::Database;
    pub use crate::results::{Choice, Source};
    pub use crate::space::{Config, Space, SpaceBuilder};
    pub use crate::tuner::online::{Input as OnlineInput, Online, OnlineCost};
    pub use crate::tuner::Tuner;
    pub use crate::{Error, Result};
}
