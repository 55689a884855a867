//! The process evaluator (ATF's generic cost function): tune any program.
//!
//! An optional compile command runs in [`Evaluator::prepare`] (in parallel for upcoming
//! candidates), the run command in [`Evaluator::measure`]. The configuration reaches both as
//! environment variables (`NAME=value`, plus `TUNE_INDEX`, the configuration's index in the
//! space) and as `{NAME}` / `{INDEX}` substitutions in the arguments. The cost is read from
//! the program's standard output (the last number, or a `key=value` line), from a file it
//! writes, or measured as the run's wall time. A run that exceeds its timeout is killed with
//! its whole process group.
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
//! past the timeout gives [`Failure::Timeout`]; output without a cost gives
//! [`Failure::Other`].

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::evaluate::{Evaluator, Failure, Measured};
use crate::space::{Config, Space};

/// Where the process evaluator reads the cost.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CostFrom {
    /// The last number printed on standard output (the default).
    LastNumber,
    /// The last line of standard output of the form `key=value` (spaces around `=` allowed).
    Key(String),
    /// The last number in a file the program writes (`{NAME}`/`{INDEX}` substituted in the
    /// path; relative to the working directory).
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

/// A finished run: exit status, outputs, wall time.
struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    wall: Duration,
}

enum RunError {
    Spawn(std::io::Error),
    Timeout(Duration),
}

fn reader(mut pipe: Option<impl Read + Send + 'static>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(p) = pipe.as_mut() {
            // A read error ends the output; what was read so far is kept.
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

/// Kills the child and every process in its group.
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        if let Ok(pid) = libc::pid_t::try_from(child.id()) {
            // SAFETY: kill(2) with a negative pid signals the process group the child leads
            // (it was spawned with `process_group(0)`); it touches no memory of ours.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.kill();
}

/// Runs a command to completion, or kills it (and its process group) after `timeout`.
fn run(mut cmd: Command, timeout: Option<Duration>) -> Result<Finished, RunError> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(RunError::Spawn)?;
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let status = match timeout {
        None => child.wait().map_err(RunError::Spawn)?,
        Some(limit) => {
            let deadline = start + limit;
            let mut nap = Duration::from_micros(50);
            loop {
                match child.try_wait() {
                    Ok(Some(status)) => break status,
                    Ok(None) => {}
                    Err(e) => {
                        kill_group(&mut child);
                        let _ = child.wait();
                        return Err(RunError::Spawn(e));
                    }
                }
                let now = Instant::now();
                if now >= deadline {
                    kill_group(&mut child);
                    let _ = child.wait();
                    // The reader threads end when the killed processes' pipes close; they
                    // are not joined, so a descendant that escaped the group cannot hang us.
                    return Err(RunError::Timeout(limit));
                }
                std::thread::sleep(nap.min(deadline - now));
                nap = (nap * 2).min(Duration::from_millis(2));
            }
        }
    };
    let wall = start.elapsed();
    // The child is gone; its pipes close unless it left descendants holding them, so do
    // not wait for the readers forever in that case.
    let stdout = join_reader(out);
    let stderr = join_reader(err);
    Ok(Finished {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        wall,
    })
}

fn join_reader(h: JoinHandle<Vec<u8>>) -> Vec<u8> {
    let deadline = Instant::now() + Duration::from_secs(1);
    while !h.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(100));
    }
    if h.is_finished() {
        h.join().unwrap_or_default()
    } else {
        Vec::new()
    }
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

fn describe_exit(status: ExitStatus) -> String {
    match status.code() {
        Some(c) => format!("exit status {c}"),
        None => {
            use std::os::unix::process::ExitStatusExt;
            format!("killed by signal {}", status.signal().unwrap_or(0))
        }
    }
}

/// The last number in a text (tokens split on whitespace, `,`, `;` and `=`).
pub(crate) fn last_number(text: &str) -> Option<f64> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '=' | ':'))
        .rev()
        .filter(|t| !t.is_empty())
        .find_map(|t| {
            t.trim_end_matches(|c: char| c.is_alphabetic() && c != 'e')
                .parse::<f64>()
                .ok()
        })
        .filter(|x| x.is_finite())
}

/// The value of the last `key=value` line.
fn key_value(text: &str, key: &str) -> Option<f64> {
    text.lines().rev().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().parse::<f64>().ok())?
    })
}

impl Evaluator for Process {
    type Cost = f64;
    type Prepared = ();

    fn prepare(&self, space: &Space, config: &Config) -> Result<(), Failure> {
        let Some(line) = &self.compile else {
            return Ok(());
        };
        let subs = Self::substitutions(space, config);
        match run(self.command(line, &subs), self.compile_timeout) {
            Err(RunError::Spawn(e)) => Err(Failure::Compile(format!(
                "cannot start `{}`: {e}",
                line.program
            ))),
            Err(RunError::Timeout(d)) => Err(Failure::Compile(format!(
                "compilation timed out after {d:?}"
            ))),
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
        let f = match run(self.command(&self.run, &subs), self.timeout) {
            Err(RunError::Spawn(e)) => {
                return Err(Failure::Launch(format!(
                    "cannot start `{}`: {e}",
                    self.run.program
                )))
            }
            Err(RunError::Timeout(d)) => return Err(Failure::Timeout(d)),
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
            CostFrom::Elapsed => Some(f.wall.as_secs_f64()),
            CostFrom::LastNumber => last_number(&f.stdout),
            CostFrom::Key(k) => key_value(&f.stdout, k),
            CostFrom::File(path) => {
                let path = self.resolve(path, &subs);
                match std::fs::read_to_string(&path) {
                    Ok(text) => last_number(&text),
                    Err(e) => {
                        return Err(Failure::Other(format!(
                            "cannot read the cost file {}: {e}; the program must write it",
                            path.display()
                        )))
                    }
                }
            }
        };
        match cost {
            Some(c) => Ok(Measured {
                cost: c,
                samples: vec![f.wall.as_secs_f64()],
                validation: None,
                stopped_early: false,
            }),
            None => Err(Failure::Other(format!(
                "no cost ({}) in the output: {}",
                match &self.cost {
                    CostFrom::Key(k) => format!("a line `{k}=<number>`"),
                    _ => "a number".into(),
                },
                tail(&f.stdout, 500)
            ))),
        }
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
        assert!(matches!(eval(&p, 0), Err(Failure::Other(_))));
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
    fn numbers_are_found_at_the_end() {
        assert_eq!(last_number("a 1\nb 2.5e-3 ms\n"), Some(2.5e-3));
        assert_eq!(last_number("time: 12ms"), Some(12.0));
        assert_eq!(last_number("none"), None);
        assert_eq!(key_value("x = 3\nx=4\n", "x"), Some(4.0));
        assert_eq!(key_value("xy=3", "x"), None);
    }
}
