//! [`SpaceBuilder`]: the run-time declaration of a space (what the macros expand to), its
//! validation, and the entry point of construction.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use super::diagnose::why_empty;
use super::grow::{build_group, Budget, Split, Stop, PARALLEL_WORK, SPLIT_NODES};
use super::plan::{plan_groups, GroupPlan};
use super::{Group, ParamInfo, Space};
use crate::error::panic_message;
use crate::param::{Bound, Domain, Param, ParamType, Pred, Rule, RuleKind};
use crate::{Error, Result};

/// Builds a [`Space`] from parameters; what `tune::space!` and `#[tunable]` expand to.
///
/// Parameters get slots in the order they are added; constraints refer to other parameters
/// by slot. A constraint may be given with the last parameter it reads
/// ([`Param::constraint`]) or on its own, anywhere ([`SpaceBuilder::constraint`]): the
/// builder places it on the last parameter it reads, with the same result.
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
pub struct SpaceBuilder<'a> {
    params: Vec<ErasedParam<'a>>,
    /// Stand-alone constraints, placed when the space is built.
    loose: Vec<Loose<'a>>,
    errors: Vec<Error>,
    split_nodes: Option<usize>,
    parallel_work: Option<u64>,
    memory_limit: u64,
    allow_empty: bool,
}

impl Default for SpaceBuilder<'_> {
    fn default() -> Self {
        SpaceBuilder {
            params: Vec::new(),
            loose: Vec::new(),
            errors: Vec::new(),
            split_nodes: None,
            parallel_work: None,
            memory_limit: DEFAULT_MEMORY_LIMIT,
            allow_empty: false,
        }
    }
}

/// The default of [`SpaceBuilder::memory_limit`]: 4 GiB, several billion valid
/// configurations (far more than any tuning run measures), yet well within a workstation.
pub const DEFAULT_MEMORY_LIMIT: u64 = 4 << 30;

pub(super) struct ErasedParam<'a> {
    pub(super) info: ParamInfo,
    pub(super) rules: Vec<Rule<'a>>,
    /// Its values were invalid (already reported).
    invalid: bool,
}

struct Loose<'a> {
    reads: Vec<usize>,
    pred: Pred<'a>,
    label: Option<Arc<str>>,
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
        let invalid = domain.is_err();
        let domain = domain.unwrap_or_else(|e| {
            self.errors.push(e);
            Domain::Set(Vec::new())
        });
        let info = ParamInfo::new::<T>(name, domain, default.map(T::to_raw));
        self.params.push(ErasedParam {
            info,
            rules,
            invalid,
        });
        self
    }

    /// A stand-alone constraint: `pred` must hold for the parameters in slots `reads`, and
    /// may read only those. It may be given before the parameters it reads are added; the
    /// builder checks it as soon as the last of them is bound, exactly as if it had been
    /// given to that parameter with [`Param::constraint`].
    pub fn constraint(
        mut self,
        reads: &[usize],
        pred: impl Fn(&Bound<'_>) -> bool + Send + Sync + 'a,
    ) -> Self {
        self.loose.push(Loose {
            reads: reads.to_vec(),
            pred: Arc::new(pred),
            label: None,
        });
        self
    }

    /// Names the stand-alone constraint added last (e.g. with the expression as written),
    /// for error messages.
    pub fn label(mut self, text: impl Into<String>) -> Self {
        if let Some(c) = self.loose.last_mut() {
            c.label = Some(Arc::from(text.into()));
        }
        self
    }

    /// The most memory the trees of valid configurations may take, in bytes (default
    /// [`DEFAULT_MEMORY_LIMIT`]). Construction stops with [`Error::SpaceTooLarge`] when it
    /// reaches the limit, before the machine runs out of memory.
    pub fn memory_limit(mut self, bytes: u64) -> Self {
        self.memory_limit = bytes;
        self
    }

    /// Returns a space without any valid configuration instead of [`Error::EmptySpace`],
    /// for code that handles an empty space itself (e.g. a search technique's tests).
    pub fn allow_empty(mut self) -> Self {
        self.allow_empty = true;
        self
    }

    /// Testing knob: the number of nodes at which construction splits into subtrees
    /// (default 512). Small values exercise the subtree path on small spaces.
    #[doc(hidden)]
    pub fn __split_nodes(mut self, n: usize) -> Self {
        self.split_nodes = Some(n.max(1));
        self
    }

    /// Testing knob: the work done on the calling thread before the rest of a group goes
    /// to the thread pool (default about half a millisecond's). 0 exercises the parallel
    /// path on small spaces.
    #[doc(hidden)]
    pub fn __parallel_work(mut self, work: u64) -> Self {
        self.parallel_work = Some(work);
        self
    }

    /// Builds the space.
    ///
    /// # Errors
    /// Every problem found, together ([`Error::Several`] when there is more than one): an
    /// invalid declaration (duplicate names, a constraint on an undeclared slot or that
    /// reads no parameter, an impossible range), a constraint that reads a slot it did not
    /// declare ([`Error::UndeclaredRead`]), no valid configuration at all
    /// ([`Error::EmptySpace`], naming the constraints that reject everything), trees larger
    /// than [`SpaceBuilder::memory_limit`] ([`Error::SpaceTooLarge`]), more than 2^128
    /// configurations, or a constraint that panicked.
    pub fn build(self) -> Result<Space> {
        let SpaceBuilder {
            mut params,
            loose,
            mut errors,
            split_nodes,
            parallel_work,
            memory_limit,
            allow_empty,
        } = self;
        place(&mut params, loose, &mut errors);
        validate(&params, allow_empty, &mut errors);
        if !errors.is_empty() {
            return Err(together(errors));
        }
        let split = Split {
            nodes: split_nodes.unwrap_or(SPLIT_NODES),
            work: parallel_work.unwrap_or(PARALLEL_WORK),
        };
        let plans = plan_groups(&params);
        let infos: Arc<[ParamInfo]> = params.into_iter().map(|p| p.info).collect();
        let budget = Budget::new(memory_limit);
        // Groups on this thread, one after the other: a large group goes parallel inside.
        let built = catch_unwind(AssertUnwindSafe(|| {
            plans
                .iter()
                .map(|g| build_group(g, infos.len(), split, &budget))
                .collect::<Vec<_>>()
        }));
        let built = match built {
            Ok(r) => r,
            Err(payload) => return Err(Error::ConstraintPanicked(panic_message(&*payload))),
        };
        let mut groups: Vec<Group> = Vec::with_capacity(built.len());
        for (plan, g) in plans.iter().zip(built) {
            strays(plan, &infos, &mut errors);
            match g {
                Ok(g) if g.count() == 0 && !allow_empty => errors.push(why_empty(plan, &infos)),
                Ok(g) => groups.push(g),
                Err(Stop::Memory) => errors.push(Error::SpaceTooLarge {
                    params: names(plan, &infos),
                    limit_bytes: memory_limit,
                }),
            }
        }
        if !errors.is_empty() {
            // A stray read makes the other errors of its group unreliable: report it alone.
            let (stray, other): (Vec<Error>, Vec<Error>) = errors
                .into_iter()
                .partition(|e| matches!(e, Error::UndeclaredRead { .. }));
            return Err(together(if stray.is_empty() { other } else { stray }));
        }
        Space::from_groups(infos, groups)
    }
}

