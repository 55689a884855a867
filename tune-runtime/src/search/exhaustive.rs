//! Exhaustive search: every configuration, in index order.

use super::Technique;
use crate::space::Space;

/// Proposes every configuration once, in index order.
#[derive(Debug, Default, Clone)]
pub struct Exhaustive {
    next: u128,
}

impl Exhaustive {
    /// A new exhaustive search.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Technique for Exhaustive {
    fn name(&self) -> &str {
        "exhaustive"
    }
    fn init(&mut self, _space: &Space, _seed: u64) {
        self.next = 0;
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let end = space.len().min(self.next.saturating_add(n as u128));
        let out: Vec<u128> = (self.next..end).collect();
        self.next = end;
        out
    }
    fn tell(&mut self, _space: &Space, _index: u128, _cost: Option<f64>) {}
}
