//! CLTune's GEMM case study, C = alpha * A^T * B + beta * C, with the parameters of CLTune's
//! Table IV (241,600 valid configurations); validated against a reference kernel (large
//! sizes) or the host.
//!
//! `cargo run --release --features opencl --example opencl_gemm [m [n [k]]]`
mod common;

use std::sync::Arc;

use common::cases::Check;

fn main() -> tune::Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let m = args.first().copied().unwrap_or(4096);
    let n = args.get(1).copied().unwrap_or(m);
    let k = args.get(2).copied().unwrap_or(m);
    let check = if m * n * k > 1 << 27 {
        Check::Kernel
    } else {
        Check::Host
    };
    let cl = Arc::new(common::opencl_device()?);
    let budget = common::Budget::from_env(300, 180.0);
    common::tune_case(
        cl,
        common::cases::gemm(m, n, k, check)?,
        budget,
        common::Options::new(1),
    )?;
    Ok(())
}
