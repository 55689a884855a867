//! CLBlast's XgemmDirect with ATF's ranges, for ATF's deep-learning sizes IS1-IS4 and
//! 1024 x 1024 x 1024 (or the sizes given as `MxK*KxN` arguments, e.g. `20x1*1x576`).
//!
//! `cargo run --release --features opencl --example opencl_xgemm_direct [MxK*KxN ...]`
mod common;

use std::sync::Arc;

use common::cases::Check;
use tune::backend::Backend;

fn parse(s: &str) -> Option<(usize, usize, usize)> {
    let (a, b) = s.split_once('*')?;
    let (m, k) = a.split_once('x')?;
    let (k2, n) = b.split_once('x')?;
    let (m, k, k2, n): (usize, usize, usize, usize) = (
        m.parse().ok()?,
        k.parse().ok()?,
        k2.parse().ok()?,
        n.parse().ok()?,
    );
    (k == k2).then_some((m, n, k))
}

fn main() -> tune::Result<()> {
    let mut sizes: Vec<(usize, usize, usize)> =
        std::env::args().skip(1).filter_map(|a| parse(&a)).collect();
    if sizes.is_empty() {
        // (M, N, K): IS1 20x1*1x576, IS2 20x25*25x576, IS3 50x1*1x64, IS4 10x64*64x500, 1024^3.
        sizes = vec![
            (20, 576, 1),
            (20, 576, 25),
            (50, 64, 1),
            (10, 500, 64),
            (1024, 1024, 1024),
        ];
    }
    let cl = Arc::new(common::opencl_device()?);
    let (single, back_to_back) = common::launch_floor(
        cl.clone(),
        "__kernel void nop(__global float* x) { if (x[0] == 1.0f) x[0] = 0.0f; }",
    )?;
    println!(
        "launch floor (an empty kernel): {:.2} us launched alone, {:.2} us per launch back to back",
        single * 1e6,
        back_to_back * 1e6
    );
    let budget = common::Budget::from_env(300, 60.0);
    for (m, n, k) in sizes {
        let check = if m * n * k > 1 << 27 {
            Check::Kernel
        } else {
            Check::Host
        };
        let case = common::cases::xgemm_direct(m, n, k, cl.device(), check)?;
        common::tune_case(cl.clone(), case, budget, common::Options::new(1))?;
        println!();
    }
    Ok(())
}
