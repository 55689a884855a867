//! A generated selector with a fit shift (select10): trained on 2 to 4 rows (the 32-row
//! tile wins) and 64 to 1024 rows (the 64-row tile wins), its tree sends 17 rows and
//! more to the 64-row tile; the compiled dispatch of `#[tunable(select = "..")]` computes
//! the pick's output fit in its leaf and, where it is below every training shape's of
//! that leaf, weighs each tile's leaf share by its fit lost, so in the gap (17 to 32
//! rows) the 32-row tile runs. It picks what the selector's data picks on the training
//! sizes, in the gap, at 0 and at `u32::MAX`.
//!
//! The selector is committed (tests/data/select_fit_shift.rs); this test regenerates it
//! and fails when the committed one differs (run with `TUNE_BLESS=1` to write it, then
//! again to compile it in).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tune::__private::Tunable;
use tune::results::Named;
use tune::select::features::Tiling;
use tune::select::{Input, Matrix, Selector, SetMethod, TreeLimits};
use tune::Value;

include!("data/select_fit_shift_fn.rs");

/// `m` of 2 to 4 and 64 to 1024 in steps of 64, with two `n`.
fn matrix() -> Matrix {
    let mut m = Matrix::new("select_fit_shift", "cpu", vec!["m".into(), "n".into()]);
    for t in [32, 64] {
        m.add_config(Named(vec![("tile".into(), Value::Int(t))]));
    }
    for x in (2..=4).chain((64..=1024).step_by(64)) {
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

fn tile(s: &Selector, m: u32, n: u32) -> Option<Value> {
    s.choose(&[f64::from(m), f64::from(n)])
        .and_then(|c| c.get("tile"))
        .cloned()
}

#[test]
fn the_compiled_dispatch_re_weighs_a_pick_in_a_gap_of_the_training_sizes() {
    let m = matrix();
    let train: Vec<usize> = (0..m.inputs().len()).collect();
    let tilings = [Tiling {
        dims: vec![(0, "tile".into())],
    }];
    let plain = Selector::fit(&m, &train, 2, SetMethod::Greedy, TreeLimits::A).unwrap();
    let s = plain.clone().with_fit_shift(&m, &train, &tilings).unwrap();
    // The tree alone runs the 64-row tile at 32 rows, where it pads half the work away
    // and the 32-row tile is faster; the shift runs the 32-row one there.
    assert_eq!(tile(&plain, 32, 16), Some(Value::Int(64)));
    for x in [18, 20, 24, 32] {
        assert!(cost(x, 16, 32) < cost(x, 16, 64), "m = {x}");
        assert_eq!(tile(&s, x, 16), Some(Value::Int(32)), "m = {x}");
    }
    // 33 to 63 rows: both tiles pad to 64 rows and the 64-row one is faster: the tree's
    // pick.
    for x in [33, 38, 48] {
        assert!(cost(x, 16, 64) < cost(x, 16, 32), "m = {x}");
        assert_eq!(tile(&s, x, 16), Some(Value::Int(64)), "m = {x}");
    }
    // The training sizes keep the tree's picks.
    for input in m.inputs() {
        assert_eq!(s.choose(&input.features), plain.choose(&input.features));
    }
    let source = s.rust(<CostConfig as Tunable>::FINGERPRINT).unwrap();
    assert!(
        source.contains("let __tune_shift = |pick: usize"),
        "{source}"
    );
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/select_fit_shift.rs");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != source {
        if std::env::var_os("TUNE_BLESS").is_some() {
            std::fs::write(&path, &source).unwrap();
        }
        panic!(
            "tests/data/select_fit_shift.rs is not the selector this test generates; run with TUNE_BLESS=1 to write it, then again\n{source}"
        );
    }
    // The compiled dispatch picks what the selector's data picks: on the training sizes,
    // in the gap, below and far beyond them, and at the edges (m = 0: no work, every
    // fit 0, the tree's pick).
    for x in [
        0u32,
        1,
        2,
        4,
        5,
        16,
        17,
        18,
        20,
        31,
        32,
        33,
        38,
        39,
        40,
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
}

include!("data/select_gemm10_fn.rs");

/// The GEMM's derived features of examples/select_gemm (`pipeline::derived`).
fn gemm_derived() -> Vec<tune::select::features::Derived> {
    use tune::select::features::Derived;
    let product = |name: &str, terms: &[(usize, i32)]| Derived::Product {
        name: name.into(),
        terms: terms.to_vec(),
    };
    vec![
        product("mn", &[(0, 1), (1, 1)]),
        product("mnk", &[(0, 1), (1, 1), (2, 1)]),
        product("m_per_n", &[(0, 1), (1, -1)]),
        product("k2_per_mn", &[(2, 2), (0, -1), (1, -1)]),
        Derived::Harmonic {
            name: "intensity".into(),
            of: vec![0, 1, 2],
        },
    ]
}

/// Eight tiles over `m, n, k` and five derived features, an unlimited tree with a fit
/// shift over the output tiles: the size of a shipped GEMM selector, for the dispatch
/// bench; its dispatch picks what it picks.
#[test]
fn a_gemm_sized_tree_with_a_fit_shift_dispatches_as_its_data() {
    use tune::select::Objective;
    let tiles: Vec<(u32, u32)> = [8, 16, 32, 64]
        .into_iter()
        .flat_map(|a| [16, 64].map(|b| (a, b)))
        .collect();
    let mut m = Matrix::new(
        "select_gemm10",
        "cpu",
        vec!["m".into(), "n".into(), "k".into()],
    );
    for &(a, b) in &tiles {
        m.add_config(Named(vec![
            ("tm".into(), Value::Int(a.into())),
            ("tn".into(), Value::Int(b.into())),
        ]));
    }
    for x in [3u32, 12, 49, 64, 100, 196, 512, 784, 3136] {
        for y in [16u32, 96, 256, 1000] {
            for z in [27u32, 288, 2304] {
                let i = m.add_input(Input {
                    key: format!("m={x},n={y},k={z}"),
                    features: vec![f64::from(x), f64::from(y), f64::from(z)],
                    groups: vec![],
                });
                for (c, &(a, b)) in tiles.iter().enumerate() {
                    m.set(i, c, gemm10(x, y, z, a, b)).unwrap();
                }
            }
        }
    }
    let all: Vec<usize> = (0..m.inputs().len()).collect();
    let recipe = (SetMethod::Greedy, TreeLimits::A, Objective::Label, false);
    let output = [Tiling {
        dims: vec![(0, "tm".into()), (1, "tn".into())],
    }];
    let s = Selector::fit_full(&m, &all, 8, recipe, &gemm_derived())
        .unwrap()
        .with_fit_shift(&m, &all, &output)
        .unwrap();
    assert_eq!(s.configs.len(), 8);
    assert!(s.tree.leaves() >= 8, "{:?}", s.tree.shape());
    let source = s.rust(<Gemm10Config as Tunable>::FINGERPRINT).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/select_gemm10.rs");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != source {
        if std::env::var_os("TUNE_BLESS").is_some() {
            std::fs::write(&path, &source).unwrap();
        }
        panic!(
            "tests/data/select_gemm10.rs is not the selector this test generates; run with TUNE_BLESS=1 to write it, then again\n{source}"
        );
    }
    let mut moved = 0;
    let plain = Selector {
        fit_shift: None,
        ..s.clone()
    };
    for x in [0u32, 1, 3, 24, 32, 50, 3136, 100_000, u32::MAX] {
        for y in [0u32, 16, 40, 100, 1000, u32::MAX] {
            for z in [0u32, 27, 1000, u32::MAX] {
                let f = [f64::from(x), f64::from(y), f64::from(z)];
                let picked =
                    Gemm10Config::select(x, y, z).expect("a selector for this declaration");
                let want = s.choose(&f).unwrap();
                assert_eq!(
                    (
                        Some(&Value::Int(picked.tm.into())),
                        Some(&Value::Int(picked.tn.into()))
                    ),
                    (want.get("tm"), want.get("tn")),
                    "m={x}, n={y}, k={z}"
                );
                moved += usize::from(plain.choose(&f) != Some(want));
            }
        }
    }
    // The shift moves some picks off the training sizes (and not all).
    assert!(moved > 0, "no pick moved");
}
