fn main() {
    let _ = tune::space! {
        A: u8 in 0..=300;
        B: usize in -1..=4;
        C: i8 in [-128, 127, 128];
    };
}
