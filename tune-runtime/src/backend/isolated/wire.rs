//! The messages between [`Isolated`](super::Isolated) and its worker process: plain serde
//! enums, encoded with `postcard` and framed by a length prefix.
//!
//! A frame is a little-endian `u64` length, then that many bytes: the postcard encoding of
//! `(id, message)`, where `id` is the request id that the reply echoes (0 for messages nobody
//! waits for). postcard because it is small and stable (a documented wire format at 1.0, no
//! unsafe code, maintained), and it serialises straight into an [`io::Write`], so buffer
//! contents go from the caller's slice to the socket without an intermediate copy. (bincode,
//! the other candidate, is no longer developed.) Parent and worker are always the same build,
//! so the protocol needs no versioning.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Read, Write};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::backend::{DeviceInfo, KernelLimits, LaunchDims};
use crate::evaluate::Failure;
use crate::Error;

/// The largest frame accepted (bytes); a longer length prefix is corrupt data.
pub(super) const MAX_FRAME: u64 = 1 << 40;

/// A message that could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct WireError(pub(super) String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Bytes that are borrowed when sent and owned when received, encoded as one byte string
/// (not as a sequence of numbers, which would cost a call per byte).
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Bytes<'a>(pub(super) Cow<'a, [u8]>);

impl fmt::Debug for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes", self.0.len())
    }
}

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let b = serde_bytes::ByteBuf::deserialize(d)?;
        Ok(Bytes(Cow::Owned(b.into_vec())))
    }
}

/// The backend the worker opens (the public [`Target`](super::Target) without its feature
/// gates, so that every build speaks the same protocol).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum TargetSpec {
    /// `OpenCl::select(query)`.
    OpenCl(String),
    /// `Cuda::open(index or name)`.
    Cuda(String),
    /// The fake backend of the unit tests.
    #[cfg(test)]
    Fake(String),
}

impl TargetSpec {
    /// The backend's name, for errors.
    pub(super) fn backend(&self) -> &'static str {
        match self {
            TargetSpec::OpenCl(_) => "opencl",
            TargetSpec::Cuda(_) => "cuda",
            #[cfg(test)]
            TargetSpec::Fake(_) => "fake",
        }
    }
}

/// A kernel argument at launch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Arg<'a> {
    /// A buffer handle.
    Buffer(u64),
    /// A scalar's bytes.
    Scalar(Bytes<'a>),
    /// Local memory, bytes.
    Local(u64),
}

/// What [`Request::Free`] releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Handle {
    /// A kernel handle.
    Kernel(u64),
    /// A buffer handle.
    Buffer(u64),
}

/// A message from the parent to the worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) enum Request<'a> {
    /// Open the device (the first request): [`Reply::Opened`] or [`Reply::Error`].
    Open(TargetSpec),
    /// Compile a kernel under the parent's handle: [`Reply::Compiled`] or [`Reply::Failed`].
    Compile {
        kernel: u64,
        source: Cow<'a, str>,
        name: Cow<'a, str>,
        defines: Cow<'a, [(String, String)]>,
        options: Cow<'a, [String]>,
    },
    /// Allocate a buffer under the parent's handle (zero-filled when `zeroed`): [`Reply::Done`]
    /// or [`Reply::Error`].
    Alloc {
        buffer: u64,
        bytes: u64,
        zeroed: bool,
    },
    /// Write contents with this hash; without `data`, the worker uses its copy or answers
    /// [`Reply::Missing`].
    Write {
        buffer: u64,
        hash: u64,
        data: Option<Bytes<'a>>,
    },
    /// Read the first `len` bytes: [`Reply::Data`] or [`Reply::Error`].
    Read { buffer: u64, len: u64 },
    /// Launch `count` times back to back: [`Reply::Time`] or [`Reply::Failed`].
    Launch {
        kernel: u64,
        dims: LaunchDims,
        args: Vec<Arg<'a>>,
        count: u64,
    },
    /// Release a handle; no reply.
    Free(Handle),
    /// Build a program from source and send back its binary (a builder process of
    /// `BuildFarm`): [`Reply::Binary`] or [`Reply::Failed`].
    Build {
        source: Cow<'a, str>,
        options: Cow<'a, str>,
    },
}

