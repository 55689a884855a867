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
    /// The devices of one run on several devices ([`crate::scale`]) are not all the same
    /// model: a cost is only comparable on the same hardware.
    #[error("the devices of one run must be the same model, but they are: {}; tune each model in a run of its own", .devices.join("; "))]
    MixedDevices {
        /// Each device as `name: model`.
        devices: Vec<String>,
    },
    /// A kernel spec that cannot be evaluated (no global size, a reference that does not
    /// match the outputs).
    #[error("invalid kernel spec: {0}")]
    KernelSpec(String),
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
