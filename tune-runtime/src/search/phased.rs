//! Two techniques one after the other: a model-guided start, then a local ensemble.

use super::{Bandit, Bayes, Technique};
use crate::space::Space;

/// Runs `first` for the first part of the budget, then `second`, which is told every
/// result of the first phase (so that its local searches start from the best found).
///
/// The switch comes after `fraction` of the budget the tuner announces
/// ([`Technique::budget`]), kept between `min` and `max` evaluations; without a budget,
/// after `max`. With [`Phased::stall`] it comes earlier where the first technique stalls:
/// no better cost for a window of evaluations. [`Phased::new`] is Bayesian optimisation (which pays at small budgets)
/// followed by the [`Bandit`] ensemble of local searches (which pays at large ones).
pub struct Phased {
    first: Box<dyn Technique>,
    second: Box<dyn Technique>,
    fraction: f64,
    min: usize,
    max: usize,
    switch: usize,
    /// The switch the budget plans (a stall moves `switch` before it, for one run).
    planned: usize,
    told: usize,
    /// Hand over after this many evaluations without a better cost (0: never early).
    stall: usize,
    best: f64,
    last_gain: usize,
    name: String,
}

impl std::fmt::Debug for Phased {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Phased")
            .field("first", &self.first.name())
            .field("second", &self.second.name())
            .field("fraction", &self.fraction)
            .finish()
    }
}

impl Default for Phased {
    fn default() -> Self {
        Self::new()
    }
}

impl Phased {
    /// Bayesian optimisation for a quarter of the budget (10 to 100 evaluations), then the
    /// bandit ensemble.
    pub fn new() -> Self {
        Self::of(Box::new(Bayes::new()), Box::new(Bandit::new()))
    }
    /// `first`, then `second`.
    pub fn of(first: Box<dyn Technique>, second: Box<dyn Technique>) -> Self {
        Phased {
            first,
            second,
            fraction: 0.25,
            min: 10,
            max: 100,
            switch: 100,
            planned: 100,
            told: 0,
            stall: 0,
            best: f64::INFINITY,
            last_gain: 0,
            name: "phased".into(),
        }
    }
    /// The part of the budget given to the first technique, and its bounds.
    #[must_use]
    pub fn switch(mut self, fraction: f64, min: usize, max: usize) -> Self {
        self.fraction = fraction.clamp(0.0, 1.0);
        self.min = min;
        self.max = max.max(min);
        self.switch = self.max;
        self.planned = self.max;
        self
    }
    /// Hands over early when the first technique has found no better cost for `window`
    /// evaluations (after at least `min` of them; 0, the default, never). A model that
    /// settled early on one local optimum keeps proposing around it (the H200 convolution's
    /// trace, `bench/simulate/RESULTS.md`); the second technique gets the rest.
    #[must_use]
    pub fn stall(mut self, window: usize) -> Self {
        self.stall = window;
        self
    }
    /// The name it records under (default `"phased"`).
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

impl Technique for Phased {
    fn name(&self) -> &str {
        &self.name
    }
    fn budget(&mut self, evaluations: u64) {
        let b = evaluations as usize;
        self.switch = ((b as f64 * self.fraction) as usize).clamp(self.min, self.max);
        self.planned = self.switch;
        self.first.budget(self.switch as u64);
        self.second
            .budget(evaluations.saturating_sub(self.switch as u64));
    }
    fn init(&mut self, space: &Space, seed: u64) {
        self.first.init(space, seed);
        self.second.init(space, seed ^ 0x5bd1_e995);
        self.told = 0;
        self.switch = self.planned;
        self.best = f64::INFINITY;
        self.last_gain = 0;
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        if self.told < self.switch {
            let out = self.first.ask(space, n.min(self.switch - self.told));
            if !out.is_empty() {
                return out;
            }
        }
        self.second.ask(space, n)
    }
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        self.told += 1;
        if let Some(c) = cost.filter(|c| c.is_finite() && *c < self.best) {
            self.best = c;
            self.last_gain = self.told;
        }
        if self.stall > 0
            && self.told < self.switch
            && self.told >= self.min
            && self.told - self.last_gain >= self.stall
        {
            self.switch = self.told;
        }
        self.first.tell(space, index, cost);
        self.second.tell(space, index, cost);
    }
}
