//! An ensemble of techniques that shares the budget by a multi-armed bandit (OpenTuner's
//! AUC bandit meta-technique).

use std::collections::{HashMap, VecDeque};

use super::util::{derive_seed, finite};
use super::{Annealing, Genetic, Guided, LocalSearch, Random, Technique};
use crate::space::Space;

/// Shares the budget among several techniques ("arms").
///
/// Each proposal comes from the arm with the highest score: the area under the curve of its
/// recent new-best results (recent ones weigh more) over a sliding window of its last uses,
/// plus an exploration bonus `C * sqrt(2 ln(total) / uses)`. Arms that have not been used
/// go first. Every arm is told every result (see [`Bandit::share`]). The ensemble memoises: an arm that proposes a configuration another arm has
/// measured is told the known result at once and asked again.
pub struct Bandit {
    arms: Vec<Box<dyn Technique>>,
    c: f64,
    window: usize,
    history: Vec<VecDeque<bool>>,
    uses: Vec<usize>,
    done: Vec<bool>,
    total: usize,
    known: HashMap<u128, Option<f64>>,
    pending: HashMap<u128, usize>,
    waiting: Vec<(u128, usize)>,
    best: f64,
    fallback: Random,
    share: bool,
}

impl std::fmt::Debug for Bandit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bandit")
            .field(
                "arms",
                &self.arms.iter().map(|a| a.name()).collect::<Vec<_>>(),
            )
            .field("exploration", &self.c)
            .field("window", &self.window)
            .finish()
    }
}

impl Default for Bandit {
    fn default() -> Self {
        Self::new()
    }
}

impl Bandit {
    /// The default ensemble: two iterated local searches (kicks of 3 and of 2 steps), a
    /// genetic algorithm, simulated annealing and the model-guided local search
    /// [`Guided`]; exploration constant `0.05`, window 50. This arm set is the one chosen by
    /// cross-validation on recorded spaces (`bench/simulate/RESULTS.md`).
    pub fn new() -> Self {
        Self::with_arms(vec![
            Box::new(LocalSearch::new().initial(0)),
            Box::new(LocalSearch::new().initial(0).kick(2)),
            Box::new(Genetic::new()),
            Box::new(Annealing::new()),
            Box::new(Guided::new()),
        ])
    }
    /// An ensemble of the given techniques.
    pub fn with_arms(arms: Vec<Box<dyn Technique>>) -> Self {
        Bandit {
            arms,
            c: 0.05,
            window: 50,
            history: Vec::new(),
            uses: Vec::new(),
            done: Vec::new(),
            total: 0,
            known: HashMap::new(),
            pending: HashMap::new(),
            waiting: Vec::new(),
            best: f64::INFINITY,
            fallback: Random::new(),
            share: true,
        }
    }
    /// The exploration constant `C`.
    #[must_use]
    pub fn exploration(mut self, c: f64) -> Self {
        self.c = c.max(0.0);
        self
    }
    /// How many of an arm's last uses its score looks at.
    #[must_use]
    pub fn window(mut self, w: usize) -> Self {
        self.window = w.max(1);
        self
    }

    /// Whether every arm is told every result (default), so that each continues from what
    /// the others found, or only the arm that proposed it.
    #[must_use]
    pub fn share(mut self, share: bool) -> Self {
        self.share = share;
        self
    }

    fn score(&self, a: usize) -> f64 {
        let h = &self.history[a];
        if h.is_empty() {
            return f64::INFINITY;
        }
        let n = h.len() as f64;
        let auc: f64 = h
            .iter()
            .enumerate()
            .map(|(i, &v)| if v { (i + 1) as f64 } else { 0.0 })
            .sum::<f64>()
            / (n * (n + 1.0) / 2.0);
        let t = (self.total.max(1)) as f64;
        auc + self.c * (2.0 * t.ln() / self.uses[a].max(1) as f64).sqrt()
    }

    fn pick(&self) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for a in 0..self.arms.len() {
            if self.done[a] {
                continue;
            }
            let s = self.score(a);
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((a, s));
            }
        }
        best.map(|b| b.0)
    }

    /// One proposal from arm `a` that is neither measured nor pending, if it has one.
    fn propose(&mut self, space: &Space, a: usize) -> Option<u128> {
        for _ in 0..64 {
            let Some(&i) = self.arms[a].ask(space, 1).first() else {
                self.done[a] = true;
                return None;
            };
            if let Some(&c) = self.known.get(&i) {
                self.arms[a].tell(space, i, c);
            } else if self.pending.contains_key(&i) {
                self.waiting.push((i, a));
            } else {
                return Some(i);
            }
        }
        None
    }
}

impl Technique for Bandit {
    fn name(&self) -> &str {
        "bandit"
    }
    fn budget(&mut self, evaluations: u64) {
        for arm in &mut self.arms {
            arm.budget(evaluations);
        }
    }
    fn init(&mut self, space: &Space, seed: u64) {
        for (k, arm) in self.arms.iter_mut().enumerate() {
            arm.init(space, derive_seed(seed, k as u64));
        }
        let n = self.arms.len();
        self.history = vec![VecDeque::new(); n];
        self.uses = vec![0; n];
        self.done = vec![false; n];
        self.total = 0;
        self.known.clear();
        self.pending.clear();
        self.waiting.clear();
        self.best = f64::INFINITY;
        self.fallback.init(space, derive_seed(seed, n as u64));
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some(a) = self.pick() else {
                // Every arm is spent: finish with what is left, in random order.
                let len = space.len();
                let fresh = std::iter::from_fn(|| self.fallback.next_index(len))
                    .find(|i| !self.known.contains_key(i) && !self.pending.contains_key(i));
                let Some(i) = fresh else { break };
                self.pending.insert(i, usize::MAX);
                out.push(i);
                continue;
            };
            if let Some(i) = self.propose(space, a) {
                self.pending.insert(i, a);
                // Count the use now so that a batch spreads over the arms.
                self.uses[a] += 1;
                out.push(i);
            } else {
                self.done[a] = true;
            }
        }
        out
    }
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        self.known.insert(index, cost);
        let improved = finite(cost).is_some_and(|c| c < self.best);
        if improved {
            self.best = finite(cost).unwrap_or(self.best);
        }
        let proposer = self.pending.remove(&index);
        if proposer.is_none() {
            // A result this ensemble did not propose (a start configuration, an earlier
            // phase): every arm learns from it.
            for arm in &mut self.arms {
                arm.tell(space, index, cost);
            }
        }
        if let Some(a) = proposer.filter(|&a| a < self.arms.len()) {
            let h = &mut self.history[a];
            h.push_back(improved);
            if h.len() > self.window {
                h.pop_front();
            }
            self.total += 1;
            if self.share {
                for arm in &mut self.arms {
                    arm.tell(space, index, cost);
                }
            } else {
                self.arms[a].tell(space, index, cost);
            }
        }
        let mut k = 0;
        while k < self.waiting.len() {
            if self.waiting[k].0 == index {
                let (_, a) = self.waiting.swap_remove(k);
                self.arms[a].tell(space, index, cost);
            } else {
                k += 1;
            }
        }
    }
}
