//! The closure evaluator: a configuration's cost is whatever a Rust closure says.
//!
//! ```
//! use tune_runtime::evaluate::closure::Closure;
//! use tune_runtime::{Config, Failure};
//!
//! // The closure returns the cost (here a made-up f64), or a typed failure.
//! let eval = Closure::new(|c: &Config| -> Result<f64, Failure> {
//!     let x: u32 = c.get(0);
//!     if x == 3 { Err(Failure::WrongResult("x=3 gives 41, expected 42".into())) }
//!     else { Ok((x as f64 - 5.0).abs()) }
//! });
//! // Or times it: the cost is the median wall time of 5 runs after one warm-up run.
//! let timed = Closure::timed(|c: &Config| -> Result<(), Failure> {
//!     std::hint::black_box(c.get::<u32>(0));
//!     Ok(())
//! })
//! .repetitions(5);
//! # let _ = (eval, timed);
//! ```

use std::time::{Duration, Instant};

use crate::cost::Cost;
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::space::{Config, Space};

/// What a measuring closure may return: a cost, or a full [`Measured`].
pub trait IntoMeasured {
    /// The cost type.
    type Cost: Cost;
    /// The measurement.
    fn into_measured(self) -> Measured<Self::Cost>;
}

impl<C: Cost> IntoMeasured for Measured<C> {
    type Cost = C;
    fn into_measured(self) -> Measured<C> {
        self
    }
}

macro_rules! into_measured {
    ($($t:ty),*) => {$(
        impl IntoMeasured for $t {
            type Cost = $t;
            fn into_measured(self) -> Measured<$t> {
                Measured::new(self)
            }
        }
    )*};
}
into_measured!(f64, f32, Duration);

impl<A: Cost, B: Cost> IntoMeasured for (A, B) {
    type Cost = (A, B);
    fn into_measured(self) -> Measured<(A, B)> {
        Measured::new(self)
    }
}

/// Preparation that does nothing (the default of [`Closure`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPrepare;

/// An evaluator made of closures: an optional `prepare` (run in parallel on CPU threads
/// ahead of measurement) and a `measure`.
#[derive(Clone, Debug)]
pub struct Closure<M, P = NoPrepare> {
    measure: M,
    prepare: P,
    device: String,
}

impl<M> Closure<M> {
    /// An evaluator whose closure returns the cost (`f64`, `Duration`, a tuple, or a
    /// [`Measured`]) or a [`Failure`].
    pub fn new<R>(measure: M) -> Self
    where
        M: Fn(&Config) -> Result<R, Failure> + Send + Sync,
        R: IntoMeasured,
    {
        Closure {
            measure,
            prepare: NoPrepare,
            device: "cpu".into(),
        }
    }

    /// Adds a preparation step: `prepare` runs first (possibly on another thread, ahead of
    /// time) and its output is handed to `measure`, which then takes `(&Config, T)`.
    #[must_use]
    pub fn with_prepare<P, T, M2, R>(self, prepare: P, measure: M2) -> Closure<M2, P>
    where
        P: Fn(&Config) -> Result<T, Failure> + Send + Sync,
        T: Send,
        M2: Fn(&Config, T) -> Result<R, Failure> + Send + Sync,
        R: IntoMeasured,
    {
        Closure {
            measure,
            prepare,
            device: self.device,
        }
    }
}

impl<M, P> Closure<M, P> {
    /// The device name recorded with the results (default `"cpu"`).
    #[must_use]
    pub fn device_name(mut self, name: impl Into<String>) -> Self {
        self.device = name.into();
        self
    }
}

impl<M, R> Evaluator for Closure<M, NoPrepare>
where
    M: Fn(&Config) -> Result<R, Failure> + Send + Sync,
    R: IntoMeasured,
{
    type Cost = R::Cost;
    type Prepared = ();

    fn prepare(&self, _: &Space, _: &Config) -> Result<(), Failure> {
        Ok(())
    }
    fn measure(&self, _: &Space, config: &Config, (): ()) -> Result<Measured<R::Cost>, Failure> {
        (self.measure)(config).map(IntoMeasured::into_measured)
    }
    fn device(&self) -> String {
        self.device.clone()
    }
}

impl<M, P, T, R> Evaluator for Closure<M, P>
where
    P: Fn(&Config) -> Result<T, Failure> + Send + Sync,
    T: Send,
    M: Fn(&Config, T) -> Result<R, Failure> + Send + Sync,
    R: IntoMeasured,
{
    type Cost = R::Cost;
    type Prepared = T;

    fn prepare(&self, _: &Space, config: &Config) -> Result<T, Failure> {
        (self.prepare)(config)
    }
    fn measure(
        &self,
        _: &Space,
        config: &Config,
        prepared: T,
    ) -> Result<Measured<R::Cost>, Failure> {
        (self.measure)(config, prepared).map(IntoMeasured::into_measured)
    }
    fn device(&self) -> String {
        self.device.clone()
    }
}

