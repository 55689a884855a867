//! The error type of every fallible call in tune.

/// `Result` with tune's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, with enough context to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter's declaration is invalid (a run-time bound made a range impossible, etc.).
    #[error("parameter `{name}`: {reason}")]
    InvalidParam {
        /// The parameter.
        name: String,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// The declaration as a whole is invalid (duplicate names, unknown dependencies).
    #[error("invalid search space: {0}")]
    InvalidSpace(String),
    /// The number of configurations does not fit `u128`.
    #[error("the search space has more than 2^128 valid configurations; narrow the ranges")]
    SpaceTooLarge,
    /// A constraint or generator panicked (e.g. divided by zero) while the space was built.
    #[error("a constraint panicked while the space was built: {0}; guard divisions with a constraint that excludes zero")]
    ConstraintPanicked(String),
    /// A name that the space does not declare.
    #[error("unknown parameter `{name}`; the space declares: {known}")]
    UnknownParam {
        /// The unknown name.
        name: String,
        /// The declared names, comma-separated.
        known: String,
    },
    /// A configuration that is not in the space.
    #[error("configuration is not in the search space: {0}")]
    NotInSpace(String),
    /// A value that does not have the parameter's type.
    #[error("parameter `{name}`: value `{value}` does not have type `{expected}`")]
    WrongType {
        /// The parameter.
        name: String,
        /// The offending value.
        value: String,
        /// The declared type.
        expected: String,
    },
    /// An I/O error, with the path involved.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A malformed file.
    #[error("{path}: {reason}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A search technique name that is not built in.
    #[error("unknown search technique `{name}`; expected one of: {known}")]
    UnknownTechnique {
        /// The name asked for.
        name: String,
        /// The valid names, comma-separated.
        known: String,
    },
    /// A tuning run found no valid configuration.
    #[error("no valid configuration among {evaluated} evaluated ({failures}); check the evaluator and the constraints, and see the log for each failure's detail")]
    NoValidConfiguration {
        /// How many configurations were evaluated.
        evaluated: u64,
        /// The failures by kind, e.g. `compile: 3, launch: 1`.
        failures: String,
    },
    /// Configurations whose output did not match the reference (the cargo-test flow).
    #[error("{count} configuration(s) gave wrong results: {list}; fix the kernel for these configurations or exclude them with a constraint")]
    WrongResults {
        /// How many.
        count: usize,
        /// Each configuration and the validation message, one per line.
        list: String,
    },
    /// A backend cannot be used on this machine (no OpenCL library, no platform, no CUDA
    /// driver).
    #[error("the {backend} backend is unavailable: {reason}")]
    BackendUnavailable {
        /// `opencl` or `cuda`.
        backend: String,
        /// What is missing and how to get it.
        reason: String,
    },
    /// No device matches the query.
    #[error("no {backend} device matches `{query}`; available: {available}")]
    DeviceNotFound {
        /// `opencl` or `cuda`.
        backend: String,
        /// The platform/device name or index asked for.
        query: String,
        /// The devices that exist, as `index: platform / device`.
        available: String,
    },
    /// A backend call failed outside a configuration's evaluation (allocating buffers,
    /// running the reference kernel).
    #[error("{backend}: {message}")]
    Backend {
        /// `opencl` or `cuda`.
        backend: String,
        /// What failed.
        message: String,
    },
    /// A kernel spec that cannot be evaluated (no global size, a reference that does not
    /// match the outputs).
    #[error("invalid kernel spec: {0}")]
    KernelSpec(String),
    /// Online tuning cannot serve a call: no input was selected, or a configuration that
    /// was validated failed when it ran again.
    #[error("online tuning: {0}")]
    Online(String),
    /// A compilation or launch outside a tuning run failed (a
    /// [`Queue`](crate::backend::composition::Queue)'s), with its typed cause.
    #[error("{0}")]
    Failed(crate::evaluate::Failure),
}

impl From<crate::evaluate::Failure> for Error {
    fn from(f: crate::evaluate::Failure) -> Self {
        Error::Failed(f)
    }
}
