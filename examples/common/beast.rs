//! The DNN convolution runs (examples/dnn_conv.rs, and the tests): every layer of a
//! network tuned in turn, each starting from the best of the one before; and BEAST's
//! pruning table for one layer: the space after each level of constraints, what the tuning
//! run compiled, rejected after compiling (by cause) and measured, and what measuring the
//! rejected configurations would have cost.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tune::backend::{Backend, KernelEvaluator, AFTER_COMPILING};
use tune::results::Named;
use tune::{Config, Error, Evaluator, Failure, Result, Space, Value};

use super::cases::dnn_conv::{self, Check, DnnConv, Layer, Levels};
use super::{Options, Study, Target};

mod args;
use args::arg_error;
pub use args::Args;

/// Small layers for a CPU device (AlexNet-like shapes at batch 2), validated on the host.
pub const SMALL: [Layer; 3] = [
    Layer {
        name: "s1",
        nb: 2,
        c: 3,
        h: 32,
        w: 32,
        ko: 16,
        r: 5,
        s: 5,
        su: 2,
        sv: 2,
        ph: 2,
        pw: 2,
    },
    Layer {
        name: "s2",
        nb: 2,
        c: 16,
        h: 16,
        w: 16,
        ko: 32,
        r: 3,
        s: 3,
        su: 1,
        sv: 1,
        ph: 1,
        pw: 1,
    },
    Layer {
        name: "s3",
        nb: 2,
        c: 32,
        h: 8,
        w: 8,
        ko: 64,
        r: 3,
        s: 3,
        su: 1,
        sv: 1,
        ph: 1,
        pw: 1,
    },
];

/// One tuned layer.
#[derive(Clone, Debug)]
pub struct Tuned {
    /// The layer.
    pub layer: Layer,
    /// The best configuration's re-measured time, seconds.
    pub seconds: f64,
    /// Its configuration, by name.
    pub best: Named<Value>,
    /// Evaluations and valid ones.
    pub evaluations: u64,
    /// Valid evaluations.
    pub valid: u64,
    /// Failures by status (`invalid: occupancy`, ...).
    pub failures: BTreeMap<String, u64>,
}

/// The fp32 peak of `backend`'s device, FLOP/s, if its properties tell it.
pub fn peak<B: Backend>(backend: &B) -> Option<f64> {
    backend.device().fp32_peak_flops()
}

/// Runs the layers (or the pruning table) the arguments ask for and prints the results.
///
/// # Errors
/// A layer without a valid configuration, or a device error.
pub fn run<B: Backend>(backend: Arc<B>, args: &Args) -> Result<()> {
    let dev = backend.device().clone();
    match peak(backend.as_ref()) {
        Some(p) => println!(
            "fp32 peak: {:.1} TFLOP/s = {} compute units x {} lanes x 2 x {} MHz",
            p / 1e12,
            dev.compute_units,
            dev.fp32_lanes_per_compute_unit,
            dev.clock_mhz
        ),
        None => println!("fp32 peak: unknown (the device does not report its lanes or clock)"),
    }
    if let Some(name) = &args.prune {
        let layer = args
            .selected()?
            .into_iter()
            .find(|l| l.name == name.as_str())
            .ok_or_else(|| arg_error("--prune", format!("no layer `{name}`")))?;
        return pruning(backend, args, layer);
    }
    let mut tuned: Vec<Tuned> = Vec::new();
    if args.backward_data {
        println!(
            "backward-data: each stride-1 layer as the forward pass over its output gradient \
             (filters flipped, channels swapped); strided layers are skipped"
        );
    }
    if args.backward_filter {
        println!(
            "backward-filter: the filters' gradient of each layer, a reduction over batch x \
             output pixels split over work-groups (SPLITK)"
        );
    }
    for layer in args.selected()? {
        let start = tuned.last().map(|t| t.best.clone());
        let t = tune_layer(backend.clone(), args, layer, start.as_ref())?;
        // Its LAYER line now, so that a run stopped by a time limit keeps what it measured.
        let done = table(
            &args.label(),
            std::slice::from_ref(&t),
            peak(backend.as_ref()),
        );
        print!(
            "{}",
            done.lines()
                .last()
                .map_or(String::new(), |l| format!("{l}\n"))
        );
        tuned.push(t);
        println!();
    }
    print!("{}", table(&args.label(), &tuned, peak(backend.as_ref())));
    Ok(())
}

