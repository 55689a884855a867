// An enum without `#[derive(tune::Enum)]`, and a struct, as parameter types.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kernel {
    Naive,
    Tiled,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Tile(u32);

fn main() {
    let _ = tune::space! {
        K: Kernel;
        T: Tile in [Tile(1), Tile(2)];
    };
}
