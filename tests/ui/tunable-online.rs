#[tune::tunable(online = true)]
fn scale(x: &[f32], #[tp([1, 2, 4])] wpt: usize) -> usize {
    x.len() / wpt
}

#[tune::tunable(online)]
async fn later(x: &[f32], #[tp([1, 2, 4])] wpt: usize) -> usize {
    x.len() / wpt
}

fn main() {}
