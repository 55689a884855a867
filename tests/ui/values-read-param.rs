fn main() {
    let _ = tune::space! {
        WPT: usize in 1..=64;
        LS: usize in 1..=WPT, default = WPT;
    };
}
