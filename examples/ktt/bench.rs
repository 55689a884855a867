//! Measurements of the KTT bench (`examples/ktt_bench.rs`), each a function that returns
//! numbers for the report: tuning a case, the copy bandwidth, the reduction written by hand
//! against the same reduction as a composition, cuBLAS's sum, and online tuning against
//! the offline-tuned best.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tune::abort::{Elapsed, Evaluations, WholeSpace};
use tune::backend::composition::{CompositionEvaluator, KernelSource, PreparedComposition, Queue};
use tune::backend::{config_defines, Backend, BufferArg, CompileRequest, LaunchArg, LaunchDims};
use tune::tuner::online::{Input, Online};
use tune::{Config, Error, Evaluator, Failure, Space, Tuner, TuningResult};

use super::{is_cuda, reduction, Case};

fn failed(f: Failure) -> Error {
    Error::Failed(f)
}

/// The median of some durations.
pub fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    match v.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2,
    }
}

/// Tunes `case` within `evaluations` or `seconds` (whichever first), starting from its
/// default, candidates compiled on every core; the log in `target/tune/`.
///
/// # Errors
/// The evaluator's construction; no valid configuration.
pub fn tune<B: Backend>(
    device: Arc<B>,
    case: Case<B>,
    evaluations: u64,
    seconds: f64,
) -> tune::Result<(
    CompositionEvaluator<B>,
    Space,
    Config,
    TuningResult<Duration>,
)> {
    let Case {
        name,
        input,
        space,
        composition,
        default,
        ..
    } = case;
    let ev = CompositionEvaluator::new(device, &space, composition)?;
    let log = std::path::Path::new("target/tune").join(format!("{name}-{input}.jsonl"));
    let _ = std::fs::remove_file(&log);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let r = Tuner::new(space.clone(), &ev)
        .name(name)
        .input_key(input)
        .start_from([default.clone()])
        .abort(Evaluations(evaluations) | Elapsed(Duration::from_secs_f64(seconds)) | WholeSpace)
        .batch(threads.max(2))
        .log(log)
        .progress(true)
        .run()?;
    Ok((ev, space, default, r))
}

/// The median cost of `config` (a fresh measurement with the evaluator's repetitions).
///
/// # Errors
/// The configuration's failure.
pub fn cost_of<B: Backend>(
    ev: &CompositionEvaluator<B>,
    space: &Space,
    config: &Config,
) -> tune::Result<Duration> {
    let p = ev.prepare(space, config).map_err(failed)?;
    Ok(ev.measure(space, config, p).map_err(failed)?.cost)
}

/// The device's copy bandwidth in bytes per second: `reduction`'s `copy` kernel over `n`
/// floats (read and written), 256 work-items per group, the best median of 10 launches
/// over grids of 1 to 32 groups per compute unit and one work-item per float4.
///
/// # Errors
/// The kernel does not compile or launch.
pub fn copy_bandwidth<B: Backend>(device: Arc<B>, n: usize) -> tune::Result<f64> {
    let cuda = is_cuda(device.device());
    let cus = (device.device().compute_units as usize).max(1);
    let q = Queue::<B>::new(device);
    let src = if cuda { reduction::CU } else { reduction::CL };
    let k = q.kernel(
        &KernelSource::new(src, "copy")
            .define("WG", 256)
            .define("VW", 4)
            .define("UNROLL", 1)
            .define("ATOMICS", 0),
    )?;
    let x = q.buffer(&reduction::data(n))?;
    let y = q.zeros::<f32>(n)?;
    let n4 = n / 4;
    let mut best = f64::INFINITY;
    for groups in [1, 2, 4, 8, 16, 32]
        .map(|g| g * cus)
        .into_iter()
        .chain([n4.div_ceil(256)])
    {
        let mut t = Vec::new();
        for i in 0..12 {
            let d = q
                .launch(&k)
                .global([groups * 256])
                .local([256])
                .arg(&x)
                .arg(&y)
                .scalar(n4 as u32)
                .run()?;
            if i >= 2 {
                t.push(d);
            }
        }
        best = best.min(median(&mut t).as_secs_f64());
    }
    Ok(8.0 * n4 as f64 * 4.0 / best)
}

