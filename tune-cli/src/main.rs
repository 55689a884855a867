//! `tune`: the command line of the tune auto-tuner. Every subcommand is a thin layer over
//! the library (`tune_runtime`): devices, Kernel Tuner T1 files, logs, exports and imports,
//! the tuning database, simulation, plots and a live view of a running tuning.

mod devices;
mod logs;
mod sim;
mod t1;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// What a subcommand returns: any error is printed as `error: ...` and exits with status 1.
pub type Res<T = ()> = Result<T, Box<dyn std::error::Error>>;

#[derive(Parser, Debug)]
#[command(
    name = "tune",
    version,
    about = "Auto-tune GPU kernels from the shell: devices, Kernel Tuner T1 files, logs, plots, simulation"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List OpenCL platforms and devices and CUDA devices, with the limits that matter for tuning.
    Devices,
    /// Build the search space of a Kernel Tuner T1 file and print its size.
    Space {
        /// The T1 file.
        file: PathBuf,
        /// Also print the first N valid configurations (Kernel Tuner cache keys).
        #[arg(long, value_name = "N")]
        list: Option<usize>,
    },
    /// Tune the kernel of a Kernel Tuner T1 file on a device.
    Run(t1::RunArgs),
    /// Summarise a log (or a Kernel Tuner cache, KTT output or T4 file).
    Show {
        /// Logs or result files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// How many of the best configurations to list.
        #[arg(long, default_value_t = 5)]
        top: usize,
    },
    /// Export a log as T4 JSON, CSV or a Kernel Tuner cache.
    Export {
        /// The log (or a Kernel Tuner cache, KTT output or T4 file).
        file: PathBuf,
        /// Write the community T4 results format here.
        #[arg(long, value_name = "OUT")]
        t4: Option<PathBuf>,
        /// Write CSV here.
        #[arg(long, value_name = "OUT")]
        csv: Option<PathBuf>,
        /// Write a Kernel Tuner cache file here (gzip-compressed if OUT ends in `.gz`), which
        /// Kernel Tuner's simulation mode and `tune sim` replay.
        #[arg(long, value_name = "OUT")]
        kt_cache: Option<PathBuf>,
        /// The kernel's name in the Kernel Tuner cache (Kernel Tuner refuses a cache of
        /// another kernel; a log of `tune run` names the benchmark, Kernel Tuner the
        /// T1 file's KernelName).
        #[arg(long, value_name = "NAME", requires = "kt_cache")]
        kernel_name: Option<String>,
    },
    /// Convert a Kernel Tuner cache, KTT JSON output or T4 file into a tune log.
    Import {
        /// The file (`.json` or `.json.gz`).
        file: PathBuf,
        /// The log to write (JSON lines).
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Show what the tuning database holds, per tunable, device and input.
    Db {
        /// The database folder.
        #[arg(default_value = "tuning")]
        dir: PathBuf,
        /// Only this tunable.
        #[arg(long)]
        tunable: Option<String>,
    },
    /// Replay a technique on a recorded brute-force space (a Kernel Tuner cache, KTT output or T4 file).
    Sim(sim::SimArgs),
    /// Compare techniques on recorded spaces: mean fraction of the optimum after N evaluations.
    Score(sim::ScoreArgs),
    /// Plot logs: best so far (by evaluation and by time), cost distribution, cost per parameter.
    Plot(logs::PlotArgs),
    /// Follow a running tuning's log in the terminal.
    Watch(logs::WatchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Devices => devices::run(),
        Command::Space { file, list } => t1::space(&file, list),
        Command::Run(a) => t1::run(&a),
        Command::Show { files, top } => logs::show(&files, top),
        Command::Export {
            file,
            t4,
            csv,
            kt_cache,
            kernel_name,
        } => logs::export(
            &file,
            t4.as_deref(),
            csv.as_deref(),
            kt_cache.as_deref().map(|p| (p, kernel_name.as_deref())),
        ),
        Command::Import { file, out } => logs::import(&file, &out),
        Command::Db { dir, tunable } => logs::db(&dir, tunable.as_deref()),
        Command::Sim(a) => sim::sim(&a),
        Command::Score(a) => sim::score(&a),
        Command::Plot(a) => logs::plot(&a),
        Command::Watch(a) => logs::watch(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
