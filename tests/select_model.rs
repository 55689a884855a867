//! A generated selector with a model per configuration instead of a tree (select8): the
//! compiled dispatch of `#[tunable(select = "..")]` computes each configuration's
//! predicted share from the call's sizes (own and derived features, clamped to the
//! training range) and runs the best, as the selector's data does: on the training sizes,
//! between them, far outside them and at the edges (0 and `u32::MAX`).
//!
//! The selector is committed (tests/data/select_model.rs); this test regenerates it and
//! fails when the committed one differs (run with `TUNE_BLESS=1` to write it, then again
//! to compile it in).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tune::__private::Tunable;
use tune::results::Named;
use tune::select::features::Derived;
use tune::select::{Basis, Input, Matrix, Objective, Selector, SetMethod, TreeLimits};
use tune::Value;

include!("data/select_model_fn.rs");
include!("data/select_gemm8_fn.rs");

const TILES: [u32; 3] = [8, 64, 512];

/// `m` of 1 to 4096 (powers of two and three times them), `n` of 1 to 4096.
fn matrix() -> Matrix {
    let mut m = Matrix::new("select_model", "cpu", vec!["m".into(), "n".into()]);
    for t in TILES {
        m.add_config(Named(vec![("tile".into(), Value::Int(t.into()))]));
    }
    for a in 0..=12 {
        for x in [1u32 << a, 3 << a] {
            for b in [0, 4, 8, 12] {
                let y = 1u32 << b;
                let i = m.add_input(Input {
                    key: format!("m={x},n={y}"),
                    features: vec![f64::from(x), f64::from(y)],
                    groups: vec![],
                });
                for (c, t) in TILES.into_iter().enumerate() {
                    m.set(i, c, span(x, y, t)).unwrap();
                }
            }
        }
    }
    m
}

#[test]
fn the_compiled_dispatch_picks_what_the_models_pick() {
    let m = matrix();
    let all: Vec<usize> = (0..m.inputs().len()).collect();
    let recipe = (
        SetMethod::Greedy,
        TreeLimits::A,
        Objective::Model(Basis::Quadratic),
        false,
    );
    let mn = Derived::Product {
        name: "mn".into(),
        terms: vec![(0, 1), (1, 1)],
    };
    let s = Selector::fit_full(&m, &all, 3, recipe, &[mn]).unwrap();
    // The models learn the bands: the best tile on most training shapes, and each tile
    // somewhere.
    let right = all
        .iter()
        .filter(|&&i| {
            let pick = s.choose(&m.inputs()[i].features).unwrap();
            let best = &m.configs()[m.best(i).unwrap().0];
            m.get(i, m.configs().iter().position(|c| c == pick).unwrap())
                .unwrap()
                <= 1.1
                    * m.get(i, m.configs().iter().position(|c| c == best).unwrap())
                        .unwrap()
        })
        .count();
    assert!(right * 10 >= all.len() * 8, "{right} of {}", all.len());
    let source = s.rust(<SpanConfig as Tunable>::FINGERPRINT).unwrap();
    assert!(source.contains("let __tune_z0: f64 = ((1.0 + "), "{source}");
    assert!(source.contains("__tune_mn"), "{source}");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/select_model.rs");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != source {
        if std::env::var_os("TUNE_BLESS").is_some() {
            std::fs::write(&path, &source).unwrap();
        }
        panic!(
            "tests/data/select_model.rs is not the selector this test generates; run with TUNE_BLESS=1 to write it, then again\n{source}"
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for x in [
        0u32,
        1,
        2,
        5,
        24,
        100,
        1000,
        4096,
        5000,
        12288,
        1 << 20,
        u32::MAX,
    ] {
        for y in [0u32, 1, 3, 16, 256, 1000, 4096, 1 << 20, u32::MAX] {
            let picked = SpanConfig::select(x, y).expect("a selector for this declaration");
            let want = s.choose(&[f64::from(x), f64::from(y)]).unwrap();
            assert_eq!(
                Some(&Value::Int(i64::from(picked.tile))),
                want.get("tile"),
                "m={x}, n={y}"
            );
            seen.insert(picked.tile);
        }
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
}

/// The GEMM's derived features of examples/select_gemm (`pipeline::derived`).
fn gemm_derived() -> Vec<Derived> {
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

/// Eight configurations over `m, n, k` and five derived features: the size of a shipped
/// GEMM model selector, for the dispatch bench; its dispatch picks what it picks.
#[test]
fn a_gemm_sized_model_dispatch_picks_what_the_models_pick() {
    let tiles: Vec<(u32, u32)> = [8, 16, 32, 64]
        .into_iter()
        .flat_map(|a| [16, 64].map(|b| (a, b)))
        .collect();
    let mut m = Matrix::new(
        "select_gemm8",
        "cpu",
        vec!["m".into(), "n".into(), "k".into()],
    );
    for &(a, b) in &tiles {
        m.add_config(Named(vec![
            ("tm".into(), Value::Int(a.into())),
            ("tn".into(), Value::Int(b.into())),
        ]));
    }
    for x in [3u32, 12, 32, 49, 64, 100, 196, 512, 784, 3136] {
        for y in [16u32, 64, 96, 256, 1000] {
            for z in [27u32, 288, 2304] {
                let i = m.add_input(Input {
                    key: format!("m={x},n={y},k={z}"),
                    features: vec![f64::from(x), f64::from(y), f64::from(z)],
                    groups: vec![],
                });
                for (c, &(a, b)) in tiles.iter().enumerate() {
                    m.set(i, c, gemm8(x, y, z, a, b)).unwrap();
                }
            }
        }
    }
    let all: Vec<usize> = (0..m.inputs().len()).collect();
    let recipe = (
        SetMethod::Greedy,
        TreeLimits::A,
        Objective::Model(Basis::Quadratic),
        false,
    );
    let s = Selector::fit_full(&m, &all, 8, recipe, &gemm_derived()).unwrap();
    assert_eq!(s.configs.len(), 8);
    let source = s.rust(<Gemm8Config as Tunable>::FINGERPRINT).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/select_gemm8.rs");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != source {
        if std::env::var_os("TUNE_BLESS").is_some() {
            std::fs::write(&path, &source).unwrap();
        }
        panic!(
            "tests/data/select_gemm8.rs is not the selector this test generates; run with TUNE_BLESS=1 to write it, then again\n{source}"
        );
    }
    for x in [0u32, 1, 3, 50, 3136, 100_000, u32::MAX] {
        for y in [0u32, 16, 100, 1000, u32::MAX] {
            for z in [0u32, 27, 1000, u32::MAX] {
                let picked = Gemm8Config::select(x, y, z).expect("a selector for this declaration");
                let want = s
                    .choose(&[f64::from(x), f64::from(y), f64::from(z)])
                    .unwrap();
                assert_eq!(
                    (
                        Some(&Value::Int(picked.tm.into())),
                        Some(&Value::Int(picked.tn.into()))
                    ),
                    (want.get("tm"), want.get("tn")),
                    "m={x}, n={y}, k={z}"
                );
            }
        }
    }
}
