//! The append-only evaluation log: one JSON [`Record`] per line.
//!
//! Each record is written with a single `write` call as soon as its evaluation completes,
//! so a killed run leaves at most one truncated last line, which [`read`] skips. (The data
//! reaches the operating system at once; it survives a killed process, not a power cut.)

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::Record;
use crate::{Error, Result};

/// Appends records to a log file.
#[derive(Debug)]
pub struct LogWriter {
    file: File,
    path: PathBuf,
    line: Vec<u8>,
}

impl LogWriter {
    /// Opens (or creates) a log for appending. If the file ends in a truncated line (a run
    /// was killed while writing), the next record starts on a fresh line.
    ///
    /// # Errors
    /// [`Error::Io`] with the path.
    pub fn append(path: &Path) -> Result<Self> {
        let io = |source| Error::Io {
            path: path.display().to_string(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len > 0 {
            let mut last = [0u8];
            file.seek(SeekFrom::Start(len - 1)).map_err(io)?;
            file.read_exact(&mut last).map_err(io)?;
            if last[0] != b'\n' {
                file.write_all(b"\n").map_err(io)?;
            }
        }
        Ok(LogWriter {
            file,
            path: path.to_path_buf(),
            line: Vec::with_capacity(512),
        })
    }

    /// Appends one record as one line, written at once.
    ///
    /// # Errors
    /// [`Error::Io`] with the path.
    pub fn write(&mut self, record: &Record) -> Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record).map_err(|e| Error::Format {
            path: self.path.display().to_string(),
            reason: e.to_string(),
        })?;
        self.line.push(b'\n');
        self.file.write_all(&self.line).map_err(|source| Error::Io {
            path: self.path.display().to_string(),
            source,
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads every record of a log. A missing file is an empty log; a truncated line (from a
/// killed run) is skipped.
///
/// # Errors
/// [`Error::Io`], or [`Error::Format`] naming the line of a malformed (not merely
/// truncated) record.
pub fn read(path: &Path) -> Result<Vec<Record>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::Io {
                path: path.display().to_string(),
                source,
            })
        }
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(line) {
            Ok(r) => out.push(r),
            // A prefix of a record: the run was killed while writing it.
            Err(e) if e.is_eof() => {}
            Err(e) => {
                return Err(Error::Format {
                    path: path.display().to_string(),
                    reason: format!(
                        "line {}: {e}; remove or fix the line to resume from this log",
                        i + 1
                    ),
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::time::Duration;

    use super::*;
    use crate::results::tests::sample_record;
    use crate::Failure;

    #[test]
    fn truncated_last_lines_are_skipped_and_appends_start_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.jsonl");
        let mut w = LogWriter::append(&p).unwrap();
        for i in 0..3 {
            w.write(&Record {
                evaluation: i + 1,
                index: i as u128,
                ..sample_record()
            })
            .unwrap();
        }
        drop(w);
        // Kill in the middle of the third line.
        let text = std::fs::read_to_string(&p).unwrap();
        let cut = text.len() - 20;
        std::fs::write(&p, &text[..cut]).unwrap();
        let got = read(&p).unwrap();
        assert_eq!(got.len(), 2);
        let mut w = LogWriter::append(&p).unwrap();
        w.write(&Record {
            evaluation: 9,
            ..sample_record()
        })
        .unwrap();
        let got = read(&p).unwrap();
        assert_eq!(
            got.iter().map(|r| r.evaluation).collect::<Vec<_>>(),
            [1, 2, 9]
        );
    }

    /// Huge or non-finite numbers in a log are read (or refused) without a panic.
    #[test]
    fn absurd_values_never_panic_on_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.jsonl");
        let mut w = LogWriter::append(&p).unwrap();
        w.write(&Record {
            status: "timeout".into(),
            detail: Some("1e300".into()),
            cost: None,
            elapsed_s: 1e20,
            prepare_s: 1e300,
            run_s: -1e300,
            index: u128::MAX,
            ..sample_record()
        })
        .unwrap();
        drop(w);
        let got = read(&p).unwrap();
        assert_eq!(got[0].failure(), Some(Failure::Timeout(Duration::MAX)));
        assert_eq!(got[0].elapsed(), None);
        // JSON has no NaN or infinity, and numbers beyond f64 do not parse: a named error.
        for line in [
            r#"{"elapsed_s": NaN}"#,
            r#"{"tunable":"t","device":"d","evaluation":1,"index":0,"config":{},"status":"ok","prepare_s":0,"run_s":0,"elapsed_s":1e400,"seed":0,"technique":"x","timestamp":""}"#,
        ] {
            std::fs::write(&p, format!("{line}\n")).unwrap();
            let e = read(&p).unwrap_err().to_string();
            assert!(e.contains("line 1"), "{e}");
        }
    }

    #[test]
    fn malformed_lines_are_errors_and_missing_logs_empty() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.jsonl");
        assert!(read(&p).unwrap().is_empty());
        std::fs::write(&p, "{\"tunable\": 3}\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
    }
}
