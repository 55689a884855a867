//! The case studies, each described once for every backend: its search space, sizes,
//! buffers, reference, tolerance and timing, and its kernel in each language it is written
//! in (the files of `kernels/`). A backend picks the source by the language it compiles
//! ([`Target::of`]); the examples, the GPU tests and the CUDA bench all build their cases
//! here.
//!
//! Where the OpenCL and CUDA kernels of a case differ (a parameter that means something
//! else, another memory layout, a timing method that only one runtime affords), the case's
//! file says so at the place where it branches on the language.

pub mod conv;
pub mod copy;
pub mod dnn_conv;
pub mod gemm;
pub mod kt_matmul;
pub mod saxpy;
pub mod xgemm_direct;

use std::fmt;

use tune::backend::{Backend, BufferArg, DeviceInfo, HostData, KernelSpec};
use tune::results::fingerprint;
use tune::{Config, Error, Result, Space};

/// The language of a kernel source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// OpenCL C (the `opencl` backend, and the isolated backend's OpenCL workers).
    OpenCl,
    /// CUDA C, compiled by NVRTC (the `cuda` backend).
    Cuda,
}

impl Language {
    /// Both languages.
    pub const ALL: [Language; 2] = [Language::OpenCl, Language::Cuda];

    /// The language that `device`'s backend compiles.
    ///
    /// # Errors
    /// [`Error::KernelSpec`] for a backend that compiles neither.
    pub fn of(device: &DeviceInfo) -> Result<Language> {
        match device.backend.as_str() {
            "opencl" => Ok(Language::OpenCl),
            "cuda" => Ok(Language::Cuda),
            other => Err(Error::KernelSpec(format!(
                "the case studies have kernels in OpenCL C and CUDA C; backend `{other}` compiles neither"
            ))),
        }
    }

    /// `opencl` or `cuda`, as the backends and `--backend` name them.
    pub fn name(self) -> &'static str {
        match self {
            Language::OpenCl => "opencl",
            Language::Cuda => "cuda",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a case runs: the language its backend compiles and the device's limits (some
/// spaces are bounded by them).
#[derive(Clone, Debug)]
pub struct Target {
    /// The language of the kernel source.
    pub language: Language,
    /// The device.
    pub device: DeviceInfo,
}

impl Target {
    /// The target of `backend`'s device.
    ///
    /// # Errors
    /// As [`Language::of`].
    pub fn of<B: Backend>(backend: &B) -> Result<Target> {
        let device = backend.device().clone();
        Ok(Target {
            language: Language::of(&device)?,
            device,
        })
    }

    /// A device of `language` with no known limits (for building spaces without a device;
    /// limits that a space reads fall back to typical GPU values).
    pub fn without_device(language: Language) -> Target {
        Target {
            language,
            device: DeviceInfo {
                backend: language.name().into(),
                ..DeviceInfo::default()
            },
        }
    }
}

/// A kernel in each language it is written in.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sources {
    /// The OpenCL C source, if there is one.
    pub opencl: Option<&'static str>,
    /// The CUDA C source, if there is one.
    pub cuda: Option<&'static str>,
}

impl Sources {
    /// The source in `language`, if the kernel is written in it.
    pub fn get(&self, language: Language) -> Option<&'static str> {
        match language {
            Language::OpenCl => self.opencl,
            Language::Cuda => self.cuda,
        }
    }

    /// The languages the kernel is written in.
    pub fn languages(&self) -> Vec<Language> {
        Language::ALL
            .into_iter()
            .filter(|&l| self.get(l).is_some())
            .collect()
    }
}

/// Work done by one run of a kernel, for the throughput in reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Work {
    /// Floating-point operations (0 when the case is reported in bytes).
    pub flops: f64,
    /// Bytes moved (for memory-bound cases; 0 when not reported).
    pub bytes: f64,
}

/// A case study, described once for every backend.
pub trait Study {
    /// The tunable's name, as recorded: the same on every backend (the recorded device
    /// tells backends apart).
    fn name(&self) -> &'static str;

    /// The input it is tuned for, as recorded (`8192x4096,fs=3`).
    fn input(&self) -> String;

    /// Work done by one run.
    fn work(&self) -> Work;

