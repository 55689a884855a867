//! The label step of a tuning run, inside the 15% of the grid: after the searches
//! and the cross-evaluation, the configurations that the candidate sets hold, measured on
//! the training shapes, so that a training shape's label (its best of a set) is known
//! rather than the best of the few cells measured there.
//!
//! The split of the budget is fixed a priori (select5, before any run of this plan): the
//! searches and the cross-evaluation within [`TUNE_SHARE`] of the grid (EVALS near 5% of
//! the pool: about a third each), and the label cells of each training set within what
//! they left of [`BUDGET`], the 15%. A split's tuning run is then its searches,
//! the cross-evaluation (of every shape: counted whole, though its test rows are never
//! read) and its own label cells: at most 15% of the grid.

use tune::results::Named;
use tune::select::{Input, Matrix, Stats};
use tune::{Result, Value};

use super::cells::fill_cells;
use super::recipe::{methods, splits, KS_FIRST};

/// The searches and the cross-evaluation together, as a share of the grid.
pub const TUNE_SHARE: f64 = 0.10;

/// The whole tuning run of a training set, label cells included, as a share of the grid.
pub const BUDGET: f64 = 0.15;

/// The label cells a run of `stats` may measure per training set: what its searches and
/// cross-evaluation (failed cells included) left of `budget` of its grid (0: none).
pub fn label_budget(stats: &Stats, budget: f64) -> usize {
    let spent = stats.searched + stats.anchored + stats.promising + stats.failed;
    ((budget * stats.grid as f64).floor() as usize).saturating_sub(spent)
}

/// The label cells of a training set of `shapes` shapes, out of `budget` (a
/// [`label_budget`]), when each training shape keeps `reserve` cells for its
/// re-measurements (`remeasure::RESERVE`; 0 in runs before select7).
pub fn set_budget(budget: usize, reserve: usize, shapes: usize) -> usize {
    budget.saturating_sub(reserve.saturating_mul(shapes))
}

/// The label cells of the training shapes `train`, at most `budget` of them: the sets
/// every method chooses from `train` (every k of the tables, the shipped k first), their
/// configurations ranked by how many sets hold them, then whole columns (a configuration
/// on every training shape that lacks it) in that order while they fit: a partial column
/// would label some shapes and not their neighbours.
pub fn label_cells(m: &Matrix, train: &[usize], budget: usize) -> Result<Vec<(usize, usize)>> {
    if budget == 0 || train.is_empty() {
        return Ok(Vec::new());
    }
    // (configuration, sets holding it), in the order first chosen.
    let mut held: Vec<(usize, usize)> = Vec::new();
    for k in KS_FIRST {
        for method in methods() {
            for c in tune::select::set::choose(m, train, k, method)? {
                match held.iter_mut().find(|(x, _)| *x == c) {
                    Some((_, n)) => *n += 1,
                    None => held.push((c, 1)),
                }
            }
        }
    }
    // Stable: among equal counts the first chosen comes first.
    held.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    let mut cells = Vec::new();
    for (c, _) in held {
        let column: Vec<(usize, usize)> = train
            .iter()
            .filter(|&&i| m.get(i, c).is_none())
            .map(|&i| (i, c))
            .collect();
        if cells.len() + column.len() <= budget {
            cells.extend(column);
        }
    }
    Ok(cells)
}

/// `m` with the label cells of `train` ([`label_cells`]) that `truth` holds: what the
/// selectors of that training set learn from. Every cell takes `truth`'s time (the same
/// as `m`'s but where the tuning run re-measured it). Returns the matrix, the label cells
/// it gained and those planned.
pub fn labelled(
    m: &Matrix,
    truth: &Matrix,
    train: &[usize],
    budget: usize,
) -> Result<(Matrix, usize, usize)> {
    let cells = label_cells(m, train, budget)?;
    let mut out = m.clone();
    for i in 0..m.inputs().len() {
        for c in 0..m.configs().len() {
            if let (Some(_), Some(v)) = (m.get(i, c), truth.get(i, c)) {
                out.set(i, c, v)?;
            }
        }
    }
    let mut gained = 0;
    for &(i, c) in &cells {
        if let Some(v) = truth.get(i, c) {
            out.set(i, c, v)?;
            gained += 1;
        }
    }
    Ok((out, gained, cells.len()))
}

/// The training sets a run labels: each split's, then all shapes' (the selector that
/// ships).
pub fn training_sets(m: &Matrix) -> Vec<Vec<usize>> {
    let mut sets: Vec<Vec<usize>> = splits(m).into_iter().map(|s| s.train).collect();
    sets.push((0..m.inputs().len()).collect());
    sets
}

/// The label step of the training sets `trains` (each split's, and all shapes' for the
/// selector that ships), into `truth`, while `go_on()`: each set's label cells within
/// [`set_budget`] of `budget` (`reserve` cells a training shape kept for re-measuring).
/// A cell measured for one set is not measured again for another. Returns the cells
/// measured and those planned (each set's, summed).
pub fn label_step(
    m: &Matrix,
    truth: &mut Matrix,
    trains: &[Vec<usize>],
    (budget, reserve): (usize, usize),
    mut measure: impl FnMut(&Input, &Named<Value>) -> Option<f64>,
    mut go_on: impl FnMut() -> bool,
) -> Result<(usize, usize)> {
    let (mut measured, mut planned) = (0, 0);
    for train in trains {
        let cells = label_cells(m, train, set_budget(budget, reserve, train.len()))?;
        planned += cells.len();
        if !fill_cells(m, truth, cells, &mut measure, &mut go_on, &mut measured)? {
            break;
        }
    }
    Ok((measured, planned))
}
