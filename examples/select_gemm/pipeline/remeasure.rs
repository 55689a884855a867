//! Re-measuring the cells that labels and the per-shape optimum rest on (select7).
//!
//! No cell is measured twice in a call, and the calls of one backend measured the same
//! cells apart by 0.4-0.6% (median) but with a heavy tail on NVIDIA's OpenCL: a shape's
//! best cell in one call was under 90% of the optimum in the others on 30-64 of the 431
//! shapes (bench/select/RESULTS.md, round 7). A label or an optimum taken as the minimum
//! over once-measured times inherits that tail. So a shape's few best cells are measured
//! [`ROUNDS`] times more, interleaved (each round measures every one of them once, so a
//! slow or fast spell of the device or the host falls on all of them rather than on one),
//! and each takes the median of its times.
//!
//! Fixed a priori (before any GPU run of this plan): the tuning run re-measures each
//! training shape's [`TOP`] best cells of what its selectors learn from, after the label
//! step, counted in the 15% (the label step gets [`TOP`] x [`ROUNDS`] cells a training
//! shape fewer); the scoring side re-measures each shape's [`SCORE_TOP`] best cells of the
//! truth before the tables divide by its optimum (not counted, as the scoring cells).
//!
//! Since select8 only the scoring side runs by default: scored against select6's plan in
//! round 7's calls, the tuning side cost more label cells than it gave back
//! (bench/select/RESULTS.md); `$TUNE_SELECT_RELABEL=1` runs it (gpu.rs).

use std::collections::HashMap;

use tune::results::Named;
use tune::select::{Input, Matrix};
use tune::{Result, Value};

/// A training shape's best cells re-measured in the tuning run.
pub const TOP: usize = 2;

/// A shape's best cells of the truth re-measured before the tables' optimum is taken.
pub const SCORE_TOP: usize = 3;

/// Measurements per re-measured cell besides its first: it takes the median of three.
pub const ROUNDS: usize = 2;

/// Label cells a training shape gives up for its re-measurements.
pub const RESERVE: usize = TOP * ROUNDS;

/// The `top` best measured cells of each of `inputs` in `m`, shape by shape.
pub fn best_cells(m: &Matrix, inputs: &[usize], top: usize) -> Vec<(usize, usize)> {
    let mut cells = Vec::new();
    for &i in inputs {
        let mut row: Vec<(usize, f64)> = (0..m.configs().len())
            .filter_map(|c| m.get(i, c).map(|v| (c, v)))
            .collect();
        row.sort_by(|a, b| a.1.total_cmp(&b.1));
        cells.extend(row.into_iter().take(top).map(|(c, _)| (i, c)));
    }
    cells
}

/// The median of `times`; of an even count, the lower middle one (a slow spell only
/// makes a time longer, so of two the shorter).
pub fn median(times: &mut [f64]) -> Option<f64> {
    if times.is_empty() {
        return None;
    }
    times.sort_by(f64::total_cmp);
    Some(times[(times.len() - 1) / 2])
}

/// Re-measures `cells` of `m` (each measured once already, its time in `m`) [`ROUNDS`]
/// times, interleaved shape by shape, while `go_on()`; a cell in `done` (re-measured
/// before, by another training set or seed) is not measured again. Returns the new time
/// of every cell of `cells` re-measured now or before (the median of its times), and adds
/// those measured now to `done`. `fresh` measures a cell anew (never a cached time).
pub fn remeasure(
    m: &Matrix,
    cells: &[(usize, usize)],
    done: &mut HashMap<(usize, usize), f64>,
    mut fresh: impl FnMut(&Input, &Named<Value>) -> Option<f64>,
    mut go_on: impl FnMut() -> bool,
) -> Result<Vec<(usize, usize, f64)>> {
    // Shape by shape, in the order given.
    let mut shapes: Vec<(usize, Vec<usize>)> = Vec::new();
    for &(i, c) in cells {
        match shapes.last_mut() {
            Some((j, cs)) if *j == i => cs.push(c),
            _ => shapes.push((i, vec![c])),
        }
    }
    let mut out = Vec::new();
    for (i, configs) in shapes {
        let todo: Vec<usize> = configs
            .iter()
            .copied()
            .filter(|&c| !done.contains_key(&(i, c)))
            .collect();
        let mut times: Vec<Vec<f64>> = todo
            .iter()
            .map(|&c| m.get(i, c).into_iter().collect())
            .collect();
        'rounds: for _ in 0..ROUNDS {
            for (n, &c) in todo.iter().enumerate() {
                if !go_on() {
                    break 'rounds;
                }
                if let Some(t) = fresh(&m.inputs()[i], &m.configs()[c]) {
                    times[n].push(t);
                }
            }
        }
        for (n, &c) in todo.iter().enumerate() {
            // Only cells measured again: a cell the time ran out on keeps its one time.
            if times[n].len() > 1 {
                if let Some(v) = median(&mut times[n]) {
                    done.insert((i, c), v);
                }
            }
        }
        out.extend(
            configs
                .iter()
                .filter_map(|&c| done.get(&(i, c)).map(|&v| (i, c, v))),
        );
    }
    Ok(out)
}

