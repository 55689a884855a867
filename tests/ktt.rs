//! KTT's capabilities on a real OpenCL device (PoCL in CI): the reduction and the radix sort
//! as compositions (iterations that depend on the configuration, every configuration
//! validated), a failing kernel inside a composition, a composition through the isolated
//! backend, a `#[tunable]` host function that launches kernels, and online tuning of the
//! convolution over a stream of frames (restarted midway; wrong outputs never reach the
//! application).
//!
//! Without an OpenCL device the tests are reported as ignored, unless `CI` is set: then they
//! fail. They run one at a time (see `harness`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;
#[path = "../examples/ktt/mod.rs"]
mod ktt;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tune::abort::Evaluations;
use tune::backend::composition::{Buffer, CompositionEvaluator, KernelSource, Queue};
use tune::backend::opencl::OpenCl;
use tune::backend::Backend;
use tune::results::{Database, Source};
use tune::tuner::online::{Input, Online};
use tune::{Config, Evaluator, Failure, TechniqueKind, Tuner, Value};

type Prepared = tune::backend::composition::PreparedComposition<OpenCl>;

/// The device: `TUNE_OPENCL_DEVICE` if set, else PoCL if present, else the first one.
fn probe() -> harness::Probe<Arc<OpenCl>> {
    let found = match std::env::var("TUNE_OPENCL_DEVICE") {
        Ok(q) => OpenCl::select(&q),
        Err(_) => OpenCl::select("portable").or_else(|_| OpenCl::first()),
    };
    harness::Probe::new(
        "opencl",
        found.map(Arc::new).map_err(|e| e.to_string()),
        "CI",
    )
}

fn temp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tune-ktt-{tag}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn value(named: &tune::results::Named<Value>, name: &str) -> String {
    named.get(name).map(ToString::to_string).unwrap_or_default()
}

fn with(space: &tune::Space, values: &[(&str, Value)]) -> Option<Config> {
    space
        .config_from_values(values.iter().map(|(n, v)| (*n, v.clone())))
        .ok()
}

/// The reduction's number of launches follows the configuration and the input size, every
/// configuration's sum is right, and a short tuning run finds a valid best.
fn reduction_iterations_follow_the_configuration<B: Backend>(dev: Arc<B>) {
    let n = (1 << 16) + 3;
    let (mut case, ids) = ktt::reduction::case::<B>(dev.device(), n).unwrap();
    let cus = dev.device().compute_units as usize;
    let launches = Arc::new(AtomicUsize::new(0));
    let l = launches.clone();
    case.composition.host(move |run| {
        let k = ktt::reduction::host(run, ids, n, cus)?;
        l.store(k, Ordering::SeqCst);
        Ok(())
    });
    case.composition.repetitions(2);
    let ev = CompositionEvaluator::new(dev, &case.space, case.composition).unwrap();
    let s = &case.space;
    let u = |v: u64| Value::UInt(v);
    for (wg, vw, unroll, gpc, atomics, expected) in [
        // 65539 floats: 2049, 65, 3, 1 groups.
        (32, 1, 1, 0, false, 4),
        // 65539 / (256 * 4 * 2) -> 33 groups, then 1.
        (256, 4, 2, 0, false, 2),
        (64, 16, 1, 0, false, 2),
        (128, 2, 4, 1, true, 1),
    ] {
        // Vectors of 16 floats exist in OpenCL only.
        let Some(c) = with(
            s,
            &[
                ("WG", u(wg)),
                ("VW", u(vw)),
                ("UNROLL", u(unroll)),
                ("GPC", u(gpc)),
                ("ATOMICS", Value::Bool(atomics)),
            ],
        ) else {
            assert_eq!(vw, 16);
            continue;
        };
        let p = ev.prepare(s, &c).unwrap();
        let m = ev.measure(s, &c, p).unwrap();
        assert!(m.validation.is_some() && m.cost > Duration::ZERO);
        if gpc == 0 {
            assert_eq!(
                launches.load(Ordering::SeqCst),
                expected,
                "{}",
                s.describe(&c)
            );
        } else {
            assert_eq!(launches.load(Ordering::SeqCst), 1);
        }
    }
    let r = Tuner::new(s.clone(), &ev)
        .technique(TechniqueKind::Random.build())
        .abort(Evaluations(12))
        .progress(false)
        .batch(2)
        .run()
        .unwrap();
    assert_eq!(r.wrong_results().count(), 0, "{:?}", r.failures);
    assert!(r.valid >= 8, "{:?}", r.failures);
}

