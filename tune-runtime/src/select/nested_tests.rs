//! Tests of the nested choice (nested.rs); other modules' tests use its fixtures.
#![allow(clippy::unwrap_used)]
use super::*;
use crate::param::Value;
use crate::results::Named;
use crate::select::{Input, Node};

/// 60 inputs along `n`; configuration `c` (of 6) is best on the tenth of inputs
/// `10c..10c+10`, and every configuration is measured everywhere.
pub(in crate::select) fn staircase() -> Matrix {
    let mut m = Matrix::new("t", "d", vec!["n".into()]);
    for c in 0..6 {
        m.add_config(Named(vec![("C".into(), Value::Int(c))]));
    }
    for i in 0..60 {
        let row = m.add_input(Input {
            key: format!("n={i}"),
            features: vec![i as f64],
            groups: vec![],
        });
        for c in 0..6 {
            let own = i / 10 == c;
            m.set(row, c, if own { 1.0 } else { 2.0 + c as f64 })
                .unwrap();
        }
    }
    m
}

#[test]
fn the_choice_reads_only_the_training_inputs() {
    let m = staircase();
    let train: Vec<usize> = (0..40).collect();
    let nested = Nested::default();
    let a = nested.choose(&m, &train, 4).unwrap();
    // Whatever the inputs outside `train` hold, the choice is the same.
    let other = m.filtered(|i, _| i < 40);
    let b = nested.choose(&other, &train, 4).unwrap();
    assert_eq!(a, b);
    assert!(!a.scores.is_empty());
}

#[test]
fn a_recipe_that_separates_the_steps_is_chosen() {
    let m = staircase();
    let train: Vec<usize> = (0..60).collect();
    let nested = Nested {
        recipes: vec![
            // Depth 1 cannot separate 6 steps; an unlimited tree can.
            Recipe::tree(
                SetMethod::Greedy,
                TreeLimits {
                    max_depth: Some(1),
                    min_leaf: 1,
                },
            ),
            Recipe::tree(SetMethod::Greedy, TreeLimits::A),
        ],
        ..Nested::default()
    };
    let (s, choice) = nested.fit(&m, &train, 6).unwrap();
    assert_eq!(choice.recipe.limits, TreeLimits::A);
    // Held-out inputs next to a step may fall on the wrong side of it.
    assert!(choice.scores[0].1.geomean > 0.8, "{:?}", choice.scores);
    assert!(choice.scores[1].1.geomean < choice.scores[0].1.geomean);
    assert_eq!(s.limits, TreeLimits::A);
    assert_eq!(s.choose(&[55.0]).unwrap().get("C"), Some(&Value::Int(5)));
}

/// Inputs on a grid of m x n; configuration 0 is best where `m * n < 2^14`, 1 above:
/// a boundary no split on `m` or `n` alone follows.
fn product_boundary() -> Matrix {
    let mut m = Matrix::new("t", "d", vec!["m".into(), "n".into()]);
    for c in 0..2 {
        m.add_config(Named(vec![("C".into(), Value::Int(c))]));
    }
    for a in 0..12 {
        for b in 0..12 {
            let (x, y) = (f64::from(1 << (a + 2)), f64::from(1 << (b + 2)));
            let group = ["a", "b", "c"][(a + b) % 3].to_string();
            let i = m.add_input(Input {
                key: format!("m={x},n={y}"),
                features: vec![x, y],
                groups: vec![group],
            });
            let best = usize::from(x * y >= 16384.0);
            for c in 0..2 {
                m.set(i, c, if c == best { 1.0 } else { 3.0 }).unwrap();
            }
        }
    }
    m
}

#[test]
fn derived_features_are_chosen_where_they_separate_the_inputs() {
    let m = product_boundary();
    let train: Vec<usize> = (0..m.inputs().len()).collect();
    let shallow = TreeLimits {
        max_depth: Some(2),
        min_leaf: 1,
    };
    let own = Recipe::tree(SetMethod::Greedy, shallow);
    let nested = Nested {
        recipes: Recipe::and_derived(&[own]),
        derived: vec![Derived::Product {
            name: "mn".into(),
            terms: vec![(0, 1), (1, 1)],
        }],
        ..Nested::default()
    };
    let (s, choice) = nested.fit(&m, &train, 2).unwrap();
    assert!(choice.recipe.derived, "{:?}", choice.scores);
    assert!(choice.scores[0].1.geomean > 0.99, "{:?}", choice.scores);
    assert!(choice.scores[1].1.geomean < 0.95, "{:?}", choice.scores);
    assert_eq!(s.tree.shape(), (1, 2), "{:?}", s.tree);
    // Outside the grid, by the product.
    let c = |x: f64, y: f64| s.choose(&[x, y]).and_then(|c| c.get("C")).cloned();
    assert_eq!(c(1e6, 1e-3), Some(Value::Int(0)));
    assert_eq!(c(2.0, 1e5), Some(Value::Int(1)));
    let src = s.rust("fp").unwrap();
    assert!(
        src.contains("let __tune_mn = || -> f64 { { let v: f64 = m * n;"),
        "{src}"
    );
    assert!(src.contains("if __tune_mn() <= "), "{src}");
}

