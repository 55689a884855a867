fn main() {
    let _ = tune::space! {
        ST: usize in 0..=64 step 0;
    };
}
