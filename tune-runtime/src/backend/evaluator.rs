//! [`KernelEvaluator`]: evaluates the configurations of a [`KernelSpec`] on a [`Backend`]:
//! limits checked before compiling, compilation with a program cache, inputs restored before
//! every measurement, validation, then the timed repetitions.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::checks::KernelProps;
use super::compile_slots::{CompileSlots, Slot};
use super::device::{Backend, CompileRequest, DeviceInfo, LaunchArg, LaunchDims, Occupancy};
use super::host::{BufferArg, HostArg, HostArgs, HostData};
use super::overruns::Overruns;
use super::spec::{config_defines, ArgSpec, KernelSpec, Sizes};
use super::validate::{Reference, ReferenceKernel};
use crate::evaluate::{Cause, Evaluator, Failure, Measured};
use crate::space::{Config, Space};
use crate::{Error, Result};

/// A configuration compiled and sized, ready to measure.
pub struct PreparedKernel<B: Backend> {
    kernel: Arc<B::Kernel>,
    dims: LaunchDims,
    scalars: Vec<Option<Vec<u8>>>,
    locals: Vec<usize>,
    /// Wall time spent compiling (zero on a cache hit).
    pub compile_time: Duration,
}

impl<B: Backend> fmt::Debug for PreparedKernel<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedKernel")
            .field("dims", &self.dims)
            .field("compile_time", &self.compile_time)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> PreparedKernel<B> {
    /// The launch geometry.
    pub fn dims(&self) -> &LaunchDims {
        &self.dims
    }
}

/// Source hash, kernel name, defines, options, device name and driver version.
type CacheKey = (u64, String, Vec<(String, String)>, Vec<String>, String);

/// Evaluates configurations of a [`KernelSpec`] on a [`Backend`]: an [`Evaluator`] whose cost
/// is the median device time.
pub struct KernelEvaluator<B: Backend> {
    backend: Arc<B>,
    spec: KernelSpec,
    source_hash: u64,
    buffers: Mutex<Vec<B::Buffer>>,
    /// Every buffer's initial contents as bytes, converted once: they are uploaded again
    /// before every configuration.
    initial: Vec<Vec<u8>>,
    /// The `__constant__` arrays' contents as bytes, filled into every compiled kernel.
    constants: Vec<(String, Vec<u8>)>,
    /// Where outputs are read back to, reused from one configuration to the next (tens of
    /// megabytes for a large output: allocating them anew costs page faults every time).
    readback: Mutex<Vec<Vec<u8>>>,
    expected: Option<Vec<HostData>>,
    cache: Mutex<HashMap<CacheKey, Arc<B::Kernel>>>,
    /// Compilations under way, up to what the backend's compiler runs at once.
    compiling: Arc<CompileSlots>,
    /// Compile threads that ran past their limit, waited for when the evaluator is dropped.
    overruns: Overruns,
    time_limit_ns: AtomicU64,
    /// Best median so far in nanoseconds (`u64::MAX` before the first), for `slow_factor`.
    best_ns: AtomicU64,
    /// Launches per timed sample, chosen once for the whole run (0 until chosen).
    per_sample: AtomicUsize,
}

/// The device time one timed sample of back-to-back launches aims at.
const SAMPLE_TARGET_NS: u128 = 1_000_000;

/// How long dropping an evaluator waits for compilations that ran past their limit.
const OVERRUN_GRACE: Duration = Duration::from_secs(30);

impl<B: Backend> fmt::Debug for KernelEvaluator<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelEvaluator")
            .field("device", &self.backend.device().describe())
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

