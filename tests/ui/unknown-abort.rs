#[tune::tunable(abort = evaluation(100) | duraton(30s))]
fn scale(x: &[f32], #[tp(1..=x.len(), divides(x.len()))] wpt: usize) -> usize {
    x.len() / wpt
}

fn main() {
    // The generated items still exist, so this does not add errors.
    let _ = ScaleConfig::tuner(&[1.0]);
}
