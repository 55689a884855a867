//! Tuning across machines through MPI (feature `mpi`, with rsmpi over OpenMPI or MPICH).
//!
//! Every rank runs the same program: it builds the same space and its own evaluator for the
//! devices of its machine (a [`Devices`](super::Devices) of them, or one evaluator), and
//! hands its [`Tuner`] to [`Cluster::tune`]. Rank 0 runs the technique, the log and the
//! database; every rank, rank 0 included, measures on its devices the configurations that
//! rank 0 hands them, each device preparing the next one while it measures. Only rank 0
//! writes files. Every device must be the same model ([`Error::MixedDevices`]).
//!
//! ```no_run
//! # fn main() -> tune_runtime::Result<()> {
//! use tune_runtime::abort::Evaluations;
//! use tune_runtime::evaluate::closure::Closure;
//! use tune_runtime::scale::mpi::Cluster;
//! use tune_runtime::{Config, Failure, Param, SpaceBuilder, Tuner};
//!
//! let cluster = Cluster::init()?;
//! let space = SpaceBuilder::new().param(Param::<u32>::range("X", 0..1000)).build()?;
//! let eval = Closure::new(|c: &Config| -> Result<f64, Failure> {
//!     Ok((c.get::<u32>(0) as f64 - 420.0).abs())
//! });
//! let tuner = Tuner::new(space, eval)
//!     .abort(Evaluations(200))
//!     .log("target/tune/mpi.jsonl")
//!     .progress(false);
//! if let Some(result) = cluster.tune(tuner)? {
//!     println!("{}", result.summary()); // rank 0 only
//! }
//! # Ok(()) }
//! ```
//!
//! Launch it with `mpirun -np 4 --enable-recovery program` (OpenMPI) or `srun` under Slurm
//! (the README has an example). A rank that stops answering for
//! [`Cluster::silence_limit`] (killed, its machine gone) is dropped: the configurations it
//! was measuring are recorded as failed (at most one per device of that rank), those it held
//! go to other ranks, and the run goes on. When rank 0 itself goes silent that long, the
//! other ranks stop with an error. Without `--enable-recovery` (OpenMPI) or with Slurm's
//! `--kill-on-bad-exit`, the launcher itself ends the whole job when one rank dies; a run
//! with a log then resumes where it stopped (`Tuner::resume`).
//!
//! A rank waits for rank 0 to start the run without a limit (rank 0 may take long to set
//! up its devices); rank 0 waits [`Cluster::silence_limit`] for the other ranks to join, and
//! tells one that joins later that the run went on without it.

mod rank;
mod root;
mod wire;

use std::time::{Duration, Instant};

use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use serde::de::DeserializeOwned;
use serde::Serialize;

use self::root::Root;
use self::wire::{decode, encode, FromRoot, ToRoot, FROM_ROOT, TO_ROOT};
use crate::evaluate::Evaluator;
use crate::results::fingerprint::space_hash;
use crate::tuner::{Tuner, TuningResult};
use crate::{Error, Result};

/// How often a rank says it is still there while it serves.
const ALIVE_EVERY: Duration = Duration::from_millis(500);

/// Default of [`Cluster::silence_limit`].
const SILENCE: Duration = Duration::from_secs(30);

/// How long a rank or rank 0 sleeps when there was nothing to do, between polls.
const IDLE: Duration = Duration::from_micros(200);

/// The MPI processes of one tuning run: initialised once per process by [`Cluster::init`],
/// finalised when dropped.
pub struct Cluster {
    universe: Option<mpi::environment::Universe>,
    rank: usize,
    size: usize,
    host: String,
    silence: Duration,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("host", &self.host)
            .field("silence", &self.silence)
            .finish_non_exhaustive()
    }
}

fn unavailable(reason: impl Into<String>) -> Error {
    Error::BackendUnavailable {
        backend: "mpi".into(),
        reason: reason.into(),
    }
}

