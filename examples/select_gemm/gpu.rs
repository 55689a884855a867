//! The GPU run: GEMM kernels (candidates.rs: XgemmDirect, and on CUDA the tiled SGEMM,
//! padded) on every shape, with CUDA or OpenCL. A pool of configurations sampled from the
//! kernels' spaces is compiled once each (in parallel) and checked once on an odd shape;
//! the sizes are kernel arguments, so every shape launches the same binaries. Each shape's
//! search is a random sample of the pool; the cross-evaluation and the tables are the CPU
//! run's. On CUDA every shape is also timed with cuBLAS SGEMM (TF32 off), the same way.
//!
//! `select_gemm gpu --backend cuda|opencl [POOL] [EVALS] [TILED]` (defaults 128, 12 and,
//! on CUDA, 24 tiled SGEMM configurations besides the POOL of XgemmDirect).
//!
//! The run keeps to `$TUNE_SELECT_SECONDS` (default 300; the GPU machine allows 10 minutes
//! a call): past a third of it no more configurations are compiled, past 40% of it the
//! searches take at most 8 configurations a shape (past 60%, 2), past 75% the
//! cross-evaluation measures nothing more, past 80% neither does the label step, past 85%
//! the tuning run re-measures nothing more, past 95% neither do the scoring cells (they
//! stay empty, and the report counts them) nor the re-measuring of each shape's best
//! cells for the tables; the filling of the grid with the time left (`pipeline::fill`)
//! stops at 80%, so that a slow device still writes its matrix.
//!
//! The tuning run (`pipeline::TUNE_SHARE` and `pipeline::BUDGET`, fixed a priori):
//! the searches and the cross-evaluation within 10% of the grid, then the label step
//! (`pipeline::label_step`) for each training set, each split's and all shapes', within
//! what they left of 15%. Since select8 the label step has the whole of it (select7's
//! tuning-side re-measuring cost more label cells than it gave back: bench/select/RESULTS.md,
//! round 7); `$TUNE_SELECT_RELABEL=1` runs select7's plan: `remeasure::RESERVE` cells a
//! training shape kept from the label step, and each training shape's `remeasure::TOP`
//! best cells of what its selectors learn from measured `remeasure::ROUNDS` times more,
//! interleaved (their median is learnt), beside select6's label cells for comparison. Phases
//! past it (each shape's `remeasure::SCORE_TOP` best cells of the truth re-measured last), each reported apart from the 15% and never read by a
//! set or a tree: the scoring cells (`pipeline::verify`); cuBLAS on CUDA
//! (`$TUNE_SELECT_VENDOR=0`: none); the rest of the grid (`$TUNE_SELECT_FILL=0`: none).
//! `$TUNE_SELECT_ANALYSE=0` writes `run.json.gz` without the tables (`select_gemm analyse
//! DIR` computes them);
//! `$TUNE_SELECT_COMPILE_THREADS` sets the compile threads (default: every core).
//! `$TUNE_SELECT_SEEDS=1,2` runs the plan once per seed of the searches' shuffle on the
//! same compiled pool, each into `$OUT/seed-N/` (cells measured once, shared; cuBLAS and
//! the filling once, after the last seed), each seed within `$TUNE_SELECT_PLAN_SECONDS`.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::candidates::{Buffers, Compiled, Pool};
#[cfg(feature = "cuda")]
use crate::common::cases::gemm::Gemm;
use crate::common::cases::Target;
use crate::common::cli::number;
use crate::pipeline::remeasure::{self, best_cells, RESERVE, SCORE_TOP, TOP};
use crate::pipeline::{self, RunFile, Shape, Shapes};
use tune::backend::Backend;
use tune::results::Named;
use tune::select::{tune_inputs, Matrix, Plan};
use tune::Result;

