//! Workers (this test binary, started again) that run a fake backend whose kernels hang,
//! crash or poison the device: every recovery path without a device; and the content cache.
//! The wire encoding's tests are in `wire.rs` beside this file.

mod wire;

use std::collections::HashMap;
use std::os::unix::net::UnixStream;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::process::describe;
use super::shared::Launcher;
use super::wire::{content_hash, TargetSpec};
use super::worker::{constructor_serves, ContentCache};
use super::*;
use crate::backend::{
    Backend, BufferArg, CompileRequest, DeviceInfo, KernelEvaluator, KernelLimits, KernelSpec,
    LaunchArg, LaunchDims,
};
use crate::evaluate::Failure;
use crate::{Error, Evaluator, Param, Result, Space, SpaceBuilder, Tuner};

// ---------------------------------------------------------------------------------------------
// The fake backend, served by the workers of these tests
// ---------------------------------------------------------------------------------------------

/// A device whose kernel's behaviour is its name, or the define `MODE`: 0 `twice` (`y = 2x`
/// for `(int n, float* x, float* y)`), 1 `hang`, 2 `crash` (SIGSEGV), 3 `poison` (a launch
/// failure after which the backend is unhealthy), 4 `fail` (a plain launch failure). A kernel
/// named `slow_compile` takes `SLEEP_MS` to compile; `crash_compile` crashes the compiler.
pub(super) struct Fake {
    info: DeviceInfo,
    poisoned: AtomicBool,
}

pub(super) struct FakeKernel {
    mode: String,
}

/// The fake backend for a target spec: `unavailable` and `missing` fail to open.
pub(super) fn fake_backend(spec: &str) -> Result<Fake> {
    match spec {
        "unavailable" => Err(Error::BackendUnavailable {
            backend: "fake".into(),
            reason: "no fake driver on this machine".into(),
        }),
        "missing" => Err(Error::DeviceNotFound {
            backend: "fake".into(),
            query: spec.into(),
            available: "0: fake device".into(),
        }),
        _ => Ok(Fake {
            info: DeviceInfo {
                backend: "fake".into(),
                platform: "fake platform".into(),
                name: "fake device".into(),
                vendor: "tune".into(),
                driver_version: "1.0".into(),
                max_work_group_size: 256,
                max_work_item_sizes: [256, 256, 64],
                local_mem_bytes: 1 << 16,
                global_mem_bytes: 1 << 30,
                compute_units: 4,
                ..DeviceInfo::default()
            },
            poisoned: AtomicBool::new(false),
        }),
    }
}

fn crash() -> ! {
    // SAFETY: restores the default action of SIGSEGV and raises it: the process dies.
    unsafe {
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        libc::raise(libc::SIGSEGV);
    }
    worker::exit_now(99)
}