/// An evaluator that times a closure on the CPU: warm-up runs, then repetitions; the cost
/// is the median wall time and every repetition is recorded as a sample. Made by
/// [`Closure::timed`].
#[derive(Clone, Debug)]
pub struct Timed<F> {
    run: F,
    warmup: usize,
    repetitions: usize,
    device: String,
}

impl Closure<()> {
    /// Times `run` (which returns `Err` to report a failure, for example a wrong result).
    pub fn timed<F>(run: F) -> Timed<F>
    where
        F: Fn(&Config) -> Result<(), Failure> + Send + Sync,
    {
        Timed {
            run,
            warmup: 1,
            repetitions: 7,
            device: "cpu".into(),
        }
    }
}

impl<F> Timed<F> {
    /// Runs before timing starts (default 1).
    #[must_use]
    pub fn warmup(mut self, n: usize) -> Self {
        self.warmup = n;
        self
    }
    /// Timed runs (default 7, at least 1).
    #[must_use]
    pub fn repetitions(mut self, n: usize) -> Self {
        self.repetitions = n.max(1);
        self
    }
    /// The device name recorded with the results (default `"cpu"`).
    #[must_use]
    pub fn device_name(mut self, name: impl Into<String>) -> Self {
        self.device = name.into();
        self
    }
}

impl<F> Evaluator for Timed<F>
where
    F: Fn(&Config) -> Result<(), Failure> + Send + Sync,
{
    type Cost = Duration;
    type Prepared = ();

    fn prepare(&self, _: &Space, _: &Config) -> Result<(), Failure> {
        Ok(())
    }
    fn measure(&self, _: &Space, config: &Config, (): ()) -> Result<Measured<Duration>, Failure> {
        for _ in 0..self.warmup {
            (self.run)(config)?;
        }
        let mut times = Vec::with_capacity(self.repetitions);
        for _ in 0..self.repetitions {
            let t = Instant::now();
            (self.run)(config)?;
            times.push(t.elapsed());
        }
        let mut sorted = times.clone();
        sorted.sort();
        let median = sorted[sorted.len() / 2];
        Ok(Measured {
            cost: median,
            samples: times.iter().map(Duration::as_secs_f64).collect(),
            validation: None,
            stopped_early: false,
        })
    }
    fn device(&self) -> String {
        self.device.clone()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::param::Param;
    use crate::space::SpaceBuilder;

    fn space() -> Space {
        SpaceBuilder::new()
            .param(Param::<u32>::range("X", 0..10))
            .build()
            .unwrap()
    }

    #[test]
    fn closures_return_costs_or_failures() {
        let s = space();
        let e = Closure::new(|c: &Config| {
            let x: u32 = c.get(0);
            if x == 3 {
                Err(Failure::WrongResult("bad".into()))
            } else {
                Ok(x as f64)
            }
        });
        let c = s.get(2).unwrap();
        e.prepare(&s, &c).unwrap();
        assert_eq!(e.measure(&s, &c, ()).unwrap().cost, 2.0);
        let c = s.get(3).unwrap();
        assert_eq!(
            e.measure(&s, &c, ()).unwrap_err(),
            Failure::WrongResult("bad".into())
        );
        assert_eq!(e.device(), "cpu");
    }

    #[test]
    fn prepared_values_reach_measure() {
        let s = space();
        let e = Closure::new(|_: &Config| Ok(0.0)).with_prepare(
            |c: &Config| {
                let x: u32 = c.get(0);
                if x == 0 {
                    Err(Failure::Compile("x must not be 0".into()))
                } else {
                    Ok(x * 10)
                }
            },
            |_: &Config, p: u32| Ok(Measured::new(p as f64)),
        );
        let c = s.get(4).unwrap();
        let p = e.prepare(&s, &c).unwrap();
        assert_eq!(p, 40);
        assert_eq!(e.measure(&s, &c, p).unwrap().cost, 40.0);
        assert!(matches!(
            e.prepare(&s, &s.get(0).unwrap()),
            Err(Failure::Compile(_))
        ));
    }

    #[test]
    fn timed_runs_warmup_and_repetitions() {
        let s = space();
        let count = std::sync::atomic::AtomicUsize::new(0);
        let e = Closure::timed(|_: &Config| {
            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        })
        .warmup(2)
        .repetitions(3);
        let m = e.measure(&s, &s.get(0).unwrap(), ()).unwrap();
        assert_eq!(m.samples.len(), 3);
        assert_eq!(count.load(std::sync::atomic::Ordering::Relaxed), 5);
    }
}
