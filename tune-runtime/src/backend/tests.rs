//! The evaluator on a fake backend: kernels are Rust closures over byte buffers, "compiled"
//! by reading their defines, and timed by a formula of the configuration.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::evaluate::{Cause, Evaluator, Failure, Measured};
use crate::space::{Config, Space};
use crate::{Error, Param, Result, SpaceBuilder};

/// A fake device: `scale` computes `y = 2 * x` (n: int, x: float*, y: float*); with `X == 4`
/// it is the fastest candidate but wrong ("slow but wrong" inverted: fast but wrong).
struct Fake {
    info: DeviceInfo,
    compiles: std::sync::atomic::AtomicUsize,
    launches: std::sync::atomic::AtomicUsize,
    /// Compilations past the slow compiler's sleep.
    finished: std::sync::atomic::AtomicUsize,
    /// Compiles `#serial` sources one at a time (as NVIDIA's OpenCL driver does), and says
    /// so when this is `Some(1)`.
    serial: Mutex<()>,
    at_once: Option<usize>,
}

struct FakeKernel {
    name: String,
    defines: HashMap<String, String>,
}

impl Fake {
    fn new() -> Self {
        Fake {
            info: DeviceInfo {
                backend: "fake".into(),
                platform: "fake".into(),
                name: "fake device".into(),
                vendor: "tune".into(),
                driver_version: "1".into(),
                max_work_group_size: 64,
                max_work_item_sizes: [64, 64, 1],
                local_mem_bytes: 1024,
                global_mem_bytes: 1 << 20,
                compute_units: 1,
                warp_width: 8,
                registers_per_compute_unit: 4096,
                registers_per_work_group: 2048,
                local_mem_per_compute_unit: 1536,
                max_threads_per_compute_unit: 128,
                ..DeviceInfo::default()
            },
            compiles: Default::default(),
            launches: Default::default(),
            finished: Default::default(),
            serial: Mutex::new(()),
            at_once: None,
        }
    }
}

impl Backend for Fake {
    type Buffer = Mutex<Vec<u8>>;
    type Kernel = FakeKernel;

    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn compile(&self, r: &CompileRequest<'_>) -> Result<FakeKernel, Failure> {
        self.compiles
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if r.source.contains("#slow") {
            std::thread::sleep(Duration::from_millis(1500));
        }
        self.finished
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if r.source.contains("#serial") {
            let _one_at_a_time = self.serial.lock().unwrap();
            std::thread::sleep(Duration::from_millis(100));
        }
        if r.source.contains("#error") {
            return Err(Failure::Compile(format!(
                "fake.cl:1: error: {}",
                r.flags().join(" ")
            )));
        }
        if !r.source.contains(r.kernel) {
            return Err(Failure::Compile(format!("no kernel `{}`", r.kernel)));
        }
        Ok(FakeKernel {
            name: r.kernel.to_string(),
            defines: r.defines.iter().cloned().collect(),
        })
    }

    fn builds_at_once(&self) -> Option<usize> {
        self.at_once
    }

    fn kernel_limits(&self, k: &FakeKernel) -> KernelLimits {
        fn get<T: std::str::FromStr>(k: &FakeKernel, name: &str) -> Option<T> {
            k.defines.get(name).and_then(|v| v.parse().ok())
        }
        let get = |name: &str| get::<usize>(k, name);
        KernelLimits {
            max_work_group_size: get("FAKE_MAX"),
            // FAKE_REGS_PER_X: a register count that grows with the tuning parameter X.
            registers: get("FAKE_REGS").or_else(|| {
                let per_x: usize = get("FAKE_REGS_PER_X")?;
                Some(per_x * get("X")?)
            }),
            private_mem_bytes: get("FAKE_PRIVATE"),
            local_mem_bytes: get("FAKE_LOCAL"),
            preferred_multiple: get("FAKE_MULTIPLE"),
        }
    }

