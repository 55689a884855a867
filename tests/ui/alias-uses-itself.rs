fn main() {
    let _ = tune::space! {
        WPT: usize in 1..=64, divides(WPT * 2);
    };
}
