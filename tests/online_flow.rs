//! `#[tunable(online)]` on a CPU function: the generated online tuner explores while the
//! application computes, never hands it a result its check rejects, settles on the best,
//! continues from its log after a restart, and tunes each input size on its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use tune::Failure;

/// A blocked sum whose cost is a made-up function of the configuration (best: `block = 8`,
/// `lanes = 2`); `block = 4, lanes = 3` computes a wrong sum.
#[tune::tunable(online, technique = exhaustive, input(n = data.len()))]
fn blocked_sum(
    data: &[f64],
    out: &mut f64,
    #[tp([1, 2, 4, 8, 16, 32])] block: usize,
    #[tp([1, 2, 3])] lanes: usize,
) -> f64 {
    let mut acc = vec![0.0; lanes];
    for (i, chunk) in data.chunks(block).enumerate() {
        acc[i % lanes] += chunk.iter().sum::<f64>();
    }
    *out = acc.iter().sum::<f64>() + if block == 4 && lanes == 3 { 1.0 } else { 0.0 };
    1e-6 * (1.0 + (block as f64).log2().sub(3.0).abs() + (lanes as f64).sub(2.0).abs())
}

trait Sub {
    fn sub(self, x: f64) -> f64;
}
impl Sub for f64 {
    fn sub(self, x: f64) -> f64 {
        self - x
    }
}

fn temp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tune-online-flow-{tag}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn check(expected: f64) -> impl FnMut(&f64, &[f64], &f64) -> Result<(), Failure> {
    move |_, _, out| {
        if (*out - expected).abs() < 1e-9 {
            Ok(())
        } else {
            Err(Failure::WrongResult(format!("{out} instead of {expected}")))
        }
    }
}

#[test]
fn explores_settles_and_continues_after_a_restart() {
    let dir = temp("settle");
    let log = dir.join("online.jsonl");
    let data: Vec<f64> = (0..1024).map(|i| (i % 13) as f64).collect();
    let expected: f64 = data.iter().sum();
    let mut online = BlockedSumConfig::online().with(|o| o.log(&log));
    let mut out = 0.0;
    let mut calls = 0;
    while !online.tuner().is_settled() {
        online.call(&data, &mut out, check(expected)).unwrap();
        assert_eq!(out, expected, "call {calls} returned a wrong sum");
        calls += 1;
        assert!(calls < 1_000_000);
    }
    let best = BlockedSumConfig::try_from(online.tuner().settled().unwrap()).unwrap();
    assert_eq!((best.block, best.lanes), (8, 2));
    let stats = online.tuner().stats();
    assert_eq!(stats.evaluations, 18);
    assert_eq!(stats.failures, 1);
    drop(online);

    // Restarted: it settles at once on what the log holds.
    let mut again = BlockedSumConfig::online().with(|o| o.log(&log));
    again.call(&data, &mut out, check(expected)).unwrap();
    assert_eq!(again.tuner().stats().settled_after, Some(1));
    assert_eq!(
        again.tuner().settled().cloned(),
        Some(tune::Config::from(best))
    );

    // Another input size: its own search.
    let small: Vec<f64> = data[..512].to_vec();
    let small_expected: f64 = small.iter().sum();
    again.call(&small, &mut out, check(small_expected)).unwrap();
    assert!(!again.tuner().is_settled());
    assert_eq!(out, small_expected);
    std::fs::remove_dir_all(dir).ok();
}
