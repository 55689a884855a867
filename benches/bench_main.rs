//! Benchmarks of tune. `cargo bench --bench bench_main`; `cargo test --benches` only checks
//! that they run.
use criterion::criterion_main;

mod benchmarks;

criterion_main!(
    benchmarks::composition_overhead::benches,
    benchmarks::engine_overhead::benches,
    benchmarks::dispatch::benches,
    benchmarks::select::benches
);
