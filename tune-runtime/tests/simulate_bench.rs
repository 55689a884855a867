//! The simulation bench's plumbing (`benches/simulate/`, `bench/simulate/`): where it finds
//! the recorded spaces from a git worktree, and the meta search's CPU clock.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../benches/simulate/clock.rs"]
mod clock;
#[path = "../benches/simulate/data.rs"]
mod data;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const DATA_DIR_SH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/simulate/data_dir.sh");
const REL: &str = "shared/data/tuning-caches/benchmark_hub";

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// `top/main` (a repository with one commit) and its worktree `top/wt/x`, each with
/// `bench/simulate/data_dir.sh`; the shared data folder beside `main` when `shared`.
fn layout(top: &Path, shared: bool) -> (PathBuf, PathBuf) {
    let main = top.join("main");
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q"]);
    git(&main, &["commit", "-q", "--allow-empty", "-m", "start"]);
    let wt = top.join("wt/x");
    git(&main, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    for repo in [&main, &wt] {
        let dir = repo.join("bench/simulate");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(DATA_DIR_SH, dir.join("data_dir.sh")).unwrap();
    }
    if shared {
        std::fs::create_dir_all(top.join(REL)).unwrap();
    }
    (main, wt)
}

fn data_dir_sh(repo: &Path) -> std::process::Output {
    Command::new("bash")
        .arg(repo.join("bench/simulate/data_dir.sh"))
        .env_remove("TUNE_SIM_DATA")
        .output()
        .unwrap()
}

#[test]
fn run_sh_finds_the_shared_data_from_a_worktree() {
    let top = tempfile::tempdir().unwrap();
    let (main, wt) = layout(top.path(), true);
    let want = top.path().join(REL).canonicalize().unwrap();
    for repo in [&main, &wt] {
        let out = data_dir_sh(repo);
        assert!(out.status.success(), "{out:?}");
        let got = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        assert_eq!(got, want, "from {}", repo.display());
    }
}

#[test]
fn run_sh_without_data_says_what_to_set() {
    let top = tempfile::tempdir().unwrap();
    let (_, wt) = layout(top.path(), false);
    let out = data_dir_sh(&wt);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("set TUNE_SIM_DATA"), "{err}");
    // A folder given that does not exist is an error too, not an empty bench.
    let out = Command::new("bash")
        .arg(wt.join("bench/simulate/data_dir.sh"))
        .env("TUNE_SIM_DATA", top.path().join("nowhere"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("TUNE_SIM_DATA"));
}

#[test]
fn the_bench_finds_the_shared_data_from_a_worktree() {
    let top = tempfile::tempdir().unwrap();
    let (main, wt) = layout(top.path(), true);
    let want = top.path().join(REL).canonicalize().unwrap();
    assert_eq!(data::default_data(&main).unwrap(), want);
    assert_eq!(data::default_data(&wt).unwrap(), want);
    std::fs::remove_dir_all(top.path().join("shared")).unwrap();
    let err = data::default_data(&wt).unwrap_err();
    assert!(err.contains("set TUNE_SIM_DATA"), "{err}");
}

#[test]
fn the_meta_clock_counts_cpu_time_not_waiting() {
    // Waiting (as when other processes hold the cores) costs no CPU time...
    let c = clock::CpuClock::start();
    std::thread::sleep(Duration::from_millis(300));
    assert!(c.spent() < 0.1, "{}", c.spent());
    // ...and every thread's work counts: two threads of 0.15 s each.
    let thread_cpu = || {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid, writable timespec; the call only writes it.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
    };
    let spin = || {
        let t0 = thread_cpu();
        let mut x = 0u64;
        while thread_cpu() - t0 < 0.15 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
        x
    };
    let c = clock::CpuClock::start();
    std::thread::scope(|s| {
        let a = s.spawn(spin);
        spin();
        a.join().unwrap();
    });
    assert!(c.spent() >= 0.29, "{}", c.spent());
}

#[test]
fn the_bench_takes_kernel_tuner_caches_only() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let cache = Path::new(data).join("test_cache_file.json");
    assert!(data::is_kernel_tuner_cache(&cache));
    let dir = tempfile::tempdir().unwrap();
    // Gzipped, as the recorded spaces are.
    let gz = dir.path().join("cache.json.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut enc, &std::fs::read(&cache).unwrap()).unwrap();
    enc.finish().unwrap();
    assert!(data::is_kernel_tuner_cache(&gz));
    // Another tool's results (a T4 file has no `tune_params`), and no JSON at all.
    let t4 = dir.path().join("t4.json");
    std::fs::write(&t4, r#"{"results": [], "schema_version": "1.0.0"}"#).unwrap();
    assert!(!data::is_kernel_tuner_cache(&t4));
    assert!(!data::is_kernel_tuner_cache(
        &dir.path().join("missing.json")
    ));
}

// Only part of the bench's code is used here.
#[allow(dead_code)]
#[path = "../benches/simulate/report.rs"]
mod report;
#[allow(dead_code)]
#[path = "../benches/simulate/runs.rs"]
mod runs;

/// A cross-validation whose only fold holds every space has nothing to choose on: it says
/// so, the same every time, instead of picking by a hash map's order.
#[test]
fn a_fold_with_every_space_chooses_nothing() {
    let doc = r#"{"device_name": "GPU", "kernel_name": "k", "problem_size": [8],
      "tune_params_keys": ["bx"], "tune_params": {"bx": [1, 2, 3]}, "cache": {
        "1": {"bx": 1, "time": 3.0, "compile_time": 1, "verification_time": 0, "benchmark_time": 1},
        "2": {"bx": 2, "time": 2.0, "compile_time": 1, "verification_time": 0, "benchmark_time": 1},
        "3": {"bx": 3, "time": 1.0, "compile_time": 1, "verification_time": 0, "benchmark_time": 1}}}"#;
    let rec = tune_runtime::simulate::Recording::from_json(doc, "k.json").unwrap();
    let spaces = vec![runs::Space {
        name: "k.json".into(),
        kernel: rec.kernel().into(),
        gpu: rec.device().into(),
        rec,
    }];
    let lines: String = ["a", "b", "c"]
        .iter()
        .map(|t| {
            format!(
                r#"{{"tool":"tune","technique":"{t}","space":"k.json","seed":0,"budget":1000,"evals":[[3.0,2.0],[2.0,2.0],[1.0,2.0]]}}"#
            ) + "\n"
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.jsonl");
    std::fs::write(&path, lines).unwrap();
    let all = runs::read_runs(&path);
    assert_eq!(all.len(), 3);
    let st = report::stats(&spaces);
    let g = runs::group(&all);
    let cv = report::cross_validate(&g, &st, "gpu", "tune");
    assert!(cv.md.contains("nothing left to choose on"), "{}", cv.md);
    assert!(cv.columns.iter().all(Option::is_none));
    assert!(cv.score.is_none());
}