#[test]
fn model_recipes_are_chosen_where_a_shallow_tree_cannot_follow_the_boundary() {
    // The boundary `m n = 2^14` is a line on the log sizes: a model per configuration
    // over them follows it; a depth-2 tree over `m` and `n` cannot.
    let m = product_boundary();
    let train: Vec<usize> = (0..m.inputs().len()).collect();
    let shallow = Recipe::tree(
        SetMethod::Greedy,
        TreeLimits {
            max_depth: Some(2),
            min_leaf: 1,
        },
    );
    let a = Recipe {
        limits: TreeLimits::A,
        ..shallow
    };
    // Models are added once per tree-A recipe without a guard, for each basis.
    let recipes = Recipe::and_models(&[shallow, a, Recipe { guard: true, ..a }]);
    assert_eq!(recipes.len(), 5);
    assert_eq!(recipes[3].objective, Objective::Model(Basis::Linear));
    assert_eq!(recipes[4].name(), "greedy, quadratic model");
    // Models ship only where asked (select12: the dispatch is a tree).
    let nested = Nested {
        recipes: vec![shallow, recipes[3]],
        models_ship: true,
        ..Nested::default()
    };
    let (s, choice) = nested.fit(&m, &train, 2).unwrap();
    assert_eq!(choice.recipe, recipes[3], "{:?}", choice.scores);
    assert_eq!(choice.inner, choice.scores[0].1);
    assert!(choice.scores[0].1.geomean > choice.scores[1].1.geomean + 0.02);
    assert!(matches!(s.tree, Node::Models(_)), "{:?}", s.tree);
    let c = |x: f64, y: f64| s.choose(&[x, y]).and_then(|c| c.get("C")).cloned();
    assert_eq!(c(4.0, 8.0), Some(Value::Int(0)));
    assert_eq!(c(8192.0, 4096.0), Some(Value::Int(1)));
    let src = s.rust("fp").unwrap();
    assert!(src.contains("if __tune_s1 > __tune_best.1"), "{src}");
}

#[test]
fn a_tree_ships_where_a_model_recipe_scores_best_inside() {
    // The data of the test above, where the model's inner score is the best: by default
    // the model is scored and reported, but the best tree ships (the dispatch
    // is a tree; select11's cuda11/seed-1 shipped a model).
    let m = product_boundary();
    let train: Vec<usize> = (0..m.inputs().len()).collect();
    let shallow = Recipe::tree(
        SetMethod::Greedy,
        TreeLimits {
            max_depth: Some(2),
            min_leaf: 1,
        },
    );
    let model = Recipe {
        objective: Objective::Model(Basis::Linear),
        limits: TreeLimits::A,
        ..shallow
    };
    let nested = Nested {
        recipes: vec![model, shallow],
        ..Nested::default()
    };
    assert!(!nested.ships(&model) && nested.ships(&shallow));
    let (s, choice) = nested.fit(&m, &train, 2).unwrap();
    assert_eq!(choice.scores[0].0, model, "{:?}", choice.scores);
    assert!(choice.scores[0].1.geomean > choice.scores[1].1.geomean + 0.02);
    assert_eq!(choice.recipe, shallow);
    assert_eq!(choice.inner, choice.scores[1].1);
    assert!(!matches!(s.tree, Node::Models(_)), "{:?}", s.tree);
    assert!(s.rust("fp").unwrap().contains("decision tree"));
    // Only models: nothing can ship.
    let models = Nested {
        recipes: vec![model],
        ..Nested::default()
    };
    assert!(models.fit(&m, &train, 2).is_err());
    // A scheme choice nests the same rule: every candidate ships a tree.
    let choice = crate::select::SchemeChoice {
        schemes: vec![("with a model".into(), nested)],
    };
    let (s, c, _) = choice.fit(&m, &train, 2).unwrap();
    assert_eq!(c.recipe, shallow);
    assert!(!matches!(s.tree, Node::Models(_)));
}

