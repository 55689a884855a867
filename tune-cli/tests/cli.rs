//! Every subcommand of `tune`, run as a process on recorded data: the T1 files and caches
//! under `tune-runtime/tests/data`, and a log, a T1 file and a tuning database recorded on
//! PoCL under `tests/data`. `tune run` tunes an OpenCL T1 file for real; it is reported as
//! ignored when no OpenCL device is found, except under `CI`, where that fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use libtest_mimic::{Arguments, Failed, Trial};
use tune_runtime::results::export::T4;
use tune_runtime::results::{log, Record};

type R = Result<(), Failed>;

fn here(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn runtime_data(p: &str) -> PathBuf {
    here("../tune-runtime/tests/data").join(p)
}

fn tune() -> Command {
    Command::cargo_bin("tune").unwrap()
}

/// Runs `tune args`, expecting success; returns stdout.
fn ok(args: &[&str]) -> Result<String, Failed> {
    let out = tune().args(args).output()?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "tune {} failed ({}):\n{stdout}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(stdout)
}

/// Runs `tune args`, expecting failure; returns stderr.
fn fails(args: &[&str]) -> Result<String, Failed> {
    let out = tune().args(args).output()?;
    if out.status.success() {
        return Err(format!("tune {} succeeded but should fail", args.join(" ")).into());
    }
    Ok(String::from_utf8_lossy(&out.stderr).into_owned())
}

fn check(cond: bool, what: impl Into<String>) -> R {
    if cond {
        Ok(())
    } else {
        Err(what.into().into())
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn opencl_device() -> bool {
    tune_runtime::backend::opencl::OpenCl::devices().is_ok()
}

// ---------------------------------------------------------------------------------------------

fn devices() -> R {
    let out = ok(&["devices"])?;
    check(out.contains("OpenCL:") && out.contains("CUDA:"), &out)?;
    // Either devices, or what is missing and how to get it.
    let cuda = out.split("CUDA:").nth(1).unwrap_or("");
    check(
        cuda.contains("sm_") || cuda.contains("unavailable") && cuda.contains("install"),
        format!("CUDA section without devices or advice: {cuda}"),
    )?;
    if opencl_device() {
        check(
            out.contains("compute units") && out.contains("local memory"),
            &out,
        )?;
    }
    Ok(())
}

fn space() -> R {
    let f = runtime_data("t1/convolution_milo.json");
    let out = ok(&["space", s(&f), "--list", "2"])?;
    check(out.contains("valid configurations: 4,362"), &out)?;
    check(out.contains("Cartesian product 10,240"), &out)?;
    check(out.contains("block_size_x,block_size_y,tile_size_x"), &out)?;
    let f = runtime_data("t1/gemm_milo.json");
    let out = ok(&["space", s(&f)])?;
    check(out.contains("valid configurations: 116,928"), &out)?;
    // An unsupported construct: the condition, the column and what is wrong.
    let dir = tempfile::tempdir()?;
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"ConfigurationSpace": {"TuningParameters": [{"Name": "x", "Type": "int", "Values": "[1, 2]"}],
            "Conditions": [{"Expression": "x > 0 and lambda: x"}]}}"#,
    )?;
    let err = fails(&["space", s(&bad)])?;
    check(
        err.contains("condition 1") && err.contains("column 11") && err.contains("lambda"),
        &err,
    )
}

fn run_dry() -> R {
    let f = here("tests/data/vector_add/vector_add.json");
    let out = ok(&["run", s(&f), "--dry-run", "--budget", "3"])?;
    check(out.contains("14 valid configurations"), &out)?;
    check(out.contains("dry run"), &out)?;
    let err = fails(&["run", s(&f), "--technique", "nope", "--dry-run"])?;
    check(err.contains("unknown search technique `nope`"), &err)?;
    // The file's compiler options, or not (as Kernel Tuner's T1 runner).
    let dir = tempfile::tempdir()?;
    std::fs::copy(
        here("tests/data/vector_add/vector_add.cl"),
        dir.path().join("vector_add.cl"),
    )?;
    let text = std::fs::read_to_string(&f)?.replace(
        "\"CompilerOptions\": []",
        "\"CompilerOptions\": [\"-cl-fast-relaxed-math\"]",
    );
    let g = dir.path().join("with_options.json");
    std::fs::write(&g, text)?;
    let out = ok(&["run", s(&g), "--dry-run"])?;
    check(out.contains("\"-cl-fast-relaxed-math\", \"-I"), &out)?;
    let out = ok(&["run", s(&g), "--dry-run", "--ignore-compiler-options"])?;
    check(
        !out.contains("-cl-fast-relaxed-math") && out.contains("\"-I"),
        &out,
    )?;
    // Kernel Tuner T1 files of CUDA kernels are refused on OpenCL.
    let err = fails(&[
        "run",
        s(&runtime_data("t1/convolution_milo.json")),
        "--backend",
        "opencl",
    ])?;
    check(
        err.contains("not OpenCl") || err.contains("not found"),
        &err,
    )
}

fn run_opencl() -> R {
    let f = here("tests/data/vector_add/vector_add.json");
    let dir = tempfile::tempdir()?;
    let out_dir = dir.path().join("out");
    let db = dir.path().join("tuning");
    let out = ok(&[
        "run",
        s(&f),
        "--budget",
        "4",
        "--technique",
        "random",
        "--out",
        s(&out_dir),
        "--db",
        s(&db),
        "--plots",
    ])?;
    check(out.contains("4 evaluations (4 valid)"), &out)?;
    let logged = log::read(&out_dir.join("vector_add.jsonl"))?;
    // The search's 4 evaluations, then the finalists measured again (not evaluations).
    let (again, recs): (Vec<Record>, Vec<Record>) =
        logged.into_iter().partition(|r| r.remeasured.is_some());
    check(
        recs.len() == 4 && recs.iter().all(Record::is_ok) && !again.is_empty(),
        format!("{recs:?}"),
    )?;
    check(
        recs[0].config.0[0].0 == "block_size_x",
        "parameters in order",
    )?;
    check(recs[0].samples.len() == 5, "the file's 5 iterations")?;
    let t4 = T4::read(&out_dir.join("vector_add_T4.json"))?;
    check(t4.results.len() == 4, "T4 results")?;
    check(
        out_dir.join("best_so_far_evaluations.svg").is_file(),
        "plots",
    )?;
    let listing = ok(&["db", s(&db)])?;
    check(
        listing.contains("vector_add on") && listing.contains("[problem_size=100000x1x1]"),
        &listing,
    )?;
    // Resuming measures nothing twice (here in batches, in the order proposed).
    let out = ok(&[
        "run",
        s(&f),
        "--budget",
        "6",
        "--technique",
        "random",
        "--out",
        s(&out_dir),
        "--resume",
        "--in-order",
    ])?;
    check(out.contains("4 resumed from the log"), &out)?;
    let logged = log::read(&out_dir.join("vector_add.jsonl"))?;
    let search: Vec<&Record> = logged.iter().filter(|r| r.remeasured.is_none()).collect();
    check(
        search.len() == 6,
        format!("{} search records", search.len()),
    )?;
    // One compile cache or none.
    let err = fails(&[
        "run",
        s(&f),
        "--compile-cache",
        s(dir.path()),
        "--no-compile-cache",
        "--dry-run",
    ])?;
    check(err.contains("cannot be used with"), &err)
}

fn show() -> R {
    let out = ok(&[
        "show",
        s(&here("tests/data/logs/vector_add_pocl.jsonl")),
        "--top",
        "3",
    ])?;
    check(out.contains("evaluations: 6 (6 valid)"), &out)?;
    check(
        out.contains("block_size_x=256 tile_size_x=1") && out.contains("#3"),
        &out,
    )?;
    // A Kernel Tuner cache and KTT's output read the same way.
    let out = ok(&[
        "show",
        s(&runtime_data("test_cache_file.json")),
        s(&runtime_data("ktt/pnpoly_excerpt.json")),
    ])?;
    check(
        out.contains("vector_add") && out.contains("15 (15 valid)"),
        &out,
    )?;
    check(
        out.contains("Pnpoly") && out.contains("failures:    launch: 3"),
        &out,
    )
}

fn export() -> R {
    let dir = tempfile::tempdir()?;
    let (t4, csv) = (dir.path().join("r_T4.json"), dir.path().join("r.csv"));
    let log_file = here("tests/data/logs/vector_add_pocl.jsonl");
    ok(&["export", s(&log_file), "--t4", s(&t4), "--csv", s(&csv)])?;
    let t = T4::read(&t4)?;
    check(
        t.results.len() == 6 && t.results[0].invalidity == "correct",
        "T4 content",
    )?;
    let text = std::fs::read_to_string(&csv)?;
    check(
        text.starts_with("tunable,input_key,") && text.lines().count() == 7,
        &text,
    )?;
    let err = fails(&["export", s(&log_file)])?;
    check(err.contains("--t4") && err.contains("--csv"), &err)
}

/// A log with a failure, a repeat and a re-measurement, exported as a Kernel Tuner cache:
/// `tune sim` replays it, and `tune import` reads back the same configurations and times.
fn export_kt_cache() -> R {
    let dir = tempfile::tempdir()?;
    let mut recs = log::read(&here("tests/data/logs/vector_add_pocl.jsonl"))?;
    recs[1].status = "compile".into();
    recs[1].cost = None;
    recs[1].objectives = Default::default();
    let mut again = recs[0].clone();
    again.remeasured = Some(vec![1.0]);
    again.cost = Some(1.0);
    recs.push(again);
    let log_file = dir.path().join("log.jsonl");
    let text: String = recs
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(&log_file, text)?;
    let cache = dir.path().join("va.json.gz");
    let out = ok(&[
        "export",
        s(&log_file),
        "--kt-cache",
        s(&cache),
        "--kernel-name",
        "vector_add_kernel",
    ])?;
    check(out.contains("6 configurations, Kernel Tuner cache"), &out)?;
    let rec = tune_runtime::simulate::Recording::open(&cache)?;
    check(rec.kernel() == "vector_add_kernel", rec.kernel())?;
    check(rec.space().len() == 6, "six configurations")?;
    let back = dir.path().join("back.jsonl");
    ok(&["import", s(&cache), "-o", s(&back)])?;
    let back = log::read(&back)?;
    for want in &recs[..6] {
        let got = back
            .iter()
            .find(|r| r.config == want.config)
            .ok_or("a configuration went missing")?;
        check(
            got.status == want.status,
            format!("{} vs {}", got.status, want.status),
        )?;
        let same = match (got.cost, want.cost) {
            (Some(a), Some(b)) => (a / b - 1.0).abs() < 1e-12,
            (a, b) => a == b,
        };
        check(same, format!("{:?} vs {:?}", got.cost, want.cost))?;
    }
    let stdout = ok(&["sim", s(&cache), "--technique", "random", "--budget", "6"])?;
    check(stdout.contains("| random | 0 | 6 |"), &stdout)?;
    let err = fails(&["export", s(&log_file), "--kernel-name", "k"])?;
    check(err.contains("--kt-cache"), &err)
}

fn import() -> R {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("kt.jsonl");
    ok(&[
        "import",
        s(&runtime_data("test_cache_file.json")),
        "-o",
        s(&out),
    ])?;
    let recs = log::read(&out)?;
    check(
        recs.len() == 15 && recs.iter().all(|r| r.objectives.get("time_s").is_some()),
        "KT cache",
    )?;
    let out = dir.path().join("ktt.jsonl");
    let stdout = ok(&[
        "import",
        s(&runtime_data("ktt/pnpoly_excerpt.json")),
        "-o",
        s(&out),
    ])?;
    check(stdout.contains("imported 12 records (Ktt)"), &stdout)?;
    let recs = log::read(&out)?;
    check(
        recs.iter().filter(|r| r.status == "launch").count() == 3,
        "KTT failures",
    )?;
    let err = fails(&[
        "import",
        s(&here("tests/data/vector_add/vector_add.json")),
        "-o",
        s(&out),
    ])?;
    check(err.contains("not a Kernel Tuner cache"), &err)
}

fn db() -> R {
    let out = ok(&["db", s(&here("tests/data/tuning"))])?;
    check(out.contains("vector_add on pthread"), &out)?;
    check(
        out.contains("cost 1.888800e-5") && out.contains("block_size_x=256 tile_size_x=1"),
        &out,
    )?;
    let out = ok(&["db", s(&here("tests/data/tuning")), "--tunable", "other"])?;
    check(out.contains("no entries for `other`"), &out)?;
    let err = fails(&["db", "/nonexistent/tuning"])?;
    check(err.contains("no tuning database"), &err)
}

fn sim() -> R {
    let dir = tempfile::tempdir()?;
    let log_file = dir.path().join("sim.jsonl");
    let cache = runtime_data("test_cache_file.json");
    let out = ok(&[
        "sim",
        s(&cache),
        "--technique",
        "random,annealing",
        "--budget",
        "10",
        "--runs",
        "2",
        "--log",
        s(&log_file),
    ])?;
    check(
        out.contains("| random | 1 | 10 |") && out.contains("| annealing | 0 | 10 |"),
        &out,
    )?;
    let recs = log::read(&log_file)?;
    check(recs.len() == 40, format!("{} records", recs.len()))?;
    check(
        recs[0].objectives.get("time_s").is_some(),
        "seconds in the log",
    )?;
    let err = fails(&["sim", s(&cache), "--technique", "nope"])?;
    check(err.contains("unknown search technique"), &err)?;
    // A brute force recorded by KTT replays too (12 configurations: a budget of 12 finds
    // the optimum).
    let out = ok(&[
        "sim",
        s(&runtime_data("ktt/pnpoly_excerpt.json")),
        "--budget",
        "12",
    ])?;
    check(
        out.contains("12 recorded configurations")
            && out.contains("| 12 |")
            && out.contains("| 1.000 |"),
        &out,
    )
}

fn score() -> R {
    let cache = runtime_data("test_cache_file.json");
    let out = ok(&[
        "score",
        s(&cache),
        "--techniques",
        "random,bandit",
        "--budgets",
        "5,15",
        "--seeds",
        "3",
    ])?;
    check(out.contains("| technique | 5 | 15 |"), &out)?;
    // 15 evaluations of a 15-configuration space find the optimum.
    check(out.contains("| random |") && out.contains(" 1.000 |"), &out)
}

/// Width, height and RGB pixels of a PNG.
fn decode(path: &Path) -> Result<(u32, u32, Vec<u8>), Failed> {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path)?));
    let mut reader = dec.read_info()?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf)?;
    buf.truncate(info.buffer_size());
    Ok((info.width, info.height, buf))
}

