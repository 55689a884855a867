// The tunable of tests/select_dispatch.rs and benches/benchmarks/select.rs, included by
// both (the same tokens: the same fingerprint, so the committed selector fits both).

/// A made-up cost with a known best per input: the tile nearest `min(m, n) / 16` (within
/// 4..=64), and `split = 2` for large outputs.
#[tune::tunable(
    name = "select_demo",
    technique = exhaustive,
    input(m = m, n = n),
    select = "tests/data/select_demo.rs"
)]
fn demo(m: u32, n: u32, #[tp([4, 8, 16, 32, 64])] tile: u32, #[tp([1, 2])] split: u32) -> f64 {
    let ideal = (f64::from(m.min(n)) / 16.0).clamp(4.0, 64.0);
    let large = u64::from(m) * u64::from(n) > 100_000;
    let split_cost = match (split, large) {
        (2, true) | (1, false) => 0.0,
        _ => 0.25,
    };
    1.0 + (f64::from(tile) / ideal).ln().abs() + split_cost
}
