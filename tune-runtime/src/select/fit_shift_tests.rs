//! Tests of the fit shift (fit_shift.rs) and of the leaves it reads (`Node::leaf`).
#![allow(clippy::unwrap_used)]
use super::*;
use crate::param::Value;
use crate::results::Named;
use crate::select::{Input, Node, SetMethod, TreeLimits};

/// Tiles of 64 and 32 rows: the 64-row tile does a row in 0.6 of the 32-row one's time
/// but pads `m` to a multiple of 64. Trained on `m` of 2 to 4 (the 32-row tile wins) and
/// 64 to 512 (the 64-row one wins): nothing between 4 and 64.
fn matrix() -> Matrix {
    let mut m = Matrix::new("gemm", "gpu", vec!["m".into(), "n".into()]);
    for t in [64, 32] {
        m.add_config(Named(vec![("BM".into(), Value::Int(t))]));
    }
    for x in [2u32, 3, 4, 64, 128, 192, 256, 512] {
        let i = m.add_input(Input {
            key: format!("m={x},n=1"),
            features: vec![f64::from(x), 1.0],
            groups: vec![],
        });
        for (c, t) in [64u32, 32].into_iter().enumerate() {
            m.set(i, c, cost(f64::from(x), t)).unwrap();
        }
    }
    m
}

fn cost(m: f64, tile: u32) -> f64 {
    let per_row = if tile == 64 { 0.6 } else { 1.0 };
    (m / f64::from(tile)).ceil() * f64::from(tile) * per_row
}

fn tilings() -> Vec<Tiling> {
    vec![Tiling {
        dims: vec![(0, "BM".into())],
    }]
}

fn selector() -> (Matrix, Selector) {
    let m = matrix();
    let train: Vec<usize> = (0..m.inputs().len()).collect();
    let s = Selector::fit(&m, &train, 2, SetMethod::Greedy, TreeLimits::A).unwrap();
    let s = s.with_fit_shift(&m, &train, &tilings()).unwrap();
    (m, s)
}

fn tile(s: &Selector, m: f64) -> Option<Value> {
    s.choose(&[m, 1.0]).and_then(|c| c.get("BM")).cloned()
}

#[test]
fn leaves_are_numbered_below_first() {
    let leaf = |choice| Box::new(Node::Leaf { choice });
    let tree = Node::Split {
        feature: 0,
        threshold: 10.0,
        below: Box::new(Node::Split {
            feature: 1,
            threshold: 1.0,
            below: leaf(0),
            above: leaf(1),
        }),
        above: leaf(0),
    };
    assert_eq!(tree.leaves(), 3);
    assert_eq!(tree.leaf(&[5.0, 0.0]), 0);
    assert_eq!(tree.leaf(&[5.0, 2.0]), 1);
    assert_eq!(tree.leaf(&[50.0, 0.0]), 2);
    // NaN goes above, as `choose` sends it.
    assert_eq!(tree.leaf(&[f64::NAN, 0.0]), 2);
    assert_eq!(Node::Leaf { choice: 0 }.leaves(), 1);
}

