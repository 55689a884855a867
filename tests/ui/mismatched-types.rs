fn main() {
    let n: u32 = 1024;
    let _ = tune::space! {
        WPT: usize in 1..=64, divides(n);
        LS: usize in 1..=64, LS + WPT;
        VW: u8 in ["1", "2"];
    };
}
