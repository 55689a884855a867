fn main() {
    let _ = tune::space! {
        A: usize in 8..=1;
        B: u8 in 1..=256 step 0;
        C: usize in [1, 2, 1], divide(B) && C < D;
        D: bool in 0..=1;
        A: usize in 1..=4;
    };
}
