//! Background preparation: threads that prepare (compile) the configurations an online
//! tuner will try next, off the caller's path.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::PrepareFn;
use crate::evaluate::Failure;
use crate::space::{Config, Space};

/// A preparation's outcome and how long it took.
pub(super) type Prepared<P> = (Result<P, Failure>, Duration);

struct Job<P> {
    prepare: PrepareFn<P>,
    space: Space,
    config: Config,
    reply: mpsc::Sender<Prepared<P>>,
}

/// The preparation threads of an online tuner; they end when it is dropped.
pub(super) struct Workers<P> {
    jobs: Option<mpsc::Sender<Job<P>>>,
    threads: Vec<JoinHandle<()>>,
}

impl<P: Send + 'static> Workers<P> {
    /// Starts `n` threads (at least one).
    pub(super) fn start(n: usize) -> std::io::Result<Self> {
        let (jobs, rx) = mpsc::channel::<Job<P>>();
        let rx = Arc::new(Mutex::new(rx));
        let mut threads = Vec::new();
        for i in 0..n.max(1) {
            let rx = rx.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("tune-online-prepare-{i}"))
                    .spawn(move || loop {
                        let job = match rx.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => return,
                        };
                        let Ok(job) = job else {
                            return; // the tuner is gone
                        };
                        let t = Instant::now();
                        let r = guard(|| (job.prepare)(&job.space, &job.config));
                        // The tuner may have moved on (settled): nobody waits then.
                        let _ = job.reply.send((r, t.elapsed()));
                    })?,
            );
        }
        Ok(Workers {
            jobs: Some(jobs),
            threads,
        })
    }

    /// Queues a preparation; its outcome arrives on the returned receiver.
    pub(super) fn submit(
        &self,
        prepare: PrepareFn<P>,
        space: Space,
        config: Config,
    ) -> mpsc::Receiver<Prepared<P>> {
        let (reply, rx) = mpsc::channel();
        let job = Job {
            prepare,
            space,
            config,
            reply,
        };
        if let Some(jobs) = &self.jobs {
            if let Err(mpsc::SendError(job)) = jobs.send(job) {
                // No thread left: prepare here rather than lose the job.
                let t = Instant::now();
                let r = guard(|| (job.prepare)(&job.space, &job.config));
                let _ = job.reply.send((r, t.elapsed()));
            }
        }
        rx
    }
}

impl<P> Drop for Workers<P> {
    fn drop(&mut self) {
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Runs user code, turning a panic into [`Failure::Other`].
pub(super) fn guard<T>(f: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Failure::Other(format!("panicked: {msg}")))
        }
    }
}
