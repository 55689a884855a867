//! The end of a run: the finalists are measured again, interleaved with the recorded best
//! and the baselines; the winner is recorded in the database.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::pool::{prepare, Pool, Prepared, Wait};
use super::result::{counts, Best, TuningResult};
use super::run::{guard, measure};
use super::state::State;
use super::Baseline;
use crate::cost::Cost;
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::measure::{self, Contender, Finalist, Remeasure, Rounds};
use crate::results::database::{Entry, Fingerprint, Policy, Ranked};
use crate::results::{timestamp, Database, Named, Record};
use crate::space::{Config, Space};
use crate::{Error, Result};

/// The best configuration the database records for this tunable, device and input key.
pub(super) struct Recorded {
    config: Config,
    index: u128,
    cost: f64,
    objectives: Named<f64>,
    /// The entry as read, so that recording the winner can tell whether another run
    /// changed it meanwhile.
    entry: Entry,
}

/// What the run knows besides its state when it ends.
pub(super) struct Finish {
    pub(super) space: Space,
    pub(super) name: String,
    pub(super) input_key: String,
    pub(super) device: String,
    pub(super) seed: u64,
    pub(super) technique: String,
    pub(super) log: Option<PathBuf>,
    pub(super) database: Option<(Database, Policy)>,
    pub(super) recorded: Option<Recorded>,
    pub(super) fingerprint: Option<String>,
}

/// The outcome of the re-measurement.
pub(super) struct Contest<C> {
    finalists: Vec<Finalist<C>>,
    /// One record per re-measured configuration, as logged.
    records: Vec<Record>,
    winner: Option<Best<C>>,
    /// Whether the recorded best took part (so the winner was measured beside it).
    recorded_took_part: bool,
    took: Duration,
}

impl<C> Contest<C> {
    fn none() -> Self {
        Contest {
            finalists: Vec::new(),
            records: Vec::new(),
            winner: None,
            recorded_took_part: false,
            took: Duration::ZERO,
        }
    }
}

/// Baseline configurations must be in the space.
///
/// # Errors
/// [`Error::NotInSpace`] naming the baseline.
pub(super) fn check_baselines<C>(space: &Space, baselines: &[Baseline<C>]) -> Result<()> {
    for b in baselines {
        if let Baseline::Config { name, config } = b {
            if !space.contains(config) {
                return Err(Error::NotInSpace(format!(
                    "the baseline configuration `{name}` breaks a constraint or does not \
                     fit the space; give a configuration of this space"
                )));
            }
        }
    }
    Ok(())
}

/// The recorded best that takes part in the re-measurement: only under
/// [`Policy::KeepBetter`], only if it is current (tuned for this code, space and tune; see
/// [`Database::recorded`]) and its configuration is in the space.
///
/// # Errors
/// An unreadable database file.
pub(super) fn recorded_best(
    db: Option<&Database>,
    policy: Policy,
    tunable: &str,
    device: &str,
    input_key: &str,
    space: &Space,
    code: Option<&str>,
) -> Result<Option<Recorded>> {
    let Some(db) = db.filter(|_| policy == Policy::KeepBetter) else {
        return Ok(None);
    };
    Ok(db
        .recorded(tunable, device, input_key, space, code)?
        .and_then(|e| {
            let config = e.best.config(space).ok()?;
            Some(Recorded {
                index: space.index_of(&config)?,
                config,
                cost: e.cost,
                objectives: e.objectives.clone(),
                entry: e,
            })
        }))
}

/// One contender, before it is measured.
struct Entrant {
    contender: Contender,
    config: Option<Config>,
    index: Option<u128>,
    before: Option<f64>,
    /// The baseline closure that measures it, by position.
    closure: Option<usize>,
}

