fn main() {
    let _ = tune::space! {
        where LS * WTP <= 256;
        WPT: usize in 1..=64;
        LS: usize in 1..=64;
    };
}
