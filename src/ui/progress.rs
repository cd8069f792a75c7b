//! The one progress display of every command that runs many workers or programs: an
//! indicatif bar with ETA on a terminal; otherwise (logs, CI) a line at every tenth of the
//! runs (every run of a session of 20 or fewer), and every failure.
//! `ALLOCLAB_PROGRESS=runs` gives a line per run there, `ALLOCLAB_PROGRESS=none` none
//! but the failures.

use crate::fmt::fmt_duration;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

/// What is left of a session whose items differ by orders of magnitude, learned while
/// it runs (the lab's is `crate::analysis::eta::Eta`; this module does not compute it).
pub trait Estimate {
    /// An item of group `key` took `seconds`.
    fn done(&mut self, key: &str, seconds: f64);
    /// An item of group `key` needs no doing (kept from before).
    fn skip(&mut self, key: &str);
    /// Group `key` (in `part`) now has exactly `count` items left, each guided at `guide`
    /// seconds.
    fn replan(&mut self, key: &str, part: &str, count: usize, guide: f64);
    /// Seconds left, once anything has been measured.
    fn remaining(&self) -> Option<f64>;
}

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
    /// When runs differ a lot: what is left, learned from the runs measured so far.
    estimate: Option<Box<dyn Estimate>>,
    /// When the current run or item of work started.
    item_started: Instant,
    /// Without a bar: which runs get a line.
    lines: Lines,
}

/// Which runs get a line when there is no bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lines {
    /// Every run (`ALLOCLAB_PROGRESS=runs`).
    Every,
    /// The first, the last and one at every tenth of the session (the default).
    Tenths,
    /// None but the failures (`ALLOCLAB_PROGRESS=none`).
    Failures,
}

impl Lines {
    fn from_env() -> Self {
        match std::env::var("ALLOCLAB_PROGRESS").as_deref() {
            Ok("runs") => Lines::Every,
            Ok("none") => Lines::Failures,
            _ => Lines::Tenths,
        }
    }

