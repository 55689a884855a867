//! [`Launch`]: a one-shot builder of one kernel launch (sizes and arguments), checked against
//! the device's and the kernel's limits before it reaches the backend.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::time::{Duration, Instant};

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

/// What a run adds up: device time and count of launches, their wall time, and the first
/// launch failure (reported even when the host code drops it).
#[derive(Default)]
pub(super) struct Tally {
    pub(super) device: Cell<Duration>,
    pub(super) wall: Cell<Duration>,
    pub(super) launches: Cell<usize>,
    pub(super) failure: RefCell<Option<Failure>>,
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
    /// A range of `Launch::bytes`.
    Scalar(usize, usize),
    Local(usize),
}

/// One launch of a kernel: sizes and arguments in the kernel's parameter order, then
/// [`Launch::run`]. From [`Run::launch`](super::Run::launch) inside a composition's host code,
/// or [`Queue::launch`](super::Queue::launch).
///
/// Before the launch reaches the backend it is checked: a local size that does not divide
/// the global size (unless [`Launch::round_up`]), a work-group over the device's or the
/// kernel's limit, or more local memory than the device has is [`Failure::Invalid`].
#[must_use = "a launch does nothing until `.run()`"]
pub struct Launch<'a, B: Backend> {
    pub(super) backend: &'a B,
    pub(super) kernel: Result<&'a Kernel<B>, Failure>,
    pub(super) defaults: Option<(&'a KernelSource, &'a Config)>,
    pub(super) table: Option<Table<'a, B>>,
    pub(super) tally: Option<&'a Tally>,
    dims: usize,
    global: Option<[usize; 3]>,
    local: Option<[usize; 3]>,
    round_up: bool,
    args: Vec<Pending<'a, B>>,
    bytes: Vec<u8>,
    error: Option<Failure>,
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

fn to_dims(v: &[usize], what: &str, kernel: &str) -> Result<[usize; 3], Failure> {
    if v.is_empty() || v.len() > 3 {
        return Err(Failure::Invalid(format!(
            "kernel `{kernel}`: the {what} size has {} dimensions; give 1 to 3",
            v.len()
        )));
    }
    let mut d = [1usize; 3];
    d[..v.len()].copy_from_slice(v);
    Ok(d)
}

impl<'a, B: Backend> Launch<'a, B> {
    pub(super) fn new(
        backend: &'a B,
        kernel: Result<&'a Kernel<B>, Failure>,
        defaults: Option<(&'a KernelSource, &'a Config)>,
        table: Option<Table<'a, B>>,
        tally: Option<&'a Tally>,
    ) -> Self {
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
            args: Vec::with_capacity(8),
            bytes: Vec::with_capacity(32),
            error: None,
        }
    }

    fn kernel_name(&self) -> &str {
        match &self.kernel {
            Ok(k) => &k.name,
            Err(_) => "?",
        }
    }

    /// The global size: work-items in total per dimension (1 to 3). Without it, the size
    /// the kernel declares ([`KernelSource::global`]).
    pub fn global<const D: usize>(mut self, global: [usize; D]) -> Self {
        match to_dims(&global, "global", self.kernel_name()) {
            Ok(g) => {
                self.global = Some(g);
                self.dims = D;
            }
            Err(e) => self.error = self.error.or(Some(e)),
        }
        self
    }

    /// The local size (work-group; CUDA's block), as many dimensions as the global size.
    /// Without it, the size the kernel declares, else the driver's choice (OpenCL only).
    pub fn local<const D: usize>(mut self, local: [usize; D]) -> Self {
        match to_dims(&local, "local", self.kernel_name()) {
            Ok(l) => self.local = Some(l),
            Err(e) => self.error = self.error.or(Some(e)),
        }
        self
    }

    /// Rounds the global size up to a multiple of the local size (the kernel checks its
    /// bounds); otherwise a local size that does not divide the global size is invalid.
    pub fn round_up(mut self, yes: bool) -> Self {
        self.round_up = yes;
        self
    }

    /// The next argument: a buffer (a [`BufferId`] in a composition, a [`Buffer`] of a
    /// queue).
    pub fn arg(mut self, buffer: impl BufferArgument<'a, B>) -> Self {
        match buffer.resolve(self.table.as_ref()) {
            Ok(b) => self.args.push(Pending::Buffer(b)),
            Err(e) => self.error = self.error.or(Some(e)),
        }
        self
    }

    /// The next argument: a scalar (its type must match the kernel's parameter: `i32` for
    /// `int`, `u32` for `uint`, `f32` for `float`).
    pub fn scalar<T: Element>(mut self, value: T) -> Self {
        let start = self.bytes.len();
        value.extend_bytes(&mut self.bytes);
        self.args
            .push(Pending::Scalar(start, self.bytes.len() - start));
        self
    }

    /// The next argument: local (shared) memory for `len` elements of `T` (an OpenCL
    /// `__local T*` parameter; on CUDA it becomes dynamic shared memory and takes no
    /// parameter).
    pub fn local_mem<T: Element>(mut self, len: usize) -> Self {
        self.args
            .push(Pending::Local(len.saturating_mul(std::mem::size_of::<T>())));
        self
    }

    fn geometry(&self, kernel: &Kernel<B>) -> Result<LaunchDims, Failure> {
        let name = &*kernel.name;
        let (mut global, dims) = match (self.global, self.defaults) {
            (Some(g), _) => (g, self.dims),
            (None, Some((src, config))) if src.global.is_some() => {
                let v = src.global.as_ref().map(|f| f(config)).unwrap_or_default();
                (to_dims(&v, "global", name)?, v.len())
            }
            _ => {
                return Err(Failure::Invalid(format!(
                    "kernel `{name}` launched without a global size; call `.global([..])` on \
                     the launch, or declare one with `KernelSource::global`"
                )))
            }
        };
        let local = match (self.local, self.defaults) {
            (Some(l), _) => Some(l),
            (None, Some((src, config))) => match &src.local {
                Some(f) => Some(to_dims(&f(config), "local", name)?),
                None => None,
            },
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
            return Err(e.clone());
        }
        let kernel = self.kernel.as_ref().map_err(Clone::clone)?;
        let dims = self.geometry(kernel)?;
        let args: Vec<LaunchArg<'_, B>> = self
            .args
            .iter()
            .map(|a| match *a {
                Pending::Buffer(b) => LaunchArg::Buffer(b),
                Pending::Scalar(s, n) => LaunchArg::Scalar(&self.bytes[s..s + n]),
                Pending::Local(n) => LaunchArg::Local(n),
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
    pub fn run(self) -> Result<Duration, Failure> {
        let Some(tally) = self.tally else {
            return self.launch();
        };
        let t = Instant::now();
        let r = self.launch();
        tally.wall.set(tally.wall.get() + t.elapsed());
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
