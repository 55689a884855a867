//! Building programs: in this process, or in builder processes for drivers that build one
//! program at a time per process (NVIDIA's; see `isolated::BuildFarm`), whose binaries this
//! process then loads.

use opencl3::program::Program;

use super::OpenCl;
use crate::evaluate::Failure;
use crate::{Error, Result};

/// The environment variable that sets the number of builder processes (0: build in the
/// tuning process); it overrides the default (on NVIDIA's platform one per core, up to 8;
/// elsewhere none).
pub const BUILD_PROCESSES_ENV: &str = "TUNE_OPENCL_BUILD_PROCESSES";

/// Most builder processes by default: each holds a context on the device.
const MAX_DEFAULT_PROCESSES: usize = 8;

/// Builder processes for a device of `platform`: [`BUILD_PROCESSES_ENV`] if set; else, on
/// NVIDIA's platform (whose builds do not overlap within a process), one per core up to 8;
/// else none.
///
/// # Errors
/// [`Error::Backend`] when the variable is not a number.
pub(super) fn default_processes(platform: &str) -> Result<usize> {
    if let Ok(v) = std::env::var(BUILD_PROCESSES_ENV) {
        return v.trim().parse().map_err(|_| Error::Backend {
            backend: "opencl".into(),
            message: format!(
                "{BUILD_PROCESSES_ENV}={v:?} is not a number of processes (0: build in the \
                 tuning process)"
            ),
        });
    }
    if !cfg!(target_os = "linux") || !platform.to_lowercase().contains("nvidia") {
        return Ok(0);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(cores.min(MAX_DEFAULT_PROCESSES))
}

impl OpenCl {
    /// Builds `source` with `options` into a program of this device: from a builder's binary
    /// when builder processes serve, else here. A failed build is [`Failure::Compile`] with
    /// the driver's log.
    pub(super) fn build_program(&self, source: &str, options: &str) -> Result<Program, Failure> {
        #[cfg(target_os = "linux")]
        if let Some(farm) = &self.farm {
            if let Some(binary) = farm.build(source, options)? {
                return self.load_binary(&binary, options);
            }
        }
        Program::create_and_build_from_source(&self.context, source, options)
            .map_err(|log| Failure::Compile(format!("options `{options}`: {log}")))
    }

    /// Builds `source` with `options` here and returns the program's binary for this device:
    /// what a builder process does.
    pub(crate) fn build_binary(&self, source: &str, options: &str) -> Result<Vec<u8>, Failure> {
        let program = Program::create_and_build_from_source(&self.context, source, options)
            .map_err(|log| Failure::Compile(format!("options `{options}`: {log}")))?;
        let mut binaries = program
            .get_binaries()
            .map_err(|e| Failure::Compile(format!("reading the program's binary: {e}")))?;
        match binaries.pop() {
            Some(b) if binaries.is_empty() && !b.is_empty() => Ok(b),
            _ => Err(Failure::Compile(
                "the driver gave no binary for the device".into(),
            )),
        }
    }

    /// A program of this device from a builder's `binary`, built with the same `options` (a
    /// driver may compile the binary further, e.g. PTX for the GPU, with options that apply).
    #[cfg(target_os = "linux")]
    fn load_binary(&self, binary: &[u8], options: &str) -> Result<Program, Failure> {
        let id = self.device.id();
        // SAFETY: `binary` is the program binary that a builder process obtained from the same
        // driver for the same device (`build_binary`); the driver checks a binary and answers
        // CL_INVALID_BINARY for one it cannot load.
        let mut program = unsafe { Program::create_from_binary(&self.context, &[id], &[binary]) }
            .map_err(|e| Failure::Compile(format!("loading a built binary: {e}")))?;
        program.build(&[id], options).map_err(|e| {
            let log = program.get_build_log(id).unwrap_or_default();
            Failure::Compile(format!("loading a built binary ({e}): {log}"))
        })?;
        Ok(program)
    }

    /// Builds programs in `n` builder processes (0: in this process); see the module docs.
    /// The processes start on the first build and end with the backend. Linux only
    /// (elsewhere every build is in this process).
    #[must_use]
    #[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
    pub fn build_processes(mut self, n: usize) -> Self {
        #[cfg(target_os = "linux")]
        {
            self.farm = (n > 0).then(|| {
                std::sync::Arc::new(crate::backend::isolated::BuildFarm::new(
                    self.query.clone(),
                    n,
                ))
            });
        }
        let _ = n;
        self
    }

    /// How many programs this backend builds at once: as many as it has builder processes
    /// (while they serve); one on NVIDIA's platform without them, whose driver builds one
    /// at a time per process; else no limit.
    pub(super) fn builds_at_once(&self) -> Option<usize> {
        #[cfg(target_os = "linux")]
        if let Some(farm) = &self.farm {
            if farm.broken().is_none() {
                return Some(farm.size());
            }
        }
        self.info
            .platform
            .to_lowercase()
            .contains("nvidia")
            .then_some(1)
    }

    /// How many builder processes build this backend's programs at most (0: none).
    pub fn build_process_count(&self) -> usize {
        #[cfg(target_os = "linux")]
        if let Some(farm) = &self.farm {
            return farm.size();
        }
        0
    }

    /// Why the builder processes stopped serving (every build is then in this process), if
    /// they did.
    pub fn build_processes_failed(&self) -> Option<String> {
        #[cfg(target_os = "linux")]
        if let Some(farm) = &self.farm {
            return farm.broken();
        }
        None
    }
}
