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
    /// Two parameters have the same name.
    #[error("invalid search space: parameter `{name}` is declared twice")]
    DuplicateParam {
        /// The name declared twice.
        name: String,
    },
    /// A constraint reads a slot past the declared parameters.
    #[error("invalid search space: {constraint} reads slot {slot}, but only {declared} parameters are declared")]
    UnknownSlot {
        /// The constraint (its label, or its parameter and position).
        constraint: String,
        /// The slot it reads.
        slot: usize,
        /// How many parameters are declared.
        declared: usize,
    },
    /// A stand-alone constraint that reads no parameter: it has no place in the space.
    #[error("invalid search space: {constraint} reads no parameter; list the slots it reads")]
    ReadsNoParam {
        /// The constraint (its label, or its position).
        constraint: String,
    },
    /// An alias (`divides`, `at_most`, ..) of a parameter that reads the parameter itself.
    #[error("invalid search space: an alias of `{param}` reads `{param}` itself; compare it in a plain expression instead")]
    AliasReadsItself {
        /// The parameter.
        param: String,
    },
    /// Storing the valid combinations of a group of parameters would take more memory than
    /// the builder's limit ([`crate::SpaceBuilder::memory_limit`]); construction stopped
    /// when it reached the limit.
    #[error("the search space is too large: the valid combinations of {} need more than {limit_bytes} bytes, the limit; narrow the ranges, add constraints, or raise the limit with `SpaceBuilder::memory_limit`", names(.params))]
    SpaceTooLarge {
        /// The parameters of the group being built.
        params: Vec<String>,
        /// The limit that was reached, in bytes.
        limit_bytes: u64,
    },
    /// The number of configurations does not fit `u128`.
    #[error("the search space has more than 2^128 valid configurations; narrow the ranges")]
    TooManyConfigurations,
    /// No configuration satisfies the declaration: a parameter without values, or
    /// constraints that reject every value of a parameter after the ones bound before it.
    #[error("{}", empty_space(.params, .at, .constraints))]
    EmptySpace {
        /// The parameters of the independent group that has no valid combination.
        params: Vec<String>,
        /// The parameter none of whose values is valid.
        at: String,
        /// The constraints that reject them (empty when `at` has no values at all).
        constraints: Vec<String>,
    },
    /// A constraint read a parameter it did not declare among those it reads: that value
    /// is not bound when the constraint runs (it reads 0), so the space would be wrong.
    #[error("constraint {constraint} reads `{read}`, which it does not declare (it declares {}); add `{read}`'s slot to the slots it reads", names(.declared))]
    UndeclaredRead {
        /// The constraint (its label, or its parameter and position).
        constraint: String,
        /// The parameter it read (or the slot number, if there is none).
        read: String,
        /// The parameters it declared.
        declared: Vec<String>,
    },
    /// Several of the errors above, every one found in a declaration.
    #[error("{} problems: {}", .0.len(), numbered(.0))]
    Several(Vec<Error>),
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
    /// A configuration given by name lacks a parameter of the space.
    #[error("configuration is not in the search space: no value for `{param}`")]
    MissingValue {
        /// The parameter without a value.
        param: String,
    },
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
    /// A file written by a newer version of tune, in a format this version cannot read.
    #[error("{path}: written by a newer tune (file format {found}, this tune reads up to {supported}); upgrade tune")]
    NewerFormat {
        /// The file.
        path: String,
        /// The format version of the file.
        found: u32,
        /// The newest format version this tune reads.
        supported: u32,
    },
    /// A well-formed file of a kind the reader does not take (e.g. neither a Kernel Tuner
    /// cache, KTT output nor a T4 file).
    #[error("{path}: not {expected}")]
    UnknownFileKind {
        /// The file.
        path: String,
        /// The kinds of file the reader takes, and how it tells them.
        expected: String,
    },
    /// An expression of a Kernel Tuner T1 file outside the Python subset tune reads, or one
    /// that does not evaluate; the source error holds the column.
    #[error("{path}: {context}: {source}")]
    Expression {
        /// The T1 file.
        path: String,
        /// Where the expression stands and the expression, e.g. ``condition 2 `x % 4 == 0` ``.
        context: String,
        /// What is wrong, at which column.
        #[source]
        source: crate::t1::expr::ExprError,
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
    /// Recorded data the methodology score cannot be computed on (nothing valid, every
    /// configuration optimal, runs too short for the time range).
    #[error("score: {reason}")]
    Score {
        /// What is missing, and what to change.
        reason: String,
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
    /// The device can no longer run work in this process (a CUDA context poisoned by a
    /// sticky error, which current drivers do not let a process replace). The run stops
    /// instead of recording every later configuration as a failure; its log keeps the
    /// evaluations so far.
    #[error(
        "device `{device}` can no longer run work in this process: {reason}. The evaluations \
         so far are in the run's log: run again in a new process, resuming from the log, to go \
         on; or evaluate through `backend::isolated::Isolated`, which replaces its worker \
         process after such an error"
    )]
    DeviceLost {
        /// The device, as the evaluator names it.
        device: String,
        /// What made it unusable.
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
    /// The devices of one run on several devices ([`crate::scale`]) are not all the same
    /// model: a cost is only comparable on the same hardware.
    #[error("the devices of one run must be the same model, but they are: {}; tune each model in a run of its own", .devices.join("; "))]
    MixedDevices {
        /// Each device as `name: model`.
        devices: Vec<String>,
    },
    /// A CUDA driver call failed outside a configuration's evaluation (allocating or
    /// copying a buffer); [`DriverError`](cudarc::driver::DriverError) says which error,
    /// e.g. `CUDA_ERROR_OUT_OF_MEMORY`.
    #[cfg(feature = "cuda")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
    #[error("cuda: {context}{}{source}", if .context.is_empty() { "" } else { ": " })]
    Cuda {
        /// What was being done (may be empty).
        context: String,
        /// The driver's error.
        #[source]
        source: cudarc::driver::DriverError,
    },
    /// An OpenCL call failed outside a configuration's evaluation (a context, a queue,
    /// allocating or copying a buffer); [`ClError`](opencl3::error_codes::ClError) holds
    /// the error code, e.g. `CL_MEM_OBJECT_ALLOCATION_FAILURE`.
    #[cfg(feature = "opencl")]
    #[cfg_attr(docsrs, doc(cfg(feature = "opencl")))]
    #[error("opencl: {context}{}{source}", if .context.is_empty() { "" } else { ": " })]
    OpenCl {
        /// What was being done (may be empty).
        context: String,
        /// The error code.
        #[source]
        source: opencl3::error_codes::ClError,
    },
    /// The reference kernel did not compile ([`Failure::Compile`](crate::Failure::Compile))
    /// or failed to run ([`Failure::Launch`](crate::Failure::Launch), ..), so the outputs
    /// of configurations cannot be checked.
    #[error("{backend}: reference kernel: {failure}")]
    ReferenceKernel {
        /// `opencl`, `cuda`, or the backend's name.
        backend: String,
        /// Why it failed.
        failure: crate::evaluate::Failure,
    },
    /// A kernel spec that cannot be evaluated (no global size, a reference that does not
    /// match the outputs).
    #[error("invalid kernel spec: {0}")]
    KernelSpec(String),
    /// Choosing configurations for many inputs failed: too little data in the performance
    /// matrix, a set size larger than the configurations measured, an input key without
    /// the features asked for.
    #[error("select: {0}")]
    Select(String),
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

#[cfg(feature = "cuda")]
impl From<cudarc::driver::DriverError> for Error {
    fn from(source: cudarc::driver::DriverError) -> Self {
        Error::Cuda {
            context: String::new(),
            source,
        }
    }
}

#[cfg(feature = "opencl")]
impl From<opencl3::error_codes::ClError> for Error {
    fn from(source: opencl3::error_codes::ClError) -> Self {
        Error::OpenCl {
            context: String::new(),
            source,
        }
    }
}

/// The message of a caught panic (`panic!` with a string or a format), for the errors that
/// stand for one.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// "`a`, `b`" (or "none").
fn names(v: &[String]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn empty_space(params: &[String], at: &str, constraints: &[String]) -> String {
    if constraints.is_empty() {
        return format!("the search space is empty: parameter `{at}` has no values; widen its range or list at least one value");
    }
    let before: Vec<String> = params.iter().take_while(|p| *p != at).cloned().collect();
    let after = if before.is_empty() {
        String::new()
    } else {
        format!(
            " given the values of {} that their own constraints allow",
            names(&before)
        )
    };
    format!(
        "the search space is empty: no value of `{at}` satisfies {}{after}; relax {} or widen the ranges",
        constraints.join(" && "),
        if constraints.len() == 1 { "this constraint" } else { "these constraints" }
    )
}

fn numbered(errors: &[Error]) -> String {
    errors
        .iter()
        .enumerate()
        .map(|(i, e)| format!("({}) {e}", i + 1))
        .collect::<Vec<_>>()
        .join("; ")
}
