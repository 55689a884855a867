//! The plan of construction: parameters split into independent groups (connected
//! components of the constraint graph), each group's build order, and each constraint
//! placed on the level where the last parameter it reads is bound.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::builder::ErasedParam;
use crate::param::{Bound, Domain, IntExpr, IntOp, Pred, Rule, RuleKind};

/// What one rule may read while the space is built, and how messages name it.
pub(super) struct Access {
    /// Bit set of the slots it declared (and its owner's, unless it is an alias's
    /// right-hand side).
    readable: Vec<u64>,
    /// The first slot it read without declaring it, plus one (0: none).
    stray: AtomicUsize,
    /// The slots it declared.
    pub(super) declared: Vec<usize>,
    /// The label given to it, or its parameter and position.
    pub(super) label: String,
}

impl Access {
    fn new(rule: &Rule<'_>, owner: usize, index: usize, owner_name: &str) -> Self {
        let mut declared = rule.deps.clone();
        let is_alias = matches!(rule.kind, RuleKind::Int { .. });
        if !is_alias {
            declared.push(owner);
        }
        declared.sort_unstable();
        declared.dedup();
        let mut readable = vec![0u64; declared.last().map_or(0, |&m| m / 64 + 1)];
        for &d in &declared {
            readable[d / 64] |= 1 << (d % 64);
        }
        if readable.is_empty() {
            // Reads nothing: a non-empty set with no bit, so that every read is stray.
            readable.push(0);
        }
        let label = match (&rule.label, &rule.kind) {
            (Some(l), _) => format!("`{l}`"),
            (None, RuleKind::Int { op, .. }) => format!("`{}(..)` on `{owner_name}`", op.name()),
            (None, RuleKind::Pred(_)) => format!("{} of `{owner_name}`", ordinal(index)),
        };
        Access {
            readable,
            stray: AtomicUsize::new(0),
            declared,
            label,
        }
    }
    /// The bound slots as this rule may read them.
    #[inline]
    pub(super) fn bound<'b>(&'b self, raw: &'b [u64]) -> Bound<'b> {
        Bound::restricted(raw, &self.readable, &self.stray)
    }
    /// The slot it read without declaring it, if any.
    pub(super) fn stray(&self) -> Option<usize> {
        self.stray.load(Ordering::Relaxed).checked_sub(1)
    }
}

fn ordinal(index: usize) -> String {
    format!("constraint #{}", index + 1)
}

/// An integer alias of the level's own parameter: it generates candidates.
pub(super) struct Gen<'a> {
    pub(super) op: IntOp,
    pub(super) rhs: IntExpr<'a>,
    pub(super) access: Access,
}

/// A check applied once the level's parameter is bound.
pub(super) enum Check<'a> {
    Pred {
        pred: Pred<'a>,
        access: Access,
    },
    /// An integer alias whose owner was bound earlier than one of its dependencies.
    Late {
        owner: usize,
        op: IntOp,
        rhs: IntExpr<'a>,
        to_i128: fn(u64) -> i128,
        access: Access,
    },
}

impl Check<'_> {
    pub(super) fn access(&self) -> &Access {
        match self {
            Check::Pred { access, .. } | Check::Late { access, .. } => access,
        }
    }
    /// Whether the check holds for the bound slots.
    #[inline]
    pub(super) fn holds(&self, bound: &[u64]) -> bool {
        match self {
            Check::Pred { pred, access } => pred(&access.bound(bound)),
            Check::Late {
                owner,
                op,
                rhs,
                to_i128,
                access,
            } => rhs(&access.bound(bound)).is_some_and(|r| op.holds(to_i128(bound[*owner]), r)),
        }
    }
}

