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