/// Measures the finalists again (see [`crate::measure`]) and picks the winner. Nothing
/// happens when re-measurement is off, nothing was valid, or the evaluator replays
/// recorded data.
///
/// # Errors
/// I/O errors of the log.
pub(super) fn remeasure<E: Evaluator>(
    state: &mut State<E::Cost>,
    evaluator: &E,
    space: &Space,
    pool: Option<&Pool<E>>,
    plan: Remeasure,
    recorded: Option<&Recorded>,
    baselines: &mut [Baseline<E::Cost>],
) -> Result<Contest<E::Cost>> {
    state.ended = Some(state.elapsed());
    let Some(best) = state.best() else {
        return Ok(Contest::none());
    };
    if plan.is_off() || evaluator.charged_time(space, &best.config).is_some() {
        return Ok(Contest::none());
    }
    let t = Instant::now();
    // The search's best few, or the best stopped early when nothing else was valid.
    let searched: Vec<Best<E::Cost>> = if state.top.is_empty() {
        state.stopped.iter().cloned().collect()
    } else {
        state.top.iter().take(plan.finalists).cloned().collect()
    };
    let entrants = entrants(&searched, recorded, baselines, space);
    let recorded_took_part = recorded.is_some();
    let mut rounds = Rounds::new(entrants.len());
    let mut prep_s = vec![0.0; entrants.len()];
    let mut run_s = vec![0.0; entrants.len()];
    for round in 0..plan.rounds {
        let order = rounds.order(round);
        if order.is_empty() {
            break;
        }
        // Prepare the round's configurations first (ahead, on the pool), then measure
        // every contender back to back, so that they are timed under the same conditions.
        let configs: Vec<(usize, &Config)> = order
            .iter()
            .filter_map(|&k| entrants[k].config.as_ref().map(|c| (k, c)))
            .collect();
        let mut prepared = prepare_all(evaluator, space, pool, &configs);
        for &k in &order {
            let outcome = match (&entrants[k].config, entrants[k].closure) {
                (Some(config), _) => {
                    let at = configs.iter().position(|(j, _)| *j == k);
                    let (p, took) = match at.and_then(|i| prepared[i].take()) {
                        Some(p) => p,
                        None => prepare(evaluator, space, config),
                    };
                    prep_s[k] += took.as_secs_f64();
                    p.and_then(|p| measure(evaluator, space, config, p))
                        .map(|(m, took)| {
                            run_s[k] += took.as_secs_f64();
                            m
                        })
                }
                (None, Some(b)) => {
                    let t = Instant::now();
                    let m = run_baseline(&mut baselines[b]);
                    run_s[k] += t.elapsed().as_secs_f64();
                    m
                }
                (None, None) => Err(Failure::Other("nothing to measure".into())),
            };
            rounds.add(k, outcome);
        }
    }

    let finalists: Vec<Finalist<E::Cost>> = entrants
        .into_iter()
        .zip(rounds.finish())
        .map(|(e, outcome)| Finalist {
            contender: e.contender,
            config: e.config,
            index: e.index,
            before: e.before,
            outcome,
        })
        .collect();
    let mut records = Vec::new();
    for (k, f) in finalists.iter().enumerate() {
        if let (Some(config), Some(index)) = (&f.config, f.index) {
            let r = remeasure_record(state, f, config, index, prep_s[k], run_s[k]);
            state.write(&r)?;
            records.push(r);
        }
    }
    let winner = measure::winner(&finalists).and_then(|w| {
        let f = &finalists[w];
        let remeasured = f.outcome.as_ref().ok().cloned();
        match f.contender {
            Contender::Searched(j) => searched.get(j).cloned().map(|b| Best { remeasured, ..b }),
            Contender::Recorded => recorded.map(|r| Best {
                config: r.config.clone(),
                index: r.index,
                cost: None,
                scalar: r.cost,
                objectives: r.objectives.clone(),
                stopped_early: false,
                remeasured,
            }),
            Contender::Baseline(_) => None,
        }
    });
    Ok(Contest {
        finalists,
        records,
        winner,
        recorded_took_part,
        took: t.elapsed(),
    })
}

/// The contenders, in order: the search's best few, the recorded best (unless it is one
/// of them), the baselines.
fn entrants<C: Cost>(
    searched: &[Best<C>],
    recorded: Option<&Recorded>,
    baselines: &[Baseline<C>],
    space: &Space,
) -> Vec<Entrant> {
    let mut entrants: Vec<Entrant> = searched
        .iter()
        .enumerate()
        .map(|(k, b)| Entrant {
            contender: Contender::Searched(k),
            config: Some(b.config.clone()),
            index: Some(b.index),
            before: Some(b.scalar),
            closure: None,
        })
        .collect();
    if let Some(r) = recorded.filter(|r| !searched.iter().any(|b| b.index == r.index)) {
        entrants.push(Entrant {
            contender: Contender::Recorded,
            config: Some(r.config.clone()),
            index: Some(r.index),
            before: Some(r.cost),
            closure: None,
        });
    }
    for (k, b) in baselines.iter().enumerate() {
        entrants.push(match b {
            Baseline::Closure { name, .. } => Entrant {
                contender: Contender::Baseline(name.clone()),
                config: None,
                index: None,
                before: None,
                closure: Some(k),
            },
            Baseline::Config { name, config } => Entrant {
                contender: Contender::Baseline(name.clone()),
                config: Some(config.clone()),
                index: space.index_of(config),
                before: None,
                closure: None,
            },
        });
    }
    entrants
}

/// Prepares `configs` (on the pool when there is one and more than one), in order.
fn prepare_all<E: Evaluator>(
    evaluator: &E,
    space: &Space,
    pool: Option<&Pool<E>>,
    configs: &[(usize, &Config)],
) -> Vec<Option<Prepared<E>>> {
    let mut ready: Vec<Option<Prepared<E>>> = (0..configs.len()).map(|_| None).collect();
    match pool {
        Some(pool) if configs.len() > 1 => {
            let generation = pool.submit(configs.iter().map(|(_, c)| *c));
            for (k, (_, config)) in configs.iter().enumerate() {
                let fallback = || prepare(evaluator, space, config);
                if let Wait::Ready(p) = pool.collect(generation, k, &mut ready, fallback, &|| false)
                {
                    ready[k] = Some(p);
                }
            }
            pool.abandon();
        }
        _ => {
            for (k, (_, config)) in configs.iter().enumerate() {
                ready[k] = Some(prepare(evaluator, space, config));
            }
        }
    }
    ready
}

