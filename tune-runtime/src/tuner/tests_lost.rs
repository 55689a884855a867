//! A device lost to the process (a CUDA sticky error the driver will not let the process
//! recover from) stops the run, with what was measured in the log, and a new run resumes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::*;
use crate::abort::Evaluations;
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::measure::Remeasure;
use crate::param::Param;
use crate::results::log;
use crate::space::SpaceBuilder;
use crate::Error;

fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::range("X", 0..40))
        .build()
        .unwrap()
}

/// Cost X + 1; the fourth configuration measured poisons the device: it and every later
/// one fail, and the device says it is lost.
struct Poisoning {
    measured: AtomicUsize,
    poison_at: Option<usize>,
    lost: Mutex<Option<String>>,
}

impl Poisoning {
    fn new(poison_at: Option<usize>) -> Self {
        Poisoning {
            measured: AtomicUsize::new(0),
            poison_at,
            lost: Mutex::new(None),
        }
    }
}

impl Evaluator for Poisoning {
    type Cost = f64;
    type Prepared = u32;
    fn prepare(&self, _: &Space, c: &Config) -> std::result::Result<u32, Failure> {
        Ok(c.get(0))
    }
    fn measure(
        &self,
        _: &Space,
        _: &Config,
        x: u32,
    ) -> std::result::Result<Measured<f64>, Failure> {
        let n = self.measured.fetch_add(1, Ordering::SeqCst) + 1;
        let mut lost = self.lost.lock().unwrap();
        if lost.is_some() || Some(n) == self.poison_at {
            *lost = Some("an illegal memory access poisoned the context".into());
            return Err(Failure::Launch("CUDA_ERROR_ILLEGAL_ADDRESS".into()));
        }
        Ok(Measured::new(f64::from(x) + 1.0))
    }
    fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap().clone()
    }
}

fn tuner<E: Evaluator<Cost = f64>>(evaluator: E, log: &std::path::Path, batch: usize) -> Tuner<E> {
    Tuner::new(space(), evaluator)
        .seed(5)
        .abort(Evaluations(12))
        .batch(batch)
        .log(log)
        .resume(true)
        .name("poisoned")
        .remeasure(Remeasure::off())
        .progress(false)
}

#[test]
fn a_lost_device_stops_the_run_and_a_new_run_resumes() {
    for batch in [1, 4] {
        let dir = tempfile::tempdir().unwrap();
        let log_path = dir.path().join("log.jsonl");
        let sick = Poisoning::new(Some(4));
        let err = tuner(&sick, &log_path, batch).run().unwrap_err();
        assert!(
            matches!(&err, Error::DeviceLost { reason, .. } if reason.contains("poisoned")),
            "{err}"
        );
        assert!(err.to_string().contains("resum"), "{err}");
        // Stopped at the failure: nothing measured after it, all of it in the log.
        assert_eq!(sick.measured.load(Ordering::SeqCst), 4, "batch {batch}");
        let logged = log::read(&log_path).unwrap();
        assert_eq!(logged.len(), 4);
        assert_eq!(logged.iter().filter(|r| r.status == "launch").count(), 1);

        // A new process (a fresh device) resumes: the 4 are not measured again.
        let fresh = Poisoning::new(None);
        let r = tuner(&fresh, &log_path, batch).run().unwrap();
        assert_eq!((r.resumed, r.evaluations), (4, 12));
        assert_eq!(fresh.measured.load(Ordering::SeqCst), 8);
    }
}
