//! [`CompositionEvaluator`]: a composition as an [`Evaluator`]: every kernel compiled for the
//! configuration in `prepare`, the host code run, validated and timed in `measure`.

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::kernel::{Kernel, ProgramCache};
use super::launch::{Defaults, Stored, Tally};
use super::run::Run;
use super::{Composition, HostCode, Inputs, Reference, Role, Timing};
use crate::backend::{config_defines, Backend, HostData};
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::param::Kind;
use crate::space::{Config, Space};
use crate::{Error, Result};

/// A configuration of a composition, every kernel compiled for it (a kernel that failed to
/// compile keeps its failure, reported when the host code launches it), with what a run
/// would otherwise compute from the configuration every time: the kernels' default launch
/// sizes and the scratch buffers' lengths.
pub struct PreparedComposition<B: Backend> {
    kernels: Vec<Result<Kernel<B>, Failure>>,
    defaults: Vec<Defaults>,
    /// Per buffer, its length for a scratch buffer (unused for the others).
    scratch: Vec<usize>,
    /// Wall time spent compiling (zero when every kernel came from the cache).
    pub compile_time: Duration,
}

impl<B: Backend> Clone for PreparedComposition<B> {
    fn clone(&self) -> Self {
        PreparedComposition {
            kernels: self.kernels.clone(),
            defaults: self.defaults.clone(),
            scratch: self.scratch.clone(),
            compile_time: self.compile_time,
        }
    }
}

impl<B: Backend> fmt::Debug for PreparedComposition<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedComposition")
            .field("kernels", &self.kernels)
            .field("compile_time", &self.compile_time)
            .finish()
    }
}

struct State<B: Backend> {
    stored: Vec<Stored<B>>,
    /// The buffer map of a run (kept to reuse its allocation).
    map: Vec<usize>,
    /// Whether the input buffers hold their declared contents.
    inputs_fresh: bool,
}

/// Evaluates the configurations of a [`Composition`] on a [`Backend`]: an [`Evaluator`]
/// whose cost is the median cost of a run (see [`Timing`]).
pub struct CompositionEvaluator<B: Backend> {
    backend: Arc<B>,
    comp: Composition<B>,
    host: HostCode<B>,
    /// Per kernel, the defines it receives (`None`: every parameter's).
    allowed: Vec<Option<HashSet<String>>>,
    cache: ProgramCache<B>,
    state: Mutex<State<B>>,
    expected: Option<Vec<HostData>>,
    /// Best median so far in nanoseconds (`u64::MAX` before the first).
    best_ns: AtomicU64,
}

impl<B: Backend> fmt::Debug for CompositionEvaluator<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompositionEvaluator")
            .field("device", &self.backend.device().describe())
            .field("composition", &self.comp)
            .finish_non_exhaustive()
    }
}

