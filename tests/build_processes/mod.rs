//! Builder processes (`OpenCl::build_processes`): programs built in other processes of this
//! executable and loaded here from their binaries run and validate like programs built
//! here, failed builds keep the driver's log, and the processes end with the backend.
//! `tests/opencl.rs` registers them (PoCL in CI; NVIDIA's platform uses builders by default).
#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;

use tune::backend::opencl::{OpenCl, BUILD_PROCESSES_ENV};
use tune::backend::{Backend, CompileRequest, KernelEvaluator};
use tune::{Evaluator, Failure};

use crate::harness::DeviceTest;

/// The probe's device again, with `n` builder processes.
fn reopen(dev: &OpenCl, n: usize) -> OpenCl {
    let d = dev.device();
    OpenCl::select(&format!("{}/{}", d.platform, d.name))
        .unwrap()
        .build_processes(n)
}

/// The processes this one started that are still running (this test binary again).
fn children() -> usize {
    let me = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // `pid (comm) state ppid ...`: the fields after the last ')'.
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.len() > 1 && fields[1] == me && fields[0] != "Z"
        })
        .count()
}

fn builders_build_what_runs(dev: Arc<OpenCl>) {
    let before = children();
    let backend = reopen(&dev, 2);
    assert_eq!(backend.build_process_count(), 2);
    let space = crate::one_param();
    let ev = KernelEvaluator::new(
        backend,
        &space,
        crate::copy_spec(include_str!("../../kernels/copy.cl")),
    )
    .unwrap();
    // Four compilations at once: both builders start and serve.
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (ev, space) = (&ev, &space);
                s.spawn(move || {
                    let c = space.get(i % space.len()).unwrap();
                    let p = ev.prepare(space, &c).unwrap();
                    ev.measure(space, &c, p).unwrap()
                })
            })
            .collect();
        for h in handles {
            let m = h.join().unwrap();
            assert!(m.validation.is_some(), "the output was validated");
        }
    });
    assert_eq!(ev.backend().build_processes_failed(), None);
    // No other test of this binary leaves processes running (they run one at a time).
    let running = children().saturating_sub(before);
    assert!((1..=2).contains(&running), "{running} builder processes");
    drop(ev);
    assert!(children() <= before, "the builders end with the backend");
}

fn a_failed_build_keeps_the_log(dev: Arc<OpenCl>) {
    let backend = reopen(&dev, 1);
    let r = backend.compile(&CompileRequest {
        source: "__kernel void k(__global float* y) { y[0] = undeclared_name; }",
        kernel: "k",
        defines: &[],
        options: &[],
    });
    match r {
        Err(Failure::Compile(log)) => assert!(log.contains("undeclared_name"), "{log}"),
        other => panic!("{other:?}"),
    }
    // The builder that reported it still serves.
    let ok = backend.compile(&CompileRequest {
        source: "__kernel void k(__global float* y) { y[0] = 1.0f; }",
        kernel: "k",
        defines: &[],
        options: &[],
    });
    assert!(ok.is_ok(), "{ok:?}");
    assert_eq!(backend.build_processes_failed(), None);
}

fn a_bad_setting_is_a_clear_error(dev: Arc<OpenCl>) {
    let d = dev.device();
    let query = format!("{}/{}", d.platform, d.name);
    std::env::set_var(BUILD_PROCESSES_ENV, "many");
    let r = OpenCl::select(&query);
    std::env::set_var(BUILD_PROCESSES_ENV, "0");
    let off = OpenCl::select(&query).map(|b| b.build_process_count());
    std::env::remove_var(BUILD_PROCESSES_ENV);
    match r {
        Err(e) => assert!(e.to_string().contains(BUILD_PROCESSES_ENV), "{e}"),
        Ok(_) => panic!("`many` was taken as a number of processes"),
    }
    assert_eq!(off.unwrap(), 0);
}

pub fn tests() -> [DeviceTest<Arc<OpenCl>>; 3] {
    [
        ("builders_build_what_runs", builders_build_what_runs),
        ("a_failed_build_keeps_the_log", a_failed_build_keeps_the_log),
        (
            "a_bad_setting_is_a_clear_error",
            a_bad_setting_is_a_clear_error,
        ),
    ]
}
