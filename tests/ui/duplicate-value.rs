#[derive(Clone, Copy, Debug, PartialEq, tune::Enum)]
enum Kernel {
    Naive,
    Tiled,
}

fn main() {
    let _ = tune::space! {
        VW: u32 in [1, 2, 4, 2];
        F: f32 in [0.5, 1.0, 0.50];
        K: Kernel in [Kernel::Naive, Kernel::Tiled, Kernel::Naive];
    };
}