fn hash_str(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

fn backend_err(backend: &DeviceInfo, message: impl fmt::Display) -> Error {
    Error::Backend {
        backend: backend.backend.clone(),
        message: message.to_string(),
    }
}

fn to_dims(v: &[usize], what: &str) -> Result<[usize; 3], Failure> {
    if v.is_empty() || v.len() > 3 {
        return Err(Failure::Invalid(format!(
            "the {what} size has {} dimensions; give 1 to 3",
            v.len()
        )));
    }
    let mut d = [1usize; 3];
    d[..v.len()].copy_from_slice(v);
    Ok(d)
}

impl<B: Backend> KernelEvaluator<B> {
    /// Allocates the buffers on the device and computes the reference outputs (running the
    /// reference closure or kernel once).
    ///
    /// `backend` is a backend or an `Arc` of one (to share a device between evaluators); with
    /// an `Arc`, name the type: `KernelEvaluator::<OpenCl>::new(arc.clone(), ..)`.
    ///
    /// # Errors
    /// [`Error::KernelSpec`] when the spec has no global size or an output without a
    /// reference; the backend's error (e.g. [`Error::Backend`]) when the device cannot hold
    /// the buffers; [`Error::ReferenceKernel`] when the reference kernel does not compile
    /// or fails to run.
    pub fn new(backend: impl Into<Arc<B>>, space: &Space, spec: KernelSpec) -> Result<Self> {
        let backend = backend.into();
        if spec.sizes.is_none() {
            return Err(Error::KernelSpec(format!(
                "kernel `{}` has no global size; call `.global(|c| [..])` or `.grid(|c| [..])`",
                spec.name
            )));
        }
        let mut buffers = Vec::new();
        let mut initial = Vec::new();
        for a in &spec.args {
            if let ArgSpec::Buffer(b) = a {
                let bytes = b.data.to_bytes();
                let mut buf = backend.alloc(bytes.len().max(1))?;
                backend.write(&mut buf, &bytes)?;
                buffers.push(buf);
                initial.push(bytes);
            }
        }
        let constants = spec
            .constants
            .iter()
            .map(|(n, b)| (n.clone(), b.data.to_bytes()))
            .collect();
        let mut ev = KernelEvaluator {
            source_hash: hash_str(&spec.source),
            backend,
            spec,
            buffers: Mutex::new(buffers),
            initial,
            constants,
            readback: Mutex::new(Vec::new()),
            expected: None,
            cache: Mutex::new(HashMap::new()),
            compiling: Arc::default(),
            overruns: Overruns::default(),
            time_limit_ns: AtomicU64::new(0),
            best_ns: AtomicU64::new(u64::MAX),
            per_sample: AtomicUsize::new(0),
        };
        ev.set_time_limit(ev.spec.time_limit);
        ev.expected = match ev.spec.reference.clone() {
            None => None,
            Some(Reference::Closure(f)) => {
                let args = ev.host_args();
                let expected = f(&args)?;
                let outputs = ev.outputs().count();
                if expected.len() != outputs {
                    return Err(Error::KernelSpec(format!(
                        "the reference returned {} buffers; the kernel has {outputs} outputs",
                        expected.len()
                    )));
                }
                Some(expected)
            }
            Some(Reference::Kernel(r)) => Some(ev.run_reference_kernel(space, &r)?),
        };
        Ok(ev)
    }

    /// Sets (or clears) the hard time limit of a configuration's first run; a slower
    /// configuration is recorded as [`Failure::Timeout`] without repetitions. For a limit
    /// relative to the best time so far, use [`KernelSpec::slower_than_best`], which records
    /// slow configurations as valid.
    pub fn set_time_limit(&self, limit: Option<Duration>) {
        let ns = limit.map_or(0, |d| {
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
        });
        self.time_limit_ns.store(ns, Ordering::Relaxed);
    }

    /// The longest first run that is not a timeout (nanoseconds).
    fn time_limit_ns(&self) -> u128 {
        match self.time_limit_ns.load(Ordering::Relaxed) {
            0 => u128::MAX,
            ns => u128::from(ns),
        }
    }

    /// The longest first run that is measured in full (nanoseconds): `slow_factor` times the
    /// best median so far.
    fn slow_limit_ns(&self) -> u128 {
        let best = self.best_ns.load(Ordering::Relaxed);
        match (self.spec.slow_factor, best < u64::MAX) {
            (Some(f), true) => (best as f64 * f) as u128,
            _ => u128::MAX,
        }
    }

    /// The launches per timed sample of this run: `None` until the first valid configuration
    /// chose them (see [`KernelSpec::launches_per_sample`]).
    pub fn launches_per_sample(&self) -> Option<usize> {
        match self.per_sample.load(Ordering::Relaxed) {
            0 => None,
            n => Some(n),
        }
    }

    /// The launches per timed sample: chosen once, on the first valid configuration, from a
    /// warm launch of it (as many as fit in [`SAMPLE_TARGET_NS`], at most the spec's), then
    /// the same for every configuration, so that all are timed alike.
    fn per_sample(&self, buffers: &[B::Buffer], p: &PreparedKernel<B>) -> Result<usize, Failure> {
        let most = self.spec.launches_per_sample.max(1);
        if most == 1 {
            return Ok(1);
        }
        if let Some(n) = self.launches_per_sample() {
            return Ok(n);
        }
        let warm = self.launch_with(buffers, p, None, 1)?;
        let n = match warm.as_nanos() {
            0 => most,
            ns => usize::try_from((SAMPLE_TARGET_NS / ns).clamp(1, most as u128)).unwrap_or(1),
        };
        // Another thread may have chosen first: its choice stands.
        Ok(
            match self
                .per_sample
                .compare_exchange(0, n, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => n,
                Err(chosen) => chosen,
            },
        )
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The spec.
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
    }

    /// The reference outputs, when the spec has a reference.
    pub fn expected(&self) -> Option<&[HostData]> {
        self.expected.as_deref()
    }

    fn outputs(&self) -> impl Iterator<Item = &BufferArg> {
        self.spec.args.iter().filter_map(|a| match a {
            ArgSpec::Buffer(b) if b.output => Some(b),
            _ => None,
        })
    }

    fn host_args(&self) -> HostArgs<'_> {
        HostArgs {
            args: self
                .spec
                .args
                .iter()
                .map(|a| match a {
                    ArgSpec::Buffer(b) => HostArg::Data(&b.data),
                    ArgSpec::Scalar(_, v) => HostArg::Scalar(v.clone()),
                    ArgSpec::Local(..) => HostArg::Local,
                })
                .collect(),
        }
    }

    fn run_reference_kernel(&self, space: &Space, r: &ReferenceKernel) -> Result<Vec<HostData>> {
        let dev = self.backend.device();
        let fail = |failure: Failure| Error::ReferenceKernel {
            backend: dev.backend.clone(),
            failure,
        };
        let source = r.source.as_deref().unwrap_or(&self.spec.source);
        let name = r.name.as_deref().unwrap_or(&self.spec.name);
        let mut defines = match &r.config {
            Some(c) if r.source.is_none() => self.spec.defines_of(space, c),
            Some(c) => config_defines(space, c),
            None => Vec::new(),
        };
        defines.extend(r.defines.iter().cloned());
        let mut options = r.options.clone();
        if r.source.is_none() {
            options.extend(self.spec.options.iter().cloned());
        }
        let kernel = self
            .backend
            .compile(&CompileRequest {
                source,
                kernel: name,
                defines: &defines,
                options: &options,
            })
            .map_err(fail)?;
        if r.source.is_none() {
            self.backend
                .set_constants(&kernel, &self.constants)
                .map_err(fail)?;
        }
        let needs_config = || {
            Error::KernelSpec(
                "the reference kernel needs a configuration for its sizes or arguments; \
                 give one with `ReferenceKernel::config`"
                    .into(),
            )
        };
        let dims = match (&r.global, &r.config) {
            (Some(g), _) => {
                let global = to_dims(g, "global").map_err(fail)?;
                let local = match &r.local {
                    Some(l) => Some(to_dims(l, "local").map_err(fail)?),
                    None => None,
                };
                LaunchDims {
                    dims: g.len(),
                    global,
                    local,
                    dynamic_local_bytes: 0,
                }
            }
            (None, Some(c)) => self.launch_dims(c).map_err(fail)?,
            (None, None) => return Err(needs_config()),
        };
        let mut scalars = Vec::new();
        let mut locals = Vec::new();
        for a in &self.spec.args {
            match a {
                ArgSpec::Scalar(f, v) => scalars.push(Some(match (v, &r.config) {
                    (Some(v), _) => v.to_bytes(),
                    (None, Some(c)) => f(c).to_bytes(),
                    (None, None) => return Err(needs_config()),
                })),
                ArgSpec::Local(b, f) => locals.push(match &r.config {
                    Some(c) => b * f(c),
                    None => return Err(needs_config()),
                }),
                ArgSpec::Buffer(_) => {}
            }
        }
        let prepared = PreparedKernel::<B> {
            kernel: Arc::new(kernel),
            dims,
            scalars: vec![],
            locals,
            compile_time: Duration::ZERO,
        };
        let mut buffers = self
            .buffers
            .lock()
            .map_err(|_| backend_err(dev, "buffer lock poisoned"))?;
        self.restore(&mut buffers).map_err(fail)?;
        let scalar_bytes: Vec<Vec<u8>> = scalars.into_iter().flatten().collect();
        self.launch_with(&buffers, &prepared, Some(&scalar_bytes), 1)
            .map_err(fail)?;
        self.read_outputs(&buffers).map_err(fail)
    }

    /// Compiles on a thread of its own and waits at most `limit` for it.
    fn compile_within(
        &self,
        limit: Duration,
        defines: &[(String, String)],
        slot: Slot,
    ) -> Result<B::Kernel, Failure> {
        let (tx, rx) = std::sync::mpsc::channel();
        let backend = self.backend.clone();
        let (source, name) = (self.spec.source.clone(), self.spec.name.clone());
        let (defines, options) = (defines.to_vec(), self.spec.options.clone());
        let thread = std::thread::Builder::new()
            .name("tune-compile".into())
            .spawn(move || {
                let r = backend.compile(&CompileRequest {
                    source: &source,
                    kernel: &name,
                    defines: &defines,
                    options: &options,
                });
                drop(slot);
                let _ = tx.send(r);
            })
            .map_err(|e| Failure::Other(format!("starting a compile thread: {e}")))?;
        match rx.recv_timeout(limit) {
            Ok(r) => r,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                self.overruns.keep(thread);
                Err(Failure::Timeout(limit))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(Failure::Other(
                "the compile thread ended without a result".into(),
            )),
        }
    }

    /// The launch geometry of `config`, checked against the device's limits.
    ///
    /// # Errors
    /// [`Failure::Invalid`] when a size is zero, has more than 3 dimensions, or the local
    /// size does not divide the global size (without rounding); [`Failure::Rejected`]
    /// (`work_group_size`) when the work-group is over a device limit.
    pub fn launch_dims(&self, config: &Config) -> Result<LaunchDims, Failure> {
        let dev = self.backend.device();
        let local_v = self.spec.local.as_ref().map(|f| f(config));
        let local = match &local_v {
            Some(l) => Some(to_dims(l, "local")?),
            None => None,
        };
        let (global_v, from_grid) = match &self.spec.sizes {
            Some(Sizes::Global(f)) => (f(config), false),
            Some(Sizes::Grid(f)) => (f(config), true),
            None => return Err(Failure::Invalid("no global size".into())),
        };
        let n = global_v.len();
        let mut global = to_dims(&global_v, "global")?;
        if let Some(lv) = &local_v {
            if lv.len() != n {
                return Err(Failure::Invalid(format!(
                    "the global size has {n} dimensions, the local size {}",
                    lv.len()
                )));
            }
        }
        if global.contains(&0) || local.is_some_and(|l| l.contains(&0)) {
            return Err(Failure::Invalid(format!(
                "a size is zero: global {global_v:?}, local {local_v:?}"
            )));
        }
        if let Some(l) = local {
            for d in 0..3 {
                if from_grid {
                    global[d] = global[d].saturating_mul(l[d]);
                } else if global[d] % l[d] != 0 {
                    if self.spec.round_up {
                        global[d] = global[d].div_ceil(l[d]) * l[d];
                    } else {
                        return Err(Failure::Invalid(format!(
                            "local size {l:?} does not divide global size {global:?}; \
                             constrain the parameters or call `.round_up_global(true)`"
                        )));
                    }
                }
                if dev.max_work_item_sizes[d] > 0 && l[d] > dev.max_work_item_sizes[d] {
                    return Err(Failure::rejected(
                        Cause::WorkGroupSize,
                        format!(
                            "local size {} in dimension {d} exceeds the device limit {}",
                            l[d], dev.max_work_item_sizes[d]
                        ),
                    ));
                }
            }
            let total: usize = l.iter().product();
            if dev.max_work_group_size > 0 && total > dev.max_work_group_size {
                return Err(Failure::rejected(
                    Cause::WorkGroupSize,
                    format!(
                        "work-group of {total} work-items exceeds the device limit {}",
                        dev.max_work_group_size
                    ),
                ));
            }
        } else if from_grid {
            return Err(Failure::Invalid(
                "a grid needs a local (block) size; call `.local(|c| [..])`".into(),
            ));
        }
        Ok(LaunchDims {
            dims: n,
            global,
            local,
            dynamic_local_bytes: self.spec.dynamic_local.as_ref().map_or(0, |f| f(config)),
        })
    }

    fn restore(&self, buffers: &mut [B::Buffer]) -> Result<(), Failure> {
        for (buf, bytes) in buffers.iter_mut().zip(&self.initial) {
            self.backend
                .write(buf, bytes)
                .map_err(|e| Failure::Other(format!("restoring inputs: {e}")))?;
        }
        Ok(())
    }

    fn read_outputs(&self, buffers: &[B::Buffer]) -> Result<Vec<HostData>, Failure> {
        let mut out = Vec::new();
        let mut bi = 0;
        for a in &self.spec.args {
            if let ArgSpec::Buffer(b) = a {
                if b.output {
                    let mut bytes = vec![0u8; b.data.len() * b.data.elem_bytes()];
                    if let Some(buf) = buffers.get(bi) {
                        self.backend
                            .read(buf, &mut bytes)
                            .map_err(|e| Failure::Launch(format!("reading outputs: {e}")))?;
                    }
                    out.push(b.data.from_bytes_like(&bytes));
                }
                bi += 1;
            }
        }
        Ok(out)
    }

    fn launch_with(
        &self,
        buffers: &[B::Buffer],
        p: &PreparedKernel<B>,
        scalar_override: Option<&[Vec<u8>]>,
        count: usize,
    ) -> Result<Duration, Failure> {
        let mut args = Vec::with_capacity(self.spec.args.len());
        let (mut bi, mut si, mut li) = (0, 0, 0);
        for a in &self.spec.args {
            match a {
                ArgSpec::Buffer(_) => {
                    let b = buffers
                        .get(bi)
                        .ok_or_else(|| Failure::Other("missing buffer".into()))?;
                    args.push(LaunchArg::Buffer(b));
                    bi += 1;
                }
                ArgSpec::Scalar(..) => {
                    let bytes = match scalar_override {
                        Some(s) => s.get(si).map(|v| v.as_slice()),
                        None => p.scalars.get(si).and_then(|v| v.as_deref()),
                    }
                    .ok_or_else(|| Failure::Other("missing scalar".into()))?;
                    args.push(LaunchArg::Scalar(bytes));
                    si += 1;
                }
                ArgSpec::Local(..) => {
                    args.push(LaunchArg::Local(p.locals.get(li).copied().unwrap_or(0)));
                    li += 1;
                }
            }
        }
        if count > 1 {
            self.backend
                .launch_repeated(&p.kernel, &p.dims, &args, count)
        } else {
            self.backend.launch(&p.kernel, &p.dims, &args)
        }
    }

    /// Reads every output back and checks it against its reference: with the tolerance on
    /// the bytes as read (in parallel, no conversion), with a user comparator on typed data.
    fn validate(&self, buffers: &[B::Buffer], expected: &[HostData]) -> Result<(), Failure> {
        let mut readback = self
            .readback
            .lock()
            .map_err(|_| Failure::Other("read-back lock poisoned".into()))?;
        let outputs: Vec<(usize, &BufferArg)> = self
            .spec
            .args
            .iter()
            .filter_map(|a| match a {
                ArgSpec::Buffer(b) => Some(b),
                _ => None,
            })
            .enumerate()
            .filter(|(_, b)| b.output)
            .collect();
        readback.resize(outputs.len(), Vec::new());
        for (k, (((bi, b), e), bytes)) in outputs
            .iter()
            .zip(expected)
            .zip(readback.iter_mut())
            .enumerate()
        {
            bytes.resize(b.data.len() * b.data.elem_bytes(), 0);
            let buf = buffers
                .get(*bi)
                .ok_or_else(|| Failure::Other("missing buffer".into()))?;
            self.backend
                .read(buf, bytes)
                .map_err(|e| Failure::Launch(format!("reading outputs: {e}")))?;
            let r = match &self.spec.comparator {
                Some(c) => c(e, &b.data.from_bytes_like(bytes)),
                None => self.spec.tolerance.check_bytes(e, bytes),
            };
            r.map_err(|m| Failure::WrongResult(format!("output {k}: {m}")))?;
        }
        Ok(())
    }
}

