//! The messages between [`Isolated`](super::Isolated) and its worker process, and their
//! encoding, written by hand (no serialisation dependency).
//!
//! A frame is a `u64` length, then that many bytes: the request id (`u64`, echoed by the
//! reply; 0 for messages nobody waits for), a one-byte tag and the message's fields. Integers
//! are little-endian `u64` (sizes too), booleans one byte (0 or 1), options a presence byte
//! before the value, byte strings and UTF-8 strings a `u64` length before their bytes. A
//! large byte string (buffer contents) is always the last field, so it is written straight
//! from the caller's slice after the rest of the frame instead of being copied into it.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Read};
use std::time::Duration;

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

/// The backend the worker opens (the public [`Target`](super::Target) without its feature
/// gates, so that every build speaks the same protocol).
#[derive(Clone, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Arg<'a> {
    /// A buffer handle.
    Buffer(u64),
    /// A scalar's bytes.
    Scalar(Cow<'a, [u8]>),
    /// Local memory, bytes.
    Local(u64),
}

/// What [`Request::Free`] releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Handle {
    /// A kernel handle.
    Kernel(u64),
    /// A buffer handle.
    Buffer(u64),
}

/// A message from the parent to the worker.
#[derive(Clone, Debug, PartialEq)]
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
        data: Option<Cow<'a, [u8]>>,
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
}

/// An error of a `Result<_, Error>` call, as far as it crosses the process boundary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum WireErr {
    /// [`Error::BackendUnavailable`].
    Unavailable { backend: String, reason: String },
    /// [`Error::DeviceNotFound`].
    NotFound {
        backend: String,
        query: String,
        available: String,
    },
    /// [`Error::Backend`], and any other error as its message.
    Backend { backend: String, message: String },
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
        }
    }
}

/// A message from the worker to the parent.
#[derive(Clone, Debug, PartialEq)]
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
    Data(Vec<u8>),
    /// A launch's device time.
    Time(Duration),
    /// A compile or launch failed.
    Failed(Failure),
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
            Reply::Time(_) => "time",
            Reply::Failed(_) => "failed",
            Reply::Error(_) => "error",
            Reply::Unhealthy(_) => "unhealthy",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Primitives
// ---------------------------------------------------------------------------------------------

struct Enc(Vec<u8>);

impl Enc {
    /// A frame for request `id` with `tag`; the length is filled in by [`Enc::finish`].
    fn new(id: u64, tag: u8) -> Self {
        let mut e = Enc(Vec::with_capacity(64));
        e.u64(0);
        e.u64(id);
        e.u8(tag);
        e
    }
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn usize(&mut self, v: usize) {
        self.u64(v as u64);
    }
    fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }
    fn bytes(&mut self, v: &[u8]) {
        self.usize(v.len());
        self.0.extend_from_slice(v);
    }
    fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
    fn opt_usize(&mut self, v: Option<usize>) {
        match v {
            Some(x) => {
                self.u8(1);
                self.usize(x);
            }
            None => self.u8(0),
        }
    }
    fn duration(&mut self, d: Duration) {
        self.u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }
    /// The frame's head, whose length prefix counts `tail`, which follows it on the wire.
    fn finish(mut self, tail: &[u8]) -> Vec<u8> {
        let len = (self.0.len() - 8 + tail.len()) as u64;
        self.0[..8].copy_from_slice(&len.to_le_bytes());
        self.0
    }
}

struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                WireError(format!(
                    "truncated message: {n} bytes wanted at offset {} of {}",
                    self.pos,
                    self.buf.len()
                ))
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn usize(&mut self) -> Result<usize, WireError> {
        let v = self.u64()?;
        usize::try_from(v).map_err(|_| WireError(format!("{v} does not fit usize")))
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| WireError(format!("{v} does not fit u32")))
    }
    fn bool(&mut self) -> Result<bool, WireError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(WireError(format!("invalid boolean {b}"))),
        }
    }
    fn present(&mut self) -> Result<bool, WireError> {
        self.bool()
    }
    fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.usize()?;
        self.take(n)
    }
    fn string(&mut self) -> Result<String, WireError> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|e| WireError(format!("invalid UTF-8: {e}")))
    }
    fn opt_usize(&mut self) -> Result<Option<usize>, WireError> {
        Ok(if self.present()? {
            Some(self.usize()?)
        } else {
            None
        })
    }
    fn duration(&mut self) -> Result<Duration, WireError> {
        Ok(Duration::from_nanos(self.u64()?))
    }
    /// A count of items that each take at least `min_bytes`, checked against what is left
    /// (so a corrupt count cannot reserve huge vectors).
    fn count(&mut self, min_bytes: usize) -> Result<usize, WireError> {
        let n = self.usize()?;
        if n.saturating_mul(min_bytes.max(1)) > self.buf.len() - self.pos {
            return Err(WireError(format!(
                "a list of {n} items does not fit the message"
            )));
        }
        Ok(n)
    }
    fn end(&self) -> Result<(), WireError> {
        if self.pos == self.buf.len() {
            Ok(())
        } else {
            Err(WireError(format!(
                "{} unexpected bytes after the message",
                self.buf.len() - self.pos
            )))
        }
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

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

mod tag {
    pub const OPEN: u8 = 1;
    pub const COMPILE: u8 = 2;
    pub const ALLOC: u8 = 3;
    pub const WRITE: u8 = 4;
    pub const READ: u8 = 5;
    pub const LAUNCH: u8 = 6;
    pub const FREE: u8 = 7;

    pub const OPENED: u8 = 1;
    pub const COMPILED: u8 = 2;
    pub const DONE: u8 = 3;
    pub const MISSING: u8 = 4;
    pub const DATA: u8 = 5;
    pub const TIME: u8 = 6;
    pub const FAILED: u8 = 7;
    pub const ERROR: u8 = 8;
    pub const UNHEALTHY: u8 = 9;
}

/// Request `id` as a frame: the head (length prefix included) and the tail (buffer contents,
/// possibly empty) that follows it.
pub(super) fn encode_request<'r>(id: u64, req: &'r Request<'_>) -> (Vec<u8>, &'r [u8]) {
    let mut tail: &[u8] = &[];
    let e = match req {
        Request::Open(t) => {
            let mut e = Enc::new(id, tag::OPEN);
            let (kind, s) = match t {
                TargetSpec::OpenCl(s) => (0, s),
                TargetSpec::Cuda(s) => (1, s),
                #[cfg(test)]
                TargetSpec::Fake(s) => (200, s),
            };
            e.u8(kind);
            e.str(s);
            e
        }
        Request::Compile {
            kernel,
            source,
            name,
            defines,
            options,
        } => {
            let mut e = Enc::new(id, tag::COMPILE);
            e.u64(*kernel);
            e.str(source);
            e.str(name);
            e.usize(defines.len());
            for (k, v) in defines.iter() {
                e.str(k);
                e.str(v);
            }
            e.usize(options.len());
            for o in options.iter() {
                e.str(o);
            }
            e
        }
        Request::Alloc {
            buffer,
            bytes,
            zeroed,
        } => {
            let mut e = Enc::new(id, tag::ALLOC);
            e.u64(*buffer);
            e.u64(*bytes);
            e.bool(*zeroed);
            e
        }
        Request::Write { buffer, hash, data } => {
            let mut e = Enc::new(id, tag::WRITE);
            e.u64(*buffer);
            e.u64(*hash);
            match data {
                Some(d) => {
                    e.u8(1);
                    e.usize(d.len());
                    tail = d;
                }
                None => e.u8(0),
            }
            e
        }
        Request::Read { buffer, len } => {
            let mut e = Enc::new(id, tag::READ);
            e.u64(*buffer);
            e.u64(*len);
            e
        }
        Request::Launch {
            kernel,
            dims,
            args,
            count,
        } => {
            let mut e = Enc::new(id, tag::LAUNCH);
            e.u64(*kernel);
            e.usize(dims.dims);
            for g in dims.global {
                e.usize(g);
            }
            match dims.local {
                Some(l) => {
                    e.u8(1);
                    for x in l {
                        e.usize(x);
                    }
                }
                None => e.u8(0),
            }
            e.usize(dims.dynamic_local_bytes);
            e.usize(args.len());
            for a in args {
                match a {
                    Arg::Buffer(h) => {
                        e.u8(0);
                        e.u64(*h);
                    }
                    Arg::Scalar(b) => {
                        e.u8(1);
                        e.bytes(b);
                    }
                    Arg::Local(n) => {
                        e.u8(2);
                        e.u64(*n);
                    }
                }
            }
            e.u64(*count);
            e
        }
        Request::Free(h) => {
            let mut e = Enc::new(id, tag::FREE);
            match h {
                Handle::Kernel(k) => {
                    e.u8(0);
                    e.u64(*k);
                }
                Handle::Buffer(b) => {
                    e.u8(1);
                    e.u64(*b);
                }
            }
            e
        }
    };
    (e.finish(tail), tail)
}

