//! Compact storage of a group's tree of valid prefixes: one flat array per level.
//!
//! Level `l` holds, for each node, the domain index of its value (`vals`) and, except on the
//! last level, where its children start on level `l + 1` (`starts`, one extra entry at the
//! end). Siblings are sorted by domain index. A leaf's position on the last level is the
//! group-local index of its configuration.

/// Domain indices, stored in the narrowest width the domain allows.
#[derive(Clone, Debug)]
pub(crate) enum IdxVec {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

impl IdxVec {
    pub(crate) fn for_domain(len: u64) -> Self {
        if len <= 1 << 8 {
            IdxVec::U8(Vec::new())
        } else if len <= 1 << 16 {
            IdxVec::U16(Vec::new())
        } else {
            IdxVec::U32(Vec::new())
        }
    }
    #[inline]
    pub(crate) fn push(&mut self, v: u32) {
        match self {
            IdxVec::U8(x) => x.push(v as u8),
            IdxVec::U16(x) => x.push(v as u16),
            IdxVec::U32(x) => x.push(v),
        }
    }
    #[inline]
    pub(crate) fn extend_u32(&mut self, v: &[u32]) {
        match self {
            IdxVec::U8(x) => x.extend(v.iter().map(|&c| c as u8)),
            IdxVec::U16(x) => x.extend(v.iter().map(|&c| c as u16)),
            IdxVec::U32(x) => x.extend_from_slice(v),
        }
    }
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u32 {
        match self {
            IdxVec::U8(x) => x[i] as u32,
            IdxVec::U16(x) => x[i] as u32,
            IdxVec::U32(x) => x[i],
        }
    }
    /// An empty vector of the same width.
    pub(crate) fn empty_like(&self) -> Self {
        match self {
            IdxVec::U8(_) => IdxVec::U8(Vec::new()),
            IdxVec::U16(_) => IdxVec::U16(Vec::new()),
            IdxVec::U32(_) => IdxVec::U32(Vec::new()),
        }
    }
    pub(crate) fn len(&self) -> usize {
        match self {
            IdxVec::U8(x) => x.len(),
            IdxVec::U16(x) => x.len(),
            IdxVec::U32(x) => x.len(),
        }
    }
    /// Position of `v` among `[lo, hi)`, which is sorted.
    pub(crate) fn find(&self, lo: usize, hi: usize, v: u32) -> Option<usize> {
        fn f<T: Copy + Ord>(x: &[T], lo: usize, v: T) -> Option<usize> {
            x.binary_search(&v).ok().map(|p| p + lo)
        }
        match self {
            IdxVec::U8(x) => u8::try_from(v).ok().and_then(|v| f(&x[lo..hi], lo, v)),
            IdxVec::U16(x) => u16::try_from(v).ok().and_then(|v| f(&x[lo..hi], lo, v)),
            IdxVec::U32(x) => f(&x[lo..hi], lo, v),
        }
    }
    #[inline]
    pub(crate) fn extend_from(&mut self, other: &IdxVec) {
        if let (IdxVec::U8(a), IdxVec::U8(b)) = (&mut *self, other) {
            if b.len() <= 16 {
                a.reserve(b.len());
                b.iter().for_each(|&x| a.push(x));
                return;
            }
        }
        match (self, other) {
            (IdxVec::U8(a), IdxVec::U8(b)) => a.extend_from_slice(b),
            (IdxVec::U16(a), IdxVec::U16(b)) => a.extend_from_slice(b),
            (IdxVec::U32(a), IdxVec::U32(b)) => a.extend_from_slice(b),
            (a, b) => (0..b.len()).for_each(|i| a.push(b.get(i))),
        }
    }
    pub(crate) fn shrink(&mut self) {
        match self {
            IdxVec::U8(x) => x.shrink_to_fit(),
            IdxVec::U16(x) => x.shrink_to_fit(),
            IdxVec::U32(x) => x.shrink_to_fit(),
        }
    }
    pub(crate) fn bytes(&self) -> usize {
        match self {
            IdxVec::U8(x) => x.capacity(),
            IdxVec::U16(x) => x.capacity() * 2,
            IdxVec::U32(x) => x.capacity() * 4,
        }
    }
}

/// Child offsets into the next level: `u32` while the next level is small enough.
#[derive(Clone, Debug)]
pub(crate) enum OffVec {
    U32(Vec<u32>),
    U64(Vec<u64>),
}

impl OffVec {
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        match self {
            OffVec::U32(x) => x[i] as u64,
            OffVec::U64(x) => x[i],
        }
    }
    /// The node whose children range contains position `child` of the next level:
    /// the last `i` with `starts[i] <= child` (`starts` has one entry per node plus one).
    pub(crate) fn parent_of(&self, child: u64) -> usize {
        let p = match self {
            OffVec::U32(x) => x.partition_point(|&s| s as u64 <= child),
            OffVec::U64(x) => x.partition_point(|&s| s <= child),
        };
        p.saturating_sub(1)
    }
    pub(crate) fn from_u64(v: Vec<u64>) -> Self {
        match v.last() {
            Some(&last) if last > u32::MAX as u64 => OffVec::U64(v),
            _ => OffVec::U32(v.into_iter().map(|x| x as u32).collect()),
        }
    }
    pub(crate) fn bytes(&self) -> usize {
        match self {
            OffVec::U32(x) => x.capacity() * 4,
            OffVec::U64(x) => x.capacity() * 8,
        }
    }
}

/// One level of a group's tree.
#[derive(Clone, Debug)]
pub(crate) struct Level {
    pub(crate) vals: IdxVec,
    /// Absent on the last level.
    pub(crate) starts: Option<OffVec>,
}

impl Level {
    #[inline]
    pub(crate) fn children(&self, node: usize) -> (usize, usize) {
        match &self.starts {
            Some(s) => (s.get(node) as usize, s.get(node + 1) as usize),
            None => (0, 0),
        }
    }
}
