//! CLTune's copy case study: WPT in {1, 2, 4} and the work-group size, exhaustively.
//!
//! `cargo run --release --features opencl --example opencl_copy [n]`
mod common;

use std::sync::Arc;

fn main() -> tune::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1 << 24);
    let cl = Arc::new(common::device()?);
    let budget = common::Budget::from_env(1000, 60.0);
    common::run(common::cases::copy(n)?, cl, budget, 1)?;
    Ok(())
}
