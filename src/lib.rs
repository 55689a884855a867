//! tune: auto-tuning of GPU and CPU kernels, declared inline in Rust host code.
#![warn(missing_docs)]

pub use tune_runtime::*;

/// The names most programs need.
pub mod prelude {
    pub use tune_runtime::{Config, Neighbourhood, Param, Space, SpaceBuilder, Value};
}