/// Every digit width sorts right, including a tail shorter than a tile; a short tuning run
/// finds a valid best.
fn radix_sort_sorts_with_every_digit_width<B: Backend>(dev: Arc<B>) {
    let n = 5000;
    let (case, _) = ktt::sort::case::<B>(dev.device(), n).unwrap();
    let s = case.space.clone();
    let ev = CompositionEvaluator::new(dev, &s, case.composition).unwrap();
    let u = |v: u64| Value::UInt(v);
    for (bits, wg, items, blocks) in [
        (2, 32, 1, 16),
        (4, 64, 2, 64),
        (8, 128, 4, 16),
        (4, 32, 8, 2048),
    ] {
        let c = with(
            &s,
            &[
                ("RADIX_BITS", u(bits)),
                ("WG", u(wg)),
                ("ITEMS", u(items)),
                ("BLOCKS", u(blocks)),
            ],
        )
        .unwrap();
        let p = ev.prepare(&s, &c).unwrap();
        ev.measure(&s, &c, p)
            .unwrap_or_else(|f| panic!("{}: {f}", s.describe(&c)));
    }
    let r = Tuner::new(s.clone(), &ev)
        .start_from([case.default])
        .abort(Evaluations(8))
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.wrong_results().count(), 0, "{:?}", r.failures);
}

/// A kernel that fails to compile for some configurations and a launch that fails for
/// others: both are recorded against their configuration and the run goes on.
fn a_failing_kernel_inside_a_composition(dev: Arc<OpenCl>) {
    let n = 4099;
    let (mut case, ids) = ktt::reduction::case::<OpenCl>(dev.device(), n).unwrap();
    let cus = dev.device().compute_units as usize;
    let broken = case.composition.kernel(KernelSource::new(
        "#if VW == 4\n#error no float4 today\n#endif\n__kernel void touch(__global float* x) { x[0] += 0.0f; }",
        "touch",
    ));
    let scratch = case.composition.scratch::<f32>(|_| 1);
    case.composition.host(move |run| {
        run.launch(broken)
            .global([1])
            .local([1])
            .arg(scratch)
            .run()?;
        if run.config().get::<usize>(ktt::reduction::slots::WG) == 64 {
            // An 8-byte scalar where the kernel takes a 4-byte `uint`: the launch fails.
            run.launch(ids.reduce)
                .global([64])
                .local([64])
                .arg(ids.x)
                .arg(ids.sum)
                .scalar(n as u64)
                .run()?;
        }
        ktt::reduction::host(run, ids, n, cus).map(|_| ())
    });
    case.composition.repetitions(1).warmups(0);
    let ev = CompositionEvaluator::new(dev, &case.space, case.composition).unwrap();
    let r = Tuner::new(case.space.clone(), &ev)
        .technique(TechniqueKind::Random.build())
        .abort(Evaluations(40))
        .progress(false)
        .run()
        .unwrap();
    let compile = r.records.iter().filter(|x| x.status == "compile");
    assert!(compile.clone().count() > 0, "{:?}", r.failures);
    for x in compile.clone() {
        assert_eq!(value(&x.config, "VW"), "4", "{}: {:?}", x.config, x.detail);
    }
    assert!(compile.clone().all(|x| x
        .detail
        .as_deref()
        .is_some_and(|d| d.contains("kernel `touch`"))));
    let launch: Vec<_> = r.records.iter().filter(|x| x.status == "launch").collect();
    assert!(!launch.is_empty(), "{:?}", r.failures);
    assert!(launch.iter().all(|x| value(&x.config, "WG") == "64"));
    assert!(r.valid > 0 && r.wrong_results().count() == 0);
    let best = r.best_values();
    assert!(best.iter().any(|(k, v)| *k == "VW" && v.to_string() != "4"));
}

