//! The progress bar: drawn only on a terminal, redrawn at most 10 times a second.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::abort::{AbortCondition, Progress};

/// The bar of one run; nothing is drawn when progress is off or standard error is not a
/// terminal.
pub(super) struct Bar {
    bar: Option<ProgressBar>,
    last: Instant,
    with_fraction: bool,
}

const BAR_STEPS: u64 = 10_000;

impl Bar {
    pub(super) fn new(on: bool) -> Bar {
        let bar = (on && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(Some(BAR_STEPS), ProgressDrawTarget::stderr());
            b.set_style(spinner_style());
            b
        });
        Bar {
            bar,
            last: Instant::now(),
            with_fraction: false,
        }
    }

    pub(super) fn update(&mut self, p: &Progress, abort: &dyn AbortCondition, force: bool) {
        let Some(bar) = &self.bar else {
            return;
        };
        if !force && self.last.elapsed() < Duration::from_millis(100) {
            return;
        }
        self.last = Instant::now();
        let fraction = abort.fraction(p);
        if fraction.is_some() != self.with_fraction {
            self.with_fraction = fraction.is_some();
            bar.set_style(if self.with_fraction {
                bar_style()
            } else {
                spinner_style()
            });
        }
        if let Some(f) = fraction {
            bar.set_position((f * BAR_STEPS as f64) as u64);
        } else {
            bar.tick();
        }
        bar.set_message(message(p));
    }

    pub(super) fn finish(&mut self, p: &Progress) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            eprintln!("{} in {:.2?}", message(p), p.elapsed);
        }
    }
}

fn message(p: &Progress) -> String {
    let secs = p.elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        p.evaluations as f64 / secs
    } else {
        0.0
    };
    format!(
        "{} evaluated ({} valid), best {}, {rate:.1}/s",
        p.evaluations,
        p.valid,
        p.best.map_or("-".into(), |b| format!("{b:.4e}"))
    )
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} eta {eta} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}
