fn main() {
    let _ = tune::space! {
        WPT: usize 1..=64;
    };
}
