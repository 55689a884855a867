//! The surrogate's start: which configurations are measured before the model proposes.

use std::collections::HashMap;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

/// How [`super::Surrogate`] chooses its start configurations, from a pool of random valid
/// ones (so constraints hold by construction).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartDesign {
    /// Each next configuration is the farthest (in normalised features) from those
    /// chosen before. It covers the space's range, which puts most of the start on the
    /// extremes of every parameter (the smallest and largest sizes): a poor start where
    /// the fast configurations have middle values.
    #[default]
    MaxMin,
    /// The first configurations of the random pool.
    Random,
    /// Each next configuration is the one whose values have been chosen least so far,
    /// summed over the parameters (ties at random): every value of every parameter,
    /// middle ones as much as extremes, appears in the start about equally often, as in a
    /// Latin hypercube over each parameter's values.
    Balanced,
}

/// `n` of `pool` (index, normalised features, raw values) by `design`, in the order to
/// propose them.
pub(super) fn choose(
    design: StartDesign,
    pool: &[(u128, Vec<f64>, Vec<u64>)],
    n: usize,
    rng: &mut SmallRng,
) -> Vec<u128> {
    let n = n.min(pool.len());
    match design {
        StartDesign::Random => pool.iter().take(n).map(|p| p.0).collect(),
        StartDesign::MaxMin => maxmin(pool, n),
        StartDesign::Balanced => balanced(pool, n, rng),
    }
}

fn maxmin(pool: &[(u128, Vec<f64>, Vec<u64>)], n: usize) -> Vec<u128> {
    if pool.is_empty() {
        return Vec::new();
    }
    let dist =
        |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum() };
    let mut chosen = vec![0usize];
    let mut near: Vec<f64> = pool.iter().map(|p| dist(&p.1, &pool[0].1)).collect();
    while chosen.len() < n {
        let Some((k, _)) = near
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .filter(|(_, &v)| v > 0.0)
        else {
            break;
        };
        chosen.push(k);
        for (j, p) in pool.iter().enumerate() {
            near[j] = near[j].min(dist(&p.1, &pool[k].1));
        }
    }
    chosen.into_iter().map(|k| pool[k].0).collect()
}

fn balanced(pool: &[(u128, Vec<f64>, Vec<u64>)], n: usize, rng: &mut SmallRng) -> Vec<u128> {
    // How often each (parameter, value) has been chosen.
    let mut count: HashMap<(usize, u64), usize> = HashMap::new();
    let mut left: Vec<usize> = (0..pool.len()).collect();
    left.shuffle(rng);
    let mut out = Vec::with_capacity(n);
    while out.len() < n && !left.is_empty() {
        let rarity = |k: usize| -> f64 {
            pool[k]
                .2
                .iter()
                .enumerate()
                .map(|(p, &v)| 1.0 / (1 + count.get(&(p, v)).copied().unwrap_or(0)) as f64)
                .sum()
        };
        // The first of equal scores: `left` is shuffled, so ties go at random.
        let Some(pos) = (0..left.len()).fold(None, |b: Option<(usize, f64)>, j| {
            let r = rarity(left[j]);
            match b {
                Some(b) if b.1 >= r => Some(b),
                _ => Some((j, r)),
            }
        }) else {
            break;
        };
        let k = left.swap_remove(pos.0);
        for (p, &v) in pool[k].2.iter().enumerate() {
            *count.entry((p, v)).or_insert(0) += 1;
        }
        out.push(pool[k].0);
    }
    out
}
