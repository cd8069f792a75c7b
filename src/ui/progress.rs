//! The one progress display of every command that runs many workers or programs: an
//! indicatif bar with ETA on a terminal, one line per run otherwise (logs, CI).

use crate::ui::fmt::fmt_duration;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

/// Progress on stderr over a known number of runs.
pub struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    /// The bar, on a terminal; `None` writes one line per run.
    bar: Option<ProgressBar>,
    /// Without a bar: write each run's line when it ends, with its result
    /// ([`Progress::finish_with`]), instead of when it starts.
    lines_at_end: bool,
    /// What the current run is, for its line at the end.
    current: String,
    /// Units of expected cost not yet done, when runs differ a lot: the ETA is then the
    /// time per unit of the runs measured so far times the units left.
    remaining_weight: Option<f64>,
    /// Units of the runs measured so far (runs skipped as already done not counted).
    measured_weight: f64,
}

impl Progress {
    /// A display for `total` runs: a bar when stderr is a terminal.
    pub fn new(total: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            // The template is a constant; the fallback keeps the default style.
            if let Ok(style) =
                ProgressStyle::with_template("[{bar:24}] {pos}/{len} {prefix}  {wide_msg}")
            {
                bar.set_style(style.progress_chars("#>."));
            }
            bar
        });
        Progress {
            total,
            done: 0,
            started: Instant::now(),
            bar,
            lines_at_end: false,
            current: String::new(),
            remaining_weight: None,
            measured_weight: 0.0,
        }
    }

    /// A display for `count` runs of different expected cost, `total_weight` units in
    /// all: the ETA weighs the runs left by their cost instead of counting them (each run
    /// ends with [`Progress::finish_weighted`] or [`Progress::skip_weighted`]).
    pub fn weighted(count: usize, total_weight: f64) -> Self {
        Progress {
            remaining_weight: Some(total_weight),
            ..Progress::new(count)
        }
    }

    /// The current run, of expected cost `weight`, is over.
    pub fn finish_weighted(&mut self, weight: f64) {
        self.measured_weight += weight;
        self.skip_weighted(weight);
    }

    /// A run of expected cost `weight` is skipped (already done): it counts towards the
    /// position, not the rate.
    pub fn skip_weighted(&mut self, weight: f64) {
        if let Some(r) = &mut self.remaining_weight {
            *r = (*r - weight).max(0.0);
        }
        self.advance();
    }

    /// A display whose runs end with a result to show ([`Progress::finish_with`]): without
    /// a terminal, one line per run when it ends, `[3/9] what: result`.
    pub fn with_results(total: usize) -> Self {
        Progress {
            lines_at_end: true,
            ..Progress::new(total)
        }
    }

    /// Changes the number of runs (once a session knows it).
    pub fn set_total(&mut self, total: usize) {
        self.total = total;
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
        }
    }

    fn eta(&self) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let left = match self.remaining_weight {
            Some(_) if self.measured_weight <= 0.0 => return "ETA …".into(),
            Some(rest) => elapsed / self.measured_weight * rest,
            None if self.done == 0 => return "ETA …".into(),
            None => elapsed / self.done as f64 * self.total.saturating_sub(self.done) as f64,
        };
        format!("ETA {}", fmt_duration(left))
    }

    /// Shows the count and the ETA on the bar (indicatif's own ETA counts runs alike).
    fn show_eta(&self) {
        if let Some(bar) = &self.bar {
            bar.set_prefix(self.eta());
        }
    }

    /// A run starts: `what` names it.
    pub fn start(&mut self, what: &str) {
        self.current = what.to_string();
        self.show_eta();
        match &self.bar {
            Some(bar) => bar.set_message(what.to_string()),
            None if self.lines_at_end => {}
            None => eprintln!("[{}/{}] {what} ({})", self.done + 1, self.total, self.eta()),
        }
    }

    /// The current run is over with `result` (a time, or why it failed); a failure is
    /// also kept above the bar on a terminal.
    pub fn finish_with(&mut self, result: &str, failed: bool) {
        match &self.bar {
            Some(_) if failed => self.say(&format!("{}: {result}", self.current)),
            Some(_) => {}
            None => eprintln!(
                "[{}/{}] {}: {result}",
                self.done + 1,
                self.total,
                self.current
            ),
        }
        self.finish_one();
    }

    /// The current run is over.
    pub fn finish_one(&mut self) {
        self.advance();
    }

    fn advance(&mut self) {
        self.done += 1;
        if let Some(bar) = &self.bar {
            bar.set_position(self.done as u64);
        }
        self.show_eta();
    }

    /// Prints a message on its own line (above the bar on a terminal).
    pub fn say(&self, msg: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{msg}")),
            None => eprintln!("{msg}"),
        }
    }

    /// All runs are over: the bar gives way to one line with the total time.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            eprintln!(
                "{}/{} runs in {}",
                self.done,
                self.total,
                fmt_duration(self.started.elapsed().as_secs_f64())
            );
        }
    }

    /// Removes the bar without a summary line (before an error message).
    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_progress_counts_the_units_left_and_skips_do_not_set_the_rate() {
        let mut p = Progress::weighted(3, 10.0);
        assert_eq!(p.remaining_weight, Some(10.0));
        p.skip_weighted(1.0);
        assert_eq!((p.remaining_weight, p.measured_weight), (Some(9.0), 0.0));
        assert_eq!(p.eta(), "ETA …", "no measured run yet: no rate");
        p.finish_weighted(1.0);
        assert_eq!((p.remaining_weight, p.measured_weight), (Some(8.0), 1.0));
        assert_eq!(p.done, 2);
        p.clear();
    }
}
