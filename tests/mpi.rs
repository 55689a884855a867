//! Tuning across MPI ranks (feature `mpi`), for real: each test starts this binary under
//! `mpirun -np 4` on this machine, the ranks tune a closure evaluator through
//! `scale::mpi::Cluster`, and the test reads what rank 0 wrote (its log, and a line on
//! standard output).
//!
//! Without `mpirun` the tests are reported as ignored, unless `CI` is set: then they fail.
//! A copy of this binary started by `mpirun` finds the scenario to play in `TUNE_MPI_CASE`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "harness/mod.rs"]
mod harness;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use tune::abort::Evaluations;
use tune::evaluate::closure::Closure;
use tune::measure::Remeasure;
use tune::results::{log, Record};
use tune::scale::mpi::Cluster;
use tune::search::Exhaustive;
use tune::{Config, Failure, Param, Space, SpaceBuilder, Tuner};

/// The scenario a rank plays, and the folder it writes to.
const CASE: &str = "TUNE_MPI_CASE";
const DIR: &str = "TUNE_MPI_DIR";
/// The rank that kills itself in the `kill` scenario, and after how many measurements.
const VICTIM: &str = "2";
const VICTIM_AFTER: usize = 5;

fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::range("X", 0..24))
        .param(Param::<u32>::values("Y", [1, 2, 4]))
        .build()
        .unwrap()
}

/// `|X - 17| + Y`, X = 5 does not compile.
fn cost(c: &Config) -> Result<f64, Failure> {
    let (x, y): (u32, u32) = (c.get(0), c.get(1));
    if x == 5 {
        return Err(Failure::Compile("X = 5 does not compile".into()));
    }
    Ok((x as f64 - 17.0).abs() + y as f64)
}

fn rank() -> String {
    std::env::var("OMPI_COMM_WORLD_RANK")
        .or_else(|_| std::env::var("PMI_RANK"))
        .unwrap_or_default()
}

/// One rank of a scenario.
fn play(case: &str) -> ExitCode {
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let cluster = Cluster::init()
        .unwrap()
        .silence_limit(Duration::from_secs(2));
    let me = rank();
    let delay = Duration::from_millis(if case == "tune" || case == "exhaustive" {
        5
    } else {
        40
    });
    let model = if case == "mixed" && me == "3" {
        "another model"
    } else {
        "test device"
    };
    let eval = Closure::new(move |c: &Config| {
        std::thread::sleep(delay);
        // `kill`: a rank that measures goes; `resume1`: rank 0, with the log, goes.
        let victim = match case {
            "kill" => VICTIM,
            "resume1" => "0",
            _ => "",
        };
        if me == victim {
            static DONE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            if DONE.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == VICTIM_AFTER {
                // Killed while it measures: as if its machine went away.
                // SAFETY: kill(2) on this process with SIGKILL; no memory is touched.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
        }
        cost(c)
    })
    .device_name(model);
    let budget = match case {
        "resume1" | "resume2" => 60,
        _ => 48,
    };
    let mut tuner = Tuner::new(space(), eval)
        .name("mpi")
        .abort(Evaluations(budget))
        .log(dir.join("run.jsonl"))
        .resume(case == "resume2")
        .remeasure(Remeasure::off())
        .progress(false);
    if case == "exhaustive" {
        tuner = tuner.technique(Exhaustive::new());
    }
    match cluster.tune(tuner) {
        Ok(Some(r)) => {
            println!(
                "RESULT evaluations={} resumed={} best={}",
                r.evaluations,
                r.resumed,
                r.best.config.get::<u32>(0)
            );
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            println!("ERROR rank {}: {e}", cluster.rank());
            ExitCode::from(2)
        }
    }
}

/// `mpirun`, if it is there.
fn mpirun() -> Result<PathBuf, String> {
    let ok = Command::new("mpirun")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("`mpirun` cannot be started ({e}); install OpenMPI"))?;
    if ok.success() {
        Ok(PathBuf::from("mpirun"))
    } else {
        Err("`mpirun --version` failed".into())
    }
}

/// What a run of 4 ranks printed, and its exit status.
struct Launch {
    status: Option<i32>,
    out: String,
}

/// Runs `case` on 4 ranks of this binary, writing into `dir`.
fn launch(mpirun: &Path, case: &str, dir: &Path) -> Launch {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(mpirun)
        .args(["-np", "4", "--oversubscribe", "--enable-recovery"])
        .arg(exe)
        .env(CASE, case)
        .env(DIR, dir)
        // The CI runs as root; OpenMPI refuses that unless told.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        // A launch ends in seconds; one run of this suite under load took 186 s (a launch
        // with a killed rank, whose outcome is in what the ranks printed, ran to the limit).
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = child.wait_with_output().unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Launch { status, out }
}

fn records(dir: &Path) -> Vec<Record> {
    log::read(&dir.join("run.jsonl")).unwrap()
}

fn outcomes(rs: &[Record]) -> BTreeMap<u128, (String, Option<f64>)> {
    rs.iter()
        .map(|r| (r.index, (r.status.clone(), r.cost)))
        .collect()
}

fn ranks_used(rs: &[Record]) -> BTreeSet<String> {
    rs.iter()
        .filter_map(|r| r.measured_on.as_deref())
        .filter_map(|m| m.split(' ').nth(1).map(str::to_string))
        .collect()
}

