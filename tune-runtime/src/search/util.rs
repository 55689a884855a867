//! Helpers shared by the techniques: bookkeeping of proposed indices, domain-index
//! coordinates and the repair of invalid configurations.

use std::collections::HashSet;

use rand::rngs::SmallRng;
use rand::Rng;

use crate::space::{Config, Neighbourhood, Space};

/// The indices a technique has proposed, so that it does not propose them again.
#[derive(Default, Debug, Clone)]
pub(crate) struct Visited {
    set: HashSet<u128>,
}

impl Visited {
    pub(crate) fn clear(&mut self) {
        self.set.clear();
    }
    pub(crate) fn contains(&self, i: u128) -> bool {
        self.set.contains(&i)
    }
    /// Marks `i` proposed; `false` if it already was.
    pub(crate) fn insert(&mut self, i: u128) -> bool {
        self.set.insert(i)
    }
    pub(crate) fn len(&self) -> usize {
        self.set.len()
    }
    /// Whether every index of the space has been proposed.
    pub(crate) fn exhausted(&self, space: &Space) -> bool {
        self.set.len() as u128 >= space.len()
    }
    /// A random index not proposed yet (not marked), or `None` when none is left.
    /// `i` if it was not proposed yet, else a few mutations of it, else any unseen index:
    /// how the population techniques turn a child into a fresh proposal.
    pub(crate) fn unseen_near(
        &self,
        space: &Space,
        mut i: u128,
        rng: &mut SmallRng,
    ) -> Option<u128> {
        for _ in 0..4 {
            if !self.contains(i) {
                return Some(i);
            }
            i = mutate(space, i, self, Neighbourhood::Any, rng);
        }
        if self.contains(i) {
            self.random_unseen(space, rng)
        } else {
            Some(i)
        }
    }

    pub(crate) fn random_unseen(&self, space: &Space, rng: &mut SmallRng) -> Option<u128> {
        let len = space.len();
        if self.exhausted(space) {
            return None;
        }
        for _ in 0..64 {
            let i = rng.random_range(0..len);
            if !self.contains(i) {
                return Some(i);
            }
        }
        // Dense: at most `len()` consecutive indices are taken, so the scan is short.
        let start = rng.random_range(0..len);
        (0..len)
            .map(|k| (start + k) % len)
            .find(|&i| !self.contains(i))
    }
    /// The neighbours of `config` that were not proposed yet.
    pub(crate) fn unseen_neighbours(
        &self,
        space: &Space,
        config: &Config,
        hood: Neighbourhood,
    ) -> Vec<u128> {
        let mut v = space.neighbour_indices(config, hood);
        v.retain(|&i| !self.contains(i));
        v
    }
}

/// The position of each parameter's value among its candidate values.
pub(crate) fn dom_of(space: &Space, config: &Config) -> Vec<u32> {
    space
        .params()
        .iter()
        .zip(config.raw())
        .map(|(p, &r)| p.domain_index(r).unwrap_or(0))
        .collect()
}

/// The configuration (maybe invalid) with these domain positions (clamped).
pub(crate) fn config_of_dom(space: &Space, dom: &[u32]) -> Config {
    let raw: Vec<u64> = space
        .params()
        .iter()
        .zip(dom)
        .map(|(p, &d)| {
            let last = p.domain_len().saturating_sub(1) as u32;
            p.domain.raw(d.min(last))
        })
        .collect();
    Config::from_raw(raw)
}

/// Distance between domain positions: parameters that differ first, then the total offset.
fn distance(a: &[u32], b: &[u32]) -> (usize, u64) {
    let mut differ = 0;
    let mut off = 0u64;
    for (&x, &y) in a.iter().zip(b) {
        if x != y {
            differ += 1;
            off += x.abs_diff(y) as u64;
        }
    }
    (differ, off)
}

