//! Typed host data: the element types of buffers and scalars, buffer arguments with their
//! initial contents, and the host-side view of the arguments that a reference closure reads.

use std::fmt;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::{Error, Result};

/// Elements per parallel task of a byte conversion; smaller data is converted on the
/// calling thread.
const CONVERT_CHUNK: usize = 1 << 16;

/// `v` as bytes in native order, in parallel for large buffers (inputs are uploaded again
/// before every configuration).
fn to_ne_bytes<T: Element>(v: &[T]) -> Vec<u8> {
    let b = T::BYTES;
    let mut out = vec![0u8; v.len() * b];
    let convert = |o: &mut [u8], v: &[T]| {
        for (o, &x) in o.chunks_exact_mut(b).zip(v) {
            x.write_ne(o);
        }
    };
    if v.len() <= CONVERT_CHUNK {
        convert(&mut out, v);
    } else {
        out.par_chunks_mut(b * CONVERT_CHUNK)
            .zip(v.par_chunks(CONVERT_CHUNK))
            .for_each(|(o, v)| convert(o, v));
    }
    out
}

/// The elements in `bytes` (native order; a trailing partial element is ignored), in
/// parallel for large buffers (outputs are read back after every configuration).
fn from_ne_bytes<T: Element>(bytes: &[u8]) -> Vec<T> {
    let b = T::BYTES;
    let n = bytes.len() / b;
    if n <= CONVERT_CHUNK {
        return bytes.chunks_exact(b).map(T::read_ne).collect();
    }
    let mut out = vec![T::from_f64(0.0); n];
    out.par_chunks_mut(CONVERT_CHUNK)
        .zip(bytes[..n * b].par_chunks(b * CONVERT_CHUNK))
        .for_each(|(o, c)| {
            for (o, c) in o.iter_mut().zip(c.chunks_exact(b)) {
                *o = T::read_ne(c);
            }
        });
    out
}

mod sealed {
    /// What only this crate's element types do: byte conversions in native order.
    pub trait Sealed: Sized {
        /// Bytes per element.
        const BYTES: usize;
        /// Writes the value into `out` (`BYTES` long).
        fn write_ne(self, out: &mut [u8]);
        /// The value in `bytes` (`BYTES` long).
        fn read_ne(bytes: &[u8]) -> Self;
    }
}

/// An element type of kernel buffers and scalars: the fixed-size integers and floats.
pub trait Element: sealed::Sealed + Copy + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// The OpenCL C / CUDA C name of the type (`float`, `int`, ...).
    const C_NAME: &'static str;
    /// The value as `f64` (for tolerances).
    fn to_f64(self) -> f64;
    /// A value from an `f64` (rounded/saturated for integers).
    fn from_f64(v: f64) -> Self;
    /// Wraps a vector as [`HostData`].
    fn wrap(v: Vec<Self>) -> HostData;
    /// The elements of `data`, if it holds this type.
    fn slice(data: &HostData) -> Option<&[Self]>;
    /// Appends the value's bytes in native byte order (a launch's scalar argument, without
    /// allocating).
    fn extend_bytes(self, out: &mut Vec<u8>);
}

macro_rules! elements {
    ($($t:ty => $var:ident, $cname:literal;)*) => {
        /// Typed host data: the contents of a buffer or a scalar.
        #[derive(Clone, Debug, PartialEq)]
        #[non_exhaustive]
        #[allow(missing_docs)]
        pub enum HostData { $($var(Vec<$t>),)* }

        impl HostData {
            /// Number of elements.
            pub fn len(&self) -> usize {
                match self { $(HostData::$var(v) => v.len(),)* }
            }
            /// Whether there are no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// Bytes per element.
            pub fn elem_bytes(&self) -> usize {
                match self { $(HostData::$var(_) => std::mem::size_of::<$t>(),)* }
            }
            /// The element type's C name.
            pub fn type_name(&self) -> &'static str {
                match self { $(HostData::$var(_) => $cname,)* }
            }
            /// The contents as bytes in native byte order.
            pub fn to_bytes(&self) -> Vec<u8> {
                match self {
                    $(HostData::$var(v) => to_ne_bytes(v),)*
                }
            }
            /// Data of the same type and length as `self`, read from `bytes`.
            pub fn from_bytes_like(&self, bytes: &[u8]) -> HostData {
                match self {
                    $(HostData::$var(_) => HostData::$var(from_ne_bytes(bytes)),)*
                }
            }
            /// Element `i` as `f64`.
            pub fn get_f64(&self, i: usize) -> Option<f64> {
                match self { $(HostData::$var(v) => v.get(i).map(|&x| x as f64),)* }
            }
        }

        $(
            impl sealed::Sealed for $t {
                const BYTES: usize = std::mem::size_of::<$t>();
                fn write_ne(self, out: &mut [u8]) {
                    out.copy_from_slice(&self.to_ne_bytes());
                }
                fn read_ne(bytes: &[u8]) -> Self {
                    let mut a = [0u8; std::mem::size_of::<$t>()];
                    a.copy_from_slice(bytes);
                    <$t>::from_ne_bytes(a)
                }
            }
            impl Element for $t {
                const C_NAME: &'static str = $cname;
                fn to_f64(self) -> f64 { self as f64 }
                fn from_f64(v: f64) -> Self { v as $t }
                fn wrap(v: Vec<Self>) -> HostData { HostData::$var(v) }
                fn slice(data: &HostData) -> Option<&[Self]> {
                    match data { HostData::$var(v) => Some(v), #[allow(unreachable_patterns)] _ => None }
                }
                fn extend_bytes(self, out: &mut Vec<u8>) {
                    out.extend_from_slice(&self.to_ne_bytes());
                }
            }
            impl From<Vec<$t>> for HostData {
                fn from(v: Vec<$t>) -> Self { HostData::$var(v) }
            }
        )*
    };
}

