//! Why a group has no valid configuration: the first parameter whose every value is
//! rejected, and the constraints that reject them.

use super::grow::set_path;
use super::memo::compute_valid;
use super::plan::{Check, GroupPlan, LevelPlan};
use super::ParamInfo;
use crate::param::Domain;
use crate::Error;

/// Prefixes followed per level (the first ones, in order): enough to find where the
/// constraints reject everything without rebuilding a large tree.
const SAMPLE: usize = 1024;
/// Values of a parameter tried per prefix when looking for the constraints to blame.
const VALUES: u64 = 1 << 12;

/// The [`Error::EmptySpace`] of a group whose tree has no leaf.
pub(super) fn why_empty(plan: &GroupPlan<'_>, infos: &[ParamInfo]) -> Error {
    let params: Vec<String> = plan.slots.iter().map(|&s| infos[s].name.clone()).collect();
    let mut bound = vec![0u64; infos.len()];
    let mut cands = Vec::new();
    let mut valid = Vec::new();
    let mut frontier: Vec<Vec<u32>> = vec![Vec::new()];
    for (l, lp) in plan.levels.iter().enumerate() {
        let mut next: Vec<Vec<u32>> = Vec::new();
        for path in &frontier {
            set_path(plan, path, &mut bound);
            valid.clear();
            compute_valid(lp, &mut bound, &mut cands, &mut valid);
            for &c in valid.iter().take(SAMPLE - next.len()) {
                let mut p = path.clone();
                p.push(c);
                next.push(p);
            }
            if next.len() >= SAMPLE {
                break;
            }
        }
        if next.is_empty() || l + 1 == plan.levels.len() {
            return Error::EmptySpace {
                params,
                at: infos[lp.slot].name.clone(),
                constraints: blame(plan, lp, &frontier, &mut bound),
            };
        }
        frontier = next;
    }
    Error::EmptySpace {
        at: params.first().cloned().unwrap_or_default(),
        params,
        constraints: Vec::new(),
    }
}

/// The rules of level `lp` that alone reject every value tried after the prefixes; all of
/// them when none does alone (they reject everything together).
fn blame(
    plan: &GroupPlan<'_>,
    lp: &LevelPlan<'_>,
    prefixes: &[Vec<u32>],
    bound: &mut [u64],
) -> Vec<String> {
    let values = lp.domain.len().min(VALUES) as u32;
    let prefixes = &prefixes[..prefixes.len().min(64)];
    let mut alone = Vec::new();
    let mut all = Vec::new();
    let mut passes_somewhere = |holds: &mut dyn FnMut(&mut [u64], u32) -> bool| {
        prefixes.iter().any(|path| {
            set_path(plan, path, bound);
            (0..values).any(|c| {
                bound[lp.slot] = lp.domain.raw(c);
                holds(bound, c)
            })
        })
    };
    for g in &lp.gens {
        let ok = passes_somewhere(&mut |b: &mut [u64], c: u32| {
            let v = match &lp.domain {
                Domain::Ints { lo, step, .. } => Some(lo + c as i128 * step),
                Domain::Set(_) => lp.set_ints.get(c as usize).copied(),
            };
            let rhs = (g.rhs)(&g.access.bound(b));
            matches!((v, rhs), (Some(v), Some(r)) if g.op.holds(v, r))
        });
        all.push(g.access.label.clone());
        if !ok {
            alone.push(g.access.label.clone());
        }
    }
    for c in &lp.checks {
        let ok = passes_somewhere(&mut |b: &mut [u64], _| Check::holds(c, b));
        all.push(c.access().label.clone());
        if !ok {
            alone.push(c.access().label.clone());
        }
    }
    if alone.is_empty() {
        all
    } else {
        alone
    }
}
