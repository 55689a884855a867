// The tunable of tests/select_fit.rs.

/// Rows in tiles of 32 or 64: a 64-row tile does a row in 0.85 of the time a 32-row
/// one does, but pads `m` to a multiple of 64, so which wins alternates along `m` (32 and
/// 96 and 160 rows: the 32-row tile; 64, 128 and 192: the 64-row one) with how it fits.
#[tune::tunable(
    name = "select_fit",
    technique = exhaustive,
    input(m = m, n = n),
    select = "tests/data/select_fit.rs"
)]
fn cost(m: u32, n: u32, #[tp([32, 64])] tile: u32) -> f64 {
    let padded = f64::from(m.div_ceil(tile) * tile);
    let per_row = if tile == 64 { 0.85 } else { 1.0 };
    padded * per_row * f64::from(n)
}
