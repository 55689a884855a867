#[tune::tunable(cost = speed, repetitions = 0, input(n = x.len(), n = 1), technique = bandit, technique = random)]
fn scale(x: &[f32], #[tp(1..=x.len(), divides(x.len()))] wpt: usize) -> usize {
    x.len() / wpt
}

fn main() {}
