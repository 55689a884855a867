//! Plots of tuning runs, as SVG or PNG (feature `plot`): best-so-far against evaluations and
//! against time (several runs overlaid, with the random-search baseline), the distribution
//! of measured costs, and cost against each parameter. Text is drawn with a bundled font
//! (DejaVu Sans, see `font/LICENSE-DejaVu.txt`), so plots render on machines without system
//! fonts. Files are written atomically; the format follows the extension (`.svg`, `.png`).
//!
//! ```no_run
//! # fn main() -> tune_runtime::Result<()> {
//! use tune_runtime::plot;
//! use tune_runtime::results::log;
//! let records = log::read("target/tune/matmul_cpu.jsonl".as_ref())?;
//! let written = plot::write_all("target/tune/plots".as_ref(), &records, None, &[plot::Format::Svg])?;
//! # let _ = written;
//! # Ok(()) }
//! ```

mod charts;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::prelude::*;

use crate::cost::Cost;
use crate::results::{write_atomic, Record};
use crate::summary::{objective, runs, Run};
use crate::tuner::TuningResult;
use crate::{Error, Result};

pub use charts::Chart;

/// Pixels of every plot (width, height).
pub const SIZE: (u32, u32) = (960, 600);

const FONT: &[u8] = include_bytes!("font/DejaVuSans.ttf");

/// An image format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Scalable vector graphics.
    Svg,
    /// PNG.
    Png,
}

impl Format {
    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Svg => "svg",
            Format::Png => "png",
        }
    }
    /// The format named by a path's extension.
    pub fn of(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "svg" => Some(Format::Svg),
            "png" => Some(Format::Png),
            _ => None,
        }
    }
}

/// Registers the bundled font once per process.
fn fonts() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        for style in [FontStyle::Normal, FontStyle::Bold] {
            plotters::style::register_font("sans-serif", style, FONT)
                .map_err(|_| "the bundled font could not be read".to_string())?;
        }
        Ok(())
    })
    .clone()
}

fn plot_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Format {
        path: path.display().to_string(),
        reason: format!("could not draw the plot: {e}"),
    }
}

/// Draws `chart` into `path` (SVG or PNG by extension), atomically.
///
/// # Errors
/// [`Error::Format`] for an unknown extension or a drawing error; [`Error::Io`].
pub fn save(path: &Path, chart: &Chart) -> Result<()> {
    fonts().map_err(|e| plot_err(path, e))?;
    let format = Format::of(path).ok_or_else(|| Error::Format {
        path: path.display().to_string(),
        reason: "unknown image format; use a `.svg` or `.png` file name".into(),
    })?;
    let (w, h) = SIZE;
    match format {
        Format::Svg => {
            let mut text = String::new();
            {
                let root = SVGBackend::with_string(&mut text, SIZE).into_drawing_area();
                chart.draw(&root).map_err(|e| plot_err(path, e))?;
                root.present().map_err(|e| plot_err(path, e))?;
            }
            write_atomic(path, text.as_bytes())
        }
        Format::Png => {
            let mut rgb = vec![0u8; (w * h * 3) as usize];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
                chart.draw(&root).map_err(|e| plot_err(path, e))?;
                root.present().map_err(|e| plot_err(path, e))?;
            }
            let mut bytes = Vec::new();
            {
                let mut enc = png::Encoder::new(&mut bytes, w, h);
                enc.set_color(png::ColorType::Rgb);
                enc.set_depth(png::BitDepth::Eight);
                enc.set_compression(png::Compression::Best);
                // Sub filtering suits plots: long runs of one colour along rows.
                enc.set_filter(png::FilterType::Sub);
                let mut writer = enc.write_header().map_err(|e| plot_err(path, e))?;
                writer
                    .write_image_data(&rgb)
                    .map_err(|e| plot_err(path, e))?;
            }
            write_atomic(path, &bytes)
        }
    }
}

/// The median best-so-far of random search on a recorded space (see
/// [`crate::summary::random_baseline`]), with the mean recorded time of one evaluation to
/// place it on a time axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Baseline {
    /// Best-so-far after 1, 2, ... evaluations.
    pub best: Vec<Option<f64>>,
    /// Mean seconds per evaluation.
    pub seconds_per_evaluation: f64,
}

