//! Compositions on a fake backend whose kernels are Rust functions of their arguments: the
//! evaluator's restore, validation, timing, failure and caching behaviour. The real devices
//! are exercised in `tests/ktt.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::abort::Evaluations;
use crate::backend::{CompileRequest, DeviceInfo, KernelLimits, LaunchArg, LaunchDims};
use crate::evaluate::{Evaluator, Failure};
use crate::space::SpaceBuilder;
use crate::{Param, Tuner};

struct Fake {
    info: DeviceInfo,
    compiles: AtomicUsize,
    launches: AtomicUsize,
}

struct FakeKernel {
    name: String,
    defines: HashMap<String, String>,
}

impl Fake {
    fn new() -> Arc<Self> {
        Arc::new(Fake {
            info: DeviceInfo {
                backend: "fake".into(),
                name: "fake device".into(),
                max_work_group_size: 256,
                max_work_item_sizes: [256, 256, 1],
                local_mem_bytes: 1024,
                ..Default::default()
            },
            compiles: AtomicUsize::new(0),
            launches: AtomicUsize::new(0),
        })
    }
}

fn f32s(b: &Mutex<Vec<u8>>) -> Vec<f32> {
    b.lock()
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

fn set_f32s(b: &Mutex<Vec<u8>>, v: &[f32]) {
    let mut g = b.lock().unwrap();
    for (i, x) in v.iter().enumerate() {
        g[4 * i..4 * i + 4].copy_from_slice(&x.to_ne_bytes());
    }
}

impl Backend for Fake {
    type Buffer = Mutex<Vec<u8>>;
    type Kernel = FakeKernel;

    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn compile(&self, r: &CompileRequest<'_>) -> Result<FakeKernel, Failure> {
        self.compiles.fetch_add(1, Ordering::SeqCst);
        let defines: HashMap<String, String> = r.defines.iter().cloned().collect();
        if r.source.contains("#error") || defines.get("BROKEN").is_some_and(|v| v == "1") {
            return Err(Failure::Compile(format!(
                "fake: error: {}",
                r.flags().join(" ")
            )));
        }
        Ok(FakeKernel {
            name: r.kernel.to_string(),
            defines,
        })
    }

    fn kernel_limits(&self, _k: &FakeKernel) -> KernelLimits {
        KernelLimits {
            max_work_group_size: Some(128),
            ..Default::default()
        }
    }

    fn alloc(&self, bytes: usize) -> crate::Result<Self::Buffer> {
        Ok(Mutex::new(vec![0; bytes]))
    }

    fn write(&self, b: &mut Self::Buffer, data: &[u8]) -> crate::Result<()> {
        b.get_mut().unwrap()[..data.len()].copy_from_slice(data);
        Ok(())
    }

    fn read(&self, b: &Self::Buffer, out: &mut [u8]) -> crate::Result<()> {
        out.copy_from_slice(&b.lock().unwrap()[..out.len()]);
        Ok(())
    }

    fn launch(
        &self,
        k: &FakeKernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
    ) -> Result<Duration, Failure> {
        self.launches.fetch_add(1, Ordering::SeqCst);
        let buf = |i: usize| match args.get(i) {
            Some(LaunchArg::Buffer(b)) => Ok(*b),
            _ => Err(Failure::Launch(format!("argument {i} is not a buffer"))),
        };
        match k.name.as_str() {
            // One pass of a reduction: group g sums its `local` elements (times VW).
            "sum_pass" => {
                let (src, dst) = (buf(0)?, buf(1)?);
                let Some(LaunchArg::Scalar(n)) = args.get(2) else {
                    return Err(Failure::Launch("argument 2 is not a scalar".into()));
                };
                let n = u32::from_ne_bytes((*n).try_into().unwrap()) as usize;
                let vw: usize = k.defines.get("VW").map_or(1, |v| v.parse().unwrap());
                let local = dims.local.map_or(1, |l| l[0]);
                let per_group = local * vw;
                let groups = dims.global[0] / local;
                let x = f32s(src);
                let sums: Vec<f32> = (0..groups)
                    .map(|g| {
                        x[(g * per_group).min(n)..((g + 1) * per_group).min(n)]
                            .iter()
                            .sum()
                    })
                    .collect();
                set_f32s(dst, &sums);
                // Wider vectors are faster.
                Ok(Duration::from_micros((100 / vw) as u64))
            }
            "inc" => {
                let b = buf(0)?;
                let v: Vec<f32> = f32s(b).iter().map(|x| x + 1.0).collect();
                set_f32s(b, &v);
                Ok(Duration::from_micros(10))
            }
            "fail" => Err(Failure::Launch("CL_OUT_OF_RESOURCES".into())),
            // Scalars 0, 1, 2, .. after a buffer: one microsecond per argument.
            "nargs" => {
                for (i, a) in args.iter().enumerate().skip(1) {
                    let want = (i as u32 - 1).to_ne_bytes();
                    if !matches!(a, LaunchArg::Scalar(b) if *b == want.as_slice()) {
                        return Err(Failure::Launch(format!("argument {i} is {a:?}")));
                    }
                }
                Ok(Duration::from_micros(args.len() as u64))
            }
            other => Err(Failure::Launch(format!("no fake kernel `{other}`"))),
        }
    }
}

const N: usize = 1000;

fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<usize>::values("WG", [2, 4, 8, 16]))
        .param(Param::<usize>::values("VW", [1, 2, 4]))
        .build()
        .unwrap()
}

