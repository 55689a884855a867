#[derive(Clone, Copy, Debug, PartialEq, tune::Enum)]
enum Kernel {
    Naive,
    Tiled(u32),
    Blocked { size: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, tune::Enum)]
enum Generic<T> {
    A(T),
}

#[derive(Clone, Copy, Debug, PartialEq, tune::Enum)]
struct NotAnEnum;

fn main() {}
