#[tune::tunable]
fn scale(x: &[f32], #[tp(1..=4)] #[tp(1..=8)] wpt: usize, #[tp = 4] ls: usize) -> usize {
    x.len() / wpt / ls
}

fn main() {
    let _ = ScaleConfig::space(&[1.0]);
}
