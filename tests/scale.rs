//! One tuning run on several devices of a machine (`scale::Devices`), for real on OpenCL:
//! several isolated workers on the one PoCL device stand in for several devices (PoCL
//! exposes one CPU device). Each worker is its own process, so a kernel that crashes takes
//! down only the worker that ran it, which is replaced.
//!
//! Without an OpenCL device the tests are reported as ignored, unless `CI` is set: then they
//! fail. Workers are this test binary started again, served by the static constructor.
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

    use std::collections::BTreeSet;
    use std::process::ExitCode;

    use tune::abort::Evaluations;
    use tune::backend::isolated::Isolated;
    use tune::backend::{BufferArg, KernelEvaluator, KernelSpec};
    use tune::measure::Remeasure;
    use tune::scale::{pick, Devices, Pick};
    use tune::search::Exhaustive;
    use tune::{Error, Param, Space, SpaceBuilder, Tuner};

    /// `y = 2 x`; with `MODE == 2` the kernel writes through a pointer made from `n`
    /// (address 4096: never mapped), which kills the worker process.
    const SCALE: &str = r#"
__kernel void scale(const int n, const __global float* x, __global float* y) {
    const int i = get_global_id(0);
#if MODE == 2
    *((__global volatile int*)((ulong)n * 4UL)) = 1;
#endif
    if (i < n) y[i] = 2.0f * x[i];
}
"#;

    const N: usize = 1024;

    fn space(modes: &[usize]) -> Space {
        SpaceBuilder::new()
            .param(Param::<usize>::values("MODE", modes.to_vec()))
            .param(Param::<usize>::values("LS", [1, 2, 4, 8, 16, 32, 64, 128]))
            .build()
            .unwrap()
    }

    fn spec() -> tune::Result<KernelSpec> {
        Ok(KernelSpec::new(SCALE, "scale")
            .global(|_| [N])
            .local(|c| [c.get::<usize>(1)])
            .scalar(N as i32)
            .buffer(BufferArg::random::<f32>(N, 3))
            .buffer(BufferArg::zeros::<f32>(N).output())
            .reference(|a| {
                let x = a.buffer::<f32>(1)?;
                Ok(vec![x.iter().map(|v| 2.0 * v).collect::<Vec<f32>>().into()])
            })
            .repetitions(2))
    }

    /// PoCL if present, else the first OpenCL device, as a query.
    fn probe() -> harness::Probe<String> {
        let queries = match std::env::var("TUNE_OPENCL_DEVICE") {
            Ok(q) => vec![q],
            Err(_) => vec!["portable".to_string(), String::new()],
        };
        let mut found = Err("no OpenCL device".to_string());
        for q in queries {
            found = Isolated::opencl(q.clone())
                .map(|_| q)
                .map_err(|e| e.to_string());
            if found.is_ok() {
                break;
            }
        }
        harness::Probe::new("opencl", found, "CI")
    }

    /// `n` workers on the device of `query`, each with the kernel's evaluator.
    fn workers(query: &str, n: usize, s: &Space) -> Devices<KernelEvaluator<Isolated>> {
        let list = pick::opencl(&Pick::list(vec![query.to_string(); n])).unwrap();
        Devices::kernels(list, s, spec).unwrap()
    }

    fn three_workers_measure_the_whole_space_and_record_which_measured_what(query: String) {
        let s = space(&[0]);
        let devices = workers(&query, 3, &s);
        assert_eq!(devices.len(), 3);
        let r = Tuner::new(s.clone(), &devices)
            .technique(Exhaustive::new())
            .remeasure(Remeasure::off())
            .progress(false)
            .run()
            .unwrap();
        assert_eq!(r.evaluations, 8);
        assert_eq!(r.valid, 8, "{:?}", r.failures);
        let used: BTreeSet<&str> = r
            .records
            .iter()
            .map(|rec| rec.measured_on.as_deref().unwrap())
            .collect();
        // Names number the repeats of one query; at least two workers measured.
        assert!(used.len() >= 2, "{used:?}");
        for name in &used {
            assert!(name.starts_with(&format!("opencl:{query}")), "{name}");
        }
        let distinct: BTreeSet<u128> = r.records.iter().map(|rec| rec.index).collect();
        assert_eq!(distinct.len(), 8, "a configuration was measured twice");
    }

    fn a_crashing_worker_is_replaced_and_loses_only_its_configuration(query: String) {
        let s = space(&[0, 2]);
        let devices = workers(&query, 3, &s);
        let r = Tuner::new(s.clone(), &devices)
            .technique(Exhaustive::new())
            .abort(Evaluations(16))
            .remeasure(Remeasure::off())
            .progress(false)
            .run()
            .unwrap();
        assert_eq!(r.evaluations, 16);
        // Every configuration that does not crash measured; every one that does is a launch
        // failure of its own (after a second opinion on another worker), not the loss of
        // another configuration.
        for rec in &r.records {
            if rec.config.get("MODE").unwrap().to_string() == "0" {
                assert!(rec.cost.is_some(), "{rec:?}");
            } else {
                assert_eq!(rec.status, "launch", "{rec:?}");
                assert!(rec.detail.as_deref().unwrap().contains("died"), "{rec:?}");
            }
        }
        // Workers are replaced when next used: at least the crashes before the last ones.
        let restarts: u64 = devices.evaluators().map(|e| e.backend().restarts()).sum();
        assert!(restarts >= 1, "{restarts}");
        // Crashes that every device agrees on are the configuration's: no device dropped.
        assert!(devices.dropped_devices().is_empty());
    }

    fn every_device_of_a_model_and_a_model_there_is_not(query: String) {
        let _ = query;
        let all = pick::opencl(&Pick::all()).unwrap();
        assert!(!all.is_empty());
        assert!(all.iter().all(|(name, _)| name.starts_with("opencl:")));
        match pick::opencl(&Pick::model("no such device model")) {
            Err(Error::DeviceNotFound { available, .. }) => assert!(!available.is_empty()),
            other => panic!("{:?}", other.map(|v| v.len())),
        }
    }

    pub fn main() -> ExitCode {
        let probe = probe();
        let mut suite = harness::Suite::new();
        let tests: [harness::DeviceTest<String>; 3] = [
            (
                "three_workers_measure_the_whole_space_and_record_which_measured_what",
                three_workers_measure_the_whole_space_and_record_which_measured_what,
            ),
            (
                "a_crashing_worker_is_replaced_and_loses_only_its_configuration",
                a_crashing_worker_is_replaced_and_loses_only_its_configuration,
            ),
            (
                "every_device_of_a_model_and_a_model_there_is_not",
                every_device_of_a_model_and_a_model_there_is_not,
            ),
        ];
        for (name, f) in tests {
            suite.device(&probe, name, f);
        }
        suite.run()
    }
}
