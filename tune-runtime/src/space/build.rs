//! Construction of a space: parameters are split into independent groups (connected
//! components of the constraint graph), and each group's tree of valid prefixes is built
//! parameter by parameter, checking each constraint as soon as the last parameter it reads is
//! bound. Integer aliases (`divides`, `multiple_of`, bounds, `equal`) generate candidates
//! instead of testing every value. Groups, and subtrees inside a large group, are built in
//! parallel.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use rayon::prelude::*;

use super::tree::{IdxVec, Level, OffVec};
use super::{Group, ParamInfo, Space};
use crate::param::{Bound, Domain, IntExpr, IntOp, Param, ParamType, Pred, Rule, RuleKind};
use crate::{Error, Result};

/// Builds a [`Space`] from parameters; what `tune::space!` and `#[tunable]` expand to.
///
/// Parameters get slots in the order they are added; constraints refer to other parameters
/// by slot.
///
/// ```
/// use tune_runtime::param::Param;
/// use tune_runtime::space::SpaceBuilder;
/// let n = 1 << 20;
/// let space = SpaceBuilder::new()
///     .param(Param::<usize>::range("WPT", 1..=n).divides(&[], move |_| n))
///     .param(Param::<usize>::range("LS", 1..=n).divides(&[0], move |b| n / b.get::<usize>(0)))
///     .build()?;
/// assert_eq!(space.len(), 231);
/// # Ok::<(), tune_runtime::Error>(())
/// ```
#[must_use]
#[derive(Default)]
pub struct SpaceBuilder<'a> {
    params: Vec<ErasedParam<'a>>,
    errors: Vec<Error>,
    split_nodes: Option<usize>,
}

struct ErasedParam<'a> {
    info: ParamInfo,
    rules: Vec<Rule<'a>>,
}

impl<'a> SpaceBuilder<'a> {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a parameter; it gets the next slot.
    pub fn param<T: ParamType>(mut self, p: Param<'a, T>) -> Self {
        let Param {
            name,
            domain,
            rules,
            default,
        } = p;
        let domain = domain.unwrap_or_else(|e| {
            self.errors.push(e);
            Domain::Set(Vec::new())
        });
        let info = ParamInfo::new::<T>(name, domain, default.map(T::to_raw));
        self.params.push(ErasedParam { info, rules });
        self
    }

    /// A constraint over several parameters that belongs to none of them in particular.
    pub fn constraint(
        mut self,
        deps: &[usize],
        pred: impl Fn(&Bound<'_>) -> bool + Send + Sync + 'a,
    ) -> Self {
        let Some(&owner) = deps.iter().max() else {
            self.errors.push(Error::InvalidSpace(
                "a constraint must read at least one parameter".into(),
            ));
            return self;
        };
        match self.params.get_mut(owner) {
            Some(p) => p.rules.push(Rule {
                deps: deps.to_vec(),
                kind: RuleKind::Pred(Arc::new(pred)),
            }),
            None => self.errors.push(Error::InvalidSpace(format!(
                "a constraint reads slot {owner}, but only {} parameters are declared",
                self.params.len()
            ))),
        }
        self
    }

    /// Testing knob: the number of nodes at which construction splits into parallel
    /// subtrees (default 512). Small values exercise the parallel path on small spaces.
    #[doc(hidden)]
    pub fn __split_nodes(mut self, n: usize) -> Self {
        self.split_nodes = Some(n.max(1));
        self
    }

    /// Builds the space.
    ///
    /// # Errors
    /// An invalid declaration (duplicate names, a constraint on an undeclared slot, an
    /// impossible range), a space with more than 2^128 configurations, or a constraint that
    /// panicked.
    pub fn build(self) -> Result<Space> {
        let SpaceBuilder {
            params,
            mut errors,
            split_nodes,
        } = self;
        let split = split_nodes.unwrap_or(SPLIT_NODES);
        validate(&params, &mut errors);
        if let Some(e) = errors.into_iter().next() {
            return Err(e);
        }
        let plans = plan_groups(&params);
        let infos: Arc<[ParamInfo]> = params.into_iter().map(|p| p.info).collect();
        let nslots = infos.len();
        let built = catch_unwind(AssertUnwindSafe(|| {
            plans
                .par_iter()
                .map(|g| build_group(g, nslots, split))
                .collect::<Result<Vec<Group>>>()
        }));
        let groups = match built {
            Ok(r) => r?,
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                return Err(Error::ConstraintPanicked(msg));
            }
        };
        Space::from_groups(infos, groups)
    }
}