impl<B: Backend> Drop for KernelEvaluator<B> {
    fn drop(&mut self) {
        // A compiler that never returns is not waited for beyond the grace.
        self.overruns.wait(OVERRUN_GRACE);
    }
}

impl<B: Backend> Evaluator for KernelEvaluator<B> {
    type Cost = Duration;
    type Prepared = PreparedKernel<B>;

    fn prepare(&self, space: &Space, config: &Config) -> Result<Self::Prepared, Failure> {
        let dev = self.backend.device();
        let dims = self.launch_dims(config)?;
        let mut locals = Vec::new();
        let mut scalars = Vec::new();
        for a in &self.spec.args {
            match a {
                ArgSpec::Local(b, f) => locals.push(b * f(config)),
                ArgSpec::Scalar(f, v) => scalars.push(Some(match v {
                    Some(v) => v.to_bytes(),
                    None => f(config).to_bytes(),
                })),
                ArgSpec::Buffer(_) => {}
            }
        }
        let local_mem = locals.iter().sum::<usize>()
            + dims.dynamic_local_bytes
            + self.spec.static_local.as_ref().map_or(0, |f| f(config));
        if dev.local_mem_bytes > 0 && local_mem > dev.local_mem_bytes {
            return Err(Failure::rejected(
                Cause::LocalMemory,
                format!(
                    "needs {local_mem} bytes of local memory; the device has {}",
                    dev.local_mem_bytes
                ),
            ));
        }
        let defines = self.spec.defines_of(space, config);
        let key: CacheKey = (
            self.source_hash,
            self.spec.name.clone(),
            defines.clone(),
            self.spec.options.clone(),
            format!("{}|{}", dev.name, dev.driver_version),
        );
        let cached = self.cache.lock().ok().and_then(|c| c.get(&key).cloned());
        let (kernel, compile_time) = match cached {
            Some(k) => (k, Duration::ZERO),
            None => {
                // The wait for the compiler is not compile time (nor part of its limit).
                let slot = self.compiling.take(self.backend.builds_at_once());
                let t = Instant::now();
                let k = Arc::new(match self.spec.compile_limit {
                    None => {
                        let k = self.backend.compile(&CompileRequest {
                            source: &self.spec.source,
                            kernel: &self.spec.name,
                            defines: &defines,
                            options: &self.spec.options,
                        });
                        drop(slot);
                        k?
                    }
                    Some(limit) => self.compile_within(limit, &defines, slot)?,
                });
                self.backend.set_constants(&k, &self.constants)?;
                let dt = t.elapsed();
                if self.spec.cache_capacity > 0 {
                    if let Ok(mut c) = self.cache.lock() {
                        if c.len() >= self.spec.cache_capacity {
                            c.clear();
                        }
                        c.insert(key, k.clone());
                    }
                }
                (k, dt)
            }
        };
        // Kernel-property constraints, on what the compiler produced, before it runs.
        let limits = self.backend.kernel_limits(&kernel);
        let wg = dims.local_len();
        let dynamic = locals.iter().sum::<usize>() + dims.dynamic_local_bytes;
        let local_mem_bytes = limits.local_mem_bytes.unwrap_or(0) + dynamic;
        let occupancy = match (dims.local.is_some(), self.spec.checks.wants_occupancy()) {
            (true, true) => self
                .backend
                .occupancy(&kernel, wg, dynamic)
                .or_else(|| Occupancy::estimate(dev, wg, limits.registers, local_mem_bytes)),
            _ => None,
        };
        let props = KernelProps {
            device: dev,
            limits: &limits,
            work_group_size: if dims.local.is_some() { wg } else { 0 },
            local_mem_bytes,
            occupancy,
        };
        self.spec.checks.check(config, &props)?;
        Ok(PreparedKernel {
            kernel,
            dims,
            scalars,
            locals,
            compile_time,
        })
    }

