//! The plan of construction: parameters split into independent groups (connected
//! components of the constraint graph), each group's build order, and each constraint
//! placed on the level where the last parameter it reads is bound.

use super::builder::ErasedParam;
use crate::param::{Domain, IntExpr, IntOp, Pred, RuleKind};

/// A check applied once the level's parameter is bound.
pub(super) enum Check<'a> {
    Pred(Pred<'a>),
    /// An integer alias whose owner was bound earlier than one of its dependencies.
    Late {
        owner: usize,
        op: IntOp,
        rhs: IntExpr<'a>,
        to_i128: fn(u64) -> i128,
    },
}

pub(super) struct LevelPlan<'a> {
    pub(super) slot: usize,
    pub(super) domain: Domain,
    /// Integer values of a set domain, for the aliases.
    pub(super) set_ints: Vec<i128>,
    pub(super) gens: Vec<(IntOp, IntExpr<'a>)>,
    pub(super) checks: Vec<Check<'a>>,
    /// The other slots this level's rules read: its valid values depend on nothing else,
    /// so they are memoised by these slots' values.
    pub(super) key: Vec<usize>,
}

pub(super) struct GroupPlan<'a> {
    pub(super) slots: Vec<usize>,
    pub(super) levels: Vec<LevelPlan<'a>>,
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