// Built without a backend, `device` has no variant and the sizes go unused.
#[cfg_attr(
    not(any(feature = "opencl", feature = "cuda")),
    allow(unused_variables)
)]
pub fn main(_args: &[String]) -> ExitCode {
    crate::common::cli::main("select_gemm gpu", |device, args| {
        let args: Vec<String> = args.into_iter().filter(|a| a != "gpu").collect();
        let pool = number(&args, 0).unwrap_or(128);
        let evals = number(&args, 1).unwrap_or(12);
        // The tiled SGEMM is CUDA's only.
        #[cfg_attr(not(feature = "cuda"), allow(unused_variables))]
        let tiled = number(&args, 2).unwrap_or(24);
        match device {
            #[cfg(feature = "opencl")]
            crate::common::cli::Device::OpenCl(cl) => run(cl, (pool, 0), evals, |_| Ok(None)),
            #[cfg(feature = "cuda")]
            crate::common::cli::Device::Cuda(cuda) => {
                let c = cuda.clone();
                run(cuda, (pool, tiled), evals, move |shapes| {
                    cublas(&c, shapes).map(Some)
                })
            }
        }
    })
}

/// Seconds per call of cuBLAS SGEMM for every shape key (one product times the batch).
#[cfg(feature = "cuda")]
fn cublas(cuda: &tune::cuda::Cuda, shapes: &Shapes) -> Result<(String, Vec<(String, f64)>)> {
    let mut out = Vec::new();
    let mut done: Vec<((usize, usize, usize), f64)> = Vec::new();
    for s in &shapes.0 {
        let key = (s.m, s.n, s.k);
        let t = match done.iter().find(|(k, _)| *k == key) {
            Some(&(_, t)) => t,
            None => {
                // Samples sized as ours are (`launches`): a single call first.
                let g = Gemm::new(s.m, s.n, s.k);
                let (once, _) = crate::common::cuda::cublas_sgemm(cuda, &g, 1, 1)?;
                let (t, _) = crate::common::cuda::cublas_sgemm(cuda, &g, launches(once), 5)?;
                done.push((key, t));
                t
            }
        };
        out.push((s.key(), t * s.batch as f64));
    }
    Ok(("cuBLAS SGEMM (TF32 off)".into(), out))
}

