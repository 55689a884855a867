fn main() {
    let _ = tune::space! {
        WPT: usize in 1..=64, divide(64);
        LS: usize in 1..=64, atmost(WPT) || LS == 1;
    };
}