#[test]
fn a_pick_in_a_gap_of_the_training_sizes_is_re_weighed_by_its_fit() {
    let (m, s) = selector();
    let f = s.fit_shift.clone().unwrap();
    assert_eq!(f.leaves.len(), s.tree.leaves());
    // The tree alone runs the 64-row tile on 32 rows (its threshold lies near 17).
    let plain = Selector {
        fit_shift: None,
        ..s.clone()
    };
    assert_eq!(tile(&plain, 32.0), Some(Value::Int(64)));
    // The shift runs the 32-row tile there, and wherever it is faster in the gap.
    for x in [20.0, 24.0, 32.0] {
        assert!(cost(x, 32) < cost(x, 64));
        assert_eq!(tile(&s, x), Some(Value::Int(32)), "m = {x}");
    }
    // At 48 rows the 64-row tile pads a quarter and is still faster: it stays.
    assert!(cost(48.0, 64) < cost(48.0, 32));
    assert_eq!(tile(&s, 48.0), Some(Value::Int(64)));
    // On every training size the tree's pick stands.
    for (i, input) in m.inputs().iter().enumerate() {
        assert_eq!(
            s.choose(&input.features),
            plain.choose(&input.features),
            "input {i}"
        );
    }
    // Below the training range the 32-row tile's fit falls too: it stays.
    assert_eq!(tile(&s, 1.0), Some(Value::Int(32)));
    // No work, or no number: every fit is 0, no score beats the pick's.
    assert_eq!(tile(&s, 0.0), tile(&plain, 0.0));
    assert_eq!(tile(&s, f64::NAN), tile(&plain, f64::NAN));
    // Far beyond the training range both tiles fit (nearly) 1.
    assert_eq!(tile(&s, 1e12), Some(Value::Int(64)));
    // Back from its JSON.
    let back: Selector = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn an_untiled_configuration_fits_one_and_an_empty_leaf_shifts_nothing() {
    let f = FitShift {
        tiles: vec![vec![(0, 64)], vec![]],
        leaves: vec![vec![(1.0, 1.0), (0.7, 1.0)], vec![(0.0, 0.0), (0.0, 0.0)]],
    };
    assert_eq!(f.fit_of(1, &[32.0]), 1.0);
    // 32 rows: the 64-row tile keeps half its share (0.5), the untiled one all (0.7).
    assert_eq!(f.apply(0, 0, &[32.0]), 1);
    // 40 rows: 0.625 against 0.7.
    assert_eq!(f.apply(0, 0, &[40.0]), 1);
    // 48 rows: 0.75 against 0.7: the pick stands.
    assert_eq!(f.apply(0, 0, &[48.0]), 0);
    // A leaf no training input reached, and a leaf or pick out of range.
    assert_eq!(f.apply(1, 0, &[32.0]), 0);
    assert_eq!(f.apply(7, 0, &[32.0]), 0);
    assert_eq!(f.apply(0, 5, &[32.0]), 5);
}

#[test]
fn a_selector_has_a_fit_guard_or_a_fit_shift_not_both() {
    let (m, s) = selector();
    let train: Vec<usize> = (0..m.inputs().len()).collect();
    assert!(s.clone().with_fit_guard(&m, &train, &tilings()).is_err());
    let guarded = Selector {
        fit_shift: None,
        ..s
    }
    .with_fit_guard(&m, &train, &tilings())
    .unwrap();
    assert!(guarded.with_fit_shift(&m, &train, &tilings()).is_err());
}

#[test]
fn the_generated_dispatch_computes_the_pick_s_fit_in_each_leaf() {
    let (_, s) = selector();
    let src = s.rust("fp").unwrap();
    assert!(
        src.contains("let __tune_shift = |pick: usize, least: f64"),
        "{src}"
    );
    // One call per leaf (the closure's own line reads `__tune_shift = |`).
    assert_eq!(
        src.matches("__tune_shift(").count(),
        s.tree.leaves(),
        "{src}"
    );
    assert!(src.contains("// fit shift:"), "{src}");
}

#[test]
fn the_nested_choice_ships_its_tree_with_a_shift_and_scores_shifted_recipes() {
    use crate::select::{Nested, Objective, Recipe};
    let m = matrix();
    let train: Vec<usize> = (0..m.inputs().len()).collect();
    let plain = Recipe::tree(SetMethod::Greedy, TreeLimits::A);
    let nested = Nested {
        recipes: vec![plain],
        folds: 4,
        shift_tilings: tilings(),
        shift_chosen: true,
        ..Nested::default()
    };
    let (s, choice) = nested.fit(&m, &train, 2).unwrap();
    assert!(choice.recipe.fit_shift);
    assert!(choice.recipe.name().ends_with(", fit shift"));
    assert!(s.fit_shift.is_some());
    assert_eq!(tile(&s, 32.0), Some(Value::Int(32)));
    // A model has no leaves: it ships as it is.
    let model = Nested {
        recipes: vec![Recipe {
            objective: Objective::Model(crate::select::Basis::Linear),
            ..plain
        }],
        models_ship: true,
        ..nested.clone()
    };
    let (s, choice) = model.fit(&m, &train, 2).unwrap();
    assert!(!choice.recipe.fit_shift && s.fit_shift.is_none());
    // A recipe with the shift is scored with it in the folds, beside its plain twin.
    let twins = Nested {
        recipes: vec![
            plain,
            Recipe {
                fit_shift: true,
                ..plain
            },
        ],
        shift_chosen: false,
        ..nested
    };
    let c = twins.choose(&m, &train, 2).unwrap();
    assert_eq!(c.scores.len(), 2);
    assert!(c.scores.iter().any(|(r, _)| r.fit_shift));
}

#[test]
fn a_set_without_tiles_ships_no_shift() {
    // No configuration has a `WGD`: every fit would be 1, and the generated code a
    // `match` of one arm (clippy's `match_single_binding` in the user's crate).
    let m = matrix();
    let train: Vec<usize> = (0..m.inputs().len()).collect();
    let s = Selector::fit(&m, &train, 2, SetMethod::Greedy, TreeLimits::A).unwrap();
    let none = vec![Tiling {
        dims: vec![(0, "WGD".into())],
    }];
    let shifted = s.clone().with_fit_shift(&m, &train, &none).unwrap();
    assert_eq!(shifted, s);
    assert!(!shifted.rust("fp").unwrap().contains("fit shift"));
}
