//! The process-isolated backend on a real OpenCL device (PoCL in CI, which runs kernels on
//! CPU threads, so a bad kernel can hang or crash the process that runs it): hangs, crashes,
//! build errors and wrong results through `KernelEvaluator<Isolated>`, a whole tuning run over
//! configurations that hang and crash, and the backend conformance suite.
//!
//! Without an OpenCL device the tests are reported as ignored, unless `CI` is set: then they
//! fail. Workers are this test binary started again: served by the static constructor, or by
//! `worker_main` first in `main` below (`a_worker_program_serves_from_its_main`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[cfg(unix)]
#[path = "harness/mod.rs"]
mod harness;

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    unix::main()
}

/// The isolated backend needs Unix (and Linux to start workers).
#[cfg(not(unix))]
fn main() {}

#[cfg(unix)]
mod unix {
    use super::harness;

    use std::process::ExitCode;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use tune::backend::isolated::{worker_main, Isolated, Target};
    use tune::backend::{BufferArg, KernelEvaluator, KernelSpec};
    use tune::tuner::Tuner;
    use tune::{Error, Evaluator, Failure, Param, Space, SpaceBuilder};

    /// The device in a worker process, shared by the tests that never kill its worker, and the
    /// query that found it: `TUNE_OPENCL_DEVICE` if set, else PoCL if present, else the first.
    fn probe() -> harness::Probe<(Arc<Isolated>, String)> {
        let queries = match std::env::var("TUNE_OPENCL_DEVICE") {
            Ok(q) => vec![q],
            Err(_) => vec!["portable".to_string(), String::new()],
        };
        let mut found = Err("no query".to_string());
        for q in queries {
            found = match Isolated::opencl(q.clone()) {
                Ok(d) => Ok((Arc::new(d), q)),
                Err(e @ Error::DeviceNotFound { .. }) => Err(e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            if found.is_ok() {
                break;
            }
        }
        harness::Probe::new("opencl", found, "CI")
    }

    /// A backend of its own, for a test that kills its worker.
    fn fresh(query: &str) -> Isolated {
        Isolated::opencl(query).unwrap()
    }

    /// `y = 2 x`, or, by `MODE`: 1 loops forever on a volatile store (the compiler cannot see
    /// that `n > 0` always holds), 2 writes through a pointer made from `n` (address 4096: never
    /// mapped), which kills the process.
    const SCALE: &str = r#"
__kernel void scale(const int n, const __global float* x, __global float* y) {
    const int i = get_global_id(0);
#if MODE == 1
    __global volatile float* v = y;
    while (n > 0) { v[0] += 1.0f; }
#elif MODE == 2
    *((__global volatile int*)((ulong)n * 4UL)) = 1;
#endif
    if (i < n) y[i] = 2.0f * x[i];
}
"#;

    const N: usize = 1024;

    fn space(modes: &[usize], locals: &[usize]) -> Space {
        SpaceBuilder::new()
            .param(Param::<usize>::values("MODE", modes.to_vec()))
            .param(Param::<usize>::values("LS", locals.to_vec()))
            .build()
            .unwrap()
    }

    fn spec(source: &str, factor: f32) -> KernelSpec {
        KernelSpec::new(source, "scale")
            .global(|_| [N])
            .local(|c| [c.get::<usize>(1)])
            .scalar(N as i32)
            .buffer(BufferArg::random::<f32>(N, 3))
            .buffer(BufferArg::zeros::<f32>(N).output())
            .reference(move |a| {
                let x = a.buffer::<f32>(1)?;
                Ok(vec![x
                    .iter()
                    .map(|v| factor * v)
                    .collect::<Vec<f32>>()
                    .into()])
            })
            .repetitions(2)
    }

    /// Evaluates the first configuration with `MODE == mode`.
    fn eval(
        ev: &KernelEvaluator<Isolated>,
        s: &Space,
        mode: usize,
    ) -> Result<tune::Measured<Duration>, Failure> {
        let c = (0..s.len())
            .map(|i| s.get(i).unwrap())
            .find(|c| c.get::<usize>(0) == mode)
            .unwrap();
        let p = ev.prepare(s, &c)?;
        ev.measure(s, &c, p)
    }

    fn a_correct_kernel_measures_and_validates(dev: Arc<Isolated>) {
        let s = space(&[0], &[16, 64]);
        let ev = KernelEvaluator::<Isolated>::new(dev.clone(), &s, spec(SCALE, 2.0)).unwrap();
        for i in 0..s.len() {
            let c = s.get(i).unwrap();
            let m = ev.measure(&s, &c, ev.prepare(&s, &c).unwrap()).unwrap();
            assert_eq!(m.samples.len(), 2);
            assert!(m.samples.iter().all(|&t| t > 0.0));
            assert!(m.validation.is_some());
        }
        assert!(ev.device().contains("opencl"), "{}", ev.device());
        assert_ne!(dev.worker_pid(), Some(std::process::id()));
    }

    fn a_build_error_is_a_compile_failure_with_the_log(dev: Arc<Isolated>) {
        let s = space(&[0], &[16]);
        let ev = KernelEvaluator::<Isolated>::new(
            dev,
            &s,
            spec("__kernel void scale(int n) { this is not C; }", 2.0),
        )
        .unwrap();
        match eval(&ev, &s, 0) {
            Err(Failure::Compile(log)) => {
                assert!(log.contains("-DMODE=0"), "{log}");
                assert!(log.to_lowercase().contains("error"), "{log}");
            }
            other => panic!("{other:?}"),
        }
    }

    fn a_wrong_result_is_caught(dev: Arc<Isolated>) {
        let s = space(&[0], &[16]);
        let ev = KernelEvaluator::<Isolated>::new(dev, &s, spec(SCALE, 3.0)).unwrap();
        match eval(&ev, &s, 0) {
            Err(Failure::WrongResult(m)) => assert!(m.contains("elements differ"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    fn a_hanging_kernel_times_out_and_the_next_configuration_measures(query: String) {
        let dev = fresh(&query);
        let dev = dev.hang_timeout(Duration::from_secs(2));
        let s = space(&[0, 1], &[16]);
        let ev = KernelEvaluator::<Isolated>::new(dev, &s, spec(SCALE, 2.0)).unwrap();
        let first = ev.backend().worker_pid();
        let t = Instant::now();
        match eval(&ev, &s, 1) {
            Err(Failure::Timeout(d)) => assert!(d >= Duration::from_secs(2), "{d:?}"),
            other => panic!("{other:?}"),
        }
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        let m = eval(&ev, &s, 0).unwrap();
        assert!(m.validation.is_some());
        assert_eq!(ev.backend().restarts(), 1);
        assert_ne!(ev.backend().worker_pid(), first);
    }

    fn a_crashing_kernel_is_a_launch_failure_and_the_next_configuration_measures(query: String) {
        let dev = fresh(&query);
        let s = space(&[0, 2], &[16]);
        let ev = KernelEvaluator::<Isolated>::new(dev, &s, spec(SCALE, 2.0)).unwrap();
        // A configuration measured before the crash: its kernel is compiled again afterwards.
        eval(&ev, &s, 0).unwrap();
        match eval(&ev, &s, 2) {
            Err(Failure::Launch(m)) => {
                assert!(m.contains("the worker process died"), "{m}");
                assert!(m.contains("signal"), "{m}");
            }
            other => panic!("{other:?}"),
        }
        let m = eval(&ev, &s, 0).unwrap();
        assert!(m.validation.is_some());
        assert_eq!(ev.backend().restarts(), 1);
    }

    fn a_tuning_run_survives_hangs_and_crashes(query: String) {
        let dev = fresh(&query);
        let dev = dev.hang_timeout(Duration::from_secs(2));
        let s = space(&[0, 1, 2], &[16, 64]);
        let ev = KernelEvaluator::<Isolated>::new(dev, &s, spec(SCALE, 2.0)).unwrap();
        let r = Tuner::new(s, ev)
            .progress(false)
            .batch(2)
            .name("isolated")
            .run()
            .unwrap();
        assert_eq!(r.evaluations, 6);
        assert_eq!(r.valid, 2, "{:?}", r.failures);
        assert_eq!(r.failures.get("timeout"), Some(&2), "{:?}", r.failures);
        assert_eq!(r.failures.get("launch"), Some(&2), "{:?}", r.failures);
        assert_eq!(r.best.config.get::<usize>(0), 0);
        let detail = r
            .records
            .iter()
            .filter(|rec| rec.status == "launch")
            .filter_map(|rec| rec.detail.clone())
            .collect::<Vec<_>>();
        assert!(detail.iter().all(|d| d.contains("died")), "{detail:?}");
    }

    /// A worker started with `Isolated::with_worker_main` (this binary, whose `main` calls
    /// `worker_main` first) serves as one started by the static constructor does.
    fn a_worker_program_serves_from_its_main(query: String) {
        let exe = std::env::current_exe().unwrap();
        let dev = Isolated::with_worker_main(Target::OpenCl(query), exe).unwrap();
        let s = space(&[0], &[16]);
        let ev = KernelEvaluator::<Isolated>::new(dev, &s, spec(SCALE, 2.0)).unwrap();
        let m = eval(&ev, &s, 0).unwrap();
        assert!(m.validation.is_some());
        assert_ne!(ev.backend().worker_pid(), Some(std::process::id()));
    }

    /// A worker inherits no descriptor of its parent but the standard streams: what a device
    /// driver of the parent opened without close-on-exec stays in the parent.
    fn a_worker_inherits_no_descriptor_of_its_parent(query: String) {
        use std::os::fd::AsRawFd;
        let path = std::env::temp_dir().join(format!("tune-inherit-{}", std::process::id()));
        let f = std::fs::File::create(&path).unwrap();
        // Opened as a driver may open its device files: without close-on-exec.
        // SAFETY: `f` is an open descriptor of this process.
        assert_eq!(unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFD, 0) }, 0);
        let dev = fresh(&query);
        let pid = dev.worker_pid().unwrap();
        let held: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .collect();
        drop(f);
        std::fs::remove_file(&path).unwrap();
        assert!(!held.contains(&path), "the worker holds {held:?}");
    }

    const BROKEN: &str = "__kernel void scale(const int n) { syntax error }";

    pub fn main() -> ExitCode {
        // A worker started by `Isolated::with_worker_main` serves here and exits.
        worker_main();
        let probe = probe();
        let shared = probe.map(|(d, _)| d);
        let query = probe.map(|(_, q)| q);
        let mut suite = harness::Suite::new();
        let on_shared: [harness::DeviceTest<Arc<Isolated>>; 3] = [
            (
                "a_correct_kernel_measures_and_validates",
                a_correct_kernel_measures_and_validates,
            ),
            (
                "a_build_error_is_a_compile_failure_with_the_log",
                a_build_error_is_a_compile_failure_with_the_log,
            ),
            ("a_wrong_result_is_caught", a_wrong_result_is_caught),
        ];
        for (name, f) in on_shared {
            suite.device(&shared, name, f);
        }
        let on_their_own: [harness::DeviceTest<String>; 5] = [
            (
                "a_worker_inherits_no_descriptor_of_its_parent",
                a_worker_inherits_no_descriptor_of_its_parent,
            ),
            (
                "a_hanging_kernel_times_out_and_the_next_configuration_measures",
                a_hanging_kernel_times_out_and_the_next_configuration_measures,
            ),
            (
                "a_crashing_kernel_is_a_launch_failure_and_the_next_configuration_measures",
                a_crashing_kernel_is_a_launch_failure_and_the_next_configuration_measures,
            ),
            (
                "a_tuning_run_survives_hangs_and_crashes",
                a_tuning_run_survives_hangs_and_crashes,
            ),
            (
                "a_worker_program_serves_from_its_main",
                a_worker_program_serves_from_its_main,
            ),
        ];
        for (name, f) in on_their_own {
            suite.device(&query, name, f);
        }
        harness::conformance(&mut suite, &shared, SCALE, BROKEN);
        suite.run()
    }
}
