//! The command line of the case-study examples: `--backend opencl|cuda` picks the backend
//! (default: OpenCL when the example is built with the `opencl` feature, else CUDA), the
//! other arguments are the example's own. The device is `TUNE_OPENCL_DEVICE` (see
//! `OpenCl::select`) or `TUNE_CUDA_DEVICE` (an index, or part of a name).

use std::process::ExitCode;

use super::cases::Language;

/// An opened device of either backend.
pub enum Device {
    /// An OpenCL device.
    #[cfg(feature = "opencl")]
    OpenCl(std::sync::Arc<tune::backend::opencl::OpenCl>),
    /// A CUDA device.
    #[cfg(feature = "cuda")]
    Cuda(std::sync::Arc<tune::cuda::Cuda>),
}

/// Runs `$body` with `$b` bound to the device's backend (an `Arc<B>` of a concrete
/// `B: Backend`), whichever backend it is.
#[macro_export]
macro_rules! with_backend {
    ($device:expr, |$b:ident| $body:expr) => {
        match $device {
            #[cfg(feature = "opencl")]
            $crate::common::cli::Device::OpenCl($b) => $body,
            #[cfg(feature = "cuda")]
            $crate::common::cli::Device::Cuda($b) => $body,
        }
    };
}

/// The backends this example is built with.
pub fn built() -> Vec<Language> {
    let mut out = Vec::new();
    if cfg!(feature = "opencl") {
        out.push(Language::OpenCl);
    }
    if cfg!(feature = "cuda") {
        out.push(Language::Cuda);
    }
    out
}

/// `--backend NAME` (or `--backend=NAME`) taken out of `args`, and the other arguments.
///
/// # Errors
/// An unknown backend name, or `--backend` without one.
pub fn parse(
    args: impl IntoIterator<Item = String>,
) -> Result<(Option<Language>, Vec<String>), String> {
    let mut language = None;
    let mut rest = Vec::new();
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let name = if a == "--backend" {
            args.next()
                .ok_or("`--backend` needs a name: opencl or cuda")?
        } else if let Some(n) = a.strip_prefix("--backend=") {
            n.to_string()
        } else {
            rest.push(a);
            continue;
        };
        language = Some(match name.as_str() {
            "opencl" => Language::OpenCl,
            "cuda" => Language::Cuda,
            other => {
                return Err(format!(
                    "unknown backend `{other}`; expected `opencl` or `cuda`"
                ))
            }
        });
    }
    Ok((language, rest))
}

/// Opens the device of `language`'s backend.
///
/// # Errors
/// The backend's error; for a backend this example is not built with, one that says which
/// feature to build it with.
pub fn open(language: Language) -> tune::Result<Device> {
    match language {
        #[cfg(feature = "opencl")]
        Language::OpenCl => Ok(Device::OpenCl(std::sync::Arc::new(
            tune::backend::opencl::OpenCl::from_env("TUNE_OPENCL_DEVICE")?,
        ))),
        #[cfg(feature = "cuda")]
        Language::Cuda => Ok(Device::Cuda(std::sync::Arc::new(open_cuda()?))),
        #[allow(unreachable_patterns)]
        other => Err(tune::Error::BackendUnavailable {
            backend: other.name().into(),
            reason: format!(
                "this example was built without it; build it with `--features {other}`"
            ),
        }),
    }
}

/// The CUDA device named by `TUNE_CUDA_DEVICE` (an index, or part of a name), or device 0.
#[cfg(feature = "cuda")]
pub fn open_cuda() -> tune::Result<tune::cuda::Cuda> {
    use tune::cuda::{Cuda, DeviceSelector};
    let selector: DeviceSelector = match std::env::var("TUNE_CUDA_DEVICE") {
        Ok(s) => match s.parse::<usize>() {
            Ok(i) => i.into(),
            Err(_) => s.as_str().into(),
        },
        Err(_) => 0.into(),
    };
    Cuda::open(selector)
}

/// An example's `main`: parses `--backend`, opens the device and runs `body` with it and
/// the other arguments; the exit code is [`exit`]'s.
pub fn main(name: &str, body: impl FnOnce(Device, Vec<String>) -> tune::Result<()>) -> ExitCode {
    let (language, args) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(language) = language.or_else(|| built().first().copied()) else {
        eprintln!("{name}: built without a backend; build it with `--features opencl` or `--features cuda`");
        return ExitCode::FAILURE;
    };
    exit(
        name,
        language,
        open(language).and_then(|device| body(device, args)),
    )
}

/// The exit code of an example that ran on `language`'s backend: CUDA that is unavailable
/// (no driver, no device) is said and exits 0, so that CI and laptops can run every
/// example; any other error exits 1.
pub fn exit(name: &str, language: Language, result: tune::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ tune::Error::BackendUnavailable { .. }) if language == Language::Cuda => {
            eprintln!("{name}: CUDA is unavailable, nothing to run: {e}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The `i`-th argument as a number, if it is one.
pub fn number(args: &[String], i: usize) -> Option<usize> {
    args.get(i).and_then(|a| a.parse().ok())
}