#[test]
fn group_folds_leave_each_group_out() {
    let mut m = product_boundary();
    // One input in two groups.
    let shared = m.add_input(Input {
        key: "m=3,n=3".into(),
        features: vec![3.0, 3.0],
        groups: vec!["a".into(), "b".into()],
    });
    let train: Vec<usize> = (0..m.inputs().len()).collect();
    let nested = Nested {
        by_group: true,
        ..Nested::default()
    };
    let (folds, grouped) = nested.folds_of(&m, &train);
    assert!(grouped);
    assert_eq!(folds.len(), 3);
    let groups = |i: usize| m.inputs()[i].groups.clone();
    for (g, (fit, held)) in ["a", "b", "c"].iter().zip(&folds) {
        assert!(
            fit.iter().all(|&i| !groups(i).contains(&g.to_string())),
            "{g}"
        );
        assert!(
            held.iter().all(|&i| groups(i).contains(&g.to_string())),
            "{g}"
        );
    }
    let scored: usize = folds.iter().map(|(_, h)| h.len()).sum();
    assert_eq!(scored, train.len(), "every input scored once");
    assert!(folds[0].1.contains(&shared) && !folds[1].1.contains(&shared));
    assert!(
        !folds[1].0.contains(&shared),
        "never fitted on while its group is out"
    );
    // One group only: random folds.
    let one = m.filtered(|_, _| true);
    let a: Vec<usize> = train
        .iter()
        .copied()
        .filter(|&i| groups(i) == ["c".to_string()])
        .collect();
    let (random, grouped) = nested.folds_of(&one, &a);
    assert_eq!((random.len(), grouped), (5, false));
    // Group folds need no more inputs than groups.
    let few: Vec<usize> = [0, 1, 2].into_iter().chain([shared]).collect();
    assert!(nested.choose(&m, &few, 2).is_ok());
    assert!(Nested::default().choose(&m, &few[..3], 2).is_err());
}

#[test]
fn an_unmeasured_pick_counts_against_its_recipe() {
    // A (cost 1) and W (cost 4) measured everywhere; B (cost 0.5) only on 3 inputs of
    // 5, where it wins: Top-N's one configuration is B, greedy's is A.
    let mut m = Matrix::new("t", "d", vec!["n".into()]);
    for c in 0..3 {
        m.add_config(Named(vec![("C".into(), Value::Int(c))]));
    }
    for i in 0..60 {
        let row = m.add_input(Input {
            key: format!("n={i}"),
            features: vec![i as f64],
            groups: vec![],
        });
        m.set(row, 0, 1.0).unwrap();
        m.set(row, 1, 4.0).unwrap();
        if i % 5 < 3 {
            m.set(row, 2, 0.5).unwrap();
        }
    }
    let recipe = |method| Recipe::tree(method, TreeLimits::A);
    let nested = Nested {
        recipes: vec![recipe(SetMethod::TopN), recipe(SetMethod::Greedy)],
        ..Nested::default()
    };
    let train: Vec<usize> = (0..60).collect();
    let choice = nested.choose(&m, &train, 1).unwrap();
    // Scoring only B's measured inputs gave Top-N 100% and the choice; each of the 24
    // inputs without B counts as its worst measured (W, 25%): 0.25^0.4 = 57%, below
    // greedy's 0.5^0.6 = 66%.
    assert_eq!(
        choice.recipe.method,
        SetMethod::Greedy,
        "{:?}",
        choice.scores
    );
    let top = &choice.scores[1].1;
    assert_eq!((top.scored, top.unmeasured), (60, 24), "{top:?}");
    assert!((top.geomean - 0.25f64.powf(0.4)).abs() < 1e-9, "{top:?}");
    assert!((choice.scores[0].1.geomean - 0.5f64.powf(0.6)).abs() < 1e-9);
}

/// Three groups along `n`: `a` (0-19), `b` (20-39), `c` (40-59). X wins `a` by 20%
/// and `c` by 3 times, Y wins `b` by 4%: X is the robust one, and a tree fitted on
/// two groups extrapolates the wrong label into the third where it lies beyond them.
fn three_networks() -> Matrix {
    let mut m = Matrix::new("t", "d", vec!["n".into()]);
    for c in 0..2 {
        m.add_config(Named(vec![("C".into(), Value::Int(c))]));
    }
    for n in 0..60 {
        let i = m.add_input(Input {
            key: format!("n={n}"),
            features: vec![f64::from(n)],
            groups: vec![["a", "b", "c"][n as usize / 20].into()],
        });
        let (x, y) = match n {
            0..20 => (1.0, 1.2),
            20..40 => (1.04, 1.0),
            _ => (1.0, 3.0),
        };
        m.set(i, 0, x).unwrap();
        m.set(i, 1, y).unwrap();
    }
    m
}