fn four_ranks_tune_and_only_rank_0_writes(mpirun: PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let l = launch(&mpirun, "tune", dir.path());
    assert_eq!(l.status, Some(0), "{}", l.out);
    assert!(l.out.contains("RESULT evaluations=48"), "{}", l.out);
    assert_eq!(l.out.matches("RESULT").count(), 1, "{}", l.out);
    let rs = records(dir.path());
    assert_eq!(rs.len(), 48);
    let distinct: BTreeSet<u128> = rs.iter().map(|r| r.index).collect();
    assert_eq!(distinct.len(), 48, "a configuration was measured twice");
    assert_eq!(ranks_used(&rs).len(), 4, "{:?}", ranks_used(&rs));
    assert!(rs.iter().all(|r| r.device.as_ref() == "test device"));
    // Only rank 0 wrote: the log is the only file.
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1);
}

fn exhaustive_search_gives_the_sequential_results(mpirun: PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let l = launch(&mpirun, "exhaustive", dir.path());
    assert_eq!(l.status, Some(0), "{}", l.out);
    let sequential = Tuner::new(space(), Closure::new(cost).device_name("test device"))
        .technique(Exhaustive::new())
        .abort(Evaluations(48))
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    let rs = records(dir.path());
    assert_eq!(outcomes(&rs), outcomes(&sequential.records));
    assert_eq!(ranks_used(&rs).len(), 4);
}

fn killing_a_rank_loses_at_most_one_evaluation(mpirun: PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let l = launch(&mpirun, "kill", dir.path());
    // The run finished: rank 0 printed its result (mpirun's own status reports the kill).
    assert!(l.out.contains("RESULT evaluations=48"), "{}", l.out);
    let rs = records(dir.path());
    assert_eq!(rs.len(), 48);
    let lost: Vec<&Record> = rs
        .iter()
        .filter(|r| r.detail.as_deref().is_some_and(|d| d.contains("was lost")))
        .collect();
    assert!(lost.len() <= 1, "{lost:?}");
    // Every other evaluation has the configuration's own outcome.
    for r in rs
        .iter()
        .filter(|r| !lost.iter().any(|l| l.index == r.index))
    {
        let c = tune::results::Named::config(&r.config, &space()).unwrap();
        assert_eq!(r.cost.is_some(), cost(&c).is_ok(), "{r:?}");
    }
    // The victim measured before it went, and the others measured after.
    let victim = format!("rank {VICTIM} ");
    let by_victim = rs
        .iter()
        .filter(|r| {
            r.measured_on
                .as_deref()
                .is_some_and(|m| m.starts_with(&victim))
        })
        .count();
    assert!(by_victim >= VICTIM_AFTER - 1, "{by_victim}");
    assert!(
        l.out.contains(&format!("rank {VICTIM} sent nothing")),
        "{}",
        l.out
    );
}

fn devices_of_another_model_are_refused(mpirun: PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let l = launch(&mpirun, "mixed", dir.path());
    assert!(
        l.out
            .contains("ERROR rank 0: the devices of one run must be the same model"),
        "{}",
        l.out
    );
    assert!(l.out.contains("rank 3 ("), "{}", l.out);
    assert!(l.out.contains("another model"), "{}", l.out);
    assert!(
        l.out.contains("ERROR rank 1: mpi: rank 0 refused the run"),
        "{}",
        l.out
    );
}

fn a_run_whose_rank_0_was_killed_resumes_from_its_log(mpirun: PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    // Rank 0 kills itself while it measures: the other ranks stop on their own (under
    // `--enable-recovery`, mpirun's own status does not tell).
    let l = launch(&mpirun, "resume1", dir.path());
    assert!(!l.out.contains("RESULT"), "{}", l.out);
    assert!(
        l.out.contains("ERROR rank 1: mpi: rank 0 sent nothing for"),
        "{}",
        l.out
    );
    let before = records(dir.path()).len();
    assert!((1..60).contains(&before), "{before}");
    let l = launch(&mpirun, "resume2", dir.path());
    assert_eq!(l.status, Some(0), "{}", l.out);
    assert!(
        l.out
            .contains(&format!("RESULT evaluations=60 resumed={before} ")),
        "{}",
        l.out
    );
    let rs = records(dir.path());
    let distinct: BTreeSet<u128> = rs.iter().map(|r| r.index).collect();
    assert_eq!(rs.len(), 60);
    assert_eq!(
        distinct.len(),
        60,
        "the resumed run measured again what the log had"
    );
}

fn main() -> ExitCode {
    if let Ok(case) = std::env::var(CASE) {
        return play(&case);
    }
    let probe = harness::Probe::new("mpi", mpirun(), "CI");
    let mut suite = harness::Suite::new();
    suite.device(
        &probe,
        "four_ranks_tune_and_only_rank_0_writes",
        four_ranks_tune_and_only_rank_0_writes,
    );
    suite.device(
        &probe,
        "exhaustive_search_gives_the_sequential_results",
        exhaustive_search_gives_the_sequential_results,
    );
    suite.device(
        &probe,
        "killing_a_rank_loses_at_most_one_evaluation",
        killing_a_rank_loses_at_most_one_evaluation,
    );
    suite.device(
        &probe,
        "devices_of_another_model_are_refused",
        devices_of_another_model_are_refused,
    );
    suite.device(
        &probe,
        "a_run_whose_rank_0_was_killed_resumes_from_its_log",
        a_run_whose_rank_0_was_killed_resumes_from_its_log,
    );
    suite.run()
}
