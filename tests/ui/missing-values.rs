fn main() {
    let _ = tune::space! {
        WPT: usize;
        F: f32, default = 1.0;
    };
}
