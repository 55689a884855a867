//! The KTT bench (issue 13): each target's measurement and its ratio, side by side.
//! 1. Reduction of 2^26 floats, tuned: its bandwidth against the device's copy bandwidth
//!    (target >= 0.90) and its time against cuBLAS `sasum` on the same non-negative data,
//!    both timed with device events (target: ratio >= 1, as fast or faster); the default
//!    configuration's time for the speed-up.
//! 2. Radix sort of 2^24 keys, tuned: keys per second, and the speed-up over the default
//!    configuration (torch.sort's rate comes from `benches/gpu/torch_ktt.py`).
//! 3. Composition machinery overhead: the tuned reduction as a composition against the
//!    same kernel and launches written by hand on the backend, wall time per run in
//!    alternating blocks (target < 1%).
//! 4. Online tuning of a 2D filter of frames (kernels/frame_filter.*; 8192 x 8192 frames, 11 x 11 filter: a call of
//!    milliseconds, as in KTT's published case) over 10,000 calls: the steady-state overhead
//!    per call against the kernel time (target <= 0.5%),
//!    the calls until every call runs at >= 98% of the offline-tuned best's speed (target
//!    <= 200), and the total time against 10,000 calls of the offline best (target <=
//!    1.03).
//!
//! `cargo run --release --features cuda --example ktt_bench` (CUDA; `TUNE_BACKEND=opencl`
//! with `--features opencl` runs the OpenCL kernels). `TUNE_BENCH_ONLY=1,3` runs some parts;
//! `TUNE_KTT_QUICK=1` uses small sizes and budgets (a CPU OpenCL device such as PoCL);
//! `TUNE_EVALS` / `TUNE_SECONDS` set the tuning budgets. Part 3 without part 1 runs the
//! configuration `TUNE_KTT_REDUCTION` names (e.g. `WG=1024,VW=4,UNROLL=2,GPC=16,ATOMICS=true`);
//! part 4 settles within `TUNE_ONLINE_CALLS` calls (default 200, the goal; 0: no
//! limit).
mod ktt;

use std::sync::Arc;
use std::time::Duration;

use tune::backend::Backend;
use tune::Config;

use ktt::bench;

struct Plan {
    parts: Vec<u32>,
    quick: bool,
    evals: u64,
    seconds: f64,
}

impl Plan {
    fn from_env() -> Plan {
        let quick = std::env::var("TUNE_KTT_QUICK").is_ok_and(|v| v != "0");
        let parts = std::env::var("TUNE_BENCH_ONLY")
            .map(|v| v.split(',').filter_map(|p| p.trim().parse().ok()).collect())
            .unwrap_or_else(|_| vec![1, 2, 3, 4]);
        Plan {
            parts,
            quick,
            evals: ktt::env_usize("TUNE_EVALS", if quick { 24 } else { 400 }) as u64,
            seconds: ktt::env_usize("TUNE_SECONDS", if quick { 60 } else { 240 }) as f64,
        }
    }
}

struct Bench(Plan);

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

