//! What a dispatch costs once the tuning database file is loaded: `Database::choose` with
//! an exact hit (fingerprint checked, so the space is hashed), with the nearest recorded
//! input, and with nothing recorded; and the space hash on its own, for a space with a list
//! of 1024 values. The lookups read an immutable snapshot without locking.

use std::collections::BTreeMap;

use criterion::{criterion_group, Criterion};
use tune::results::database::{Entry, Policy};
use tune::results::fingerprint::space_hash;
use tune::results::{Database, Named};
use tune::{Param, Space, SpaceBuilder, Value};

fn space(list: u32) -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::values("BS", (0..list).map(|i| 16 * (i + 1))))
        .param(Param::<u32>::range("WPT", 1..=64))
        .param(Param::<bool>::bool("PAD"))
        .build()
        .unwrap_or_else(|e| unreachable!("{e}"))
}

fn entry(key: &str) -> Entry {
    Entry {
        input_key: key.into(),
        best: Named(vec![
            ("BS".into(), Value::Int(64)),
            ("WPT".into(), Value::Int(4)),
            ("PAD".into(), Value::Bool(true)),
        ]),
        cost: 1e-3,
        objectives: Named(vec![("time_s".into(), 1e-3)]),
        remeasured: None,
        technique: "bench".into(),
        seed: 0,
        evaluations: 1,
        valid: 1,
        failures: BTreeMap::new(),
        space_len: String::new(),
        top: Vec::new(),
        timestamp: String::new(),
        fingerprint: None,
    }
}

fn dispatch(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("tune-bench-dispatch-{}", std::process::id()));
    let db = Database::open(&dir);
    let s = space(8);
    for n in [1024, 4096, 16384, 65536] {
        db.record(
            "bench",
            "gpu",
            entry(&format!("n={n}")),
            &s,
            Policy::Replace,
        )
        .unwrap_or_else(|e| unreachable!("{e}"));
    }
    let mut g = c.benchmark_group("dispatch");
    g.bench_function("exact", |b| {
        b.iter(|| db.choose("bench", "gpu", "n=4096", &s, None))
    });
    g.bench_function("nearest", |b| {
        b.iter(|| db.choose("bench", "gpu", "n=5000", &s, None))
    });
    g.bench_function("nothing_recorded", |b| {
        b.iter(|| db.choose("bench", "cpu", "n=4096", &s, None))
    });
    let long = space(1024);
    g.bench_function("space_hash_1024_values", |b| b.iter(|| space_hash(&long)));
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, dispatch);
