fn main() {
    let n = 1024usize;
    let _ = tune::space! {
        WPT: usize in 1..=n, divides(n / LS);
        LS: usize in 1..=n, divides(n);
    };
}
