//! What a warm call of a generated selector costs (`#[tunable(select = ..)]`: a decision
//! tree compiled to nested comparisons): the tunable of tests/select_dispatch.rs and its
//! committed selector (5 configurations, depth 4), and that of tests/select_derived.rs,
//! whose tree reads two derived features (`m * n`, `m / n`) the dispatch computes first,
//! and (select8) a model selector of tests/select_model.rs: eight configurations, a
//! quadratic model each over `m, n, k` and five derived features, and (select10) a
//! GEMM-sized tree with a fit shift of tests/select_fit_shift.rs: eight tiles, an
//! unlimited tree over `m, n, k` and five derived features, each leaf computing its
//! pick's output fit (select11: where the pick's fit is short, the re-weighing computes
//! each distinct tile side's fit once, not each position's two). Beside criterion's median, for the demo tree and the fit-shift
//! tree, the 99th
//! percentile of calls timed in batches of 64, and the same with 16 threads calling at once
//! (per-thread CPU time per call, so that a machine with fewer cores than threads does not
//! count time-sharing as contention; 1024 calls between two readings of that clock, whose
//! own cost is some 100 ns).
#![allow(dead_code)] // `demo` and `cost` themselves are tuned by the tests, not here

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, Criterion};

include!("../../tests/data/select_demo_fn.rs");
include!("../../tests/data/select_derived_fn.rs");
include!("../../tests/data/select_gemm8_fn.rs");
include!("../../tests/data/select_gemm10_fn.rs");

/// Inputs inside and outside the tuned sizes.
const INPUTS: [(u32, u32); 8] = [
    (16, 16),
    (16, 8192),
    (128, 1024),
    (1024, 128),
    (8192, 8192),
    (3, 70_000),
    (500, 40),
    (u32::MAX, 1),
];

/// GEMM shapes inside the fit-shift tree's training range (tests/select_fit_shift.rs:
/// `m` 3 to 3136, `n` 16 to 1000, `k` 27 to 2304), none a training shape.
const GEMM_INSIDE: [(u32, u32, u32); 8] = [
    (64, 100, 300),
    (200, 250, 30),
    (500, 900, 2000),
    (12, 20, 280),
    (780, 100, 28),
    (3000, 250, 2300),
    (100, 990, 290),
    (50, 17, 27),
];

fn batch_demo() -> u32 {
    let mut acc = 0u32;
    for &(m, n) in &INPUTS {
        for _ in 0..8 {
            acc = acc
                .wrapping_add(DemoConfig::select(black_box(m), black_box(n)).map_or(0, |c| c.tile));
        }
    }
    acc
}

fn batch_gemm10_inside() -> u32 {
    let mut acc = 0u32;
    for &(m, n, k) in &GEMM_INSIDE {
        for _ in 0..8 {
            acc = acc.wrapping_add(
                Gemm10Config::select(black_box(m), black_box(n), black_box(k)).map_or(0, |c| c.tm),
            );
        }
    }
    acc
}

fn batch_gemm10() -> u32 {
    let mut acc = 0u32;
    for &(m, n) in &INPUTS {
        for _ in 0..8 {
            acc = acc.wrapping_add(
                Gemm10Config::select(black_box(m), black_box(n), black_box(m ^ n))
                    .map_or(0, |c| c.tm),
            );
        }
    }
    acc
}

