#[tune::tunable(crat = "tune", technique = annealing)]
fn scale(x: &[f32], #[tp(1..=x.len(), divides(x.len()), defualt = 1)] wpt: usize) -> usize {
    x.len() / wpt
}

fn main() {
    let _ = tune::space! {
        A: usize in 1..=8, dfault = 4;
    };
    // The generated items still exist, so this does not add errors.
    let _ = ScaleConfig::space(&[1.0]);
}