fn validate(params: &[ErasedParam<'_>], errors: &mut Vec<Error>) {
    let n = params.len();
    let mut names: Vec<&str> = params.iter().map(|p| p.info.name.as_str()).collect();
    names.sort_unstable();
    for w in names.windows(2) {
        if w[0] == w[1] {
            errors.push(Error::InvalidSpace(format!(
                "parameter `{}` is declared twice",
                w[0]
            )));
        }
    }
    for (slot, p) in params.iter().enumerate() {
        for r in &p.rules {
            for &d in &r.deps {
                if d >= n {
                    errors.push(Error::InvalidSpace(format!(
                        "a constraint of `{}` reads slot {d}, but only {n} parameters are declared",
                        p.info.name
                    )));
                } else if d == slot && matches!(r.kind, RuleKind::Int { .. }) {
                    errors.push(Error::InvalidSpace(format!(
                        "an alias of `{}` reads `{}` itself; compare it in a plain expression instead",
                        p.info.name, p.info.name
                    )));
                }
            }
        }
    }
}

/// A check applied once the level's parameter is bound.
enum Check<'a> {
    Pred(Pred<'a>),
    /// An integer alias whose owner was bound earlier than one of its dependencies.
    Late {
        owner: usize,
        op: IntOp,
        rhs: IntExpr<'a>,
        to_i128: fn(u64) -> i128,
    },
}

struct LevelPlan<'a> {
    slot: usize,
    domain: Domain,
    /// Integer values of a set domain, for the aliases.
    set_ints: Vec<i128>,
    gens: Vec<(IntOp, IntExpr<'a>)>,
    checks: Vec<Check<'a>>,
    /// The other slots this level's rules read: its valid values depend on nothing else,
    /// so they are memoised by these slots' values.
    key: Vec<usize>,
}

struct GroupPlan<'a> {
    slots: Vec<usize>,
    levels: Vec<LevelPlan<'a>>,
}