impl Cluster {
    /// Initialises MPI (with threads: rank 0 talks to the other ranks on a thread of its
    /// own while it searches).
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] when MPI was initialised already in this process, or
    /// the MPI library does not allow calls from more than one thread.
    pub fn init() -> Result<Self> {
        let Some((universe, threading)) = mpi::initialize_with_threading(mpi::Threading::Multiple)
        else {
            return Err(unavailable(
                "MPI was initialised already in this process; call `Cluster::init` once, \
                 before anything else initialises MPI",
            ));
        };
        if threading < mpi::Threading::Serialized {
            return Err(unavailable(format!(
                "the MPI library allows calls from one thread only ({threading:?}); use an \
                 MPI built with thread support (OpenMPI and MPICH are)"
            )));
        }
        let world = universe.world();
        let host = mpi::environment::processor_name().unwrap_or_else(|_| "?".into());
        Ok(Cluster {
            rank: usize::try_from(world.rank()).unwrap_or(0),
            size: usize::try_from(world.size()).unwrap_or(1),
            universe: Some(universe),
            host,
            silence: SILENCE,
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether this is rank 0, the one that searches and writes.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }

    /// The name of this rank's machine, as MPI reports it.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// How long a rank may send nothing before rank 0 counts it as lost, and rank 0 before
    /// the other ranks stop (default 30 s; every rank of a run should set the same). Ranks
    /// say they are there twice a second, also while they measure.
    #[must_use]
    pub fn silence_limit(mut self, limit: Duration) -> Self {
        self.silence = limit.max(ALIVE_EVERY * 2);
        self
    }

    /// Runs `tuner` on every rank: on rank 0, the search, with the devices of every rank
    /// measuring, its log and database, and the re-measurement of the finalists on a device
    /// of rank 0; returns its result. On the other ranks, measures what rank 0 hands out
    /// until the search ends; returns `None`.
    ///
    /// # Errors
    /// On rank 0, those of [`Tuner::run`]; [`Error::MixedDevices`] when the ranks' devices
    /// are not all the same model; [`Error::Backend`] when a rank built another space. On
    /// the other ranks, [`Error::Backend`] when rank 0 refused the run (with its reason).
    pub fn tune<E>(&self, tuner: Tuner<E>) -> Result<Option<TuningResult<E::Cost>>>
    where
        E: Evaluator,
        E::Cost: Serialize + DeserializeOwned,
    {
        if self.size <= 1 {
            return tuner.run().map(Some);
        }
        let link = Link::world();
        if self.rank != 0 {
            let (space, evaluator) = tuner.parts();
            rank::serve(self, &link, space, evaluator)?;
            return Ok(None);
        }
        let (space, evaluator) = tuner.parts();
        let model = evaluator.device();
        let hash = space_hash(space);
        let ranks = self.hellos::<E::Cost>(&link);
        let mut mixed = vec![format!("rank 0 ({}): {model}", self.host)];
        let mut problems = Vec::new();
        for (r, hello) in &ranks {
            if hello.model != model {
                mixed.push(format!("rank {r} ({}): {}", hello.host, hello.model));
            }
            if hello.space != hash {
                problems.push(format!(
                    "rank {r} ({}) built another search space; every rank must build the \
                     same space (same parameters, values and constraints)",
                    hello.host
                ));
            }
        }
        let refused = if mixed.len() > 1 {
            Some(Error::MixedDevices { devices: mixed })
        } else if !problems.is_empty() {
            Some(Error::Backend {
                backend: "mpi".into(),
                message: problems.join("; "),
            })
        } else {
            None
        };
        if let Some(e) = refused {
            for r in 1..self.size {
                link.send(r, FROM_ROOT, &FromRoot::Stop(Some(e.to_string())));
            }
            return Err(e);
        }
        for (r, _) in &ranks {
            link.send(*r, FROM_ROOT, &FromRoot::Start);
        }
        let result = tuner
            .map_evaluator(|inner| Root::new(inner, self, &ranks))
            .run();
        // The search sends every rank a stop when it ends; a run that failed before its
        // search did not. A rank that joined too late waits for a word too.
        for r in 1..self.size {
            let stop = if ranks.iter().any(|(joined, _)| *joined == r) {
                FromRoot::Stop(None)
            } else {
                FromRoot::Stop(Some(format!(
                    "this rank said nothing within {:?} of the start (see \
                     `Cluster::silence_limit`); the run went on without it",
                    self.silence
                )))
            };
            link.send(r, FROM_ROOT, &stop);
        }
        result.map(Some)
    }

    /// The hello of every other rank that says it within the silence limit.
    fn hellos<C: DeserializeOwned>(&self, link: &Link) -> Vec<(usize, Hello)> {
        let mut got: Vec<(usize, Hello)> = Vec::new();
        let t = Instant::now();
        while got.len() + 1 < self.size && t.elapsed() < self.silence {
            let Some((from, bytes)) = link.poll(TO_ROOT) else {
                std::thread::sleep(IDLE);
                continue;
            };
            match decode::<ToRoot<C>>(&bytes) {
                Ok(ToRoot::Hello {
                    units,
                    model,
                    host,
                    space,
                }) if !got.iter().any(|(r, _)| *r == from) => got.push((
                    from,
                    Hello {
                        units,
                        model,
                        host,
                        space,
                    },
                )),
                Ok(ToRoot::Quit(why)) => eprintln!("tune: rank {from} does not take part: {why}"),
                _ => {}
            }
        }
        if got.len() + 1 < self.size {
            eprintln!(
                "tune: {} of {} ranks said nothing within {:?}; tuning without them",
                self.size - 1 - got.len(),
                self.size - 1,
                self.silence
            );
        }
        got.sort_by_key(|(r, _)| *r);
        got
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // MPI_Finalize.
        drop(self.universe.take());
    }
}

/// What a rank said when it joined.
#[derive(Clone, Debug)]
struct Hello {
    units: Vec<String>,
    model: String,
    host: String,
    space: String,
}

/// Point-to-point messages of the world communicator.
struct Link(SimpleCommunicator);

impl Link {
    fn world() -> Self {
        Link(SimpleCommunicator::world())
    }

    fn send<T: Serialize>(&self, rank: usize, tag: i32, msg: &T) {
        let bytes = encode(msg);
        let rank = i32::try_from(rank).unwrap_or(i32::MAX);
        self.0.process_at_rank(rank).send_with_tag(&bytes[..], tag);
    }

    /// A message with `tag` from any rank, if one is there.
    fn poll(&self, tag: i32) -> Option<(usize, Vec<u8>)> {
        let probed = self.0.any_process().immediate_matched_probe_with_tag(tag)?;
        let (bytes, status) = probed.matched_receive_vec::<u8>();
        Some((usize::try_from(status.source_rank()).unwrap_or(0), bytes))
    }
}