elements! {
    f32 => F32, "float";
    f64 => F64, "double";
    i8 => I8, "char";
    u8 => U8, "uchar";
    i16 => I16, "short";
    u16 => U16, "ushort";
    i32 => I32, "int";
    u32 => U32, "uint";
    i64 => I64, "long";
    u64 => U64, "ulong";
}

/// A buffer argument: its initial contents (restored before every configuration) and
/// whether it is an output that validation checks.
#[derive(Clone, Debug)]
#[must_use]
pub struct BufferArg {
    pub(super) data: HostData,
    pub(super) output: bool,
}

impl BufferArg {
    /// A buffer with the given contents.
    pub fn from_vec<T: Element>(data: Vec<T>) -> Self {
        BufferArg {
            data: T::wrap(data),
            output: false,
        }
    }
    /// `len` zeros.
    pub fn zeros<T: Element>(len: usize) -> Self {
        Self::from_vec(vec![T::from_f64(0.0); len])
    }
    /// `len` seeded random values: uniform in [-1, 1) for floats, in [0, 16) for integers.
    pub fn random<T: Element>(len: usize, seed: u64) -> Self {
        let is_float = matches!(T::wrap(Vec::new()), HostData::F32(_) | HostData::F64(_));
        if is_float {
            Self::random_in::<T>(len, seed, -1.0, 1.0)
        } else {
            Self::random_in::<T>(len, seed, 0.0, 16.0)
        }
    }
    /// `len` seeded random values uniform in [`lo`, `hi`) (truncated for integers).
    pub fn random_in<T: Element>(len: usize, seed: u64, lo: f64, hi: f64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let span = hi - lo;
        Self::from_vec(
            (0..len)
                .map(|_| T::from_f64((lo + span * rng.random::<f64>()).floor_if_int::<T>()))
                .collect(),
        )
    }
    /// Marks the buffer as an output: validation compares it with the reference.
    pub fn output(mut self) -> Self {
        self.output = true;
        self
    }
    /// The initial contents.
    pub fn data(&self) -> &HostData {
        &self.data
    }
}

trait FloorIfInt {
    fn floor_if_int<T: Element>(self) -> f64;
}
impl FloorIfInt for f64 {
    fn floor_if_int<T: Element>(self) -> f64 {
        match T::wrap(Vec::new()) {
            HostData::F32(_) | HostData::F64(_) => self,
            _ => self.floor(),
        }
    }
}

impl<T: Element> From<Vec<T>> for BufferArg {
    fn from(v: Vec<T>) -> Self {
        BufferArg::from_vec(v)
    }
}

/// A function of the configuration.
/// The host-side arguments handed to a reference closure.
#[derive(Debug)]
pub struct HostArgs<'a> {
    pub(super) args: Vec<HostArg<'a>>,
}

#[derive(Debug)]
pub(super) enum HostArg<'a> {
    Data(&'a HostData),
    Scalar(Option<HostData>),
    Local,
}

impl HostArgs<'_> {
    /// The initial contents of buffer argument `index` (0-based kernel parameter position).
    ///
    /// # Errors
    /// [`Error::KernelSpec`] when argument `index` is not a buffer of `T`.
    pub fn buffer<T: Element>(&self, index: usize) -> Result<&[T]> {
        match self.args.get(index) {
            Some(HostArg::Data(d)) => T::slice(d).ok_or_else(|| {
                Error::KernelSpec(format!(
                    "argument {index} is a buffer of `{}`, not of `{}`",
                    d.type_name(),
                    T::C_NAME
                ))
            }),
            _ => Err(Error::KernelSpec(format!(
                "argument {index} is not a buffer"
            ))),
        }
    }
    /// The value of scalar argument `index`.
    ///
    /// # Errors
    /// [`Error::KernelSpec`] when argument `index` is not a scalar of `T` with a fixed value.
    pub fn scalar<T: Element>(&self, index: usize) -> Result<T> {
        match self.args.get(index) {
            Some(HostArg::Scalar(Some(d))) => {
                T::slice(d).and_then(|s| s.first().copied()).ok_or_else(|| {
                    Error::KernelSpec(format!(
                        "argument {index} is a `{}`, not a `{}`",
                        d.type_name(),
                        T::C_NAME
                    ))
                })
            }
            _ => Err(Error::KernelSpec(format!(
                "argument {index} is not a scalar with a fixed value"
            ))),
        }
    }
}
