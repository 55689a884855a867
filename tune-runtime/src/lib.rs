//! The engine of tune: tuning parameters, constrained search spaces, the tuning loop,
//! evaluators, abort conditions and results.
//!
//! Users normally depend on the facade crate `tune`, whose macros expand to this crate's
//! builder API ([`space::SpaceBuilder`], [`param::Param`]); the same API declares spaces at
//! run time.
#![warn(missing_docs)]

pub mod abort;
pub mod backend;
pub mod cost;
/// The CUDA backend (feature `cuda`), also at `backend::cuda`.
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub use backend::cuda;
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
pub mod scale;
pub mod score;
pub mod search;
pub mod simulate;
pub mod space;
pub mod summary;
pub mod t1;
pub mod tuner;
pub mod watch;

pub use cost::Cost;
pub use error::{Error, Result};
pub use evaluate::{Evaluator, Failure, Measured};
pub use param::{Bound, EnumParam, Integer, Kind, Param, ParamType, Value};
pub use search::{technique_by_name, Technique, TechniqueKind};
pub use space::{Config, Neighbourhood, ParamInfo, Space, SpaceBuilder};
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
    pub use crate::tuner::Tuner;
    pub use crate::{Error, Result};
}