/// The reduction written by hand on the backend (no composition): the same kernel, the
/// same launches, for the overhead of the composition machinery.
pub struct HandWritten<B: Backend> {
    device: Arc<B>,
    kernel: B::Kernel,
    x: B::Buffer,
    parts: [B::Buffer; 2],
    sum: B::Buffer,
    n: usize,
    wg: usize,
    vw: usize,
    unroll: usize,
    gpc: usize,
    atomics: bool,
    cus: usize,
}

impl<B: Backend> HandWritten<B> {
    /// Compiles the kernel for `config` and uploads the data.
    ///
    /// # Errors
    /// Compilation or allocation failures.
    pub fn new(device: Arc<B>, space: &Space, config: &Config, n: usize) -> tune::Result<Self> {
        use reduction::slots::*;
        let cuda = is_cuda(device.device());
        let kernel = device
            .compile(&CompileRequest {
                source: if cuda { reduction::CU } else { reduction::CL },
                kernel: "reduce",
                defines: &config_defines(space, config),
                options: &[],
            })
            .map_err(failed)?;
        let cus = (device.device().compute_units as usize).max(1);
        let (wg, vw, unroll, gpc) = (
            config.get::<usize>(WG),
            config.get::<usize>(VW),
            config.get::<usize>(UNROLL),
            config.get::<usize>(GPC),
        );
        let most = reduction::groups(n, wg, vw, unroll, gpc, cus);
        let mut x = device.alloc(4 * n)?;
        let bytes: Vec<u8> = reduction::data(n)
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        device.write(&mut x, &bytes)?;
        let parts = [device.alloc(4 * most)?, device.alloc(4 * most)?];
        let sum = device.alloc(4)?;
        Ok(HandWritten {
            kernel,
            x,
            parts,
            sum,
            n,
            wg,
            vw,
            unroll,
            gpc,
            atomics: config.get::<bool>(ATOMICS),
            cus,
            device,
        })
    }

    fn dims(&self, groups: usize) -> LaunchDims {
        LaunchDims {
            dims: 1,
            global: [groups * self.wg, 1, 1],
            local: Some([self.wg, 1, 1]),
            dynamic_local_bytes: 0,
        }
    }

    /// One reduction; returns its device time.
    ///
    /// # Errors
    /// A launch failure.
    pub fn run(&mut self) -> Result<Duration, Failure> {
        let d = &self.device;
        let groups =
            |len| reduction::groups(len, self.wg, self.vw, self.unroll, self.gpc, self.cus);
        if self.atomics {
            d.write(&mut self.sum, &0f32.to_ne_bytes())
                .map_err(|e| Failure::Launch(e.to_string()))?;
            let len = (self.n as u32).to_ne_bytes();
            let args = [
                LaunchArg::Buffer(&self.x),
                LaunchArg::Buffer(&self.sum),
                LaunchArg::Scalar(&len),
            ];
            return d.launch(&self.kernel, &self.dims(groups(self.n)), &args);
        }
        let (mut len, mut from, mut pass) = (self.n, &self.x, 0);
        let mut time = Duration::ZERO;
        loop {
            let g = groups(len);
            let to = if g == 1 {
                &self.sum
            } else {
                &self.parts[pass % 2]
            };
            let l = (len as u32).to_ne_bytes();
            let args = [
                LaunchArg::Buffer(from),
                LaunchArg::Buffer(to),
                LaunchArg::Scalar(&l),
            ];
            time += d.launch(&self.kernel, &self.dims(g), &args)?;
            if g == 1 {
                return Ok(time);
            }
            (len, from, pass) = (g, to, pass + 1);
        }
    }

    /// The sum the last run left.
    ///
    /// # Errors
    /// The copy fails.
    pub fn sum(&self) -> tune::Result<f32> {
        let mut b = [0u8; 4];
        self.device.read(&self.sum, &mut b)?;
        Ok(f32::from_ne_bytes(b))
    }
}

/// A backend that counts the wall time spent in its inner backend's calls: what host code
/// spends outside them is its own overhead, free of the device's noise.
pub struct Counting<B: Backend> {
    inner: Arc<B>,
    nanos: std::sync::atomic::AtomicU64,
}

