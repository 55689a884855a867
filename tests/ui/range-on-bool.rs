fn main() {
    let _ = tune::space! {
        PAD: bool in 0..=1;
    };
}
