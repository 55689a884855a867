//! Behaviour of the built-in search techniques: validity, reproducibility, coverage, failures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;

use tune_runtime::param::Param;
use tune_runtime::search::{technique_by_name, Technique, TechniqueKind};
use tune_runtime::space::{Space, SpaceBuilder};
use tune_runtime::Error;

/// A constrained space: X in 1..=16, Y in 1..=16 with X * Y <= 64, Z a bool.
fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::range("X", 1..=16))
        .param(
            Param::<u32>::range("Y", 1..=16)
                .constraint(&[0], |b| b.get::<u32>(0) * b.get::<u32>(1) <= 64),
        )
        .param(Param::bool("Z"))
        .build()
        .unwrap()
}

/// A cost with a unique optimum at X=4, Y=8, Z=true; X=13 fails.
fn cost(space: &Space, i: u128) -> Option<f64> {
    let c = space.get(i).unwrap();
    let (x, y, z) = (
        c.get::<u32>(0) as f64,
        c.get::<u32>(1) as f64,
        c.get::<bool>(2),
    );
    if x == 13.0 {
        return None;
    }
    Some(1.0 + (x - 4.0).powi(2) + (y - 8.0).powi(2) + if z { 0.0 } else { 3.0 })
}

/// Asks one at a time until the technique is done or `limit` proposals; returns them.
fn drive(t: &mut dyn Technique, space: &Space, seed: u64, limit: usize, batch: usize) -> Vec<u128> {
    t.init(space, seed);
    let mut out = Vec::new();
    while out.len() < limit {
        let b = t.ask(space, batch);
        if b.is_empty() {
            break;
        }
        assert!(b.len() <= batch);
        for i in b {
            t.tell(space, i, cost(space, i));
            out.push(i);
        }
    }
    out
}

#[test]
fn every_name_builds_and_unknown_names_list_the_valid_ones() {
    for k in TechniqueKind::ALL {
        let t = technique_by_name(k.name()).unwrap();
        assert_eq!(t.name(), k.name());
        assert_eq!(k.name().parse::<TechniqueKind>().unwrap(), k);
    }
    assert_eq!(
        "simulated_annealing".parse::<TechniqueKind>().unwrap(),
        TechniqueKind::Annealing
    );
    let Err(e) = technique_by_name("anealing") else {
        panic!("accepted a typo")
    };
    assert!(matches!(e, Error::UnknownTechnique { .. }));
    let msg = e.to_string();
    for name in [
        "exhaustive",
        "random",
        "annealing",
        "pso",
        "mcmc",
        "genetic",
        "diff_evo",
        "bandit",
        "bayes",
    ] {
        assert!(msg.contains(name), "{msg}");
    }
}

#[test]
fn same_seed_same_sequence_and_other_seed_differs() {
    let space = space();
    for k in TechniqueKind::ALL {
        let a = drive(&mut k.build(), &space, 42, 60, 1);
        let b = drive(&mut k.build(), &space, 42, 60, 1);
        assert_eq!(a, b, "{k} is not reproducible");
        if !matches!(k, TechniqueKind::Exhaustive) {
            let c = drive(&mut k.build(), &space, 43, 60, 1);
            assert_ne!(a, c, "{k} ignores its seed");
        }
    }
}

#[test]
fn proposals_are_valid_distinct_and_cover_the_space_then_stop() {
    let space = space();
    let len = space.len() as usize;
    for k in TechniqueKind::ALL {
        for batch in [1, 5] {
            let got = drive(&mut k.build(), &space, 7, 3 * len, batch);
            let set: HashSet<u128> = got.iter().copied().collect();
            assert_eq!(set.len(), got.len(), "{k} proposed an index twice");
            assert!(
                got.iter().all(|&i| i < space.len()),
                "{k} proposed an invalid index"
            );
            assert_eq!(
                set.len(),
                len,
                "{k} (batch {batch}) stopped before covering the space"
            );
        }
        // Asked again after everything: nothing.
        let mut t = k.build();
        drive(&mut t, &space, 7, 3 * len, 1);
        assert!(
            t.ask(&space, 3).is_empty(),
            "{k} proposes after the space is spent"
        );
    }
}

