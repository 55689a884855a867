//! The process evaluator (ATF's generic cost function): tune any program.
//!
//! An optional compile command runs in [`Evaluator::prepare`] (in parallel for upcoming
//! candidates), the run command in [`Evaluator::measure`]. The configuration reaches both as
//! environment variables (`NAME=value`, plus `TUNE_INDEX`, the configuration's index in the
//! space) and as `{NAME}` / `{INDEX}` substitutions in the arguments. The cost is read from
//! the program's standard output (the number on its last line with a number, or a
//! `key=value` line), from a file it writes, or measured as the run's wall time. Every
//! command runs in its own process group: when it exits, what it left running in the
//! background is killed (and what it printed is read); when it runs past its timeout or
//! writes more than [`Process::max_output`] bytes, the whole group is killed.
//!
//! ```no_run
//! use std::time::Duration;
//! use tune_runtime::evaluate::process::{CostFrom, Process};
//!
//! let eval = Process::new("./build/bench_{INDEX}", ["--size", "4096"])
//!     .compile("cc", ["-O2", "-DBS={BS}", "-o", "build/bench_{INDEX}", "bench.c"])
//!     .cost_from(CostFrom::Key("time_ms".into()))
//!     .timeout(Duration::from_secs(10));
//! # let _ = eval;
//! ```
//!
//! Failures: a compile command that fails (or times out) gives [`Failure::Compile`] with its
//! output; a run that exits with a non-zero status gives [`Failure::Launch`]; one that runs
//! past the timeout gives [`Failure::Timeout`]; one that writes too much output gives
//! [`Failure::Launch`] saying so; output without a cost, with two candidate numbers on the
//! cost's line, or with a cost that is NaN or infinite gives [`Failure::InvalidCost`].

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

use crate::evaluate::{Evaluator, Failure, Measured};
use crate::space::{Config, Space};

mod child;
mod parse;

use child::{run, RunError};

/// The default of [`Process::max_output`]: 16 MiB per output.
pub const DEFAULT_MAX_OUTPUT: usize = 16 << 20;

/// Where the process evaluator reads the cost.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CostFrom {
    /// The number on the last line of standard output that holds a number (the default):
    /// `1.25e-3`, `time: 1.25 ms`. A line with two numbers (`kernel 3 took 1.5 s`) is
    /// ambiguous and gives [`Failure::InvalidCost`]: print the cost alone, or use `Key`.
    LastNumber,
    /// The last line of standard output of the form `key=value` (spaces around `=` allowed;
    /// the value may carry a unit: `time_ms = 1.5 ms`).
    Key(String),
    /// The number on the last line with a number in a file the program writes (as for
    /// `LastNumber`; `{NAME}`/`{INDEX}` substituted in the path; relative to the working
    /// directory).
    File(PathBuf),
    /// The wall time of the run, in seconds.
    Elapsed,
}

#[derive(Clone, Debug)]
struct CommandLine {
    program: String,
    args: Vec<String>,
}

/// The generic process evaluator. See the [module docs](self).
#[derive(Clone, Debug)]
pub struct Process {
    compile: Option<CommandLine>,
    run: CommandLine,
    cost: CostFrom,
    timeout: Option<Duration>,
    compile_timeout: Option<Duration>,
    dir: Option<PathBuf>,
    env: bool,
    device: String,
    max_output: usize,
}

impl Process {
    /// Runs `program` with `args` to measure a configuration.
    pub fn new<I, S>(program: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Process {
            compile: None,
            run: CommandLine {
                program: program.into(),
                args: args.into_iter().map(Into::into).collect(),
            },
            cost: CostFrom::LastNumber,
            timeout: None,
            compile_timeout: None,
            dir: None,
            env: true,
            device: "cpu".into(),
            max_output: DEFAULT_MAX_OUTPUT,
        }
    }

