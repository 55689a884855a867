//! Growing a group's tree of valid prefixes: the top levels breadth first, then subtrees
//! depth first, concatenated level by level. Subtrees are built on the calling thread first,
//! and in parallel chunks on rayon's pool once the work done passes a threshold, so that
//! small spaces never pay for starting the pool.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rayon::prelude::*;

use super::memo::Memo;
use super::plan::GroupPlan;
use super::tree::{IdxVec, Level, OffVec};
use super::Group;

/// Per-level output of a subtree build.
pub(super) struct Chunk {
    /// Child offsets of each node on levels `s..depth-1` (local; starts with 0).
    starts: Vec<Vec<u32>>,
    /// Values on levels `s+1..depth`.
    vals: Vec<IdxVec>,
    /// Frontier nodes (level `s`) with no leaf below them.
    dead: usize,
    /// Work done: lists looked up plus nodes appended (the cost model of the switch to
    /// parallel construction).
    work: u64,
    /// Bytes of this chunk already counted in the budget, and the leaf count at which to
    /// count again.
    counted: u64,
    count_at: usize,
}

/// Nodes on the level where the build splits into subtrees.
pub(super) const SPLIT_NODES: usize = 512;

/// Work (see [`Chunk::work`]) done on the calling thread before the remaining subtrees go
/// to rayon's pool. Starting the pool costs 0.2-0.3 ms (two threads) and one unit of work
/// a few nanoseconds, so a construction that ends within about 10^5 units never pays for
/// the pool, and one that does not pays for it after at most about half a millisecond.
/// (Extrapolating the work left from the first subtrees misjudges skewed trees.)
pub(super) const PARALLEL_WORK: u64 = 1 << 17;
/// Leaves appended to a chunk between two updates of the memory budget.
const COUNT_EVERY: usize = 1 << 16;

/// The memory that the trees being built may take, shared by every chunk.
pub(super) struct Budget {
    limit: u64,
    used: AtomicU64,
    over: AtomicBool,
}

impl Budget {
    pub(super) fn new(limit: u64) -> Self {
        Budget {
            limit,
            used: AtomicU64::new(0),
            over: AtomicBool::new(false),
        }
    }
    /// Counts `bytes` more; false once the limit is passed (by anyone).
    fn add(&self, bytes: u64) -> bool {
        let used = self.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if used > self.limit {
            self.over.store(true, Ordering::Relaxed);
        }
        !self.over.load(Ordering::Relaxed)
    }
    fn ok(&self) -> bool {
        !self.over.load(Ordering::Relaxed)
    }
}

/// Why a group could not be built.
pub(super) enum Stop {
    /// The memory budget was exhausted.
    Memory,
}

impl Chunk {
    fn new(plan: &GroupPlan<'_>, s: usize) -> Self {
        let depth = plan.levels.len();
        Chunk {
            starts: (s..depth - 1).map(|_| vec![0u32]).collect(),
            vals: (s + 1..depth)
                .map(|l| IdxVec::for_domain(plan.levels[l].domain.len()))
                .collect(),
            dead: 0,
            work: 0,
            counted: 0,
            count_at: COUNT_EVERY,
        }
    }
    fn bytes(&self) -> u64 {
        let v: usize = self.vals.iter().map(IdxVec::bytes).sum();
        let s: usize = self.starts.iter().map(|s| s.capacity() * 4).sum();
        (v + s) as u64
    }
    /// Updates the budget with this chunk's growth; false once it is exhausted.
    fn count(&mut self, budget: &Budget) -> bool {
        // Child offsets are `u32` within a chunk: a chunk that nears that is too large too.
        if self
            .vals
            .iter()
            .any(|v| v.len() as u64 > u32::MAX as u64 - (1 << 28))
        {
            budget.over.store(true, Ordering::Relaxed);
            return false;
        }
        let now = self.bytes();
        let ok = budget.add(now.saturating_sub(self.counted));
        self.counted = self.counted.max(now);
        self.count_at = self.vals.last().map_or(0, IdxVec::len) + COUNT_EVERY;
        ok
    }
}