    fn alloc(&self, bytes: usize) -> Result<Self::Buffer> {
        Ok(Mutex::new(vec![0; bytes]))
    }

    fn write(&self, b: &mut Self::Buffer, data: &[u8]) -> Result<()> {
        let b = b.get_mut().unwrap();
        b[..data.len()].copy_from_slice(data);
        Ok(())
    }

    fn read(&self, b: &Self::Buffer, out: &mut [u8]) -> Result<()> {
        let b = b.lock().unwrap();
        out.copy_from_slice(&b[..out.len()]);
        Ok(())
    }

    fn launch(
        &self,
        k: &FakeKernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
    ) -> Result<Duration, Failure> {
        self.launches
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let x: u64 = k.defines.get("X").and_then(|v| v.parse().ok()).unwrap_or(1);
        if k.name == "bad_args" || args.len() != 3 {
            return Err(Failure::Launch("CL_INVALID_KERNEL_ARGS".into()));
        }
        let (LaunchArg::Scalar(n), LaunchArg::Buffer(xb), LaunchArg::Buffer(yb)) =
            (&args[0], &args[1], &args[2])
        else {
            return Err(Failure::Launch("wrong argument kinds".into()));
        };
        let n = i32::from_ne_bytes((*n).try_into().unwrap()) as usize;
        let xs = xb.lock().unwrap().clone();
        let mut ys = yb.lock().unwrap();
        // X = 4 is wrong, and so is X = 1 (the slowest) with `WRONG_SLOW` defined.
        let wrong_slow = x == 1 && k.defines.contains_key("WRONG_SLOW");
        let wrong = if x == 4 || wrong_slow { 1.0 } else { 0.0 };
        for i in 0..n.min(dims.global[0] * x as usize) {
            let v = f32::from_ne_bytes(xs[4 * i..4 * i + 4].try_into().unwrap());
            ys[4 * i..4 * i + 4].copy_from_slice(&(2.0 * v + wrong).to_ne_bytes());
        }
        Ok(Duration::from_micros(1000 / x))
    }
}

const SRC: &str = "kernel scale";
const N: usize = 256;

fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<usize>::range("X", 1..=4))
        .param(Param::<usize>::values("LS", [16, 32, 64, 128]))
        .build()
        .unwrap()
}

fn spec() -> KernelSpec {
    KernelSpec::new(SRC, "scale")
        .global(|c| [N / c.get::<usize>(0)])
        .local(|c| [c.get::<usize>(1)])
        .round_up_global(true)
        .scalar(N as i32)
        .buffer(BufferArg::random::<f32>(N, 7))
        .buffer(BufferArg::zeros::<f32>(N).output())
        .reference(|a| {
            let x = a.buffer::<f32>(1)?;
            Ok(vec![x.iter().map(|v| 2.0 * v).collect::<Vec<f32>>().into()])
        })
}

fn find(s: &Space, x: usize, ls: usize) -> Config {
    s.iter()
        .find(|c| c.get::<usize>(0) == x && c.get::<usize>(1) == ls)
        .unwrap()
}

fn eval(ev: &KernelEvaluator<Fake>, s: &Space, c: &Config) -> Result<Measured<Duration>, Failure> {
    let p = ev.prepare(s, c)?;
    ev.measure(s, c, p)
}

