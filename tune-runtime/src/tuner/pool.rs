//! CPU threads that prepare (compile) configurations ahead of measurement.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use super::run::guard;
use crate::evaluate::{Evaluator, Failure};
use crate::space::{Config, Space};

/// A preparation's outcome and how long it took.
pub(crate) type Prepared<E> = (Result<<E as Evaluator>::Prepared, Failure>, Duration);

/// Prepares one configuration on the calling thread, turning a panic into a failure.
pub(crate) fn prepare<E: Evaluator>(evaluator: &E, space: &Space, config: &Config) -> Prepared<E> {
    let t = Instant::now();
    let p = guard(|| evaluator.prepare(space, config));
    (p, t.elapsed())
}

/// The preparation threads of a run. A job carries the generation of its batch; jobs of
/// an abandoned batch are skipped. The threads live as long as the run, so a batch costs
/// channel messages, not spawns.
pub(super) struct Pool<E: Evaluator> {
    jobs: mpsc::Sender<(u64, usize, Config)>,
    done: mpsc::Receiver<(u64, usize, Prepared<E>)>,
    generation: Arc<AtomicU64>,
}

/// What waiting for a preparation ended with.
pub(super) enum Wait<P> {
    /// The preparation is done.
    Ready(P),
    /// The caller's time ran out first.
    OutOfTime,
}

impl<E: Evaluator> Pool<E> {
    /// Starts `workers` threads in `scope`.
    pub(super) fn start<'scope, 'env>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        evaluator: &'env E,
        space: &'env Space,
        workers: usize,
    ) -> Self {
        let (jobs, job_rx) = mpsc::channel::<(u64, usize, Config)>();
        let (done_tx, done) = mpsc::channel();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let generation = Arc::new(AtomicU64::new(0));
        for _ in 0..workers {
            let (job_rx, done_tx, generation) =
                (job_rx.clone(), done_tx.clone(), generation.clone());
            scope.spawn(move || loop {
                let job = match job_rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok((g, k, config)) = job else {
                    return; // the run is over
                };
                if g != generation.load(Ordering::Acquire) {
                    continue;
                }
                if done_tx
                    .send((g, k, prepare(evaluator, space, &config)))
                    .is_err()
                {
                    return;
                }
            });
        }
        Pool {
            jobs,
            done,
            generation,
        }
    }

    /// Hands a batch to the threads; returns the batch's generation, to collect it with
    /// [`Pool::collect`].
    pub(super) fn submit<'c>(&self, configs: impl IntoIterator<Item = &'c Config>) -> u64 {
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        for (k, config) in configs.into_iter().enumerate() {
            if self.jobs.send((generation, k, config.clone())).is_err() {
                break;
            }
        }
        generation
    }

    /// Waits until the `k`-th configuration of batch `generation` is prepared (storing any
    /// other of that batch that arrives meanwhile in `ready`), unless `out_of_time` says to
    /// stop waiting; it is asked every 50 ms.
    pub(super) fn collect(
        &self,
        generation: u64,
        k: usize,
        ready: &mut [Option<Prepared<E>>],
        fallback: impl Fn() -> Prepared<E>,
        out_of_time: &dyn Fn() -> bool,
    ) -> Wait<Prepared<E>> {
        while ready[k].is_none() {
            match self.done.recv_timeout(Duration::from_millis(50)) {
                Ok((g, j, p)) if g == generation => {
                    if let Some(slot) = ready.get_mut(j) {
                        *slot = Some(p);
                    }
                }
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if out_of_time() {
                        return Wait::OutOfTime;
                    }
                }
                // The workers are gone (cannot happen while the pool lives): prepare here.
                Err(mpsc::RecvTimeoutError::Disconnected) => ready[k] = Some(fallback()),
            }
        }
        match ready[k].take() {
            Some(p) => Wait::Ready(p),
            None => Wait::Ready(fallback()),
        }
    }

    /// Starts a stream of single jobs ([`Pool::push`], collected in any order with
    /// [`Pool::next`]); returns its generation. Abandons the current batch.
    pub(super) fn begin(&self) -> u64 {
        self.generation.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Hands job `k` of stream `generation` to the threads.
    pub(super) fn push(&self, generation: u64, k: usize, config: &Config) {
        // The threads outlive the pool's users; a send fails only once they are gone, and
        // `next` then reports the job as lost.
        let _ = self.jobs.send((generation, k, config.clone()));
    }

    /// The next job of stream `generation` to finish, whichever it is, unless
    /// `out_of_time` (asked every 50 ms) says to stop waiting. `None` also when the threads
    /// are gone.
    pub(super) fn next(
        &self,
        generation: u64,
        out_of_time: &dyn Fn() -> bool,
    ) -> Wait<Option<(usize, Prepared<E>)>> {
        loop {
            match self.done.recv_timeout(Duration::from_millis(50)) {
                Ok((g, k, p)) if g == generation => return Wait::Ready(Some((k, p))),
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if out_of_time() {
                        return Wait::OutOfTime;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Wait::Ready(None),
            }
        }
    }

    /// Abandons what is left of the current batch: the threads skip it.
    pub(super) fn abandon(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}
