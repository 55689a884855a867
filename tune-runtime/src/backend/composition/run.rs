//! [`Run`]: what a composition's host code gets: the configuration, its compiled kernels,
//! the buffers, and launches that add up the device time.

use std::fmt;
use std::time::Duration;

use smallvec::SmallVec;

use super::kernel::Kernel;
use super::launch::{unknown_buffer, Defaults, Launch, Stored, Table, Tally};
use super::queue::typed;
use super::{BufferId, Decl, KernelId, Role};
use crate::backend::{Backend, DeviceInfo, Element};
use crate::evaluate::Failure;
use crate::param::ParamType;
use crate::space::{Config, Space};

/// One run of a composition's host code with one configuration: read the configuration,
/// launch the composition's kernels (compiled for it), move data between the host and the
/// buffers, swap buffers between iterations.
///
/// Every launch's device time is added up (see [`Timing`](super::Timing)); a launch that
/// fails makes the run fail even if the host code ignores the error.
pub struct Run<'a, B: Backend> {
    pub(super) backend: &'a B,
    pub(super) space: &'a Space,
    pub(super) config: &'a Config,
    pub(super) kernels: &'a [Result<Kernel<B>, Failure>],
    /// Per kernel, its default launch sizes for this configuration.
    pub(super) defaults: &'a [Defaults],
    pub(super) decls: &'a [Decl],
    pub(super) stored: &'a mut [Stored<B>],
    /// Buffer ids to storage: the identity at the start of a run, permuted by swaps.
    pub(super) map: &'a mut [usize],
    pub(super) tally: Tally,
    /// An input was written or its id swapped: its storage may no longer hold its contents.
    pub(super) inputs_dirty: bool,
}

impl<B: Backend> fmt::Debug for Run<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Run")
            .field("config", &self.space.describe(self.config))
            .field("launches", &self.tally.launches.get())
            .field("device_time", &self.tally.device.get())
            .finish_non_exhaustive()
    }
}

fn wrong_type(id: BufferId, has: &str, wanted: &str) -> Failure {
    Failure::Other(format!(
        "buffer {} holds `{has}`, not `{wanted}`; read and write it with its own element type",
        id.0
    ))
}

impl<'a, B: Backend> Run<'a, B> {
    /// The configuration being run.
    pub fn config(&self) -> &Config {
        self.config
    }

    /// The search space.
    pub fn space(&self) -> &Space {
        self.space
    }

    /// The value of the tuning parameter `name`, e.g. `run.value::<usize>("WG")?`. In hot
    /// loops, read it once before the loop (it looks the name up).
    ///
    /// # Errors
    /// [`Failure::Other`] naming the declared parameters when `name` is not one of them.
    pub fn value<T: ParamType>(&self, name: &str) -> Result<T, Failure> {
        self.space
            .slot(name)
            .map(|s| self.config.get::<T>(s))
            .map_err(|e| Failure::Other(e.to_string()))
    }

    /// The device.
    pub fn device(&self) -> &DeviceInfo {
        self.backend.device()
    }

