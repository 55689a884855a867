//! A generated selector whose tree reads derived features (`m * n`, `m / n`): the
//! compiled dispatch of `#[tunable(select = "..")]` computes them and picks what the
//! selector's data picks, inside and far outside the inputs it was fitted on.
//!
//! The selector is committed (tests/data/select_derived.rs); this test regenerates it and
//! fails when the committed one differs (run with `TUNE_BLESS=1` to write it, then again
//! to compile it in).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tune::__private::Tunable;
use tune::results::Named;
use tune::select::features::Derived;
use tune::select::{Input, Matrix, Selector, SetMethod, TreeLimits};
use tune::Value;

include!("data/select_derived_fn.rs");

fn matrix() -> Matrix {
    let mut m = Matrix::new("select_derived", "cpu", vec!["m".into(), "n".into()]);
    let configs: Vec<usize> = [(8, 1), (8, 2), (64, 1), (64, 2)]
        .iter()
        .map(|&(t, s)| {
            m.add_config(Named(vec![
                ("tile".into(), Value::Int(t)),
                ("split".into(), Value::Int(s)),
            ]))
        })
        .collect();
    for a in 0..10 {
        for b in 0..10 {
            let (x, y) = (1u32 << (a + 3), 1u32 << (b + 3));
            let i = m.add_input(Input {
                key: format!("m={x},n={y}"),
                features: vec![f64::from(x), f64::from(y)],
                groups: vec![],
            });
            for (&c, (t, s)) in configs.iter().zip([(8, 1), (8, 2), (64, 1), (64, 2)]) {
                m.set(i, c, cost(x, y, t, s)).unwrap();
            }
        }
    }
    m
}

#[test]
fn the_compiled_dispatch_computes_the_derived_features() {
    let m = matrix();
    let all: Vec<usize> = (0..m.inputs().len()).collect();
    let derived = [
        Derived::Product {
            name: "mn".into(),
            terms: vec![(0, 1), (1, 1)],
        },
        Derived::Product {
            name: "m_per_n".into(),
            terms: vec![(0, 1), (1, -1)],
        },
    ];
    let limits = TreeLimits {
        max_depth: Some(2),
        min_leaf: 1,
    };
    let s = Selector::fit_with(&m, &all, 4, (SetMethod::Greedy, limits), &derived).unwrap();
    // Two splits, one per derived feature, fit every input.
    assert_eq!(s.tree.shape(), (2, 4), "{:?}", s.tree);
    let source = s.rust(<CostConfig as Tunable>::FINGERPRINT).unwrap();
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/select_derived.rs");
    let committed = std::fs::read_to_string(&path).unwrap();
    if committed != source {
        if std::env::var_os("TUNE_BLESS").is_some() {
            std::fs::write(&path, &source).unwrap();
        }
        panic!(
            "tests/data/select_derived.rs is not the selector this test generates; run with TUNE_BLESS=1 to write it, then again\n{source}"
        );
    }
    let sizes = [1u32, 3, 8, 100, 255, 256, 257, 4096, 1 << 20, u32::MAX];
    for &x in &sizes {
        for &y in &sizes {
            let picked = CostConfig::select(x, y).expect("a selector for this declaration");
            let want = s.choose(&[f64::from(x), f64::from(y)]).unwrap();
            let want = (want.get("tile").cloned(), want.get("split").cloned());
            assert_eq!(
                (
                    Some(Value::Int(i64::from(picked.tile))),
                    Some(Value::Int(i64::from(picked.split)))
                ),
                want,
                "m={x}, n={y}"
            );
            // On the fitted range, the best configuration.
            let fitted = |v: u32| (8..=4096).contains(&v) && v.is_power_of_two();
            if fitted(x) && fitted(y) {
                let best = [(8, 1), (8, 2), (64, 1), (64, 2)]
                    .into_iter()
                    .min_by(|a, b| cost(x, y, a.0, a.1).total_cmp(&cost(x, y, b.0, b.1)))
                    .unwrap();
                assert_eq!((picked.tile, picked.split), best, "m={x}, n={y}");
            }
        }
    }
}