pub(super) struct LevelPlan<'a> {
    pub(super) slot: usize,
    pub(super) domain: Domain,
    /// Integer values of a set domain, for the aliases.
    pub(super) set_ints: Vec<i128>,
    pub(super) gens: Vec<Gen<'a>>,
    pub(super) checks: Vec<Check<'a>>,
    /// The other slots this level's rules read: its valid values depend on nothing else,
    /// so they are memoised by these slots' values.
    pub(super) key: Vec<usize>,
    /// When several checks read different subsets of `key`: each check's own key (with
    /// the aliases' slots), so that each check's passing values are memoised on their own
    /// (their keys repeat far more often than the whole key) and intersected. Empty when
    /// the level is not split.
    pub(super) split: Vec<Vec<usize>>,
}

impl LevelPlan<'_> {
    /// Every rule of the level, for messages.
    pub(super) fn accesses(&self) -> impl Iterator<Item = &Access> {
        self.gens
            .iter()
            .map(|g| &g.access)
            .chain(self.checks.iter().map(Check::access))
    }
}

pub(super) struct GroupPlan<'a> {
    pub(super) slots: Vec<usize>,
    pub(super) levels: Vec<LevelPlan<'a>>,
    /// Whether level `l`'s rules read the parameter of level `l - 1`; if not, siblings on
    /// level `l - 1` share their children's valid values.
    pub(super) reads_parent: Vec<bool>,
}

pub(super) fn plan_groups<'a>(params: &[ErasedParam<'a>]) -> Vec<GroupPlan<'a>> {
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
                        split: Vec::new(),
                    }
                })
                .collect();
            // A rule is applied at the level of the last parameter it reads.
            let mut level_of = vec![0usize; n];
            for (l, &s) in slots.iter().enumerate() {
                level_of[s] = l;
            }
            for &owner in &slots {
                let owner_name = params[owner].info.name();
                for (k, r) in params[owner].rules.iter().enumerate() {
                    let access = Access::new(r, owner, k, owner_name);
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
                        RuleKind::Int { op, rhs } if at == level_of[owner] => lvl.gens.push(Gen {
                            op: *op,
                            rhs: rhs.clone(),
                            access,
                        }),
                        RuleKind::Int { op, rhs } => lvl.checks.push(Check::Late {
                            owner,
                            op: *op,
                            rhs: rhs.clone(),
                            to_i128: params[owner].info.to_i128,
                            access,
                        }),
                        RuleKind::Pred(p) => lvl.checks.push(Check::Pred {
                            pred: p.clone(),
                            access,
                        }),
                    }
                }
            }
            for lvl in &mut levels {
                lvl.key.sort_unstable();
                lvl.key.dedup();
                // Deepest first: the slots bound last change most often, so a comparison
                // with a remembered key fails fast.
                lvl.key
                    .sort_unstable_by_key(|&s| std::cmp::Reverse(level_of[s]));
                lvl.split = check_keys(lvl, &level_of);
            }
            let reads_parent = (0..levels.len())
                .map(|l| l > 0 && levels[l].key.contains(&levels[l - 1].slot))
                .collect();
            GroupPlan {
                slots,
                levels,
                reads_parent,
            }
        })
        .collect()
}

/// The keys of a level's checks, if memoising them one by one is worth it: two checks or
/// more, each reading fewer slots than the level (a check that reads them all repeats its
/// key no more often than the level does).
fn check_keys(lvl: &LevelPlan<'_>, level_of: &[usize]) -> Vec<Vec<usize>> {
    if lvl.checks.len() < 2 {
        return Vec::new();
    }
    let gens: Vec<usize> = lvl
        .gens
        .iter()
        .flat_map(|g| g.access.declared.iter().copied())
        .collect();
    let keys: Vec<Vec<usize>> = lvl
        .checks
        .iter()
        .map(|c| {
            let mut k: Vec<usize> = c.access().declared.clone();
            if let Check::Late { owner, .. } = c {
                k.push(*owner);
            }
            k.extend(&gens);
            k.retain(|&s| s != lvl.slot);
            k.sort_unstable();
            k.dedup();
            k.sort_unstable_by_key(|&s| std::cmp::Reverse(level_of[s]));
            k
        })
        .collect();
    if keys.iter().all(|k| k.len() < lvl.key.len()) {
        keys
    } else {
        Vec::new()
    }
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
