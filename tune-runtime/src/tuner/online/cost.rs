//! The cost of one online call of a `#[tunable(cost = value)]` function, from its result.

use std::time::Duration;

use crate::cost::Cost;
use crate::evaluate::Measured;

/// What a `#[tunable(online)]` function's result says its call cost: its cost's scalar as
/// seconds (`None` for a failure or a negative scalar; the call's wall time counts then).
/// Not public API: the macro's expansion uses it.
#[doc(hidden)]
pub trait OnlineCost {
    /// The cost.
    fn online_cost(&self) -> Option<Duration>;
}

fn seconds(s: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(s).ok()
}

impl<C: Cost> OnlineCost for C {
    fn online_cost(&self) -> Option<Duration> {
        seconds(self.scalar())
    }
}

impl<C: Cost> OnlineCost for Measured<C> {
    fn online_cost(&self) -> Option<Duration> {
        seconds(self.cost.scalar())
    }
}

impl<C: Cost, E> OnlineCost for Result<C, E> {
    fn online_cost(&self) -> Option<Duration> {
        self.as_ref().ok().and_then(|c| seconds(c.scalar()))
    }
}

impl<C: Cost, E> OnlineCost for Result<Measured<C>, E> {
    fn online_cost(&self) -> Option<Duration> {
        self.as_ref().ok().and_then(|m| seconds(m.cost.scalar()))
    }
}