/// Tunes one layer, measuring `start` (the best of a similar layer) first where it is
/// valid here.
///
/// # Errors
/// As [`super::tune_case`].
pub fn tune_layer<B: Backend>(
    backend: Arc<B>,
    args: &Args,
    layer: Layer,
    start: Option<&Named<Value>>,
) -> Result<Tuned> {
    let study = args.study(layer);
    let target = Target::of(backend.as_ref())?;
    let case = study.case(&target)?;
    // A configuration from before the direct path's parameters takes their first values
    // (the implicit GEMM's, ALGO 0).
    let in_space = |s: &Named<Value>| {
        let given: Vec<(&str, Value)> = s.0.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
        case.space
            .config_from_values(dnn_conv::with_direct_defaults(&case.space, &given))
    };
    let mut first: Vec<Config> = start.into_iter().filter_map(|s| in_space(s).ok()).collect();
    // A `--start` outside this layer's space is said, not dropped in silence (one that
    // names no value for a newer parameter, say).
    for s in &args.starts {
        match in_space(s) {
            Ok(c) => first.push(c),
            Err(e) => println!("start not in the space of {}: {e}", layer.name),
        }
    }
    first.extend(study.known_good(&target, &case.space));
    println!(
        "layer {} ({layer}): {:.2} GFLOP",
        layer.name,
        layer.flops() / 1e9
    );
    let options = Options {
        start: first,
        ..Options::new(1)
    };
    let (info, r) = super::tune_case(backend.clone(), case, args.budget, options)?;
    let mut tuned = Tuned {
        layer,
        seconds: r.best.final_scalar(),
        best: Named::of(&info.space, &r.best.config),
        evaluations: r.evaluations,
        valid: r.valid,
        failures: r.failures.clone(),
    };
    if study.check == Check::Deferred {
        let (best, seconds) = validate_once(backend, &study, &info.space, &r)?;
        if best.0 != tuned.best.0 {
            tuned.best = best;
            tuned.seconds = seconds;
        }
    }
    Ok(tuned)
}

/// How many of the fastest configurations `validate_once` tries before giving up.
const VALIDATE_TRIES: usize = 4;

/// Validates a run tuned without a reference ([`Check::Deferred`]): the best configuration,
/// then the next fastest measured ones, each once against the reference kernel, until one
/// is correct. Returns it and its time (re-measured for the best, else the search's).
///
/// # Errors
/// None of the fastest [`VALIDATE_TRIES`] is correct (each one's failure is printed), or
/// the reference kernel fails.
fn validate_once<B: Backend>(
    backend: Arc<B>,
    study: &DnnConv,
    space: &Space,
    r: &tune::TuningResult<Duration>,
) -> Result<(Named<Value>, f64)> {
    let target = Target::of(backend.as_ref())?;
    let checked = DnnConv {
        check: Check::Kernel,
        ..study.clone()
    };
    let t = Instant::now();
    let spec = checked.spec(&target, checked.source(&target)?)?;
    let ev = KernelEvaluator::<B>::new(backend, space, spec)?;
    let mut measured: Vec<(&tune::results::Record, f64)> = r
        .records
        .iter()
        .filter(|rec| rec.status == "ok" && rec.remeasured.is_none())
        .filter_map(|rec| rec.cost.map(|c| (rec, c)))
        .collect();
    measured.sort_by(|a, b| a.1.total_cmp(&b.1));
    let best = Named::of(space, &r.best.config);
    let mut candidates = vec![(best.clone(), r.best.final_scalar())];
    for (rec, cost) in measured {
        if candidates.len() >= VALIDATE_TRIES {
            break;
        }
        if !candidates.iter().any(|(n, _)| n.0 == rec.config.0) {
            candidates.push((rec.config.clone(), cost));
        }
    }
    for (i, (named, seconds)) in candidates.into_iter().enumerate() {
        let c = named.config(space)?;
        let outcome = ev.prepare(space, &c).and_then(|p| ev.measure(space, &c, p));
        match outcome {
            Ok(_) => {
                println!(
                    "validated once against the reference kernel ({:.1} s with its setup): \
                     {}correct: {named}",
                    t.elapsed().as_secs_f64(),
                    if i == 0 {
                        "the best is "
                    } else {
                        "the next fastest is "
                    },
                );
                return Ok((named, seconds));
            }
            Err(f) => println!("validation of {named} failed: {f}"),
        }
    }
    Err(Error::InvalidSpace(format!(
        "none of the {VALIDATE_TRIES} fastest configurations of {} is correct; tune with \
         `--validate every` to validate every evaluation",
        study.layer.name
    )))
}

