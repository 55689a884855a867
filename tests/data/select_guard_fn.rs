// The tunable of tests/select_guard.rs.

/// A 64-wide tile wins from `m = 64` on, an 8-wide one below; the 8-wide tile is never
/// far behind, so it is the robust one.
#[tune::tunable(
    name = "select_guard",
    technique = exhaustive,
    input(m = m, n = n),
    select = "tests/data/select_guard.rs"
)]
fn cost(m: u32, n: u32, #[tp([8, 64])] tile: u32) -> f64 {
    let _ = n;
    match (m >= 64, tile) {
        (true, 64) | (false, 8) => 1.0,
        (true, _) => 1.2,
        (false, _) => 4.0,
    }
}
