//! Memoisation of a level's valid values by the values of the slots its rules read.

use super::plan::{Check, GroupPlan, LevelPlan};
use super::tree::IdxVec;
use crate::param::Bound;

/// A level's valid values under recently seen values of the slots its rules read
/// (direct-mapped), so that repeated sub-problems are solved once.
pub(super) struct Memo {
    klen: usize,
    keys: Vec<u64>,
    lists: Vec<IdxVec>,
    filled: Vec<bool>,
    cands: Vec<u32>,
    valid: Vec<u32>,
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
    domain_len: u64,
}

const MEMO_WAYS: usize = 256;
/// Lookups after which a level whose hit rate is under 1/4 stops memoising.
const MEMO_PROBATION: usize = 1024;
/// Longest key that is memoised; levels reading more slots are recomputed each time.
const MEMO_MAX_KEY: usize = 12;

impl Memo {
    pub(super) fn new(lp: &LevelPlan<'_>) -> Self {
        let klen = lp.key.len();
        Memo {
            klen,
            keys: Vec::new(),
            lists: Vec::new(),
            filled: Vec::new(),
            cands: Vec::new(),
            valid: Vec::new(),
            last: 0,
            prev: 0,
            ways: if klen == 0 || klen > MEMO_MAX_KEY {
                1
            } else {
                MEMO_WAYS
            },
            lookups: 0,
            hits: 0,
            enabled: klen <= MEMO_MAX_KEY,
            domain_len: lp.domain.len(),
        }
    }

    /// The valid values (domain indices) of level `l` under the prefix in `bound`.
    #[inline(always)]
    pub(super) fn valid<'m>(
        &'m mut self,
        plan: &GroupPlan<'_>,
        l: usize,
        bound: &mut [u64],
    ) -> &'m IdxVec {
        // Fast path: the key of one of the last two lookups (siblings usually share it).
        let klen = self.klen;
        if self.enabled {
            let key = &plan.levels[l].key;
            for way in [self.last, self.prev] {
                if self.filled.get(way) == Some(&true)
                    && key
                        .iter()
                        .zip(&self.keys[way * klen..])
                        .all(|(&s, &k)| bound[s] == k)
                {
                    return &self.lists[way];
                }
            }
        }
        self.valid_slow(plan, l, bound)
    }

    #[inline(never)]
    pub(super) fn valid_slow<'m>(
        &'m mut self,
        plan: &GroupPlan<'_>,
        l: usize,
        bound: &mut [u64],
    ) -> &'m IdxVec {
        let lp = &plan.levels[l];
        let klen = self.klen;
        if self.ways > 1 && self.lookups == MEMO_PROBATION && self.hits * 4 < self.lookups {
            // Keys rarely repeat beyond the last two: keep only the last one.
            self.ways = 1;
            self.lists.clear();
        }
        if !self.enabled {
            if self.lists.is_empty() {
                self.lists.push(IdxVec::for_domain(self.domain_len));
            }
            compute_valid(lp, bound, &mut self.cands, &mut self.valid);
            let list = &mut self.lists[0];
            list.clear();
            list.extend_u32(&self.valid);
            return list;
        }
        self.lookups += 1;
        if self.lists.is_empty() {
            self.last = 0;
            self.prev = 0;
            self.keys = vec![0; self.ways * klen];
            self.lists = vec![IdxVec::for_domain(self.domain_len); self.ways];
            self.filled = vec![false; self.ways];
        }
        let way = if self.ways == 1 {
            0
        } else {
            let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
            for &s in &lp.key {
                h = (h ^ bound[s]).wrapping_mul(0x100_0000_01B3).rotate_left(23);
            }
            let way = (h ^ (h >> 29)) as usize & (self.ways - 1);
            let stored = &self.keys[way * klen..(way + 1) * klen];
            if self.filled[way] && lp.key.iter().zip(stored).all(|(&s, &k)| bound[s] == k) {
                self.hits += 1;
                self.prev = std::mem::replace(&mut self.last, way);
                return &self.lists[way];
            }
            way
        };
        {
            for (k, &s) in self.keys[way * klen..(way + 1) * klen]
                .iter_mut()
                .zip(&lp.key)
            {
                *k = bound[s];
            }
            self.filled[way] = true;
            self.prev = std::mem::replace(&mut self.last, way);
        }
        compute_valid(lp, bound, &mut self.cands, &mut self.valid);
        let list = &mut self.lists[way];
        list.clear();
        list.extend_u32(&self.valid);
        list
    }
}

/// The valid values of a level: candidates from its aliases that pass its checks.
pub(super) fn compute_valid(
    lp: &LevelPlan<'_>,
    bound: &mut [u64],
    cands: &mut Vec<u32>,
    out: &mut Vec<u32>,
) {
    out.clear();
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
    let b = Bound::new(bound);
    checks.iter().all(|c| match c {
        Check::Pred(p) => p(&b),
        Check::Late {
            owner,
            op,
            rhs,
            to_i128,
        } => rhs(&b).is_some_and(|r| op.holds(to_i128(bound[*owner]), r)),
    })
}