fn plot() -> R {
    let dir = tempfile::tempdir()?;
    let cache = runtime_data("test_cache_file.json");
    let log_file = dir.path().join("sim.jsonl");
    ok(&[
        "sim",
        s(&cache),
        "--technique",
        "random,bandit",
        "--budget",
        "12",
        "--log",
        s(&log_file),
    ])?;
    let out_dir = dir.path().join("plots");
    let out = ok(&[
        "plot",
        s(&log_file),
        "--baseline",
        s(&cache),
        "-o",
        s(&out_dir),
        "--format",
        "png",
    ])?;
    check(out.lines().count() == 4, &out)?;
    let (w, h, px) = decode(&out_dir.join("best_so_far_evaluations.png"))?;
    check((w, h) == (960, 600), format!("{w}x{h}"))?;
    let dark = |x: u32, y: u32| {
        let i = ((y * w + x) * 3) as usize;
        px[i..i + 3].iter().all(|&c| c < 100)
    };
    let col = (0..w)
        .map(|x| (0..h).filter(|&y| dark(x, y)).count())
        .max()
        .unwrap_or(0);
    let row = (0..h)
        .map(|y| (0..w).filter(|&x| dark(x, y)).count())
        .max()
        .unwrap_or(0);
    check(
        col > h as usize / 2 && row > w as usize / 2,
        format!("axes: {col} {row}"),
    )?;
    let colours = px
        .chunks(3)
        .filter(|p| p[0] > 200 && p[1] < 160 && p[2] < 60)
        .count();
    check(colours > 50, "the orange curve of the second run")?;
    let err = fails(&["plot", s(&log_file), "--format", "gif"])?;
    check(err.contains("unknown format"), &err)
}

