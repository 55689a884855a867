//! The facade under another name, with `crate = ..` options.
#![deny(warnings)]

extern crate tune as renamed;

// A `tune` module that the expansions must not pick up.
mod tune {}

#[derive(Clone, Copy, Debug, PartialEq, renamed::Enum)]
#[tune(crate = "renamed")]
enum Kernel {
    Naive,
    Tiled,
}

#[renamed::tunable(crate = "renamed", technique = annealing, abort = evaluations(2))]
fn scale(x: &[f32], #[tp(1..=x.len(), divides(x.len()))] wpt: usize, #[tp] k: Kernel) -> usize {
    let _ = k;
    x.len() / wpt
}

fn main() {
    let n = 64usize;
    let space = renamed::space! {
        crate = renamed;
        WPT: usize in 1..=n, divides(n);
        K: Kernel;
    };
    assert_eq!(space.map(|s| s.len()).ok(), Some(14));
    let x = [1.0f32; 16];
    assert_eq!(ScaleConfig::space(&x).map(|s| s.len()).ok(), Some(10));
    let _ = ScaleConfig { wpt: 1, k: Kernel::Tiled }.call(&x);
    let _ = ScaleConfig::tuner(&x).map(|t| t.progress(false));
    let _ = ScaleConfig::best;
    let _ = scale_auto;
}
