#[tune::tunable]
fn scale(x: &[f32], #[tp(1..=4 8)] wpt: usize, #[tp(1..=4, divide(8))] ls: usize) -> usize {
    x.len() / wpt / ls
}

fn main() {
    // The configuration struct and its methods exist despite the errors.
    let cfg = ScaleConfig { wpt: 1, ls: 1 };
    let _ = cfg.call(&[1.0]);
    let _ = ScaleConfig::space(&[1.0]);
}
