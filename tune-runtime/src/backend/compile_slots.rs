//! Admission for compilers that build a few programs at a time per process (NVIDIA's
//! OpenCL driver builds one at a time, whatever the number of threads): a compilation
//! waits for a slot here, where the wait is visible, so that a compile time limit counts the
//! compiler's own time and not the queue in front of it.

use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// Slots in use, shared by the compilations of one evaluator.
#[derive(Debug, Default)]
pub(crate) struct CompileSlots {
    used: Mutex<usize>,
    freed: Condvar,
}

/// A slot held until it is dropped (the compilation's thread keeps it while the compiler
/// runs, also after a caller stopped waiting for it).
pub(crate) struct Slot(Option<Arc<CompileSlots>>);

impl CompileSlots {
    /// Waits until fewer than `at_once` compilations hold a slot and takes one; `None`
    /// (no limit) returns at once.
    pub(crate) fn take(self: &Arc<Self>, at_once: Option<usize>) -> Slot {
        let Some(n) = at_once else {
            return Slot(None);
        };
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        while *used >= n.max(1) {
            used = self
                .freed
                .wait(used)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *used += 1;
        Slot(Some(self.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(slots) = self.0.take() {
            *slots.used.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
            slots.freed.notify_one();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn at_most_n_hold_a_slot_and_none_waits_without_a_limit() {
        let slots = Arc::new(CompileSlots::default());
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let _slot = slots.take(Some(2));
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    now.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 2);
        let held: Vec<Slot> = (0..100).map(|_| slots.take(None)).collect();
        assert_eq!(held.len(), 100);
        assert_eq!(*slots.used.lock().unwrap(), 0);
    }
}
