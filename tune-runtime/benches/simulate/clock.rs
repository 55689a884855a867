//! The meta search's clock: this process's CPU time.

/// CPU time this process has used so far (every thread), in seconds. The meta search's
/// budget is in CPU time: wall time times threads would shrink it when other processes
/// share the cores (round 5's meta table was made so).
pub fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the call only writes it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return f64::NAN;
    }
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// The CPU seconds spent since it was started.
pub struct CpuClock(f64);

impl CpuClock {
    pub fn start() -> CpuClock {
        CpuClock(cpu_seconds())
    }
    /// CPU seconds since `start` (infinite if the clock cannot be read, so that a search
    /// bounded by it stops rather than running on).
    pub fn spent(&self) -> f64 {
        let now = cpu_seconds() - self.0;
        if now.is_nan() {
            f64::INFINITY
        } else {
            now
        }
    }
}
