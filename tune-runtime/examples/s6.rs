use std::time::Instant;
use tune_runtime::param::Param;
use tune_runtime::space::SpaceBuilder;
fn main() -> tune_runtime::Result<()> {
    let s: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(256);
    let t = Instant::now();
    // slots: MWG0 NWG1 KWG2 MDIMC3 NDIMC4 MDIMA5 NDIMB6 KWI7 VWM8 VWN9 STRM10 STRN11 SA12 SB13
    let sp = SpaceBuilder::new()
        .param(Param::<usize>::range("MWG", 1..=s).divides(&[], move |_| s))
        .param(Param::<usize>::range("NWG", 1..=s).divides(&[], move |_| s))
        .param(Param::<usize>::range("KWG", 1..=s).divides(&[], move |_| s))
        .param(
            Param::<usize>::range("MDIMC", 1..=s)
                .divides(&[0], |b| b.get(0))
                .at_most(&[], |_| 1024),
        )
        .param(
            Param::<usize>::range("NDIMC", 1..=s)
                .divides(&[1], |b| b.get(1))
                .at_most(&[], |_| 1024)
                .constraint(&[3], |b| b.get::<usize>(3) * b.get::<usize>(4) <= 1024),
        )
        .param(
            Param::<usize>::range("MDIMA", 1..=s)
                .divides(&[0], |b| b.get(0))
                .divides(&[3, 4], |b| b.get::<usize>(3) * b.get::<usize>(4))
                .constraint(&[2, 3, 4], |b| {
                    b.get::<usize>(2)
                        % ((b.get::<usize>(3) * b.get::<usize>(4)) / b.get::<usize>(5))
                        == 0
                }),
        )
        .param(
            Param::<usize>::range("NDIMB", 1..=s)
                .divides(&[1], |b| b.get(1))
                .divides(&[3, 4], |b| b.get::<usize>(3) * b.get::<usize>(4))
                .constraint(&[2, 3, 4], |b| {
                    b.get::<usize>(2)
                        % ((b.get::<usize>(3) * b.get::<usize>(4)) / b.get::<usize>(6))
                        == 0
                }),
        )
        .param(Param::<usize>::range("KWI", 1..=s).divides(&[2], |b| b.get(2)))
        .param(
            Param::<usize>::values("VWM", [1, 2, 4, 8])
                .divides(&[0, 3], |b| b.get::<usize>(0) / b.get::<usize>(3))
                .divides(&[0, 5], |b| b.get::<usize>(0) / b.get::<usize>(5)),
        )
        .param(
            Param::<usize>::values("VWN", [1, 2, 4, 8])
                .divides(&[1, 4], |b| b.get::<usize>(1) / b.get::<usize>(4))
                .divides(&[1, 6], |b| b.get::<usize>(1) / b.get::<usize>(6)),
        )
        .param(Param::<usize>::values("STRM", [0, 1]))
        .param(Param::<usize>::values("STRN", [0, 1]))
        .param(Param::<usize>::values("SA", [0, 1]))
        .param(
            Param::<usize>::values("SB", [0, 1]).constraint(&[0, 1, 2, 8, 9, 12], |b| {
                let (mwg, nwg, kwg, vwm, vwn, sa, sb): (
                    usize,
                    usize,
                    usize,
                    usize,
                    usize,
                    usize,
                    usize,
                ) = (
                    b.get(0),
                    b.get(1),
                    b.get(2),
                    b.get(8),
                    b.get(9),
                    b.get(12),
                    b.get(13),
                );
                ((sa * kwg * mwg / vwm) + (sb * kwg * nwg / vwn)) * 8 <= 49152
            }),
        )
        .build()?;
    let dt = t.elapsed();
    println!(
        "S{s}: {} configs in {:?}, {} bytes ({:.2} B/config), groups {:?}",
        sp.len(),
        dt,
        sp.memory_bytes(),
        sp.memory_bytes() as f64 / sp.len() as f64,
        sp.groups().iter().map(|g| g.1).collect::<Vec<_>>()
    );
    println!("{:?}", sp.__level_sizes());
    println!("{:?}", sp.__build_order());
    let n = 1usize << 20;
    let t = Instant::now();
    let sx = SpaceBuilder::new()
        .param(Param::<usize>::range("WPT", 1..=n).divides(&[], move |_| n))
        .param(Param::<usize>::range("LS", 1..=n).divides(&[0], move |b| n / b.get::<usize>(0)))
        .build()?;
    println!("saxpy {} in {:?}", sx.len(), t.elapsed());
    // round trip a few
    let mut rng = rand::rng();
    for _ in 0..3 {
        let i = sp.sample_index(&mut rng).unwrap_or(0);
        let c = sp.get(i).unwrap_or_else(|| Config::from_raw(vec![]));
        assert_eq!(sp.index_of(&c), Some(i));
        println!("{}", sp.describe(&c));
        println!(
            "  nb {}",
            sp.neighbours(&c, tune_runtime::Neighbourhood::Any).len()
        );
    }
    Ok(())
}
use tune_runtime::Config;
