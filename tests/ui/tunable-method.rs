struct Kernel;

impl Kernel {
    #[tune::tunable]
    fn run(&self, #[tp(1..=4)] wpt: usize) -> usize {
        wpt
    }
}

fn main() {
    let _ = Kernel.run(2);
}