    /// Whether run `n` (from 1) of `total` gets its line.
    fn shows(self, n: usize, total: usize) -> bool {
        match self {
            Lines::Every => true,
            Lines::Failures => false,
            Lines::Tenths => {
                total <= 20 || n <= 1 || n >= total || n * 10 / total != (n - 1) * 10 / total
            }
        }
    }
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
            estimate: None,
            item_started: Instant::now(),
            lines: Lines::from_env(),
        }
    }

    /// A display for `count` runs of different cost, planned in `eta`: each run ends with
    /// [`Progress::finish_planned`] or [`Progress::skip_planned`] naming its group.
    pub fn planned(count: usize, eta: Box<dyn Estimate>) -> Self {
        Progress {
            estimate: Some(eta),
            ..Progress::new(count)
        }
    }

    /// The current run, of group `key`, is over.
    pub fn finish_planned(&mut self, key: &str) {
        self.work_done(key);
        self.advance();
    }

    /// A run of group `key` is skipped (already done): it counts towards the position,
    /// not the rate.
    pub fn skip_planned(&mut self, key: &str) {
        if let Some(e) = &mut self.estimate {
            e.skip(key);
        }
        self.advance();
    }

    /// An item of work that is not one of the counted runs (a bisection probe) starts now.
    pub fn work_started(&mut self) {
        self.item_started = Instant::now();
    }

    /// The item of work of group `key` started last is over: the ETA learns its time.
    pub fn work_done(&mut self, key: &str) {
        let seconds = self.item_started.elapsed().as_secs_f64();
        if let Some(e) = &mut self.estimate {
            e.done(key, seconds);
        }
        self.show_eta();
    }

    /// Group `key` now has exactly `count` items left, each guided at `guide` seconds.
    pub fn replan(&mut self, key: &str, part: &str, count: usize, guide: f64) {
        if let Some(e) = &mut self.estimate {
            e.replan(key, part, count, guide);
        }
        self.show_eta();
    }

    /// A display whose runs end with a result to show ([`Progress::finish_with`]): without
    /// a terminal, one line per run when it ends, `[3/9] what: result`.
    pub fn with_results(total: usize) -> Self {
        Progress {
            lines_at_end: true,
            ..Progress::new(total)
        }
    }

    /// Adds `more` runs to the number planned.
    pub fn add_runs(&mut self, more: usize) {
        self.set_total(self.total + more);
    }

    /// `by` fewer runs than planned (a bound cut the plan).
    pub fn shorten(&mut self, by: usize) {
        self.set_total(self.total.saturating_sub(by));
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
        let left = match &self.estimate {
            Some(e) => match e.remaining() {
                Some(left) => left,
                None => return "ETA …".into(),
            },
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
        self.item_started = Instant::now();
        self.show_eta();
        match &self.bar {
            Some(bar) => bar.set_message(what.to_string()),
            None if self.lines_at_end || !self.lines.shows(self.done + 1, self.total) => {}
            None => crate::fmt::say!("[{}/{}] {what} ({})", self.done + 1, self.total, self.eta()),
        }
    }

    /// The current run is over with `result` (a time, or why it failed); a failure is
    /// also kept above the bar on a terminal.
    /// Without a bar, the line ends with the ETA of what is left.
    pub fn finish_with(&mut self, result: &str, failed: bool) {
        let shown = self.bar.is_none() && (failed || self.lines.shows(self.done + 1, self.total));
        if let (Some(_), true) = (&self.bar, failed) {
            self.say(&format!("{}: {result}", self.current));
        }
        self.finish_one();
        if shown {
            let eta = if self.done < self.total {
                format!(" ({})", self.eta())
            } else {
                String::new()
            };
            crate::fmt::say!(
                "[{}/{}] {}: {result}{eta}",
                self.done,
                self.total,
                self.current
            );
        }
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
            Some(bar) => bar.suspend(|| crate::fmt::say!("{msg}")),
            None => crate::fmt::say!("{msg}"),
        }
    }

    /// Runs `f` with the bar out of the way (a result printed on stdout meanwhile does
    /// not mix with the bar on stderr).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// All runs are over: the bar gives way to one line with the total time.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            crate::fmt::say!(
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
    fn without_a_terminal_a_long_session_says_a_line_per_tenth_and_a_short_one_every_run() {
        let shown = |lines: Lines, total: usize| -> Vec<usize> {
            (1..=total).filter(|&n| lines.shows(n, total)).collect()
        };
        assert_eq!(shown(Lines::Tenths, 12), (1..=12).collect::<Vec<_>>());
        let long = shown(Lines::Tenths, 144);
        assert_eq!(long.first(), Some(&1));
        assert_eq!(long.last(), Some(&144));
        assert_eq!(long.len(), 11, "{long:?}");
        assert_eq!(shown(Lines::Tenths, 24_000).len(), 11);
        assert_eq!(shown(Lines::Every, 144).len(), 144);
        assert!(shown(Lines::Failures, 144).is_empty());
    }

    #[test]
    fn planned_progress_counts_skips_towards_the_position_not_the_rate() {
        /// Knows a rate once one item is done: what the display shows is its business.
        #[derive(Default)]
        struct Learned(Option<f64>);
        impl Estimate for Learned {
            fn done(&mut self, _: &str, seconds: f64) {
                self.0 = Some(seconds);
            }
            fn skip(&mut self, _: &str) {}
            fn replan(&mut self, _: &str, _: &str, _: usize, _: f64) {}
            fn remaining(&self) -> Option<f64> {
                self.0
            }
        }
        let mut p = Progress::planned(3, Box::<Learned>::default());
        p.skip_planned("a");
        assert_eq!(p.eta(), "ETA …", "no measured run yet: no rate");
        p.start("a run");
        p.finish_planned("a");
        assert_eq!(p.done, 2);
        assert!(p.eta().starts_with("ETA "), "{}", p.eta());
        p.clear();
    }
}
