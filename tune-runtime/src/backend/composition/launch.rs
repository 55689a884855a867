//! [`Launch`]: a one-shot builder of one kernel launch (sizes and arguments), checked against
//! the device's and the kernel's limits before it reaches the backend.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::time::{Duration, Instant};

use smallvec::SmallVec;

use super::kernel::{Kernel, KernelSource};
use super::queue::Buffer;
use super::BufferId;
use crate::backend::{Backend, Element, LaunchArg, LaunchDims};
use crate::evaluate::Failure;
use crate::space::Config;

/// A device buffer of a composition run: its storage and what it holds.
#[doc(hidden)]
pub struct Stored<B: Backend> {
    pub(super) buf: B::Buffer,
    /// Elements in use (a scratch buffer may have more room).
    pub(super) len: usize,
    /// Bytes allocated.
    pub(super) capacity: usize,
    pub(super) elem: usize,
    pub(super) type_name: &'static str,
}

/// The buffers of a run as the host code sees them: ids mapped to storage (swaps permute
/// the map). Public in a private module: unnameable outside.
#[doc(hidden)]
pub struct Table<'a, B: Backend> {
    pub(super) stored: &'a [Stored<B>],
    pub(super) map: &'a [usize],
}

impl<'a, B: Backend> Table<'a, B> {
    pub(super) fn get(&self, id: BufferId) -> Result<&'a Stored<B>, Failure> {
        self.map
            .get(id.0)
            .and_then(|&i| self.stored.get(i))
            .ok_or_else(|| unknown_buffer(id, self.map.len()))
    }
}

pub(super) fn unknown_buffer(id: BufferId, count: usize) -> Failure {
    Failure::Other(format!(
        "buffer {} is not a buffer of this composition (it declares {count}); use the ids its \
         `input`, `buffer` and `scratch` returned",
        id.0
    ))
}

/// What a run adds up: device time and count of launches, their wall time (only when the
/// cost includes host time: reading the clock is most of a launch's host work), and the
/// first launch failure (reported even when the host code drops it).
#[derive(Default)]
pub(super) struct Tally {
    pub(super) device: Cell<Duration>,
    pub(super) wall: Cell<Duration>,
    pub(super) launches: Cell<usize>,
    pub(super) failure: RefCell<Option<Failure>>,
    /// Whether each launch's wall time is taken.
    pub(super) time_launches: bool,
}

/// A kernel's default launch sizes ([`KernelSource::global`], [`KernelSource::local`])
/// computed once per configuration, when it is prepared.
#[derive(Clone, Debug, Default)]
pub(super) struct Defaults {
    pub(super) global: Option<Result<([usize; 3], usize), Failure>>,
    pub(super) local: Option<Result<[usize; 3], Failure>>,
}

impl Defaults {
    pub(super) fn of(src: &KernelSource, config: &Config) -> Self {
        Defaults {
            global: src.global.as_ref().map(|f| {
                let v = f(config);
                to_dims(&v, "global", &src.name).map(|d| (d, v.len()))
            }),
            local: src
                .local
                .as_ref()
                .map(|f| to_dims(&f(config), "local", &src.name)),
        }
    }
}

/// Something a launch takes as a buffer argument: a composition's [`BufferId`] (inside its
/// host code) or a queue's [`Buffer`].
pub trait BufferArgument<'a, B: Backend> {
    /// The device buffer.
    #[doc(hidden)]
    fn resolve(self, table: Option<&Table<'a, B>>) -> Result<&'a B::Buffer, Failure>;
}

impl<'a, B: Backend> BufferArgument<'a, B> for BufferId {
    fn resolve(self, table: Option<&Table<'a, B>>) -> Result<&'a B::Buffer, Failure> {
        match table {
            Some(t) => t.get(self).map(|s| &s.buf),
            None => Err(Failure::Other(
                "a `BufferId` names a buffer of a composition: pass it inside the \
                 composition's host code, or pass a queue's `Buffer`"
                    .into(),
            )),
        }
    }
}

impl<'a, B: Backend, T: Element> BufferArgument<'a, B> for &'a Buffer<B, T> {
    fn resolve(self, _table: Option<&Table<'a, B>>) -> Result<&'a B::Buffer, Failure> {
        Ok(&self.buf)
    }
}

enum Pending<'a, B: Backend> {
    Buffer(&'a B::Buffer),
    /// The first `.1` of the bytes.
    Scalar([u8; 8], u8),
    Local(usize),
}

/// Arguments held inline up to this many (more spill to the heap).
const INLINE_ARGS: usize = 8;

/// One launch of a kernel: sizes and arguments in the kernel's parameter order, then
/// [`Launch::run`]. From [`Run::launch`](super::Run::launch) inside a composition's host code,
/// or [`Queue::launch`](super::Queue::launch).
///
/// Before the launch reaches the backend it is checked: a local size that does not divide
/// the global size (unless [`Launch::round_up`]), a work-group over the device's or the
/// kernel's limit, or more local memory than the device has is [`Failure::Invalid`].
#[must_use = "a launch does nothing until `.run()`"]
pub struct Launch<'a, B: Backend> {
    backend: &'a B,
    kernel: Option<&'a Kernel<B>>,
    defaults: Option<&'a Defaults>,
    table: Option<Table<'a, B>>,
    tally: Option<&'a Tally>,
    dims: usize,
    global: Option<[usize; 3]>,
    local: Option<[usize; 3]>,
    round_up: bool,
    args: SmallVec<[Pending<'a, B>; INLINE_ARGS]>,
    /// The first error of the builder (or the kernel's failure to compile).
    /// Boxed: the builder moves the launch at every step, and a failure is rare.
    error: Option<Box<Failure>>,
}

impl<B: Backend> fmt::Debug for Launch<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Launch")
            .field("global", &self.global)
            .field("local", &self.local)
            .field("args", &self.args.len())
            .finish_non_exhaustive()
    }
}

