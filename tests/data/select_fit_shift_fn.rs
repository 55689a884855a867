// The tunable of tests/select_fit_shift.rs.

/// Rows in tiles of 32 or 64: a 64-row tile does a row in 0.6 of the time a 32-row one
/// does, but pads `m` to a multiple of 64: above 32 rows it wins, up to 32 rows the
/// 32-row tile does.
#[tune::tunable(
    name = "select_fit_shift",
    technique = exhaustive,
    input(m = m, n = n),
    select = "tests/data/select_fit_shift.rs"
)]
fn cost(m: u32, n: u32, #[tp([32, 64])] tile: u32) -> f64 {
    let padded = f64::from(m.div_ceil(tile) * tile);
    let per_row = if tile == 64 { 0.6 } else { 1.0 };
    padded * per_row * f64::from(n)
}