/// When construction splits and goes parallel (testing knobs; see [`SPLIT_NODES`] and
/// [`PARALLEL_WORK`]).
#[derive(Clone, Copy)]
pub(super) struct Split {
    pub(super) nodes: usize,
    pub(super) work: u64,
}

pub(super) fn build_group(
    plan: &GroupPlan<'_>,
    nslots: usize,
    split: Split,
    budget: &Budget,
) -> Result<Group, Stop> {
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
    let mut frontier: Vec<u32> = memos[0].valid(&plan.levels[0], &mut bound).to_vec();
    level0.extend_u32(&frontier);
    vals.push(level0);
    let mut s = 0;
    while s + 2 < depth && frontier.len() / (s + 1) < split.nodes && !frontier.is_empty() {
        let lp = &plan.levels[s + 1];
        let mut next = IdxVec::for_domain(lp.domain.len());
        let mut st = vec![0u64];
        let mut nf = Vec::new();
        for path in frontier.chunks(s + 1) {
            set_path(plan, path, &mut bound);
            let valid = memos[s + 1].valid(lp, &mut bound);
            dead += valid.is_empty() as usize;
            next.extend_u32(valid);
            for &c in valid {
                nf.extend_from_slice(path);
                nf.push(c);
            }
            st.push(next.len() as u64);
        }
        if !budget.add((next.bytes() + st.len() * 8 + nf.len() * 4) as u64) {
            return Err(Stop::Memory);
        }
        starts.push(OffVec::from_u64(st));
        vals.push(next);
        frontier = nf;
        s += 1;
    }
    if depth > 1 {
        let chunks = grow_subtrees(plan, s, &frontier, nslots, &mut memos, budget, split.work)?;
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

/// Builds the subtrees below the frontier (paths of level-`s` nodes): on this thread until
/// `parallel_work` is done, then the rest in parallel chunks (many, so that skewed
/// subtrees still spread over the threads). Chunks come back in frontier order.
#[allow(clippy::too_many_arguments)]
fn grow_subtrees(
    plan: &GroupPlan<'_>,
    s: usize,
    frontier: &[u32],
    nslots: usize,
    memos: &mut [Memo],
    budget: &Budget,
    parallel_work: u64,
) -> Result<Vec<Chunk>, Stop> {
    let nodes = frontier.len() / (s + 1);
    let mut bound = vec![0u64; nslots];
    let mut scratch: Vec<Vec<u32>> = vec![Vec::new(); plan.levels.len()];
    let mut first = Chunk::new(plan, s);
    let mut done = 0;
    while done < nodes {
        let path = &frontier[done * (s + 1)..(done + 1) * (s + 1)];
        grow_one(
            plan,
            s,
            path,
            &mut bound,
            memos,
            &mut scratch,
            &mut first,
            budget,
        );
        if !budget.ok() {
            return Err(Stop::Memory);
        }
        done += 1;
        if first.work >= parallel_work && nodes - done >= 2 {
            break;
        }
    }
    if !first.count(budget) {
        return Err(Stop::Memory);
    }
    let mut chunks = vec![first];
    if done < nodes {
        // Memos are per task (they only map key values to valid lists, so chunks share).
        let rest = &frontier[done * (s + 1)..];
        let per = (nodes - done)
            .div_ceil(rayon::current_num_threads() * 16)
            .max(1);
        let more: Vec<Chunk> = rest
            .par_chunks(per * (s + 1))
            .map_init(
                || {
                    let memos: Vec<Memo> = plan.levels.iter().map(Memo::new).collect();
                    let scratch: Vec<Vec<u32>> = vec![Vec::new(); plan.levels.len()];
                    (memos, scratch, vec![0u64; nslots])
                },
                |(memos, scratch, bound), part| {
                    let mut ch = Chunk::new(plan, s);
                    for path in part.chunks(s + 1) {
                        if !budget.ok() {
                            break;
                        }
                        grow_one(plan, s, path, bound, memos, scratch, &mut ch, budget);
                    }
                    ch.count(budget);
                    ch
                },
            )
            .collect();
        if !budget.ok() {
            return Err(Stop::Memory);
        }
        chunks.extend(more);
    }
    Ok(chunks)
}

/// Appends the subtree of one frontier node (its path, levels `0..=s`) to `ch`.
#[allow(clippy::too_many_arguments)]
fn grow_one(
    plan: &GroupPlan<'_>,
    s: usize,
    path: &[u32],
    bound: &mut [u64],
    memos: &mut [Memo],
    scratch: &mut [Vec<u32>],
    ch: &mut Chunk,
    budget: &Budget,
) {
    set_path(plan, path, bound);
    let alive = dfs(plan, s + 1, s, bound, memos, scratch, ch, budget);
    ch.dead += !alive as usize;
    ch.starts[0].push(ch.vals[0].len() as u32);
    // Two-level trees append their leaves here, one list per frontier node.
    if ch.vals.last().map_or(0, IdxVec::len) >= ch.count_at {
        ch.count(budget);
    }
}

/// Binds the values of a path (domain indices, level by level) in `bound`.
pub(super) fn set_path(plan: &GroupPlan<'_>, path: &[u32], bound: &mut [u64]) {
    for (l, &c) in path.iter().enumerate() {
        let lp = &plan.levels[l];
        bound[lp.slot] = lp.domain.raw(c);
    }
}

/// Appends the subtree below the current node (its prefix, levels `..l`, is in `bound`):
/// its children on level `l` that have at least one leaf below them, each after its own
/// subtree, so every level stays in breadth-first order and no node is left without leaves.
/// Returns whether anything was appended. Stops early once the budget is exhausted.
#[allow(clippy::too_many_arguments)]
fn dfs(
    plan: &GroupPlan<'_>,
    l: usize,
    s: usize,
    bound: &mut [u64],
    memos: &mut [Memo],
    scratch: &mut [Vec<u32>],
    ch: &mut Chunk,
    budget: &Budget,
) -> bool {
    let depth = plan.levels.len();
    let vi = l - s - 1;
    let lp = &plan.levels[l];
    ch.work += 1;
    if l + 1 == depth {
        let valid = memos[l].valid(lp, bound);
        ch.vals[vi].extend_u32(valid);
        ch.work += valid.len() as u64;
        return !valid.is_empty();
    }
    let mut any = false;
    if l + 2 == depth {
        // The children's children are leaves: a tight loop instead of one call per node.
        let (here_memo, below) = memos.split_at_mut(l + 1);
        let list = here_memo[l].valid(lp, bound);
        let (vals, leaves) = ch.vals.split_at_mut(vi + 1);
        let (here, leaves) = (&mut vals[vi], &mut leaves[0]);
        let starts = &mut ch.starts[vi + 1];
        let (memo, leaf_lp) = (&mut below[0], &plan.levels[l + 1]);
        let before = leaves.len();
        if plan.reads_parent[l + 1] {
            for &c in list {
                bound[lp.slot] = lp.domain.raw(c);
                let valid = memo.valid(leaf_lp, bound);
                if !valid.is_empty() {
                    leaves.extend_u32(valid);
                    here.push(c);
                    starts.push(leaves.len() as u32);
                    any = true;
                }
            }
        } else if let Some(&c0) = list.first() {
            // The leaves do not depend on this level's value: one list for every sibling.
            bound[lp.slot] = lp.domain.raw(c0);
            let valid = memo.valid(leaf_lp, bound);
            if !valid.is_empty() {
                for &c in list {
                    leaves.extend_u32(valid);
                    here.push(c);
                    starts.push(leaves.len() as u32);
                }
                any = true;
            }
        }
        ch.work += (list.len() + leaves.len() - before) as u64;
        if leaves.len() >= ch.count_at && !ch.count(budget) {
            return any;
        }
    } else {
        let mut list = std::mem::take(&mut scratch[l]);
        list.clear();
        list.extend_from_slice(memos[l].valid(lp, bound));
        for &c in &list {
            bound[lp.slot] = lp.domain.raw(c);
            if dfs(plan, l + 1, s, bound, memos, scratch, ch, budget) {
                ch.vals[vi].push(c);
                let next = ch.vals[vi + 1].len() as u32;
                ch.starts[vi + 1].push(next);
                any = true;
            }
            if !budget.ok() {
                break;
            }
        }
        scratch[l] = list;
    }
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
