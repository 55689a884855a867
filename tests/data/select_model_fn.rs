// The tunable of tests/select_model.rs.

/// Three tiles of `m`: a small one with no fixed cost and the slowest rows, a large one
/// with the fastest rows and a launch cost, one between; which wins changes with `m`
/// (the padding) and with `m * n` (the fixed cost against the work).
#[tune::tunable(
    name = "select_model",
    technique = exhaustive,
    input(m = m, n = n),
    select = "tests/data/select_model.rs"
)]
fn span(m: u32, n: u32, #[tp([8, 64, 512])] tile: u32) -> f64 {
    let padded = f64::from(m.div_ceil(tile)) * f64::from(tile);
    let (per_row, fixed) = match tile {
        8 => (1.0, 0.0),
        64 => (0.5, 2e3),
        _ => (0.3, 5e4),
    };
    fixed + padded * per_row * f64::from(n)
}
