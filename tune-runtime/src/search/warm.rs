//! Warm start from what is known about a kernel elsewhere (other devices, other inputs).

use super::Technique;
use crate::space::{Config, Space};

/// Measures the configurations of a prior first, best first, then hands over to another
/// technique, which is told every result (a local search then climbs from the best of
/// them).
///
/// The prior is a ranking of configurations, for example the configurations that did best
/// on other GPUs ([`crate::simulate::prior`] ranks them from recordings). Unlike
/// [`Tuner::start_from`](crate::tuner::Tuner::start_from), how many prior configurations
/// are tried depends on the budget: a tenth of it, at least `min` (default 5) and at most
/// `max` (default 10), so that short runs spend most of their budget on the prior.
pub struct WarmStart {
    inner: Box<dyn Technique>,
    prior: Vec<Config>,
    queue: Vec<u128>,
    min: usize,
    max: usize,
    diversity: usize,
    budget: Option<u64>,
}

impl std::fmt::Debug for WarmStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmStart")
            .field("inner", &self.inner.name())
            .field("prior", &self.prior.len())
            .finish()
    }
}

impl WarmStart {
    /// `inner` after the best of `prior` (ranked best first).
    pub fn new(inner: Box<dyn Technique>, prior: Vec<Config>) -> Self {
        WarmStart {
            inner,
            prior,
            queue: Vec::new(),
            min: 5,
            max: 10,
            diversity: 0,
            budget: None,
        }
    }
    /// Each prior configuration tried differs from every earlier one in at least this
    /// many parameters (default 0: simply the best first), so that the tries spread over
    /// several good regions of the source rather than one.
    #[must_use]
    pub fn diversity(mut self, parameters: usize) -> Self {
        self.diversity = parameters;
        self
    }
    /// Bounds on the number of prior configurations tried.
    #[must_use]
    pub fn tries(mut self, min: usize, max: usize) -> Self {
        self.min = min;
        self.max = max.max(min);
        self
    }
}

impl Technique for WarmStart {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn budget(&mut self, evaluations: u64) {
        self.budget = Some(evaluations);
        self.inner.budget(evaluations);
    }
    fn init(&mut self, space: &Space, seed: u64) {
        self.inner.init(space, seed);
        let n = self
            .budget
            .map_or(self.max, |b| (b as usize / 10).clamp(self.min, self.max));
        let mut q: Vec<u128> = Vec::new();
        let mut picked: Vec<&Config> = Vec::new();
        for c in &self.prior {
            if q.len() >= n {
                break;
            }
            let differs = |p: &&Config| {
                p.raw().iter().zip(c.raw()).filter(|(a, b)| a != b).count() >= self.diversity
            };
            if !picked.iter().all(differs) {
                continue;
            }
            if let Some(i) = space.index_of(c) {
                if !q.contains(&i) {
                    q.push(i);
                    picked.push(c);
                }
            }
        }
        q.reverse();
        self.queue = q;
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            match self.queue.pop() {
                Some(i) => out.push(i),
                None => break,
            }
        }
        if out.len() < n {
            out.extend(self.inner.ask(space, n - out.len()));
        }
        out
    }
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        self.inner.tell(space, index, cost)
    }
}