impl Backend for Fake {
    type Buffer = Mutex<Vec<u8>>;
    type Kernel = FakeKernel;

    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn compile(&self, r: &CompileRequest<'_>) -> Result<FakeKernel, Failure> {
        if r.source.contains("#error") {
            return Err(Failure::Compile(format!(
                "fake.cl:1: error: {}",
                r.flags().join(" ")
            )));
        }
        let define = |name: &str| {
            r.defines
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        match r.kernel {
            "slow_compile" => {
                let ms = define("SLEEP_MS").and_then(|v| v.parse().ok()).unwrap_or(0);
                std::thread::sleep(Duration::from_millis(ms));
            }
            "crash_compile" => crash(),
            _ => {}
        }
        let mode = match define("MODE").as_deref() {
            Some("0") => "twice",
            Some("1") => "hang",
            Some("2") => "crash",
            Some("3") => "poison",
            Some("4") => "fail",
            _ => r.kernel,
        };
        Ok(FakeKernel { mode: mode.into() })
    }

    fn kernel_limits(&self, k: &FakeKernel) -> KernelLimits {
        KernelLimits {
            max_work_group_size: Some(128),
            local_mem_bytes: Some(k.mode.len()),
            ..KernelLimits::default()
        }
    }

    fn alloc(&self, bytes: usize) -> Result<Self::Buffer> {
        // Not zero: a buffer re-allocated in a new worker must be zeroed explicitly.
        Ok(Mutex::new(vec![0xAB; bytes]))
    }

    fn write(&self, b: &mut Self::Buffer, data: &[u8]) -> Result<()> {
        lock(b)[..data.len()].copy_from_slice(data);
        Ok(())
    }

    fn read(&self, b: &Self::Buffer, out: &mut [u8]) -> Result<()> {
        out.copy_from_slice(&lock(b)[..out.len()]);
        Ok(())
    }

    fn launch(
        &self,
        k: &FakeKernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
    ) -> Result<Duration, Failure> {
        match k.mode.as_str() {
            "twice" => {
                let [LaunchArg::Scalar(n), LaunchArg::Buffer(x), LaunchArg::Buffer(y)] = args
                else {
                    return Err(Failure::Launch(format!("bad arguments {args:?}")));
                };
                let n = i32::from_ne_bytes((*n).try_into().unwrap()) as usize;
                let xs = lock(x).clone();
                let mut ys = lock(y);
                for i in 0..n {
                    let v = f32::from_ne_bytes(xs[4 * i..4 * i + 4].try_into().unwrap());
                    ys[4 * i..4 * i + 4].copy_from_slice(&(2.0 * v).to_ne_bytes());
                }
                Ok(Duration::from_micros(10 + dims.global[0] as u64))
            }
            "hang" => loop {
                std::thread::sleep(Duration::from_secs(1));
            },
            "crash" => crash(),
            "poison" => {
                self.poisoned.store(true, Ordering::SeqCst);
                Err(Failure::Launch(
                    "kernel execution: CUDA_ERROR_ILLEGAL_ADDRESS (fake sticky error)".into(),
                ))
            }
            "fail" => Err(Failure::Launch("fake launch error".into())),
            "env" => match std::env::var_os(WORKER_ENV) {
                Some(v) => Err(Failure::Other(format!("{WORKER_ENV} is still set: {v:?}"))),
                None => Ok(Duration::from_micros(1)),
            },
            other => Err(Failure::Launch(format!("no fake kernel `{other}`"))),
        }
    }

    fn healthy(&self) -> bool {
        !self.poisoned.load(Ordering::SeqCst)
    }
}

fn fake() -> Isolated {
    Isolated::from_spec(TargetSpec::Fake(String::new()), Launcher::Constructor).unwrap()
}

fn compile(
    b: &Isolated,
    kernel: &str,
    defines: &[(&str, &str)],
) -> Result<IsolatedKernel, Failure> {
    let defines: Vec<(String, String)> = defines
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    b.compile(&CompileRequest {
        source: "fake source",
        kernel,
        defines: &defines,
        options: &["-fake".to_string()],
    })
}

const N: usize = 64;

fn dims() -> LaunchDims {
    LaunchDims {
        dims: 1,
        global: [N, 1, 1],
        local: Some([16, 1, 1]),
        dynamic_local_bytes: 0,
    }
}

fn floats(v: &[u8]) -> Vec<f32> {
    v.chunks_exact(4)
        .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

fn input() -> Vec<u8> {
    (0..N).flat_map(|i| (i as f32).to_ne_bytes()).collect()
}

/// Buffers `x` (written with the input) and `y`.
fn buffers(b: &Isolated) -> (IsolatedBuffer, IsolatedBuffer) {
    let mut x = b.alloc(4 * N).unwrap();
    let y = b.alloc(4 * N).unwrap();
    b.write(&mut x, &input()).unwrap();
    (x, y)
}

fn run(
    b: &Isolated,
    k: &IsolatedKernel,
    x: &IsolatedBuffer,
    y: &IsolatedBuffer,
) -> Result<Duration, Failure> {
    let n = (N as i32).to_ne_bytes();
    b.launch(
        k,
        &dims(),
        &[
            LaunchArg::Scalar(&n),
            LaunchArg::Buffer(x),
            LaunchArg::Buffer(y),
        ],
    )
}

fn read(b: &Isolated, y: &IsolatedBuffer) -> Vec<f32> {
    let mut out = vec![0u8; 4 * N];
    b.read(y, &mut out).unwrap();
    floats(&out)
}

fn doubled() -> Vec<f32> {
    (0..N).map(|i| 2.0 * i as f32).collect()
}

fn process_exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

#[test]
fn the_content_cache_drops_the_oldest_first() {
    let mut c = ContentCache::new(10);
    c.insert(1, vec![1; 4]);
    c.insert(2, vec![2; 4]);
    assert_eq!(c.bytes(), 8);
    c.insert(3, vec![3; 4]);
    assert!(c.get(1).is_none());
    assert_eq!(c.get(2), Some(&[2u8; 4][..]));
    assert_eq!(c.get(3), Some(&[3u8; 4][..]));
    c.insert(4, vec![4; 11]);
    assert!(c.get(4).is_none(), "larger than the cache");
    c.insert(5, vec![5; 10]);
    assert_eq!(c.bytes(), 10);
    assert!(c.get(2).is_none() && c.get(3).is_none());
    assert_eq!(c.get(5).map(<[u8]>::len), Some(10));
}

#[test]
fn the_constructor_leaves_workers_of_worker_main_alone() {
    use std::ffi::OsStr;
    assert!(!constructor_serves(false, None));
    assert!(constructor_serves(true, None));
    assert!(constructor_serves(true, Some(OsStr::new("other"))));
    assert!(!constructor_serves(true, Some(OsStr::new(ENTRY_MAIN))));
}

#[test]
fn exit_statuses_in_words() {
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        describe(ExitStatus::from_raw(libc::SIGSEGV)),
        "killed by signal 11 (SIGSEGV)"
    );
    assert_eq!(describe(ExitStatus::from_raw(3 << 8)), "exit status 3");
    assert_eq!(
        describe(ExitStatus::from_raw(libc::SIGKILL)),
        "killed by signal 9 (SIGKILL)"
    );
}

// ---------------------------------------------------------------------------------------------
// Workers
// ---------------------------------------------------------------------------------------------

#[test]
fn the_device_opens_in_a_worker_process() {
    let b = fake();
    assert_eq!(b.device().name, "fake device");
    assert_eq!(b.device().compute_units, 4);
    let pid = b.worker_pid().unwrap();
    assert_ne!(pid, std::process::id());
    assert!(process_exists(pid));
    assert_eq!(b.restarts(), 0);
    assert!(format!("{b:?}").contains("fake device"));
    fn is_backend<T: Send + Sync + 'static>() {}
    is_backend::<Isolated>();
}

#[test]
fn a_worker_that_exits_before_connecting_is_an_error_and_strangers_are_refused() {
    use std::os::unix::net::UnixListener;
    let target = TargetSpec::Fake(String::new());
    let path = std::env::temp_dir().join(format!("tune-test-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    // A stranger (this process) connects first; the "worker" exits without connecting.
    let _stranger = UnixStream::connect(&path).unwrap();
    // Timed from before the start: the child's 0.3 s may run out while `spawn` returns.
    let t = Instant::now();
    let mut child = std::process::Command::new("sleep")
        .arg("0.3")
        .spawn()
        .unwrap();
    match super::spawn::accept(&target, &listener, &mut child) {
        Err(Error::Backend { message, .. }) => {
            assert!(message.contains("exited before it connected"), "{message}");
            assert!(message.contains("exit status 0"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert!(t.elapsed() < Duration::from_secs(10));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn open_errors_are_the_workers_own() {
    match Isolated::from_spec(
        TargetSpec::Fake("unavailable".into()),
        Launcher::Constructor,
    ) {
        Err(Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, "fake");
            assert!(reason.contains("no fake driver"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        Isolated::from_spec(TargetSpec::Fake("missing".into()), Launcher::Constructor),
        Err(Error::DeviceNotFound { .. })
    ));
}

#[test]
fn compiles_writes_launches_and_reads() {
    let b = fake();
    let k = compile(&b, "twice", &[("X", "1")]).unwrap();
    assert_eq!(b.kernel_limits(&k).max_work_group_size, Some(128));
    assert_eq!(b.kernel_limits(&k).local_mem_bytes, Some(5));
    let (x, y) = buffers(&b);
    assert_eq!(read(&b, &y), vec![f32::from_ne_bytes([0xAB; 4]); N]);
    let t = run(&b, &k, &x, &y).unwrap();
    assert_eq!(t, Duration::from_micros(10 + N as u64));
    assert_eq!(read(&b, &y), doubled());
    let n = (N as i32).to_ne_bytes();
    let args = [
        LaunchArg::Scalar(&n),
        LaunchArg::Buffer(&x),
        LaunchArg::Buffer(&y),
    ];
    assert_eq!(b.launch_repeated(&k, &dims(), &args, 3).unwrap(), 3 * t);
    match b.compile(&CompileRequest {
        source: "#error no",
        kernel: "twice",
        defines: &[("WPT".into(), "2".into())],
        options: &[],
    }) {
        Err(Failure::Compile(log)) => assert!(log.contains("-DWPT=2"), "{log}"),
        other => panic!("{other:?}"),
    }
    // Processes the worker starts do not become workers.
    let env = compile(&b, "env", &[]).unwrap();
    run(&b, &env, &x, &y).unwrap();
    let f = compile(&b, "fail", &[]).unwrap();
    assert_eq!(
        run(&b, &f, &x, &y),
        Err(Failure::Launch("fake launch error".into()))
    );
    // Bounds are checked in the parent.
    let mut small = b.alloc(4).unwrap();
    assert!(b.write(&mut small, &[0; 8]).is_err());
    assert!(b.read(&small, &mut [0; 8]).is_err());
    assert_eq!(b.restarts(), 0);
}

#[test]
fn repeated_writes_send_only_a_hash() {
    let b = fake();
    let (mut x, y) = buffers(&b);
    let sent = || b.shared.data_writes.load(Ordering::Relaxed);
    assert_eq!(sent(), 1);
    b.write(&mut x, &input()).unwrap();
    let mut y2 = y;
    b.write(&mut y2, &input()).unwrap();
    assert_eq!(sent(), 1, "same contents: only the hash is sent");
    assert_eq!(read(&b, &y2), read(&b, &x));
    let other = vec![7u8; 4 * N];
    b.write(&mut x, &other).unwrap();
    assert_eq!(sent(), 2);
    // A worker that no longer has contents the parent thinks it has answers `Missing`, and
    // the parent sends them.
    let unseen = vec![9u8; 4 * N];
    lock(&b.shared.live().unwrap().contents).insert(content_hash(&unseen));
    b.write(&mut x, &unseen).unwrap();
    assert_eq!(sent(), 3);
    let mut back = vec![0u8; 4 * N];
    b.read(&x, &mut back).unwrap();
    assert_eq!(back, unseen);
}

#[test]
fn a_hung_launch_times_out_and_the_next_runs_in_a_new_worker() {
    let b = fake().hang_timeout(Duration::from_millis(400));
    let twice = compile(&b, "twice", &[]).unwrap();
    let hang = compile(&b, "hang", &[]).unwrap();
    let (mut x, y) = buffers(&b);
    let old = b.worker_pid().unwrap();
    let t = Instant::now();
    match run(&b, &hang, &x, &y) {
        Err(Failure::Timeout(d)) => assert!(d >= Duration::from_millis(400), "{d:?}"),
        other => panic!("{other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(!process_exists(old), "the hung worker is killed and reaped");
    // Kernels compiled by the old worker are compiled again, buffers allocated again (zeroed).
    assert_eq!(read(&b, &y), vec![0.0; N]);
    assert_ne!(b.worker_pid().unwrap(), old);
    b.write(&mut x, &input()).unwrap();
    run(&b, &twice, &x, &y).unwrap();
    assert_eq!(read(&b, &y), doubled());
    assert_eq!(b.restarts(), 1);
}

#[test]
fn a_crash_is_a_launch_failure_that_names_the_signal() {
    let b = fake();
    let twice = compile(&b, "twice", &[]).unwrap();
    let crash = compile(&b, "crash", &[]).unwrap();
    let (mut x, y) = buffers(&b);
    match run(&b, &crash, &x, &y) {
        Err(Failure::Launch(m)) => {
            assert!(m.contains("the worker process died"), "{m}");
            assert!(m.contains("SIGSEGV"), "{m}");
            assert!(m.contains("a new one is started"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    b.write(&mut x, &input()).unwrap();
    run(&b, &twice, &x, &y).unwrap();
    assert_eq!(read(&b, &y), doubled());
    // The crashing kernel crashes the new worker too, and so on.
    assert!(matches!(run(&b, &crash, &x, &y), Err(Failure::Launch(_))));
    // A new worker starts with the next request.
    assert_eq!(b.worker_pid(), None);
    assert_eq!(b.restarts(), 1);
    run(&b, &twice, &x, &y).unwrap();
    assert_eq!(b.restarts(), 2);
}

#[test]
fn an_unusable_device_is_reported_then_the_worker_is_replaced() {
    let b = fake();
    let twice = compile(&b, "twice", &[]).unwrap();
    let poison = compile(&b, "poison", &[]).unwrap();
    let (mut x, y) = buffers(&b);
    let old = b.worker_pid().unwrap();
    match run(&b, &poison, &x, &y) {
        // The backend's own failure, not the worker's death.
        Err(Failure::Launch(m)) => assert!(m.contains("ILLEGAL_ADDRESS"), "{m}"),
        other => panic!("{other:?}"),
    }
    // At once, without waiting for the old worker to exit: no request goes to it any more.
    b.write(&mut x, &input()).unwrap();
    run(&b, &twice, &x, &y).unwrap();
    assert_eq!(read(&b, &y), doubled());
    assert_ne!(b.worker_pid().unwrap(), old);
    assert_eq!(b.restarts(), 1);
}

#[test]
fn a_slow_compile_times_out_without_killing_the_worker() {
    let b = fake().compile_timeout(Duration::from_millis(200));
    let pid = b.worker_pid().unwrap();
    match compile(&b, "slow_compile", &[("SLEEP_MS", "1500")]) {
        Err(Failure::Timeout(d)) => assert!(d >= Duration::from_millis(200)),
        other => panic!("{other:?}"),
    }
    let twice = compile(&b, "twice", &[]).unwrap();
    let (x, y) = buffers(&b);
    run(&b, &twice, &x, &y).unwrap();
    assert_eq!(b.worker_pid(), Some(pid));
    assert_eq!(b.restarts(), 0);
}

#[test]
fn compiles_run_concurrently_and_survive_a_crash_elsewhere() {
    let b = fake();
    let crash = compile(&b, "crash", &[]).unwrap();
    let (x, y) = buffers(&b);
    let t = Instant::now();
    std::thread::scope(|s| {
        let compiles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| compile(&b, "slow_compile", &[("SLEEP_MS", "600")])))
            .collect();
        std::thread::sleep(Duration::from_millis(150));
        // The worker dies while the four compile: they start again in the next worker.
        assert!(matches!(run(&b, &crash, &x, &y), Err(Failure::Launch(_))));
        for c in compiles {
            c.join().unwrap().unwrap();
        }
    });
    // Two rounds of four parallel compiles, not eight in a row.
    assert!(
        t.elapsed() < Duration::from_millis(4 * 600),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(b.restarts(), 1);
}

#[test]
fn a_compiler_crash_is_a_compile_failure() {
    let b = fake();
    match compile(&b, "crash_compile", &[]) {
        Err(Failure::Compile(m)) => assert!(m.contains("SIGSEGV"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(compile(&b, "twice", &[]).is_ok());
}

#[test]
fn dropping_handles_frees_them_and_dropping_the_backend_ends_the_worker() {
    let b = fake();
    let k = compile(&b, "twice", &[]).unwrap();
    let (x, y) = buffers(&b);
    let w = b.shared.live().unwrap();
    assert!(lock(&w.kernels).contains(&k.handle));
    assert!(lock(&w.buffers).contains(&x.handle));
    let (kh, xh) = (k.handle, x.handle);
    drop(k);
    drop(x);
    assert!(!lock(&w.kernels).contains(&kh));
    assert!(!lock(&w.buffers).contains(&xh));
    // The worker still serves the rest.
    let k = compile(&b, "twice", &[]).unwrap();
    let mut x = b.alloc(4 * N).unwrap();
    b.write(&mut x, &input()).unwrap();
    run(&b, &k, &x, &y).unwrap();
    drop(w);
    let pid = b.worker_pid().unwrap();
    drop(b);
    // Handles that outlive their backend drop quietly.
    drop((k, x, y));
    assert!(!process_exists(pid));
}

fn fake_space() -> Space {
    SpaceBuilder::new()
        .param(Param::<usize>::values("MODE", [0, 1, 2, 3, 4]))
        .param(Param::<usize>::values("LS", [8, 16]))
        .build()
        .unwrap()
}

fn fake_spec() -> KernelSpec {
    KernelSpec::new("fake source", "scale")
        .global(|_| [N])
        .local(|c| [c.get::<usize>(1)])
        .scalar(N as i32)
        .buffer(BufferArg::from_vec(floats(&input())))
        .buffer(BufferArg::zeros::<f32>(N).output())
        .reference(|a| {
            let x = a.buffer::<f32>(1)?;
            Ok(vec![x.iter().map(|v| 2.0 * v).collect::<Vec<f32>>().into()])
        })
        .repetitions(2)
}

#[test]
fn the_evaluator_survives_hangs_crashes_and_poison() {
    let s = fake_space();
    let b = fake().hang_timeout(Duration::from_millis(300));
    let ev = KernelEvaluator::<Isolated>::new(b, &s, fake_spec()).unwrap();
    let eval = |mode: usize| {
        let c = (0..s.len())
            .map(|i| s.get(i).unwrap())
            .find(|c| c.get::<usize>(0) == mode)
            .unwrap();
        let p = ev.prepare(&s, &c)?;
        ev.measure(&s, &c, p)
    };
    let mut kinds = HashMap::new();
    for mode in [1, 0, 2, 0, 3, 0, 4, 0] {
        let r = eval(mode);
        if mode == 0 {
            let m = r.unwrap();
            assert!(m.validation.is_some());
        } else {
            kinds.insert(mode, r.unwrap_err().kind());
        }
    }
    assert_eq!(kinds[&1], "timeout");
    assert_eq!(kinds[&2], "launch");
    assert_eq!(kinds[&3], "launch");
    assert_eq!(kinds[&4], "launch");
    assert_eq!(ev.backend().restarts(), 3);
}

#[test]
fn a_tuning_run_records_the_failures_and_finds_the_best() {
    let s = fake_space();
    let b = fake().hang_timeout(Duration::from_millis(300));
    let ev = KernelEvaluator::<Isolated>::new(b, &s, fake_spec()).unwrap();
    let r = Tuner::new(s, ev).progress(false).batch(2).run().unwrap();
    assert_eq!(r.evaluations, 10);
    assert_eq!(r.valid, 2);
    assert_eq!(r.failures.get("timeout"), Some(&2));
    assert_eq!(r.failures.get("launch"), Some(&6));
    let best: Vec<_> = r
        .best_values()
        .into_iter()
        .map(|(n, v)| (n, v.to_string()))
        .collect();
    assert_eq!(best[0], ("MODE", "0".to_string()));
}
