fn main() {
    let _ = tune::space! {
        A: usize in 5..=1;
        B: usize in 1..1;
        C: i32 in -2..-4;
    };
}