/// A request frame (without its length prefix): its id and the request.
///
/// # Errors
/// A truncated or malformed frame, an unknown tag.
pub(super) fn decode_request(frame: &[u8]) -> Result<(u64, Request<'static>), WireError> {
    let mut d = Dec { buf: frame, pos: 0 };
    let id = d.u64()?;
    let req = match d.u8()? {
        tag::OPEN => {
            let kind = d.u8()?;
            let s = d.string()?;
            Request::Open(match kind {
                0 => TargetSpec::OpenCl(s),
                1 => TargetSpec::Cuda(s),
                #[cfg(test)]
                200 => TargetSpec::Fake(s),
                k => return Err(WireError(format!("unknown target kind {k}"))),
            })
        }
        tag::COMPILE => {
            let kernel = d.u64()?;
            let source = d.string()?;
            let name = d.string()?;
            let n = d.count(16)?;
            let mut defines = Vec::with_capacity(n);
            for _ in 0..n {
                defines.push((d.string()?, d.string()?));
            }
            let n = d.count(8)?;
            let mut options = Vec::with_capacity(n);
            for _ in 0..n {
                options.push(d.string()?);
            }
            Request::Compile {
                kernel,
                source: Cow::Owned(source),
                name: Cow::Owned(name),
                defines: Cow::Owned(defines),
                options: Cow::Owned(options),
            }
        }
        tag::ALLOC => Request::Alloc {
            buffer: d.u64()?,
            bytes: d.u64()?,
            zeroed: d.bool()?,
        },
        tag::WRITE => {
            let buffer = d.u64()?;
            let hash = d.u64()?;
            let data = if d.present()? {
                Some(Cow::Owned(d.bytes()?.to_vec()))
            } else {
                None
            };
            Request::Write { buffer, hash, data }
        }
        tag::READ => Request::Read {
            buffer: d.u64()?,
            len: d.u64()?,
        },
        tag::LAUNCH => {
            let kernel = d.u64()?;
            let n = d.usize()?;
            let global = [d.usize()?, d.usize()?, d.usize()?];
            let local = if d.present()? {
                Some([d.usize()?, d.usize()?, d.usize()?])
            } else {
                None
            };
            let dynamic_local_bytes = d.usize()?;
            let count = d.count(9)?;
            let mut args = Vec::with_capacity(count);
            for _ in 0..count {
                args.push(match d.u8()? {
                    0 => Arg::Buffer(d.u64()?),
                    1 => Arg::Scalar(Cow::Owned(d.bytes()?.to_vec())),
                    2 => Arg::Local(d.u64()?),
                    t => return Err(WireError(format!("unknown argument kind {t}"))),
                });
            }
            Request::Launch {
                kernel,
                dims: LaunchDims {
                    dims: n,
                    global,
                    local,
                    dynamic_local_bytes,
                },
                args,
                count: d.u64()?,
            }
        }
        tag::FREE => Request::Free(match d.u8()? {
            0 => Handle::Kernel(d.u64()?),
            1 => Handle::Buffer(d.u64()?),
            t => return Err(WireError(format!("unknown handle kind {t}"))),
        }),
        t => return Err(WireError(format!("unknown request tag {t}"))),
    };
    d.end()?;
    Ok((id, req))
}

