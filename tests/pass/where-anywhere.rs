// Stand-alone constraints before, between and after the parameters they read, in
// `space!` and `#[tunable]`, with a local variable and a user function.
fn limit(n: usize) -> usize {
    n / 2
}

#[tune::tunable(where = a * b <= limit(n), where = a != b)]
fn f(n: usize, #[tp(1..=n)] a: usize, #[tp(1..=8)] b: usize) -> usize {
    a + b
}

fn main() {
    let n = 64usize;
    let s = tune::space! {
        where A * B <= n;
        A: usize in 1..=n;
        where A % 2 == 0, matches!(B, 1 | 2 | 4);
        B: usize in 1..=8;
        where self::limit(A) >= B;
    }
    .unwrap();
    assert!(s.len() > 0);
    assert!(FConfig::space(32).unwrap().len() > 0);
    let _ = f_auto;
}
