fn main() {
    let n = 64usize;
    let _ = tune::space! {
        A: usize in 1..=n;
        B: usize in 1..=n;
        where divides(A * B);
    };
}
