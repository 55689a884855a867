//! `#[tunable(select = "..")]` end to end: tune a function over many inputs, choose a set
//! of configurations, generate the selector, and check that the compiled dispatch picks
//! what the tuning recorded.
//!
//! The selector is committed (tests/data/select_demo.rs); this test regenerates it and
//! fails when the committed one differs (run with `TUNE_BLESS=1` to write it, then again
//! to compile it in).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use tune::__private::Tunable;
use tune::results::Database;
use tune::select::{
    matrix::best_in, tune_inputs, Input, Matrix, Plan, Selector, SetMethod, TreeLimits,
};

include!("data/select_demo_fn.rs");

const SIZES: [u32; 4] = [16, 128, 1024, 8192];

fn tuned(db: &Database) -> Matrix {
    let inputs: Vec<Input> = SIZES
        .iter()
        .flat_map(|&m| SIZES.iter().map(move |&n| (m, n)))
        .map(|(m, n)| Input {
            key: format!("m={m},n={n}"),
            features: vec![f64::from(m), f64::from(n)],
            groups: vec![],
        })
        .collect();
    let size = |i: &Input| (i.features[0] as u32, i.features[1] as u32);
    let m = Matrix::new("select_demo", "cpu", vec!["m".into(), "n".into()]);
    let plan = Plan {
        top: 3,
        ..Plan::default()
    };
    let (m, stats) = tune_inputs(
        m,
        inputs,
        plan,
        |input| {
            let (m, n) = size(input);
            let r = DemoConfig::tuner(m, n)?
                .database(db.clone())
                .progress(false)
                .run()?;
            Ok(tune::select::measured(&r))
        },
        |input, config| {
            let (m, n) = size(input);
            let space = DemoConfig::space(m, n).ok()?;
            let cfg = DemoConfig::try_from(config.config(&space).ok()?).ok()?;
            Some(cfg.call(m, n))
        },
    )
    .unwrap();
    // Exhaustive searches measured every cell: nothing left to cross-evaluate.
    assert_eq!(m.measured(), 16 * 10);
    assert_eq!(stats.anchored + stats.promising, 0);
    m
}

#[test]
fn the_generated_dispatch_picks_the_recorded_configurations() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let m = tuned(&db);
    db.record_matrix(&m).unwrap();
    // Room for every input's best: a tree without limits then reproduces them.
    let mut winners: Vec<usize> = (0..16).filter_map(|i| m.best(i)).map(|(c, _)| c).collect();
    winners.sort_unstable();
    winners.dedup();
    let all: Vec<usize> = (0..16).collect();
    let s = Selector::fit(&m, &all, winners.len(), SetMethod::Greedy, TreeLimits::A).unwrap();
    db.record_selector(&s).unwrap();

    let source = s.rust(<DemoConfig as Tunable>::FINGERPRINT).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/select_demo.rs");
    let committed = std::fs::read_to_string(&path).unwrap();
    if committed != source {
        if std::env::var_os("TUNE_BLESS").is_some() {
            std::fs::write(&path, &source).unwrap();
        }
        panic!(
            "tests/data/select_demo.rs is not the selector this test generates; run with TUNE_BLESS=1 to write it, then again\n{source}"
        );
    }

    for (i, input) in m.inputs().iter().enumerate() {
        let (mm, nn) = (input.features[0] as u32, input.features[1] as u32);
        let picked = DemoConfig::select(mm, nn).expect("a selector for this declaration");
        // What the database recorded as this input's best.
        let entry = db
            .recorded(
                "select_demo",
                "cpu",
                &input.key,
                &DemoConfig::space(mm, nn).unwrap(),
                Some(<DemoConfig as Tunable>::FINGERPRINT),
            )
            .unwrap()
            .expect("recorded");
        let recorded = DemoConfig::try_from(
            entry
                .best
                .config(&DemoConfig::space(mm, nn).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(picked, recorded, "{}", input.key);
        // The compiled tree and the selector's data agree.
        let set: Vec<usize> = s
            .configs
            .iter()
            .map(|c| m.configs().iter().position(|x| x == c).unwrap())
            .collect();
        assert_eq!(
            Some(&m.configs()[best_in(&m, i, &set).unwrap()]),
            s.choose(&input.features)
        );
        // The dispatch runs it.
        assert_eq!(demo_auto(mm, nn).unwrap(), picked.call(mm, nn));
    }
    // Far outside the tuned sizes: still one of the deployed configurations.
    for (mm, nn) in [(1, 1), (1 << 30, 3), (u32::MAX, u32::MAX)] {
        let picked = DemoConfig::select(mm, nn).unwrap();
        assert!(s.configs.iter().any(|c| DemoConfig::try_from(
            c.config(&DemoConfig::space(mm, nn).unwrap()).unwrap()
        )
        .unwrap()
            == picked));
    }
}

/// Counts allocations, to show that the compiled selector makes none.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn the_compiled_selector_does_not_allocate() {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let mut tiles = 0u32;
    for m in [1u32, 16, 300, 5000, u32::MAX] {
        for n in [1u32, 16, 300, 5000, u32::MAX] {
            tiles += DemoConfig::select(std::hint::black_box(m), std::hint::black_box(n))
                .unwrap()
                .tile;
        }
    }
    // Another test of this binary may allocate meanwhile: retry on a difference.
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    assert!(tiles > 0);
    if after != before {
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        let _ = DemoConfig::select(std::hint::black_box(16), std::hint::black_box(16));
        assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), before);
    }
}
