//! The cargo-test tuning flow, as a user writes it: an ordinary `#[test]` that tunes with a
//! short budget (`TUNE_FULL=1` for a full run), fails on wrong results, and records the
//! best configuration where the dispatch finds it.

use tune::evaluate::closure::Closure;
use tune::results::{Database, Source};
use tune::testing::tune_test;
use tune::tuner::Tuner;
use tune::{Config, Failure, Param, SpaceBuilder};

#[test]
fn tune_a_blocked_sum() -> tune::Result<()> {
    let n = 1usize << 12;
    let data: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
    let expected: f64 = data.iter().sum();
    let space = SpaceBuilder::new()
        .param(Param::<usize>::range("BLOCK", 1..=n).divides(&[], move |_| n))
        .param(Param::<usize>::values("LANES", [1, 2, 4, 8]))
        .build()?;
    let eval = Closure::timed(|c: &Config| -> Result<(), Failure> {
        let (block, lanes): (usize, usize) = (c.get(0), c.get(1));
        let mut acc = vec![0.0; lanes];
        for (i, chunk) in data.chunks(block).enumerate() {
            acc[i % lanes] += chunk.iter().sum::<f64>();
        }
        let got: f64 = acc.iter().sum();
        if (got - expected).abs() > 1e-9 {
            return Err(Failure::WrongResult(format!(
                "sum {got}, expected {expected}"
            )));
        }
        Ok(())
    })
    .repetitions(3);
    // Users leave out `.database(..)` and `.log(..)`: the defaults are `tuning/` in the
    // package (or `$TUNE_DB`) and `target/tune/`. This test keeps its files out of the
    // repository.
    let dir = std::env::temp_dir().join(format!("tune-flow-{}", std::process::id()));
    let db = Database::open(dir.join("tuning"));
    let result = tune_test(
        Tuner::new(space.clone(), eval)
            .name("blocked_sum")
            .input_key(format!("n={n}"))
            .database(db.clone())
            .log(dir.join("log.jsonl")),
    )?;
    assert!(result.valid > 0);
    let choice = db.choose("blocked_sum", "cpu", &format!("n={n}"), &space, None)?;
    assert_eq!(choice.source, Source::Exact);
    assert_eq!(choice.config, result.best.config);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
