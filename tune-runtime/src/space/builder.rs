//! [`SpaceBuilder`]: the run-time declaration of a space (what the macros expand to), its
//! validation, and the entry point of construction.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use rayon::prelude::*;

use super::grow::{build_group, SPLIT_NODES};
use super::plan::plan_groups;
use super::{Group, ParamInfo, Space};
use crate::param::{Bound, Domain, Param, ParamType, Rule, RuleKind};
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

pub(super) struct ErasedParam<'a> {
    pub(super) info: ParamInfo,
    pub(super) rules: Vec<Rule<'a>>,
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
