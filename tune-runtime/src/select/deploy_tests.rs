//! The tests of `deploy.rs`: the selector's choice and its generated source.
#![allow(clippy::unwrap_used)]
use super::*;

fn selector() -> Selector {
    let cfg = |a: i64, b: bool| {
        Named(vec![
            ("wgd".into(), Value::Int(a)),
            ("type".into(), Value::Bool(b)),
        ])
    };
    Selector {
        tunable: "gemm".into(),
        device: "gpu".into(),
        features: vec!["m".into(), "n".into()],
        derived: vec![],
        configs: vec![cfg(16, false), cfg(32, true), cfg(64, false)],
        tree: Node::Split {
            feature: 0,
            threshold: 127.5,
            below: Box::new(Node::Leaf { choice: 0 }),
            above: Box::new(Node::Split {
                feature: 1,
                threshold: 1e4,
                below: Box::new(Node::Leaf { choice: 1 }),
                above: Box::new(Node::Leaf { choice: 2 }),
            }),
        },
        method: SetMethod::Greedy,
        limits: TreeLimits::B,
        objective: Objective::Label,
        guard: None,
        fit_guard: None,
        fit_shift: None,
        trained_on: vec!["m=1,n=1".into()],
    }
}

#[test]
fn generated_source_is_nested_comparisons() {
    let s = selector();
    let src = s.rust("abc").unwrap();
    let body: String = src
        .lines()
        .filter(|l| !l.starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        body,
        "::core::option::Option::Some((\"abc\", if m <= 127.5 {\n    \
         Self { wgd: 16, r#type: false }\n\
         } else {\n    \
         if n <= 10000.0 {\n        \
         Self { wgd: 32, r#type: true }\n    \
         } else {\n        \
         Self { wgd: 64, r#type: false }\n    \
         }\n\
         }))"
    );
    assert!(src.contains("// 1: wgd=32 type=true"), "{src}");
    assert_eq!(
        s.choose(&[200.0, 5.0]).unwrap().get("wgd"),
        Some(&Value::Int(32))
    );
}

#[test]
fn a_guard_runs_its_configuration_outside_the_training_range() {
    let mut s = selector();
    s.guard = Some(Guard {
        ranges: vec![(16.0, 4096.0), (1.0, 1e5)],
        choice: 1,
    });
    let wgd = |m: f64, n: f64| s.choose(&[m, n]).and_then(|c| c.get("wgd")).cloned();
    // Inside: the tree.
    assert_eq!(wgd(100.0, 5.0), Some(Value::Int(16)));
    assert_eq!(wgd(200.0, 2e4), Some(Value::Int(64)));
    // Outside either range (or NaN): the guard's.
    assert_eq!(wgd(8.0, 5.0), Some(Value::Int(32)));
    assert_eq!(wgd(200.0, 1e6), Some(Value::Int(32)));
    assert_eq!(wgd(f64::NAN, 5.0), Some(Value::Int(32)));
    let src = s.rust("abc").unwrap();
    assert!(
        src.contains(
            "if !((16.0..=4096.0).contains(&m) && (1.0..=100000.0).contains(&n)) {\n    Self { wgd: 32, r#type: true }\n} else {"
        ),
        "{src}"
    );
    assert!(src.contains("if m <= 127.5 {"), "{src}");
    // Kept in the JSON beside the tuning database.
    let back: Selector = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    // A selector written before guards reads back without one.
    let mut old = serde_json::to_value(selector()).unwrap();
    old.as_object_mut().unwrap().remove("objective");
    let old: Selector = serde_json::from_value(old).unwrap();
    assert_eq!((old.guard, old.objective), (None, Objective::Label));
}

