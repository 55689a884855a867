//! Concurrent writers lose nothing: threads, tuners in parallel tests, and processes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};

use super::tests::{entry, space};
use super::*;
use crate::evaluate::closure::Closure;
use crate::search::Exhaustive;
use crate::tuner::Tuner;
use crate::Failure;

fn keys(db: &Database, tunable: &str, device: &str) -> Vec<String> {
    let mut k: Vec<String> = db
        .load(tunable, device)
        .unwrap()
        .map(|f| f.entries.into_iter().map(|e| e.input_key).collect())
        .unwrap_or_default();
    k.sort();
    k
}

fn expected(writers: usize, each: usize) -> Vec<String> {
    let mut k: Vec<String> = (0..writers)
        .flat_map(|w| (0..each).map(move |i| format!("w={w},i={i}")))
        .collect();
    k.sort();
    k
}

/// Was: 8 threads x 25 records left a corrupt file in 3 of 5 trials.
#[test]
fn threads_recording_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let s = space();
    std::thread::scope(|scope| {
        for w in 0..8 {
            let (db, s) = (&db, &s);
            scope.spawn(move || {
                for i in 0..25 {
                    let key = format!("w={w},i={i}");
                    db.record("k", "gpu", entry(&key, 32, 1.0), s, Policy::KeepBetter)
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(keys(&db, "k", "gpu"), expected(8, 25));
}

/// Was: two tuners of one tunable with different inputs (two `#[tune::test]`s) lost one
/// entry in 17-19 of 20 rounds, and the losing run failed with an I/O error.
#[test]
fn two_tuners_in_parallel_both_record() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let s = space();
    for round in 0..20 {
        let results: Vec<Result<_>> = std::thread::scope(|scope| {
            let runs: Vec<_> = (0..2)
                .map(|t| {
                    let (db, s) = (db.clone(), s.clone());
                    scope.spawn(move || {
                        let eval =
                            Closure::new(|c: &Config| -> std::result::Result<f64, Failure> {
                                Ok(c.get::<u32>(0) as f64)
                            });
                        Tuner::new(s, eval)
                            .technique(Exhaustive::default())
                            .name("shared")
                            .input_key(format!("round={round},t={t}"))
                            .progress(false)
                            .database(db)
                            .run()
                    })
                })
                .collect();
            runs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in results {
            r.unwrap();
        }
    }
    let mut want: Vec<String> = (0..20)
        .flat_map(|r| (0..2).map(move |t| format!("round={r},t={t}")))
        .collect();
    want.sort();
    assert_eq!(keys(&db, "shared", "cpu"), want);
}

const CHILD_DIR: &str = "TUNE_TEST_DB_CHILD_DIR";
const CHILD_ID: &str = "TUNE_TEST_DB_CHILD_ID";
const PER_CHILD: usize = 50;

/// Run only by `processes_recording_at_once_lose_nothing`, in a child process.
#[test]
#[ignore = "a helper that processes_recording_at_once_lose_nothing runs in child processes"]
fn child_writer() {
    let (Some(dir), Some(id)) = (std::env::var_os(CHILD_DIR), std::env::var_os(CHILD_ID)) else {
        panic!("run by processes_recording_at_once_lose_nothing, with {CHILD_DIR} and {CHILD_ID}");
    };
    let db = Database::open(dir);
    let s = space();
    let w = id.to_string_lossy().into_owned();
    for i in 0..PER_CHILD {
        let key = format!("w={w},i={i}");
        db.record("k", "gpu", entry(&key, 64, 1.0), &s, Policy::KeepBetter)
            .unwrap();
    }
}

/// Was: 2-4 processes x 50 records lost 40-71% of the entries, with no error.
#[test]
fn processes_recording_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let writers = 4;
    let children: Vec<_> = (0..writers)
        .map(|w| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "results::database::concurrency::child_writer",
                    "--ignored",
                    "--test-threads=1",
                    "--quiet",
                ])
                .env(CHILD_DIR, dir.path())
                .env(CHILD_ID, w.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (w, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "child {w}: {}\n{text}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        keys(&Database::open(dir.path()), "k", "gpu"),
        expected(writers, PER_CHILD)
    );
}