/// A valid index close to the (maybe invalid) target: the target itself if valid, else the
/// end of a greedy walk from `from` through valid neighbours, each step getting closer to the
/// target.
pub(crate) fn repair(space: &Space, from: u128, target: &[u32], rng: &mut SmallRng) -> u128 {
    if let Some(i) = space.index_of(&config_of_dom(space, target)) {
        return i;
    }
    let mut here = from;
    let Some(mut cfg) = space.get(here) else {
        return from;
    };
    let mut d = distance(&dom_of(space, &cfg), target);
    for _ in 0..2 * target.len() + 2 {
        let mut best: Vec<(u128, Config)> = Vec::new();
        let mut best_d = d;
        for n in space.neighbour_indices(&cfg, Neighbourhood::Any) {
            let Some(c) = space.get(n) else { continue };
            let dn = distance(&dom_of(space, &c), target);
            if dn < best_d {
                best_d = dn;
                best.clear();
            }
            if dn == best_d && dn < d {
                best.push((n, c));
            }
        }
        if best.is_empty() {
            break;
        }
        let k = rng.random_range(0..best.len());
        let (n, c) = best.swap_remove(k);
        here = n;
        cfg = c;
        d = best_d;
    }
    here
}

/// A random neighbour of `index` not proposed yet, else any random neighbour, else `index`.
pub(crate) fn mutate(
    space: &Space,
    index: u128,
    visited: &Visited,
    hood: Neighbourhood,
    rng: &mut SmallRng,
) -> u128 {
    let Some(cfg) = space.get(index) else {
        return index;
    };
    let all = space.neighbour_indices(&cfg, hood);
    let fresh: Vec<u128> = all
        .iter()
        .copied()
        .filter(|&i| !visited.contains(i))
        .collect();
    let pool = if fresh.is_empty() { &all } else { &fresh };
    if pool.is_empty() {
        index
    } else {
        pool[rng.random_range(0..pool.len())]
    }
}

/// How much worse `new` is than `old`, relative to `old` (negative: better).
pub(crate) fn relative(new: f64, old: f64) -> f64 {
    if old.abs() > f64::MIN_POSITIVE {
        (new - old) / old.abs()
    } else {
        new - old
    }
}

/// `Some(cost)` if it is a usable number.
pub(crate) fn finite(cost: Option<f64>) -> Option<f64> {
    cost.filter(|c| c.is_finite())
}

/// A seed for a sub-technique, derived from the run's seed.
pub(crate) fn derive_seed(seed: u64, k: u64) -> u64 {
    // SplitMix64 finaliser.
    let mut z = seed ^ k.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Average ranks (1-based; ties share the mean of their ranks).
pub(crate) fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut k = 0;
    while k < order.len() {
        let mut e = k;
        while e + 1 < order.len() && v[order[e + 1]] == v[order[k]] {
            e += 1;
        }
        let mean = (k + e) as f64 / 2.0 + 1.0;
        for &o in &order[k..=e] {
            r[o] = mean;
        }
        k = e + 1;
    }
    r
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::param::Param;
    use crate::space::SpaceBuilder;

    #[test]
    fn repair_walks_to_a_valid_configuration_close_to_the_target() {
        // A + B <= 10 over 0..=10 each.
        let space = SpaceBuilder::new()
            .param(Param::<u32>::range("A", 0..=10))
            .param(
                Param::<u32>::range("B", 0..=10)
                    .constraint(&[0], |b| b.get::<u32>(0) + b.get::<u32>(1) <= 10),
            )
            .build()
            .unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let from = space.index_of(&Config::from_raw(vec![0u64, 0])).unwrap();
        // A valid target is returned as is.
        let i = repair(&space, from, &[3, 4], &mut rng);
        assert_eq!(dom_of(&space, &space.get(i).unwrap()), vec![3, 4]);
        // An invalid one (8 + 8 > 10) ends on a valid configuration sharing a value with it.
        let i = repair(&space, from, &[8, 8], &mut rng);
        let d = dom_of(&space, &space.get(i).unwrap());
        assert!(d[0] + d[1] <= 10);
        assert!(d[0] == 8 || d[1] == 8, "{d:?}");
    }

    #[test]
    fn random_unseen_finds_the_last_free_index() {
        let space = SpaceBuilder::new()
            .param(Param::<u32>::range("A", 0..50))
            .build()
            .unwrap();
        let mut v = Visited::default();
        for i in (0..50).filter(|&i| i != 37) {
            v.insert(i);
        }
        let mut rng = SmallRng::seed_from_u64(3);
        assert_eq!(v.random_unseen(&space, &mut rng), Some(37));
        v.insert(37);
        assert_eq!(v.random_unseen(&space, &mut rng), None);
        assert!(v.exhausted(&space));
    }
}