/// The environment when `main` started: a worker inherits the environment at its start,
/// which a driver loaded since may have changed.
static START_ENV: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// The host code stays in this process; every launch crosses to the worker.
fn a_composition_through_the_isolated_backend(_dev: Arc<OpenCl>) {
    use tune::backend::isolated::Isolated;
    let query = std::env::var("TUNE_OPENCL_DEVICE").unwrap_or_else(|_| "portable".into());
    // What the worker gets that this process did not start with (diagnostics: the worker
    // of a process holding NVIDIA's OpenCL once saw PoCL only).
    if let Some(start) = START_ENV.get() {
        let now: Vec<(String, String)> = std::env::vars().collect();
        let changed: Vec<_> = now.iter().filter(|v| !start.contains(v)).collect();
        let gone: Vec<_> = start.iter().filter(|v| !now.contains(v)).collect();
        if !changed.is_empty() || !gone.is_empty() {
            eprintln!("environment since start: set {changed:?}, removed {gone:?}");
        }
    }
    let iso = Arc::new(Isolated::opencl(query).unwrap());
    let n = 3000;
    let (case, _) = ktt::sort::case::<Isolated>(iso.device(), n).unwrap();
    let ev = CompositionEvaluator::new(iso, &case.space, case.composition).unwrap();
    let r = Tuner::new(case.space.clone(), &ev)
        .start_from([case.default])
        .abort(Evaluations(4))
        .progress(false)
        .run()
        .unwrap();
    // The default runs; a proposal over this device's limits (NVIDIA's OpenCL allows less
    // local memory than PoCL) is rejected as invalid, which is not a failure of the backend.
    let details: Vec<_> = r
        .records
        .iter()
        .filter(|x| x.status != "ok")
        .map(|x| (&x.config, &x.status, &x.detail))
        .collect();
    if !details.is_empty() {
        eprintln!("not valid here: {details:?}");
    }
    assert!(r.valid >= 1, "{details:?}");
    assert_eq!(
        r.valid + r.failures.get("invalid").copied().unwrap_or(0),
        4,
        "{details:?}"
    );
}

// A host function that launches kernels, tuned with `#[tunable]`: it takes the device
// handle and its tuning parameters, returns the device time.

const SCALE: &str = "__kernel __attribute__((reqd_work_group_size(LS, 1, 1)))
void scale(__global const float* x, __global float* y) {
    const uint i = get_global_id(0) * WPT;
    for (uint k = 0; k < WPT; k++) y[i + k] = 3.0f * x[i + k];
}";

fn scale_source(ls: usize, wpt: usize) -> KernelSource {
    KernelSource::new(SCALE, "scale")
        .define("LS", ls)
        .define("WPT", wpt)
}

#[tune::tunable(online, device = q.name(), input(n = x.len()), technique = exhaustive)]
fn scale(
    q: &Queue<OpenCl>,
    x: &Buffer<OpenCl, f32>,
    y: &mut Buffer<OpenCl, f32>,
    #[tp([16, 32, 64], default = 16)] ls: usize,
    #[tp([1, 2, 4], divides(x.len() / ls), default = 1)] wpt: usize,
) -> Result<Duration, Failure> {
    let k = q.kernel(&scale_source(ls, wpt))?;
    q.launch(&k)
        .global([x.len() / wpt])
        .local([ls])
        .arg(x)
        .arg(&*y)
        .run()
}

