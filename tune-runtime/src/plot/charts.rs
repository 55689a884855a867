//! The three kinds of chart, drawn on any plotters backend.

use plotters::chart::MeshStyle;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// A chart's data, ready to draw.
#[derive(Clone, Debug, PartialEq)]
pub enum Chart {
    /// Best-so-far curves (drawn as steps), one per run, and an optional baseline.
    Lines {
        /// The title.
        title: String,
        /// The x axis' description.
        x_label: String,
        /// The y axis' description.
        y_label: String,
        /// `(label, points)` per curve.
        series: Vec<(String, Vec<(f64, f64)>)>,
        /// The random-search baseline.
        baseline: Option<Vec<(f64, f64)>>,
    },
    /// A histogram of values.
    Histogram {
        /// The title.
        title: String,
        /// The x axis' description.
        x_label: String,
        /// The values.
        values: Vec<f64>,
    },
    /// Points; with `categories`, x is a category's position.
    Scatter {
        /// The title.
        title: String,
        /// The x axis' description.
        x_label: String,
        /// The y axis' description.
        y_label: String,
        /// `(x, y)`.
        points: Vec<(f64, f64)>,
        /// Names of the x positions 0, 1, ..., if x is categorical.
        categories: Option<Vec<String>>,
    },
}

const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
];

const FONT: &str = "sans-serif";

/// `lo..hi` covering `values`, widened by 5% (and to a non-empty range).
fn range(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    if hi <= lo {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return (lo - pad, hi + pad);
    }
    let pad = (hi - lo) * 0.05;
    if !from_zero || lo < 0.0 {
        lo -= pad;
    }
    hi += pad;
    (lo, hi)
}

/// Short tick labels: `1.5e-3`, `250`, `12.5`.
fn tick(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(1e-2..1e5).contains(&a) {
        format!("{v:.2e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A best-so-far curve as steps: it keeps its value until the next improvement.
fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, y)) in points.iter().enumerate() {
        if i > 0 {
            out.push((x, points[i - 1].1));
        }
        out.push((x, y));
    }
    out
}

type DrawResult = Result<(), String>;

fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

impl Chart {
    /// Draws the chart on `root`.
    ///
    /// # Errors
    /// The backend's error, as text.
    pub(crate) fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult {
        root.fill(&WHITE).map_err(s)?;
        match self {
            Chart::Lines {
                title,
                x_label,
                y_label,
                series,
                baseline,
            } => lines(root, title, x_label, y_label, series, baseline.as_deref()),
            Chart::Histogram {
                title,
                x_label,
                values,
            } => histogram(root, title, x_label, values),
            Chart::Scatter {
                title,
                x_label,
                y_label,
                points,
                categories,
            } => scatter(root, title, x_label, y_label, points, categories.as_deref()),
        }
    }
}

/// The coordinates every chart draws on.
type Plane<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A chart with the common caption and margins, `y_labels` pixels wide for the y axis'
/// labels, over `x` by `y`.
fn plane<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
    y_labels: u32,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Result<Plane<'a, DB>, String> {
    ChartBuilder::on(root)
        .caption(title, (FONT, 24))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(y_labels)
        .build_cartesian_2d(x, y)
        .map_err(s)
}

/// The axes every chart has: descriptions, a light grid and [`tick`] labels (the caller may
/// set other x labels before it draws them).
fn axes<'a, 'b, DB: DrawingBackend>(
    chart: &'b mut Plane<'a, DB>,
    x_desc: &str,
    y_desc: &str,
) -> MeshStyle<'a, 'b, RangedCoordf64, RangedCoordf64, DB> {
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style((FONT, 18))
        .label_style((FONT, 14))
        .x_label_formatter(&tick_label)
        .y_label_formatter(&tick_label)
        .light_line_style(RGBColor(235, 235, 235));
    mesh
}

fn tick_label(v: &f64) -> String {
    tick(*v)
}

