fn main() {
    let _ = tune::space! {
        F: f32 in 0.5..=2.0;
    };
}