/// `m` with the re-measured times `cells` (cells `m` lacks are left out).
pub fn with_times(m: &Matrix, cells: &[(usize, usize, f64)]) -> Result<Matrix> {
    let mut out = m.clone();
    for &(i, c, v) in cells {
        if out.get(i, c).is_some() {
            out.set(i, c, v)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tune::select::Input;

    fn matrix(rows: &[&[Option<f64>]]) -> Matrix {
        let mut m = Matrix::new("t", "d", vec!["n".into()]);
        for c in 0..rows[0].len() {
            m.add_config(Named(vec![("C".into(), Value::Int(c as i64))]));
        }
        for (i, row) in rows.iter().enumerate() {
            let r = m.add_input(Input {
                key: format!("n={i}"),
                features: vec![i as f64],
                groups: vec![],
            });
            for (c, v) in row.iter().enumerate() {
                if let Some(v) = v {
                    m.set(r, c, *v).unwrap();
                }
            }
        }
        m
    }

    #[test]
    fn the_median_of_two_is_the_shorter() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [3.0, 1.0]), Some(1.0));
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn best_cells_are_each_shapes_fastest_measured() {
        let m = matrix(&[
            &[Some(3.0), Some(1.0), None, Some(2.0)],
            &[None, Some(5.0), Some(4.0), None],
        ]);
        assert_eq!(best_cells(&m, &[0, 1], 2), [(0, 1), (0, 3), (1, 2), (1, 1)]);
        assert_eq!(best_cells(&m, &[1], 5), [(1, 2), (1, 1)]);
    }

    #[test]
    fn cells_are_remeasured_interleaved_and_take_their_median() {
        // Cell (0, 1) was measured lucky (1.0); its re-measurements say 2.0.
        let m = matrix(&[&[Some(3.0), Some(1.0), Some(2.5)]]);
        let mut order = Vec::new();
        let mut done = HashMap::new();
        let fresh = |input: &Input, cfg: &Named<Value>| {
            let c = match cfg.get("C") {
                Some(Value::Int(c)) => *c as usize,
                _ => unreachable!(),
            };
            order.push((input.key.clone(), c));
            Some(if c == 1 { 2.0 } else { 2.4 })
        };
        let cells = best_cells(&m, &[0], 2);
        let out = remeasure(&m, &cells, &mut done, fresh, || true).unwrap();
        // Interleaved: every cell once per round.
        let keys: Vec<usize> = order.iter().map(|(_, c)| *c).collect();
        assert_eq!(keys, [1, 2, 1, 2]);
        assert_eq!(out, [(0, 1, 2.0), (0, 2, 2.4)]);
        // The re-measured times change which configuration is best.
        let t = with_times(&m, &out).unwrap();
        assert_eq!(t.best(0), Some((1, 2.0)));
        assert_eq!(t.get(0, 2), Some(2.4));
        // A cell re-measured before is not measured again, and keeps its time.
        let again = remeasure(&m, &cells, &mut done, |_, _| unreachable!(), || true).unwrap();
        assert_eq!(again, out);
    }

    #[test]
    fn a_cell_the_time_ran_out_on_keeps_its_time() {
        let m = matrix(&[&[Some(3.0), Some(1.0)]]);
        let mut done = HashMap::new();
        let mut budget = 1;
        let out = remeasure(
            &m,
            &[(0, 1), (0, 0)],
            &mut done,
            |_, _| Some(2.0),
            || {
                budget -= 1;
                budget >= 0
            },
        )
        .unwrap();
        // (0, 1) got one more time: the shorter of 1.0 and 2.0; (0, 0) none.
        assert_eq!(out, [(0, 1, 1.0)]);
    }
}
