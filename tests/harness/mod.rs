//! The runner of the tests that need a device (`harness = false`, on `libtest-mimic`): the
//! same command line and output as `cargo test`'s own runner, but a test whose device is
//! missing is reported as ignored (with the reason), never as passed, and fails instead
//! where the device is required (`CI` for OpenCL, `TUNE_REQUIRE_CUDA=1` for CUDA).
//!
//! Device tests of one binary run one at a time, whatever `--test-threads` says: they share
//! the device, and compilations of parallel tests would compete for the driver's compiler
//! (on NVIDIA's OpenCL that pushed compilations past their time limit) and disturb timings.
#![allow(dead_code, clippy::panic)]

use std::process::ExitCode;
use std::sync::{Mutex, PoisonError};

use libtest_mimic::{Arguments, Failed, Trial};

/// A device test: its name and its function.
pub type DeviceTest<D> = (&'static str, fn(D));

/// Held by every device test while it runs.
static DEVICE: Mutex<()> = Mutex::new(());

/// A device, or why there is none and whether that fails the tests.
pub struct Probe<D> {
    /// What kind of device: `opencl`, `cuda`, ... (for messages).
    kind: &'static str,
    device: Result<D, String>,
    /// The variable that requires the device, when it is set.
    required_by: Option<&'static str>,
}

impl<D: Clone + Send + 'static> Probe<D> {
    /// `device` (or why there is none) of `kind`; a missing one fails the tests when the
    /// environment variable `var` is set (to anything but `0` or empty).
    pub fn new(kind: &'static str, device: Result<D, String>, var: &'static str) -> Self {
        let set = std::env::var(var).is_ok_and(|v| !v.is_empty() && v != "0");
        Probe {
            kind,
            device,
            required_by: set.then_some(var),
        }
    }

    /// What some tests need, never required: without it they are ignored.
    pub fn optional(kind: &'static str, device: Result<D, String>) -> Self {
        Probe {
            kind,
            device,
            required_by: None,
        }
    }

    /// The device, if there is one.
    pub fn device(&self) -> Option<D> {
        self.device.as_ref().ok().cloned()
    }

    /// The same probe for what `f` makes of the device.
    pub fn map<E: Clone + Send + 'static>(&self, f: impl FnOnce(D) -> E) -> Probe<E> {
        Probe {
            kind: self.kind,
            device: self.device.clone().map(f),
            required_by: self.required_by,
        }
    }
}

/// The tests of one binary.
#[derive(Default)]
pub struct Suite {
    trials: Vec<Trial>,
    notes: Vec<String>,
}

impl Suite {
    pub fn new() -> Self {
        Self::default()
    }

    /// A test that needs no device.
    pub fn test(&mut self, name: &str, f: impl FnOnce() + Send + 'static) {
        self.trials.push(Trial::test(name, move || {
            f();
            Ok(())
        }));
    }

    /// A test that runs `f` on the device of `probe`, alone.
    pub fn device<D: Clone + Send + 'static>(
        &mut self,
        probe: &Probe<D>,
        name: &str,
        f: impl FnOnce(D) + Send + 'static,
    ) {
        self.device_result(probe, name, move |d| {
            f(d);
            Ok(())
        });
    }

    /// A device test whose error fails it.
    pub fn device_result<D: Clone + Send + 'static>(
        &mut self,
        probe: &Probe<D>,
        name: &str,
        f: impl FnOnce(D) -> Result<(), String> + Send + 'static,
    ) {
        let trial = match (&probe.device, probe.required_by) {
            (Ok(d), _) => {
                let d = d.clone();
                Trial::test(name, move || {
                    let _alone = DEVICE.lock().unwrap_or_else(PoisonError::into_inner);
                    f(d).map_err(Failed::from)
                })
            }
            (Err(why), Some(var)) => {
                let msg = format!("{var} is set, but there is no {} device: {why}", probe.kind);
                Trial::test(name, move || Err(msg.into()))
            }
            (Err(why), None) => {
                let note = format!(
                    "note: the {} tests are ignored: no device ({why})",
                    probe.kind
                );
                if !self.notes.contains(&note) {
                    self.notes.push(note);
                }
                Trial::test(name, || Ok(())).with_ignored_flag(true)
            }
        };
        self.trials.push(trial);
    }

    /// Runs the tests selected by the command line.
    pub fn run(self) -> ExitCode {
        let args = Arguments::from_args();
        if !args.list {
            for n in &self.notes {
                eprintln!("{n}");
            }
        }
        libtest_mimic::run(&args, self.trials).exit_code()
    }
}

/// Adds one device test per conformance check of backend `B`, named
/// `backend_conformance::conformance_<check>` as `testgen_backend!` names them.
pub fn conformance<B: tune::backend::Backend>(
    suite: &mut Suite,
    probe: &Probe<std::sync::Arc<B>>,
    scale: &'static str,
    broken: &'static str,
) {
    for check in tune::backend::conformance::checks::<B>() {
        let run = check.run;
        suite.device_result(
            probe,
            &format!("backend_conformance::conformance_{}", check.name),
            move |b| run(b, tune::backend::conformance::Kernels { scale, broken }),
        );
    }
}
