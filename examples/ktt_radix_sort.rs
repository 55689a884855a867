//! KTT's radix sort (thesis, section 6.2) tuned as a composition of three kernels sharing
//! their parameters (digit width, work-group size, keys per work-item, work-groups), with
//! the key buffers swapped between passes. Prints the best configuration, its keys per
//! second, and its speed-up over KTT's example's middle configuration.
//!
//! `cargo run --release --features opencl --example ktt_radix_sort [n]` (default 2^22);
//! `TUNE_BACKEND=cuda` with `--features cuda` for the CUDA kernels. `TUNE_EVALS` and
//! `TUNE_SECONDS` set the budget (default 200 evaluations or 120 s).
mod ktt;

use std::sync::Arc;

use tune::backend::Backend;

struct Job(usize);

impl ktt::OnDevice for Job {
    fn run<B: Backend>(self, device: Arc<B>) -> tune::Result<()> {
        let n = self.0;
        let (case, _) = ktt::sort::case::<B>(device.device(), n)?;
        println!("radix sort of {n} keys on {}", device.device().describe());
        let evals = ktt::env_usize("TUNE_EVALS", 200) as u64;
        let seconds = ktt::env_usize("TUNE_SECONDS", 120) as f64;
        let (ev, space, default, r) = ktt::bench::tune(device, case, evals, seconds)?;
        println!("{}", r.summary());
        let best = ktt::bench::cost_of(&ev, &space, &r.best.config)?;
        let dflt = ktt::bench::cost_of(&ev, &space, &default)?;
        let rate = |t: std::time::Duration| n as f64 / t.as_secs_f64() / 1e6;
        println!(
            "best    {}: {:.1} us, {:.1} Mkeys/s",
            space.describe(&r.best.config),
            best.as_secs_f64() * 1e6,
            rate(best)
        );
        println!(
            "default {}: {:.1} us, {:.1} Mkeys/s; the tuned composition is {:.2}x faster",
            space.describe(&default),
            dflt.as_secs_f64() * 1e6,
            rate(dflt),
            dflt.as_secs_f64() / best.as_secs_f64()
        );
        Ok(())
    }
}

fn main() {
    let n = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1 << 22);
    ktt::main_or_skip("ktt_radix_sort", || ktt::on_device(Job(n)));
}
