//! The polish after the search: a hill climb over the one-parameter neighbours of the best
//! configuration, so that the winner is not beaten by a configuration one parameter away
//! that the search happened not to measure (two runs from different seeds that end next to
//! the same optimum then agree on it).

use std::collections::HashMap;

use crate::search::Technique;
use crate::space::{Neighbourhood, Space};

/// Proposes the unmeasured neighbours (every other valid value of one parameter) of the
/// best configuration so far, best first; when one of them is better, climbs to it and
/// proposes its neighbours. Ends (asks for nothing) when the best's neighbours are all
/// measured.
#[derive(Debug, Default)]
pub(super) struct Polish {
    /// Every configuration measured, with its cost (`None`: failed).
    known: HashMap<u128, Option<f64>>,
    /// The configuration whose neighbours are proposed, and its cost.
    current: Option<(u128, f64)>,
    /// Its neighbours not yet proposed.
    queue: Vec<u128>,
}

impl Polish {
    /// A polish that knows the search's measurements.
    pub(super) fn new(measured: impl IntoIterator<Item = (u128, Option<f64>)>) -> Self {
        Polish {
            known: measured.into_iter().collect(),
            ..Polish::default()
        }
    }

    /// The best measured configuration (lowest index among equals, for reproducibility).
    fn best(&self) -> Option<(u128, f64)> {
        self.known
            .iter()
            .filter_map(|(&i, &c)| Some((i, c?)))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
    }
}

impl Technique for Polish {
    fn name(&self) -> &str {
        "polish"
    }

    fn init(&mut self, _space: &Space, _seed: u64) {}

    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let best = self.best();
        if best.map(|b| b.0) != self.current.map(|c| c.0) {
            self.current = best;
            self.queue = match best.and_then(|(i, _)| space.get(i)) {
                Some(c) => space.neighbour_indices(&c, Neighbourhood::Any),
                None => Vec::new(),
            };
            self.queue.retain(|i| !self.known.contains_key(i));
            // Proposed from the end: keep the space's neighbour order.
            self.queue.reverse();
        }
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            match self.queue.pop() {
                Some(i) if !self.known.contains_key(&i) => out.push(i),
                Some(_) => {}
                None => break,
            }
        }
        out
    }

    fn tell(&mut self, _space: &Space, index: u128, cost: Option<f64>) {
        self.known.insert(index, cost);
    }
}
