#[tune::tunable(abort = duration(30) | fraction(2.0) || evaluations(-1) | speedup_over_time(1.1))]
fn scale(x: &[f32], #[tp(1..=x.len(), divides(x.len()))] wpt: usize) -> usize {
    x.len() / wpt
}

// The quoted form: errors point at the string.
#[tune::tunable(abort = "evaluations(10) | duration(5 s)")]
fn scale2(x: &[f32], #[tp(1..=x.len(), divides(x.len()))] wpt: usize) -> usize {
    x.len() / wpt
}

fn main() {}