/// One error as itself, several as [`Error::Several`].
fn together(mut errors: Vec<Error>) -> Error {
    if errors.len() == 1 {
        errors.remove(0)
    } else {
        Error::Several(errors)
    }
}

fn names(plan: &GroupPlan<'_>, infos: &[ParamInfo]) -> Vec<String> {
    plan.slots.iter().map(|&s| infos[s].name.clone()).collect()
}

/// Every constraint of the group that read a slot it did not declare.
fn strays(plan: &GroupPlan<'_>, infos: &[ParamInfo], errors: &mut Vec<Error>) {
    for access in plan.levels.iter().flat_map(|l| l.accesses()) {
        if let Some(slot) = access.stray() {
            errors.push(Error::UndeclaredRead {
                constraint: access.label.clone(),
                read: infos
                    .get(slot)
                    .map_or_else(|| format!("slot {slot}"), |p| p.name.clone()),
                declared: access
                    .declared
                    .iter()
                    .map(|&d| infos[d].name.clone())
                    .collect(),
            });
        }
    }
}

/// Gives each stand-alone constraint to the last parameter it reads.
fn place<'a>(params: &mut [ErasedParam<'a>], loose: Vec<Loose<'a>>, errors: &mut Vec<Error>) {
    let n = params.len();
    for (k, c) in loose.into_iter().enumerate() {
        let what = match &c.label {
            Some(l) => format!("constraint `{l}`"),
            None => format!("stand-alone constraint #{}", k + 1),
        };
        match c.reads.iter().max() {
            None => errors.push(Error::ReadsNoParam { constraint: what }),
            Some(&m) if m >= n => errors.push(Error::UnknownSlot {
                constraint: what,
                slot: m,
                declared: n,
            }),
            Some(&m) => params[m].rules.push(Rule {
                deps: c.reads,
                kind: RuleKind::Pred(c.pred),
                label: c.label,
            }),
        }
    }
}

fn validate(params: &[ErasedParam<'_>], allow_empty: bool, errors: &mut Vec<Error>) {
    let n = params.len();
    let mut names: Vec<&str> = params.iter().map(|p| p.info.name.as_str()).collect();
    names.sort_unstable();
    for w in names.windows(2) {
        if w[0] == w[1] {
            errors.push(Error::DuplicateParam {
                name: w[0].to_string(),
            });
        }
    }
    for (slot, p) in params.iter().enumerate() {
        if p.info.domain.len() == 0 && !p.invalid && !allow_empty {
            errors.push(Error::EmptySpace {
                params: vec![p.info.name.clone()],
                at: p.info.name.clone(),
                constraints: Vec::new(),
            });
        }
        for r in &p.rules {
            for &d in &r.deps {
                if d >= n {
                    errors.push(Error::UnknownSlot {
                        constraint: format!("a constraint of `{}`", p.info.name),
                        slot: d,
                        declared: n,
                    });
                } else if d == slot && matches!(r.kind, RuleKind::Int { .. }) {
                    errors.push(Error::AliasReadsItself {
                        param: p.info.name.clone(),
                    });
                }
            }
        }
    }
}