    /// The kernel in each language it is written in.
    fn sources(&self) -> Sources;

    /// The search space on `target`.
    ///
    /// # Errors
    /// As [`tune::SpaceBuilder::build`].
    fn space(&self, target: &Target) -> Result<Space>;

    /// The kernel `source` (in the target's language: the case's own, or a variant of it)
    /// with its sizes, arguments, reference, tolerance and timing.
    ///
    /// # Errors
    /// When the case cannot run on the target.
    fn spec(&self, target: &Target, source: &str) -> Result<KernelSpec>;

    /// Configurations known to be good on `target`, measured first (none by default).
    fn known_good(&self, _target: &Target, _space: &Space) -> Vec<Config> {
        Vec::new()
    }

    /// The case's kernel source for `target`.
    ///
    /// # Errors
    /// [`Error::KernelSpec`] when the kernel is not written in the target's language; the
    /// message names the languages it is written in.
    fn source(&self, target: &Target) -> Result<&'static str> {
        let sources = self.sources();
        sources.get(target.language).ok_or_else(|| {
            let have: Vec<&str> = sources.languages().iter().map(|l| l.name()).collect();
            Error::KernelSpec(format!(
                "the `{}` case has no {} kernel in kernels/; run it with --backend {}",
                self.name(),
                target.language,
                have.join(" or --backend ")
            ))
        })
    }

    /// The case on `target`, ready to tune.
    ///
    /// # Errors
    /// As [`Study::source`], [`Study::space`] and [`Study::spec`].
    fn case(&self, target: &Target) -> Result<Case> {
        self.case_with_source(target, self.source(target)?)
    }

    /// The case on `target` with another kernel source (e.g. the case's own with code
    /// appended).
    ///
    /// # Errors
    /// As [`Study::space`] and [`Study::spec`].
    fn case_with_source(&self, target: &Target, source: &str) -> Result<Case> {
        let space = self.space(target)?;
        let spec = self.spec(target, source)?;
        let input = self.input();
        let work = self.work();
        Ok(Case {
            name: self.name().into(),
            // What a recorded best configuration was tuned for: the kernel as compiled and
            // the input (whose sizes are also defines of some kernels).
            code: fingerprint::of([source, input.as_str()]),
            input,
            space,
            spec,
            flops: work.flops,
            bytes: work.bytes,
        })
    }
}

/// A case study on one target: what to tune and how much work one run does.
pub struct Case {
    /// The tunable's name, as recorded (`conv`, `gemm`, ...).
    pub name: String,
    /// The input it is tuned for, as recorded (`8192x4096,fs=3`).
    pub input: String,
    /// The code fingerprint recorded with the best configuration.
    pub code: String,
    /// The search space.
    pub space: Space,
    /// The kernel and how to run, time and validate it.
    pub spec: KernelSpec,
    /// Floating-point operations of one run (0 when the case is reported in bytes).
    pub flops: f64,
    /// Bytes moved by one run (for memory-bound cases).
    pub bytes: f64,
}

/// A case study without its spec (which the evaluator takes).
pub struct Info {
    /// The tunable's name.
    pub name: String,
    /// The input it is tuned for.
    pub input: String,
    /// The code fingerprint.
    pub code: String,
    /// The search space.
    pub space: Space,
    /// Floating-point operations of one run.
    pub flops: f64,
    /// Bytes moved by one run.
    pub bytes: f64,
}

impl Case {
    /// The case's description and its spec.
    pub fn split(self) -> (Info, KernelSpec) {
        (
            Info {
                name: self.name,
                input: self.input,
                code: self.code,
                space: self.space,
                flops: self.flops,
                bytes: self.bytes,
            },
            self.spec,
        )
    }
}

/// Seeded random `f32` values in [-1, 1), the same as `BufferArg::random::<f32>(len, seed)`
/// holds (for host code that needs the inputs, e.g. cuBLAS).
pub fn random_f32(len: usize, seed: u64) -> Vec<f32> {
    floats(&BufferArg::random::<f32>(len, seed)).to_vec()
}

/// A float buffer's contents (empty for another element type).
pub fn floats(b: &BufferArg) -> &[f32] {
    match b.data() {
        HostData::F32(v) => v,
        _ => &[],
    }
}
