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

    /// Builds the space.
    ///
    /// # Errors
    /// An invalid declaration (duplicate names, a constraint on an undeclared slot, an
    /// impossible range), a space with more than 2^128 configurations, or a constraint that
    /// panicked.
    pub fn build(self) -> Result<Space> {
        let SpaceBuilder { params, mut errors } = self;
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
                .map(|g| build_group(g, nslots))
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
        .map(|slots| {
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
                    }
                })
                .collect();
            // A rule is applied at the level of the last parameter it reads.
            let level_of = |slot: usize| slots.iter().position(|&s| s == slot).unwrap_or(0);
            for &owner in &slots {
                for r in &params[owner].rules {
                    let last = r.deps.iter().copied().chain([owner]).max().unwrap_or(owner);
                    let lvl = &mut levels[level_of(last)];
                    match &r.kind {
                        RuleKind::Int { op, rhs } if last == owner => {
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
            GroupPlan { slots, levels }
        })
        .collect()
}

impl LevelPlan<'_> {
    /// Appends to `out` the domain indices, ascending, that satisfy this level's aliases.
    fn candidates(&self, bound: &[u64], out: &mut Vec<u32>) {
        out.clear();
        let b = Bound::new(bound);
        let mut lo_v = i128::MIN;
        let mut hi_v = i128::MAX;
        let mut div: Option<i128> = None; // smallest non-zero dividend
        let mut mult: Option<i128> = None; // largest modulus
        for (op, rhs) in &self.gens {
            let Some(r) = rhs(&b) else { return };
            match op {
                IntOp::AtMost => hi_v = hi_v.min(r),
                IntOp::LessThan => hi_v = hi_v.min(r.saturating_sub(1)),
                IntOp::AtLeast => lo_v = lo_v.max(r),
                IntOp::GreaterThan => lo_v = lo_v.max(r.saturating_add(1)),
                IntOp::Equal => {
                    lo_v = lo_v.max(r);
                    hi_v = hi_v.min(r);
                }
                IntOp::Divides if r != 0 => {
                    if div.is_none_or(|d| r.abs() < d) {
                        div = Some(r.abs());
                    }
                }
                IntOp::MultipleOf => {
                    if r == 0 {
                        return;
                    }
                    if mult.is_none_or(|m| r.abs() > m) {
                        mult = Some(r.abs());
                    }
                }
                IntOp::Divides | IntOp::Unequal => {}
            }
        }
        if lo_v > hi_v {
            return;
        }
        let ok = |v: i128| {
            self.gens
                .iter()
                .all(|(op, rhs)| rhs(&b).is_some_and(|r| op.holds(v, r)))
        };
        let simple = self.gens.iter().all(|(op, _)| {
            matches!(
                op,
                IntOp::AtMost
                    | IntOp::LessThan
                    | IntOp::AtLeast
                    | IntOp::GreaterThan
                    | IntOp::Equal
            )
        });
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
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut i = 1;
    while i * i <= d {
        if d % i == 0 {
            small.push(i);
            if i * i != d {
                large.push(d / i);
            }
        }
        i += 1;
    }
    let ascending = || small.iter().copied().chain(large.iter().rev().copied());
    if a < 0 {
        let neg: Vec<i128> = ascending().map(|v| -v).collect();
        neg.into_iter()
            .rev()
            .filter(|&v| v >= a && v <= z)
            .for_each(&mut f);
    }
    ascending().filter(|&v| v >= a && v <= z).for_each(f);
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
    dead: usize,
}

/// Nodes on the level where the build splits into parallel subtrees.
const SPLIT_NODES: usize = 512;

fn build_group(plan: &GroupPlan<'_>, nslots: usize) -> Result<Group> {
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
    let mut cands = Vec::new();
    // Top levels, breadth first, until the frontier is wide enough to split.
    let mut vals: Vec<IdxVec> = Vec::with_capacity(depth);
    let mut starts: Vec<OffVec> = Vec::with_capacity(depth);
    let mut frontier: Vec<Vec<u32>> = Vec::new();
    let mut level0 = IdxVec::for_domain(plan.levels[0].domain.len());
    let mut dead = 0usize;
    expand_node(plan, 0, &mut bound, &mut cands, |c| {
        level0.push(c);
        frontier.push(vec![c]);
    });
    vals.push(level0);
    let mut s = 0;
    while s + 2 < depth && frontier.len() < SPLIT_NODES && !frontier.is_empty() {
        let mut next = IdxVec::for_domain(plan.levels[s + 1].domain.len());
        let mut st = vec![0u64];
        let mut nf = Vec::new();
        for path in &frontier {
            set_path(plan, path, &mut bound);
            let before = next.len();
            expand_node(plan, s + 1, &mut bound, &mut cands, |c| {
                next.push(c);
                let mut p = path.clone();
                p.push(c);
                nf.push(p);
            });
            dead += (next.len() == before) as usize;
            st.push(next.len() as u64);
        }
        starts.push(OffVec::from_u64(st));
        vals.push(next);
        frontier = nf;
        s += 1;
    }
    if depth > 1 {
        // Subtrees below level `s`, in parallel chunks.
        let per = frontier
            .len()
            .div_ceil(rayon::current_num_threads() * 16)
            .max(1);
        let chunks: Vec<Chunk> = frontier
            .par_chunks(per)
            .map(|nodes| {
                let mut bound = vec![0u64; nslots];
                let mut scratch: Vec<Vec<u32>> = vec![Vec::new(); depth];
                let mut ch = Chunk {
                    starts: (s..depth - 1).map(|_| vec![0u32]).collect(),
                    vals: (s + 1..depth)
                        .map(|l| IdxVec::for_domain(plan.levels[l].domain.len()))
                        .collect(),
                    dead: 0,
                };
                for path in nodes {
                    set_path(plan, path, &mut bound);
                    dfs(plan, s + 1, s, &mut bound, &mut scratch, &mut ch);
                }
                ch
            })
            .collect();
        dead += chunks.iter().map(|c| c.dead).sum::<usize>();
        concat(plan, s, chunks, &mut vals, &mut starts)?;
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
        levels = compact(levels);
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

/// Calls `push` with every valid value (domain index) of level `l` under the bound prefix.
#[inline]
fn expand_node(
    plan: &GroupPlan<'_>,
    l: usize,
    bound: &mut [u64],
    cands: &mut Vec<u32>,
    mut push: impl FnMut(u32),
) {
    let lp = &plan.levels[l];
    lp.candidates(bound, cands);
    if lp.checks.is_empty() {
        cands.iter().for_each(|&c| push(c));
        return;
    }
    for &c in cands.iter() {
        bound[lp.slot] = lp.domain.raw(c);
        if passes(&lp.checks, bound) {
            push(c);
        }
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

/// Builds the children of the current node (its prefix is in `bound`) on level `l`, then
/// recurses into each, so that every level stays in breadth-first order.
fn dfs(
    plan: &GroupPlan<'_>,
    l: usize,
    s: usize,
    bound: &mut [u64],
    scratch: &mut [Vec<u32>],
    ch: &mut Chunk,
) {
    let depth = plan.levels.len();
    let vi = l - s - 1;
    let begin = ch.vals[vi].len();
    let mut cands = std::mem::take(&mut scratch[l]);
    {
        let out = &mut ch.vals[vi];
        expand_node(plan, l, bound, &mut cands, |c| out.push(c));
    }
    scratch[l] = cands;
    let end = ch.vals[vi].len();
    ch.starts[l - 1 - s].push(end as u32);
    if l + 1 < depth {
        ch.dead += (begin == end) as usize;
        let lp = &plan.levels[l];
        for i in begin..end {
            bound[lp.slot] = lp.domain.raw(ch.vals[vi].get(i));
            dfs(plan, l + 1, s, bound, scratch, ch);
        }
    }
}

/// Appends the chunks' levels below `s` to the top levels.
fn concat(
    plan: &GroupPlan<'_>,
    s: usize,
    chunks: Vec<Chunk>,
    vals: &mut Vec<IdxVec>,
    starts: &mut Vec<OffVec>,
) -> Result<()> {
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
    Ok(())
}

fn reserve(v: &mut IdxVec, n: usize) {
    match v {
        IdxVec::U8(x) => x.reserve_exact(n),
        IdxVec::U16(x) => x.reserve_exact(n),
        IdxVec::U32(x) => x.reserve_exact(n),
    }
}

/// Removes internal nodes that have no leaf below them.
fn compact(levels: Vec<Level>) -> Vec<Level> {
    let depth = levels.len();
    // alive[l][i]: node i of level l has a leaf below it.
    let mut alive: Vec<Vec<bool>> = vec![Vec::new(); depth];
    alive[depth - 1] = vec![true; levels[depth - 1].vals.len()];
    for l in (0..depth - 1).rev() {
        let n = levels[l].vals.len();
        alive[l] = (0..n)
            .map(|i| {
                let (a, b) = levels[l].children(i);
                alive[l + 1][a..b].iter().any(|&x| x)
            })
            .collect();
    }
    let mut out = Vec::with_capacity(depth);
    for (l, level) in levels.iter().enumerate() {
        let mut vals = IdxVec::for_domain(match &level.vals {
            IdxVec::U8(_) => 1 << 8,
            IdxVec::U16(_) => 1 << 16,
            IdxVec::U32(_) => 1 << 32,
        });
        let mut st = vec![0u64];
        let mut kept_children = 0u64;
        for i in 0..level.vals.len() {
            if !alive[l][i] {
                continue;
            }
            vals.push(level.vals.get(i));
            if l + 1 < depth {
                let (a, b) = level.children(i);
                kept_children += alive[l + 1][a..b].iter().filter(|&&x| x).count() as u64;
                st.push(kept_children);
            }
        }
        let starts = (l + 1 < depth).then(|| OffVec::from_u64(st));
        out.push(Level { vals, starts });
    }
    out
}