#[inline]
fn to_dims(v: &[usize], what: &str, kernel: &str) -> Result<[usize; 3], Failure> {
    // By cases, not a copy of a slice: a copy of a runtime length is a call to `memcpy`,
    // which was the largest part of a launch's host time.
    match *v {
        [x] => Ok([x, 1, 1]),
        [x, y] => Ok([x, y, 1]),
        [x, y, z] => Ok([x, y, z]),
        _ => Err(Failure::Invalid(format!(
            "kernel `{kernel}`: the {what} size has {} dimensions; give 1 to 3",
            v.len()
        ))),
    }
}

impl<'a, B: Backend> Launch<'a, B> {
    #[inline(always)]
    pub(super) fn new(
        backend: &'a B,
        kernel: Result<&'a Kernel<B>, Failure>,
        defaults: Option<&'a Defaults>,
        table: Option<Table<'a, B>>,
        tally: Option<&'a Tally>,
    ) -> Self {
        let (kernel, error) = match kernel {
            Ok(k) => (Some(k), None),
            Err(f) => (None, Some(Box::new(f))),
        };
        Launch {
            backend,
            kernel,
            defaults,
            table,
            tally,
            dims: 0,
            global: None,
            local: None,
            round_up: false,
            args: SmallVec::new(),
            error,
        }
    }

    fn kernel_name(&self) -> &str {
        self.kernel.map_or("?", |k| &k.name)
    }

    /// The global size: work-items in total per dimension (1 to 3). Without it, the size
    /// the kernel declares ([`KernelSource::global`]).
    #[inline(always)]
    pub fn global<const D: usize>(mut self, global: [usize; D]) -> Self {
        match to_dims(&global, "global", self.kernel_name()) {
            Ok(g) => {
                self.global = Some(g);
                self.dims = D;
            }
            Err(e) => self.error = self.error.or_else(|| Some(Box::new(e))),
        }
        self
    }

    /// The local size (work-group; CUDA's block), as many dimensions as the global size.
    /// Without it, the size the kernel declares, else the driver's choice (OpenCL only).
    #[inline(always)]
    pub fn local<const D: usize>(mut self, local: [usize; D]) -> Self {
        match to_dims(&local, "local", self.kernel_name()) {
            Ok(l) => self.local = Some(l),
            Err(e) => self.error = self.error.or_else(|| Some(Box::new(e))),
        }
        self
    }

    /// Rounds the global size up to a multiple of the local size (the kernel checks its
    /// bounds); otherwise a local size that does not divide the global size is invalid.
    #[inline(always)]
    pub fn round_up(mut self, yes: bool) -> Self {
        self.round_up = yes;
        self
    }

    /// The next argument: a buffer (a [`BufferId`] in a composition, a [`Buffer`] of a
    /// queue).
    #[inline(always)]
    pub fn arg(mut self, buffer: impl BufferArgument<'a, B>) -> Self {
        match buffer.resolve(self.table.as_ref()) {
            Ok(b) => self.args.push(Pending::Buffer(b)),
            Err(e) => self.error = self.error.or_else(|| Some(Box::new(e))),
        }
        self
    }

    /// The next argument: a scalar (its type must match the kernel's parameter: `i32` for
    /// `int`, `u32` for `uint`, `f32` for `float`).
    #[inline(always)]
    pub fn scalar<T: Element>(mut self, value: T) -> Self {
        let (bytes, len) = value.ne_bytes();
        self.args.push(Pending::Scalar(bytes, len as u8));
        self
    }

    /// The next argument: local (shared) memory for `len` elements of `T` (an OpenCL
    /// `__local T*` parameter; on CUDA it becomes dynamic shared memory and takes no
    /// parameter).
    #[inline(always)]
    pub fn local_mem<T: Element>(mut self, len: usize) -> Self {
        self.args
            .push(Pending::Local(len.saturating_mul(std::mem::size_of::<T>())));
        self
    }