impl ktt::OnDevice for Bench {
    fn run<B: Backend>(self, device: Arc<B>) -> tune::Result<()> {
        let plan = self.0;
        println!("# KTT bench on {}", device.device().describe());
        println!(
            "commit: {}",
            option_env!("TUNE_COMMIT").unwrap_or("(set TUNE_COMMIT when building)")
        );
        let mut tuned_reduction: Option<Config> = None;
        let n = if plan.quick { 1 << 20 } else { 1 << 26 };
        if plan.parts.contains(&1) {
            println!("\n## 1. reduction of {n} floats");
            let (case, _) = ktt::reduction::case::<B>(device.device(), n)?;
            let space_len = case.space.len();
            let (ev, space, default, r) =
                bench::tune(device.clone(), case, plan.evals, plan.seconds)?;
            let best = bench::cost_of(&ev, &space, &r.best.config)?;
            let dflt = bench::cost_of(&ev, &space, &default)?;
            let copy = bench::copy_bandwidth(device.clone(), n)?;
            let bw = 4.0 * n as f64 / best.as_secs_f64();
            println!(
                "space {space_len}, {} evaluated ({} valid) in {:.0?}",
                r.evaluations, r.valid, r.elapsed
            );
            println!(
                "best    {} : {:.2} us, {:.1} GB/s",
                space.describe(&r.best.config),
                us(best),
                bw / 1e9
            );
            println!(
                "default {} : {:.2} us (tuned is {:.2}x faster)",
                space.describe(&default),
                us(dflt),
                dflt.as_secs_f64() / best.as_secs_f64()
            );
            println!(
                "copy bandwidth {:.1} GB/s; reduction / copy = {:.3} (target >= 0.90)",
                copy / 1e9,
                bw / copy
            );
            match bench::vendor_sum(&device, &ktt::reduction::data(n), 20) {
                Some(Ok((t, s))) => println!(
                    "cuBLAS sasum {:.2} us (sum {s}); cuBLAS time / tuned time = {:.3} (target >= 1.0)",
                    t * 1e6,
                    t / best.as_secs_f64()
                ),
                Some(Err(e)) => println!("cuBLAS sasum failed: {e}"),
                None => println!("cuBLAS sasum: not on this backend (torch.sum: benches/gpu/torch_ktt.py)"),
            }
            println!(
                "RESULT\treduction\t{n}\t{:.3}\t{:.1}\t{:.1}\t{:.3}",
                us(best),
                bw / 1e9,
                copy / 1e9,
                bw / copy
            );
            tuned_reduction = Some(r.best.config);
        }
        if plan.parts.contains(&2) {
            let keys = if plan.quick { 1 << 16 } else { 1 << 24 };
            println!("\n## 2. radix sort of {keys} keys");
            let (case, _) = ktt::sort::case::<B>(device.device(), keys)?;
            let space_len = case.space.len();
            let (ev, space, default, r) =
                bench::tune(device.clone(), case, plan.evals, plan.seconds)?;
            let best = bench::cost_of(&ev, &space, &r.best.config)?;
            let dflt = bench::cost_of(&ev, &space, &default)?;
            println!(
                "space {space_len}, {} evaluated ({} valid) in {:.0?}",
                r.evaluations, r.valid, r.elapsed
            );
            println!(
                "best    {} : {:.1} us, {:.3} Gkeys/s",
                space.describe(&r.best.config),
                us(best),
                keys as f64 / best.as_secs_f64() / 1e9
            );
            println!(
                "default {} : {:.1} us, {:.3} Gkeys/s",
                space.describe(&default),
                us(dflt),
                keys as f64 / dflt.as_secs_f64() / 1e9
            );
            println!(
                "tuned / default speed-up = {:.2}x (torch.sort: benches/gpu/torch_ktt.py)",
                dflt.as_secs_f64() / best.as_secs_f64()
            );
            println!(
                "RESULT\tsort\t{keys}\t{:.1}\t{:.1}\t{:.2}",
                us(best),
                us(dflt),
                dflt.as_secs_f64() / best.as_secs_f64()
            );
        }
        if plan.parts.contains(&3) {
            println!("\n## 3. composition machinery against hand-written host code (reduction of {n} floats)");
            let (case, _) = ktt::reduction::case::<B>(device.device(), n)?;
            // Part 1's best, else `TUNE_KTT_REDUCTION` (`WG=1024,VW=4,..`: a best found
            // before), else the default.
            let config = match (tuned_reduction, std::env::var("TUNE_KTT_REDUCTION")) {
                (Some(c), _) => c,
                (None, Ok(v)) => ktt::config_from_text(&case.space, &v)?,
                (None, Err(_)) => case.default,
            };
            let (rounds, block) = if plan.quick { (10, 50) } else { (10, 200) };
            let o = bench::overhead(device.clone(), n, &config, rounds, block)?;
            println!("configuration {}", case.space.describe(&config));
            println!(
                "wall per run: composition {:.3} us, hand-written {:.3} us; overhead {:+.3}% (target < 1%) over {} runs each",
                us(o.composition),
                us(o.hand),
                100.0 * (o.composition.as_secs_f64() / o.hand.as_secs_f64() - 1.0),
                o.runs
            );
            println!(
                "device per run: composition {:.3} us, hand-written {:.3} us",
                us(o.composition_device),
                us(o.hand_device)
            );
            let own = o.composition_host.as_secs_f64() - o.hand_host.as_secs_f64();
            println!(
                "host time per run outside the backend's calls: composition {:.3} us, hand-written {:.3} us; the machinery's own {:.3} us = {:.3}% of the hand-written run",
                us(o.composition_host),
                us(o.hand_host),
                own * 1e6,
                100.0 * own / o.hand.as_secs_f64()
            );
            println!(
                "RESULT\toverhead\t{:.3}\t{:.3}\t{:.3}",
                us(o.composition),
                us(o.hand),
                100.0 * (o.composition.as_secs_f64() / o.hand.as_secs_f64() - 1.0)
            );
        }
        if plan.parts.contains(&4) {
            // KTT's published online case ran 3.2 ms per call (49.81 s for 15,697 images):
            // frames and filter large enough for a call of that order on the device.
            let (w, h, fs, calls) = if plan.quick {
                (512, 512, 7, 2000)
            } else {
                (8192, 8192, 11, 10_000)
            };
            println!(
                "\n## 4. online tuning of the 2D filter, {w}x{h}, {fs}x{fs} filter, {calls} calls"
            );
            // The goal, full speed within 200 calls, as the online tuner's budget of
            // exploring calls (`TUNE_ONLINE_CALLS`; 0: none, the tuner's default).
            let within = match ktt::env_u64("TUNE_ONLINE_CALLS", 200) {
                0 => None,
                n => Some(n),
            };
            let r = bench::online_conv(
                device.clone(),
                w,
                h,
                fs,
                calls,
                plan.evals,
                plan.seconds,
                within,
            )?;
            println!("online: settle within {within:?} calls");
            println!("offline best {} : {:.2} us", r.offline, us(r.offline_time));
            println!(
                "online settled after {:?} calls ({} configurations, {} failed; {} calls ran the best so far while the next compiled) on {} : {:.2} us ({:.1}% of offline speed)",
                r.settled_after,
                r.evaluations,
                r.failures,
                r.fallback_runs,
                r.settled,
                us(r.settled_time),
                100.0 * r.offline_time.as_secs_f64() / r.settled_time.as_secs_f64().max(1e-12)
            );
            match r.calls_to_98 {
                Some(c) => println!("every call at >= 98% of the offline best's speed from call {c} on (target <= 200)"),
                None => println!("the settled configuration is below 98% of the offline best's speed (target: within 200 calls)"),
            }
            println!(
                "total over {} calls: online {:.3} s, offline best from the start {:.3} s; ratio {:.4} (target <= 1.03)",
                r.calls,
                r.online_total.as_secs_f64(),
                r.baseline_total.as_secs_f64(),
                r.online_total.as_secs_f64() / r.baseline_total.as_secs_f64()
            );
            let over = r.steady_online.as_secs_f64() - r.steady_direct.as_secs_f64();
            println!(
                "steady state per call: online {:.3} us, direct {:.3} us; overhead {:.3} us = {:.3}% of the kernel time {:.2} us (target <= 0.5%)",
                us(r.steady_online),
                us(r.steady_direct),
                over * 1e6,
                100.0 * over / r.settled_time.as_secs_f64().max(1e-12),
                us(r.settled_time)
            );
            println!(
                "online tuner's own time per call once settled: {:.3} us = {:.4}% of the kernel time (the call's wall time minus the closure's)",
                us(r.handle),
                100.0 * r.handle.as_secs_f64() / r.settled_time.as_secs_f64().max(1e-12)
            );
            println!(
                "RESULT\tonline\t{:?}\t{:?}\t{:.4}\t{:.3}",
                r.settled_after,
                r.calls_to_98,
                r.online_total.as_secs_f64() / r.baseline_total.as_secs_f64(),
                100.0 * over / r.settled_time.as_secs_f64().max(1e-12)
            );
        }
        Ok(())
    }
}

fn main() {
    ktt::main_or_skip("ktt_bench", || ktt::on_device(Bench(Plan::from_env())));
}
