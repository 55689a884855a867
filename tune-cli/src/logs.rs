//! `tune show`, `export`, `import`, `db`, `plot` and `watch`: reading logs and results.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tune_runtime::import;
use tune_runtime::plot::{self, Baseline, Format};
use tune_runtime::results::export::{write_csv, T4};
use tune_runtime::results::{write_atomic, Record};
use tune_runtime::simulate::{KernelTunerCache, Recording};
use tune_runtime::summary::Summary;
use tune_runtime::watch::{frame, Tail};

use crate::Res;

/// Reads a tune log, or a Kernel Tuner cache, KTT output or T4 file.
pub fn records(path: &Path) -> Res<Vec<Record>> {
    Ok(import::records(path)?)
}

/// `tune show`.
pub fn show(files: &[PathBuf], top: usize) -> Res {
    for (i, f) in files.iter().enumerate() {
        if i > 0 {
            println!();
        }
        println!("== {}", f.display());
        print!("{}", Summary::of(&records(f)?, top));
    }
    Ok(())
}

/// `tune export`; `kt_cache`: the Kernel Tuner cache to write and the kernel's name in it.
pub fn export(
    file: &Path,
    t4: Option<&Path>,
    csv: Option<&Path>,
    kt_cache: Option<(&Path, Option<&str>)>,
) -> Res {
    if t4.is_none() && csv.is_none() && kt_cache.is_none() {
        return Err(
            "say what to write: `--t4 OUT.json`, `--csv OUT.csv` and/or `--kt-cache OUT.json.gz`"
                .into(),
        );
    }
    let recs = records(file)?;
    if let Some(p) = t4 {
        T4::from_records(&recs).write(p)?;
        println!("wrote {} ({} results, T4)", p.display(), recs.len());
    }
    if let Some(p) = csv {
        write_csv(p, &recs)?;
        println!("wrote {} ({} rows, CSV)", p.display(), recs.len());
    }
    if let Some((p, kernel)) = kt_cache {
        let mut cache = KernelTunerCache::from_records(&recs, &file.display().to_string())?;
        if let Some(k) = kernel {
            cache = cache.kernel_name(k);
        }
        cache.write(p)?;
        println!(
            "wrote {} ({} configurations, Kernel Tuner cache)",
            p.display(),
            cache.len()
        );
    }
    Ok(())
}

/// `tune import`.
pub fn import(file: &Path, out: &Path) -> Res {
    let (format, recs) = import::read(file)?;
    let mut text = String::new();
    for r in &recs {
        text.push_str(&serde_json::to_string(r)?);
        text.push('\n');
    }
    write_atomic(out, text.as_bytes())?;
    println!(
        "imported {} records ({format:?}) from {} into {}",
        recs.len(),
        file.display(),
        out.display()
    );
    Ok(())
}

