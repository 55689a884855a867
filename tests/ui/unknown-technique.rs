#[tune::tunable(technique = anealing)]
fn scale(x: &[f32], #[tp(1..=x.len(), divides(x.len()))] wpt: usize) -> usize {
    x.len() / wpt
}

fn main() {}
