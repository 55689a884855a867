//! ATF's saxpy on CUDA: WPT divides N, LS divides N / WPT, over the full [1, N] ranges.
//! `cargo run --release --features cuda --example cuda_saxpy [N]`

#[cfg(feature = "cuda")]
#[path = "common/cuda.rs"]
mod common;

#[cfg(feature = "cuda")]
fn main() -> tune::Result<()> {
    use std::sync::Arc;
    use tune::backend::{BufferArg, HostData, KernelEvaluator, KernelSpec, Tolerance};
    use tune::cuda::Cuda;
    use tune::{Param, SpaceBuilder};

    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 24);
    let cuda = match Cuda::open(0) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("{e}");
            return Ok(());
        }
    };
    let space = SpaceBuilder::new()
        .param(Param::<usize>::range("WPT", 1..=n).divides(&[], move |_| n))
        .param(Param::<usize>::range("LS", 1..=n).divides(&[0], move |b| n / b.get::<usize>(0)))
        .build()?;
    let x = common::random_f32(n, 1);
    let y = common::random_f32(n, 2);
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.5 * x + y).collect();
    let spec = KernelSpec::new(include_str!("../kernels/saxpy.cu"), "saxpy")
        .global(move |c| [n / c.get::<usize>(0)])
        .local(|c| [c.get::<usize>(1)])
        .scalar(n as i32)
        .scalar(2.5f32)
        .buffer(BufferArg::from_vec(x))
        .buffer(BufferArg::from_vec(y).output())
        .repetitions(10)
        .tolerance(Tolerance::PerElement {
            abs: 1e-6,
            rel: 1e-6,
        })
        .reference(move |_| Ok(vec![HostData::F32(want.clone())]));
    let eval = KernelEvaluator::new(cuda, &space, spec)?;
    println!("saxpy N = {n}: {} valid configurations", space.len());
    // The whole space is small (divisor pairs): measure all of it.
    let budget = space.len().min(400) as usize;
    let mut search = common::Search::new(1, usize::MAX, Vec::new());
    let st = common::tune_loop(&eval, &space, &mut search, budget, 32, true);
    if let Some((c, t)) = &st.best {
        let gbs = 12.0 * n as f64 / t / 1e9;
        println!(
            "best {} : {:.2} us, {gbs:.0} GB/s",
            space.describe(c),
            t * 1e6
        );
    }
    println!(
        "{} evaluated, {} valid, {:.1} s ({:.1}/s); failures {:?}",
        st.evaluated,
        st.valid,
        st.wall.as_secs_f64(),
        st.evaluated as f64 / st.wall.as_secs_f64(),
        st.failures
    );
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("this example needs `--features cuda`");
}
