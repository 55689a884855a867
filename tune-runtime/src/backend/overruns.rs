//! Compilations that ran past their time limit. A compiler cannot be interrupted, so the
//! thread that runs it is left to finish on its own; the evaluator waits a while for such
//! threads when it is dropped, because a process that exits while a thread is still inside
//! a driver's compiler can crash in the driver's teardown (seen with NVIDIA's OpenCL).

use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Threads of compilations that ran past their limit and may still be running.
#[derive(Debug, Default)]
pub(crate) struct Overruns {
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Overruns {
    /// Keeps `thread` until it ends (those already ended are let go).
    pub(crate) fn keep(&self, thread: JoinHandle<()>) {
        let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
        threads.retain(|t| !t.is_finished());
        threads.push(thread);
    }

    /// Waits at most `grace` for the kept threads to end; returns how many still run.
    pub(crate) fn wait(&self, grace: Duration) -> usize {
        let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
        let deadline = Instant::now() + grace;
        while threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let (ended, running): (Vec<_>, Vec<_>) =
            threads.drain(..).partition(JoinHandle::is_finished);
        for t in ended {
            // A compile thread that panicked has nothing left to report.
            let _ = t.join();
        }
        let still = running.len();
        *threads = running;
        still
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sleeper(ms: u64) -> JoinHandle<()> {
        std::thread::spawn(move || std::thread::sleep(Duration::from_millis(ms)))
    }

    #[test]
    fn waits_for_kept_threads_within_the_grace_and_no_longer() {
        let o = Overruns::default();
        o.keep(sleeper(200));
        o.keep(sleeper(5_000));
        let t = Instant::now();
        assert_eq!(o.wait(Duration::from_millis(600)), 1);
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(600) && waited < Duration::from_secs(3));
        // Ended threads are let go when the next one is kept.
        o.keep(sleeper(0));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(o.wait(Duration::ZERO), 1);
    }
}
