fn main() {
    let _ = tune::space! {
        F: f32 in [0.5, 1.0, 2.0], divides(4.0) || F > 1.0;
    };
}