fn lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    baseline: Option<&[(f64, f64)]>,
) -> DrawResult {
    let all = || {
        series
            .iter()
            .flat_map(|(_, p)| p.iter())
            .chain(baseline.into_iter().flatten())
    };
    let (x0, x1) = range(all().map(|p| p.0), true);
    // The baseline starts far above the runs' best: keep it from flattening the curves.
    let top = series
        .iter()
        .flat_map(|(_, p)| p.first().map(|q| q.1))
        .chain(baseline.and_then(|b| b.get(4).map(|q| q.1)))
        .fold(f64::NEG_INFINITY, f64::max);
    let (y0, mut y1) = range(all().map(|p| p.1), false);
    if top.is_finite() && top < y1 {
        y1 = top + (top - y0) * 0.05;
    }
    let mut chart = plane(root, title, 90, x0..x1, y0..y1)?;
    axes(&mut chart, x_label, y_label).draw().map_err(s)?;
    if let Some(b) = baseline {
        chart
            .draw_series(LineSeries::new(
                steps(b).into_iter().filter(|p| p.1 <= y1),
                ShapeStyle::from(&BLACK).stroke_width(2),
            ))
            .map_err(s)?
            .label("random search (median)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    }
    for (i, (label, pts)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let clipped: Vec<(f64, f64)> = steps(pts)
            .into_iter()
            .map(|(x, y)| (x, y.min(y1)))
            .collect();
        chart
            .draw_series(LineSeries::new(clipped, color.stroke_width(2)))
            .map_err(s)?
            .label(label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    if series.is_empty() || series.iter().all(|(_, p)| p.is_empty()) {
        root.draw(&Text::new(
            "nothing valid measured yet",
            (
                root.dim_in_pixel().0 as i32 / 2 - 100,
                root.dim_in_pixel().1 as i32 / 2,
            ),
            (FONT, 20),
        ))
        .map_err(s)?;
    }
    if !series.is_empty() || baseline.is_some() {
        chart
            .configure_series_labels()
            .label_font((FONT, 15))
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(160, 160, 160))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(s)?;
    }
    Ok(())
}

fn histogram<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    values: &[f64],
) -> DrawResult {
    let (lo, hi) = range(values.iter().copied(), false);
    let bins = ((values.len() as f64).sqrt().ceil() as usize).clamp(10, 50);
    let width = (hi - lo) / bins as f64;
    let mut counts = vec![0u64; bins];
    for &v in values {
        let b = (((v - lo) / width) as usize).min(bins - 1);
        counts[b] += 1;
    }
    let max = counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let mut chart = plane(root, title, 70, lo..hi, 0.0..max * 1.08)?;
    axes(&mut chart, x_label, "configurations")
        .draw()
        .map_err(s)?;
    chart
        .draw_series(
            counts
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| {
                    let x = lo + i as f64 * width;
                    let mut bar =
                        Rectangle::new([(x, 0.0), (x + width, c as f64)], PALETTE[0].filled());
                    bar.set_margin(0, 0, 1, 1);
                    bar
                }),
        )
        .map_err(s)?;
    Ok(())
}

fn scatter<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    points: &[(f64, f64)],
    categories: Option<&[String]>,
) -> DrawResult {
    let (x0, x1) = match categories {
        Some(c) => (-0.5, c.len().max(1) as f64 - 0.5),
        None => range(points.iter().map(|p| p.0), false),
    };
    let (y0, y1) = range(points.iter().map(|p| p.1), false);
    let mut chart = plane(root, title, 90, x0..x1, y0..y1)?;
    let labels = categories.map(<[String]>::to_vec);
    let fmt = move |v: &f64| match &labels {
        Some(l) => {
            let k = v.round();
            if (v - k).abs() < 1e-6 && k >= 0.0 {
                l.get(k as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        }
        None => tick(*v),
    };
    let mut mesh = axes(&mut chart, x_label, y_label);
    mesh.x_label_formatter(&fmt);
    if let Some(c) = categories {
        mesh.x_labels(c.len() * 2 + 1).disable_x_mesh();
    }
    mesh.draw().map_err(s)?;
    // A little deterministic jitter spreads points of one category.
    let jitter = |i: usize| {
        if categories.is_some() {
            ((i.wrapping_mul(2_654_435_761) % 1000) as f64 / 1000.0 - 0.5) * 0.4
        } else {
            0.0
        }
    };
    chart
        .draw_series(
            points.iter().enumerate().map(|(i, &(x, y))| {
                Circle::new((x + jitter(i), y), 3, PALETTE[0].mix(0.45).filled())
            }),
        )
        .map_err(s)?;
    Ok(())
}
