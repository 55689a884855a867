fn main() {
    let _ = tune::space! {
        A: usize in 1..=64, A * B <= 64;
        B: usize in 1..=64, B <= A;
    };
}