impl Baseline {
    /// The baseline of a brute-forced space: every configuration's cost (`None`: failed) and
    /// the mean time one evaluation took, up to `max_k` evaluations.
    pub fn of(costs: &[Option<f64>], seconds_per_evaluation: f64, max_k: usize) -> Baseline {
        Baseline {
            best: crate::summary::random_baseline(costs, max_k),
            seconds_per_evaluation,
        }
    }
}

impl Baseline {
    /// The baseline of a recorded brute-force space (a Kernel Tuner cache), in seconds, up
    /// to `max_k` evaluations.
    pub fn of_recording(rec: &crate::simulate::Recording, max_k: usize) -> Baseline {
        let n = usize::try_from(rec.space().len()).unwrap_or(usize::MAX);
        let mut costs = Vec::with_capacity(n.min(1 << 24));
        let mut charged = 0.0;
        for i in 0..rec.space().len() {
            if let Some(r) = rec.record(i) {
                // Recorded times are milliseconds; logs hold seconds.
                costs.push(r.time.as_ref().ok().map(|ms| ms / 1e3));
                charged += r.charged.as_secs_f64();
            }
        }
        let per = charged / costs.len().max(1) as f64;
        Baseline::of(&costs, per, max_k)
    }
}

/// What the x axis of a best-so-far plot counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Evaluations.
    Evaluations,
    /// Seconds on each run's clock.
    Time,
}

/// The best-so-far chart of some runs.
pub fn convergence(
    runs: &[Run],
    axis: Axis,
    baseline: Option<&Baseline>,
    objective: &str,
) -> Chart {
    let (k, y_label) = unit(
        objective,
        runs.iter()
            .flat_map(|r| r.curve.iter().filter_map(|p| p.best)),
    );
    let series = runs
        .iter()
        .map(|r| {
            let pts = r
                .curve
                .iter()
                .filter_map(|p| {
                    let x = match axis {
                        Axis::Evaluations => p.evaluation as f64,
                        Axis::Time => p.elapsed_s,
                    };
                    p.best.map(|b| (x, b * k))
                })
                .collect();
            (r.label.clone(), pts)
        })
        .collect();
    let baseline = baseline.map(|b| {
        b.best
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let x = match axis {
                    Axis::Evaluations => (i + 1) as f64,
                    Axis::Time => (i + 1) as f64 * b.seconds_per_evaluation,
                };
                v.map(|v| (x, v * k))
            })
            .collect()
    });
    Chart::Lines {
        title: format!(
            "Best {} so far, by {}",
            label_of(objective).split(' ').next().unwrap_or(objective),
            match axis {
                Axis::Evaluations => "evaluation",
                Axis::Time => "time",
            }
        ),
        x_label: match axis {
            Axis::Evaluations => "evaluations".into(),
            Axis::Time => "time (s)".into(),
        },
        y_label,
        series,
        baseline,
    }
}

/// The distribution of the valid costs in `records`.
pub fn histogram(records: &[Record]) -> Chart {
    let objective = objective(records);
    let costs: Vec<f64> = records
        .iter()
        .filter(|r| r.is_ok())
        .filter_map(|r| r.cost)
        .filter(|c| c.is_finite())
        .collect();
    let failed = records.iter().filter(|r| !r.is_ok()).count();
    let (k, x_label) = unit(&objective, costs.iter().copied());
    Chart::Histogram {
        title: format!(
            "Distribution of {} ({} valid, {failed} failed)",
            label_of(&objective).split(' ').next().unwrap_or(&objective),
            costs.len()
        ),
        x_label,
        values: costs.iter().map(|c| c * k).collect(),
    }
}