fn plan_groups<'a>(params: &[ErasedParam<'a>]) -> Vec<GroupPlan<'a>> {
    let n = params.len();
    // Union-find over slots.
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for (slot, p) in params.iter().enumerate() {
        for r in &p.rules {
            for &d in &r.deps {
                let (a, b) = (find(&mut parent, slot), find(&mut parent, d));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of = vec![usize::MAX; n];
    for slot in 0..n {
        let root = find(&mut parent, slot);
        if group_of[root] == usize::MAX {
            group_of[root] = groups.len();
            groups.push(Vec::new());
        }
        groups[group_of[root]].push(slot);
    }
    groups
        .into_iter()
        .map(|members| {
            let slots = build_order(params, &members);
            let mut levels: Vec<LevelPlan<'a>> = slots
                .iter()
                .map(|&s| {
                    let info = &params[s].info;
                    let set_ints = match &info.domain {
                        Domain::Set(v) => v.iter().map(|&r| (info.to_i128)(r)).collect(),
                        Domain::Ints { .. } => Vec::new(),
                    };
                    LevelPlan {
                        slot: s,
                        domain: info.domain.clone(),
                        set_ints,
                        gens: Vec::new(),
                        checks: Vec::new(),
                        key: Vec::new(),
                    }
                })
                .collect();
            // A rule is applied at the level of the last parameter it reads.
            let mut level_of = vec![0usize; n];
            for (l, &s) in slots.iter().enumerate() {
                level_of[s] = l;
            }
            for &owner in &slots {
                for r in &params[owner].rules {
                    let at = r
                        .deps
                        .iter()
                        .map(|&d| level_of[d])
                        .fold(level_of[owner], usize::max);
                    let lvl = &mut levels[at];
                    lvl.key.extend(
                        r.deps
                            .iter()
                            .copied()
                            .chain([owner])
                            .filter(|&d| d != lvl.slot),
                    );
                    match &r.kind {
                        RuleKind::Int { op, rhs } if at == level_of[owner] => {
                            lvl.gens.push((*op, rhs.clone()))
                        }
                        RuleKind::Int { op, rhs } => lvl.checks.push(Check::Late {
                            owner,
                            op: *op,
                            rhs: rhs.clone(),
                            to_i128: params[owner].info.to_i128,
                        }),
                        RuleKind::Pred(p) => lvl.checks.push(Check::Pred(p.clone())),
                    }
                }
            }
            for lvl in &mut levels {
                lvl.key.sort_unstable();
                lvl.key.dedup();
            }
            GroupPlan { slots, levels }
        })
        .collect()
}

/// The order in which a group's parameters are bound: every parameter after those its rules
/// read (so aliases can generate candidates), and each one as late as possible, so that a
/// parameter's branching multiplies as few levels below it as possible. Among parameters
/// that may go last, the one with the most candidate values goes last.
fn build_order(params: &[ErasedParam<'_>], members: &[usize]) -> Vec<usize> {
    // readers[d]: members whose rules read d (and must therefore come after d).
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); params.len()];
    for &m in members {
        for r in &params[m].rules {
            for &d in &r.deps {
                if d != m && d < m {
                    readers[d].push(m);
                }
            }
        }
    }
    // Rules that read a later slot are checked late; they impose no order.
    let branching = |s: usize| -> u64 {
        let p = &params[s];
        let len = p.info.domain.len();
        let pruned = p.rules.iter().any(|r| {
            matches!(
                r.kind,
                RuleKind::Int {
                    op: IntOp::Divides | IntOp::Equal | IntOp::MultipleOf,
                    ..
                }
            )
        });
        if pruned {
            len.min(8)
        } else {
            len
        }
    };
    let mut placed = vec![false; params.len()];
    let mut rev = Vec::with_capacity(members.len());
    while rev.len() < members.len() {
        let pick = members
            .iter()
            .copied()
            .filter(|&m| !placed[m] && readers[m].iter().all(|&r| placed[r]))
            .max_by_key(|&m| (branching(m), m));
        let Some(m) = pick else { break };
        placed[m] = true;
        rev.push(m);
    }
    // Unreachable for a forest of "reads earlier slot" edges; keep declaration order otherwise.
    if rev.len() < members.len() {
        return members.to_vec();
    }
    rev.reverse();
    rev
}

impl LevelPlan<'_> {
    /// Writes to `out` the domain indices, ascending, that satisfy this level's aliases.
    fn candidates(&self, bound: &[u64], out: &mut Vec<u32>) {
        out.clear();
        let b = Bound::new(bound);
        let mut lo_v = i128::MIN;
        let mut hi_v = i128::MAX;
        let mut div: Option<i128> = None; // smallest non-zero dividend
        let mut mult: Option<i128> = None; // largest modulus
                                           // Right-hand sides, evaluated once per node.
        let mut rhs_buf = [0i128; 8];
        let many;
        let rhs: &[i128] = if self.gens.len() <= rhs_buf.len() {
            for (i, (_, f)) in self.gens.iter().enumerate() {
                match f(&b) {
                    Some(r) => rhs_buf[i] = r,
                    None => return,
                }
            }
            &rhs_buf[..self.gens.len()]
        } else {
            match self
                .gens
                .iter()
                .map(|(_, f)| f(&b))
                .collect::<Option<Vec<_>>>()
            {
                Some(v) => {
                    many = v;
                    &many
                }
                None => return,
            }
        };
        let mut simple = true;
        for (&(op, _), &r) in self.gens.iter().zip(rhs) {
            match op {
                IntOp::AtMost => hi_v = hi_v.min(r),
                IntOp::LessThan => hi_v = hi_v.min(r.saturating_sub(1)),
                IntOp::AtLeast => lo_v = lo_v.max(r),
                IntOp::GreaterThan => lo_v = lo_v.max(r.saturating_add(1)),
                IntOp::Equal => {
                    lo_v = lo_v.max(r);
                    hi_v = hi_v.min(r);
                }
                IntOp::Divides => {
                    simple = false;
                    if r != 0 && div.is_none_or(|d| r.abs() < d) {
                        div = Some(r.abs());
                    }
                }
                IntOp::MultipleOf => {
                    simple = false;
                    if r == 0 {
                        return;
                    }
                    if mult.is_none_or(|m| r.abs() > m) {
                        mult = Some(r.abs());
                    }
                }
                IntOp::Unequal => simple = false,
            }
        }
        if lo_v > hi_v {
            return;
        }
        let ok = |v: i128| {
            self.gens
                .iter()
                .zip(rhs)
                .all(|(&(op, _), &r)| op.holds(v, r))
        };
        match &self.domain {
            Domain::Set(_) => {
                for (i, &v) in self.set_ints.iter().enumerate() {
                    if self.gens.is_empty() || (v >= lo_v && v <= hi_v && ok(v)) {
                        out.push(i as u32);
                    }
                }
            }
            &Domain::Ints { lo, step, len } => {
                if len == 0 {
                    return;
                }
                let hi = lo + (len as i128 - 1) * step;
                let (a, z) = (lo_v.max(lo), hi_v.min(hi));
                if a > z {
                    return;
                }
                let ia = (a - lo + step - 1) / step;
                let iz = (z - lo) / step;
                if ia > iz {
                    return;
                }
                let scan = iz - ia + 1;
                let push = |v: i128, out: &mut Vec<u32>| {
                    if v >= a && v <= z && (v - lo) % step == 0 && ok(v) {
                        out.push(((v - lo) / step) as u32);
                    }
                };
                if simple {
                    out.extend((ia..=iz).map(|i| i as u32));
                } else if let Some(d) = div.filter(|&d| isqrt(d) * 2 < scan) {
                    for_each_divisor(d, a, z, |v| push(v, out));
                } else if let Some(m) = mult.filter(|&m| m > step) {
                    let first = if a >= 0 {
                        (a + m - 1) / m * m
                    } else {
                        a / m * m
                    };
                    let mut v = first;
                    while v <= z {
                        push(v, out);
                        v += m;
                    }
                } else {
                    for i in ia..=iz {
                        push(lo + i * step, out);
                    }
                }
            }
        }
    }
}