#[test]
fn tiny_and_empty_spaces() {
    let one = SpaceBuilder::new()
        .param(Param::<u8>::values("A", [3]))
        .build()
        .unwrap();
    let empty = SpaceBuilder::new()
        .param(Param::<u8>::range("A", 1..=4).constraint(&[], |b| b.get::<u8>(0) > 9))
        .allow_empty()
        .build()
        .unwrap();
    assert!(empty.is_empty());
    for k in TechniqueKind::ALL {
        let mut t = k.build();
        t.init(&one, 1);
        assert_eq!(t.ask(&one, 4), vec![0], "{k}");
        t.tell(&one, 0, Some(1.0));
        assert!(t.ask(&one, 4).is_empty(), "{k}");
        let mut t = k.build();
        t.init(&empty, 1);
        assert!(t.ask(&empty, 4).is_empty(), "{k}");
    }
}

#[test]
fn every_configuration_failing_is_survived() {
    let space = space();
    for k in TechniqueKind::ALL {
        let mut t = k.build();
        t.init(&space, 3);
        let mut n = 0;
        loop {
            let b = t.ask(&space, 2);
            if b.is_empty() {
                break;
            }
            for i in b {
                t.tell(&space, i, None);
                n += 1;
            }
        }
        assert_eq!(n as u128, space.len(), "{k}");
    }
}