fn run<B: Backend>(
    backend: Arc<B>,
    sizes: (usize, usize),
    evals: usize,
    vendor: impl FnOnce(&Shapes) -> Result<Option<(String, Vec<(String, f64)>)>>,
) -> Result<()> {
    let started = Instant::now();
    let target = Target::of(&*backend)?;
    let language = target.language;
    // `$TUNE_SELECT_MAX_GFLOP`: only the shapes of at most that many GFLOP (a smoke run
    // on a slow device; default: every shape).
    let shapes = match std::env::var("TUNE_SELECT_MAX_GFLOP") {
        Ok(g) => Shapes::read()?.at_most(
            g.parse::<f64>().map_err(|_| {
                tune::Error::Select(format!("TUNE_SELECT_MAX_GFLOP={g}: expected a number"))
            })? * 1e9,
        ),
        Err(_) => Shapes::read()?,
    };
    let largest = shapes.0.iter().fold((1, 1, 1), |(a, b, c), s| {
        (a.max(s.m), b.max(s.n), c.max(s.k))
    });
    // Past a third of the budget no more configurations are compiled (NVIDIA's OpenCL
    // compiler took 486 s for 192 on an H100, leaving no time to measure).
    let compile_by = started + Duration::from_secs_f64(budget() / 3.0);
    let pool = Pool::compile(&*backend, &target, largest, sizes, compile_by)?;
    let (direct, tiled) = pool.counts();
    println!(
        "{}: {direct} of {} XgemmDirect and {tiled} of {} tiled SGEMM configurations compiled and right, in {:.0?}",
        target.device.name,
        sizes.0,
        sizes.1,
        started.elapsed()
    );
    let bench = Bench::new(backend.clone(), &pool, &shapes)?;
    let device = format!("{} ({language})", target.device.name);
    let named: Vec<Named<tune::Value>> = pool.kernels.iter().map(|k| pool.named(k)).collect();
    let index = |cfg: &Named<tune::Value>| named.iter().position(|n| n == cfg);
    let find = |key: &str| {
        shapes
            .0
            .iter()
            .find(|s| s.key() == key)
            .cloned()
            .unwrap_or_default()
    };
    let budget = budget();
    let seeds = seeds()?;
    let reserve = reserve()?;
    let out = crate::out_dir(language.name());
    // Each seed's tuning run, label step and scoring cells: (directory, matrix, truth,
    // stats, label cells, scoring cells).
    let mut runs = Vec::new();
    for (n, &seed) in seeds.iter().enumerate() {
        // The first seed's window starts with the run (one seed: as before the seeds);
        // each later seed's when it starts. `$TUNE_SELECT_PLAN_SECONDS` (default: the
        // whole budget) is one seed's window; past 95% of the budget nothing is measured.
        let window = if n == 0 { started } else { Instant::now() };
        let plan_seconds = plan_seconds(budget);
        let before = |share: f64| {
            window.elapsed() < Duration::from_secs_f64(plan_seconds * share)
                && started.elapsed() < Duration::from_secs_f64(budget * 0.95)
        };
        let dir = if seeds.len() > 1 {
            out.join(format!("seed-{seed}"))
        } else {
            out.clone()
        };
        println!("seed {seed} (searches' shuffle), {:.0?}", started.elapsed());
        let m = Matrix::new("gemm", &device, Shape::FEATURES.map(String::from).to_vec());
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut order: Vec<usize> = (0..pool.kernels.len()).collect();
        let mut searched = 0usize;
        let (m, stats) = tune_inputs(
            m,
            shapes.inputs(),
            Plan {
                budget: pipeline::TUNE_SHARE,
                ..Plan::default()
            },
            |input| {
                // A random search over the compiled pool: few cells, because the
                // cross-evaluation brings every shape the strong candidates of the others.
                order.shuffle(&mut rng);
                let s = find(&input.key);
                searched += 1;
                if searched % 50 == 0 {
                    eprintln!("searched {searched} shapes, {:.0?}", started.elapsed());
                }
                let evals = match () {
                    _ if before(0.4) => evals,
                    _ if before(0.6) => evals.min(8),
                    _ => evals.min(2),
                };
                Ok(order
                    .iter()
                    .take(evals)
                    .filter_map(|&c| Some((named[c].clone(), bench.time(c, &s)?)))
                    .collect())
            },
            |input, cfg| {
                before(0.75).then_some(())?;
                bench.time(index(cfg)?, &find(&input.key))
            },
        )?;
        println!(
            "searched {} cells, cross-evaluated {} + {}: {:.1}% of the {}-cell grid in all, {:.0?}",
            stats.searched,
            stats.anchored,
            stats.promising,
            100.0 * stats.measured_fraction(),
            stats.grid,
            started.elapsed()
        );
        // The label step, the rest of the tuning run: the matrix the selectors of each
        // training set learn from is `m` and its label cells; every later cell goes to
        // `truth` alone.
        let mut truth = m.clone();
        let label_budget = pipeline::label_budget(&stats, pipeline::BUDGET);
        let trains = pipeline::training_sets(&m);
        let labelled = pipeline::label_step(
            &m,
            &mut truth,
            &trains,
            (label_budget, reserve),
            |input, cfg| bench.time(index(cfg)?, &find(&input.key)),
            || before(0.8),
        )?;
        println!(
            "label step: {} distinct label cells measured, {} planned over the training sets (at most {label_budget} each, less {reserve} a training shape for re-measuring: what the searches and cross-evaluation left of {:.0}% of the grid), {:.0?}",
            labelled.0,
            labelled.1,
            100.0 * pipeline::BUDGET,
            started.elapsed()
        );
        // Each training shape's best cells of what its set's selectors learn from,
        // measured again (the same cell for two sets once), shape by shape.
        // None without a reserve (select8's plan).
        let mut cells = Vec::new();
        for train in trains.iter().filter(|_| reserve > 0) {
            let b = pipeline::set_budget(label_budget, reserve, train.len());
            let (lab, _, _) = pipeline::labelled(&m, &truth, train, b)?;
            // Within the label budget: a set too small for its reserve re-measures fewer.
            let mut own = best_cells(&lab, train, TOP);
            own.truncate(label_budget / remeasure::ROUNDS);
            cells.extend(own);
        }
        cells.sort_unstable();
        cells.dedup();
        let before_now = bench.remeasured();
        let relabel = bench.remeasure(&truth, &cells, (index, find), || before(0.85))?;
        println!(
            "re-measured {} of {} cells (each training shape's {TOP} best, {} times more; {} measurements), {:.0?}",
            relabel.len(),
            cells.len(),
            remeasure::ROUNDS,
            bench.remeasured() - before_now,
            started.elapsed()
        );
        // The scoring cells are planned on what the selectors learn from.
        let mut learnt = remeasure::with_times(&truth, &relabel)?;
        let scored = pipeline::verify(&m, &mut learnt, (label_budget, reserve), |input, cfg| {
            before(0.95).then_some(())?;
            bench.time(index(cfg)?, &find(&input.key))
        })?;
        // With a reserve (select7's plan), select6's plan's label cells (the whole
        // budget, nothing re-measured), for the tables' comparison alone: never read by
        // this plan's selectors. Without one they are the label step's own.
        if reserve > 0 {
            let plain = pipeline::label_step(
                &m,
                &mut truth,
                &trains,
                (label_budget, 0),
                |input, cfg| bench.time(index(cfg)?, &find(&input.key)),
                || before(0.95),
            )?;
            println!(
                "select6's plan's label cells, for comparison: {} more measured, {:.0?}",
                plain.0,
                started.elapsed()
            );
        }
        for i in 0..truth.inputs().len() {
            for c in 0..truth.configs().len() {
                if let (None, Some(_)) = (truth.get(i, c), learnt.get(i, c)) {
                    if let Some(t) = bench.first(index(&truth.configs()[c]), &truth.inputs()[i].key)
                    {
                        truth.set(i, c, t)?;
                    }
                }
            }
        }
        println!(
            "scoring cells: {} of {} measured ({:.1}% of the grid), {:.0?}",
            scored.0,
            scored.1,
            100.0 * scored.0 as f64 / stats.grid.max(1) as f64,
            started.elapsed()
        );
        // Written now, so that a call cut short keeps every seed it finished.
        let mut run = RunFile::new(m.clone(), &truth, stats, scored, None);
        run.labelled = labelled;
        run.budget = pipeline::BUDGET;
        run.reserve = reserve;
        run.relabel = relabel.clone();
        pipeline::write_run(&dir, &run, "analysing: see log.txt\n")?;
        runs.push((dir, m, truth, stats, labelled, scored, relabel));
    }
    // `$TUNE_SELECT_VENDOR=0`: no vendor library.
    let vendor = if std::env::var("TUNE_SELECT_VENDOR").is_ok_and(|v| v == "0") {
        None
    } else {
        vendor(&shapes)?
    };
    eprintln!("vendor library timed, {:.0?}", started.elapsed());
    // The rest of the grid with the time left (`$TUNE_SELECT_FILL=0`: none), into the
    // first seed's truth; then every cell measured in the call into every seed's, so that
    // the seeds' tables divide by the same per-shape optimum.
    let fill = !std::env::var("TUNE_SELECT_FILL").is_ok_and(|v| v == "0");
    let mut owns = Vec::new();
    for (n, (_, _, truth, ..)) in runs.iter_mut().enumerate() {
        owns.push(truth.measured());
        if n == 0 && fill {
            pipeline::fill(
                truth,
                |input, cfg| bench.time(index(cfg)?, &find(&input.key)),
                || started.elapsed() < Duration::from_secs_f64(budget * 0.8),
            )?;
        }
    }
    // Each shape's best cells of the call measured again for the tables' optimum (a cell
    // the tuning runs re-measured is not measured again).
    if let Some((_, _, first, ..)) = runs.first_mut() {
        bench.complete(first, index)?;
        let t = remeasure::with_times(first, &bench.medians(first, index))?;
        let all: Vec<usize> = (0..t.inputs().len()).collect();
        let cells = best_cells(&t, &all, SCORE_TOP);
        let before_now = bench.remeasured();
        bench.remeasure(&t, &cells, (index, find), || {
            started.elapsed() < Duration::from_secs_f64(budget * 0.95)
        })?;
        println!(
            "scoring side: each shape's {SCORE_TOP} best cells re-measured ({} cells, {} measurements), {:.0?}",
            cells.len(),
            bench.remeasured() - before_now,
            started.elapsed()
        );
    }
    for (n, (dir, m, truth, stats, labelled, scored, relabel)) in runs.into_iter().enumerate() {
        let mut truth = truth;
        let own = owns[n];
        bench.complete(&mut truth, index)?;
        let filled = truth.measured() - own;
        println!(
            "{}: filled {filled} more cells of the {}-cell grid of the pool: {} measured in all, {:.0?}",
            dir.display(),
            truth.grid(),
            truth.measured(),
            started.elapsed()
        );
        // The matrix first: if the analysis outlasts the call, `analyse` redoes it elsewhere.
        let mut run = RunFile::new(m, &truth, stats, scored, vendor.clone());
        run.filled = filled;
        run.labelled = labelled;
        run.budget = pipeline::BUDGET;
        run.reserve = reserve;
        run.relabel = relabel;
        run.rescore = bench.medians(&truth, index);
        pipeline::write_run(&dir, &run, "analysing: see log.txt\n")?;
        println!("measured and wrote run.json.gz, {:.0?}", started.elapsed());
        if std::env::var("TUNE_SELECT_ANALYSE").is_ok_and(|v| v == "0") {
            println!("analyse it with `select_gemm analyse DIR`");
            continue;
        }
        let report = pipeline::analyse(&run)?;
        pipeline::write_run(&dir, &run, &report)?;
        println!(
            "{report}\n{:.0?} in all; wrote {}",
            started.elapsed(),
            dir.display()
        );
    }
    Ok(())
}