fn a_tunable_host_function_launching_kernels(dev: Arc<OpenCl>) {
    let dir = temp("tunable");
    let db = Database::open(dir.join("tuning"));
    let q = Queue::<OpenCl>::new(dev);
    let n = 4096;
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = q.buffer(&input).unwrap();
    let mut y = q.zeros::<f32>(n).unwrap();
    let (cfg, choice) = ScaleConfig::best_in(&db, &q, &x, &y).unwrap();
    assert_eq!((choice.source, cfg.ls, cfg.wpt), (Source::Default, 16, 1));
    let r = ScaleConfig::tuner_with(&q, &x, &mut y, |_, q, _, y| {
        let out = q.read(y).map_err(|e| Failure::Other(e.to_string()))?;
        if out.iter().enumerate().all(|(i, &v)| v == 3.0 * i as f32) {
            Ok(())
        } else {
            Err(Failure::WrongResult("y != 3 x".into()))
        }
    })
    .unwrap()
    .database(db.clone())
    .progress(false)
    .run()
    .unwrap();
    assert_eq!(r.valid, 9);
    assert!(r.device.contains("opencl"), "{}", r.device);
    let (cfg, choice) = ScaleConfig::best_in(&db, &q, &x, &y).unwrap();
    assert_eq!(choice.source, Source::Exact);
    assert_eq!(tune::Config::from(cfg), r.best.config);
    // Dispatch: the best recorded configuration, run by hand.
    q.write(&mut y, &vec![0.0; n]).unwrap();
    cfg.call(&q, &x, &mut y).unwrap();
    assert_eq!(q.read(&y).unwrap()[n - 1], 3.0 * (n - 1) as f32);
    std::fs::remove_dir_all(dir).ok();
}

/// `#[tunable(online)]` on the host function: each call runs the next configuration
/// (compiled ahead by the `prepare` hook into the queue's cache), checks its first result,
/// and settles on the best.
fn an_online_tunable_host_function(dev: Arc<OpenCl>) {
    let q = Arc::new(Queue::<OpenCl>::new(dev));
    let n = 2048;
    let input: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let x = q.buffer(&input).unwrap();
    let mut y = q.zeros::<f32>(n).unwrap();
    let ahead = q.clone();
    let mut online = ScaleConfig::online()
        .prepare(move |c| ahead.kernel(&scale_source(c.ls, c.wpt)).map(|_| ()))
        .with(|o| o.runs_per_config(2));
    let mut calls = 0;
    while !online.tuner().is_settled() {
        q.write(&mut y, &vec![-1.0; n]).unwrap();
        online
            .call(&q, &x, &mut y, |t, q, _, y| {
                assert!(t.as_ref().is_ok_and(|t| *t > Duration::ZERO));
                let out = q.read(y).map_err(|e| Failure::Other(e.to_string()))?;
                (out[n - 1] == 3.0 * input[n - 1])
                    .then_some(())
                    .ok_or_else(|| Failure::WrongResult("y != 3 x".into()))
            })
            .unwrap()
            .unwrap();
        assert_eq!(q.read(&y).unwrap()[n - 1], 3.0 * input[n - 1]);
        calls += 1;
        assert!(calls < 100_000, "{:?}", online.tuner().stats());
    }
    let st = online.tuner().stats();
    assert_eq!((st.evaluations, st.failures), (9, 0), "{st:?}");
    assert!(st.best.is_some());
}