fn run_baseline<C: Cost>(b: &mut Baseline<C>) -> std::result::Result<Measured<C>, Failure> {
    match b {
        Baseline::Closure { run, .. } => guard(run),
        Baseline::Config { .. } => Err(Failure::Other("not a closure".into())),
    }
}

/// The log record of a re-measured finalist: the median round's cost, every round's
/// samples, and every round's scalar cost in `remeasured` (empty if it failed).
fn remeasure_record<C: Cost>(
    state: &mut State<C>,
    f: &Finalist<C>,
    config: &Config,
    index: u128,
    prepare_s: f64,
    run_s: f64,
) -> Record {
    let elapsed = state.elapsed();
    let mut r = state.record_of(index, config, elapsed);
    r.prepare_s = prepare_s;
    r.run_s = run_s;
    match &f.outcome {
        Ok(m) => {
            r.status = "ok".into();
            r.cost = Some(m.cost.scalar());
            r.objectives = Named(m.cost.objectives());
            r.samples = m.samples.clone();
            r.stopped_early = m.stopped_early;
            r.remeasured = Some(m.rounds.clone());
        }
        Err(e) => {
            let (status, detail) = Record::status_of(e);
            r.status = status;
            r.detail = Some(format!("re-measuring the {}: {detail}", f.contender));
            r.remeasured = Some(Vec::new());
        }
    }
    r
}

/// The result of a run: the winner (or the search's best), the database written.
///
/// # Errors
/// [`Error::NoValidConfiguration`], or I/O errors of the database.
pub(super) fn into_result<C: Cost>(
    state: State<C>,
    contest: Contest<C>,
    info: Finish,
) -> Result<TuningResult<C>> {
    let elapsed = state.ended.unwrap_or_else(|| state.elapsed());
    let remeasured = contest.winner.is_some();
    let Some(best) = contest.winner.or_else(|| state.best().cloned()) else {
        return Err(Error::NoValidConfiguration {
            evaluated: state.progress.evaluations,
            failures: if info.space.is_empty() {
                "the search space is empty".into()
            } else if state.failures.is_empty() {
                "nothing was evaluated".into()
            } else {
                counts(&state.failures)
            },
        });
    };
    let mut database_path = None;
    if let Some((db, policy)) = &info.database {
        // Measured beside the recorded best, the winner is known to be the faster: keep the
        // recorded entry if it won, replace it otherwise. Without that, compare the
        // recorded costs as the policy says.
        let decided = remeasured && contest.recorded_took_part;
        let recorded_won = info.recorded.as_ref().map(|r| r.index) == Some(best.index);
        if !(decided && recorded_won) {
            let entry = entry_of(&state, &best, &info);
            let changed = if decided {
                let against = info.recorded.as_ref().map(|r| &r.entry);
                db.record_remeasured(&info.name, &info.device, entry, &info.space, against)?
            } else {
                db.record(&info.name, &info.device, entry, &info.space, *policy)?
            };
            if changed {
                database_path = Some(db.path(&info.name, &info.device));
            }
        }
    }
    Ok(TuningResult {
        best,
        finalists: contest.finalists,
        records: state.records,
        remeasure_records: contest.records,
        evaluations: state.progress.evaluations,
        valid: state.progress.valid,
        resumed: state.resumed,
        waiting_for_preparation: state.waited,
        failures: state.failures,
        elapsed,
        remeasuring: contest.took,
        simulated: state.simulated.is_some(),
        space: info.space,
        tunable: info.name,
        input_key: info.input_key,
        device: info.device,
        technique: info.technique,
        seed: info.seed,
        log: info.log,
        database: database_path,
    })
}

/// The database entry of a run's winner, with the search's value and the re-measured one.
fn entry_of<C: Cost>(state: &State<C>, best: &Best<C>, info: &Finish) -> Entry {
    let mut valid: Vec<&Record> = state.records.iter().filter(|r| r.is_ok()).collect();
    valid.sort_by(|a, b| {
        let a = a.objectives.0.iter().map(|o| o.1);
        let b = b.objectives.0.iter().map(|o| o.1);
        a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal)
    });
    Entry {
        input_key: info.input_key.clone(),
        best: Named::of(&info.space, &best.config),
        cost: best.scalar,
        objectives: best.objectives.clone(),
        remeasured: best.remeasured.as_ref().map(|r| r.spread),
        technique: info.technique.clone(),
        seed: info.seed,
        evaluations: state.progress.evaluations,
        valid: state.progress.valid,
        failures: state.failures.clone(),
        space_len: info.space.len().to_string(),
        top: valid
            .iter()
            .filter_map(|r| {
                Some(Ranked {
                    config: r.config.clone(),
                    cost: r.cost?,
                })
            })
            .take(5)
            .collect(),
        timestamp: timestamp(),
        fingerprint: Some(Fingerprint::new(&info.space, info.fingerprint.as_deref())),
    }
}
