//! The cells measured past the cross-evaluation, never read by a set or a tree but where
//! said: the scoring cells of the tables, the label step, the rest of the grid.

use std::collections::HashSet;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use tune::results::Named;
use tune::select::{needed, Input, Matrix, Split};
use tune::{Result, Value};

use super::recipe::{methods, splits, DEPLOY_K, KS, KS_FIRST};

/// Measures the cells that the tables and the vendor comparison read and `m` lacks, into
/// a copy of `m`, the truth the tables score on (`m` stays what the selectors learn
/// from: see [`needed`]): each test input's baselines and every configuration of every
/// set of every split on its test inputs ([`needed`]), and every configuration of every
/// method's [`DEPLOY_K`]-set chosen from all inputs on every input (whichever recipe ships,
/// its choice is measured everywhere). `measure` returns `None` when a cell fails or the
/// time is up (the cell stays empty; the tables count it). Returns the truth, the cells
/// measured and the cells planned.
pub fn verify(
    m: &Matrix,
    mut measure: impl FnMut(&Input, &Named<Value>) -> Option<f64>,
) -> Result<(Matrix, usize, usize)> {
    let mut cells = needed(m, &splits(m), &methods(), &KS_FIRST[..1])?;
    let mut seen: HashSet<(usize, usize)> = cells.iter().copied().collect();
    let all: Vec<usize> = (0..m.inputs().len()).collect();
    for method in methods() {
        for c in tune::select::set::choose(m, &all, DEPLOY_K, method)? {
            for i in 0..m.inputs().len() {
                if m.get(i, c).is_none() && seen.insert((i, c)) {
                    cells.push((i, c));
                }
            }
        }
    }
    for c in needed(m, &splits(m), &methods(), &KS_FIRST[1..])? {
        if seen.insert(c) {
            cells.push(c);
        }
    }
    let mut truth = m.clone();
    let mut done = 0;
    for &(i, c) in &cells {
        if let Some(v) = measure(&m.inputs()[i], &m.configs()[c]) {
            truth.set(i, c, v)?;
            done += 1;
        }
    }
    Ok((truth, done, cells.len()))
}

/// The label step of a tuning run, for every split: after the cross-evaluation, every
/// configuration of the sets any method chooses on the training shapes, measured on every
/// training shape (the cells [`with_labels`] reads), then the scoring cells of the sets
/// chosen from the matrix with those labels ([`needed`]), into `truth`, while `go_on()`.
/// Returns the label cells measured and the scoring cells measured.
pub fn label_step(
    m: &Matrix,
    truth: &mut Matrix,
    mut measure: impl FnMut(&Input, &Named<Value>) -> Option<f64>,
    mut go_on: impl FnMut() -> bool,
) -> Result<(usize, usize)> {
    let (mut labels, mut scoring) = (0, 0);
    for split in splits(m) {
        let mut union: Vec<usize> = Vec::new();
        for method in methods() {
            for k in KS {
                union.extend(tune::select::set::choose(m, &split.train, k, method)?);
            }
        }
        union.sort_unstable();
        union.dedup();
        let label_cells = split
            .train
            .iter()
            .flat_map(|&i| union.iter().map(move |&c| (i, c)));
        if !fill_cells(m, truth, label_cells, &mut measure, &mut go_on, &mut labels)? {
            return Ok((labels, scoring));
        }
        let (lab, _, _) = with_labels(m, truth, &split)?;
        let scoring_cells = needed(&lab, std::slice::from_ref(&split), &methods(), &KS_FIRST)?;
        if !fill_cells(
            m,
            truth,
            scoring_cells,
            &mut measure,
            &mut go_on,
            &mut scoring,
        )? {
            return Ok((labels, scoring));
        }
    }
    Ok((labels, scoring))
}

/// Measures the `cells` that `truth` lacks into it while `go_on()`, counting them in
/// `count`; false when `go_on()` stopped it.
fn fill_cells(
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

/// The matrix of `split` with label cells: every configuration that some method's set
/// (any k of the tables) chosen from `m`'s training shapes holds, on every training shape,
/// as a tuning run would measure them after its cross-evaluation so that each training
/// shape's label (its best of a set) is known rather than the best of the few measured
/// there. Cells `truth` lacks stay empty. Returns the matrix, the label cells it gained
/// and those wanted.
pub fn with_labels(m: &Matrix, truth: &Matrix, split: &Split) -> Result<(Matrix, usize, usize)> {
    let mut union: Vec<usize> = Vec::new();
    for method in methods() {
        for k in KS {
            union.extend(tune::select::set::choose(m, &split.train, k, method)?);
        }
    }
    union.sort_unstable();
    union.dedup();
    let mut out = m.clone();
    let (mut gained, mut wanted) = (0, 0);
    for &i in &split.train {
        for &c in &union {
            if m.get(i, c).is_some() {
                continue;
            }
            wanted += 1;
            if let Some(v) = truth.get(i, c) {
                out.set(i, c, v)?;
                gained += 1;
            }
        }
    }
    Ok((out, gained, wanted))
}
