//! CLTune's copy case study: WPT in {1, 2, 4} and the work-group size (the whole space).
//!
//! `cargo run --release --features opencl --example opencl_copy [n]`
mod common;

use std::sync::Arc;

fn main() -> tune::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1 << 24);
    let cl = Arc::new(common::opencl_device()?);
    let budget = common::Budget::from_env(1000, 60.0);
    common::tune_case(cl, common::cases::copy(n)?, budget, common::Options::new(1))?;
    Ok(())
}