/// `tune db`.
pub fn db(dir: &Path, only: Option<&str>) -> Res {
    if !dir.is_dir() {
        return Err(format!(
            "{}: no tuning database here; tuning runs write one with `--db {}` (or `Tuner::database`)",
            dir.display(),
            dir.display()
        )
        .into());
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for sub in std::fs::read_dir(dir)?.flatten() {
        if sub.path().is_dir() {
            for f in std::fs::read_dir(sub.path())?.flatten() {
                if f.path().extension().is_some_and(|e| e == "json") {
                    files.push(f.path());
                }
            }
        }
    }
    files.sort();
    let mut shown = 0;
    for f in files {
        let text = std::fs::read_to_string(&f)?;
        let file: tune_runtime::results::database::TunableFile = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a tuning database file: {e}", f.display()))?;
        if only.is_some_and(|t| t != file.tunable) {
            continue;
        }
        shown += 1;
        println!("{} on {}  ({})", file.tunable, file.device, f.display());
        for e in &file.entries {
            let fails: Vec<String> = e.failures.iter().map(|(k, n)| format!("{k} {n}")).collect();
            println!(
                "  [{}] cost {:.6e}  {}",
                if e.input_key.is_empty() {
                    "-"
                } else {
                    &e.input_key
                },
                e.cost,
                e.best
            );
            println!(
                "      {} by {} (seed {}), {} evaluations ({} valid{}) of {}, {}",
                e.timestamp,
                e.technique,
                e.seed,
                e.evaluations,
                e.valid,
                if fails.is_empty() {
                    String::new()
                } else {
                    format!("; {}", fails.join(", "))
                },
                e.space_len,
                if e.top.len() > 1 {
                    format!("{} runners-up kept", e.top.len() - 1)
                } else {
                    "no runners-up".into()
                }
            );
        }
    }
    if shown == 0 {
        println!(
            "{}: the database holds no entries{}",
            dir.display(),
            match only {
                Some(t) => format!(" for `{t}`"),
                None => String::new(),
            }
        );
    }
    Ok(())
}

/// `tune plot` options.
#[derive(clap::Args, Debug)]
pub struct PlotArgs {
    /// Logs (or Kernel Tuner caches, KTT outputs, T4 files); their runs are overlaid.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Folder for the images.
    #[arg(long, short, default_value = "tune-plots")]
    pub out: PathBuf,
    /// `svg`, `png` or `both`.
    #[arg(long, default_value = "both")]
    pub format: String,
    /// A brute-force Kernel Tuner cache of the same space: draws the median best-so-far of
    /// random search on it as the baseline.
    #[arg(long, value_name = "CACHE")]
    pub baseline: Option<PathBuf>,
}

/// `tune plot`.
pub fn plot(a: &PlotArgs) -> Res {
    let formats = match a.format.as_str() {
        "svg" => vec![Format::Svg],
        "png" => vec![Format::Png],
        "both" => vec![Format::Svg, Format::Png],
        other => return Err(format!("unknown format `{other}`; use svg, png or both").into()),
    };
    let mut all = Vec::new();
    for f in &a.files {
        all.extend(records(f)?);
    }
    let max_k = crate::sim::longest_run(&all).max(1);
    let baseline = match &a.baseline {
        Some(p) => Some(Baseline::of_recording(&Recording::open(p)?, max_k)),
        None => None,
    };
    let files = plot::write_all(&a.out, &all, baseline.as_ref(), &formats)?;
    for f in &files {
        println!("{}", f.display());
    }
    Ok(())
}

/// `tune watch` options.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// The log a run is writing.
    pub file: PathBuf,
    /// Draw one frame and exit.
    #[arg(long)]
    pub once: bool,
    /// Milliseconds between refreshes.
    #[arg(long, default_value_t = 500)]
    pub interval: u64,
    /// Width in columns (default: $COLUMNS, else 100).
    #[arg(long)]
    pub width: Option<usize>,
}

/// `tune watch`.
pub fn watch(a: &WatchArgs) -> Res {
    let width = a
        .width
        .or_else(|| std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()))
        .unwrap_or(100);
    let mut tail = Tail::new(&a.file);
    let title = a.file.display().to_string();
    if a.once {
        tail.poll()?;
        if !a.file.exists() {
            return Err(format!(
                "{title}: no such file yet; start the run first, or drop --once to wait for it"
            )
            .into());
        }
        print!("{}", frame(&title, tail.records(), width, 10));
        return Ok(());
    }
    let mut out = std::io::stdout();
    loop {
        tail.poll()?;
        let mut f = frame(&title, tail.records(), width, 12);
        if !a.file.exists() {
            f.push_str("(waiting for the log to appear)\n");
        }
        // Clear the screen, home the cursor, draw.
        writeln!(out, "\x1b[2J\x1b[H{f}(Ctrl-C to stop)")?;
        out.flush()?;
        std::thread::sleep(Duration::from_millis(a.interval.clamp(50, 1000)));
    }
}
