//! The measuring plan of examples/select_gemm (issue 14): the label step keeps each
//! training set's tuning run (searches, cross-evaluation, its label cells) within 15% of
//! the grid, labels whole columns of the candidate sets' configurations on the training
//! shapes only, and the scoring cells planned on the labelled matrices score every row of
//! every split's tables.
#![cfg(feature = "select")]
#![allow(clippy::unwrap_used)]

#[allow(dead_code, unused_imports)]
#[path = "../examples/select_gemm/pipeline/mod.rs"]
mod pipeline;

use std::collections::HashSet;

use pipeline::{
    label_budget, label_step, labelled, set_budget, training_sets, verify, BUDGET, TUNE_SHARE,
};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tune::results::Named;
use tune::select::{
    evaluate, group_splits, random_split, tune_inputs, Classifier, Input, Matrix, Plan, SetMethod,
    Split,
};
use tune::Value;

const CONFIGS: i64 = 30;

fn cfg(c: i64) -> Named<Value> {
    Named(vec![("C".into(), Value::Int(c))])
}

/// 30 shapes of three networks over sizes 2^4..2^15; configuration `c` suits the sizes
/// near `2^(4 + c * 11 / 30)`, with seeded noise: families of shapes with their own
/// strong configurations, as the GPU matrices have.
fn shapes() -> Vec<(Input, Vec<f64>)> {
    let mut rng = SmallRng::seed_from_u64(7);
    (0..30)
        .map(|i| {
            let size = 4.0 + 11.0 * f64::from(i) / 29.0;
            let network = ["mobilenet", "resnet", "vgg"][i as usize % 3];
            let costs = (0..CONFIGS)
                .map(|c| {
                    let fits = 4.0 + c as f64 * 11.0 / CONFIGS as f64;
                    1.0 + 0.4 * (size - fits).abs() + rng.random_range(0.0..0.2)
                })
                .collect();
            let n = size.exp2().round();
            let input = Input {
                key: format!("m={n},n=64,k=32,batch=1,ta=false,tb=false"),
                features: vec![n, 64.0, 32.0, 1.0, 0.0, 0.0],
                groups: vec![network.to_string()],
            };
            (input, costs)
        })
        .collect()
}

fn splits(m: &Matrix) -> Vec<Split> {
    let mut s = vec![random_split(m, 0.7, 1)];
    s.extend(group_splits(m));
    s
}

#[test]
fn each_training_set_labels_whole_columns_within_the_budget_and_every_row_is_scored() {
    let grid = shapes();
    let cost = |input: &Input, config: &Named<Value>| -> Option<f64> {
        let Some(Value::Int(c)) = config.get("C") else {
            return None;
        };
        let (_, costs) = grid.iter().find(|(i, _)| i.key == input.key)?;
        costs.get(*c as usize).copied()
    };
    let mut rng = SmallRng::seed_from_u64(1);
    let mut order: Vec<i64> = (0..CONFIGS).collect();
    let (m, stats) = tune_inputs(
        Matrix::new(
            "t",
            "d",
            pipeline::Shape::FEATURES.map(String::from).to_vec(),
        ),
        grid.iter().map(|(i, _)| i.clone()).collect(),
        Plan {
            budget: TUNE_SHARE,
            ..Plan::default()
        },
        |input| {
            order.shuffle(&mut rng);
            Ok(order[..2]
                .iter()
                .map(|&c| (cfg(c), cost(input, &cfg(c)).unwrap()))
                .collect())
        },
        |input, config| cost(input, config),
    )
    .unwrap();
    assert!(stats.anchored + stats.promising > 0, "{stats:?}");
    let budget = label_budget(&stats, BUDGET);
    let tuning = stats.searched + stats.anchored + stats.promising + stats.failed;
    assert!(budget > 0 && tuning + budget <= (BUDGET * stats.grid as f64) as usize);
    // select7's re-measuring takes its cells out of each set's label cells (none left
    // where they outnumber them); this test runs select6's plan (no reserve).
    assert_eq!(set_budget(100, 4, 20), 20);
    assert_eq!(set_budget(10, 4, 20), 0);
    assert_eq!(set_budget(budget, 0, 30), budget);

    let mut truth = m.clone();
    let trains = training_sets(&m);
    assert_eq!(
        trains.len(),
        splits(&m).len() + 1,
        "each split's and all shapes'"
    );
    let (measured, planned) =
        label_step(&m, &mut truth, &trains, (budget, 0), cost, || true).unwrap();
    assert!(
        measured > 0 && measured <= planned,
        "{measured} of {planned}"
    );

    for train in &trains {
        let (lab, gained, wanted) = labelled(&m, &truth, train, budget).unwrap();
        assert!(
            gained > 0 && gained == wanted && wanted <= budget,
            "{gained} {wanted}"
        );
        let added: Vec<(usize, usize)> = (0..m.inputs().len())
            .flat_map(|i| (0..m.configs().len()).map(move |c| (i, c)))
            .filter(|&(i, c)| m.get(i, c).is_none() && lab.get(i, c).is_some())
            .collect();
        assert_eq!(added.len(), gained);
        // On the training shapes only, and whole columns: a configuration labelled on one
        // training shape is there on every training shape.
        let train_set: HashSet<usize> = train.iter().copied().collect();
        for &(i, c) in &added {
            assert!(train_set.contains(&i), "label cell on a test shape: {i}");
            assert!(train.iter().all(|&j| lab.get(j, c).is_some()), "column {c}");
        }
    }

    // The scoring cells, planned on each split's labelled matrix: every method x
    // classifier x k of every split's tables, and the baselines, scored.
    let (done, planned) = verify(&m, &mut truth, (budget, 0), cost).unwrap();
    assert_eq!(done, planned);
    let methods = [
        SetMethod::TopN,
        SetMethod::KMeans(tune::select::Normalisation::Standard),
        SetMethod::Greedy,
    ];
    for split in splits(&m) {
        let (lab, _, _) = labelled(&m, &truth, &split.train, budget).unwrap();
        let r = evaluate(&lab, &truth, &split, &methods, &Classifier::ALL, &[4]).unwrap();
        for row in &r.rows {
            assert_eq!(row.score.unmeasured, 0, "{} {row:?}", split.name);
            assert_eq!(row.score.scored, split.test.len());
        }
        assert_eq!(r.single_best.unmeasured + r.nearest_best.unmeasured, 0);
    }
}