#[test]
fn a_range_guard_is_chosen_where_the_left_out_group_lies_beyond_the_others() {
    let m = three_networks();
    let train: Vec<usize> = (0..60).collect();
    let plain = Recipe::tree(SetMethod::Greedy, TreeLimits::A);
    let nested = Nested {
        recipes: Recipe::and_guarded(&[plain]),
        by_group: true,
        ..Nested::default()
    };
    let (s, choice) = nested.fit(&m, &train, 2).unwrap();
    // Left out, `a` and `c` lie outside the others' range: unguarded, the tree runs
    // Y there (83% and 33%); guarded, X (100%).
    assert!(choice.recipe.guard, "{:?}", choice.scores);
    assert!(
        (choice.scores[0].1.geomean - 1.04f64.powf(-1.0 / 3.0)).abs() < 1e-9,
        "{:?}",
        choice.scores
    );
    assert!(choice.scores[1].1.geomean < 0.7, "{:?}", choice.scores);
    assert_eq!(choice.recipe.name(), "greedy, tree A, range guard");
    let g = s.guard.clone().unwrap();
    assert_eq!((g.ranges, g.choice), (vec![(0.0, 59.0)], 0));
    let c = |n: f64| s.choose(&[n]).and_then(|c| c.get("C")).cloned();
    assert_eq!(c(30.0), Some(Value::Int(1)));
    assert_eq!(c(500.0), Some(Value::Int(0)));
    assert_eq!(c(-1.0), Some(Value::Int(0)));
    // Cost trees enter the same way.
    let both = Nested {
        recipes: Recipe::and_cost(&[plain]),
        ..nested
    };
    let choice = both.choose(&m, &train, 2).unwrap();
    assert_eq!(choice.scores.len(), 2);
    assert!(choice
        .scores
        .iter()
        .any(|(r, _)| r.objective == Objective::GeoMean && r.name() == "greedy, cost tree A"));
}

#[test]
fn too_few_inputs_for_the_folds_is_an_error() {
    let m = staircase();
    assert!(Nested::default().choose(&m, &[0, 1, 2], 2).is_err());
}

#[test]
fn tile_fit_recipes_are_chosen_where_the_best_tile_alternates_with_the_size() {
    // A 64-row tile does a row in 0.85 of a 32-row one's time but pads m to 64s.
    let mut m = Matrix::new("t", "d", vec!["m".into()]);
    for t in [32, 64] {
        m.add_config(Named(vec![("tile".into(), Value::Int(t))]));
    }
    for x in (32u32..=1024).step_by(32) {
        let i = m.add_input(Input {
            key: format!("m={x}"),
            features: vec![f64::from(x)],
            groups: vec![],
        });
        for (c, t) in [32u32, 64].into_iter().enumerate() {
            let per_row = if t == 64 { 0.85 } else { 1.0 };
            m.set(i, c, f64::from(x.div_ceil(t) * t) * per_row).unwrap();
        }
    }
    // Depth 2: too shallow to follow three alternations on `m`, enough on a fit.
    let own = Recipe::tree(
        SetMethod::Greedy,
        TreeLimits {
            max_depth: Some(2),
            min_leaf: 1,
        },
    );
    let nested = Nested {
        recipes: Recipe::and_fit(&[own]),
        tilings: vec![Tiling {
            dims: vec![(0, "tile".into())],
        }],
        folds: 4,
        ..Nested::default()
    };
    let train: Vec<usize> = (0..m.inputs().len()).collect();
    let (s, choice) = nested.fit(&m, &train, 2).unwrap();
    assert!(choice.recipe.fit, "{:?}", choice.scores);
    assert!(choice.scores[0].1.geomean > choice.scores[1].1.geomean);
    assert!(s.derived.iter().any(|d| d.name() == "fit_m64"));
    // Without tilings a fit recipe reads nothing more than its plain twin.
    let bare = Nested {
        tilings: Vec::new(),
        ..nested
    };
    let c = bare.choose(&m, &train, 2).unwrap();
    assert_eq!(c.scores[0].1.geomean, c.scores[1].1.geomean);
}