#[test]
fn a_fit_guard_overrides_the_tree_and_the_range_guard_where_a_tile_wastes_half() {
    let mut s = selector();
    s.guard = Some(Guard {
        ranges: vec![(64.0, 4096.0), (1.0, 1e5)],
        choice: 2,
    });
    // Tiles of 16, 32 and 64 rows (`wgd`); the fallback tries 64, then 32, then 16.
    s.fit_guard = Some(FitGuard {
        tiles: vec![vec![(0, 16)], vec![(0, 32)], vec![(0, 64)]],
        order: vec![2, 1, 0],
        ratio: 0.5,
    });
    let wgd = |m: f64, n: f64| s.choose(&[m, n]).and_then(|c| c.get("wgd")).cloned();
    // Inside the range the tree's choice stands where its tile fits: m = 200 runs 32
    // (fit 200/224 against 200/208); m = 96 runs 16 (tree), fits 1.
    assert_eq!(wgd(200.0, 5.0), Some(Value::Int(32)));
    assert_eq!(wgd(96.0, 5.0), Some(Value::Int(16)));
    // Below the range the range guard's 64 rows would run; at m = 32 they fit 1/2 of
    // the best: the next in order, 32 rows (fit 1), runs.
    assert_eq!(wgd(32.0, 5.0), Some(Value::Int(32)));
    // m = 8: 64 and 32 rows both fit at most half of 16 rows'.
    assert_eq!(wgd(8.0, 5.0), Some(Value::Int(16)));
    // Beyond it: every tile fits; the range guard's choice.
    assert_eq!(wgd(1e9, 5.0), Some(Value::Int(64)));
    let src = s.rust("abc").unwrap();
    assert!(
        src.contains("let __tune_pick: usize = if !((64.0..=4096.0).contains(&m) && (1.0..=100000.0).contains(&n)) {\n    2usize\n} else {"),
        "{src}"
    );
    assert!(
        src.contains("let __tune_ok = |f: f64| f >= __tune_top || f > 0.5 * __tune_top;"),
        "{src}"
    );
    assert!(
        src.contains("} else if __tune_ok(__tune_f2) {\n        2\n    }"),
        "{src}"
    );
    assert!(
        src.contains("        _ => Self { wgd: 64, r#type: false },\n    }\n}"),
        "{src}"
    );
    let back: Selector = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    // One configuration: nothing to exclude, no fit computed.
    s.configs.truncate(1);
    s.tree = Node::Leaf { choice: 0 };
    s.guard = None;
    assert!(!s.rust("abc").unwrap().contains("__tune_f0"));
}

#[test]
fn a_model_selector_reads_back_and_one_configuration_needs_no_comparison() {
    use crate::select::model::{Linear, Variable};
    let mut s = selector();
    s.objective = Objective::Model(Basis::Linear);
    s.tree = Node::Models(Box::new(Models {
        basis: Basis::Linear,
        variables: vec![Variable {
            feature: 0,
            lo: 1.0,
            hi: 10.0,
            mean: 5.0,
            sd: 2.0,
        }],
        models: vec![
            Linear {
                intercept: 0.0,
                weights: vec![-1.0],
            },
            Linear {
                intercept: -0.5,
                weights: vec![0.0],
            },
            Linear {
                intercept: -1.0,
                weights: vec![1.0],
            },
        ],
    }));
    let back: Selector = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    let wgd = |m: f64| s.choose(&[m, 1.0]).and_then(|c| c.get("wgd")).cloned();
    // z = (log2(1 + m) clamped to [1, 10] - 5) / 2: small m runs 0, large m runs 2.
    assert_eq!(wgd(1.0), Some(Value::Int(16)));
    assert_eq!(wgd(1e6), Some(Value::Int(64)));
    let src = s.rust("abc").unwrap();
    assert!(src.contains("#[allow(clippy::manual_clamp)]"), "{src}");
    assert!(
        src.contains("_ => Self { wgd: 64, r#type: false },"),
        "{src}"
    );
    assert!(src.contains("a model per configuration"), "{src}");
    // One configuration: its literal, no locals, no comparison.
    if let Node::Models(m) = &mut s.tree {
        m.models.truncate(1);
    }
    let src = s.rust("abc").unwrap();
    assert!(!src.contains("__tune_best"), "{src}");
    assert!(
        src.contains("Some((\"abc\", Self { wgd: 16, r#type: false }))"),
        "{src}"
    );
}

#[test]
fn what_a_literal_cannot_hold_is_an_error() {
    let mut s = selector();
    s.configs[0].0[0].1 = Value::Str("Fast".into());
    assert!(s
        .rust("x")
        .unwrap_err()
        .to_string()
        .contains("integers, floats and bools"));
    let mut s = selector();
    s.features[0] = "m-1".into();
    assert!(s.rust("x").is_err());
}

#[test]
fn a_feature_the_declaration_does_not_name_is_an_error_naming_it() {
    let s = selector();
    // The declaration's inputs in any order, and more of them than the selector reads.
    assert_eq!(
        s.rust_for("abc", &["batch", "n", "m"]).unwrap(),
        s.rust("abc").unwrap()
    );
    // select11's CPU selector read `ta`, which `input(m, n, k, batch)` does not name.
    let e = s.rust_for("abc", &["m", "k"]).unwrap_err().to_string();
    assert!(e.contains("`n`") && e.contains("m, k"), "{e}");
}