fn watch_once() -> R {
    let out = ok(&[
        "watch",
        "--once",
        "--width",
        "80",
        s(&here("tests/data/logs/vector_add_pocl.jsonl")),
    ])?;
    check(
        out.contains("evaluations 6 (6 valid)") && out.contains("failures: none"),
        &out,
    )?;
    check(
        out.contains("block_size_x=256 tile_size_x=1") && out.contains("6 evaluations"),
        &out,
    )?;
    check(out.lines().all(|l| l.chars().count() <= 80), &out)?;
    // A partial last line (a run writing it) is not counted yet.
    let dir = tempfile::tempdir()?;
    let p = dir.path().join("live.jsonl");
    let text = std::fs::read_to_string(here("tests/data/logs/vector_add_pocl.jsonl"))?;
    let cut = text.len() - 40;
    std::fs::write(&p, &text[..cut])?;
    let out = ok(&["watch", "--once", s(&p)])?;
    check(out.contains("evaluations 5 (5 valid)"), &out)
}

/// `tune watch` redraws at least once a second as the log grows.
fn watch_live() -> R {
    let dir = tempfile::tempdir()?;
    let p = dir.path().join("live.jsonl");
    let lines: Vec<String> =
        std::fs::read_to_string(here("tests/data/logs/vector_add_pocl.jsonl"))?
            .lines()
            .map(|l| format!("{l}\n"))
            .collect();
    std::fs::write(&p, &lines[0])?;
    let bin = assert_cmd::cargo::cargo_bin("tune");
    let mut child = std::process::Command::new(bin)
        .args(["watch", "--interval", "200", s(&p)])
        .stdout(Stdio::piped())
        .spawn()?;
    let start = Instant::now();
    let mut f = std::fs::OpenOptions::new().append(true).open(&p)?;
    for l in &lines[1..] {
        std::thread::sleep(Duration::from_millis(300));
        f.write_all(l.as_bytes())?;
        f.flush()?;
    }
    std::thread::sleep(Duration::from_millis(700));
    child.kill()?;
    let out = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let frames = text.matches("tune watch:").count();
    let secs = start.elapsed().as_secs_f64();
    check(
        frames as f64 >= secs,
        format!("{frames} frames in {secs:.1} s"),
    )?;
    check(text.contains("evaluations 1 (1 valid)"), "the first frame")?;
    check(text.contains("evaluations 6 (6 valid)"), "the last frame")
}

fn main() {
    let args = Arguments::from_args();
    let have_cl = opencl_device();
    let required = std::env::var_os("CI").is_some();
    let mut trials = vec![
        Trial::test("devices", devices),
        Trial::test("space", space),
        Trial::test("run_dry_run", run_dry),
        Trial::test("show", show),
        Trial::test("export", export),
        Trial::test("export_kt_cache", export_kt_cache),
        Trial::test("import", import),
        Trial::test("db", db),
        Trial::test("sim", sim),
        Trial::test("score", score),
        Trial::test("plot", plot),
        Trial::test("watch_once", watch_once),
        Trial::test("watch_live", watch_live),
    ];
    trials.push(
        Trial::test("run_opencl_t1_end_to_end", move || {
            if !have_cl {
                return Err(
                    "no OpenCL device, and CI requires one: `apt-get install pocl-opencl-icd`"
                        .into(),
                );
            }
            run_opencl()
        })
        .with_ignored_flag(!have_cl && !required),
    );
    if !have_cl {
        eprintln!(
            "cli: no OpenCL device; `tune run` on OpenCL is ignored (install pocl-opencl-icd)"
        );
    }
    libtest_mimic::run(&args, trials).exit();
}