fn isqrt(n: i128) -> i128 {
    let mut r = (n as f64).sqrt() as i128;
    while r * r > n {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= n {
        r += 1;
    }
    r
}

/// Calls `f` with every divisor of `d > 0` in `[a, z]`, ascending (negative ones first).
fn for_each_divisor(d: i128, a: i128, z: i128, mut f: impl FnMut(i128)) {
    let r = isqrt(d);
    if a < 0 {
        // -d .. -1: the negated divisors, largest magnitude first.
        for i in 1..=r {
            if d % i == 0 {
                let v = -(d / i);
                if v >= a && v <= z {
                    f(v);
                }
            }
        }
        for i in (1..=r).rev() {
            if d % i == 0 && i * i != d && -i >= a && -i <= z {
                f(-i);
            }
        }
    }
    for i in 1..=r.min(z) {
        if d % i == 0 && i >= a {
            f(i);
        }
    }
    for i in (1..=r).rev() {
        if d % i == 0 && i * i != d {
            let v = d / i;
            if v > z {
                break;
            }
            if v >= a {
                f(v);
            }
        }
    }
}

impl Domain {
    #[inline]
    pub(crate) fn raw(&self, idx: u32) -> u64 {
        match self {
            Domain::Ints { lo, step, .. } => (lo + idx as i128 * step) as u64,
            Domain::Set(v) => v[idx as usize],
        }
    }
}

/// Per-level output of a subtree build.
struct Chunk {
    /// Child offsets of each node on levels `s..depth-1` (local; starts with 0).
    starts: Vec<Vec<u32>>,
    /// Values on levels `s+1..depth`.
    vals: Vec<IdxVec>,
    /// Frontier nodes (level `s`) with no leaf below them.
    dead: usize,
}

/// Nodes on the level where the build splits into parallel subtrees.
const SPLIT_NODES: usize = 512;

/// A level's valid values under recently seen values of the slots its rules read
/// (direct-mapped), so that repeated sub-problems are solved once.
struct Memo {
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
    fn new(lp: &LevelPlan<'_>) -> Self {
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
    fn valid<'m>(&'m mut self, plan: &GroupPlan<'_>, l: usize, bound: &mut [u64]) -> &'m IdxVec {
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
    fn valid_slow<'m>(
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
fn compute_valid(lp: &LevelPlan<'_>, bound: &mut [u64], cands: &mut Vec<u32>, out: &mut Vec<u32>) {
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

fn build_group(plan: &GroupPlan<'_>, nslots: usize, split: usize) -> Result<Group> {
    let depth = plan.levels.len();
    let free = depth == 1 && plan.levels[0].gens.is_empty() && plan.levels[0].checks.is_empty();
    if free {
        return Ok(Group {
            slots: plan.slots.clone(),
            levels: Vec::new(),
            free_len: plan.levels[0].domain.len(),
        });
    }
    let mut bound = vec![0u64; nslots];
    let mut memos: Vec<Memo> = plan.levels.iter().map(Memo::new).collect();
    // Top levels, breadth first, until the frontier is wide enough to split. The frontier
    // holds the paths (domain indices, levels 0..=s) of the nodes of level `s`, flat.
    let mut vals: Vec<IdxVec> = Vec::with_capacity(depth);
    let mut starts: Vec<OffVec> = Vec::with_capacity(depth);
    let mut level0 = IdxVec::for_domain(plan.levels[0].domain.len());
    let mut dead = 0usize;
    let first = memos[0].valid(plan, 0, &mut bound);
    let mut frontier: Vec<u32> = (0..first.len()).map(|i| first.get(i)).collect();
    level0.extend_u32(&frontier);
    vals.push(level0);
    let mut s = 0;
    while s + 2 < depth && frontier.len() / (s + 1) < split && !frontier.is_empty() {
        let mut next = IdxVec::for_domain(plan.levels[s + 1].domain.len());
        let mut st = vec![0u64];
        let mut nf = Vec::new();
        for path in frontier.chunks(s + 1) {
            set_path(plan, path, &mut bound);
            let valid = memos[s + 1].valid(plan, s + 1, &mut bound);
            dead += (valid.len() == 0) as usize;
            for c in (0..valid.len()).map(|i| valid.get(i)) {
                next.push(c);
                nf.extend_from_slice(path);
                nf.push(c);
            }
            st.push(next.len() as u64);
        }
        starts.push(OffVec::from_u64(st));
        vals.push(next);
        frontier = nf;
        s += 1;
    }
    if depth > 1 {
        // Subtrees below level `s`: in parallel chunks when the frontier is wide (many
        // chunks, so that skewed subtrees still spread over the threads), else in one go.
        // Memos are per thread (they only map key values to valid lists, so chunks share).
        let build_chunk = |memos: &mut Vec<Memo>, nodes: &[u32]| {
            let mut bound = vec![0u64; nslots];
            let mut ch = Chunk {
                starts: (s..depth - 1).map(|_| vec![0u32]).collect(),
                vals: (s + 1..depth)
                    .map(|l| IdxVec::for_domain(plan.levels[l].domain.len()))
                    .collect(),
                dead: 0,
            };
            let mut scratch: Vec<Vec<u32>> = vec![Vec::new(); depth];
            for path in nodes.chunks(s + 1) {
                set_path(plan, path, &mut bound);
                let alive = dfs(plan, s + 1, s, &mut bound, memos, &mut scratch, &mut ch);
                ch.dead += !alive as usize;
                ch.starts[0].push(ch.vals[0].len() as u32);
            }
            ch
        };
        let nodes = frontier.len() / (s + 1);
        let chunks: Vec<Chunk> = if nodes < split {
            vec![build_chunk(&mut memos, &frontier)]
        } else {
            let per = nodes.div_ceil(rayon::current_num_threads() * 16).max(1);
            frontier
                .par_chunks(per * (s + 1))
                .map_init(|| plan.levels.iter().map(Memo::new).collect(), build_chunk)
                .collect()
        };
        dead += chunks.iter().map(|c| c.dead).sum::<usize>();
        concat(plan, s, chunks, &mut vals, &mut starts);
    }
    let mut levels: Vec<Level> = vals
        .into_iter()
        .map(|v| Level {
            vals: v,
            starts: None,
        })
        .collect();
    for (l, st) in starts.into_iter().enumerate() {
        levels[l].starts = Some(st);
    }
    if dead > 0 {
        // Only the breadth-first top levels can hold nodes without leaves.
        compact_top(&mut levels, s);
    }
    for l in &mut levels {
        l.vals.shrink();
    }
    Ok(Group {
        slots: plan.slots.clone(),
        levels,
        free_len: 0,
    })
}

fn set_path(plan: &GroupPlan<'_>, path: &[u32], bound: &mut [u64]) {
    for (l, &c) in path.iter().enumerate() {
        let lp = &plan.levels[l];
        bound[lp.slot] = lp.domain.raw(c);
    }
}

#[inline]
fn passes(checks: &[Check<'_>], bound: &[u64]) -> bool {
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

/// Appends the subtree below the current node (its prefix, levels `..l`, is in `bound`):
/// its children on level `l` that have at least one leaf below them, each after its own
/// subtree, so every level stays in breadth-first order and no node is left without leaves.
/// Returns whether anything was appended.
fn dfs(
    plan: &GroupPlan<'_>,
    l: usize,
    s: usize,
    bound: &mut [u64],
    memos: &mut [Memo],
    scratch: &mut [Vec<u32>],
    ch: &mut Chunk,
) -> bool {
    let depth = plan.levels.len();
    let vi = l - s - 1;
    if l + 1 == depth {
        let valid = memos[l].valid(plan, l, bound);
        ch.vals[vi].extend_from(valid);
        return valid.len() > 0;
    }
    let mut list = std::mem::take(&mut scratch[l]);
    list.clear();
    memos[l].valid(plan, l, bound).append_to(&mut list);
    let lp = &plan.levels[l];
    let mut any = false;
    if l + 2 == depth {
        // The children's children are leaves: a tight loop instead of one call per node.
        let (vals, leaves) = ch.vals.split_at_mut(vi + 1);
        let (here, leaves) = (&mut vals[vi], &mut leaves[0]);
        let starts = &mut ch.starts[vi + 1];
        let memo = &mut memos[l + 1];
        for &c in &list {
            bound[lp.slot] = lp.domain.raw(c);
            let valid = memo.valid(plan, l + 1, bound);
            if valid.len() > 0 {
                leaves.extend_from(valid);
                here.push(c);
                starts.push(leaves.len() as u32);
                any = true;
            }
        }
    } else {
        for &c in &list {
            bound[lp.slot] = lp.domain.raw(c);
            if dfs(plan, l + 1, s, bound, memos, scratch, ch) {
                ch.vals[vi].push(c);
                let next = ch.vals[vi + 1].len() as u32;
                ch.starts[vi + 1].push(next);
                any = true;
            }
        }
    }
    scratch[l] = list;
    any
}

/// Appends the chunks' levels below `s` to the top levels.
fn concat(
    plan: &GroupPlan<'_>,
    s: usize,
    chunks: Vec<Chunk>,
    vals: &mut Vec<IdxVec>,
    starts: &mut Vec<OffVec>,
) {
    let depth = plan.levels.len();
    let mut chunks = chunks;
    for l in s..depth - 1 {
        // Offsets of level l into level l+1.
        let total: u64 = chunks.iter().map(|c| c.vals[l - s].len() as u64).sum();
        let nodes: usize = chunks.iter().map(|c| c.starts[l - s].len() - 1).sum();
        let mut st64 = Vec::new();
        let mut st32 = Vec::new();
        let wide = total > u32::MAX as u64;
        let mut base = 0u64;
        if wide {
            st64.reserve(nodes + 1);
            st64.push(0)
        } else {
            st32.reserve(nodes + 1);
            st32.push(0)
        }
        for c in &mut chunks {
            let local = std::mem::take(&mut c.starts[l - s]);
            for &x in &local[1..] {
                if wide {
                    st64.push(base + x as u64)
                } else {
                    st32.push((base + x as u64) as u32)
                }
            }
            base += c.vals[l - s].len() as u64;
        }
        starts.push(if wide {
            OffVec::U64(st64)
        } else {
            OffVec::U32(st32)
        });
        let mut v = IdxVec::for_domain(plan.levels[l + 1].domain.len());
        if chunks.len() == 1 {
            v = std::mem::replace(&mut chunks[0].vals[l - s], IdxVec::U8(Vec::new()));
        } else {
            reserve(&mut v, total as usize);
            for c in &mut chunks {
                let part = std::mem::replace(&mut c.vals[l - s], IdxVec::U8(Vec::new()));
                v.extend_from(&part);
            }
        }
        vals.push(v);
    }
}

fn reserve(v: &mut IdxVec, n: usize) {
    match v {
        IdxVec::U8(x) => x.reserve_exact(n),
        IdxVec::U16(x) => x.reserve_exact(n),
        IdxVec::U32(x) => x.reserve_exact(n),
    }
}

/// Removes the nodes of levels `0..=s` that have no leaf below them; the levels below `s`
/// have none by construction, so a node of level `s` is alive iff it has children.
fn compact_top(levels: &mut [Level], s: usize) {
    let mut alive: Vec<Vec<bool>> = vec![Vec::new(); s + 1];
    for l in (0..=s).rev() {
        let n = levels[l].vals.len();
        alive[l] = (0..n)
            .map(|i| {
                let (a, b) = levels[l].children(i);
                if l == s {
                    b > a
                } else {
                    alive[l + 1][a..b].iter().any(|&x| x)
                }
            })
            .collect();
    }
    for l in 0..=s {
        let level = &levels[l];
        let mut vals = level.vals.empty_like();
        let mut st = vec![0u64];
        let mut kept = 0u64;
        for i in (0..level.vals.len()).filter(|&i| alive[l][i]) {
            vals.push(level.vals.get(i));
            let (a, b) = level.children(i);
            kept = if l == s {
                b as u64
            } else {
                kept + alive[l + 1][a..b].iter().filter(|&&x| x).count() as u64
            };
            st.push(kept);
        }
        levels[l] = Level {
            vals,
            starts: Some(OffVec::from_u64(st)),
        };
    }
}