/// The per-layer table (markdown) and a `LAYER` line per layer for scripts.
pub fn table(net: &str, tuned: &[Tuned], peak: Option<f64>) -> String {
    let mut s = String::from(
        "| layer | shape | GFLOP | time | TFLOP/s | of fp32 peak | evaluated (valid) | rejected after compiling |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mut lines = String::new();
    for t in tuned {
        let rate = t.layer.flops() / t.seconds;
        let of_peak = peak.map_or("-".into(), |p| format!("{:.1}%", 100.0 * rate / p));
        let rejected: u64 = t
            .failures
            .iter()
            .filter(|(k, _)| k.starts_with("invalid: "))
            .map(|(_, n)| n)
            .sum();
        s.push_str(&format!(
            "| {} | {} | {:.2} | {:.3} ms | {:.2} | {} | {} ({}) | {} |\n",
            t.layer.name,
            t.layer,
            t.layer.flops() / 1e9,
            t.seconds * 1e3,
            rate / 1e12,
            of_peak,
            t.evaluations,
            t.valid,
            rejected
        ));
        lines.push_str(&format!(
            "LAYER\t{net}\t{}\t{}\t{:.6}\t{:.3}\t{}\t{}\n",
            t.layer.name,
            t.layer,
            t.seconds * 1e3,
            rate / 1e12,
            of_peak,
            t.best
        ));
    }
    s + &lines
}

/// The sizes of `layer`'s space after each constraint level, and the time each took to
/// build: (level, valid configurations, construction time).
///
/// # Errors
/// As [`dnn_conv::space`].
pub fn level_sizes(layer: &Layer, target: &Target) -> Result<Vec<(Levels, u128, Duration)>> {
    let mut out = vec![(
        Levels::None,
        dnn_conv::cartesian(target.language, layer),
        Duration::ZERO,
    )];
    for level in [Levels::Algorithm, Levels::Software, Levels::Hardware] {
        let t = Instant::now();
        let space = dnn_conv::space(layer, target, level)?;
        out.push((level, space.len(), t.elapsed()));
    }
    Ok(out)
}

/// What a tuning run's records say about rejections: (compiled, rejected after
/// compiling by cause, rejected before compiling, measured).
pub fn outcome(records: &[tune::results::Record]) -> (u64, BTreeMap<String, u64>, u64, u64) {
    let mut after = BTreeMap::new();
    let (mut before, mut compiled, mut measured) = (0, 0, 0);
    for r in records.iter().filter(|r| r.remeasured.is_none()) {
        let detail = r.detail.as_deref().unwrap_or("");
        match r.status.as_str() {
            s if s.starts_with("invalid") && detail.starts_with(AFTER_COMPILING) => {
                compiled += 1;
                *after.entry(s.to_string()).or_insert(0) += 1;
            }
            s if s.starts_with("invalid") => before += 1,
            "compile" => {}
            _ => {
                compiled += 1;
                measured += 1;
            }
        }
    }
    (compiled, after, before, measured)
}

/// BEAST's pruning table for `layer`, then the run's outcome and the cost of measuring
/// what was rejected after compiling.
fn pruning<B: Backend>(backend: Arc<B>, args: &Args, layer: Layer) -> Result<()> {
    let target = Target::of(backend.as_ref())?;
    println!(
        "pruning of {} ({layer}) on {}",
        layer.name,
        target.device.describe()
    );
    println!("| stage | configurations | construction |\n|---|---|---|");
    let sizes = level_sizes(&layer, &target)?;
    for (level, n, t) in &sizes {
        let what = match level {
            Levels::None => "Cartesian product",
            Levels::Algorithm => "after algorithm constraints",
            Levels::Software => "after software constraints",
            Levels::Hardware => "after hardware constraints",
        };
        let t = if t.is_zero() {
            "-".to_string()
        } else {
            format!("{:.3} s", t.as_secs_f64())
        };
        println!("| {what} | {n} | {t} |");
    }
    let tuned_study = args.study(layer);
    let case = tuned_study.case(&target)?;
    let options = Options {
        start: tuned_study.known_good(&target, &case.space),
        ..Options::new(1)
    };
    let space = case.space.clone();
    let (_, r) = super::tune_case(backend.clone(), case, args.budget, options)?;
    let (compiled, after, before, measured) = outcome(&r.records);
    println!(
        "| evaluated by the search ({}) | {} | - |",
        r.technique, r.evaluations
    );
    println!("| rejected before compiling (device limits) | {before} | - |");
    println!("| compiled | {compiled} | - |");
    for (cause, n) in &after {
        println!("| rejected after compiling, {cause} | {n} | - |");
    }
    println!("| measured | {measured} | - |");
    measure_rejected(backend, args, layer, &space, &r.records)
}

/// A configuration rejected after compiling: its values, its status, the seconds its
/// compilation and checks took, and where it came from.
struct Rejected {
    values: Named<Value>,
    status: String,
    prepare_s: f64,
    from: &'static str,
}

/// Measures up to `args.measure_rejected` configurations that were rejected after
/// compiling, with the post-compilation checks off: what rejecting them saved. The
/// search's own rejections come first; if it made fewer, configurations that the hardware
/// level pruned from the space are compiled until the checks reject enough of them (what
/// the checks would have caught had the space not pruned them).
fn measure_rejected<B: Backend>(
    backend: Arc<B>,
    args: &Args,
    layer: Layer,
    space: &Space,
    records: &[tune::results::Record],
) -> Result<()> {
    let mut rejected: Vec<Rejected> = records
        .iter()
        .filter(|r| {
            r.status.starts_with("invalid")
                && r.detail
                    .as_deref()
                    .unwrap_or("")
                    .starts_with(AFTER_COMPILING)
        })
        .filter_map(|r| {
            Some(Rejected {
                values: Named::of(space, &r.config.config(space).ok()?),
                status: r.status.clone(),
                prepare_s: r.prepare_s,
                from: "the search",
            })
        })
        .take(args.measure_rejected)
        .collect();
    let target = Target::of(backend.as_ref())?;
    // Both evaluators work on the software level's space, which holds both kinds.
    let wide = dnn_conv::space(&layer, &target, Levels::Software)?;
    let want = args.measure_rejected.saturating_sub(rejected.len());
    if want > 0 {
        rejected.extend(rejected_when_unpruned(
            &backend, args, layer, &target, &wide, want,
        )?);
    }
    if rejected.is_empty() {
        println!("nothing was rejected after compiling: no time saved to report");
        return Ok(());
    }
    let unchecked = DnnConv {
        post_checks: false,
        ..args.study(layer)
    };
    let spec = unchecked.spec(&target, unchecked.source(&target)?)?;
    let ev = KernelEvaluator::<B>::new(backend, &wide, spec)?;
    println!(
        "measured anyway, {} of the configurations rejected after compiling:",
        rejected.len()
    );
    let (mut run_total, mut check_total) = (0.0, 0.0);
    for r in &rejected {
        let c = wide.config_from_values(r.values.0.iter().map(|(n, v)| (n.as_str(), v.clone())))?;
        let prepared = ev.prepare(&wide, &c);
        let t = Instant::now();
        let m = prepared.and_then(|p| ev.measure(&wide, &c, p));
        let run = t.elapsed().as_secs_f64();
        run_total += run;
        check_total += r.prepare_s;
        let (status, from) = (&r.status, r.from);
        match m {
            Ok(m) => println!(
                "  {status} (from {from}): compiling and checking took {:.3} s, measuring {run:.3} s \
                 ({:.3} ms per run, {:.2} TFLOP/s); {}",
                r.prepare_s,
                m.cost.as_secs_f64() * 1e3,
                layer.flops() / m.cost.as_secs_f64() / 1e12,
                wide.describe(&c)
            ),
            Err(f) => println!("  {status} (from {from}): measuring took {run:.3} s and failed: {f}"),
        }
    }
    println!(
        "SAVED\t{}\t{}\t{:.3}\t{:.3}",
        layer.name,
        rejected.len(),
        run_total,
        check_total
    );
    println!(
        "rejecting {} configurations after compiling cost {:.3} s of compilation (needed to \
         know them) and no device time; measuring them cost {:.3} s more ({:.3} s each)",
        rejected.len(),
        check_total,
        run_total,
        run_total / rejected.len() as f64
    );
    Ok(())
}

/// Whether `c`'s work-group is within the device's size and whole warps: the hardware
/// level prunes the others for reasons known before compiling, which the checks after
/// compiling never see.
fn launchable(target: &Target, c: &Config) -> bool {
    use dnn_conv::slot::{MDIM, NDIM};
    let nt = c.get::<usize>(MDIM) * c.get::<usize>(NDIM);
    let dev = &target.device;
    (dev.max_work_group_size == 0 || nt <= dev.max_work_group_size)
        && nt % (dev.warp_width as usize).max(1) == 0
}

/// Up to `want` configurations of `wide` that the hardware level prunes and the
/// post-compilation checks reject, compiled in parallel in a fixed scattered order; at
/// most 4 compilations per configuration wanted.
fn rejected_when_unpruned<B: Backend>(
    backend: &Arc<B>,
    args: &Args,
    layer: Layer,
    target: &Target,
    wide: &Space,
    want: usize,
) -> Result<Vec<Rejected>> {
    let study = args.study(layer);
    let spec = study.spec(target, study.source(target)?)?;
    let ev = KernelEvaluator::<B>::new(backend.clone(), wide, spec)?;
    let n = wide.len();
    // Indices scattered over the space by a fixed odd multiplier (no randomness to seed).
    let candidates: Vec<Config> = (0..n.min(1 << 20))
        .map(|k| (k * 0x9E37_79B9_7F4A_7C15) % n)
        .filter_map(|i| wide.get(i))
        .filter(|c| !dnn_conv::hardware_allows(&layer, target, c) && launchable(target, c))
        .take(4 * want)
        .collect();
    let threads = std::thread::available_parallelism().map_or(2, |t| t.get());
    let mut found = Vec::new();
    for chunk in candidates.chunks(threads) {
        let outcomes: Vec<(f64, std::result::Result<(), Failure>)> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|c| {
                    let ev = &ev;
                    s.spawn(move || {
                        let t = Instant::now();
                        let r = ev.prepare(wide, c).map(drop);
                        (t.elapsed().as_secs_f64(), r)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        (
                            0.0,
                            Err(Failure::Other("a compilation thread panicked".into())),
                        )
                    })
                })
                .collect()
        });
        for (c, (prepare_s, r)) in chunk.iter().zip(outcomes) {
            if let Err(f @ Failure::Rejected { detail, .. }) = &r {
                if detail.starts_with(AFTER_COMPILING) {
                    found.push(Rejected {
                        values: Named::of(wide, c),
                        status: f.status(),
                        prepare_s,
                        from: "the configurations the hardware level pruned",
                    });
                }
            }
        }
        if found.len() >= want {
            break;
        }
    }
    found.truncate(want);
    Ok(found)
}