/// A reduction that launches `sum_pass` until one element remains: the number of passes
/// depends on the configuration. Returns the composition and the launches of its last run.
fn reduction(launches: Arc<AtomicUsize>) -> Composition<Fake> {
    let mut c = Composition::new();
    let k = c.kernel(KernelSource::new("sum_pass", "sum_pass"));
    let x = c.input(BufferArg::from_vec(
        (0..N).map(|i| i as f32).collect::<Vec<_>>(),
    ));
    let parts = [c.scratch::<f32>(|_| N), c.scratch::<f32>(|_| N)];
    let sum = c.buffer(BufferArg::zeros::<f32>(1).output());
    c.host(move |run| {
        let (wg, vw) = (run.value::<usize>("WG")?, run.value::<usize>("VW")?);
        let (mut len, mut from, mut pass) = (N, x, 0);
        loop {
            let groups = len.div_ceil(wg * vw);
            let to = if groups == 1 { sum } else { parts[pass % 2] };
            run.launch(k)
                .global([groups * wg])
                .local([wg])
                .arg(from)
                .arg(to)
                .scalar(len as u32)
                .run()?;
            if groups == 1 {
                launches.store(run.launches(), Ordering::SeqCst);
                return Ok(());
            }
            (len, from, pass) = (groups, to, pass + 1);
        }
    });
    c.reference(move |i| {
        let s: f32 = i.get::<f32>(x)?.iter().sum();
        Ok(vec![HostData::from(vec![s])])
    });
    c.repetitions(3);
    c
}

fn eval<E: Evaluator>(ev: &E, s: &Space, c: &Config) -> Result<crate::Measured<E::Cost>, Failure> {
    let p = ev.prepare(s, c)?;
    ev.measure(s, c, p)
}

#[test]
fn iterations_follow_the_configuration() {
    let s = space();
    let launches = Arc::new(AtomicUsize::new(0));
    let ev = CompositionEvaluator::new(Fake::new(), &s, reduction(launches.clone())).unwrap();
    for c in s.iter() {
        let (wg, vw) = (c.get::<usize>(0), c.get::<usize>(1));
        let m = eval(&ev, &s, &c).unwrap();
        // Passes until one element remains.
        let (mut len, mut passes) = (N, 0);
        while len > 1 {
            len = len.div_ceil(wg * vw);
            passes += 1;
        }
        assert_eq!(launches.load(Ordering::SeqCst), passes, "WG={wg} VW={vw}");
        assert_eq!(m.cost, Duration::from_micros((passes * 100 / vw) as u64));
        assert_eq!(m.samples.len(), 3);
        assert!(m.validation.is_some());
    }
}