fn enc_failure(e: &mut Enc, f: &Failure) {
    let (kind, msg) = match f {
        Failure::Invalid(m) => (0, m),
        Failure::Compile(m) => (1, m),
        Failure::Launch(m) => (2, m),
        Failure::WrongResult(m) => (3, m),
        Failure::Timeout(d) => {
            e.u8(4);
            e.duration(*d);
            return;
        }
        Failure::Other(m) => (5, m),
        Failure::InvalidCost(m) => (6, m),
    };
    e.u8(kind);
    e.str(msg);
}

fn dec_failure(d: &mut Dec<'_>) -> Result<Failure, WireError> {
    Ok(match d.u8()? {
        0 => Failure::Invalid(d.string()?),
        1 => Failure::Compile(d.string()?),
        2 => Failure::Launch(d.string()?),
        3 => Failure::WrongResult(d.string()?),
        4 => Failure::Timeout(d.duration()?),
        5 => Failure::Other(d.string()?),
        6 => Failure::InvalidCost(d.string()?),
        k => return Err(WireError(format!("unknown failure kind {k}"))),
    })
}

/// Reply `id` as a frame: the head (length prefix included) and the tail (read data,
/// possibly empty) that follows it.
pub(super) fn encode_reply(id: u64, reply: &Reply) -> (Vec<u8>, &[u8]) {
    let mut tail: &[u8] = &[];
    let e = match reply {
        Reply::Opened(i) => {
            let mut e = Enc::new(id, tag::OPENED);
            for s in [
                &i.backend,
                &i.platform,
                &i.name,
                &i.vendor,
                &i.driver_version,
            ] {
                e.str(s);
            }
            e.usize(i.max_work_group_size);
            for s in i.max_work_item_sizes {
                e.usize(s);
            }
            e.usize(i.local_mem_bytes);
            e.u64(i.global_mem_bytes);
            e.u64(u64::from(i.compute_units));
            e
        }
        Reply::Compiled(l) => {
            let mut e = Enc::new(id, tag::COMPILED);
            e.opt_usize(l.max_work_group_size);
            e.opt_usize(l.local_mem_bytes);
            e.opt_usize(l.registers);
            e
        }
        Reply::Done => Enc::new(id, tag::DONE),
        Reply::Missing => Enc::new(id, tag::MISSING),
        Reply::Data(v) => {
            let mut e = Enc::new(id, tag::DATA);
            e.usize(v.len());
            tail = v;
            e
        }
        Reply::Time(t) => {
            let mut e = Enc::new(id, tag::TIME);
            e.duration(*t);
            e
        }
        Reply::Failed(f) => {
            let mut e = Enc::new(id, tag::FAILED);
            enc_failure(&mut e, f);
            e
        }
        Reply::Error(w) => {
            let mut e = Enc::new(id, tag::ERROR);
            match w {
                WireErr::Unavailable { backend, reason } => {
                    e.u8(0);
                    e.str(backend);
                    e.str(reason);
                }
                WireErr::NotFound {
                    backend,
                    query,
                    available,
                } => {
                    e.u8(1);
                    e.str(backend);
                    e.str(query);
                    e.str(available);
                }
                WireErr::Backend { backend, message } => {
                    e.u8(2);
                    e.str(backend);
                    e.str(message);
                }
            }
            e
        }
        Reply::Unhealthy(m) => {
            let mut e = Enc::new(id, tag::UNHEALTHY);
            e.str(m);
            e
        }
    };
    (e.finish(tail), tail)
}

