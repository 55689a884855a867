//! Device time of back-to-back launches from their profiling events.
//!
//! The span from the first launch's start to the last one's end counted the time the device
//! waited for the host between launches. NVIDIA's OpenCL takes about 14 us to enqueue a
//! launch, so a sample of shorter kernels read the host's enqueue rate (a 7 us saxpy read
//! 15 us), and a host thread descheduled while enqueueing added hundreds of microseconds
//! (the same GEMM cells up to 2.9 times apart, bench/select/noise7; benches/gpu-logs/lead8).
//! So the launches wait behind a [`Gate`] until all are enqueued, then run back to back;
//! and the time is the union of their [start, end] intervals, which leaves out any gap that
//! remains and does not count twice intervals a driver reports as overlapping.

use opencl3::context::Context;
use opencl3::error_codes::ClError;
use opencl3::event::{create_user_event, set_user_event_status, Event, CL_COMPLETE};
use opencl3::types::cl_event;

/// A user event the first launch of a sample waits for, opened once every launch is
/// enqueued; opened on drop too, so that a failed enqueue never leaves launches waiting.
pub(crate) struct Gate {
    event: Event,
    open: bool,
}

impl Gate {
    pub(crate) fn new(context: &Context) -> Result<Self, ClError> {
        let event = create_user_event(context.get()).map_err(ClError)?;
        Ok(Gate {
            event: Event::new(event),
            open: false,
        })
    }

    /// The event to wait for.
    pub(crate) fn event(&self) -> cl_event {
        self.event.get()
    }

    /// Lets the launches run.
    pub(crate) fn open(&mut self) -> Result<(), ClError> {
        if !self.open {
            self.open = true;
            set_user_event_status(self.event.get(), CL_COMPLETE).map_err(ClError)?;
        }
        Ok(())
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        // Nothing to report from a drop; a gate that fails to open leaves the queue to the
        // launch's own error.
        let _ = self.open();
    }
}

/// Nanoseconds covered by the union of the `[start, end]` intervals (ends before their
/// start count as empty).
pub(crate) fn busy_ns(intervals: impl IntoIterator<Item = (u64, u64)>) -> u64 {
    let mut spans: Vec<(u64, u64)> = intervals.into_iter().filter(|(s, e)| e > s).collect();
    spans.sort_unstable();
    let mut total = 0;
    let mut open: Option<(u64, u64)> = None;
    for (s, e) in spans {
        open = match open {
            Some((os, oe)) if s <= oe => Some((os, oe.max(e))),
            Some((os, oe)) => {
                total += oe - os;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + open.map_or(0, |(s, e)| e - s)
}

#[cfg(test)]
mod tests {
    use super::busy_ns;

    #[test]
    fn back_to_back_launches_count_their_whole_span() {
        assert_eq!(busy_ns([(0, 10), (10, 20), (20, 30)]), 30);
    }

    #[test]
    fn gaps_between_launches_are_left_out() {
        // The host was away for 500 ns between the second and the third launch.
        assert_eq!(busy_ns([(0, 10), (10, 20), (520, 530)]), 30);
    }

    #[test]
    fn overlapping_intervals_are_counted_once() {
        assert_eq!(busy_ns([(0, 10), (5, 15), (12, 14)]), 15);
        assert_eq!(busy_ns([(20, 30), (0, 10)]), 20);
    }

    #[test]
    fn empty_and_inverted_intervals_count_nothing() {
        assert_eq!(busy_ns([]), 0);
        assert_eq!(busy_ns([(5, 5), (9, 3)]), 0);
        assert_eq!(busy_ns([(9, 3), (0, 4)]), 4);
    }
}