#[test]
fn a_tuning_run_finds_the_fewest_passes() {
    let s = space();
    let ev = CompositionEvaluator::new(Fake::new(), &s, reduction(Default::default())).unwrap();
    let r = Tuner::new(s.clone(), &ev)
        .progress(false)
        .batch(4)
        .threads(2)
        .run()
        .unwrap();
    assert_eq!(r.valid, s.len() as u64);
    let best = s.describe(&r.best.config);
    // WG = 8 and 16 with VW = 4 both take 2 passes (1000 -> 32 -> 1, 1000 -> 16 -> 1) and
    // cost the same: which one is "best" is the order the technique measured them in.
    assert!(
        (best.contains("WG=16") || best.contains("WG=8")) && best.contains("VW=4"),
        "{best}"
    );
}

#[test]
fn a_failing_kernel_fails_its_configuration_and_the_run_goes_on() {
    let s = space();
    let mut c = reduction(Default::default());
    let fail = c.kernel(KernelSource::new("fail", "fail"));
    let inner = c.host.clone().unwrap();
    // WG = 8 launches a kernel that fails; the host code ignores the error.
    c.host(move |run| {
        if run.value::<usize>("WG")? == 8 {
            let _ignored = run.launch(fail).global([8]).run();
        }
        inner(run)
    });
    let ev = CompositionEvaluator::new(Fake::new(), &s, c).unwrap();
    let r = Tuner::new(s.clone(), &ev)
        .progress(false)
        .abort(Evaluations(100))
        .run()
        .unwrap();
    assert_eq!(r.failures.get("launch"), Some(&3), "{:?}", r.failures);
    assert_eq!(r.valid, s.len() as u64 - 3);
    let failed = r.records.iter().find(|x| x.status == "launch").unwrap();
    assert!(failed
        .detail
        .as_deref()
        .unwrap()
        .contains("CL_OUT_OF_RESOURCES"));
}

#[test]
fn compile_errors_surface_when_the_kernel_is_launched() {
    let s = space();
    let mut c = reduction(Default::default());
    // A kernel that does not compile with VW = 2 and is launched only with WG = 2.
    let broken = c.kernel(
        KernelSource::new("inc", "inc").define_with("BROKEN", |c| u8::from(c.get::<usize>(1) == 2)),
    );
    let scratch = c.scratch::<f32>(|_| 4);
    let inner = c.host.clone().unwrap();
    c.host(move |run| {
        if run.value::<usize>("WG")? == 2 {
            run.launch(broken)
                .global([4])
                .local([4])
                .arg(scratch)
                .run()?;
        }
        inner(run)
    });
    let ev = CompositionEvaluator::new(Fake::new(), &s, c).unwrap();
    let at = |wg: usize, vw: usize| {
        s.config_from_values([
            ("WG", Value::UInt(wg as u64)),
            ("VW", Value::UInt(vw as u64)),
        ])
        .unwrap()
    };
    assert!(
        matches!(eval(&ev, &s, &at(2, 2)), Err(Failure::Compile(m)) if m.contains("kernel `inc`"))
    );
    eval(&ev, &s, &at(4, 2)).unwrap();
    eval(&ev, &s, &at(2, 4)).unwrap();
}

use crate::param::Value;

#[test]
fn kernels_restricted_to_their_parameters_share_compilations() {
    let s = space();
    let fake = Fake::new();
    let mut c = reduction(Default::default());
    c.kernels[0] = KernelSource::new("sum_pass", "sum_pass").params(&["VW"]);
    let ev = CompositionEvaluator::new(fake.clone(), &s, c).unwrap();
    for cfg in s.iter() {
        eval(&ev, &s, &cfg).unwrap();
    }
    // One compilation per value of VW, not per configuration.
    assert_eq!(fake.compiles.load(Ordering::SeqCst), 3);

    let mut bad = reduction(Default::default());
    bad.kernels[0] = KernelSource::new("sum_pass", "sum_pass").params(&["VX"]);
    let e = CompositionEvaluator::new(Fake::new(), &s, bad).unwrap_err();
    assert!(
        e.to_string().contains("`VX`") && e.to_string().contains("`VW`"),
        "{e}"
    );
}