/// The defines a kernel restricted to `names` receives: those parameters, and the variant
/// defines of the enum ones.
fn allowed_defines(space: &Space, kernel: &str, names: &[String]) -> Result<HashSet<String>> {
    let mut set = HashSet::new();
    for n in names {
        let slot = space.slot(n).map_err(|_| {
            Error::KernelSpec(format!(
                "kernel `{kernel}` names the parameter `{n}`, which the space does not declare; \
                 it declares: {}",
                space
                    .params()
                    .iter()
                    .map(|p| format!("`{}`", p.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        set.insert(n.clone());
        if let Some(info) = space.params().get(slot) {
            if info.kind() == Kind::Enum {
                for i in 0..info.domain_len() {
                    if let Some(v) = info.domain_value(i) {
                        set.insert(format!("{n}_{v}"));
                    }
                }
            }
        }
    }
    Ok(set)
}

impl<B: Backend> CompositionEvaluator<B> {
    /// Allocates the buffers on the device and computes the reference outputs (running the
    /// reference closure, configuration or composition once).
    ///
    /// # Errors
    /// [`Error::KernelSpec`] without host code, for a kernel restricted to an undeclared
    /// parameter, or a reference that does not match the outputs or fails;
    /// [`Error::Backend`] when the device cannot hold the buffers.
    pub fn new(backend: impl Into<Arc<B>>, space: &Space, comp: Composition<B>) -> Result<Self> {
        let backend = backend.into();
        let host = comp.host.clone().ok_or_else(|| {
            Error::KernelSpec(
                "the composition has no host code; give it with `.host(|run| ..)`".into(),
            )
        })?;
        let allowed = comp
            .kernels
            .iter()
            .map(|k| match &k.params {
                Some(names) => allowed_defines(space, &k.name, names).map(Some),
                None => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut stored = Vec::with_capacity(comp.decls.len());
        for d in &comp.decls {
            let (elem, type_name) = (d.data.elem_bytes(), d.data.type_name());
            let len = match d.role {
                Role::Scratch(_) => 0,
                _ => d.data.len(),
            };
            let bytes = (len * elem).max(1);
            let mut buf = backend.alloc(bytes)?;
            if len > 0 {
                backend.write(&mut buf, &d.data.to_bytes())?;
            }
            stored.push(Stored {
                buf,
                len,
                capacity: bytes,
                elem,
                type_name,
            });
        }
        let mut comp = comp;
        let reference = comp.reference.take();
        let mut ev = CompositionEvaluator {
            cache: ProgramCache::new(comp.cache_capacity),
            backend,
            host,
            allowed,
            state: Mutex::new(State {
                map: Vec::with_capacity(stored.len()),
                stored,
                inputs_fresh: true,
            }),
            expected: None,
            best_ns: AtomicU64::new(u64::MAX),
            comp,
        };
        let outputs = ev.comp.decls.iter().filter(|d| d.output).count();
        let expected = match reference {
            None => None,
            Some(Reference::Closure(f)) => Some(f(&Inputs {
                decls: &ev.comp.decls,
            })?),
            Some(Reference::Config(c)) => {
                if !space.contains(&c) {
                    return Err(Error::KernelSpec(format!(
                        "the reference configuration {c:?} is not in the space"
                    )));
                }
                Some(ev.outputs_of(space, &c).map_err(|f| {
                    Error::KernelSpec(format!(
                        "the composition failed with its reference configuration {}: {f}",
                        space.describe(&c)
                    ))
                })?)
            }
            Some(Reference::Composition(other, s, c)) => {
                let o = CompositionEvaluator::<B>::new(ev.backend.clone(), &s, *other)?;
                Some(o.outputs_of(&s, &c).map_err(|f| {
                    Error::KernelSpec(format!("the reference composition failed: {f}"))
                })?)
            }
        };
        if let Some(e) = &expected {
            if e.len() != outputs {
                return Err(Error::KernelSpec(format!(
                    "the reference gives {} outputs; the composition has {outputs} buffers marked \
                     `.output()`",
                    e.len()
                )));
            }
        }
        ev.expected = expected;
        Ok(ev)
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The reference outputs, when the composition has a reference.
    pub fn expected(&self) -> Option<&[HostData]> {
        self.expected.as_deref()
    }

    fn lock(&self) -> Result<MutexGuard<'_, State<B>>, Failure> {
        self.state
            .lock()
            .map_err(|_| Failure::Other("the composition's buffer lock is poisoned".into()))
    }

    /// Writes the declared contents back: the written buffers always, the inputs when
    /// `inputs` or when they may have changed.
    fn restore(&self, st: &mut State<B>, inputs: bool) -> Result<(), Failure> {
        let all_inputs = inputs || !st.inputs_fresh;
        for (d, s) in self.comp.decls.iter().zip(st.stored.iter_mut()) {
            let write = match d.role {
                Role::Input | Role::Output => all_inputs,
                Role::Restored => true,
                Role::Scratch(_) => false,
            };
            if write && !d.data.is_empty() {
                self.backend
                    .write(&mut s.buf, &d.data.to_bytes())
                    .map_err(|e| Failure::Other(format!("restoring the buffers: {e}")))?;
            }
        }
        st.inputs_fresh = true;
        Ok(())
    }

    /// Sizes the scratch buffers as `prepared` says, growing an allocation when it is too
    /// small.
    fn size_scratch(
        &self,
        st: &mut State<B>,
        prepared: &PreparedComposition<B>,
    ) -> Result<(), Failure> {
        let decls = self.comp.decls.iter().zip(&prepared.scratch);
        for ((d, &len), s) in decls.zip(st.stored.iter_mut()) {
            if let Role::Scratch(_) = &d.role {
                let bytes = len.saturating_mul(s.elem);
                if bytes > s.capacity {
                    s.buf = self.backend.alloc(bytes).map_err(|e| {
                        Failure::Invalid(format!(
                            "cannot allocate a scratch buffer of {bytes} bytes: {e}"
                        ))
                    })?;
                    s.capacity = bytes;
                }
                s.len = len;
            }
        }
        Ok(())
    }

    /// Runs the host code once on the buffers as they are: `before` (untimed), the host
    /// code, then `after` (untimed). Returns `after`'s value and the run's cost.
    fn run_host<R>(
        &self,
        st: &mut State<B>,
        space: &Space,
        config: &Config,
        prepared: &PreparedComposition<B>,
        before: impl FnOnce(&mut Run<'_, B>) -> Result<(), Failure>,
        after: impl FnOnce(&Run<'_, B>) -> Result<R, Failure>,
    ) -> Result<(R, Duration), Failure> {
        self.size_scratch(st, prepared)?;
        let State {
            stored,
            map,
            inputs_fresh,
        } = st;
        map.clear();
        map.extend(0..stored.len());
        // The clock is read only where the cost includes host time.
        let timing = self.comp.timing;
        let mut run = Run {
            backend: &*self.backend,
            space,
            config,
            kernels: &prepared.kernels,
            defaults: &prepared.defaults,
            decls: &self.comp.decls,
            map,
            stored,
            tally: Tally {
                time_launches: timing == Timing::DeviceAndHost,
                ..Tally::default()
            },
            inputs_dirty: false,
        };
        let ran = before(&mut run).and_then(|()| {
            if timing == Timing::Device {
                return (self.host)(&mut run).map(|()| Duration::ZERO);
            }
            let t = Instant::now();
            let r = (self.host)(&mut run);
            r.map(|()| t.elapsed())
        });
        if run.inputs_dirty {
            *inputs_fresh = false;
        }
        let wall = ran?;
        if let Some(f) = run.tally.failure.take() {
            return Err(f);
        }
        let cost = match timing {
            Timing::Device => run.tally.device.get(),
            Timing::Wall => wall,
            Timing::DeviceAndHost => {
                wall.saturating_sub(run.tally.wall.get()) + run.tally.device.get()
            }
        };
        Ok((after(&run)?, cost))
    }

    /// The outputs as the host code left them (through its final buffer names).
    fn read_outputs(&self, run: &Run<'_, B>) -> Result<Vec<HostData>, Failure> {
        let mut out = Vec::new();
        for (id, d) in self.comp.decls.iter().enumerate() {
            if !d.output {
                continue;
            }
            let s = &run.stored[run.map[id]];
            let mut bytes = vec![0u8; s.len * s.elem];
            self.backend
                .read(&s.buf, &mut bytes)
                .map_err(|e| Failure::Launch(format!("reading output {id}: {e}")))?;
            out.push(d.data.from_bytes_like(&bytes));
        }
        Ok(out)
    }

    fn validate(&self, actual: &[HostData]) -> Result<(), Failure> {
        crate::backend::validate::check_outputs(
            self.expected.as_deref(),
            actual,
            self.comp.comparator.as_ref(),
            &self.comp.tolerance,
        )
    }

    /// Runs `config` once from the declared contents and returns its outputs.
    fn outputs_of(&self, space: &Space, config: &Config) -> Result<Vec<HostData>, Failure> {
        let p = self.prepare(space, config)?;
        let mut st = self.lock()?;
        self.restore(&mut st, true)?;
        self.run_host(
            &mut st,
            space,
            config,
            &p,
            |_| Ok(()),
            |run| self.read_outputs(run),
        )
        .map(|(out, _)| out)
    }

    /// Runs the host code once with `config` on the application's data: the application's
    /// own call of the composition, as in online tuning. The read-write buffers
    /// ([`Composition::buffer`]) are restored first; inputs and outputs are not: `before`
    /// writes the inputs ([`Run::write`]); `after` reads the outputs (or launches a
    /// validation kernel). Neither is part of the cost.
    /// Returns `after`'s value and the run's cost (see [`Timing`]). Nothing is validated.
    ///
    /// # Errors
    /// The host code's failure, or the first launch failure.
    pub fn call<R>(
        &self,
        space: &Space,
        config: &Config,
        prepared: &PreparedComposition<B>,
        before: impl FnOnce(&mut Run<'_, B>) -> Result<(), Failure>,
        after: impl FnOnce(&Run<'_, B>) -> Result<R, Failure>,
    ) -> Result<(R, Duration), Failure> {
        let mut st = self.lock()?;
        st.inputs_fresh = true;
        self.restore(&mut st, false)?;
        self.run_host(&mut st, space, config, prepared, before, after)
    }
}

impl<B: Backend> Evaluator for CompositionEvaluator<B> {
    type Cost = Duration;
    type Prepared = PreparedComposition<B>;

    fn prepare(&self, space: &Space, config: &Config) -> Result<Self::Prepared, Failure> {
        let all = config_defines(space, config);
        let mut compile_time = Duration::ZERO;
        let mut kernels = Vec::with_capacity(self.comp.kernels.len());
        for (src, allowed) in self.comp.kernels.iter().zip(&self.allowed) {
            let mut defines: Vec<(String, String)> = match allowed {
                None => all.clone(),
                Some(set) => all
                    .iter()
                    .filter(|(k, _)| set.contains(k))
                    .cloned()
                    .collect(),
            };
            defines.extend(src.computed.iter().map(|(n, f)| (n.clone(), f(config))));
            kernels.push(self.cache.get(&self.backend, src, defines).map(|(k, dt)| {
                compile_time += dt;
                k
            }));
        }
        // Nothing can run when no kernel compiled: say so now.
        if !kernels.is_empty() && kernels.iter().all(Result::is_err) {
            if let Some(Err(f)) = kernels.into_iter().next() {
                return Err(f);
            }
            return Err(Failure::Other("no kernel compiled".into()));
        }
        let defaults = self
            .comp
            .kernels
            .iter()
            .map(|src| Defaults::of(src, config))
            .collect();
        let scratch = self
            .comp
            .decls
            .iter()
            .map(|d| match &d.role {
                Role::Scratch(f) => f(config),
                _ => 0,
            })
            .collect();
        Ok(PreparedComposition {
            kernels,
            defaults,
            scratch,
            compile_time,
        })
    }

    fn measure(
        &self,
        space: &Space,
        config: &Config,
        prepared: Self::Prepared,
    ) -> Result<Measured<Duration>, Failure> {
        let mut st = self.lock()?;
        self.restore(&mut st, true)?;
        let check = self.expected.is_some();
        let (outputs, first) = self.run_host(
            &mut st,
            space,
            config,
            &prepared,
            |_| Ok(()),
            |run| {
                if check {
                    let t = Instant::now();
                    self.read_outputs(run).map(|o| Some((o, t)))
                } else {
                    Ok(None)
                }
            },
        )?;
        if let Some(limit) = self.comp.time_limit {
            if first > limit {
                return Err(Failure::Timeout(first));
            }
        }
        let validation = match outputs {
            Some((out, t)) => {
                self.validate(&out)?;
                Some(t.elapsed())
            }
            None => None,
        };
        let best = self.best_ns.load(Ordering::Relaxed);
        if let (Some(f), true) = (self.comp.slow_factor, best < u64::MAX) {
            if first.as_nanos() as f64 > best as f64 * f {
                return Ok(Measured::stopped_after(first, validation));
            }
        }
        for _ in 0..self.comp.warmups {
            self.restore(&mut st, false)?;
            self.run_host(&mut st, space, config, &prepared, |_| Ok(()), |_| Ok(()))?;
        }
        let mut samples = Vec::with_capacity(self.comp.repetitions);
        for _ in 0..self.comp.repetitions.max(1) {
            self.restore(&mut st, false)?;
            let ((), t) =
                self.run_host(&mut st, space, config, &prepared, |_| Ok(()), |_| Ok(()))?;
            samples.push(t);
        }
        let m = Measured::from_samples(&samples, validation);
        let ns = u64::try_from(m.cost.as_nanos()).unwrap_or(u64::MAX);
        self.best_ns.fetch_min(ns, Ordering::Relaxed);
        Ok(m)
    }

    fn device(&self) -> String {
        self.backend.device().describe()
    }
}
