// The tunable of tests/select_derived.rs and benches/benchmarks/select.rs, included by
// both (the same tokens: the same fingerprint, so the committed selector fits both).

/// The best tile follows the output's size `m * n`, the best `split` its aspect: neither
/// is a threshold on `m` or `n` alone.
#[tune::tunable(
    name = "select_derived",
    technique = exhaustive,
    input(m = m, n = n),
    select = "tests/data/select_derived.rs"
)]
fn cost(m: u32, n: u32, #[tp([8, 64])] tile: u32, #[tp([1, 2])] split: u32) -> f64 {
    let large = u64::from(m) * u64::from(n) >= 1 << 16;
    let wide = n > m;
    let mut c = 1.0;
    if large != (tile == 64) {
        c += 1.0;
    }
    if wide != (split == 2) {
        c += 0.5;
    }
    c
}