/// Online tuning of the convolution over a stream of frames: a configuration that computes
/// a wrong output is caught on its first run and never reaches the application; the
/// application, stopped midway and restarted with the same log, continues the search.
fn online_convolution_restarted_midway(dev: Arc<OpenCl>) {
    let dir = temp("online");
    let log = dir.join("conv.jsonl");
    let (w, h, fs) = (64, 64, 3);
    let conv = ktt::conv::case::<OpenCl>(dev.device(), w, h, fs).unwrap();
    let space = conv.space.clone();
    let (src, dst) = (conv.src, conv.dst);
    let frames: Vec<Vec<f32>> = (0..4).map(|k| conv.frame(k)).collect();
    let expected: Vec<Vec<f32>> = frames.iter().map(|f| conv.reference(f)).collect();
    let ev = Arc::new(CompositionEvaluator::new(dev, &space, conv.composition).unwrap());
    // Configurations with TBX = 8 corrupt their output, as a faulty kernel would.
    let faulty = |c: &Config| c.get::<usize>(0) == 8;
    let ran: Arc<Mutex<Vec<Config>>> = Default::default();

    let make = || {
        Online::<Prepared>::new("ktt_conv_online")
            .technique(TechniqueKind::Random)
            .seed(3)
            .explore(Evaluations(10))
            .runs_per_config(2)
            .device(ev.device())
            .log(&log)
    };
    let key = format!("{w}x{h},fs={fs}");
    let input = || {
        let ev = ev.clone();
        let space = space.clone();
        Ok(Input::new(space, move |s, c| ev.prepare(s, c)))
    };
    let call = |online: &mut Online<Prepared>, k: usize| -> Vec<f32> {
        let frame = &frames[k % frames.len()];
        let out = online
            .call(|t| {
                ran.lock().unwrap().push(t.config().clone());
                let (mut out, time) = ev.call(
                    t.space(),
                    t.config(),
                    t.prepared(),
                    |run| run.write(src, frame),
                    |run| run.read::<f32>(dst),
                )?;
                if faulty(t.config()) {
                    out[0] += 1.0;
                }
                if t.validate() {
                    ktt::conv::TOLERANCE
                        .check(
                            &expected[k % frames.len()].clone().into(),
                            &out.clone().into(),
                        )
                        .map_err(Failure::WrongResult)?;
                }
                Ok((out, time))
            })
            .unwrap();
        assert!(
            ktt::conv::TOLERANCE
                .check(
                    &expected[k % frames.len()].clone().into(),
                    &out.clone().into()
                )
                .is_ok(),
            "call {k} returned a wrong output"
        );
        out
    };

    let mut first = make();
    first.select(&key, input).unwrap();
    let mut k = 0;
    while first.stats().evaluations < 4 {
        call(&mut first, k);
        k += 1;
    }
    let before: Vec<Config> = ran.lock().unwrap().drain(..).collect();
    drop(first);

    let mut second = make();
    second.select(&key, input).unwrap();
    assert_eq!(second.stats().resumed, 4);
    while !second.is_settled() {
        call(&mut second, k);
        k += 1;
        assert!(k < 10_000, "never settled: {:?}", second.stats());
    }
    for _ in 0..5 {
        call(&mut second, k);
        k += 1;
    }
    let st = second.stats();
    assert_eq!(st.evaluations, 10, "{st:?}");
    let settled = second.settled().unwrap().clone();
    assert!(!faulty(&settled));
    // Every configuration was measured once over both runs: none again after the restart.
    let records = tune::results::log::read(&log).unwrap();
    assert_eq!(records.len(), 10);
    let unique: std::collections::HashSet<u128> = records.iter().map(|r| r.index).collect();
    assert_eq!(unique.len(), 10);
    // The faulty configurations that were tried are recorded as wrong results.
    for r in &records {
        let c = r.config.config(&space).unwrap();
        assert_eq!(r.status == "wrong_result", faulty(&c), "{}", r.config);
    }
    assert!(before
        .iter()
        .all(|c| unique.contains(&space.index_of(c).unwrap())));
    std::fs::remove_dir_all(dir).ok();
}

/// The compositions on CUDA (with `--features cuda`; `TUNE_REQUIRE_CUDA=1` makes a missing
/// GPU fail).
#[cfg(feature = "cuda")]
fn cuda(suite: &mut harness::Suite) {
    use tune::cuda::Cuda;
    let gpu = ktt::open_cuda().map(Arc::new).map_err(|e| e.to_string());
    let probe = harness::Probe::new("cuda", gpu, "TUNE_REQUIRE_CUDA");
    let tests: [harness::DeviceTest<Arc<Cuda>>; 2] = [
        (
            "cuda::reduction_iterations_follow_the_configuration",
            reduction_iterations_follow_the_configuration::<Cuda>,
        ),
        (
            "cuda::radix_sort_sorts_with_every_digit_width",
            radix_sort_sorts_with_every_digit_width::<Cuda>,
        ),
    ];
    for (name, f) in tests {
        suite.device(&probe, name, f);
    }
    let nvrtc =
        tune::cuda::nvrtc_version().ok_or_else(|| "NVRTC (libnvrtc) is not installed".to_string());
    let probe = harness::Probe::optional("nvrtc", nvrtc);
    suite.device(&probe, "cuda::kernels_compile_with_nvrtc", |_| {
        cuda_kernels_compile_with_nvrtc()
    });
}