/// This thread's CPU time, in seconds.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec; the clock id is a constant Linux defines.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Nanoseconds per call of `samples` samples of `per` batches each on this thread:
/// (median, 99th percentile).
fn per_call(samples: usize, per: usize, clock: fn() -> f64, batch: fn() -> u32) -> (f64, f64) {
    let mut t: Vec<f64> = (0..samples)
        .map(|_| {
            let s = clock();
            for _ in 0..per {
                black_box(batch());
            }
            (clock() - s) * 1e9 / (64 * per) as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[t.len() / 2], t[t.len() * 99 / 100])
}

fn wall() -> f64 {
    thread_local!(static START: Instant = Instant::now());
    START.with(|s| s.elapsed().as_secs_f64())
}

fn select(c: &mut Criterion) {
    if DemoConfig::select(16, 16).is_none() {
        println!("select: no selector compiled in (tests/data/select_demo.rs); nothing to time");
        return;
    }
    let mut g = c.benchmark_group("select");
    g.bench_function("warm call", |b| {
        let mut i = 0usize;
        b.iter(|| {
            i = (i + 1) % INPUTS.len();
            let (m, n) = INPUTS[i];
            DemoConfig::select(black_box(m), black_box(n))
        })
    });
    if CostConfig::select(16, 16).is_some() {
        g.bench_function("warm call, derived features", |b| {
            let mut i = 0usize;
            b.iter(|| {
                i = (i + 1) % INPUTS.len();
                let (m, n) = INPUTS[i];
                CostConfig::select(black_box(m), black_box(n))
            })
        });
    }
    // A model per configuration (select8): eight of them over `m, n, k` and five
    // derived features, squares included (tests/select_model.rs).
    if Gemm8Config::select(16, 16, 16).is_some() {
        g.bench_function("warm call, 8 quadratic models over 8 features", |b| {
            let mut i = 0usize;
            b.iter(|| {
                i = (i + 1) % INPUTS.len();
                let (m, n) = INPUTS[i];
                Gemm8Config::select(black_box(m), black_box(n), black_box(m ^ n))
            })
        });
    }
    if Gemm10Config::select(16, 16, 16).is_some() {
        g.bench_function("warm call, GEMM-sized tree with a fit shift", |b| {
            let mut i = 0usize;
            b.iter(|| {
                i = (i + 1) % INPUTS.len();
                let (m, n) = INPUTS[i];
                Gemm10Config::select(black_box(m), black_box(n), black_box(m ^ n))
            })
        });
        g.bench_function(
            "warm call, GEMM-sized tree with a fit shift, inside the training range",
            |b| {
                let mut i = 0usize;
                b.iter(|| {
                    i = (i + 1) % GEMM_INSIDE.len();
                    let (m, n, k) = GEMM_INSIDE[i];
                    Gemm10Config::select(black_box(m), black_box(n), black_box(k))
                })
            },
        );
    }
    g.finish();
    // Percentiles and threads, printed beside criterion's lines.
    let batches = if std::env::args().any(|a| a == "--bench") {
        20_000
    } else {
        100
    };
    spread("select", batches, batch_demo);
    if Gemm10Config::select(16, 16, 16).is_some() {
        spread(
            "select, GEMM-sized tree with a fit shift",
            batches,
            batch_gemm10,
        );
        spread(
            "select, GEMM-sized tree with a fit shift, inside the training range",
            batches,
            batch_gemm10_inside,
        );
    }
}

/// The median and 99th percentile of `batch`'s calls alone, and its CPU time per call
/// with 16 threads calling at once, printed as `what: ...`.
fn spread(what: &str, batches: usize, batch: fn() -> u32) {
    let (p50, p99) = per_call(batches, 1, wall, batch);
    let (c50, _) = per_call(batches / 16, 16, thread_cpu, batch);
    let threads: Vec<(f64, f64)> = std::thread::scope(|s| {
        let h: Vec<_> = (0..16)
            .map(|_| s.spawn(move || per_call(batches / 16, 16, thread_cpu, batch)))
            .collect();
        h.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut t50: Vec<f64> = threads.iter().map(|t| t.0).collect();
    t50.sort_by(f64::total_cmp);
    let worst = t50.last().copied().unwrap_or(0.0);
    println!(
        "{what}: {p50:.2} ns median, {p99:.2} ns p99 per call (wall, batches of 64); CPU time per call {c50:.2} ns alone, {:.2} ns median / {worst:.2} ns worst of 16 threads at once ({:.2}x)",
        t50[t50.len() / 2],
        worst / c50.max(1e-9)
    );
}

criterion_group!(benches, select);