/// An error of a `Result<_, Error>` call, as far as it crosses the process boundary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum WireErr {
    /// [`Error::BackendUnavailable`].
    Unavailable { backend: String, reason: String },
    /// [`Error::DeviceNotFound`].
    NotFound {
        backend: String,
        query: String,
        available: String,
    },
    /// [`Error::Backend`], and any other error as its message (a CUDA driver error too:
    /// its code cannot be rebuilt from a number).
    Backend { backend: String, message: String },
    /// `Error::OpenCl`: the code crosses, so the parent can match on it.
    OpenCl { context: String, code: i32 },
}

impl From<&Error> for WireErr {
    fn from(e: &Error) -> Self {
        match e {
            Error::BackendUnavailable { backend, reason } => WireErr::Unavailable {
                backend: backend.clone(),
                reason: reason.clone(),
            },
            Error::DeviceNotFound {
                backend,
                query,
                available,
            } => WireErr::NotFound {
                backend: backend.clone(),
                query: query.clone(),
                available: available.clone(),
            },
            Error::Backend { backend, message } => WireErr::Backend {
                backend: backend.clone(),
                message: message.clone(),
            },
            #[cfg(feature = "opencl")]
            Error::OpenCl { context, source } => WireErr::OpenCl {
                context: context.clone(),
                code: source.0,
            },
            #[cfg(feature = "cuda")]
            e @ Error::Cuda { .. } => WireErr::Backend {
                backend: "cuda".into(),
                message: e.to_string().trim_start_matches("cuda: ").into(),
            },
            other => WireErr::Backend {
                backend: "worker".into(),
                message: other.to_string(),
            },
        }
    }
}

impl From<WireErr> for Error {
    fn from(e: WireErr) -> Self {
        match e {
            WireErr::Unavailable { backend, reason } => {
                Error::BackendUnavailable { backend, reason }
            }
            WireErr::NotFound {
                backend,
                query,
                available,
            } => Error::DeviceNotFound {
                backend,
                query,
                available,
            },
            WireErr::Backend { backend, message } => Error::Backend { backend, message },
            #[cfg(feature = "opencl")]
            WireErr::OpenCl { context, code } => Error::OpenCl {
                context,
                source: opencl3::error_codes::ClError(code),
            },
            // A worker of a build with OpenCL, answering a parent without it.
            #[cfg(not(feature = "opencl"))]
            WireErr::OpenCl { context, code } => Error::Backend {
                backend: "opencl".into(),
                message: format!("{context}: OpenCL error {code}"),
            },
        }
    }
}

