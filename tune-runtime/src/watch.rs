//! Following a log while a run writes it: [`Tail`] reads what was appended since the last
//! poll (a partial last line waits for its end), and [`frame`] draws a terminal view of the
//! records: progress, best so far, failures by kind and a small best-so-far chart.

use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::results::Record;
use crate::summary::Summary;
use crate::{Error, Result};

/// Reads a growing JSON-lines log incrementally.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
    records: Vec<Record>,
    skipped: usize,
}

impl Tail {
    /// Follows `path` (which may not exist yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Tail {
            path: path.into(),
            offset: 0,
            partial: Vec::new(),
            records: Vec::new(),
            skipped: 0,
        }
    }

    /// Reads what was appended; returns how many records arrived. A file that shrank (a new
    /// run replaced it) is read again from the start.
    ///
    /// # Errors
    /// [`Error::Io`] other than the file not existing yet.
    pub fn poll(&mut self) -> Result<usize> {
        let path = self.path.clone();
        let io = |source| Error::Io {
            path: path.display().to_string(),
            source,
        };
        let mut f = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(io(e)),
        };
        let len = f.metadata().map_err(io)?.len();
        if len < self.offset {
            *self = Tail::new(path.clone());
        }
        f.seek(SeekFrom::Start(self.offset)).map_err(io)?;
        let mut buf = Vec::new();
        f.take(len - self.offset)
            .read_to_end(&mut buf)
            .map_err(io)?;
        self.offset += buf.len() as u64;
        self.partial.extend_from_slice(&buf);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Ok(0);
        };
        let complete: Vec<u8> = self.partial.drain(..=end).collect();
        let before = self.records.len();
        for line in complete.split(|&b| b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Record>(line) {
                Ok(r) => self.records.push(r),
                // A line cut by a killed run, or not a record: counted, not fatal.
                Err(_) => self.skipped += 1,
            }
        }
        Ok(self.records.len() - before)
    }

    /// Every record read so far.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Lines that were not records.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// The file followed.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A text view of `records`, at most `width` columns: header, progress, best so far,
