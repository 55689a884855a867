//! Growing a group's tree of valid prefixes: the top levels breadth first, then subtrees
//! depth first (in parallel chunks when the frontier is wide), concatenated level by level.

use rayon::prelude::*;

use super::memo::Memo;
use super::plan::GroupPlan;
use super::tree::{IdxVec, Level, OffVec};
use super::Group;
use crate::Result;

/// Per-level output of a subtree build.
pub(super) struct Chunk {
    /// Child offsets of each node on levels `s..depth-1` (local; starts with 0).
    starts: Vec<Vec<u32>>,
    /// Values on levels `s+1..depth`.
    vals: Vec<IdxVec>,
    /// Frontier nodes (level `s`) with no leaf below them.
    dead: usize,
}

/// Nodes on the level where the build splits into parallel subtrees.
pub(super) const SPLIT_NODES: usize = 512;

pub(super) fn build_group(plan: &GroupPlan<'_>, nslots: usize, split: usize) -> Result<Group> {
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