/// A message from the worker to the parent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) enum Reply {
    /// The device is open.
    Opened(DeviceInfo),
    /// The kernel compiled; its limits.
    Compiled(KernelLimits),
    /// An allocation or write succeeded.
    Done,
    /// A write without data named contents the worker does not have (any more).
    Missing,
    /// The bytes read.
    Data(#[serde(with = "serde_bytes")] Vec<u8>),
    /// A built program's binary.
    Binary(#[serde(with = "serde_bytes")] Vec<u8>),
    /// A launch's device time.
    Time(Duration),
    /// A compile or launch failed.
    Failed(#[serde(with = "failure")] Failure),
    /// An open, allocation, write or read failed.
    Error(WireErr),
    /// Sent (with id 0) just before the reply to a request after which the backend is no
    /// longer usable; the worker exits after that reply.
    Unhealthy(String),
}

impl Reply {
    /// The reply's name, for "unexpected reply" errors (never its data).
    pub(super) fn name(&self) -> &'static str {
        match self {
            Reply::Opened(_) => "opened",
            Reply::Compiled(_) => "compiled",
            Reply::Done => "done",
            Reply::Missing => "missing",
            Reply::Data(_) => "data",
            Reply::Binary(_) => "binary",
            Reply::Time(_) => "time",
            Reply::Failed(_) => "failed",
            Reply::Error(_) => "error",
            Reply::Unhealthy(_) => "unhealthy",
        }
    }
}

/// [`Failure`] on the wire: its own serde form (adjacently tagged, for the JSON logs) needs
/// a self-describing format, which postcard is not.
mod failure {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::evaluate::{Cause, Failure};

    #[derive(Serialize, Deserialize)]
    enum Repr {
        Invalid(String),
        Compile(String),
        Launch(String),
        WrongResult(String),
        Timeout(Duration),
        Other(String),
        InvalidCost(String),
        Rejected(String, String),
    }

    pub(super) fn serialize<S: Serializer>(f: &Failure, s: S) -> Result<S::Ok, S::Error> {
        match f.clone() {
            Failure::Invalid(m) => Repr::Invalid(m),
            Failure::Compile(m) => Repr::Compile(m),
            Failure::Launch(m) => Repr::Launch(m),
            Failure::WrongResult(m) => Repr::WrongResult(m),
            Failure::Timeout(d) => Repr::Timeout(d),
            Failure::Other(m) => Repr::Other(m),
            Failure::InvalidCost(m) => Repr::InvalidCost(m),
            Failure::Rejected { cause, detail } => Repr::Rejected(cause.name().into(), detail),
        }
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Failure, D::Error> {
        Ok(match Repr::deserialize(d)? {
            Repr::Invalid(m) => Failure::Invalid(m),
            Repr::Compile(m) => Failure::Compile(m),
            Repr::Launch(m) => Failure::Launch(m),
            Repr::WrongResult(m) => Failure::WrongResult(m),
            Repr::Timeout(d) => Failure::Timeout(d),
            Repr::Other(m) => Failure::Other(m),
            Repr::InvalidCost(m) => Failure::InvalidCost(m),
            Repr::Rejected(c, detail) => Failure::Rejected {
                cause: Cause::from_name(&c),
                detail,
            },
        })
    }
}

/// An [`io::Write`] that keeps the first error it meets: postcard reports a failed write
/// only as "buffer full", and the cause (a closed socket, a timeout) is what a user needs.
struct KeepError<'w, W> {
    inner: &'w mut W,
    error: Option<io::Error>,
}

impl<W: Write> Write for KeepError<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.keep(e))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| self.keep(e))
    }
}

impl<W> KeepError<'_, W> {
    fn keep(&mut self, e: io::Error) -> io::Error {
        let copy = io::Error::new(e.kind(), e.to_string());
        self.error.get_or_insert(e);
        copy
    }
}

/// Writes `message` as frame `id` to `w` and flushes it.
///
/// # Errors
/// The writer's error, or a message that cannot be encoded (never for these types).
pub(super) fn write_frame<W: Write, T: Serialize>(
    w: &mut W,
    id: u64,
    message: &T,
) -> io::Result<()> {
    let body = (id, message);
    let len = postcard::serialize_with_flavor(&body, postcard::ser_flavors::Size::default())
        .map_err(io::Error::other)?;
    w.write_all(&(len as u64).to_le_bytes())?;
    let mut sink = KeepError {
        inner: w,
        error: None,
    };
    match postcard::to_io(&body, &mut sink) {
        Ok(_) => Ok(()),
        Err(e) => Err(sink.error.take().unwrap_or_else(|| io::Error::other(e))),
    }
}

/// Reads one frame (without its length prefix). `None` at a clean end of stream.
///
/// # Errors
/// An I/O error, a stream that ends inside a frame, or a length over [`MAX_FRAME`].
pub(super) fn read_frame(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 8];
    let mut got = 0;
    while got < len.len() {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u64::from_le_bytes(len);
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes is over the limit of {MAX_FRAME}"),
        ));
    }
    let n = usize::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    let mut buf = Vec::new();
    buf.try_reserve_exact(n)
        .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e.to_string()))?;
    r.take(len).read_to_end(&mut buf)?;
    if buf.len() != n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Some(buf))
}

/// A frame (without its length prefix): its id and the message, which must use every byte.
///
/// # Errors
/// A truncated or malformed frame, trailing bytes.
pub(super) fn decode<T: DeserializeOwned>(frame: &[u8]) -> Result<(u64, T), WireError> {
    let (message, rest) = postcard::take_from_bytes::<(u64, T)>(frame)
        .map_err(|e| WireError(format!("a malformed message: {e}")))?;
    if !rest.is_empty() {
        return Err(WireError(format!(
            "{} unexpected bytes after the message",
            rest.len()
        )));
    }
    Ok(message)
}

/// A 64-bit hash of buffer contents (XXH3, which runs at memory speed on inputs of hundreds
/// of megabytes). The worker keys its copies of written contents by it.
pub(super) fn content_hash(data: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(data)
}
