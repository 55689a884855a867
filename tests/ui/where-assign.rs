fn main() {
    let _ = tune::space! {
        A: usize in 1..=64;
        where A = 4;
    };
}