/// A reply frame (without its length prefix): its id and the reply.
///
/// # Errors
/// A truncated or malformed frame, an unknown tag.
pub(super) fn decode_reply(frame: &[u8]) -> Result<(u64, Reply), WireError> {
    let mut d = Dec { buf: frame, pos: 0 };
    let id = d.u64()?;
    let reply = match d.u8()? {
        tag::OPENED => Reply::Opened(DeviceInfo {
            backend: d.string()?,
            platform: d.string()?,
            name: d.string()?,
            vendor: d.string()?,
            driver_version: d.string()?,
            max_work_group_size: d.usize()?,
            max_work_item_sizes: [d.usize()?, d.usize()?, d.usize()?],
            local_mem_bytes: d.usize()?,
            global_mem_bytes: d.u64()?,
            compute_units: d.u32()?,
        }),
        tag::COMPILED => Reply::Compiled(KernelLimits {
            max_work_group_size: d.opt_usize()?,
            local_mem_bytes: d.opt_usize()?,
            registers: d.opt_usize()?,
        }),
        tag::DONE => Reply::Done,
        tag::MISSING => Reply::Missing,
        tag::DATA => Reply::Data(d.bytes()?.to_vec()),
        tag::TIME => Reply::Time(d.duration()?),
        tag::FAILED => Reply::Failed(dec_failure(&mut d)?),
        tag::ERROR => Reply::Error(match d.u8()? {
            0 => WireErr::Unavailable {
                backend: d.string()?,
                reason: d.string()?,
            },
            1 => WireErr::NotFound {
                backend: d.string()?,
                query: d.string()?,
                available: d.string()?,
            },
            2 => WireErr::Backend {
                backend: d.string()?,
                message: d.string()?,
            },
            k => return Err(WireError(format!("unknown error kind {k}"))),
        }),
        tag::UNHEALTHY => Reply::Unhealthy(d.string()?),
        t => return Err(WireError(format!("unknown reply tag {t}"))),
    };
    d.end()?;
    Ok((id, reply))
}

// ---------------------------------------------------------------------------------------------
// Content hashes
// ---------------------------------------------------------------------------------------------

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

fn round(acc: u64, input: u64) -> u64 {
    acc.wrapping_add(input.wrapping_mul(P2))
        .rotate_left(31)
        .wrapping_mul(P1)
}

fn word(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// A 64-bit hash of buffer contents and their length (the xxHash64 construction: four
/// independent lanes, so it runs at memory speed on inputs of hundreds of megabytes). The
/// worker keys its copies of written contents by it.
pub(super) fn content_hash(data: &[u8]) -> u64 {
    let mut stripes = data.chunks_exact(32);
    let mut h = if data.len() >= 32 {
        let mut v = [P1.wrapping_add(P2), P2, 0, 0u64.wrapping_sub(P1)];
        for s in &mut stripes {
            for (i, lane) in v.iter_mut().enumerate() {
                *lane = round(*lane, word(&s[8 * i..]));
            }
        }
        let mut h = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        for lane in v {
            h = (h ^ round(0, lane)).wrapping_mul(P1).wrapping_add(P4);
        }
        h
    } else {
        P5
    };
    h = h.wrapping_add(data.len() as u64);
    let mut words = stripes.remainder().chunks_exact(8);
    for w in &mut words {
        h ^= round(0, word(w));
        h = h.rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
    }
    for &b in words.remainder() {
        h ^= u64::from(b).wrapping_mul(P5);
        h = h.rotate_left(11).wrapping_mul(P1);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
}
