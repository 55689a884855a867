//! A generated selector with a cost-sensitive tree and a range guard: the compiled
//! dispatch of `#[tunable(select = "..")]` runs the tree inside the training inputs'
//! range and the set's most robust configuration outside it, as the selector's data does.
//!
//! The selector is committed (tests/data/select_guard.rs); this test regenerates it and
//! fails when the committed one differs (run with `TUNE_BLESS=1` to write it, then again
//! to compile it in).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tune::__private::Tunable;
use tune::results::Named;
use tune::select::{Input, Matrix, Objective, Selector, SetMethod, TreeLimits};
use tune::Value;

include!("data/select_guard_fn.rs");

fn matrix() -> Matrix {
    let mut m = Matrix::new("select_guard", "cpu", vec!["m".into(), "n".into()]);
    for t in [8, 64] {
        m.add_config(Named(vec![("tile".into(), Value::Int(t))]));
    }
    for a in 0..8 {
        for b in 0..4 {
            let (x, y) = (16u32 << a, 32u32 << b);
            let i = m.add_input(Input {
                key: format!("m={x},n={y}"),
                features: vec![f64::from(x), f64::from(y)],
                groups: vec![],
            });
            for (c, t) in [8, 64].into_iter().enumerate() {
                m.set(i, c, cost(x, y, t)).unwrap();
            }
        }
    }
    m
}

#[test]
fn the_compiled_dispatch_runs_the_guard_outside_the_training_range() {
    let m = matrix();
    let all: Vec<usize> = (0..m.inputs().len()).collect();
    let recipe = (SetMethod::Greedy, TreeLimits::B, Objective::GeoMean, true);
    let s = Selector::fit_full(&m, &all, 2, recipe, &[]).unwrap();
    let g = s.guard.clone().unwrap();
    assert_eq!(g.ranges, vec![(16.0, 2048.0), (32.0, 256.0)]);
    assert_eq!(s.configs[g.choice].get("tile"), Some(&Value::Int(8)));
    let source = s.rust(<CostConfig as Tunable>::FINGERPRINT).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/select_guard.rs");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != source {
        if std::env::var_os("TUNE_BLESS").is_some() {
            std::fs::write(&path, &source).unwrap();
        }
        panic!(
            "tests/data/select_guard.rs is not the selector this test generates; run with TUNE_BLESS=1 to write it, then again\n{source}"
        );
    }
    let sizes = [1u32, 8, 16, 32, 64, 100, 2048, 4096, u32::MAX];
    for &x in &sizes {
        for &y in &[1u32, 32, 100, 256, 1 << 20] {
            let picked = CostConfig::select(x, y).expect("a selector for this declaration");
            let want = s.choose(&[f64::from(x), f64::from(y)]).unwrap();
            assert_eq!(
                Some(&Value::Int(i64::from(picked.tile))),
                want.get("tile"),
                "m={x}, n={y}"
            );
            let inside = (16..=2048).contains(&x) && (32..=256).contains(&y);
            let best = if x >= 64 { 64 } else { 8 };
            assert_eq!(picked.tile, if inside { best } else { 8 }, "m={x}, n={y}");
        }
    }
}