impl<B: Backend> Counting<B> {
    /// Wraps `inner`.
    pub fn new(inner: Arc<B>) -> Self {
        Counting {
            inner,
            nanos: Default::default(),
        }
    }
    /// Time spent in the inner backend so far.
    pub fn spent(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(std::sync::atomic::Ordering::Relaxed))
    }
    fn count<T>(&self, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let r = f();
        self.nanos.fetch_add(
            t.elapsed().as_nanos() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        r
    }
}

impl<B: Backend> Backend for Counting<B> {
    type Buffer = B::Buffer;
    type Kernel = B::Kernel;
    fn device(&self) -> &tune::backend::DeviceInfo {
        self.inner.device()
    }
    fn compile(&self, r: &CompileRequest<'_>) -> Result<B::Kernel, Failure> {
        self.inner.compile(r)
    }
    fn kernel_limits(&self, k: &B::Kernel) -> tune::backend::KernelLimits {
        self.inner.kernel_limits(k)
    }
    fn alloc(&self, bytes: usize) -> tune::Result<B::Buffer> {
        self.inner.alloc(bytes)
    }
    fn write(&self, b: &mut B::Buffer, data: &[u8]) -> tune::Result<()> {
        self.count(|| self.inner.write(b, data))
    }
    fn read(&self, b: &B::Buffer, out: &mut [u8]) -> tune::Result<()> {
        self.count(|| self.inner.read(b, out))
    }
    fn launch(
        &self,
        k: &B::Kernel,
        d: &LaunchDims,
        a: &[LaunchArg<'_, Self>],
    ) -> Result<Duration, Failure> {
        let args: Vec<LaunchArg<'_, B>> = a
            .iter()
            .map(|x| match x {
                LaunchArg::Buffer(b) => LaunchArg::Buffer(*b),
                LaunchArg::Scalar(s) => LaunchArg::Scalar(s),
                LaunchArg::Local(n) => LaunchArg::Local(*n),
            })
            .collect();
        self.count(|| self.inner.launch(k, d, &args))
    }
}

/// Wall time per run of the reduction as a composition ([`CompositionEvaluator::call`])
/// and written by hand, and the device time of each: `rounds` alternating blocks of
/// `block` runs (so that drift affects both alike).
pub struct Overhead {
    /// Wall time per run, composition.
    pub composition: Duration,
    /// Wall time per run, by hand.
    pub hand: Duration,
    /// Device time per run, composition.
    pub composition_device: Duration,
    /// Device time per run, by hand.
    pub hand_device: Duration,
    /// Runs of each.
    pub runs: usize,
    /// Host time per run outside the backend's calls, composition.
    pub composition_host: Duration,
    /// Host time per run outside the backend's calls, by hand.
    pub hand_host: Duration,
}

/// Measures [`Overhead`] for the reduction of `n` floats with `config`.
///
/// # Errors
/// Compilation, launch or validation failures.
pub fn overhead<B: Backend>(
    device: Arc<B>,
    n: usize,
    config: &Config,
    rounds: usize,
    block: usize,
) -> tune::Result<Overhead> {
    let (case, _) = reduction::case::<Counting<B>>(device.device(), n)?;
    let space = case.space.clone();
    let counted = Arc::new(Counting::new(device));
    let ev = CompositionEvaluator::new(counted.clone(), &space, case.composition)?;
    let p = ev.prepare(&space, config).map_err(failed)?;
    let mut hand = HandWritten::new(counted.clone(), &space, config, n)?;
    let (mut cb, mut hb) = (Duration::ZERO, Duration::ZERO);
    let expected: f64 = reduction::data(n).iter().map(|&v| f64::from(v)).sum();
    let (mut cw, mut hw, mut cd, mut hd) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    // One untimed run of each (first launches, caches).
    ev.call(&space, config, &p, |_| Ok(()), |_| Ok(()))
        .map_err(failed)?;
    hand.run().map_err(failed)?;
    for _ in 0..rounds {
        let (t, b) = (Instant::now(), counted.spent());
        for _ in 0..block {
            cd += ev
                .call(&space, config, &p, |_| Ok(()), |_| Ok(()))
                .map_err(failed)?
                .1;
        }
        cw += t.elapsed();
        cb += counted.spent() - b;
        let (t, b) = (Instant::now(), counted.spent());
        for _ in 0..block {
            hd += hand.run().map_err(failed)?;
        }
        hw += t.elapsed();
        hb += counted.spent() - b;
    }
    let got = f64::from(hand.sum()?);
    if (got - expected).abs() > 1e-5 * expected.abs().max(1.0) {
        return Err(Error::KernelSpec(format!(
            "the hand-written reduction gave {got}, expected {expected}"
        )));
    }
    let runs = (rounds * block).max(1);
    Ok(Overhead {
        composition: cw / runs as u32,
        hand: hw / runs as u32,
        composition_device: cd / runs as u32,
        hand_device: hd / runs as u32,
        runs,
        composition_host: cw.saturating_sub(cb) / runs as u32,
        hand_host: hw.saturating_sub(hb) / runs as u32,
    })
}

/// cuBLAS's sum of absolute values (`cublasSasum`, pointer mode device) over `data`, timed
/// like a composition's launch: CUDA events around each call, median of `reps` after 3
/// untimed. Returns seconds per call and the sum. `None` on other backends.
///
/// # Errors
/// cuBLAS or CUDA failures.
pub fn vendor_sum<B: Backend>(
    device: &Arc<B>,
    data: &[f32],
    reps: usize,
) -> Option<tune::Result<(f64, f32)>> {
    #[cfg(feature = "cuda")]
    {
        let any: &dyn std::any::Any = device.as_ref();
        if let Some(cuda) = any.downcast_ref::<tune::cuda::Cuda>() {
            return Some(cublas::sasum(cuda, data, reps));
        }
    }
    let _ = (device, data, reps);
    None
}

#[cfg(feature = "cuda")]
mod cublas {
    use tune::cuda::cudarc::cublas::{sys, CudaBlas};
    use tune::cuda::cudarc::driver::sys::CUevent_flags;
    use tune::cuda::cudarc::driver::{DevicePtr, DevicePtrMut};
    use tune::cuda::Cuda;