    fn geometry(&self, kernel: &Kernel<B>) -> Result<LaunchDims, Failure> {
        let name = &*kernel.name;
        let (mut global, dims) = match (self.global, self.defaults.and_then(|d| d.global.as_ref()))
        {
            (Some(g), _) => (g, self.dims),
            (None, Some(g)) => g.clone()?,
            (None, None) => {
                return Err(Failure::Invalid(format!(
                    "kernel `{name}` launched without a global size; call `.global([..])` on \
                     the launch, or declare one with `KernelSource::global`"
                )))
            }
        };
        let local = match (self.local, self.defaults.and_then(|d| d.local.as_ref())) {
            (Some(l), _) => Some(l),
            (None, Some(l)) => Some(l.clone()?),
            (None, None) => None,
        };
        if global.contains(&0) || local.is_some_and(|l| l.contains(&0)) {
            return Err(Failure::Invalid(format!(
                "kernel `{name}`: a size is zero: global {global:?}, local {local:?}"
            )));
        }
        let dev = self.backend.device();
        if let Some(l) = local {
            for d in 0..3 {
                if global[d] % l[d] != 0 {
                    if self.round_up {
                        global[d] = global[d].div_ceil(l[d]) * l[d];
                    } else {
                        return Err(Failure::Invalid(format!(
                            "kernel `{name}`: local size {l:?} does not divide global size \
                             {global:?}; constrain the parameters or call `.round_up(true)`"
                        )));
                    }
                }
                if dev.max_work_item_sizes[d] > 0 && l[d] > dev.max_work_item_sizes[d] {
                    return Err(Failure::Invalid(format!(
                        "kernel `{name}`: local size {} in dimension {d} exceeds the device \
                         limit {}",
                        l[d], dev.max_work_item_sizes[d]
                    )));
                }
            }
            let total: usize = l.iter().product();
            let kernel_max = kernel.limits.max_work_group_size.unwrap_or(usize::MAX);
            let max = match dev.max_work_group_size {
                0 => kernel_max,
                m => m.min(kernel_max),
            };
            if total > max {
                return Err(Failure::Invalid(format!(
                    "kernel `{name}`: a work-group of {total} work-items exceeds the limit \
                     {max} (device, or this kernel's registers and local memory)"
                )));
            }
        }
        let local_mem: usize = self
            .args
            .iter()
            .map(|a| match a {
                Pending::Local(n) => *n,
                _ => 0,
            })
            .sum::<usize>()
            + kernel.limits.local_mem_bytes.unwrap_or(0);
        if dev.local_mem_bytes > 0 && local_mem > dev.local_mem_bytes {
            return Err(Failure::Invalid(format!(
                "kernel `{name}` needs {local_mem} bytes of local memory; the device has {}",
                dev.local_mem_bytes
            )));
        }
        Ok(LaunchDims {
            dims: dims.clamp(1, 3),
            global,
            local,
            dynamic_local_bytes: 0,
        })
    }

    fn launch(&self) -> Result<Duration, Failure> {
        if let Some(e) = &self.error {
            return Err((**e).clone());
        }
        let Some(kernel) = self.kernel else {
            return Err(Failure::Other("a launch without a kernel".into()));
        };
        let dims = self.geometry(kernel)?;
        let args: SmallVec<[LaunchArg<'_, B>; INLINE_ARGS]> = self
            .args
            .iter()
            .map(|a| match a {
                Pending::Buffer(b) => LaunchArg::Buffer(*b),
                Pending::Scalar(bytes, n) => LaunchArg::Scalar(&bytes[..usize::from(*n)]),
                Pending::Local(n) => LaunchArg::Local(*n),
            })
            .collect();
        self.backend.launch(&kernel.kernel, &dims, &args)
    }

    /// Launches the kernel, waits for it, and returns its device time. In a composition the
    /// time is added to the run's, and a failure is the run's failure even if the host code
    /// goes on.
    ///
    /// # Errors
    /// [`Failure::Invalid`] for sizes over a limit, [`Failure::Compile`] when the kernel did
    /// not compile for this configuration, [`Failure::Launch`] from the backend.
    #[inline(always)]
    pub fn run(self) -> Result<Duration, Failure> {
        let Some(tally) = self.tally else {
            return self.launch();
        };
        let r = if tally.time_launches {
            let t = Instant::now();
            let r = self.launch();
            tally.wall.set(tally.wall.get() + t.elapsed());
            r
        } else {
            self.launch()
        };
        match &r {
            Ok(d) => {
                tally.device.set(tally.device.get() + *d);
                tally.launches.set(tally.launches.get() + 1);
            }
            Err(f) => {
                let mut first = tally.failure.borrow_mut();
                if first.is_none() {
                    *first = Some(f.clone());
                }
            }
        }
        r
    }
}
