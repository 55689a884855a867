//! Tests of the random-forest surrogate.
#![allow(clippy::unwrap_used)]
use super::*;
use crate::param::Param;
use crate::space::SpaceBuilder;

/// A constrained space of 3 parameters (X * Y <= 64), cost with one optimum.
fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::values("X", [1, 2, 4, 8, 16, 32, 64]))
        .param(
            Param::<u32>::values("Y", [1, 2, 4, 8, 16, 32, 64])
                .constraint(&[0], |b| b.get::<u32>(0) * b.get::<u32>(1) <= 64),
        )
        .param(Param::<u32>::range("Z", 0..20))
        .build()
        .unwrap()
}

fn cost(space: &Space, i: u128) -> Option<f64> {
    let c = space.get(i)?;
    let (x, y, z) = (c.get::<u32>(0), c.get::<u32>(1), c.get::<u32>(2));
    if z == 13 {
        return None; // a failing value
    }
    let lx = (x as f64).log2() - 3.0;
    let ly = (y as f64).log2() - 2.0;
    let lz = z as f64 - 11.0;
    Some(1.0 + lx * lx + ly * ly + 0.1 * lz * lz)
}

fn run(mut t: Surrogate, space: &Space, seed: u64, budget: usize, batch: usize) -> Vec<u128> {
    t.budget(budget as u64);
    t.init(space, seed);
    let mut out = Vec::new();
    while out.len() < budget {
        let ask = t.ask(space, batch.min(budget - out.len()));
        if ask.is_empty() {
            break;
        }
        for i in ask {
            t.tell(space, i, cost(space, i));
            out.push(i);
        }
    }
    out
}

