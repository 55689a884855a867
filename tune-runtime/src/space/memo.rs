//! Memoisation of a level's valid values by the values of the slots its rules read.
//!
//! Lists live in one flat arena per level (no allocation per list); the arena is emptied,
//! and every remembered key forgotten, when it would outgrow its capacity.

use super::plan::{Check, LevelPlan};

/// What a memo remembers.
#[derive(Clone, Copy)]
enum What {
    /// The level's valid values.
    Level,
    /// The candidates that pass one check of the level (`LevelPlan::split`).
    Check(usize),
}

/// A level's valid values under recently seen values of the slots its rules read
/// (direct-mapped), so that repeated sub-problems are solved once.
pub(super) struct Memo {
    what: What,
    /// The slots whose values decide the list.
    key: Vec<usize>,
    /// One memo per check, when the level is split; the level's list is their
    /// intersection.
    subs: Vec<Memo>,
    /// Scratch for intersections.
    tmp: Vec<u32>,
    klen: usize,
    /// `klen` words per way.
    keys: Vec<u64>,
    /// Each way's list in `arena`, as `(start, end)`; `None` until filled.
    spans: Vec<Option<(u32, u32)>>,
    arena: Vec<u32>,
    cands: Vec<u32>,
    /// The ways used last and before: consecutive nodes often share their key, or
    /// alternate between two.
    last: usize,
    prev: usize,
    /// Ways, allocated on first use (a level that is never reached costs nothing).
    ways: usize,
    /// Slow-path lookups and hits among them: a level whose keys rarely repeat keeps only
    /// its last key, since hashing would be pure overhead.
    lookups: usize,
    hits: usize,
    /// Whether keys are short enough to be compared at all.
    enabled: bool,
    /// Arena entries kept before it is emptied (at least one full list).
    arena_cap: usize,
}

const MEMO_WAYS: usize = 256;
/// Lookups after which a level whose hit rate is under 1/4 stops memoising.
const MEMO_PROBATION: usize = 1024;
/// Longest key that is memoised; levels reading more slots are recomputed each time.
const MEMO_MAX_KEY: usize = 12;
/// Arena entries per level: 256 KiB, so that a level's lists stay in cache.
const ARENA_ENTRIES: usize = 1 << 16;

impl Memo {
    pub(super) fn new(lp: &LevelPlan<'_>) -> Self {
        let mut m = Memo::with_key(lp, What::Level, lp.key.clone());
        m.subs = lp
            .split
            .iter()
            .enumerate()
            .map(|(i, k)| Memo::with_key(lp, What::Check(i), k.clone()))
            .collect();
        m
    }

    fn with_key(lp: &LevelPlan<'_>, what: What, key: Vec<usize>) -> Self {
        let klen = key.len();
        let enabled = klen <= MEMO_MAX_KEY;
        Memo {
            what,
            key,
            subs: Vec::new(),
            tmp: Vec::new(),
            klen,
            keys: Vec::new(),
            spans: Vec::new(),
            arena: Vec::new(),
            cands: Vec::new(),
            last: 0,
            prev: 0,
            ways: if klen == 0 || !enabled { 1 } else { MEMO_WAYS },
            lookups: 0,
            hits: 0,
            enabled,
            arena_cap: ARENA_ENTRIES.max(lp.domain.len().min(u32::MAX as u64) as usize),
        }
    }

    /// The valid values (domain indices, ascending) of level `lp` under the prefix in
    /// `bound` (the level's own slot is overwritten).
    #[inline(always)]
    pub(super) fn valid(&mut self, lp: &LevelPlan<'_>, bound: &mut [u64]) -> &[u32] {
        // Fast path: the key of one of the last two lookups (siblings usually share it).
        if self.enabled {
            let klen = self.klen;
            for way in [self.last, self.prev] {
                if let Some(Some((a, b))) = self.spans.get(way) {
                    let stored = &self.keys[way * klen..(way + 1) * klen];
                    if self.key.iter().zip(stored).all(|(&s, &k)| bound[s] == k) {
                        return &self.arena[*a as usize..*b as usize];
                    }
                }
            }
        }
        self.valid_slow(lp, bound)
    }

