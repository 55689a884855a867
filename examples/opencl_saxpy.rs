//! ATF's saxpy case study: WPT and LS over the full [1, n] ranges (divisors only).
//!
//! `cargo run --release --features opencl --example opencl_saxpy [n]`
mod common;

use std::sync::Arc;

fn main() -> tune::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1 << 24);
    let cl = Arc::new(common::device()?);
    let budget = common::Budget::from_env(200, 60.0);
    common::run(common::cases::saxpy(n)?, cl, budget, 1)?;
    Ok(())
}
