#[tune::tunable]
fn scale(x: &[f32], #[tp(1..=4)] (a, b): (usize, usize), #[tp(1..=4)] c: usize) -> usize {
    x.len() / a / b / c
}

fn main() {
    let _ = ScaleConfig::space(&[1.0]);
}