/// `$TUNE_SELECT_SEEDS`: the seeds of the searches' shuffles, comma-separated (default
/// `1`, the seed of every run before it). Several seeds tune and score the same compiled
/// pool once each, in turn (a cell one seed measured is reused by the next, as `replay`
/// reads a filled grid), so that which configurations the cross-evaluation spreads is
/// the only difference between their tables.
fn seeds() -> Result<Vec<u64>> {
    let Ok(v) = std::env::var("TUNE_SELECT_SEEDS") else {
        return Ok(vec![1]);
    };
    let seeds = v
        .split(',')
        .map(|s| s.trim().parse::<u64>())
        .collect::<std::result::Result<Vec<u64>, _>>()
        .map_err(|_| {
            tune::Error::Select(format!(
                "TUNE_SELECT_SEEDS={v}: expected seeds separated by commas, e.g. 1,2"
            ))
        })?;
    if seeds.is_empty() {
        return Err(tune::Error::Select(
            "TUNE_SELECT_SEEDS is empty: give at least one seed, e.g. 1".into(),
        ));
    }
    Ok(seeds)
}

/// `$TUNE_SELECT_RELABEL`: `1` keeps select7's tuning-side re-measuring
/// ([`RESERVE`] label cells a training shape); unset or `0`, none (select8's plan).
fn reserve() -> Result<usize> {
    match std::env::var("TUNE_SELECT_RELABEL").as_deref() {
        Err(_) | Ok("0") => Ok(0),
        Ok("1") => Ok(RESERVE),
        Ok(v) => Err(tune::Error::Select(format!(
            "TUNE_SELECT_RELABEL={v}: expected 1 (select7's tuning-side re-measuring) or 0 (none, the default)"
        ))),
    }
}

