//! [`Queue`]: a device handle for host code written by hand, e.g. a `#[tunable]` function
//! that launches kernels: typed buffers, kernels compiled once per source and defines, and
//! launches timed on the device.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use super::kernel::{Kernel, KernelSource, ProgramCache};
use super::launch::Launch;
use crate::backend::{Backend, DeviceInfo, Element, HostData};
use crate::evaluate::Failure;
use crate::{Error, Result};

/// A typed device buffer of a [`Queue`].
pub struct Buffer<B: Backend, T: Element> {
    pub(super) buf: B::Buffer,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<B: Backend, T: Element> fmt::Debug for Buffer<B, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer<{}>({})", T::C_NAME, self.len)
    }
}

impl<B: Backend, T: Element> Buffer<B, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A device handle for host code that launches kernels: the host function of a
/// `#[tunable]` takes one (`q: &Queue<OpenCl>`) and its `#[tp]` parameters.
///
/// [`Queue::kernel`] compiles a [`KernelSource`] once per source, defines and options and
/// keeps it (so the first call of a configuration compiles and later calls do not);
/// [`Queue::launch`] launches it and returns the device time.
///
/// ```no_run
/// # #[cfg(feature = "opencl")]
/// # fn main() -> tune_runtime::Result<()> {
/// use tune_runtime::backend::composition::{KernelSource, Queue};
/// use tune_runtime::backend::opencl::OpenCl;
///
/// const SRC: &str = "__kernel void twice(__global float* x) {
///     x[get_global_id(0)] *= 2.0f; }";
/// let q = Queue::new(OpenCl::first()?);
/// let mut x = q.buffer(&[1.0f32; 1024])?;
/// let k = q.kernel(&KernelSource::new(SRC, "twice").define("LS", 64))?;
/// let t = q.launch(&k).global([1024]).local([64]).arg(&x).run()?;
/// assert_eq!(q.read(&x)?[0], 2.0);
/// q.write(&mut x, &[0.0; 1024])?;
/// # let _ = t;
/// # Ok(()) }
/// # #[cfg(not(feature = "opencl"))]
/// # fn main() {}
/// ```
pub struct Queue<B: Backend> {
    backend: Arc<B>,
    cache: ProgramCache<B>,
}

impl<B: Backend> fmt::Debug for Queue<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue")
            .field("device", &self.backend.device().describe())
            .finish_non_exhaustive()
    }
}

fn backend_err(dev: &DeviceInfo, message: impl fmt::Display) -> Error {
    Error::Backend {
        backend: dev.backend.clone(),
        message: message.to_string(),
    }
}

impl<B: Backend> Queue<B> {
    /// A queue on `backend` (or an `Arc` of one, to share the device).
    pub fn new(backend: impl Into<Arc<B>>) -> Self {
        Queue {
            backend: backend.into(),
            cache: ProgramCache::new(1024),
        }
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The backend, shared.
    pub fn backend_arc(&self) -> &Arc<B> {
        &self.backend
    }

    /// The device's description, as the results database records it
    /// (`#[tunable(device = q.name())]`).
    pub fn name(&self) -> String {
        self.backend.device().describe()
    }

    /// The kernel compiled from `source`: from the queue's cache, or compiled now.
    ///
    /// # Errors
    /// [`Failure::Compile`] with the build log.
    pub fn kernel(&self, source: &KernelSource) -> Result<Kernel<B>, Failure> {
        self.cache
            .get(&self.backend, source, Vec::new())
            .map(|(k, _)| k)
    }

    /// A launch of `kernel` (see [`Launch`]).
    pub fn launch<'a>(&'a self, kernel: &'a Kernel<B>) -> Launch<'a, B> {
        Launch::new(&*self.backend, Ok(kernel), None, None, None)
    }

    /// A buffer holding `data`.
    ///
    /// # Errors
    /// [`Error::Backend`] when the device cannot allocate or copy.
    pub fn buffer<T: Element>(&self, data: &[T]) -> Result<Buffer<B, T>> {
        let mut b = self.alloc::<T>(data.len())?;
        self.write(&mut b, data)?;
        Ok(b)
    }

    /// A buffer of `len` zeros.
    ///
    /// # Errors
    /// As [`Queue::buffer`].
    pub fn zeros<T: Element>(&self, len: usize) -> Result<Buffer<B, T>> {
        self.buffer(&vec![T::from_f64(0.0); len])
    }

    fn alloc<T: Element>(&self, len: usize) -> Result<Buffer<B, T>> {
        let bytes = len.saturating_mul(std::mem::size_of::<T>()).max(1);
        Ok(Buffer {
            buf: self.backend.alloc(bytes)?,
            len,
            _t: PhantomData,
        })
    }

    /// Copies `data` to the start of `buffer`.
    ///
    /// # Errors
    /// [`Error::Backend`] when `data` is longer than the buffer or the copy fails.
    pub fn write<T: Element>(&self, buffer: &mut Buffer<B, T>, data: &[T]) -> Result<()> {
        if data.len() > buffer.len {
            return Err(backend_err(
                self.backend.device(),
                format!(
                    "writing {} elements into a buffer of {}",
                    data.len(),
                    buffer.len
                ),
            ));
        }
        let mut bytes = Vec::with_capacity(std::mem::size_of_val(data));
        for &v in data {
            v.extend_bytes(&mut bytes);
        }
        self.backend.write(&mut buffer.buf, &bytes)
    }

    /// The contents of `buffer`.
    ///
    /// # Errors
    /// [`Error::Backend`] when the copy fails.
    pub fn read<T: Element>(&self, buffer: &Buffer<B, T>) -> Result<Vec<T>> {
        let mut bytes = vec![0u8; buffer.len * std::mem::size_of::<T>()];
        self.backend.read(&buffer.buf, &mut bytes)?;
        Ok(typed::<T>(&bytes))
    }
}

/// Elements of `T` from bytes in native order.
pub(super) fn typed<T: Element>(bytes: &[u8]) -> Vec<T> {
    let like = T::wrap(Vec::new());
    let data: HostData = like.from_bytes_like(bytes);
    T::slice(&data).map(<[T]>::to_vec).unwrap_or_default()
}