/// The CUDA kernels of the compositions compile with NVRTC (no GPU needed) for a sample of
/// each space's configurations, every kernel of each.
#[cfg(feature = "cuda")]
fn cuda_kernels_compile_with_nvrtc() {
    use tune::backend::{config_defines, DeviceInfo};
    use tune::cuda::{compile, Arch, Cuda};
    let h100 = DeviceInfo {
        backend: "cuda".into(),
        max_work_group_size: 1024,
        max_work_item_sizes: [1024, 1024, 64],
        local_mem_bytes: 227 * 1024,
        compute_units: 132,
        ..Default::default()
    };
    let arch = Arch {
        sm: 90,
        cubin: true,
    };
    let check =
        |src: &str, kernels: &[&str], space: &tune::Space, step: usize, fixed: &[(&str, usize)]| {
            for c in space.iter().step_by(step) {
                let mut defines = config_defines(space, &c);
                defines.extend(fixed.iter().map(|(k, v)| (k.to_string(), v.to_string())));
                for k in kernels {
                    if let Err(f) = compile(src, &format!("{k}.cu"), &arch, &defines, &[]) {
                        panic!("{k} with {}: {f}", space.describe(&c));
                    }
                }
            }
        };
    let (r, _) = ktt::reduction::case::<Cuda>(&h100, 1 << 20).unwrap();
    check(ktt::reduction::CU, &["reduce", "copy"], &r.space, 31, &[]);
    let (s, _) = ktt::sort::case::<Cuda>(&h100, 1 << 20).unwrap();
    check(
        ktt::sort::CU,
        &["histogram", "scan", "scatter"],
        &s.space,
        17,
        &[],
    );
    let f = ktt::conv::case::<Cuda>(&h100, 512, 512, 7).unwrap();
    let fixed = [("W", 512), ("H", 512), ("FS", 7)];
    check(ktt::conv::CU, &["filter"], &f.space, 7, &fixed);
    let none = tune::SpaceBuilder::new().build().unwrap();
    check(
        include_str!("../kernels/compare.cu"),
        &["maxdiff"],
        &none,
        1,
        &[],
    );
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &mut harness::Suite) {}

fn main() -> ExitCode {
    let _ = START_ENV.set(std::env::vars().collect());
    let probe = probe();
    let mut suite = harness::Suite::new();
    let tests: [harness::DeviceTest<Arc<OpenCl>>; 7] = [
        (
            "reduction_iterations_follow_the_configuration",
            reduction_iterations_follow_the_configuration::<OpenCl>,
        ),
        (
            "radix_sort_sorts_with_every_digit_width",
            radix_sort_sorts_with_every_digit_width::<OpenCl>,
        ),
        (
            "a_failing_kernel_inside_a_composition",
            a_failing_kernel_inside_a_composition,
        ),
        (
            "a_composition_through_the_isolated_backend",
            a_composition_through_the_isolated_backend,
        ),
        (
            "a_tunable_host_function_launching_kernels",
            a_tunable_host_function_launching_kernels,
        ),
        (
            "an_online_tunable_host_function",
            an_online_tunable_host_function,
        ),
        (
            "online_convolution_restarted_midway",
            online_convolution_restarted_midway,
        ),
    ];
    for (name, f) in tests {
        suite.device(&probe, name, f);
    }
    cuda(&mut suite);
    suite.run()
}