/// `$TUNE_SELECT_PLAN_SECONDS`: one seed's window for its searches, cross-evaluation,
/// label step and scoring cells (default: the whole budget).
fn plan_seconds(budget: f64) -> f64 {
    std::env::var("TUNE_SELECT_PLAN_SECONDS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(budget)
}

/// `$TUNE_SELECT_SECONDS`, default 300.
fn budget() -> f64 {
    std::env::var("TUNE_SELECT_SECONDS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(300.0)
}

/// The buffers of the largest shape and the timing of one configuration on a shape.
struct Bench<'a, B: Backend> {
    backend: Arc<B>,
    pool: &'a Pool<B>,
    buffers: Buffers<B::Buffer>,
    /// The best time per shape so far: a configuration far slower is not timed in full.
    best: std::cell::RefCell<std::collections::HashMap<String, f64>>,
    /// Every cell measured, by shape key and pool position (`None`: it failed): a later
    /// seed reads it rather than measuring it again.
    cells: std::cell::RefCell<std::collections::HashMap<(String, usize), Option<f64>>>,
    /// Every cell re-measured ([`remeasure`]), by shape key and pool position: its median.
    medians: std::cell::RefCell<std::collections::HashMap<(String, usize), f64>>,
    /// Re-measurements taken.
    again: std::cell::Cell<usize>,
}

impl<'a, B: Backend> Bench<'a, B> {
    fn new(backend: Arc<B>, pool: &'a Pool<B>, shapes: &Shapes) -> Result<Self> {
        // One product of the batch at a time: the batch is timed as `batch` products.
        let buffers = Buffers::new(&*backend, &shapes.0, pool.counts().1 > 0)?;
        Ok(Bench {
            backend,
            pool,
            buffers,
            best: Default::default(),
            cells: Default::default(),
            medians: Default::default(),
            again: Default::default(),
        })
    }

    /// [`Bench::measure`] of the pool's configuration `c` on `s`, once per call of the
    /// example: a cell measured before is read back.
    fn time(&self, c: usize, s: &Shape) -> Option<f64> {
        let key = (s.key(), c);
        if let Some(&t) = self.cells.borrow().get(&key) {
            return t;
        }
        let t = self.measure(self.pool.kernels.get(c)?, s);
        self.cells.borrow_mut().insert(key, t);
        t
    }

    /// The first time of the pool's configuration `c` (if any) on the shape `key`.
    fn first(&self, c: Option<usize>, key: &str) -> Option<f64> {
        *self.cells.borrow().get(&(key.to_string(), c?))?
    }

    /// Re-measurements taken so far.
    fn remeasured(&self) -> usize {
        self.again.get()
    }

    /// [`remeasure::remeasure`] of `cells` of `m`, with the re-measured medians of the
    /// call (by shape key and pool position) shared between seeds and the scoring side.
    fn remeasure(
        &self,
        m: &Matrix,
        cells: &[(usize, usize)],
        (index, find): (
            impl Fn(&Named<tune::Value>) -> Option<usize>,
            impl Fn(&str) -> Shape,
        ),
        go_on: impl FnMut() -> bool,
    ) -> Result<Vec<(usize, usize, f64)>> {
        let key = |i: usize, c: usize| Some((m.inputs()[i].key.clone(), index(&m.configs()[c])?));
        let mut done: std::collections::HashMap<(usize, usize), f64> = cells
            .iter()
            .filter_map(|&(i, c)| Some(((i, c), *self.medians.borrow().get(&key(i, c)?)?)))
            .collect();
        let out = remeasure::remeasure(
            m,
            cells,
            &mut done,
            |input, cfg| {
                let s = self.pool.kernels.get(index(cfg)?)?;
                self.again.set(self.again.get() + 1);
                self.measure(s, &find(&input.key))
            },
            go_on,
        )?;
        for &(i, c, v) in &out {
            if let Some(k) = key(i, c) {
                self.medians.borrow_mut().insert(k, v);
            }
        }
        Ok(out)
    }

    /// Every re-measured median of the call, as cells of `m`.
    fn medians(
        &self,
        m: &Matrix,
        index: impl Fn(&Named<tune::Value>) -> Option<usize>,
    ) -> Vec<(usize, usize, f64)> {
        let medians = self.medians.borrow();
        let mut out = Vec::new();
        for i in 0..m.inputs().len() {
            for c in 0..m.configs().len() {
                let Some(p) = index(&m.configs()[c]) else {
                    continue;
                };
                if let Some(&v) = medians.get(&(m.inputs()[i].key.clone(), p)) {
                    out.push((i, c, v));
                }
            }
        }
        out
    }

    /// Every cell measured in this call that `truth` lacks, into it (`index`: a
    /// configuration's pool position).
    fn complete(
        &self,
        truth: &mut Matrix,
        index: impl Fn(&Named<tune::Value>) -> Option<usize>,
    ) -> Result<()> {
        let cells = self.cells.borrow();
        for i in 0..truth.inputs().len() {
            for c in 0..truth.configs().len() {
                if truth.get(i, c).is_some() {
                    continue;
                }
                let Some(p) = index(&truth.configs()[c]) else {
                    continue;
                };
                if let Some(&Some(t)) = cells.get(&(truth.inputs()[i].key.clone(), p)) {
                    truth.set(i, c, t)?;
                }
            }
        }
        Ok(())
    }

    /// Seconds of the batch: two single launches (the first warms, the second sizes the
    /// samples: as many back-to-back launches as make [`SAMPLE_SECONDS`], at most 64),
    /// then the median of 5 samples, times the batch. A configuration whose first sample
    /// is over 4 times the shape's best so far keeps that sample (it is out of the
    /// running; its cost is still what was measured). `None` if it fails.
    fn measure(&self, k: &Compiled<B::Kernel>, s: &Shape) -> Option<f64> {
        let key = s.key();
        let best = self.best.borrow().get(&key).copied();
        let call = |count| {
            self.pool
                .call(&*self.backend, k, s, (1.0, 0.0), &self.buffers, count)
                .ok()
        };
        call(1)?;
        let count = launches(call(1)?);
        let mut t = Vec::new();
        for _ in 0..5 {
            t.push(call(count)?);
            if t.len() == 1 && best.is_some_and(|b| t[0] > 4.0 * b) {
                return Some(t[0] * s.batch as f64);
            }
        }
        t.sort_by(f64::total_cmp);
        let median = t[2];
        if best.is_none_or(|b| median < b) {
            self.best.borrow_mut().insert(key, median);
        }
        Some(median * s.batch as f64)
    }
}

/// Seconds a timed sample should last: back-to-back launches of a short kernel amortise
/// the launch and the timer's resolution (a few microseconds); a long one needs no more
/// than one. (Until this, a shape under 0.1 GFLOP always took 64 launches a sample: 300
/// of the second CUDA run's 330 s went to shapes with a long K and a small M x N, whose
/// kernels run for milliseconds.)
const SAMPLE_SECONDS: f64 = 2e-4;

/// Back-to-back launches per sample for a kernel of `once` seconds.
pub fn launches(once: f64) -> usize {
    if once > 0.0 {
        ((SAMPLE_SECONDS / once).ceil() as usize).clamp(1, 64)
    } else {
        64
    }
}