#[test]
fn guided_techniques_find_the_optimum_in_a_fraction_of_the_space() {
    let space = space();
    let best = (0..space.len())
        .filter_map(|i| cost(&space, i).map(|c| (i, c)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap()
        .0;
    for k in TechniqueKind::ALL {
        if matches!(k, TechniqueKind::Exhaustive | TechniqueKind::Random) {
            continue;
        }
        // Half the space, over a few seeds: a guided search finds a unique smooth optimum.
        let found = (0..5)
            .filter(|&s| {
                drive(&mut k.build(), &space, s, space.len() as usize / 2, 1).contains(&best)
            })
            .count();
        assert!(found >= 4, "{k} found the optimum in {found} of 5 runs");
    }
}

#[test]
fn huge_spaces_are_searched_without_enumerating_them() {
    // 1000^8 = 10^24 configurations, with a constraint between two parameters.
    let mut b = SpaceBuilder::new();
    for k in 0..8 {
        let name = format!("P{k}");
        b = if k == 1 {
            b.param(
                Param::<u32>::range(name, 1..=1000)
                    .constraint(&[0], |b| b.get::<u32>(0) % 7 != b.get::<u32>(1) % 7),
            )
        } else {
            b.param(Param::<u32>::range(name, 1..=1000))
        };
    }
    let space = b.build().unwrap();
    assert!(space.len() > 1u128 << 70);
    let bowl = |i: u128| {
        let c = space.get(i).unwrap();
        Some(
            (0..8)
                .map(|k| (c.get::<u32>(k) as f64 - 500.0).powi(2))
                .sum::<f64>(),
        )
    };
    for k in TechniqueKind::ALL {
        let mut t = k.build();
        t.init(&space, 5);
        let mut seen = HashSet::new();
        for _ in 0..60 {
            let b = t.ask(&space, 1);
            assert_eq!(b.len(), 1, "{k}");
            for i in b {
                assert!(i < space.len(), "{k}");
                assert!(seen.insert(i), "{k} proposed {i} twice");
                t.tell(&space, i, bowl(i));
            }
        }
    }
}

/// Records the budget hint it is given.
struct Hinted {
    inner: Box<dyn Technique>,
    hint: std::sync::Arc<std::sync::Mutex<Option<u64>>>,
}

impl Technique for Hinted {
    fn name(&self) -> &str {
        "hinted"
    }
    fn init(&mut self, space: &Space, seed: u64) {
        self.inner.init(space, seed)
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        self.inner.ask(space, n)
    }
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        self.inner.tell(space, index, cost)
    }
    fn budget(&mut self, evaluations: u64) {
        *self.hint.lock().unwrap() = Some(evaluations);
    }
}

#[test]
fn the_tuner_hands_the_evaluation_budget_to_the_technique() {
    use std::time::Duration;
    use tune_runtime::abort::{Elapsed, Evaluations};
    use tune_runtime::evaluate::closure::Closure;
    use tune_runtime::tuner::Tuner;
    let s = space();
    let eval = |s: Space| {
        Closure::new(move |c: &tune_runtime::Config| {
            cost(&s, s.index_of(c).unwrap()).ok_or(tune_runtime::Failure::Other("x13".into()))
        })
    };
    for (abort, want) in [
        (
            Box::new(Evaluations(37) | Elapsed(Duration::from_secs(60)))
                as Box<dyn tune_runtime::abort::AbortCondition>,
            Some(37),
        ),
        (Box::new(Elapsed(Duration::from_secs(60))), None),
    ] {
        let hint = std::sync::Arc::new(std::sync::Mutex::new(None));
        let t = Hinted {
            inner: TechniqueKind::Random.build(),
            hint: hint.clone(),
        };
        Tuner::new(s.clone(), eval(s.clone()))
            .technique(t)
            .abort(abort)
            .progress(false)
            .run()
            .unwrap();
        assert_eq!(*hint.lock().unwrap(), want);
    }
}

#[test]
fn guided_finds_the_optimum_within_its_budget_and_only_proposes_valid_configurations() {
    let s = space();
    for seed in 0..5 {
        let mut t = tune_runtime::search::Guided::new();
        t.budget(120);
        let asked = drive(&mut t, &s, seed, 120, 1);
        assert_eq!(asked.len(), 120);
        let distinct: HashSet<u128> = asked.iter().copied().collect();
        assert_eq!(distinct.len(), asked.len(), "no repeats");
        assert!(asked.iter().all(|&i| i < s.len()));
        let best = asked
            .iter()
            .filter_map(|&i| cost(&s, i))
            .fold(f64::INFINITY, f64::min);
        assert_eq!(best, 1.0, "seed {seed}");
    }
}

#[test]
fn a_warm_start_measures_the_prior_first_then_the_inner_technique() {
    let s = space();
    let prior: Vec<_> = [5u128, 9, 2, 40, 7, 11]
        .iter()
        .map(|&i| s.get(i).unwrap())
        .collect();
    let mut t = tune_runtime::search::WarmStart::new(TechniqueKind::Random.build(), prior);
    t.budget(50); // a tenth of 50 is 5 prior configurations
    let asked = drive(&mut t, &s, 3, 20, 2);
    assert_eq!(&asked[..5], &[5, 9, 2, 40, 7]);
    assert_eq!(asked.len(), 20);
}

#[test]
fn the_bandit_arms_learn_results_it_did_not_propose() {
    use tune_runtime::search::{Bandit, LocalSearch};
    // A result handed in from outside (a start configuration, an earlier phase): the local
    // search arm climbs from it, so the next proposal is one of its neighbours (one
    // parameter changed).
    let s = SpaceBuilder::new()
        .param(Param::<u32>::range("A", 0..60))
        .param(Param::<u32>::range("B", 0..60))
        .build()
        .unwrap();
    let given = s
        .index_of(
            &s.config_from_values([
                ("A", tune_runtime::Value::Int(25)),
                ("B", tune_runtime::Value::Int(31)),
            ])
            .unwrap(),
        )
        .unwrap();
    for seed in 0..10 {
        let mut t = Bandit::with_arms(vec![Box::new(LocalSearch::new().initial(0))]);
        t.init(&s, seed);
        t.tell(&s, given, Some(1.0));
        let next = s.get(t.ask(&s, 1)[0]).unwrap();
        let (a, b) = (next.get::<u32>(0), next.get::<u32>(1));
        assert!(
            a == 25 || b == 31,
            "seed {seed}: ({a}, {b}) is not a neighbour"
        );
    }
}

#[test]
fn phased_hands_over_after_its_share_of_the_budget() {
    use tune_runtime::search::Phased;
    let s = space();
    let mut t =
        Phased::of(TechniqueKind::Random.build(), TechniqueKind::Local.build()).switch(0.2, 5, 50);
    t.budget(100); // 20 from the first
    let asked = drive(&mut t, &s, 1, 100, 1);
    assert_eq!(asked.len(), 100);
    let best = asked
        .iter()
        .filter_map(|&i| cost(&s, i))
        .fold(f64::INFINITY, f64::min);
    assert_eq!(best, 1.0);
}

/// Records which of two techniques each proposal came from (a random search under a tag).
struct Tagged {
    tag: &'static str,
    inner: Box<dyn Technique>,
    log: std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>,
}

impl Technique for Tagged {
    fn name(&self) -> &str {
        self.tag
    }
    fn init(&mut self, space: &Space, seed: u64) {
        self.inner.init(space, seed);
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let out = self.inner.ask(space, n);
        self.log
            .lock()
            .unwrap()
            .extend(out.iter().map(|_| self.tag));
        out
    }
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        self.inner.tell(space, index, cost);
    }
}

