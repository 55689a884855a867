//! Two techniques side by side: each proposal comes from one or the other, both learn every
//! result.

use std::collections::HashSet;

use super::Technique;
use crate::space::Space;

/// Shares the proposals between `first` and `second` (a fixed share to `second`), and tells
/// both every result, so that each works from everything measured. A model that settles on
/// one region and a local search that climbs from the best found cover each other: where the
/// model keeps proposing around one local optimum, the climber leaves it by its kicks.
///
/// A proposal one technique makes that the other made in the same batch, or that either was
/// told about, is not passed on twice: the batch is filled from `first` instead.
pub struct Alternate {
    first: Box<dyn Technique>,
    second: Box<dyn Technique>,
    share: f64,
    asked_second: usize,
    asked: usize,
    seen: HashSet<u128>,
    name: String,
}

impl std::fmt::Debug for Alternate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Alternate")
            .field("first", &self.first.name())
            .field("second", &self.second.name())
            .field("share", &self.share)
            .finish()
    }
}

impl Alternate {
    /// `second` proposes a share `share` (0 to 1) of the configurations, `first` the rest.
    pub fn of(first: Box<dyn Technique>, second: Box<dyn Technique>, share: f64) -> Self {
        Alternate {
            first,
            second,
            share: share.clamp(0.0, 1.0),
            asked_second: 0,
            asked: 0,
            seen: HashSet::new(),
            name: "alternate".into(),
        }
    }
    /// The name it records under (default `"alternate"`).
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

impl Technique for Alternate {
    fn name(&self) -> &str {
        &self.name
    }
    fn budget(&mut self, evaluations: u64) {
        self.first.budget(evaluations);
        self.second.budget(evaluations);
    }
    fn init(&mut self, space: &Space, seed: u64) {
        self.first.init(space, seed);
        self.second.init(space, seed ^ 0x2545_f491);
        self.asked_second = 0;
        self.asked = 0;
        self.seen.clear();
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::with_capacity(n);
        // The second's turns: as many as keep its part of all proposals at `share`.
        let due = ((self.asked + n) as f64 * self.share).round() as usize;
        let k = due.saturating_sub(self.asked_second).min(n);
        if k > 0 {
            for i in self.second.ask(space, k) {
                if self.seen.insert(i) {
                    out.push(i);
                    self.asked_second += 1;
                }
            }
        }
        // The rest from the first; then, if it has nothing new, the second again.
        for from_second in [false, true] {
            let mut tries = 0;
            while out.len() < n && tries < 4 {
                tries += 1;
                let want = n - out.len();
                let got = if from_second {
                    self.second.ask(space, want)
                } else {
                    self.first.ask(space, want)
                };
                if got.is_empty() {
                    break;
                }
                for i in got {
                    if out.len() < n && self.seen.insert(i) {
                        out.push(i);
                        if from_second {
                            self.asked_second += 1;
                        }
                    }
                }
            }
        }
        self.asked += out.len();
        out
    }
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        self.seen.insert(index);
        self.first.tell(space, index, cost);
        self.second.tell(space, index, cost);
    }
}
