//! ATF's saxpy case study: WPT and LS over the full [1, n] ranges (divisors only).
//!
//! `cargo run --release --features opencl --example opencl_saxpy [n [exact]]`
mod common;

use std::sync::Arc;

use tune::backend::Backend;

fn main() -> tune::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1 << 24);
    let cl = Arc::new(common::opencl_device()?);
    // At least 256 work-items per compute unit (pass `exact` as the second argument for ATF's
    // space, where a configuration may give all the work to one work-item).
    let exact = std::env::args().nth(2).is_some_and(|a| a == "exact");
    let min_global = if exact {
        1
    } else {
        256 * cl.device().compute_units.max(1) as usize
    };
    let budget = common::Budget::from_env(200, 60.0);
    common::tune_case(
        cl,
        common::cases::saxpy(n, min_global)?,
        budget,
        common::Options::new(1),
    )?;
    Ok(())
}