#[test]
fn the_right_candidate_wins_over_the_fast_wrong_one() {
    let s = space();
    let ev = KernelEvaluator::<Fake>::new(Fake::new(), &s, spec()).unwrap();
    let mut best: Option<(Duration, Config)> = None;
    let mut wrong = 0;
    for c in s.iter() {
        match eval(&ev, &s, &c) {
            Ok(m) => {
                assert_eq!(m.samples.len(), 5);
                assert!(m.validation.is_some());
                if best.as_ref().is_none_or(|b| m.cost < b.0) {
                    best = Some((m.cost, c));
                }
            }
            Err(Failure::WrongResult(msg)) => {
                assert!(msg.contains("elements differ"), "{msg}");
                assert_eq!(c.get::<usize>(0), 4);
                wrong += 1;
            }
            Err(Failure::Rejected {
                cause: Cause::WorkGroupSize,
                detail: msg,
            }) => {
                assert_eq!(c.get::<usize>(1), 128, "{msg}");
                assert!(msg.contains("exceeds the device limit"), "{msg}");
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(wrong, 3);
    let (cost, c) = best.unwrap();
    assert_eq!(c.get::<usize>(0), 3);
    assert_eq!(cost, Duration::from_micros(333));
}

#[test]
fn defines_cover_every_parameter_kind() {
    let s = SpaceBuilder::new()
        .param(Param::<usize>::range("A", 2..=2))
        .param(Param::bool("B"))
        .param(Param::<i32>::values("C", [-3]))
        .build()
        .unwrap();
    let c = s.get(1).unwrap();
    let spec = spec().define("EXTRA", 7);
    let d = spec.defines_of(&s, &c);
    assert_eq!(
        d,
        vec![
            ("A".to_string(), "2".to_string()),
            ("B".into(), "1".into()),
            ("C".into(), "-3".into()),
            ("EXTRA".into(), "7".into())
        ]
    );
    let flags = CompileRequest {
        source: "",
        kernel: "k",
        defines: &d,
        options: &["-cl-mad-enable".into()],
    }
    .flags();
    assert_eq!(flags[0], "-DA=2");
    assert_eq!(flags[4], "-cl-mad-enable");
}

#[test]
fn compile_failures_keep_the_log_and_cache_hits_skip_compilation() {
    let s = space();
    let fake = Arc::new(Fake::new());
    let bad = KernelEvaluator::<Fake>::new(
        fake.clone(),
        &s,
        KernelSpec::new("#error scale", "scale").global(|_| [N]),
    )
    .unwrap();
    let c = find(&s, 1, 16);
    match bad.prepare(&s, &c) {
        Err(Failure::Compile(log)) => assert!(log.contains("-DX=1"), "{log}"),
        other => panic!("{other:?}"),
    }
    let ev = KernelEvaluator::<Fake>::new(fake.clone(), &s, spec()).unwrap();
    let before = fake.compiles.load(std::sync::atomic::Ordering::SeqCst);
    let p1 = ev.prepare(&s, &c).unwrap();
    let p2 = ev.prepare(&s, &c).unwrap();
    assert_eq!(
        fake.compiles.load(std::sync::atomic::Ordering::SeqCst),
        before + 1
    );
    assert_eq!(p2.compile_time, Duration::ZERO);
    drop(p1);
}

#[test]
fn launch_failures_are_typed() {
    let s = space();
    let ev = KernelEvaluator::<Fake>::new(
        Fake::new(),
        &s,
        KernelSpec::new("kernel bad_args", "bad_args").global(|_| [N]),
    )
    .unwrap();
    let c = find(&s, 1, 16);
    assert!(matches!(eval(&ev, &s, &c), Err(Failure::Launch(_))));
}

#[test]
fn limits_reject_before_compiling() {
    let s = space();
    let fake = Arc::new(Fake::new());
    // Local memory over the device's 1024 bytes.
    let ev = KernelEvaluator::<Fake>::new(
        fake.clone(),
        &s,
        spec().static_local_memory(|c| 512 * c.get::<usize>(0)),
    )
    .unwrap();
    let c = find(&s, 4, 16);
    let before = fake.compiles.load(std::sync::atomic::Ordering::SeqCst);
    match ev.prepare(&s, &c) {
        Err(Failure::Rejected {
            cause: Cause::LocalMemory,
            detail: m,
        }) => assert!(m.contains("local memory"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        fake.compiles.load(std::sync::atomic::Ordering::SeqCst),
        before
    );
    // Global not divisible by local without rounding.
    let ev = KernelEvaluator::<Fake>::new(
        fake.clone(),
        &s,
        KernelSpec::new(SRC, "scale")
            .global(|_| [100])
            .local(|c| [c.get::<usize>(1)]),
    )
    .unwrap();
    match ev.prepare(&s, &find(&s, 1, 16)) {
        Err(Failure::Invalid(m)) => assert!(m.contains("does not divide"), "{m}"),
        other => panic!("{other:?}"),
    }
    // The kernel's own limit, known after compilation.
    let ev = KernelEvaluator::<Fake>::new(fake, &s, spec().define("FAKE_MAX", 16)).unwrap();
    match ev.prepare(&s, &find(&s, 1, 32)) {
        Err(Failure::Rejected {
            cause: Cause::WorkGroupSize,
            detail: m,
        }) => assert!(m.contains("this kernel's limit"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn grid_sizes_convert_to_global() {
    let s = space();
    let ev = KernelEvaluator::<Fake>::new(
        Fake::new(),
        &s,
        spec()
            .grid(|c| [N / c.get::<usize>(0) / c.get::<usize>(1)])
            .dynamic_local_memory(|c| 4 * c.get::<usize>(1)),
    )
    .unwrap();
    let c = find(&s, 1, 32);
    let d = ev.launch_dims(&c).unwrap();
    assert_eq!(d.global, [256, 1, 1]);
    assert_eq!(d.grid(), Some([8, 1, 1]));
    assert_eq!(d.dynamic_local_bytes, 128);
}

#[test]
fn reference_kernel_and_custom_comparator() {
    let s = space();
    let good = find(&s, 1, 16);
    let ev = KernelEvaluator::<Fake>::new(
        Fake::new(),
        &s,
        KernelSpec::new(SRC, "scale")
            .global(|c| [N / c.get::<usize>(0)])
            .scalar(N as i32)
            .buffer(BufferArg::random::<f32>(N, 7))
            .buffer(BufferArg::zeros::<f32>(N).output())
            .reference_kernel(ReferenceKernel::same_kernel(good)),
    )
    .unwrap();
    let x: Vec<f32> = match BufferArg::random::<f32>(N, 7).data() {
        HostData::F32(v) => v.clone(),
        _ => unreachable!(),
    };
    assert_eq!(
        ev.expected().unwrap()[0],
        HostData::from(x.iter().map(|v| 2.0 * v).collect::<Vec<f32>>())
    );
    let four = find(&s, 4, 16);
    assert!(matches!(eval(&ev, &s, &four), Err(Failure::WrongResult(_))));
    // A comparator that accepts anything within 1.5.
    let ev = KernelEvaluator::<Fake>::new(
        Fake::new(),
        &s,
        spec().comparator(|e, a| Tolerance::Absolute(1.5).check(e, a)),
    )
    .unwrap();
    assert!(eval(&ev, &s, &four).is_ok());
}

#[test]
fn tolerances() {
    let e = HostData::from(vec![1.0f32, 100.0]);
    let a = HostData::from(vec![1.001f32, 100.05]);
    assert!(Tolerance::Absolute(0.01).check(&e, &a).is_err());
    assert!(Tolerance::Absolute(0.1).check(&e, &a).is_ok());
    assert!(Tolerance::Relative(1e-3).check(&e, &a).is_err());
    assert!(Tolerance::Relative(2e-3).check(&e, &a).is_ok());
    assert!(Tolerance::PerElement {
        abs: 1e-3,
        rel: 1e-3
    }
    .check(&e, &a)
    .is_ok());
    assert!(Tolerance::Norm(1e-4).check(&e, &a).is_err());
    assert!(Tolerance::Norm(1e-3).check(&e, &a).is_ok());
    assert!(Tolerance::Exact.check(&e, &e).is_ok());
    assert!(Tolerance::Exact.check(&e, &a).is_err());
    let nan = HostData::from(vec![f32::NAN, 100.0]);
    assert!(Tolerance::default().check(&e, &nan).is_err());
    assert!(Tolerance::Norm(1.0).check(&e, &nan).is_err());
    assert!(Tolerance::default()
        .check(&e, &HostData::from(vec![1.0f64, 100.0]))
        .is_err());
}

#[test]
fn inputs_are_restored_and_random_data_is_seeded() {
    assert_eq!(
        BufferArg::random::<f32>(8, 3).data(),
        BufferArg::random::<f32>(8, 3).data()
    );
    assert_ne!(
        BufferArg::random::<f32>(8, 3).data(),
        BufferArg::random::<f32>(8, 4).data()
    );
    let ints = BufferArg::random::<i32>(100, 1);
    let HostData::I32(v) = ints.data() else {
        unreachable!()
    };
    assert!(v.iter().all(|&x| (0..16).contains(&x)));
    // A wrong configuration leaves garbage in y; the next one starts from zeros again.
    let s = space();
    let ev = KernelEvaluator::<Fake>::new(Fake::new(), &s, spec()).unwrap();
    let four = find(&s, 4, 16);
    assert!(eval(&ev, &s, &four).is_err());
    assert!(eval(&ev, &s, &find(&s, 1, 16)).is_ok());
}

#[test]
fn spec_errors() {
    let s = space();
    let e =
        KernelEvaluator::<Fake>::new(Fake::new(), &s, KernelSpec::new(SRC, "scale")).unwrap_err();
    assert!(e.to_string().contains(".global("), "{e}");
    let e = KernelEvaluator::<Fake>::new(Fake::new(), &s, spec().reference(|_| Ok(vec![])))
        .unwrap_err();
    assert!(e.to_string().contains("1 outputs"), "{e}");
    let e = KernelEvaluator::<Fake>::new(
        Fake::new(),
        &s,
        spec().reference(|a| Ok(vec![a.buffer::<i32>(1)?.to_vec().into()])),
    )
    .unwrap_err();
    assert!(e.to_string().contains("not of `int`"), "{e}");
}

#[test]
fn reference_kernel_failures_say_compile_or_launch() {
    let s = space();
    let with_reference = |r: ReferenceKernel| {
        KernelEvaluator::<Fake>::new(Fake::new(), &s, spec().reference_kernel(r)).unwrap_err()
    };
    let good = find(&s, 1, 16);
    match with_reference(ReferenceKernel::new("#error", "scale").config(good.clone())) {
        Error::ReferenceKernel {
            backend,
            failure: Failure::Compile(log),
        } => {
            assert_eq!(backend, "fake");
            assert!(log.contains("fake.cl:1"), "{log}");
        }
        other => panic!("{other:?}"),
    }
    match with_reference(ReferenceKernel::new("kernel bad_args", "bad_args").config(good)) {
        e @ Error::ReferenceKernel {
            failure: Failure::Launch(_),
            ..
        } => assert!(e.to_string().contains("reference kernel"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn slow_configurations_time_out_without_repetitions() {
    let s = space();
    let ev = KernelEvaluator::<Fake>::new(
        Fake::new(),
        &s,
        spec().time_limit(Duration::from_micros(400)),
    )
    .unwrap();
    // X = 1 takes 1000 us, X = 3 takes 333 us.
    assert!(matches!(
        eval(&ev, &s, &find(&s, 1, 16)),
        Err(Failure::Timeout(d)) if d == Duration::from_micros(1000)
    ));
    assert!(eval(&ev, &s, &find(&s, 3, 16)).is_ok());
    ev.set_time_limit(None);
    assert!(eval(&ev, &s, &find(&s, 1, 16)).is_ok());
}

crate::testgen_backend!(
    Fake,
    Some(Arc::new(Fake::new())),
    "kernel scale",
    "#error scale"
);

#[path = "tests_checks.rs"]
mod checks;

fn launches(fake: &Fake) -> usize {
    fake.launches.load(std::sync::atomic::Ordering::SeqCst)
}

#[test]
fn configurations_far_slower_than_the_best_stop_early_as_valid() {
    let s = space();
    let fake = Arc::new(Fake::new());
    let ev = KernelEvaluator::<Fake>::new(fake.clone(), &s, spec().slower_than_best(2.0)).unwrap();
    // Nothing measured yet: no limit. X = 1 takes 1000 us, X = 3 takes 333 us.
    let full = eval(&ev, &s, &find(&s, 1, 16)).unwrap();
    assert!(!full.stopped_early);
    assert_eq!(full.samples.len(), 5);
    assert!(eval(&ev, &s, &find(&s, 3, 16)).is_ok());
    // 1000 us > 2 x 333 us: valid (validated), flagged, with the time of its one run.
    let before = launches(&fake);
    let m = eval(&ev, &s, &find(&s, 1, 32)).unwrap();
    assert!(m.stopped_early);
    assert_eq!(m.cost, Duration::from_micros(1000));
    assert_eq!(m.samples, vec![1e-3]);
    assert!(m.validation.is_some());
    assert_eq!(launches(&fake), before + 1, "no warm-ups or repetitions");
    // Within the factor: measured in full.
    assert!(!eval(&ev, &s, &find(&s, 2, 16)).unwrap().stopped_early);
    // A slow configuration with a wrong result is still a wrong result.
    let ev = KernelEvaluator::<Fake>::new(
        Fake::new(),
        &s,
        spec().define("WRONG_SLOW", 1).slower_than_best(2.0),
    )
    .unwrap();
    assert!(eval(&ev, &s, &find(&s, 3, 16)).is_ok());
    assert!(matches!(
        eval(&ev, &s, &find(&s, 1, 16)),
        Err(Failure::WrongResult(_))
    ));
}

#[test]
fn a_tuning_run_records_slow_configurations_as_valid() {
    let s = space();
    let ev = KernelEvaluator::<Fake>::new(Fake::new(), &s, spec().slower_than_best(2.0)).unwrap();
    // The fastest first, then the rest in index order.
    let fastest = find(&s, 3, 16);
    let r = crate::Tuner::new(s, &ev)
        .technique(crate::search::Exhaustive::new())
        .start_from([fastest])
        .progress(false)
        .run()
        .unwrap();
    // X = 1..3 with LS 16, 32, 64 are right; X = 4 is wrong; LS = 128 is over the limit.
    assert_eq!(r.valid, 9, "{:?}", r.failures);
    assert_eq!(r.failures.get("timeout"), None, "{:?}", r.failures);
    assert_eq!(r.best.cost, Some(Duration::from_micros(333)));
    // X = 1 stops after its validated first run: valid, with the time of that run as its
    // cost.
    let stopped: Vec<_> = r
        .records
        .iter()
        .filter(|x| x.is_ok() && x.samples.len() == 1)
        .collect();
    assert_eq!(stopped.len(), 3, "{:?}", r.records);
    assert!(stopped.iter().all(|x| x.cost == Some(1e-3)), "{stopped:?}");
}

#[test]
fn launches_per_sample_are_chosen_once_for_all_configurations() {
    let s = space();
    let fake = Arc::new(Fake::new());
    let ev = KernelEvaluator::<Fake>::new(
        fake.clone(),
        &s,
        spec().launches_per_sample(8).warmups(1).repetitions(5),
    )
    .unwrap();
    assert_eq!(ev.launches_per_sample(), None);
    // The first valid configuration chooses: X = 3 takes 333 us, three fit in a millisecond.
    let m = eval(&ev, &s, &find(&s, 3, 32)).unwrap();
    assert_eq!(ev.launches_per_sample(), Some(3));
    assert_eq!(m.cost, Duration::from_micros(333));
    // A slower configuration is timed with three too (it would have had one of its own):
    // the validated run, one warm-up sample and five timed samples of three launches.
    let before = launches(&fake);
    let m = eval(&ev, &s, &find(&s, 1, 32)).unwrap();
    assert_eq!(launches(&fake) - before, 1 + 3 + 5 * 3);
    assert_eq!(m.cost, Duration::from_micros(1000));
    // In the other order, the slow configuration chooses one launch for all; a wrong one
    // chooses nothing.
    let ev = KernelEvaluator::<Fake>::new(Fake::new(), &s, spec().launches_per_sample(8)).unwrap();
    assert!(eval(&ev, &s, &find(&s, 4, 32)).is_err());
    assert_eq!(ev.launches_per_sample(), None);
    eval(&ev, &s, &find(&s, 1, 32)).unwrap();
    eval(&ev, &s, &find(&s, 3, 32)).unwrap();
    assert_eq!(ev.launches_per_sample(), Some(1));
}

#[test]
fn launches_per_sample_time_back_to_back_runs_per_launch() {
    let s = space();
    let c = find(&s, 2, 32);
    let fake = Arc::new(Fake::new());
    let spec = spec().launches_per_sample(8).warmups(1).repetitions(5);
    let ev = KernelEvaluator::<Fake>::new(fake.clone(), &s, spec).unwrap();
    let m = eval(&ev, &s, &c).unwrap();
    // Each launch takes 500 us: per sample, two of them fit in about a millisecond (not 8),
    // and the sample is their time divided by two.
    assert_eq!(m.cost, Duration::from_micros(500));
    assert!(m.samples.iter().all(|&t| (t - 500e-6).abs() < 1e-9));
    assert!(m.validation.is_some());
    // The validated run, one warm launch that chooses the count, a warm-up, 5 samples.
    assert_eq!(launches(&fake), 1 + 1 + 2 + 5 * 2);
}

#[test]
fn compilations_past_the_limit_are_timeouts() {
    let s = space();
    let c = find(&s, 2, 32);
    let fake = Arc::new(Fake::new());
    let slow = |limit| {
        let mut spec = KernelSpec::new("#slow kernel scale", "scale");
        spec = spec
            .global(|c| [N / c.get::<usize>(0)])
            .local(|c| [c.get::<usize>(1)])
            .scalar(N as i32)
            .buffer(BufferArg::random::<f32>(N, 7))
            .buffer(BufferArg::zeros::<f32>(N))
            .compile_time_limit(limit);
        KernelEvaluator::<Fake>::new(fake.clone(), &s, spec).unwrap()
    };
    let ev = slow(Duration::from_millis(50));
    let t = Instant::now();
    let r = ev.prepare(&s, &c);
    assert!(matches!(r, Err(Failure::Timeout(d)) if d == Duration::from_millis(50)));
    assert!(t.elapsed() < Duration::from_millis(1000));
    // The compilation that timed out is still inside the compiler: dropping the evaluator
    // waits for it (a process that exits with a thread inside a driver's compiler can crash).
    let finished = || fake.finished.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(finished(), 0);
    drop(ev);
    assert_eq!(finished(), 1);
    assert!(slow(Duration::from_secs(30)).prepare(&s, &c).is_ok());
}

/// A compiler that builds one program at a time: four configurations prepared at once
/// each compile in 100 ms, within a 250 ms limit, since the wait for the compiler is not
/// counted when the backend says it builds one at a time. (Without saying so, the fourth
/// waits 300 ms inside the compiler and times out: NVIDIA's OpenCL on 16 threads timed out 55
/// of 60 XgemmDirect configurations that way.)
#[test]
fn the_wait_for_a_serial_compiler_is_not_compile_time() {
    let s = space();
    let prepare_four = |at_once| {
        let spec = KernelSpec::new("#serial kernel scale", "scale")
            .global(|c| [N / c.get::<usize>(0)])
            .local(|c| [c.get::<usize>(1)])
            .scalar(N as i32)
            .buffer(BufferArg::random::<f32>(N, 7))
            .buffer(BufferArg::zeros::<f32>(N))
            .compile_time_limit(Duration::from_millis(250));
        let fake = Fake {
            at_once,
            ..Fake::new()
        };
        let ev = KernelEvaluator::<Fake>::new(fake, &s, spec).unwrap();
        let configs: Vec<Config> = [(1, 16), (1, 32), (2, 16), (2, 32)]
            .map(|(x, ls)| find(&s, x, ls))
            .to_vec();
        std::thread::scope(|sc| {
            let handles: Vec<_> = configs
                .iter()
                .map(|c| sc.spawn(|| ev.prepare(&s, c).map(|p| p.compile_time)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        })
    };
    for r in prepare_four(Some(1)) {
        let t = r.unwrap();
        assert!(t < Duration::from_millis(250), "{t:?}");
    }
    let unsaid = prepare_four(None);
    assert!(
        unsaid.iter().any(|r| matches!(r, Err(Failure::Timeout(_)))),
        "{unsaid:?}"
    );
}

/// Outputs are checked in parallel chunks, from the bytes read back: a configuration that
/// leaves only the last elements of a large output unwritten is still caught, right after a
/// right one filled them (outputs are reset before every configuration), with the tolerance
/// and with a comparator.
#[test]
fn a_wrong_tail_of_a_large_output_is_caught_after_a_right_configuration() {
    const BIG: usize = 3 * 65536 + 100;
    let s = SpaceBuilder::new()
        .param(Param::<usize>::values("X", [1, 2]))
        .build()
        .unwrap();
    let spec = || {
        KernelSpec::new(SRC, "scale")
            // X = 2 launches one work-item too few: the last two outputs stay unwritten.
            .global(|c| match c.get::<usize>(0) {
                2 => [BIG / 2 - 1],
                _ => [BIG],
            })
            .scalar(BIG as i32)
            .buffer(BufferArg::random::<f32>(BIG, 7))
            .buffer(BufferArg::zeros::<f32>(BIG).output())
            .reference(|a| {
                let x = a.buffer::<f32>(1)?;
                Ok(vec![x.iter().map(|v| 2.0 * v).collect::<Vec<f32>>().into()])
            })
    };
    let (right, short) = (s.get(0).unwrap(), s.get(1).unwrap());
    for spec in [
        spec(),
        spec().comparator(|e, a| Tolerance::default().check(e, a)),
    ] {
        let ev = KernelEvaluator::<Fake>::new(Fake::new(), &s, spec).unwrap();
        assert!(eval(&ev, &s, &right).is_ok());
        match eval(&ev, &s, &short) {
            Err(Failure::WrongResult(m)) => assert!(
                m.contains(&format!("2 of {BIG} elements differ; first at {}", BIG - 2)),
                "{m}"
            ),
            other => panic!("expected a wrong result, got {other:?}"),
        }
        assert!(eval(&ev, &s, &right).is_ok());
    }
}

/// `__constant__` arrays reach the backend after compiling; a backend without them (the
/// default: OpenCL's constant memory is an argument) fails the configuration saying which,
/// every time (the kernel is not cached half-ready).
#[test]
fn constants_a_backend_cannot_fill_fail_the_configuration() {
    let s = space();
    let ev = KernelEvaluator::<Fake>::new(
        Fake::new(),
        &s,
        spec().constant("taps", BufferArg::from_vec(vec![1.0f32; 4])),
    )
    .unwrap();
    let c = find(&s, 1, 16);
    for _ in 0..2 {
        match ev.prepare(&s, &c) {
            Err(Failure::Other(m)) => assert!(
                m.contains("cannot fill module-scope constant memory (taps)"),
                "{m}"
            ),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
    assert!(
        format!("{:?}", spec().constant("taps", BufferArg::zeros::<f32>(1)))
            .contains("constants: [\"taps\"]")
    );
    // Without constants nothing changes.
    assert!(!format!("{:?}", spec()).contains("constants"));
}