    fn err(e: impl std::fmt::Debug) -> tune::Error {
        tune::Error::Backend {
            backend: "cuda".into(),
            message: format!("cuBLAS sasum: {e:?}"),
        }
    }

    pub fn sasum(cuda: &Cuda, data: &[f32], reps: usize) -> tune::Result<(f64, f32)> {
        // SAFETY: cuBLAS and every buffer below use tune's own stream only.
        let (ctx, stream) = unsafe { cuda.context()? };
        let blas = CudaBlas::new(stream.clone()).map_err(err)?;
        // SAFETY: a live handle; the result is written to device memory.
        unsafe {
            sys::cublasSetPointerMode_v2(
                *blas.handle(),
                sys::cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE,
            )
            .result()
            .map_err(err)?;
        }
        let dx = stream.clone_htod(data).map_err(err)?;
        let mut dr = stream.alloc_zeros::<f32>(1).map_err(err)?;
        let start = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)?;
        let end = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)?;
        let mut times = Vec::new();
        for i in 0..reps.max(1) + 3 {
            start.record(&stream).map_err(err)?;
            {
                let (px, _gx) = dx.device_ptr(&stream);
                let (pr, _gr) = dr.device_ptr_mut(&stream);
                // SAFETY: `px` holds `data.len()` floats and `pr` one, both live
                // allocations on the handle's stream.
                unsafe {
                    sys::cublasSasum_v2(
                        *blas.handle(),
                        data.len() as i32,
                        px as *const f32,
                        1,
                        pr as *mut f32,
                    )
                    .result()
                    .map_err(err)?;
                }
            }
            end.record(&stream).map_err(err)?;
            stream.synchronize().map_err(err)?;
            if i >= 3 {
                times.push(f64::from(start.elapsed_ms(&end).map_err(err)?) * 1e-3);
            }
        }
        let r = stream.clone_dtoh(&dr).map_err(err)?;
        times.sort_by(f64::total_cmp);
        Ok((
            times[times.len() / 2],
            r.first().copied().unwrap_or(f32::NAN),
        ))
    }
}

