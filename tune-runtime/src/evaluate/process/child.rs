//! Running one command: its output captured up to a limit, its whole process group killed
//! when it ends, runs too long or writes too much.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the output pipes may stay open after the process group was killed (a
/// descendant that left the group can hold them); what was read by then is kept.
const PIPE_GRACE: Duration = Duration::from_secs(1);

/// A finished run: exit status, outputs, wall time.
pub(super) struct Finished {
    pub(super) status: ExitStatus,
    pub(super) stdout: String,
    pub(super) stderr: String,
    pub(super) wall: Duration,
}

/// Why a run has no [`Finished`].
pub(super) enum RunError {
    /// It could not be started or waited for.
    Spawn(std::io::Error),
    /// It ran past its time limit and was killed.
    Timeout(Duration),
    /// It wrote more than this many bytes to one of its outputs and was killed.
    OutputTooLarge(usize),
}

enum Event {
    /// The child exited (not yet reaped) at this instant.
    Exited(Instant),
    /// An output went over the limit.
    Overflow,
    /// An output reached its end.
    Closed,
}

/// One output of the child, as read so far.
#[derive(Default)]
struct Captured {
    bytes: Mutex<Vec<u8>>,
    over: AtomicBool,
}

impl Captured {
    fn text(&self) -> String {
        self.bytes
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

/// Reads a pipe on its own thread, keeping at most `limit` bytes; past the limit it
/// reports an overflow and stops reading.
fn capture(
    pipe: Option<impl Read + Send + 'static>,
    limit: usize,
    events: mpsc::Sender<Event>,
) -> Arc<Captured> {
    let out = Arc::new(Captured::default());
    let Some(mut pipe) = pipe else {
        let _ = events.send(Event::Closed);
        return out;
    };
    let shared = out.clone();
    std::thread::spawn(move || {
        let mut chunk = vec![0u8; 64 * 1024];
        let mut kept = 0usize;
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    let take = n.min(limit.saturating_sub(kept));
                    if let Ok(mut b) = shared.bytes.lock() {
                        b.extend_from_slice(&chunk[..take]);
                    }
                    kept += take;
                    if take < n {
                        shared.over.store(true, Ordering::Release);
                        let _ = events.send(Event::Overflow);
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // A read error ends the output; what was read so far is kept.
                Err(_) => break,
            }
        }
        let _ = events.send(Event::Closed);
    });
    out
}

/// Blocks until the process `pid` has exited, without reaping it: its pid stays taken, so
/// that signalling its group afterwards cannot hit an unrelated process.
fn wait_exit_unreaped(pid: libc::pid_t) {
    loop {
        // SAFETY: `info` is a zeroed `siginfo_t` that waitid(2) fills in; WNOWAIT leaves
        // the child waitable, so `Child::wait` reaps it later.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// Sends SIGKILL to the process group `pid` leads (it was spawned with
/// `process_group(0)`) and to `pid` itself, in case it left the group.
fn kill_group(pid: libc::pid_t) {
    // SAFETY: kill(2) only sends signals; it touches no memory of ours. The child is not
    // reaped yet, so `pid` still names it (and its group).
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
    }
}

/// Runs a command to completion, or kills it (and its process group) after `timeout` or
/// once it wrote more than `max_output` bytes to standard output or error. When it exits,
/// processes it left running in its group are killed, so they cannot hold its output open.
pub(super) fn run(
    mut cmd: Command,
    timeout: Option<Duration>,
    max_output: usize,
) -> Result<Finished, RunError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(RunError::Spawn)?;
    let Ok(pid) = libc::pid_t::try_from(child.id()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(RunError::Spawn(std::io::Error::other(
            "process id out of range",
        )));
    };
    let (tx, events) = mpsc::channel();
    let stdout = capture(child.stdout.take(), max_output, tx.clone());
    let stderr = capture(child.stderr.take(), max_output, tx.clone());
    std::thread::spawn(move || {
        wait_exit_unreaped(pid);
        let _ = tx.send(Event::Exited(Instant::now()));
    });

    let deadline = timeout.map(|t| start + t);
    let mut closed = 0;
    let ended = loop {
        let event = match deadline {
            Some(d) => events.recv_timeout(d.saturating_duration_since(Instant::now())),
            None => events
                .recv()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match event {
            Ok(Event::Exited(at)) => break Ok(at),
            Ok(Event::Overflow) => break Err(RunError::OutputTooLarge(max_output)),
            Ok(Event::Closed) => closed += 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                break Err(RunError::Timeout(timeout.unwrap_or_default()))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break Ok(Instant::now()),
        }
    };
    kill_group(pid);
    let status = child.wait().map_err(RunError::Spawn)?;
    let exited = ended?;
    let grace = Instant::now() + PIPE_GRACE;
    while closed < 2 {
        match events.recv_timeout(grace.saturating_duration_since(Instant::now())) {
            Ok(Event::Closed) => closed += 1,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    // It may have exited before its reader saw the excess: output cut short is no output.
    if stdout.over.load(Ordering::Acquire) || stderr.over.load(Ordering::Acquire) {
        return Err(RunError::OutputTooLarge(max_output));
    }
    Ok(Finished {
        status,
        stdout: stdout.text(),
        stderr: stderr.text(),
        wall: exited.saturating_duration_since(start),
    })
}
