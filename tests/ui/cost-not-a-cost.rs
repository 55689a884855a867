#[tune::tunable(cost = value)]
fn scale(x: &[f32], #[tp(1..=x.len(), divides(x.len()))] wpt: usize) -> usize {
    x.len() / wpt
}

fn main() {
    let _ = ScaleConfig::tuner(&[1.0]);
}
