//! The cells measured past the cross-evaluation, never read by a set or a tree but where
//! said: the scoring cells of the tables, the rest of the grid.

use std::collections::HashSet;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use tune::results::Named;
use tune::select::{needed, Input, Matrix, Split};
use tune::{Result, Value};

use super::labels::{labelled, set_budget};
use super::recipe::{methods, splits, DEPLOY_K, KS_FIRST};

/// Measures the cells that the tables and the vendor comparison read and `truth` lacks
/// into `truth` (a copy of `m` with the label cells: see [`needed`]; the selectors of a
/// split learn from `m` and its own label cells, [`labelled`] at `budget`): each test
/// input's baselines and every configuration of every set of every split on its test
/// inputs ([`needed`]), and every configuration of every method's [`DEPLOY_K`]-set chosen
/// from all inputs on every input (whichever recipe ships, its choice is measured
/// everywhere). `budget` is the label budget and the cells a training shape reserved
/// for re-measuring (`labels::set_budget`). `measure` returns `None` when a cell fails or the time is up (the cell
/// stays empty; the tables count it). Returns the cells measured and the cells planned.
pub fn verify(
    m: &Matrix,
    truth: &mut Matrix,
    (budget, reserve): (usize, usize),
    mut measure: impl FnMut(&Input, &Named<Value>) -> Option<f64>,
) -> Result<(usize, usize)> {
    let all: Vec<usize> = (0..m.inputs().len()).collect();
    // Each split's selectors learn from their own matrix: plan on each.
    let mut learnt: Vec<(Matrix, Split)> = Vec::new();
    for split in splits(m) {
        let b = set_budget(budget, reserve, split.train.len());
        learnt.push((labelled(m, truth, &split.train, b)?.0, split));
    }
    let (whole, _, _) = labelled(m, truth, &all, set_budget(budget, reserve, all.len()))?;
    let mut cells = Vec::new();
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    let mut add = |cells: &mut Vec<(usize, usize)>, c: (usize, usize)| {
        if truth.get(c.0, c.1).is_none() && seen.insert(c) {
            cells.push(c);
        }
    };
    for (lab, split) in &learnt {
        for c in needed(lab, std::slice::from_ref(split), &methods(), &KS_FIRST[..1])? {
            add(&mut cells, c);
        }
    }
    for method in methods() {
        for c in tune::select::set::choose(&whole, &all, DEPLOY_K, method)? {
            for &i in &all {
                add(&mut cells, (i, c));
            }
        }
    }
    for (lab, split) in &learnt {
        for c in needed(lab, std::slice::from_ref(split), &methods(), &KS_FIRST[1..])? {
            add(&mut cells, c);
        }
    }
    let mut done = 0;
    for &(i, c) in &cells {
        if let Some(v) = measure(&m.inputs()[i], &m.configs()[c]) {
            truth.set(i, c, v)?;
            done += 1;
        }
    }
    Ok((done, cells.len()))
}

/// Measures the `cells` that `truth` lacks into it while `go_on()`, counting them in
/// `count`; false when `go_on()` stopped it.
pub(super) fn fill_cells(
    m: &Matrix,
    truth: &mut Matrix,
    cells: impl IntoIterator<Item = (usize, usize)>,
    measure: &mut impl FnMut(&Input, &Named<Value>) -> Option<f64>,
    go_on: &mut impl FnMut() -> bool,
    count: &mut usize,
) -> Result<bool> {
    for (i, c) in cells {
        if truth.get(i, c).is_some() {
            continue;
        }
        if !go_on() {
            return Ok(false);
        }
        if let Some(v) = measure(&m.inputs()[i], &m.configs()[c]) {
            truth.set(i, c, v)?;
            *count += 1;
        }
    }
    Ok(true)
}

/// Measures what `truth` lacks of the whole grid (every configuration of the matrix on
/// every shape), shape by shape in a seeded order, while `go_on()`: the per-shape optimum
/// the tables divide by is then the best of every candidate (not only of those measured),
/// and any measurement plan can be replayed from it. Never read by a set or a tree.
/// Returns the cells measured.
pub fn fill(
    truth: &mut Matrix,
    mut measure: impl FnMut(&Input, &Named<Value>) -> Option<f64>,
    mut go_on: impl FnMut() -> bool,
) -> Result<usize> {
    let mut order: Vec<usize> = (0..truth.inputs().len()).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(4));
    let mut done = 0;
    for i in order {
        for c in 0..truth.configs().len() {
            if truth.get(i, c).is_some() {
                continue;
            }
            if !go_on() {
                return Ok(done);
            }
            let (input, config) = (truth.inputs()[i].clone(), truth.configs()[c].clone());
            if let Some(v) = measure(&input, &config) {
                truth.set(i, c, v)?;
                done += 1;
            }
        }
    }
    Ok(done)
}