    /// A launch of kernel `k`, compiled for this configuration.
    #[inline(always)]
    pub fn launch(&self, k: KernelId) -> Launch<'_, B> {
        let table = Table {
            stored: &*self.stored,
            map: &*self.map,
        };
        let kernel = match self.kernels.get(k.0) {
            Some(Ok(kernel)) => Ok(kernel),
            Some(Err(f)) => Err(f.clone()),
            None => Err(Failure::Other(format!(
                "kernel {} is not a kernel of this composition (it declares {})",
                k.0,
                self.kernels.len()
            ))),
        };
        let defaults = self.defaults.get(k.0);
        Launch::new(
            self.backend,
            kernel,
            defaults,
            Some(table),
            Some(&self.tally),
        )
    }

    fn stored(&self, id: BufferId) -> Result<&Stored<B>, Failure> {
        Table {
            stored: &*self.stored,
            map: &*self.map,
        }
        .get(id)
    }

    /// The number of elements of buffer `id` (for a scratch buffer, what this
    /// configuration asked for).
    ///
    /// # Errors
    /// [`Failure::Other`] for an id of another composition.
    pub fn len(&self, id: BufferId) -> Result<usize, Failure> {
        self.stored(id).map(|s| s.len)
    }

    /// The first `n` elements of buffer `id` (at most its length).
    ///
    /// # Errors
    /// [`Failure::Other`] for a wrong element type; [`Failure::Launch`] when the copy fails.
    pub fn read_prefix<T: Element>(&self, id: BufferId, n: usize) -> Result<Vec<T>, Failure> {
        let s = self.stored(id)?;
        if s.type_name != T::C_NAME {
            return Err(wrong_type(id, s.type_name, T::C_NAME));
        }
        let mut bytes = vec![0u8; n.min(s.len) * s.elem];
        self.backend
            .read(&s.buf, &mut bytes)
            .map_err(|e| Failure::Launch(format!("reading buffer {}: {e}", id.0)))?;
        Ok(typed::<T>(&bytes))
    }

    /// The contents of buffer `id`.
    ///
    /// # Errors
    /// As [`Run::read_prefix`].
    pub fn read<T: Element>(&self, id: BufferId) -> Result<Vec<T>, Failure> {
        self.read_prefix(id, usize::MAX)
    }

    /// Copies `data` to the start of buffer `id`.
    ///
    /// # Errors
    /// [`Failure::Other`] for a wrong element type or data longer than the buffer;
    /// [`Failure::Launch`] when the copy fails.
    pub fn write<T: Element>(&mut self, id: BufferId, data: &[T]) -> Result<(), Failure> {
        let i = *self
            .map
            .get(id.0)
            .ok_or_else(|| unknown_buffer(id, self.map.len()))?;
        let s = self
            .stored
            .get_mut(i)
            .ok_or_else(|| unknown_buffer(id, self.map.len()))?;
        if s.type_name != T::C_NAME {
            return Err(wrong_type(id, s.type_name, T::C_NAME));
        }
        if data.len() > s.len {
            return Err(Failure::Other(format!(
                "writing {} elements into buffer {} of {}",
                data.len(),
                id.0,
                s.len
            )));
        }
        // Held inline when small (a counter reset before each run): no allocation.
        let mut bytes: SmallVec<[u8; 64]> = SmallVec::with_capacity(std::mem::size_of_val(data));
        for &v in data {
            let (b, n) = v.ne_bytes();
            bytes.extend_from_slice(&b[..n]);
        }
        if matches!(self.decls.get(id.0).map(|d| &d.role), Some(Role::Input)) {
            self.inputs_dirty = true;
        }
        self.backend
            .write(&mut s.buf, &bytes)
            .map_err(|e| Failure::Launch(format!("writing buffer {}: {e}", id.0)))
    }

    /// Swaps two buffers: from now on in this run, `a` names what `b` named and the other
    /// way round (KTT's swap of kernel arguments, for iterations that read the last one's
    /// output). Outputs are read, for validation, through the final names; every run starts
    /// with the names as declared.
    ///
    /// # Errors
    /// [`Failure::Other`] for an id of another composition.
    pub fn swap(&mut self, a: BufferId, b: BufferId) -> Result<(), Failure> {
        let n = self.map.len();
        if a.0 >= n {
            return Err(unknown_buffer(a, n));
        }
        if b.0 >= n {
            return Err(unknown_buffer(b, n));
        }
        self.map.swap(a.0, b.0);
        let input =
            |id: BufferId| matches!(self.decls.get(id.0).map(|d| &d.role), Some(Role::Input));
        if input(a) || input(b) {
            self.inputs_dirty = true;
        }
        Ok(())
    }

    /// Launches so far in this run.
    pub fn launches(&self) -> usize {
        self.tally.launches.get()
    }

    /// Device time of the launches so far in this run.
    pub fn device_time(&self) -> Duration {
        self.tally.device.get()
    }
}
