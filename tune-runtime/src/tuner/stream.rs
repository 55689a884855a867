//! The search loop of [`Tuner::asynchronous`](super::Tuner::asynchronous): the preparation
//! threads are kept busy. A new configuration is asked for as soon as one is measured, and
//! configurations are measured in the order their preparations finish, so that one slow
//! compilation holds up neither the device nor the other threads (in batches, the slowest
//! compilation of a batch sets the pace of all of it).

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::pool::{Pool, Wait};
use super::run::measure;
use super::state::{Proposal, State};
use crate::abort::AbortCondition;
use crate::evaluate::Evaluator;
use crate::search::Technique;
use crate::space::{Config, Space};
use crate::Result;

/// Runs the search until the abort condition or the technique says so, with at most
/// `depth` configurations proposed and not yet measured. Returns the time the measuring
/// thread waited for preparations.
pub(super) fn search<E: Evaluator>(
    state: &mut State<E::Cost>,
    evaluator: &E,
    space: &Space,
    technique: &mut dyn Technique,
    abort: &dyn AbortCondition,
    pool: &Pool<E>,
    depth: usize,
) -> Result<Duration> {
    let generation = pool.begin();
    let stuck_limit = 100_000 + state.memo.len();
    let mut stuck = 0usize;
    // Proposed, handed to the threads, not yet measured: by job number.
    let mut flight: HashMap<usize, (u128, Config)> = HashMap::new();
    // Proposed again while in flight: told the outcome once it is measured.
    let mut repeats: Vec<u128> = Vec::new();
    let mut jobs = 0usize;
    // The technique had nothing to propose; ask again only after telling it something.
    let mut dry = false;
    let mut waited = Duration::ZERO;
    let limit = abort.evaluation_limit();
    let result = loop {
        if abort.done(&state.progress) {
            break Ok(());
        }
        // Never more in flight than the evaluation budget has room for: a compilation
        // that is never measured would only hold up the end of the run.
        let budget_left = limit.map_or(usize::MAX, |n| {
            let left = n.saturating_sub(state.progress.evaluations + flight.len() as u64);
            usize::try_from(left).unwrap_or(usize::MAX)
        });
        let room = depth.saturating_sub(flight.len()).min(budget_left);
        if room > 0 && !dry {
            let asked = technique.ask(space, room);
            dry = asked.is_empty();
            for index in asked {
                let in_flight = |i| flight.values().any(|(j, _)| *j == i);
                match state.sort(technique, space, index, in_flight) {
                    Proposal::Measure(config) => {
                        pool.push(generation, jobs, &config);
                        flight.insert(jobs, (index, config));
                        jobs += 1;
                        stuck = 0;
                    }
                    Proposal::Repeat => repeats.push(index),
                    Proposal::Answered => stuck += 1,
                }
            }
            if stuck > stuck_limit {
                break Ok(());
            }
            if flight.is_empty() {
                if dry {
                    break Ok(());
                }
                continue;
            }
        }
        if flight.is_empty() {
            break Ok(());
        }
        // While the measuring thread waits for a slow compilation, a time budget can run
        // out: check it then too, once something valid was found (a run never ends
        // empty-handed because its first compilations were slow).
        let live = RefCell::new(
            (state.simulated.is_none() && state.progress.valid > 0).then(|| state.progress.clone()),
        );
        let (start, base) = (state.start, state.base_elapsed);
        let out_of_time = || {
            live.borrow().as_ref().is_some_and(|p| {
                let mut p = p.clone();
                p.elapsed = base + start.elapsed();
                abort.done(&p)
            })
        };
        let wait = Instant::now();
        let got = pool.next(generation, &out_of_time);
        waited += wait.elapsed();
        let Wait::Ready(got) = got else {
            state.progress.elapsed = state.progress.elapsed.max(state.elapsed());
            break Ok(());
        };
        let Some((k, (prepared, prep))) = got else {
            // The threads are gone (cannot happen while the pool lives).
            break Ok(());
        };
        let Some((index, config)) = flight.remove(&k) else {
            continue;
        };
        let outcome = prepared.and_then(|p| measure(evaluator, space, &config, p));
        let cost = match state.finish(evaluator, index, &config, prep, outcome) {
            Ok(c) => c,
            Err(e) => break Err(e),
        };
        technique.tell(space, index, cost);
        dry = false;
        repeats.retain(|&r| {
            if r == index {
                technique.tell(space, index, cost);
            }
            r != index
        });
        state.bar.update(&state.progress, abort, false);
        if abort.done(&state.progress) {
            state.progress.elapsed = state.progress.elapsed.max(state.elapsed());
            break Ok(());
        }
    };
    // What is still queued is skipped; what is being prepared is dropped unmeasured.
    pool.abandon();
    result.map(|()| waited)
}
