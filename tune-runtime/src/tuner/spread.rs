//! The search on several devices at once ([`crate::scale`]): the technique is asked for as
//! many configurations as the devices take, and every outcome is recorded and told as soon
//! as it comes back, whichever device measured it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::state::State;
use crate::abort::AbortCondition;
use crate::cost::Cost;
use crate::scale::{Dispatch, Spread};
use crate::search::Technique;
use crate::space::Space;
use crate::Result;

/// How long the loop waits for a completion before it looks at the clock again.
const POLL: Duration = Duration::from_millis(50);

/// The search, until the abort condition or the technique says so, with `spread`'s devices
/// measuring at once.
pub(super) fn search<C: Cost>(
    state: &mut State<C>,
    spread: &dyn Spread<C>,
    space: &Space,
    technique: &mut dyn Technique,
    abort: &dyn AbortCondition,
) -> Result<()> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let mut d = Dispatch::start(scope, spread, space, &stop);
        let result = drive(state, &mut d, space, technique, abort);
        stop.store(true, Ordering::Relaxed);
        d.close();
        state.progress.elapsed = state.progress.elapsed.max(state.elapsed());
        result
    })
}

fn drive<C: Cost + Send>(
    state: &mut State<C>,
    d: &mut Dispatch<'_, C>,
    space: &Space,
    technique: &mut dyn Technique,
    abort: &dyn AbortCondition,
) -> Result<()> {
    let limit = abort.evaluation_limit();
    // Proposals of a configuration already handed out: told its outcome when it comes.
    let mut again: HashMap<u128, usize> = HashMap::new();
    let mut in_flight: HashSet<u128> = HashSet::new();
    let stuck_limit = 100_000 + state.memo.len();
    let mut stuck = 0usize;
    let mut exhausted = false;
    while !abort.done(&state.progress) {
        let left = limit.map_or(usize::MAX, |l| {
            usize::try_from(l.saturating_sub(state.progress.evaluations)).unwrap_or(usize::MAX)
        });
        let room = d.free().min(left.saturating_sub(d.in_flight()));
        if room > 0 && !exhausted && d.any_live() {
            let asked = technique.ask(space, room);
            exhausted = asked.is_empty();
            for index in asked {
                if let Some(&cost) = state.memo.get(&index) {
                    technique.tell(space, index, cost);
                    stuck += 1;
                } else if in_flight.contains(&index) {
                    *again.entry(index).or_insert(0) += 1;
                } else if let Some(config) = space.get(index) {
                    stuck = 0;
                    in_flight.insert(index);
                    d.submit(index, config);
                } else {
                    technique.tell(space, index, None);
                    stuck += 1;
                }
            }
        }
        if d.in_flight() == 0 {
            if exhausted || stuck > stuck_limit || !d.any_live() {
                break;
            }
            continue;
        }
        let Some(c) = d.next(POLL) else {
            // Nothing came back yet: a time budget may have run out meanwhile (only once
            // something valid was found, as in the search on one device).
            if state.simulated.is_none() && state.progress.valid > 0 {
                let mut p = state.progress.clone();
                p.elapsed = state.elapsed();
                if abort.done(&p) {
                    break;
                }
            }
            continue;
        };
        in_flight.remove(&c.index);
        let charge =
            c.at.map(|at| at.saturating_sub(state.simulated.unwrap_or(Duration::ZERO)));
        let index = c.index;
        let cost = state.finish_on(charge, Some(c.unit), index, &c.config, c.prep, c.outcome)?;
        technique.tell(space, index, cost);
        for _ in 0..again.remove(&index).unwrap_or(0) {
            technique.tell(space, index, cost);
        }
        state.bar.update(&state.progress, abort, false);
    }
    Ok(())
}