/// What online tuning of the 2D filter did over `calls` calls, against the same number
/// of calls of the offline-tuned best.
#[derive(Debug)]
pub struct OnlineReport {
    /// Calls made.
    pub calls: usize,
    /// Calls until it settled.
    pub settled_after: Option<u64>,
    /// Configurations tried, and of which failed.
    pub evaluations: u64,
    /// Calls that ran the best so far while the next configuration compiled.
    pub fallback_runs: u64,
    /// Failures.
    pub failures: u64,
    /// The configuration it settled on, and the offline best.
    pub settled: String,
    /// The offline best.
    pub offline: String,
    /// Device time per call of the offline best (median of its offline measurement).
    pub offline_time: Duration,
    /// Median device time per call of the settled configuration, online.
    pub settled_time: Duration,
    /// The first call from which every call ran a configuration at >= 98% of the offline
    /// best's speed (by the configurations' median online times).
    pub calls_to_98: Option<usize>,
    /// Wall time of all online calls (exploration, validation and fallbacks included).
    pub online_total: Duration,
    /// Wall time of as many calls of the offline best.
    pub baseline_total: Duration,
    /// Wall time per call once settled: online, and calling the composition directly.
    pub steady_online: Duration,
    /// See `steady_online`.
    pub steady_direct: Duration,
    /// Once settled, the time per call spent in the online tuner itself: the call's wall
    /// time minus the application's closure's.
    pub handle: Duration,
}

