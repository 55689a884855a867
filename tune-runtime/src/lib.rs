//! The engine of tune: tuning parameters and constrained search spaces.
//!
//! Users normally depend on the facade crate `tune`, whose macros expand to this crate's
//! builder API ([`space::SpaceBuilder`], [`param::Param`]); the same API declares spaces at
//! run time.
#![warn(missing_docs)]

pub mod backend;
pub mod cost;
// The CUDA backend (feature `cuda`). Lives in `backend/cuda/`; declared here until
// `backend/mod.rs` declares it as `backend::cuda`.
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
#[path = "backend/cuda/mod.rs"]
pub mod cuda;
mod error;
pub mod evaluate;
pub mod param;
pub mod search;
pub mod space;

pub use cost::Cost;
pub use error::{Error, Result};
pub use evaluate::{Evaluator, Failure, Measured};
pub use param::{Bound, EnumParam, Integer, Kind, Param, ParamType, Value};
pub use search::Technique;
pub use space::{Config, Neighbourhood, ParamInfo, Space, SpaceBuilder};

/// Items the macros expand to. Not public API: may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::param::{Bound, EnumParam, Integer, Param, ParamType, Value};
    pub use crate::space::{Config, Space, SpaceBuilder};
    pub use crate::{Error, Result};
}
