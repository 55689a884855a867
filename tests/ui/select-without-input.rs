// `select` reads the input's features by name: `input(..)` must name them (the file
// exists: Cargo.toml of the test project). And the file must exist.
#[tune::tunable(select = "Cargo.toml")]
fn scale(x: &[f32], #[tp([1, 2, 4])] wpt: usize) -> usize {
    x.len() / wpt
}

#[tune::tunable(select = "tuning/no-such-selector.rs", input(n = x.len()))]
fn shift(x: &[f32], #[tp([1, 2, 4])] wpt: usize) -> usize {
    x.len() * wpt
}

fn main() {}
