//! The tuning engine's own cost per evaluation: a trivial closure evaluator (a few
//! nanoseconds) and a trivial technique (the next index), so what is measured is the loop:
//! ask, memoise, prepare, measure, tell, record, abort check, and optionally the log line.
//! Target: under 10 µs per evaluation. Reported time is per evaluation. The final
//! re-measurement of the finalists (a fixed 15 measurements per run) is turned off: it is
//! not a cost per evaluation.

use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use tune::abort::Evaluations;
use tune::evaluate::closure::Closure;
use tune::measure::Remeasure;
use tune::tuner::Tuner;
use tune::{Config, Failure, Param, Space, SpaceBuilder, Technique};

/// The next index, every time: as cheap as a technique gets.
struct Next(u128);

impl Technique for Next {
    fn name(&self) -> &str {
        "next"
    }
    fn init(&mut self, _: &Space, _: u64) {
        self.0 = 0;
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let end = (self.0 + n as u128).min(space.len());
        let out = (self.0..end).collect();
        self.0 = end;
        out
    }
    fn tell(&mut self, _: &Space, _: u128, _: Option<f64>) {}
}

fn space() -> Space {
    // 10^9 configurations of three parameters, so no run runs out of space.
    SpaceBuilder::new()
        .param(Param::<u32>::range("A", 0..1000))
        .param(Param::<u32>::range("B", 0..1000))
        .param(Param::<u32>::range("C", 0..1000))
        .build()
        .unwrap_or_else(|e| unreachable!("{e}"))
}

fn run(space: &Space, iters: u64, batch: usize, log: Option<&std::path::Path>) -> Duration {
    let eval = Closure::new(|c: &Config| -> Result<f64, Failure> {
        Ok(c.get::<u32>(0) as f64 + c.get::<u32>(2) as f64)
    });
    let mut tuner = Tuner::new(space.clone(), eval)
        .technique(Next(0))
        .abort(Evaluations(iters))
        .batch(batch)
        .remeasure(Remeasure::off())
        .progress(false);
    if let Some(p) = log {
        let _ = std::fs::remove_file(p);
        tuner = tuner.log(p);
    }
    let t = Instant::now();
    let r = tuner.run().unwrap_or_else(|e| unreachable!("{e}"));
    let elapsed = t.elapsed();
    assert_eq!(r.evaluations, iters);
    elapsed
}

fn overhead(c: &mut Criterion) {
    let space = space();
    let dir = std::env::temp_dir().join(format!("tune-bench-{}", std::process::id()));
    let log = dir.join("log.jsonl");
    let mut g = c.benchmark_group("engine_overhead_per_evaluation");
    g.throughput(Throughput::Elements(1));
    for batch in [1usize, 8] {
        g.bench_with_input(
            BenchmarkId::new("no_log/batch", batch),
            &batch,
            |b, &batch| b.iter_custom(|iters| run(&space, iters, batch, None)),
        );
        g.bench_with_input(BenchmarkId::new("log/batch", batch), &batch, |b, &batch| {
            b.iter_custom(|iters| run(&space, iters, batch, Some(&log)))
        });
    }
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, overhead);