    /// A compile command run before each measurement (in parallel for upcoming candidates,
    /// so give each configuration its own output, e.g. with `{INDEX}`).
    #[must_use]
    pub fn compile<I, S>(mut self, program: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.compile = Some(CommandLine {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Where to read the cost (default: the last number on standard output).
    #[must_use]
    pub fn cost_from(mut self, from: CostFrom) -> Self {
        self.cost = from;
        self
    }

    /// Kills a run that takes longer than this ([`Failure::Timeout`]). Default: none.
    #[must_use]
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Kills a compilation that takes longer than this. Default: none.
    #[must_use]
    pub fn compile_timeout(mut self, limit: Duration) -> Self {
        self.compile_timeout = Some(limit);
        self
    }

    /// The working directory of both commands (default: the current one).
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// Whether to pass the configuration as environment variables (default `true`).
    #[must_use]
    pub fn env(mut self, on: bool) -> Self {
        self.env = on;
        self
    }

    /// The device name recorded with the results (default `"cpu"`).
    #[must_use]
    pub fn device_name(mut self, name: impl Into<String>) -> Self {
        self.device = name.into();
        self
    }

    /// The most bytes kept of each command's standard output and of its standard error
    /// (default [`DEFAULT_MAX_OUTPUT`], 16 MiB). A command that writes more is killed, with
    /// its process group, and fails: memory stays bounded whatever it prints.
    #[must_use]
    pub fn max_output(mut self, bytes: usize) -> Self {
        self.max_output = bytes;
        self
    }

    fn substitutions(space: &Space, config: &Config) -> Vec<(String, String)> {
        let mut subs: Vec<(String, String)> = space
            .values(config)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        let index = space
            .index_of(config)
            .map_or(String::new(), |i| i.to_string());
        subs.push(("INDEX".into(), index));
        subs
    }

    fn command(&self, line: &CommandLine, subs: &[(String, String)]) -> Command {
        let mut cmd = Command::new(substitute(&line.program, subs));
        cmd.args(line.args.iter().map(|a| substitute(a, subs)));
        if let Some(dir) = &self.dir {
            cmd.current_dir(dir);
        }
        if self.env {
            for (n, v) in subs {
                if n == "INDEX" {
                    cmd.env("TUNE_INDEX", v);
                } else {
                    cmd.env(n, v);
                }
            }
        }
        cmd
    }
}

/// Replaces every `{NAME}` by its value.
fn substitute(s: &str, subs: &[(String, String)]) -> String {
    if !s.contains('{') {
        return s.to_string();
    }
    let mut out = s.to_string();
    for (n, v) in subs {
        out = out.replace(&format!("{{{n}}}"), v);
    }
    out
}

/// The last `max` bytes of a log, on a character boundary.
fn tail(s: &str, max: usize) -> String {
    let s = s.trim_end();
    if s.len() <= max {
        return s.to_string();
    }
    let mut k = s.len() - max;
    while !s.is_char_boundary(k) {
        k += 1;
    }
    format!("...{}", &s[k..])
}

fn too_much(limit: usize) -> String {
    format!(
        "the command wrote more than {} to its standard output or error and was stopped; \
         print less, or raise the limit with `Process::max_output`",
        bytes(limit)
    )
}

/// `16 MiB`, `512 KiB`, `100 bytes`.
fn bytes(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

fn describe_exit(status: ExitStatus) -> String {
    match status.code() {
        Some(c) => format!("exit status {c}"),
        None => {
            use std::os::unix::process::ExitStatusExt;
            format!("killed by signal {}", status.signal().unwrap_or(0))
        }
    }
}

impl Evaluator for Process {
    type Cost = f64;
    type Prepared = ();

    fn prepare(&self, space: &Space, config: &Config) -> Result<(), Failure> {
        let Some(line) = &self.compile else {
            return Ok(());
        };
        let subs = Self::substitutions(space, config);
        match run(
            self.command(line, &subs),
            self.compile_timeout,
            self.max_output,
        ) {
            Err(RunError::Spawn(e)) => Err(Failure::Compile(format!(
                "cannot start `{}`: {e}",
                line.program
            ))),
            Err(RunError::Timeout(d)) => Err(Failure::Compile(format!(
                "compilation timed out after {d:?}"
            ))),
            Err(RunError::OutputTooLarge(n)) => Err(Failure::Compile(too_much(n))),
            Ok(f) if !f.status.success() => Err(Failure::Compile(format!(
                "{}: {}",
                describe_exit(f.status),
                tail(&format!("{}{}", f.stderr, f.stdout), 4000)
            ))),
            Ok(_) => Ok(()),
        }
    }

    fn measure(&self, space: &Space, config: &Config, (): ()) -> Result<Measured<f64>, Failure> {
        let subs = Self::substitutions(space, config);
        if let CostFrom::File(path) = &self.cost {
            // A stale file from an earlier run must not be read as this run's cost.
            let _ = std::fs::remove_file(self.resolve(path, &subs));
        }
        let f = match run(
            self.command(&self.run, &subs),
            self.timeout,
            self.max_output,
        ) {
            Err(RunError::Spawn(e)) => {
                return Err(Failure::Launch(format!(
                    "cannot start `{}`: {e}",
                    self.run.program
                )))
            }
            Err(RunError::Timeout(d)) => return Err(Failure::Timeout(d)),
            Err(RunError::OutputTooLarge(n)) => return Err(Failure::Launch(too_much(n))),
            Ok(f) => f,
        };
        if !f.status.success() {
            return Err(Failure::Launch(format!(
                "{}: {}",
                describe_exit(f.status),
                tail(&format!("{}{}", f.stderr, f.stdout), 4000)
            )));
        }
        let cost = match &self.cost {
            CostFrom::Elapsed => f.wall.as_secs_f64(),
            CostFrom::LastNumber => parse::last_number(&f.stdout, "standard output")?,
            CostFrom::Key(k) => parse::key_value(&f.stdout, k)?,
            CostFrom::File(path) => {
                let path = self.resolve(path, &subs);
                match std::fs::read_to_string(&path) {
                    Ok(text) => {
                        parse::last_number(&text, &format!("the cost file {}", path.display()))?
                    }
                    Err(e) => {
                        return Err(Failure::InvalidCost(format!(
                            "cannot read the cost file {}: {e}; the program must write it",
                            path.display()
                        )))
                    }
                }
            }
        };
        Ok(Measured {
            samples: vec![f.wall.as_secs_f64()],
            ..Measured::new(cost)
        })
    }

    fn device(&self) -> String {
        self.device.clone()
    }
}

impl Process {
    fn resolve(&self, path: &Path, subs: &[(String, String)]) -> PathBuf {
        let p = PathBuf::from(substitute(&path.to_string_lossy(), subs));
        match &self.dir {
            Some(d) if p.is_relative() => d.join(p),
            _ => p,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::time::Instant;

    use super::*;
    use crate::param::{Param, Value};
    use crate::space::SpaceBuilder;

    fn space() -> Space {
        SpaceBuilder::new()
            .param(Param::<u32>::range("BS", 1..=4))
            .param(Param::<u32>::values("VW", [1, 2]))
            .build()
            .unwrap()
    }

    fn sh(script: &str) -> Process {
        Process::new("sh", ["-c", script])
    }

    fn eval(p: &Process, index: u128) -> Result<f64, Failure> {
        let s = space();
        let c = s.get(index).unwrap();
        p.prepare(&s, &c)?;
        p.measure(&s, &c, ()).map(|m| m.cost)
    }

    #[test]
    fn configuration_reaches_env_and_arguments() {
        let s = space();
        let c = s
            .config_from_values([("BS", Value::Int(3)), ("VW", Value::Int(2))])
            .unwrap();
        let i = s.index_of(&c).unwrap();
        // `$0` is the first argument after the script: the substituted `{BS}`.
        let p = Process::new(
            "sh",
            ["-c", "echo result: $(( $0 * 100 + VW * 10 ))", "{BS}"],
        );
        assert_eq!(eval(&p, i).unwrap(), 320.0);
        let p = sh("echo $TUNE_INDEX");
        assert_eq!(eval(&p, i).unwrap(), i as f64);
    }

    #[test]
    fn cost_from_key_value_line_and_file() {
        let p = sh("echo 'time=1.5'; echo 'other=7'; echo done")
            .cost_from(CostFrom::Key("time".into()));
        assert_eq!(eval(&p, 0).unwrap(), 1.5);
        let dir = tempfile::tempdir().unwrap();
        let p = sh("echo 'cost 2.25 ms' > out_{INDEX}.txt")
            .current_dir(dir.path())
            .cost_from(CostFrom::File("out_{INDEX}.txt".into()));
        assert_eq!(eval(&p, 1).unwrap(), 2.25);
        assert!(dir.path().join("out_1.txt").exists());
        let p = sh("true").cost_from(CostFrom::Key("time".into()));
        assert!(matches!(eval(&p, 0), Err(Failure::InvalidCost(_))));
    }

    #[test]
    fn wall_time_of_a_slow_run() {
        let p = sh("sleep 0.2").cost_from(CostFrom::Elapsed);
        let t = eval(&p, 0).unwrap();
        assert!(t >= 0.2, "{t}");
    }

    #[test]
    fn failing_run_is_a_launch_failure() {
        let p = sh("echo oops >&2; exit 3");
        match eval(&p, 0) {
            Err(Failure::Launch(msg)) => {
                assert!(
                    msg.contains("exit status 3") && msg.contains("oops"),
                    "{msg}"
                )
            }
            other => panic!("{other:?}"),
        }
        let p = Process::new("/nonexistent/program", Vec::<String>::new());
        assert!(matches!(eval(&p, 0), Err(Failure::Launch(_))));
    }

    #[test]
    fn compile_errors_carry_the_log() {
        let p = sh("echo 1").compile(
            "sh",
            [
                "-c",
                "if [ $BS = 2 ]; then echo 'error: BS=2 unsupported' >&2; exit 1; fi",
            ],
        );
        assert_eq!(eval(&p, 0).unwrap(), 1.0);
        let s = space();
        let c = s
            .config_from_values([("BS", Value::Int(2)), ("VW", Value::Int(1))])
            .unwrap();
        match p.prepare(&s, &c) {
            Err(Failure::Compile(log)) => assert!(log.contains("BS=2 unsupported"), "{log}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hung_run_and_its_children_are_killed() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("child-survived");
        // The child sleeps and would then write the marker; killing the group stops it.
        let script = format!("(sleep 1; touch {}) & sleep 30", marker.display());
        let p = sh(&script).timeout(Duration::from_millis(200));
        let t = Instant::now();
        assert_eq!(
            eval(&p, 0),
            Err(Failure::Timeout(Duration::from_millis(200)))
        );
        assert!(t.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "the child of the hung run was not killed");
    }

    #[test]
    fn an_ambiguous_or_missing_cost_is_an_invalid_cost() {
        let kind = |p: &Process| eval(p, 0).unwrap_err().kind();
        let p = sh("echo 'kernel 3 took 1.5 s'");
        assert_eq!(kind(&p), "invalid_cost", "not 3, not a guess");
        assert_eq!(eval(&sh("echo 'kernel 3:'; echo 'took 1.5 s'"), 0), Ok(1.5));
        assert_eq!(kind(&sh("echo done")), "invalid_cost");
        for bad in ["time=nan", "time=-inf", "time=inf"] {
            let p = sh(&format!("echo {bad}")).cost_from(CostFrom::Key("time".into()));
            match eval(&p, 0) {
                Err(Failure::InvalidCost(m)) => assert!(m.contains("finite"), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert_eq!(kind(&sh("echo nan")), "invalid_cost");
        let dir = tempfile::tempdir().unwrap();
        let p = sh("true")
            .current_dir(dir.path())
            .cost_from(CostFrom::File("missing.txt".into()));
        assert_eq!(kind(&p), "invalid_cost");
    }

    #[test]
    fn endless_output_is_cut_and_the_run_stopped() {
        let t = Instant::now();
        match eval(&sh("yes").max_output(1 << 20), 0) {
            Err(Failure::Launch(m)) => {
                assert!(
                    m.contains("more than 1 MiB") && m.contains("max_output"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        // Too much output then a cost: the cost cannot be trusted to be the last line.
        let p = sh("head -c 3000000 /dev/zero; echo 1").max_output(1 << 20);
        assert_eq!(eval(&p, 0).unwrap_err().kind(), "launch");
        let p = sh("echo 1").compile("sh", ["-c", "yes"]).max_output(4096);
        match eval(&p, 0) {
            Err(Failure::Compile(m)) => assert!(m.contains("more than 4 KiB"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn background_children_are_killed_and_the_cost_is_read() {
        let t = Instant::now();
        assert_eq!(eval(&sh("(sleep 30) & echo 3.0"), 0), Ok(3.0));
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("child-survived");
        let script = format!("(sleep 1; touch {}) & echo 2.5", marker.display());
        assert_eq!(eval(&sh(&script), 0), Ok(2.5));
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "the background child was left running");
    }
}