    fn measure(
        &self,
        _space: &Space,
        _config: &Config,
        prepared: Self::Prepared,
    ) -> Result<Measured<Duration>, Failure> {
        let mut buffers = self
            .buffers
            .lock()
            .map_err(|_| Failure::Other("buffer lock poisoned".into()))?;
        self.restore(&mut buffers)?;
        let first = self.launch_with(&buffers, &prepared, None, 1)?;
        if first.as_nanos() > self.time_limit_ns() {
            return Err(Failure::Timeout(first));
        }
        let validation = match &self.expected {
            Some(expected) => {
                let t = Instant::now();
                self.validate(&buffers, expected)?;
                Some(t.elapsed())
            }
            None => None,
        };
        if first.as_nanos() > self.slow_limit_ns() {
            return Ok(Measured::stopped_after(first, validation));
        }
        let per_sample = self.per_sample(&buffers, &prepared)?;
        for _ in 0..self.spec.warmups {
            self.launch_with(&buffers, &prepared, None, per_sample)?;
        }
        let mut samples = Vec::with_capacity(self.spec.repetitions);
        if self.spec.repetitions == 0 {
            samples.push(first);
        }
        for _ in 0..self.spec.repetitions {
            let t = self.launch_with(&buffers, &prepared, None, per_sample)?;
            samples.push(per_launch(t, per_sample));
        }
        let m = Measured::from_samples(&samples, validation);
        let ns = u64::try_from(m.cost.as_nanos()).unwrap_or(u64::MAX);
        self.best_ns.fetch_min(ns, Ordering::Relaxed);
        Ok(m)
    }

    fn lost(&self) -> Option<String> {
        self.backend.lost()
    }

    fn device(&self) -> String {
        self.backend.device().describe()
    }
}

/// The time of one launch of a sample of `count` back-to-back launches.
fn per_launch(sample: Duration, count: usize) -> Duration {
    let ns = sample.as_nanos() / count.max(1) as u128;
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}