/// The cost of every valid record against the value of parameter `param`.
pub fn cost_vs_param(records: &[Record], param: &str) -> Chart {
    let objective = objective(records);
    let mut categories: Vec<String> = Vec::new();
    let mut numeric = true;
    let mut points = Vec::new();
    for r in records.iter().filter(|r| r.is_ok()) {
        let (Some(v), Some(c)) = (r.config.get(param), r.cost.filter(|c| c.is_finite())) else {
            continue;
        };
        if v.as_f64().is_none() {
            numeric = false;
        }
        let label = v.to_string();
        let k = match categories.iter().position(|x| *x == label) {
            Some(k) => k,
            None => {
                categories.push(label);
                categories.len() - 1
            }
        };
        points.push((k, v.as_f64().unwrap_or(0.0), c));
    }
    // Numbers with few distinct values read best as evenly spaced categories too.
    let categorical = !numeric || categories.len() <= 12;
    let mut order: Vec<usize> = (0..categories.len()).collect();
    if numeric {
        order.sort_by(|&a, &b| {
            let fa = categories[a].parse::<f64>().unwrap_or(0.0);
            let fb = categories[b].parse::<f64>().unwrap_or(0.0);
            fa.total_cmp(&fb)
        });
    }
    let rank: Vec<usize> = {
        let mut r = vec![0; categories.len()];
        for (i, &k) in order.iter().enumerate() {
            r[k] = i;
        }
        r
    };
    let (f, y_label) = unit(&objective, points.iter().map(|p| p.2));
    Chart::Scatter {
        title: format!(
            "{} against {param}",
            label_of(&objective).split(' ').next().unwrap_or(&objective)
        ),
        x_label: param.to_string(),
        y_label,
        points: points
            .iter()
            .map(|&(k, x, c)| (if categorical { rank[k] as f64 } else { x }, c * f))
            .collect(),
        categories: categorical.then(|| order.iter().map(|&k| categories[k].clone()).collect()),
    }
}

fn label_of(objective: &str) -> String {
    match objective {
        "time_s" => "time (s)".into(),
        "energy_j" => "energy (J)".into(),
        other => other.to_string(),
    }
}

/// A readable unit for values of `objective`: times in s, ms or us by their size. Returns
/// the factor to multiply by and the axis label.
fn unit(objective: &str, values: impl Iterator<Item = f64>) -> (f64, String) {
    if objective != "time_s" {
        return (1.0, label_of(objective));
    }
    let m = values
        .filter(|v| v.is_finite())
        .fold(0.0f64, |a, v| a.max(v.abs()));
    if m == 0.0 || m >= 1.0 {
        (1.0, "time (s)".into())
    } else if m >= 1e-3 {
        (1e3, "time (ms)".into())
    } else {
        (1e6, "time (us)".into())
    }
}

/// Writes every plot of `records` into `dir`, in each format: `best_so_far_evaluations`,
/// `best_so_far_time`, `costs`, and `cost_vs_<param>` per parameter. Returns the files.
///
/// # Errors
/// [`Error::Io`] or [`Error::Format`].
pub fn write_all(
    dir: &Path,
    records: &[Record],
    baseline: Option<&Baseline>,
    formats: &[Format],
) -> Result<Vec<PathBuf>> {
    let objective = objective(records);
    let runs = runs(records);
    let mut charts = vec![
        (
            "best_so_far_evaluations".to_string(),
            convergence(&runs, Axis::Evaluations, baseline, &objective),
        ),
        (
            "best_so_far_time".to_string(),
            convergence(&runs, Axis::Time, baseline, &objective),
        ),
        ("costs".to_string(), histogram(records)),
    ];
    if let Some(r) = records.first() {
        for (p, _) in &r.config.0 {
            let safe: String = p
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            charts.push((format!("cost_vs_{safe}"), cost_vs_param(records, p)));
        }
    }
    let mut out = Vec::new();
    for (name, chart) in &charts {
        for f in formats {
            let path = dir.join(format!("{name}.{}", f.extension()));
            save(&path, chart)?;
            out.push(path);
        }
    }
    Ok(out)
}

impl<C: Cost> TuningResult<C> {
    /// Writes the plots of this run's records into `dir` as SVG (see [`write_all`]); for an
    /// example or a `#[tune::test]` run, next to its log.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Format`].
    pub fn write_plots(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        write_all(dir, &self.records, None, &[Format::Svg])
    }
}

#[cfg(test)]
mod tests;
