//! KTT's reduction (thesis, section 6.1) tuned as a composition: the sum of `n` floats by
//! one kernel launched until one value remains, or once with atomics; work-group size,
//! vector loads, loads in flight, persistent groups and atomics are tuned together with
//! the host code's passes. Prints the best configuration, its bandwidth, and its speed-up
//! over KTT's starting configuration.
//!
//! `cargo run --release --features opencl --example ktt_reduction [n]` (default 2^24);
//! `TUNE_BACKEND=cuda` with `--features cuda` for the CUDA kernels. `TUNE_EVALS` and
//! `TUNE_SECONDS` set the budget (default 200 evaluations or 120 s).
mod ktt;

use std::sync::Arc;

use tune::backend::Backend;

struct Job(usize);

impl ktt::OnDevice for Job {
    fn run<B: Backend>(self, device: Arc<B>) -> tune::Result<()> {
        let n = self.0;
        let (case, _) = ktt::reduction::case::<B>(device.device(), n)?;
        println!("reduction of {n} floats on {}", device.device().describe());
        let evals = ktt::env_usize("TUNE_EVALS", 200) as u64;
        let seconds = ktt::env_usize("TUNE_SECONDS", 120) as f64;
        let (ev, space, default, r) = ktt::bench::tune(device, case, evals, seconds)?;
        println!("{}", r.summary());
        let best = ktt::bench::cost_of(&ev, &space, &r.best.config)?;
        let dflt = ktt::bench::cost_of(&ev, &space, &default)?;
        println!(
            "best    {}: {:.2} us, {:.1} GB/s",
            space.describe(&r.best.config),
            best.as_secs_f64() * 1e6,
            4.0 * n as f64 / best.as_secs_f64() / 1e9
        );
        println!(
            "default {}: {:.2} us; the tuned composition is {:.2}x faster",
            space.describe(&default),
            dflt.as_secs_f64() * 1e6,
            dflt.as_secs_f64() / best.as_secs_f64()
        );
        Ok(())
    }
}

fn main() {
    let n = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1 << 24);
    ktt::main_or_skip("ktt_reduction", || ktt::on_device(Job(n)));
}
