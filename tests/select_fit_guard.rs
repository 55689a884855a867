//! A generated selector with a fit guard (select9): trained where the 64-row tile wins
//! (64 rows and more), its tree runs the 64-row tile everywhere; the compiled dispatch of
//! `#[tunable(select = "..")]` computes each deployed tile's fit from the call's sizes and
//! never runs one that wastes half the best-fitting one's work or more, so below the
//! training range (32 rows and fewer) the 16-row tile runs. It picks what the selector's
//! data picks on the training sizes, between them, at 0 and at `u32::MAX`.
//!
//! The selector is committed (tests/data/select_fit_guard.rs); this test regenerates it
//! and fails when the committed one differs (run with `TUNE_BLESS=1` to write it, then
//! again to compile it in).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tune::__private::Tunable;
use tune::results::Named;
use tune::select::features::Tiling;
use tune::select::{Input, Matrix, Selector, SetMethod, TreeLimits};
use tune::Value;

include!("data/select_fit_guard_fn.rs");

/// `m` of 64 to 1024 in steps of 64, with two `n`: the 64-row tile wins on each.
fn matrix() -> Matrix {
    let mut m = Matrix::new("select_fit_guard", "cpu", vec!["m".into(), "n".into()]);
    for t in [16, 64] {
        m.add_config(Named(vec![("tile".into(), Value::Int(t))]));
    }
    for x in (64..=1024).step_by(64) {
        for y in [16u32, 256] {
            let i = m.add_input(Input {
                key: format!("m={x},n={y}"),
                features: vec![f64::from(x), f64::from(y)],
                groups: vec![],
            });
            for (c, t) in [16, 64].into_iter().enumerate() {
                m.set(i, c, cost(x, y, t)).unwrap();
            }
        }
    }
    m
}

fn tile(s: &Selector, m: u32, n: u32) -> Option<Value> {
    s.choose(&[f64::from(m), f64::from(n)])
        .and_then(|c| c.get("tile"))
        .cloned()
}

#[test]
fn the_compiled_dispatch_never_runs_a_tile_that_wastes_half_the_work() {
    let m = matrix();
    let train: Vec<usize> = (0..m.inputs().len()).collect();
    let tilings = [Tiling {
        dims: vec![(0, "tile".into())],
    }];
    let plain = Selector::fit(&m, &train, 2, SetMethod::Greedy, TreeLimits::C).unwrap();
    let s = plain.clone().with_fit_guard(&m, &train, &tilings).unwrap();
    let g = s.fit_guard.clone().unwrap();
    // The 64-row tile first: it wins on every training shape.
    assert_eq!(s.configs[g.order[0]].get("tile"), Some(&Value::Int(64)));
    // The tree alone runs the 64-row tile at 32 rows, where it pads half the work away
    // and the 16-row tile is faster; the guard runs the 16-row one there.
    assert_eq!(tile(&plain, 32, 16), Some(Value::Int(64)));
    assert!(cost(32, 16, 16) < cost(32, 16, 64));
    for x in [1, 16, 32] {
        assert_eq!(tile(&s, x, 16), Some(Value::Int(16)), "m = {x}");
    }
    // 48 rows: the 64-row tile fits 3/4 of the best, so the tree's choice stands.
    assert_eq!(tile(&s, 48, 16), Some(Value::Int(64)));
    let source = s.rust(<CostConfig as Tunable>::FINGERPRINT).unwrap();
    assert!(source.contains("let __tune_ok = |f: f64|"), "{source}");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/select_fit_guard.rs");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != source {
        if std::env::var_os("TUNE_BLESS").is_some() {
            std::fs::write(&path, &source).unwrap();
        }
        panic!(
            "tests/data/select_fit_guard.rs is not the selector this test generates; run with TUNE_BLESS=1 to write it, then again\n{source}"
        );
    }
    // The compiled dispatch picks what the selector's data picks: on the training sizes,
    // between them, below and far beyond them, and at the edges (m = 0: no work, every
    // fit 0, nothing excluded).
    for x in [
        0u32,
        1,
        15,
        16,
        17,
        31,
        32,
        33,
        48,
        64,
        96,
        100,
        640,
        1024,
        1056,
        4096,
        u32::MAX,
    ] {
        for y in [0u32, 1, 16, 256, u32::MAX] {
            let picked = CostConfig::select(x, y).expect("a selector for this declaration");
            assert_eq!(
                Some(Value::Int(i64::from(picked.tile))),
                tile(&s, x, y),
                "m={x}, n={y}"
            );
        }
    }
    // The guard's own rule, at the edges: no work excludes nothing; far beyond every
    // size every tile fits.
    assert_eq!(tile(&s, 0, 16), Some(Value::Int(64)));
    assert_eq!(tile(&s, u32::MAX, 16), Some(Value::Int(64)));
}
