//! A rank other than 0: says which devices it has, then measures on them what rank 0 hands
//! out until it says stop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::wire::{decode, to_wire, FromRoot, ToRoot, FROM_ROOT, TO_ROOT};
use super::{Cluster, Link, ALIVE_EVERY, IDLE};
use crate::evaluate::{Evaluator, Failure};
use crate::results::fingerprint::space_hash;
use crate::scale::devices::serve_unit;
use crate::scale::{Event, Job};
use crate::space::Space;
use crate::{Error, Result};

/// Serves rank 0 until it says stop.
///
/// # Errors
/// [`Error::Backend`] when rank 0 refused the run (its reason).
pub(super) fn serve<E>(cluster: &Cluster, link: &Link, space: &Space, evaluator: &E) -> Result<()>
where
    E: Evaluator,
    E::Cost: Serialize + DeserializeOwned,
{
    let units: Vec<String> = match evaluator.spread() {
        Some(s) => s.units().iter().map(ToString::to_string).collect(),
        None => vec!["0".into()],
    };
    let hello: ToRoot<E::Cost> = ToRoot::Hello {
        units: units.clone(),
        model: evaluator.device(),
        host: cluster.host.clone(),
        space: space_hash(space),
    };
    link.send(0, TO_ROOT, &hello);
    // Rank 0 starts the run, or refuses it.
    loop {
        match link.poll(FROM_ROOT).map(|(_, b)| decode::<FromRoot>(&b)) {
            Some(Ok(FromRoot::Start)) => break,
            Some(Ok(FromRoot::Stop(None))) => return Ok(()),
            Some(Ok(FromRoot::Stop(Some(why)))) => {
                return Err(Error::Backend {
                    backend: "mpi".into(),
                    message: format!("rank 0 refused the run: {why}"),
                })
            }
            _ => std::thread::sleep(IDLE),
        }
    }
    let stop = AtomicBool::new(false);
    let mut lost = None;
    let (events_tx, events) = mpsc::channel::<Event<E::Cost>>();
    let (mut senders, receivers): (Vec<Sender<Job>>, Vec<_>) =
        units.iter().map(|_| mpsc::channel::<Job>()).unzip();
    std::thread::scope(|s| {
        let stop = &stop;
        s.spawn(move || match evaluator.spread() {
            Some(devices) => devices.serve(space, receivers, events_tx, stop),
            None => {
                if let Some(rx) = receivers.into_iter().next() {
                    serve_unit(evaluator, 0, 1, space, rx, events_tx, stop);
                }
            }
        });
        let mut alive = Instant::now();
        let mut heard = Instant::now();
        'run: loop {
            let mut busy = false;
            while let Some((_, bytes)) = link.poll(FROM_ROOT) {
                busy = true;
                heard = Instant::now();
                match decode::<FromRoot>(&bytes) {
                    Ok(FromRoot::Job { unit, id, index }) => {
                        let tx = usize::try_from(unit).ok().and_then(|u| senders.get(u));
                        let config = space.get(index);
                        match (tx, config) {
                            (Some(tx), Some(config)) => {
                                let _ = tx.send(Job { id, index, config });
                            }
                            _ => {
                                let outcome = Err(Failure::Other(format!(
                                    "rank {} has no device {unit} or no configuration {index}",
                                    cluster.rank
                                )));
                                let done: ToRoot<E::Cost> = ToRoot::Done {
                                    unit,
                                    id,
                                    prep: std::time::Duration::ZERO,
                                    outcome,
                                };
                                link.send(0, TO_ROOT, &done);
                            }
                        }
                    }
                    Ok(FromRoot::Stop(_)) => break 'run,
                    Ok(FromRoot::Start | FromRoot::Alive) => {}
                    Err(why) => eprintln!("tune: rank {}: from rank 0: {why}", cluster.rank),
                }
            }
            while let Ok(event) = events.try_recv() {
                busy = true;
                let msg: ToRoot<E::Cost> = match event {
                    Event::Started { unit, id } => ToRoot::Started {
                        unit: u32::try_from(unit).unwrap_or(u32::MAX),
                        id,
                    },
                    Event::Done(d) => ToRoot::Done {
                        unit: u32::try_from(d.unit).unwrap_or(u32::MAX),
                        id: d.id,
                        prep: d.prep,
                        outcome: to_wire(d.outcome),
                    },
                    Event::Gone { .. } => continue,
                };
                link.send(0, TO_ROOT, &msg);
            }
            if alive.elapsed() >= ALIVE_EVERY {
                link.send(0, TO_ROOT, &ToRoot::<E::Cost>::Alive);
                alive = Instant::now();
            }
            if heard.elapsed() > cluster.silence {
                lost = Some(heard.elapsed());
                break 'run;
            }
            if !busy {
                std::thread::sleep(IDLE);
            }
        }
        // Devices finish what they measure, then stop.
        stop.store(true, Ordering::Relaxed);
        senders.clear();
    });
    match lost {
        Some(silent) => Err(Error::Backend {
            backend: "mpi".into(),
            message: format!(
                "rank 0 sent nothing for {silent:.1?} (killed, or its machine is gone); this \
                 rank stopped. Start the run again with `Tuner::resume`: it goes on from rank \
                 0's log"
            ),
        }),
        None => Ok(()),
    }
}
