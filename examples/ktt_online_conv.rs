//! Online tuning in an application loop (KTT's online tuning): a 2D convolution applied to a
//! stream of frames. Every frame is uploaded, convolved and read back by the application;
//! the online tuner picks the configuration of each call, compiling the next ones on
//! background threads, checks the first output of each configuration against the host's
//! convolution, and settles on the best. Progress goes to `target/tune/ktt_conv_online.jsonl`:
//! run it again and it continues where it stopped (or settles at once).
//!
//! At the end it reports its own overhead: the time per call spent in the online tuner
//! itself (the call's wall time minus the application's closure's), while exploring and once
//! settled, against the kernel's time.
//!
//! `cargo run --release --features opencl --example ktt_online_conv [w h fs frames]`
//! (default 2048 2048 7 2000; `TUNE_BACKEND=cuda` with `--features cuda` for the CUDA
//! kernel). `TUNE_FRESH=1` ignores the log of an earlier run.
mod ktt;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tune::backend::composition::{CompositionEvaluator, PreparedComposition};
use tune::backend::Backend;
use tune::tuner::online::{Input, Online};
use tune::{Evaluator, Failure};

struct App {
    w: usize,
    h: usize,
    fs: usize,
    frames: usize,
}

impl ktt::OnDevice for App {
    fn run<B: Backend>(self, device: Arc<B>) -> tune::Result<()> {
        let App { w, h, fs, frames } = self;
        let conv = ktt::conv::case::<B>(device.device(), w, h, fs)?;
        println!(
            "convolution of {frames} frames of {w}x{h}, {fs}x{fs} filter, on {}",
            device.device().describe()
        );
        // A few distinct frames, cycled (generating a frame is not the point here).
        let pool: Vec<Vec<f32>> = (1..=4).map(|k| conv.frame(k)).collect();
        let (space, src, dst) = (conv.space.clone(), conv.src, conv.dst);
        let ev = Arc::new(CompositionEvaluator::new(device, &space, conv.composition)?);
        let log = std::path::Path::new("target/tune/ktt_conv_online.jsonl");
        if std::env::var("TUNE_FRESH").is_ok_and(|v| v != "0") {
            let _ = std::fs::remove_file(log);
        }
        let mut online = Online::<PreparedComposition<B>>::new("ktt_conv_online")
            .device(ev.device())
            .log(log);
        let prepare = ev.clone();
        online.select(&format!("{w}x{h},fs={fs}"), || {
            Ok(Input::new(space.clone(), move |s, c| prepare.prepare(s, c)))
        })?;
        if online.stats().resumed > 0 {
            println!(
                "continuing from {}: {} configurations measured before",
                log.display(),
                online.stats().resumed
            );
        }
        let filter = conv.filter.clone();
        let (src_w, mut kernel) = (conv.src_w, Duration::ZERO);
        let (mut exploring, mut settled) = ((0u64, Duration::ZERO), (0u64, Duration::ZERO));
        let mut checksum = 0f64;
        let start = Instant::now();
        for k in 0..frames {
            let frame = &pool[k % pool.len()];
            let mut inside = Duration::ZERO;
            let call = Instant::now();
            let was_settled = online.is_settled();
            let out = online.call(|t| {
                let t0 = Instant::now();
                let (out, time) = ev.call(
                    t.space(),
                    t.config(),
                    t.prepared(),
                    |run| run.write(src, frame),
                    |run| run.read::<f32>(dst),
                )?;
                if t.validate() {
                    let want = ktt::conv::host(frame, src_w, &filter, w, h, fs);
                    ktt::conv::TOLERANCE
                        .check(&want.into(), &out.clone().into())
                        .map_err(Failure::WrongResult)?;
                }
                inside += t0.elapsed();
                kernel = time;
                Ok((out, time))
            })?;
            let own = call.elapsed().saturating_sub(inside);
            let slot = if was_settled {
                &mut settled
            } else {
                &mut exploring
            };
            slot.0 += 1;
            slot.1 += own;
            // The application uses its output.
            checksum += f64::from(out[k % out.len()]);
        }
        let st = online.stats();
        println!(
            "{frames} frames in {:.2?} (checksum {checksum:.3})",
            start.elapsed()
        );
        println!(
            "settled after {:?} calls on {} ({} configurations, {} failed, {} calls ran the best while the next compiled)",
            st.settled_after,
            online.settled().map_or("-".into(), |c| space.describe(c)),
            st.evaluations,
            st.failures,
            st.fallback_runs
        );
        let per = |(n, t): (u64, Duration)| {
            if n == 0 {
                0.0
            } else {
                t.as_secs_f64() * 1e6 / n as f64
            }
        };
        println!(
            "the online tuner's own time per call: {:.3} us while exploring ({} calls; validation on the host not included), {:.3} us once settled ({} calls) = {:.4}% of the kernel's {:.1} us",
            per(exploring),
            exploring.0,
            per(settled),
            settled.0,
            100.0 * per(settled) / (kernel.as_secs_f64() * 1e6).max(1e-9),
            kernel.as_secs_f64() * 1e6
        );
        Ok(())
    }
}

fn main() {
    let a: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let app = App {
        w: a.first().copied().unwrap_or(2048),
        h: a.get(1).copied().unwrap_or(2048),
        fs: a.get(2).copied().unwrap_or(7),
        frames: a.get(3).copied().unwrap_or(2000),
    };
    ktt::main_or_skip("ktt_online_conv", || ktt::on_device(app));
}
