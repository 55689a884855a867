//! The kernels of compositions and queues: a [`KernelSource`] (source, name, defines, default
//! sizes), compiled into a [`Kernel`] through a program cache.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::backend::{Backend, CompileRequest, ConfigFn, KernelLimits};
use crate::evaluate::Failure;
use crate::space::Config;

/// One kernel of a composition, or a kernel a [`Queue`](super::Queue) compiles: its source
/// and name, which tuning parameters become its defines, fixed and computed defines,
/// compiler options, and (for compositions) default launch sizes. A consuming builder.
///
/// In a composition every tuning parameter becomes a define `-DNAME=value` of every kernel,
/// unless [`KernelSource::params`] names the ones this kernel reads: then configurations
/// that differ only in other parameters share its compiled program.
#[derive(Clone)]
#[must_use]
pub struct KernelSource {
    pub(super) source: Arc<str>,
    pub(super) name: Arc<str>,
    pub(super) hash: u64,
    pub(super) params: Option<Vec<String>>,
    pub(super) defines: Vec<(String, String)>,
    pub(super) computed: Vec<(String, ConfigFn<String>)>,
    pub(super) options: Vec<String>,
    pub(super) global: Option<ConfigFn<Vec<usize>>>,
    pub(super) local: Option<ConfigFn<Vec<usize>>>,
}

impl fmt::Debug for KernelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelSource")
            .field("name", &self.name)
            .field("params", &self.params)
            .field("defines", &self.defines)
            .field(
                "computed",
                &self.computed.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl KernelSource {
    /// Kernel `name` in `source` (OpenCL C or CUDA C; embed files of `kernels/` with
    /// `include_str!`).
    pub fn new(source: impl Into<String>, name: impl Into<String>) -> Self {
        let source: String = source.into();
        let mut h = DefaultHasher::new();
        source.hash(&mut h);
        KernelSource {
            hash: h.finish(),
            source: source.into(),
            name: name.into().into(),
            params: None,
            defines: Vec::new(),
            computed: Vec::new(),
            options: Vec::new(),
            global: None,
            local: None,
        }
    }

    /// A fixed define, `-DNAME=value`.
    pub fn define(mut self, name: impl Into<String>, value: impl fmt::Display) -> Self {
        self.defines.push((name.into(), value.to_string()));
        self
    }

    /// A define computed from the configuration (in a composition), e.g. a size derived from
    /// two parameters.
    pub fn define_with<T: fmt::Display>(
        mut self,
        name: impl Into<String>,
        f: impl Fn(&Config) -> T + Send + Sync + 'static,
    ) -> Self {
        self.computed
            .push((name.into(), Arc::new(move |c| f(c).to_string())));
        self
    }

    /// A compiler option, e.g. `-cl-mad-enable`.
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }

    /// The tuning parameters that become this kernel's defines (default: all of them).
    pub fn params(mut self, names: &[&str]) -> Self {
        self.params = Some(names.iter().map(|n| n.to_string()).collect());
        self
    }

    /// The global size used when a launch gives none, as an expression of the
    /// configuration (1 to 3 dimensions).
    pub fn global<const D: usize>(
        mut self,
        f: impl Fn(&Config) -> [usize; D] + Send + Sync + 'static,
    ) -> Self {
        self.global = Some(Arc::new(move |c| f(c).to_vec()));
        self
    }

    /// The local size used when a launch gives none, as an expression of the configuration.
    pub fn local<const D: usize>(
        mut self,
        f: impl Fn(&Config) -> [usize; D] + Send + Sync + 'static,
    ) -> Self {
        self.local = Some(Arc::new(move |c| f(c).to_vec()));
        self
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A compiled kernel, ready to launch: shared, cheap to clone.
pub struct Kernel<B: Backend> {
    pub(super) kernel: Arc<B::Kernel>,
    pub(super) limits: KernelLimits,
    pub(super) name: Arc<str>,
}

impl<B: Backend> Clone for Kernel<B> {
    fn clone(&self) -> Self {
        Kernel {
            kernel: self.kernel.clone(),
            limits: self.limits.clone(),
            name: self.name.clone(),
        }
    }
}

impl<B: Backend> fmt::Debug for Kernel<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> Kernel<B> {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The compiled kernel's own limits (work-group size, static local memory).
    pub fn limits(&self) -> &KernelLimits {
        &self.limits
    }
    /// The backend's compiled kernel.
    pub fn raw(&self) -> &B::Kernel {
        &self.kernel
    }
}

/// Source hash, kernel name, defines, options.
type Key = (u64, Arc<str>, Vec<(String, String)>, Vec<String>);

/// Compiled kernels by source, name, defines and options; safe to use from several threads
/// (two threads that miss on the same key both compile, and one result is kept).
pub(super) struct ProgramCache<B: Backend> {
    map: Mutex<HashMap<Key, Kernel<B>>>,
    capacity: usize,
}

impl<B: Backend> ProgramCache<B> {
    pub(super) fn new(capacity: usize) -> Self {
        ProgramCache {
            map: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// The kernel compiled with `defines` (then the source's fixed defines), from the cache
    /// or compiled now; with the time spent compiling (zero on a hit).
    pub(super) fn get(
        &self,
        backend: &B,
        src: &KernelSource,
        mut defines: Vec<(String, String)>,
    ) -> Result<(Kernel<B>, Duration), Failure> {
        defines.extend(src.defines.iter().cloned());
        let key: Key = (src.hash, src.name.clone(), defines, src.options.clone());
        if let Some(k) = self.map.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok((k, Duration::ZERO));
        }
        let t = Instant::now();
        let compiled = backend
            .compile(&CompileRequest {
                source: &src.source,
                kernel: &src.name,
                defines: &key.2,
                options: &key.3,
            })
            .map_err(|f| match f {
                Failure::Compile(log) => Failure::Compile(format!("kernel `{}`: {log}", src.name)),
                other => other,
            })?;
        let kernel = Kernel {
            limits: backend.kernel_limits(&compiled),
            kernel: Arc::new(compiled),
            name: src.name.clone(),
        };
        let dt = t.elapsed();
        if self.capacity > 0 {
            if let Ok(mut m) = self.map.lock() {
                if m.len() >= self.capacity {
                    m.clear();
                }
                m.insert(key, kernel.clone());
            }
        }
        Ok((kernel, dt))
    }
}
