fn main() {
    let n = 64usize;
    let _ = tune::space! {
        A: usize in 1..=n;
        where n > 4;
    };
}

#[tune::tunable(where = 3 > 2)]
fn f(#[tp(1..=4)] a: usize) -> usize {
    a
}