#[test]
fn finds_the_optimum_of_a_small_space_and_respects_its_constraints() {
    let space = space();
    let opt = (0..space.len())
        .filter_map(|i| cost(&space, i).map(|c| (i, c)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    for (seed, exhaustive) in [(1, 20_000), (2, 0)] {
        let t = Surrogate::new().exhaustive_up_to(exhaustive);
        let asked = run(t, &space, seed, 40, 1);
        assert!(asked.iter().all(|&i| i < space.len()));
        assert!(asked.contains(&opt.0), "seed {seed}: optimum not found");
    }
}

#[test]
fn proposals_are_distinct_and_the_budget_exact() {
    let space = space();
    for batch in [1, 3] {
        let asked = run(Surrogate::new(), &space, 4, 57, batch);
        assert_eq!(asked.len(), 57);
        let set: HashSet<u128> = asked.iter().copied().collect();
        assert_eq!(set.len(), 57, "a configuration proposed twice");
    }
    // Asked for more than the space holds: every configuration once, then nothing.
    let all = run(Surrogate::new(), &space, 5, space.len() as usize + 10, 4);
    assert_eq!(all.len() as u128, space.len());
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let space = space();
    let a = run(Surrogate::new(), &space, 11, 30, 2);
    let b = run(Surrogate::new(), &space, 11, 30, 2);
    let c = run(Surrogate::new(), &space, 12, 30, 2);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn a_spread_batch_holds_no_two_neighbours() {
    let space = space();
    let mut t = Surrogate::new().initial(6).batch_spread(2);
    t.budget(60);
    t.init(&space, 5);
    for i in t.ask(&space, 6) {
        t.tell(&space, i, cost(&space, i));
    }
    for _ in 0..5 {
        let batch = t.ask(&space, 3);
        assert_eq!(batch.len(), 3);
        let raws: Vec<Vec<u64>> = batch
            .iter()
            .map(|&i| space.get(i).unwrap().raw().to_vec())
            .collect();
        for (x, a) in raws.iter().enumerate() {
            for b in &raws[x + 1..] {
                let differ = a.iter().zip(b).filter(|(p, q)| p != q).count();
                assert!(differ >= 2, "{a:?} and {b:?} in one batch");
            }
        }
        for i in batch {
            t.tell(&space, i, cost(&space, i));
        }
    }
}

#[test]
fn failures_modelled_apart_are_proposed_less() {
    // Z = 13 fails; with the worst-cost stand-in, leaves around it look uncertain.
    let space = space();
    let failed = |feas: bool| -> usize {
        (0..6)
            .map(|seed| {
                let t = Surrogate::new().initial(5).feasibility(feas);
                let asked = run(t, &space, seed, 60, 2);
                asked.iter().filter(|&&i| cost(&space, i).is_none()).count()
            })
            .sum()
    };
    let (on, off) = (failed(true), failed(false));
    assert!(
        on < off,
        "failures proposed: {on} modelled apart, {off} as the worst cost"
    );
}

#[test]
fn a_local_share_of_one_proposes_neighbours_of_the_incumbent() {
    let space = space();
    let mut t = Surrogate::new().initial(5).local_share(1.0);
    t.budget(40);
    t.init(&space, 9);
    let mut best: Option<(u128, f64)> = None;
    for k in 0..40 {
        let i = t.ask(&space, 1)[0];
        if k >= 5 {
            let (b, _) = best.unwrap();
            let (x, y) = (space.get(i).unwrap(), space.get(b).unwrap());
            let differ = x.raw().iter().zip(y.raw()).filter(|(p, q)| p != q).count();
            assert_eq!(differ, 1, "proposal {k} is not a neighbour of the best");
        }
        let c = cost(&space, i);
        if let Some(c) = c {
            if best.is_none_or(|(_, b)| c < b) {
                best = Some((i, c));
            }
        }
        t.tell(&space, i, c);
    }
}

#[test]
fn the_start_design_spreads_over_the_space() {
    let space = space();
    let mut t = Surrogate::new().initial(6);
    t.init(&space, 3);
    let first = t.ask(&space, 6);
    let zs: HashSet<u32> = first
        .iter()
        .map(|&i| space.get(i).unwrap().get::<u32>(2))
        .collect();
    // Six random draws of Z collide often; a max-min design rarely does.
    assert!(zs.len() >= 5, "{zs:?}");
}

#[test]
fn a_prior_mean_that_fits_finds_the_optimum_after_the_start() {
    let space = space();
    let opt = (0..space.len())
        .filter_map(|i| cost(&space, i).map(|c| (i, c)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap()
        .0;
    // A prior that ranks the space as the device does (what a good source says).
    let prior: HashMap<u128, f64> = (0..space.len())
        .filter_map(|i| cost(&space, i).map(|c| (i, 0.5 * c.ln() + 1.0)))
        .collect();
    for seed in 0..4 {
        // Failures apart, so that the line is fitted on valid measurements only.
        let t = Surrogate::new()
            .initial(4)
            .feasibility(true)
            .prior_feature(Arc::new(prior.clone()), 10.0)
            .prior_mean(true);
        let asked = run(t, &space, seed, 7, 1);
        assert!(asked.contains(&opt), "seed {seed}: {asked:?}");
    }
}

#[test]
fn thompson_sampling_and_ranks_find_the_optimum_with_distinct_proposals() {
    let space = space();
    let opt = (0..space.len())
        .filter_map(|i| cost(&space, i).map(|c| (i, c)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap()
        .0;
    for (name, t) in [
        ("thompson", Surrogate::new().thompson(true)),
        ("ranks", Surrogate::new().rank_costs(true)),
    ] {
        for (seed, batch) in [(1, 1), (2, 3)] {
            let asked = run(t.clone(), &space, seed, 45, batch);
            let set: HashSet<u128> = asked.iter().copied().collect();
            assert_eq!(set.len(), 45, "{name}: a configuration proposed twice");
            assert!(
                asked.contains(&opt),
                "{name}, seed {seed}: optimum not found"
            );
        }
    }
}

#[test]
fn pooled_rows_that_rank_the_device_lead_to_its_optimum() {
    let space = space();
    let opt = (0..space.len())
        .filter_map(|i| cost(&space, i).map(|c| (i, c)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    // Another device that ranks the space as this one does, as gaps from its optimum.
    let rows: Vec<(u128, f64)> = (0..space.len())
        .filter_map(|i| cost(&space, i).map(|c| (i, (c / opt.1).ln())))
        .collect();
    for seed in 0..4 {
        let t = Surrogate::new().initial(3).pool(rows.clone(), 10, false);
        let asked = run(t, &space, seed, 8, 1);
        assert!(asked.contains(&opt.0), "seed {seed}: {asked:?}");
    }
    // Without the pool, 8 evaluations rarely find it.
    let found = (0..4)
        .filter(|&seed| run(Surrogate::new().initial(3), &space, seed, 8, 1).contains(&opt.0))
        .count();
    assert!(found < 4, "found without the pool in {found} of 4 seeds");
}

/// Sizes whose speed follows their product and ratio: threads per block `X * Y` best at
/// 128, the block's shape `X / Y` best at 8, plus a third parameter of small effect.
fn diagonal() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::values(
            "X",
            [1, 2, 4, 8, 16, 32, 64, 128, 256],
        ))
        .param(Param::<u32>::values(
            "Y",
            [1, 2, 4, 8, 16, 32, 64, 128, 256],
        ))
        .param(Param::<u32>::range("Z", 0..12))
        .param(Param::<bool>::values("M", [false, true]))
        .param(Param::<u32>::values("one", [3]))
        .build()
        .unwrap()
}

fn diagonal_cost(space: &Space, i: u128) -> Option<f64> {
    let c = space.get(i)?;
    let (x, y, z) = (
        c.get::<u32>(0) as f64,
        c.get::<u32>(1) as f64,
        c.get::<u32>(2),
    );
    let threads = ((x * y).log2() - 7.0).abs();
    let shape = ((x / y).log2() - 3.0).abs();
    Some(1.0 + 0.5 * threads + 0.5 * shape + 0.01 * f64::from(z))
}

#[test]
fn interactions_are_the_log_product_and_ratio_of_size_parameters() {
    let space = diagonal();
    let mut t = Surrogate::new().interactions(true);
    t.init(&space, 0);
    // Only X and Y are sizes with more than one value: Z's range starts at 0, M is a flag.
    assert_eq!(t.pairs, vec![(0, 1)]);
    let cfg = space.get(space.len() - 1).unwrap();
    let f = t.features(&space, &cfg);
    let (x, y) = (f64::from(cfg.get::<u32>(0)), f64::from(cfg.get::<u32>(1)));
    assert_eq!(f.len(), 5 + 2);
    assert!((f[5] - (x * y).ln()).abs() < 1e-12);
    assert!((f[6] - (x / y).ln()).abs() < 1e-12);
    let mut plain = Surrogate::new();
    plain.init(&space, 0);
    assert_eq!(plain.features(&space, &cfg).len(), 5);
}

#[test]
fn interactions_find_an_optimum_set_by_a_product_sooner() {
    let space = diagonal();
    let opt = (0..space.len())
        .filter_map(|i| diagonal_cost(&space, i).map(|c| (i, c)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    // Evaluations until the optimum is measured (the budget when it is not), 10 seeds.
    let until = |on: bool| -> usize {
        (0..10)
            .map(|seed| {
                let mut t = Surrogate::new().interactions(on);
                t.budget(60);
                t.init(&space, seed);
                let mut n = 0;
                while n < 60 {
                    let ask = t.ask(&space, 2);
                    for i in ask {
                        n += 1;
                        if i == opt.0 {
                            return n;
                        }
                        t.tell(&space, i, diagonal_cost(&space, i));
                    }
                }
                60
            })
            .sum()
    };
    let (with, without) = (until(true), until(false));
    assert!(with < without, "with {with}, without {without}");
}

#[test]
fn extra_trees_find_the_optimum_with_distinct_proposals() {
    let space = space();
    let opt = (0..space.len())
        .filter_map(|i| cost(&space, i).map(|c| (i, c)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap()
        .0;
    // 20 seeds, batches of 3: the best cuts find it in 18 (seen when this was written).
    let mut found = 0;
    for seed in 0..20 {
        let asked = run(Surrogate::new().extra_trees(true), &space, seed, 45, 3);
        let set: HashSet<u128> = asked.iter().copied().collect();
        assert_eq!(set.len(), 45, "seed {seed}: a configuration proposed twice");
        found += usize::from(asked.contains(&opt));
    }
    assert!(found >= 15, "found in {found} of 20 runs");
}

/// A size that GPUs reward when aligned: X in 16, 32, ... 256 is fast at multiples of 64
/// and slow in between; Y has its optimum in the middle (3 of 1 to 8).
fn comb() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::values("X", (1..=16).map(|k| 16 * k)))
        .param(Param::<u32>::range("Y", 1..9))
        .build()
        .unwrap()
}

fn comb_cost(space: &Space, i: u128) -> Option<f64> {
    let c = space.get(i)?;
    let (x, y) = (c.get::<u32>(0), c.get::<u32>(1));
    let aligned = if x % 64 == 0 { 1.0 } else { 2.0 };
    let dy = y as f64 - 3.0;
    Some(aligned * (1.0 + 0.1 * dy * dy) * (1.0 + 0.01 * (x as f64).log2()))
}

#[test]
fn alignment_is_the_power_of_two_dividing_a_size() {
    assert_eq!(alignment(48.0), 4);
    assert_eq!(alignment(64.0), 6);
    assert_eq!(alignment(1.0), 0);
    assert_eq!(alignment(2.5), 0);
    assert_eq!(alignment(-8.0), 0);
    let space = comb();
    // X (16 to 256 in steps of 16) gets the feature; Y (1 to 8) too: 3, 5, 6, 7 are not
    // powers of two. All powers of two, or two values: nothing the value does not say.
    assert!(space.params().iter().all(aligns));
    let pow2 = SpaceBuilder::new()
        .param(Param::<u32>::values("P", [1, 2, 4, 8]))
        .param(Param::<u32>::values("B", [3, 5]))
        .build()
        .unwrap();
    assert!(!pow2.params().iter().any(aligns));
    let mut t = Surrogate::new().alignment(true);
    t.init(&space, 0);
    let i = space
        .iter()
        .position(|c| c.get::<u32>(0) == 96 && c.get::<u32>(1) == 4);
    let f = t.features_of(&space, i.unwrap() as u128).unwrap();
    // log X, log Y, then the alignments of 96 (5) and 4 (2).
    assert_eq!(f.len(), 4);
    assert_eq!(&f[2..], &[5.0, 2.0]);
}

#[test]
fn alignment_finds_an_optimum_on_a_comb_sooner() {
    let space = comb();
    let opt = (0..space.len())
        .filter_map(|i| comb_cost(&space, i).map(|c| (i, c)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap()
        .0;
    let found = |align: bool| -> usize {
        (0..20)
            .filter(|&seed| {
                let mut t = Surrogate::new().initial(8).alignment(align);
                t.budget(24);
                t.init(&space, seed);
                let mut asked = Vec::new();
                while asked.len() < 24 {
                    for i in t.ask(&space, 2) {
                        t.tell(&space, i, comb_cost(&space, i));
                        asked.push(i);
                    }
                }
                asked.contains(&opt)
            })
            .count()
    };
    let (with, without) = (found(true), found(false));
    eprintln!("optimum within 24 of 128: {with} of 20 seeds with alignment, {without} without");
    assert!(with > without, "{with} with alignment, {without} without");
}

#[test]
fn a_balanced_start_covers_every_value_where_max_min_takes_the_extremes() {
    let space = comb();
    let start = |design: StartDesign, seed: u64| -> Vec<u32> {
        let mut t = Surrogate::new().initial(16).start_design(design);
        t.init(&space, seed);
        let xs: Vec<u32> = t
            .ask(&space, 16)
            .iter()
            .map(|&i| space.get(i).unwrap().get::<u32>(0))
            .collect();
        assert_eq!(xs.len(), 16);
        xs
    };
    for seed in 0..5 {
        // 16 configurations, 16 values of X: each once.
        let mut b = start(StartDesign::Balanced, seed);
        b.sort_unstable();
        b.dedup();
        assert_eq!(b.len(), 16, "seed {seed}: {b:?}");
        // Max-min: the extremes (16 or 256) far more often than 2 in 16.
        let m = start(StartDesign::MaxMin, seed);
        let ends = m.iter().filter(|&&x| x == 16 || x == 256).count();
        assert!(ends >= 5, "seed {seed}: {m:?}");
        let r = start(StartDesign::Random, seed);
        let set: HashSet<u32> = r.iter().copied().collect();
        assert!(set.len() > 4, "seed {seed}: {r:?}");
    }
}