    #[inline(never)]
    fn valid_slow(&mut self, lp: &LevelPlan<'_>, bound: &mut [u64]) -> &[u32] {
        let klen = self.klen;
        if !self.enabled {
            self.arena.clear();
            self.fill(lp, bound);
            return &self.arena;
        }
        if self.ways > 1 && self.lookups == MEMO_PROBATION && self.hits * 4 < self.lookups {
            // Keys rarely repeat beyond the last two: keep only the last one.
            self.ways = 1;
            self.spans.clear();
        }
        self.lookups += 1;
        if self.spans.is_empty() {
            self.last = 0;
            self.prev = 0;
            self.keys = vec![0; self.ways * klen];
            self.spans = vec![None; self.ways];
            self.arena.clear();
        }
        let way = if self.ways == 1 {
            0
        } else {
            let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
            for &s in &self.key {
                h = (h ^ bound[s]).wrapping_mul(0x100_0000_01B3).rotate_left(23);
            }
            let way = (h ^ (h >> 29)) as usize & (self.ways - 1);
            if let Some((a, b)) = self.spans[way] {
                let stored = &self.keys[way * klen..(way + 1) * klen];
                if self.key.iter().zip(stored).all(|(&s, &k)| bound[s] == k) {
                    self.hits += 1;
                    self.prev = std::mem::replace(&mut self.last, way);
                    return &self.arena[a as usize..b as usize];
                }
            }
            way
        };
        if self.arena.len() >= self.arena_cap || self.ways == 1 {
            // Forget every list rather than track which ones are still in use.
            self.arena.clear();
            self.spans.iter_mut().for_each(|s| *s = None);
        }
        for (k, &s) in self.keys[way * klen..(way + 1) * klen]
            .iter_mut()
            .zip(&self.key)
        {
            *k = bound[s];
        }
        let start = self.arena.len();
        self.fill(lp, bound);
        let end = self.arena.len();
        self.spans[way] = Some((start as u32, end as u32));
        self.prev = std::mem::replace(&mut self.last, way);
        &self.arena[start..end]
    }
}

impl Memo {
    /// Appends this memo's list under the prefix in `bound` to the arena.
    fn fill(&mut self, lp: &LevelPlan<'_>, bound: &mut [u64]) {
        match self.what {
            What::Check(i) => {
                lp.candidates(bound, &mut self.cands);
                for &c in &self.cands {
                    bound[lp.slot] = lp.domain.raw(c);
                    if lp.checks[i].holds(bound) {
                        self.arena.push(c);
                    }
                }
            }
            What::Level if self.subs.is_empty() => {
                compute_valid(lp, bound, &mut self.cands, &mut self.arena)
            }
            What::Level => {
                // Each check's passing values, memoised on its own key, intersected.
                let (first, rest) = self.subs.split_at_mut(1);
                self.tmp.clear();
                self.tmp.extend_from_slice(first[0].valid(lp, bound));
                for sub in rest {
                    if self.tmp.is_empty() {
                        break;
                    }
                    let other = sub.valid(lp, bound);
                    let (mut i, mut j, mut n) = (0, 0, 0);
                    while i < self.tmp.len() && j < other.len() {
                        let (a, b) = (self.tmp[i], other[j]);
                        if a == b {
                            self.tmp[n] = a;
                            n += 1;
                        }
                        i += (a <= b) as usize;
                        j += (b <= a) as usize;
                    }
                    self.tmp.truncate(n);
                }
                self.arena.extend_from_slice(&self.tmp);
            }
        }
    }
}

/// Appends to `out` the valid values of a level: candidates from its aliases that pass
/// its checks.
pub(super) fn compute_valid(
    lp: &LevelPlan<'_>,
    bound: &mut [u64],
    cands: &mut Vec<u32>,
    out: &mut Vec<u32>,
) {
    lp.candidates(bound, cands);
    if lp.checks.is_empty() {
        out.extend_from_slice(cands);
        return;
    }
    for &c in cands.iter() {
        bound[lp.slot] = lp.domain.raw(c);
        if passes(&lp.checks, bound) {
            out.push(c);
        }
    }
}

#[inline]
pub(super) fn passes(checks: &[Check<'_>], bound: &[u64]) -> bool {
    checks.iter().all(|c| c.holds(bound))
}