/// Which technique proposed each of `n` evaluations of a run whose only gain is the first
/// evaluation (every later cost is worse).
fn stalled_run(
    t: &mut dyn Technique,
    log: &std::sync::Mutex<Vec<&'static str>>,
    n: usize,
) -> Vec<&'static str> {
    let s = space();
    log.lock().unwrap().clear();
    t.init(&s, 3);
    let mut told = 0;
    while told < n {
        for i in t.ask(&s, 1) {
            t.tell(&s, i, Some(if told == 0 { 1.0 } else { 2.0 + told as f64 }));
            told += 1;
        }
    }
    log.lock().unwrap().clone()
}

#[test]
fn phased_hands_over_early_when_the_first_technique_stalls() {
    use std::sync::{Arc, Mutex};
    use tune_runtime::search::Phased;
    let log = Arc::new(Mutex::new(Vec::new()));
    let tagged = |tag| -> Box<dyn Technique> {
        Box::new(Tagged {
            tag,
            inner: TechniqueKind::Random.build(),
            log: Arc::clone(&log),
        })
    };
    // Without the stall rule: the first technique's planned share (100 of 200).
    let mut plain = Phased::of(tagged("first"), tagged("second")).switch(1.0, 10, 100);
    plain.budget(200);
    let run = stalled_run(&mut plain, &log, 120);
    assert_eq!(run.iter().filter(|t| **t == "first").count(), 100);
    // With a window of 15: no gain after the first evaluation, so the hand-over comes after
    // 16 evaluations (the window counts from the last gain), not before `min` (10).
    let mut early = Phased::of(tagged("first"), tagged("second"))
        .switch(1.0, 10, 100)
        .stall(15);
    early.budget(200);
    for _ in 0..2 {
        // A second run (init again) starts with the first technique again.
        let run = stalled_run(&mut early, &log, 120);
        assert_eq!(
            run.iter().take_while(|t| **t == "first").count(),
            16,
            "{run:?}"
        );
        assert!(run[16..].iter().all(|t| *t == "second"));
    }
    let mut short = Phased::of(tagged("first"), tagged("second"))
        .switch(1.0, 10, 100)
        .stall(3);
    short.budget(200);
    let run = stalled_run(&mut short, &log, 40);
    assert_eq!(
        run.iter().take_while(|t| **t == "first").count(),
        10,
        "{run:?}"
    );
}

#[test]
fn alternate_shares_the_proposals_and_never_proposes_twice() {
    use std::sync::{Arc, Mutex};
    use tune_runtime::search::{Alternate, LocalSearch};
    let s = space();
    let log = Arc::new(Mutex::new(Vec::new()));
    let first = Tagged {
        tag: "first",
        inner: TechniqueKind::Random.build(),
        log: Arc::clone(&log),
    };
    // A climber from the best found proposes neighbours of what the first measured.
    let second = Tagged {
        tag: "second",
        inner: Box::new(LocalSearch::new().initial(0).skip_told(true)),
        log: Arc::clone(&log),
    };
    let mut t = Alternate::of(Box::new(first), Box::new(second), 0.25);
    let got = drive(&mut t, &s, 5, 80, 2);
    assert_eq!(got.len(), 80);
    let set: HashSet<u128> = got.iter().copied().collect();
    assert_eq!(set.len(), got.len(), "a configuration proposed twice");
    let second = log
        .lock()
        .unwrap()
        .iter()
        .filter(|t| **t == "second")
        .count();
    assert!(
        (18..=22).contains(&second),
        "{second} of 80 from the second"
    );
    // It covers the space and then stops, like every technique.
    let all = drive(&mut t, &s, 5, 10_000, 3);
    assert_eq!(all.len() as u128, s.len());
}