/// failures by kind and a best-so-far chart `chart_rows` high.
pub fn frame(title: &str, records: &[Record], width: usize, chart_rows: usize) -> String {
    let s = Summary::of(records, 1);
    let width = width.max(40);
    let mut out = String::new();
    let _ = writeln!(out, "{}", clip(&format!("tune watch: {title}"), width));
    let _ = writeln!(
        out,
        "{}",
        clip(
            &format!(
                "{} | {} | {}",
                s.tunables.join(", "),
                s.devices.join(", "),
                s.runs
                    .iter()
                    .map(|r| r.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            width
        )
    );
    let rate = if s.elapsed_s > 0.0 {
        format!(" | {:.1} evaluations/s", s.evaluations as f64 / s.elapsed_s)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "evaluations {} ({} valid) | elapsed {:.1} s{rate}",
        s.evaluations, s.valid, s.elapsed_s
    );
    match s.top.first() {
        Some(b) => {
            let _ = writeln!(
                out,
                "best {} = {:.6e} (evaluation {}, {:.1} s)",
                s.objective, b.cost, b.evaluation, b.elapsed_s
            );
            let _ = writeln!(out, "  {}", clip(&b.config.to_string(), width - 2));
        }
        None => {
            let _ = writeln!(out, "best: nothing valid yet");
        }
    }
    if s.failures.is_empty() {
        let _ = writeln!(out, "failures: none");
    } else {
        let kinds: Vec<String> = s.failures.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(out, "failures: {}", kinds.join(", "));
    }
    if let Some(run) = s.runs.iter().max_by_key(|r| r.curve.len()) {
        let pts: Vec<(u64, f64)> = run
            .curve
            .iter()
            .filter_map(|p| p.best.map(|b| (p.evaluation, b)))
            .collect();
        out.push_str(&chart(&pts, width, chart_rows));
    }
    out
}

fn clip(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(width.saturating_sub(3)).collect();
        t.push_str("...");
        t
    }
}

/// A step chart of best-so-far against evaluations, drawn with `*` and `-` in a box.
fn chart(points: &[(u64, f64)], width: usize, rows: usize) -> String {
    let mut out = String::new();
    let Some(last) = points.last() else {
        return out;
    };
    let rows = rows.max(3);
    let label_w = 12;
    let cols = width.saturating_sub(label_w + 2).max(10);
    let (lo, hi) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.1), b.max(p.1))
        });
    let n = last.0.max(1);
    let mut grid = vec![vec![' '; cols]; rows];
    // Costs often fall by orders of magnitude early on: a log scale keeps the end visible.
    let log = lo > 0.0 && hi / lo > 3.0;
    let tf = |v: f64| if log { v.ln() } else { v };
    let row_of = |v: f64| -> usize {
        if hi <= lo {
            return rows - 1;
        }
        let t = (tf(v) - tf(lo)) / (tf(hi) - tf(lo));
        ((1.0 - t) * (rows - 1) as f64).round() as usize
    };
    // Column c shows evaluation 1 + c (n - 1) / (cols - 1): the last point at or before it.
    let mut k = 0;
    let mut value = None;
    // Each column spans the highest and the lowest best-so-far of its evaluations.
    let marks: Vec<Option<(usize, usize)>> = (0..cols)
        .map(|c| {
            let eval = 1 + c as u64 * (n - 1) / (cols as u64 - 1);
            let mut top = value;
            while k < points.len() && points[k].0 <= eval {
                top = top.or(Some(points[k].1));
                value = Some(points[k].1);
                k += 1;
            }
            Some((row_of(top?), row_of(value?)))
        })
        .collect();
    for (c, m) in marks.iter().enumerate() {
        if let Some((a, b)) = *m {
            for row in grid.iter_mut().take(b.min(rows - 1) + 1).skip(a) {
                row[c] = '|';
            }
            grid[b.min(rows - 1)][c] = '*';
        }
    }
    for (r, line) in grid.iter().enumerate() {
        let label = if r == 0 {
            format!("{hi:.4e}")
        } else if r == rows / 2 && log {
            "(log scale)".to_string()
        } else if r == rows - 1 {
            format!("{lo:.4e}")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{label:>label_w$} |{}",
            line.iter().collect::<String>()
        );
    }
    let _ = writeln!(out, "{:>label_w$} +{}", "", "-".repeat(cols));
    let _ = writeln!(
        out,
        "{:>label_w$}  1{:>w$}",
        "",
        format!("{n} evaluations"),
        w = cols - 1
    );
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::io::Write;

    use super::*;
    use crate::results::tests::sample_record;

    #[test]
    fn tail_reads_appends_and_waits_for_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.jsonl");
        let mut t = Tail::new(&p);
        assert_eq!(t.poll().unwrap(), 0);
        let line = |i: u64| {
            let mut s = serde_json::to_string(&Record {
                evaluation: i,
                cost: Some(10.0 - i as f64),
                ..sample_record()
            })
            .unwrap();
            s.push('\n');
            s
        };
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(line(1).as_bytes()).unwrap();
        let two = line(2);
        f.write_all(&two.as_bytes()[..10]).unwrap();
        f.flush().unwrap();
        assert_eq!(t.poll().unwrap(), 1);
        f.write_all(&two.as_bytes()[10..]).unwrap();
        f.write_all(line(3).as_bytes()).unwrap();
        f.flush().unwrap();
        assert_eq!(t.poll().unwrap(), 2);
        assert_eq!(
            t.records().iter().map(|r| r.evaluation).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(t.skipped(), 0);
        // A new run replaces the file: read again from the start.
        std::fs::write(&p, line(7)).unwrap();
        assert_eq!(t.poll().unwrap(), 1);
        assert_eq!(t.records()[0].evaluation, 7);
    }

    #[test]
    fn frames_show_progress_best_failures_and_a_chart() {
        let mut rs: Vec<Record> = (1..=30)
            .map(|i| Record {
                evaluation: i,
                cost: Some(100.0 / i as f64),
                elapsed_s: i as f64 * 0.1,
                ..sample_record()
            })
            .collect();
        rs[4].status = "compile".into();
        rs[4].cost = None;
        let f = frame("log.jsonl", &rs, 80, 6);
        assert!(f.contains("evaluations 30 (29 valid)"), "{f}");
        assert!(f.contains("failures: compile 1"), "{f}");
        assert!(f.contains("best cost = 3.333333e0"), "{f}");
        assert!(f.contains('*') && f.contains("30 evaluations"), "{f}");
        assert!(f.lines().all(|l| l.chars().count() <= 80), "{f}");
        let empty = frame("log.jsonl", &[], 80, 6);
        assert!(empty.contains("nothing valid yet"), "{empty}");
    }
}
