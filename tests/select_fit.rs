//! A generated selector whose tree reads tile-fit features (select7): one feature per
//! distinct tile of the chosen set, the useful share of the padded rows, computed by the
//! compiled dispatch of `#[tunable(select = "..")]` from the call's sizes; it picks what
//! the selector's data picks, and the best tile on sizes it was not fitted on, where a
//! tree of the same depth over the sizes alone cannot follow the alternation.
//!
//! The selector is committed (tests/data/select_fit.rs); this test regenerates it and
//! fails when the committed one differs (run with `TUNE_BLESS=1` to write it, then again
//! to compile it in).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tune::__private::Tunable;
use tune::results::Named;
use tune::select::features::Tiling;
use tune::select::{Input, Matrix, Objective, Selector, SetMethod, TreeLimits};
use tune::Value;

include!("data/select_fit_fn.rs");

/// Every `m` of 32 to 1024 in steps of 32, with two `n`.
fn matrix() -> Matrix {
    let mut m = Matrix::new("select_fit", "cpu", vec!["m".into(), "n".into()]);
    for t in [32, 64] {
        m.add_config(Named(vec![("tile".into(), Value::Int(t))]));
    }
    for x in (32..=1024).step_by(32) {
        for y in [16u32, 256] {
            let i = m.add_input(Input {
                key: format!("m={x},n={y}"),
                features: vec![f64::from(x), f64::from(y)],
                groups: vec![],
            });
            for (c, t) in [32, 64].into_iter().enumerate() {
                m.set(i, c, cost(x, y, t)).unwrap();
            }
        }
    }
    m
}

fn best(m: u32) -> u32 {
    if cost(m, 1, 64) < cost(m, 1, 32) {
        64
    } else {
        32
    }
}

#[test]
fn the_compiled_dispatch_reads_the_tile_fit_of_its_set() {
    let m = matrix();
    // Fitted on two sizes of every three (m = 32, 64, 128, 160, ...).
    let train: Vec<usize> = (0..m.inputs().len()).filter(|i| (i / 2) % 3 != 2).collect();
    let tilings = [Tiling {
        dims: vec![(0, "tile".into())],
    }];
    let recipe = (SetMethod::Greedy, TreeLimits::C, Objective::Label, false);
    let s = Selector::fit_tiled(&m, &train, 2, recipe, (&[], &tilings)).unwrap();
    let names: Vec<&str> = s.derived.iter().map(|d| d.name()).collect();
    assert!(names.contains(&"fit_m64"), "{names:?}");
    // The same tree over the sizes alone does not follow the alternation.
    let plain = Selector::fit_full(&m, &train, 2, recipe, &[]).unwrap();
    let right = |s: &Selector| {
        (32..=1024)
            .step_by(32)
            .filter(|&x| {
                s.choose(&[f64::from(x), 16.0]).unwrap().get("tile")
                    == Some(&Value::Int(i64::from(best(x))))
            })
            .count()
    };
    let wrong: Vec<u32> = (32..=1024)
        .step_by(32)
        .filter(|&x| {
            s.choose(&[f64::from(x), 16.0]).unwrap().get("tile")
                != Some(&Value::Int(i64::from(best(x))))
        })
        .collect();
    assert!(wrong.is_empty(), "the tile-fit tree misses m = {wrong:?}");
    assert!(right(&plain) < 32, "sizes alone: {}", right(&plain));
    let source = s.rust(<CostConfig as Tunable>::FINGERPRINT).unwrap();
    assert!(source.contains(".ceil()"), "{source}");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/select_fit.rs");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != source {
        if std::env::var_os("TUNE_BLESS").is_some() {
            std::fs::write(&path, &source).unwrap();
        }
        panic!(
            "tests/data/select_fit.rs is not the selector this test generates; run with TUNE_BLESS=1 to write it, then again\n{source}"
        );
    }
    // The compiled dispatch picks what the selector's data picks, on the training sizes,
    // between them, far outside them and at the edges (m = 0: no work, fit 0).
    for x in [
        0u32,
        1,
        31,
        32,
        33,
        64,
        96,
        100,
        160,
        480,
        992,
        1024,
        1056,
        4096,
        u32::MAX,
    ] {
        for y in [1u32, 16, 256, 1 << 20] {
            let picked = CostConfig::select(x, y).expect("a selector for this declaration");
            let want = s.choose(&[f64::from(x), f64::from(y)]).unwrap();
            assert_eq!(
                Some(&Value::Int(i64::from(picked.tile))),
                want.get("tile"),
                "m={x}, n={y}"
            );
        }
    }
}
