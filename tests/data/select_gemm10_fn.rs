// The second tunable of tests/select_fit_shift.rs: a GEMM-sized tree with a fit shift
// (eight tiles, `m, n, k` and five derived features), whose dispatch cost
// benches/benchmarks/select.rs times. The cost of tests/data/select_gemm8_fn.rs.

/// A tile of `tm x tn` rows and columns: the padded work at a rate that grows with the
/// tile, and a launch cost that grows with it too.
#[tune::tunable(
    name = "select_gemm10",
    technique = exhaustive,
    input(m = m, n = n, k = k),
    select = "tests/data/select_gemm10.rs"
)]
fn gemm10(m: u32, n: u32, k: u32, #[tp([8, 16, 32, 64])] tm: u32, #[tp([16, 64])] tn: u32) -> f64 {
    let padded = f64::from(m.div_ceil(tm) * tm) * f64::from(n.div_ceil(tn) * tn) * f64::from(k);
    let rate = f64::from(tm * tn).sqrt();
    let launch = 50.0 * f64::from(tm * tn);
    launch + padded / rate
}