/// Tunes the 2D filter of `w x h` frames with an `fs x fs` filter offline (within
/// `offline` evaluations or `seconds`), then runs `calls` calls online from scratch (default
/// settings: 50 configurations, 3 calls each, validation on the device against the host's
/// reference output; settled within `settle_within` calls when given), then as many calls
/// of the offline best, then alternating blocks of calls once settled for the steady-state
/// overhead. The frame stays the same (the measurement is about the tuning, not the
/// transfers).
///
/// # Errors
/// Tuning or launch failures.
#[allow(clippy::too_many_arguments)]
pub fn online_conv<B: Backend>(
    device: Arc<B>,
    w: usize,
    h: usize,
    fs: usize,
    calls: usize,
    offline: u64,
    seconds: f64,
    settle_within: Option<u64>,
) -> tune::Result<OnlineReport> {
    let cuda = is_cuda(device.device());
    let mut conv = super::conv::case::<B>(device.device(), w, h, fs)?;
    let expected = conv.reference(&conv.frame(0));
    let scale = expected.iter().fold(0f32, |m, v| m.max(v.abs()));
    let tol = 1e-3 * (1.0 + scale);
    let compare = if cuda {
        include_str!("../../kernels/compare.cu")
    } else {
        include_str!("../../kernels/compare.cl")
    };
    let maxdiff = conv
        .composition
        .kernel(KernelSource::new(compare, "maxdiff").params(&[]));
    let reference = conv.composition.input(BufferArg::from_vec(expected));
    let diff = conv.composition.scratch::<u32>(|_| 1);
    let (space, dst, n) = (conv.space.clone(), conv.dst, w * h);
    let ev = Arc::new(CompositionEvaluator::new(device, &space, conv.composition)?);

    // Offline: the best within the budget.
    let r = Tuner::new(space.clone(), &*ev)
        .start_from([conv.default.clone()])
        .abort(Evaluations(offline) | Elapsed(Duration::from_secs_f64(seconds)) | WholeSpace)
        .batch(
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .max(2),
        )
        .progress(true)
        .run()?;
    let best = r.best.config.clone();
    let offline_time = r.best.cost.unwrap_or_default();

    // Online, from scratch.
    let mut online = Online::<PreparedComposition<B>>::new("ktt_conv_online").device(ev.device());
    if let Some(n) = settle_within {
        online = online.settle_within(n);
    }
    let prep = ev.clone();
    online.select(&format!("{w}x{h},fs={fs}"), || {
        Ok(Input::new(space.clone(), move |s, c| prep.prepare(s, c)))
    })?;
    let ran: Arc<Mutex<Vec<(u128, Duration)>>> = Default::default();
    let run = |t: &tune::tuner::online::Trial<'_, PreparedComposition<B>>| {
        let (d, time) = ev.call(
            t.space(),
            t.config(),
            t.prepared(),
            |run| {
                if t.validate() {
                    run.write(diff, &[0u32])
                } else {
                    Ok(())
                }
            },
            |run| {
                if !t.validate() {
                    return Ok(None);
                }
                run.launch(maxdiff)
                    .global([256 * 64])
                    .local([256])
                    .arg(dst)
                    .arg(reference)
                    .scalar(n as u32)
                    .arg(diff)
                    .run()?;
                Ok(Some(f32::from_bits(run.read::<u32>(diff)?[0])))
            },
        )?;
        if let Some(d) = d {
            // A NaN difference is a mismatch too.
            if d.is_nan() || d > tol {
                return Err(Failure::WrongResult(format!(
                    "differs by {d} (tolerance {tol})"
                )));
            }
        }
        let index = t.space().index_of(t.config()).unwrap_or(u128::MAX);
        if let Ok(mut v) = ran.lock() {
            v.push((index, time));
        }
        Ok(((), time))
    };
    let mut returned: Vec<u128> = Vec::with_capacity(calls);
    let t0 = Instant::now();
    for _ in 0..calls {
        online.call(&run)?;
        returned.push(
            ran.lock()
                .ok()
                .and_then(|v| v.last().map(|x| x.0))
                .unwrap_or(u128::MAX),
        );
    }
    let online_total = t0.elapsed();

    // The offline best from the start.
    let pb = ev.prepare(&space, &best).map_err(failed)?;
    let t0 = Instant::now();
    for _ in 0..calls {
        ev.call(&space, &best, &pb, |_| Ok(()), |_| Ok(()))
            .map_err(failed)?;
    }
    let baseline_total = t0.elapsed();

    // Steady state: online (settled) against the settled configuration called directly.
    let mut extra = 0;
    while !online.is_settled() && extra < 100 * calls.max(1) {
        online.call(&run)?;
        extra += 1;
    }
    let settled = online.settled().cloned().unwrap_or_else(|| best.clone());
    let ps = ev.prepare(&space, &settled).map_err(failed)?;
    let (mut so, mut sd) = (Duration::ZERO, Duration::ZERO);
    let block = (calls / 20).max(10);
    // The same work on both sides: no bookkeeping in the closure but its own time, so that
    // the handle's time (the call's minus the closure's) is measured too, free of the
    // kernel's noise.
    let inside = std::cell::Cell::new(Duration::ZERO);
    let plain = |t: &tune::tuner::online::Trial<'_, PreparedComposition<B>>| {
        let start = Instant::now();
        let r = ev.call(t.space(), t.config(), t.prepared(), |_| Ok(()), |_| Ok(()));
        inside.set(inside.get() + start.elapsed());
        r
    };
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..block {
            online.call(&plain)?;
        }
        so += t.elapsed();
        let t = Instant::now();
        for _ in 0..block {
            ev.call(&space, &settled, &ps, |_| Ok(()), |_| Ok(()))
                .map_err(failed)?;
        }
        sd += t.elapsed();
    }

    // Each configuration's median time online; the first call from which every returned
    // output came from a configuration at >= 98% of the offline best's speed.
    let ran = ran.lock().map(|v| v.clone()).unwrap_or_default();
    let mut by_config: std::collections::HashMap<u128, Vec<Duration>> = Default::default();
    for (i, t) in &ran {
        by_config.entry(*i).or_default().push(*t);
    }
    let medians: std::collections::HashMap<u128, Duration> = by_config
        .into_iter()
        .map(|(i, mut v)| (i, median(&mut v)))
        .collect();
    let fast = |i: &u128| {
        medians
            .get(i)
            .is_some_and(|t| t.as_secs_f64() * 0.98 <= offline_time.as_secs_f64())
    };
    let calls_to_98 = match returned.iter().rposition(|i| !fast(i)) {
        None => Some(0),
        Some(k) if k + 1 < returned.len() => Some(k + 1),
        Some(_) => None,
    };
    let st = online.stats();
    let steady = (5 * block) as u32;
    Ok(OnlineReport {
        calls,
        settled_after: st.settled_after,
        evaluations: st.evaluations,
        fallback_runs: st.fallback_runs,
        failures: st.failures,
        settled: space.describe(&settled),
        offline: space.describe(&best),
        offline_time,
        settled_time: space
            .index_of(&settled)
            .and_then(|i| medians.get(&i).copied())
            .unwrap_or_default(),
        calls_to_98,
        online_total,
        baseline_total,
        steady_online: so / steady,
        steady_direct: sd / steady,
        handle: so.saturating_sub(inside.get()) / steady,
    })
}
