#[tune::tunable]
fn scale(x: &[f32], wpt: usize) -> usize {
    x.len() / wpt
}

fn main() {}