#[test]
fn written_buffers_are_restored_before_every_run() {
    let s = space();
    let mut c = Composition::<Fake>::new();
    let inc = c.kernel(KernelSource::new("inc", "inc"));
    let acc = c.buffer(BufferArg::zeros::<f32>(4).output());
    c.host(move |run| {
        if run.read::<f32>(acc)? != vec![0.0; 4] {
            return Err(Failure::Other("the accumulator was not restored".into()));
        }
        run.launch(inc).global([4]).local([4]).arg(acc).run()?;
        Ok(())
    });
    c.reference(|_| Ok(vec![HostData::from(vec![1.0f32; 4])]));
    c.warmups(2).repetitions(5);
    let ev = CompositionEvaluator::new(Fake::new(), &s, c).unwrap();
    for cfg in s.iter().take(3) {
        // Validated on its first run, and never accumulated over later runs.
        let m = eval(&ev, &s, &cfg).unwrap();
        assert_eq!(m.cost, Duration::from_micros(10));
    }
}

#[test]
fn outputs_are_restored_before_every_configuration_only() {
    let s = space();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let mut c = Composition::<Fake>::new();
    let inc = c.kernel(KernelSource::new("inc", "inc"));
    let out = c.output(BufferArg::zeros::<f32>(1));
    c.host(move |run| {
        log.lock().unwrap().push(run.read::<f32>(out)?[0]);
        run.launch(inc).global([1]).local([1]).arg(out).run()?;
        Ok(())
    });
    c.warmups(0).repetitions(2);
    let ev = CompositionEvaluator::new(Fake::new(), &s, c).unwrap();
    for cfg in s.iter().take(2) {
        eval(&ev, &s, &cfg).unwrap();
    }
    assert_eq!(*seen.lock().unwrap(), vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
}

#[test]
fn wrong_outputs_are_wrong_results() {
    let s = space();
    let mut c = reduction(Default::default());
    c.reference(|_| Ok(vec![HostData::from(vec![1.0f32])]));
    let ev = CompositionEvaluator::new(Fake::new(), &s, c).unwrap();
    let cfg = s.get(0).unwrap();
    assert!(matches!(eval(&ev, &s, &cfg), Err(Failure::WrongResult(m)) if m.contains("output 0")));
}

#[test]
fn references_by_configuration_and_by_composition() {
    let s = space();
    let cfg = s.get(5).unwrap();
    let mut c = reduction(Default::default());
    c.reference_config(cfg.clone());
    let ev = CompositionEvaluator::new(Fake::new(), &s, c).unwrap();
    assert_eq!(
        ev.expected().unwrap()[0],
        HostData::from(vec![499_500.0f32])
    );
    eval(&ev, &s, &s.get(7).unwrap()).unwrap();

    let mut c = reduction(Default::default());
    c.reference_composition(reduction(Default::default()), s.clone(), cfg);
    let ev = CompositionEvaluator::new(Fake::new(), &s, c).unwrap();
    assert_eq!(
        ev.expected().unwrap()[0],
        HostData::from(vec![499_500.0f32])
    );

    let mut c = reduction(Default::default());
    c.reference(|_| Ok(vec![]));
    let e = CompositionEvaluator::new(Fake::new(), &s, c).unwrap_err();
    assert!(e.to_string().contains("0 outputs"), "{e}");
}

#[test]
fn timing_modes() {
    let s = space();
    let host_work = Duration::from_millis(20);
    let make = |timing: Timing| {
        let mut c = Composition::<Fake>::new();
        let inc = c.kernel(KernelSource::new("inc", "inc"));
        let acc = c.buffer(BufferArg::zeros::<f32>(4));
        c.host(move |run| {
            run.launch(inc).global([4]).local([4]).arg(acc).run()?;
            std::thread::sleep(host_work);
            Ok(())
        });
        c.timing(timing).warmups(0).repetitions(1);
        CompositionEvaluator::new(Fake::new(), &s, c).unwrap()
    };
    let cfg = s.get(0).unwrap();
    let device = eval(&make(Timing::Device), &s, &cfg).unwrap().cost;
    assert_eq!(device, Duration::from_micros(10));
    let mixed = eval(&make(Timing::DeviceAndHost), &s, &cfg).unwrap().cost;
    assert!(mixed >= host_work + Duration::from_micros(10), "{mixed:?}");
    let wall = eval(&make(Timing::Wall), &s, &cfg).unwrap().cost;
    assert!(wall >= host_work, "{wall:?}");
}

#[test]
fn launches_are_checked_against_the_limits() {
    let s = space();
    let mut c = Composition::<Fake>::new();
    let inc = c.kernel(
        KernelSource::new("inc", "inc")
            .global(|_| [256])
            .local(|c| [c.get::<usize>(0) * 16]),
    );
    let acc = c.buffer(BufferArg::zeros::<f32>(256));
    c.host(move |run| {
        let wg = run.value::<usize>("WG")?;
        if wg == 2 {
            // Does not divide.
            return run
                .launch(inc)
                .global([100])
                .local([64])
                .arg(acc)
                .run()
                .map(|_| ());
        }
        if wg == 4 {
            return run
                .launch(inc)
                .global([64])
                .local([64])
                .local_mem::<f32>(1000)
                .arg(acc)
                .run()
                .map(|_| ());
        }
        // The declared sizes: a work-group of WG * 16 (256 with WG = 16: over the kernel's 128).
        run.launch(inc).arg(acc).run().map(|_| ())
    });
    c.warmups(0).repetitions(1);
    let ev = CompositionEvaluator::new(Fake::new(), &s, c).unwrap();
    let at = |wg: u64| {
        s.config_from_values([("WG", Value::UInt(wg)), ("VW", Value::UInt(1))])
            .unwrap()
    };
    let msg = |r: Result<crate::Measured<Duration>, Failure>| match r {
        Err(Failure::Invalid(m)) => m,
        other => panic!("{other:?}"),
    };
    assert!(msg(eval(&ev, &s, &at(2))).contains("does not divide"));
    assert!(msg(eval(&ev, &s, &at(4))).contains("local memory"));
    eval(&ev, &s, &at(8)).unwrap();
    assert!(msg(eval(&ev, &s, &at(16))).contains("exceeds the limit 128"));
}

#[test]
fn sizes_from_the_configuration_are_computed_once_per_prepared_configuration() {
    let s = space();
    let calls = Arc::new(AtomicUsize::new(0));
    let (g, l, n) = (calls.clone(), calls.clone(), calls.clone());
    let mut c = Composition::<Fake>::new();
    let inc = c.kernel(
        KernelSource::new("inc", "inc")
            .global(move |_| {
                g.fetch_add(1, Ordering::SeqCst);
                [8]
            })
            .local(move |c| {
                l.fetch_add(1, Ordering::SeqCst);
                [c.get::<usize>(0)]
            }),
    );
    let scratch = c.scratch::<f32>(move |_| {
        n.fetch_add(1, Ordering::SeqCst);
        8
    });
    c.host(move |run| {
        // Two launches per run, by the declared sizes.
        run.launch(inc).arg(scratch).run()?;
        run.launch(inc).arg(scratch).run().map(|_| ())
    });
    c.warmups(2).repetitions(5);
    let ev = CompositionEvaluator::new(Fake::new(), &s, c).unwrap();
    let cfg = s.get(0).unwrap();
    eval(&ev, &s, &cfg).unwrap();
    // Global, local and the scratch length: once each, for 8 runs of 2 launches.
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[test]
fn launches_with_more_arguments_than_are_held_inline() {
    let (q, k) = {
        let q = Queue::<Fake>::new(Fake::new());
        let k = q.kernel(&KernelSource::new("nargs", "nargs")).unwrap();
        (q, k)
    };
    let b = q.zeros::<f32>(2).unwrap();
    let mut l = q.launch(&k).global([2]).local([2]).arg(&b);
    for i in 0..20u32 {
        l = l.scalar(i);
    }
    assert_eq!(l.run().unwrap(), Duration::from_micros(21));
}

#[test]
fn swapped_buffers_are_read_through_their_final_names() {
    let s = space();
    let mut c = Composition::<Fake>::new();
    let inc = c.kernel(KernelSource::new("inc", "inc"));
    let a = c.buffer(BufferArg::zeros::<f32>(2).output());
    let b = c.buffer(BufferArg::from_vec(vec![10.0f32; 2]));
    c.host(move |run| {
        run.swap(a, b)?;
        // `a` now names the buffer declared as `b`.
        run.launch(inc).global([2]).local([2]).arg(a).run()?;
        assert_eq!(run.read::<f32>(a)?, vec![11.0, 11.0]);
        assert_eq!(run.len(b)?, 2);
        assert!(run.read::<u32>(a).is_err());
        Ok(())
    });
    c.reference(|_| Ok(vec![HostData::from(vec![11.0f32; 2])]));
    let ev = CompositionEvaluator::new(Fake::new(), &s, c).unwrap();
    eval(&ev, &s, &s.get(0).unwrap()).unwrap();
}

#[test]
fn an_application_call_uses_its_own_data() {
    let s = space();
    let mut c = reduction(Default::default());
    c.repetitions(1);
    let x = BufferId(0);
    let sum = BufferId(3);
    let ev = CompositionEvaluator::new(Fake::new(), &s, c).unwrap();
    let cfg = s.get(4).unwrap();
    let p = ev.prepare(&s, &cfg).unwrap();
    for k in 1..4 {
        let data = vec![k as f32; N];
        let (out, cost) = ev
            .call(
                &s,
                &cfg,
                &p,
                |run| run.write(x, &data),
                |run| run.read::<f32>(sum),
            )
            .unwrap();
        assert_eq!(out, vec![(k * N) as f32]);
        assert!(cost > Duration::ZERO);
    }
    // Tuning restores the declared input after the application wrote its own.
    eval(&ev, &s, &cfg).unwrap();
}

#[test]
fn a_queue_compiles_once_and_launches() {
    let fake = Fake::new();
    let q = Queue::<Fake>::new(fake.clone());
    let src = KernelSource::new("inc", "inc").define("X", 1);
    let k = q.kernel(&src).unwrap();
    let k2 = q.kernel(&src).unwrap();
    assert_eq!(fake.compiles.load(Ordering::SeqCst), 1);
    assert_eq!(k2.name(), "inc");
    let mut b = q.buffer(&[1.0f32, 2.0]).unwrap();
    let t = q.launch(&k).global([2]).local([2]).arg(&b).run().unwrap();
    assert_eq!(t, Duration::from_micros(10));
    assert_eq!(q.read(&b).unwrap(), vec![2.0, 3.0]);
    q.write(&mut b, &[5.0]).unwrap();
    assert_eq!(q.read(&b).unwrap(), vec![5.0, 3.0]);
    assert!(q.write(&mut b, &[0.0; 3]).is_err());
    // A composition's buffer id means nothing to a queue.
    assert!(q.launch(&k).global([2]).arg(BufferId(0)).run().is_err());
    assert!(q.kernel(&KernelSource::new("#error", "x")).is_err());
}

#[test]
fn no_host_code_is_an_error() {
    let e =
        CompositionEvaluator::<Fake>::new(Fake::new(), &space(), Composition::new()).unwrap_err();
    assert!(e.to_string().contains(".host("), "{e}");
}
