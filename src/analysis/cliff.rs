//! The exact size where an allocator's behaviour changes, for built-in cells and
//! commands alike: the **onset**, the first size at which the metric leaves the level of
//! the low side (along its [`Trend`]) by more than its measured noise — at least 1 minor
//! fault or 0.5 memory syscalls. Bisection over the size finds the two neighbouring sizes
//! either side of it, for a step and for a ramp alike (a midpoint between the two ends'
//! values would land in the middle of a ramp). Measuring a size is the caller's (the
//! engine's [`crate::engine::probe`] or [`crate::engine::program::probe`]); the search is
//! pure.

use crate::analysis::jumps::Jump;
pub use crate::analysis::jumps::Trend;
use crate::analysis::thresholds::Threshold;
use crate::fmt::{fmt_count, group_thousands};
use crate::model::record::RunRecord;
use crate::model::run::RunSpec;

/// What flips.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Metric {
    /// Minor page faults per iteration ≥ 1.
    Faults,
    /// brk + mmap + munmap + madvise + mremap per iteration ≥ 0.5.
    Syscalls,
}

impl Metric {
    /// The metric a cliff names (its `metric` field): memory syscalls, else faults.
    pub fn of_name(name: &str) -> Metric {
        if name == Metric::Syscalls.name() {
            Metric::Syscalls
        } else {
            Metric::Faults
        }
    }

    /// Its entry in the lab's registry.
    pub fn registry(self) -> crate::model::metric::Metric {
        match self {
            Metric::Faults => crate::model::metric::MINOR_FAULTS,
            Metric::Syscalls => crate::model::metric::MEMORY_SYSCALLS,
        }
    }

    pub fn value(self, r: &RunRecord) -> Option<f64> {
        r.per_iter[self.registry()]
    }

    pub fn threshold(self) -> f64 {
        self.registry().named_from()
    }

    /// How a worker's value per iteration goes along the sizes where nothing changes:
    /// faults are the pages an iteration touches again, in proportion to the size; memory
    /// syscalls are calls, as many at any size (2 brk per iteration at 10,000 elements as
    /// at 15,000). Taken as proportional, a constant count departs from the trend
    /// by itself and bisection would chase that departure instead of the step.
    pub fn trend(self) -> Trend {
        match self {
            Metric::Faults => Trend::Proportional,
            Metric::Syscalls => Trend::Flat,
        }
    }

    pub fn name(self) -> &'static str {
        self.registry().label
    }
}

/// One measured size.
#[derive(Clone, Debug)]
pub struct Probe<R = RunRecord> {
    pub size: u64,
    pub value: f64,
    /// The spread of the value over the rounds that measured it (0 for one worker run,
    /// whose per-iteration figure is already a mean over many iterations).
    pub noise: f64,
    /// What was measured there: a worker's record, or a command's per-call figures.
    pub record: R,
}

/// A cliff as kept in a results folder.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FoundCliff {
    /// The allocator label (spec and THP mode).
    pub allocator: String,
    pub workload: crate::model::spec::Workload,
    pub variant: crate::model::spec::Variant,
    pub threads: u32,
    /// "minor faults" or "memory syscalls".
    pub metric: String,
    pub below_size: u64,
    pub below_value: f64,
    pub above_size: u64,
    pub above_value: f64,
    pub probes: usize,
    /// Why a change seen in the sweep could not be bisected (then `below_*`/`above_*`
    /// are the sweep's two sizes and values, not neighbouring sizes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unresolved: Option<String>,
    /// The threshold the cliff is at, moved with its knob, and where the cliff went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// What the calls and faults did either side, from one recorded process at each of
    /// the two sizes ([`crate::model::evidence`]); None where none was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<[crate::model::evidence::Recorded; 2]>,
}

/// A cliff's cause tested by moving it: the knob set that moves the threshold, where the
/// threshold's rule then puts the cliff, and where a second bisection under that knob set
/// found it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Confirmation {
    /// The allocator spec with the threshold moved, e.g. `jemalloc:oversize_threshold=16M`.
    pub spec: String,
    /// The threshold, as the page names it.
    pub threshold: String,
    /// The first element count on the far side of the moved threshold, by its rule.
    pub predicted: u64,
    /// The last element count the rule allows, where it is known only to a window
    /// (M_TOP_PAD's page): the cliff is predicted from `predicted` to this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_to: Option<u64>,
    /// The cliff under `spec`: the sizes either side (None: not found, see `verdict`).
    pub below: Option<u64>,
    pub above: Option<u64>,
    /// `confirmed` (the new cliff holds the prediction), `confirmed near: …` (for a
    /// cliff only near its threshold: the moved cliff holds the prediction, or lies
    /// within 3 % of it), `moved, to within 3 % …`, `moved, but not to where the rule
    /// puts it`, `did not move` (the change is still at the old sizes), `not confirmed:
    /// …` (no change found, or none in one step) or `not measured: why`.
    pub verdict: String,
}

impl Confirmation {
    /// A confirmation about to be measured: `spec` moves `threshold`.
    pub fn of(spec: &str, threshold: &Threshold) -> Self {
        Confirmation {
            spec: spec.to_string(),
            threshold: threshold.name.clone(),
            predicted: 0,
            predicted_to: None,
            below: None,
            above: None,
            verdict: String::new(),
        }
    }

    /// The moved threshold's rule: where it puts the cliff.
    pub fn predict(&mut self, rule: &Threshold) {
        let (lo, hi) = rule.elements();
        self.predicted = lo;
        self.predicted_to = (hi != lo).then_some(hi);
    }

    /// Where the cliff moved, and the verdict on it ([`confirm_verdict`]'s arguments).
    pub fn judge<R>(
        &mut self,
        at: bool,
        rule: &Threshold,
        old: (u64, u64),
        range: (u64, u64),
        metric: Metric,
        found: &Result<Cliff<R>, CliffError>,
    ) {
        if let Ok(m) = found {
            self.below = Some(m.below.size);
            self.above = Some(m.above.size);
        }
        self.verdict = confirm_verdict(at, rule, old, range, metric, found);
    }

    /// Where the moved threshold's rule puts the cliff: "1,834,497" or "16,384 to 16,640".
    pub fn predicted_text(&self) -> String {
        let g = |n: u64| crate::fmt::group_thousands(n as i64);
        match self.predicted_to {
            Some(to) if to != self.predicted => format!("{} to {}", g(self.predicted), g(to)),
            _ => g(self.predicted),
        }
    }

    /// One sentence: what was moved and where the cliff went.
    pub fn describe(&self) -> String {
        let g = |n: u64| crate::fmt::group_thousands(n as i64);
        let at = match self.predicted_to {
            Some(to) if to != self.predicted => {
                format!("between {} and {}", g(self.predicted), g(to))
            }
            _ => format!("at {}", g(self.predicted)),
        };
        match (self.below, self.above) {
            (Some(b), Some(a)) => format!(
                "under {} the cliff is between {} and {} elements, and the moved threshold's rule puts it {at}: {}",
                self.spec,
                g(b),
                g(a),
                self.verdict
            ),
            _ => format!(
                "under {} (the moved threshold's rule puts the cliff {at} elements): {}",
                self.spec,
                self.verdict
            ),
        }
    }
}

/// Where to bisect again under the moved knobs: from below both the old cliff and the
/// moved rule's window to a quarter beyond both, so that the change is found wherever it
/// went, or where it stayed.
pub fn confirm_range(old_below: u64, old_above: u64, rule: &Threshold) -> (u64, u64) {
    let (lo, hi) = rule.elements();
    (old_below.min(lo - lo / 4), old_above.max(hi + hi / 4))
}

/// The verdict on the bisection under the moved knobs (see [`Confirmation::verdict`]):
/// `at` says the cliff was at its threshold (not only near it), `old` is where it was,
/// `range` where it was looked for again, `found` what that bisection gave.
fn confirm_verdict<R>(
    at: bool,
    rule: &Threshold,
    old: (u64, u64),
    range: (u64, u64),
    metric: Metric,
    found: &Result<Cliff<R>, CliffError>,
) -> String {
    let (from, to) = range;
    match found {
        Ok(moved) => {
            let (b, a) = (moved.below.size, moved.above.size);
            let (bv, av) = (moved.below.value, moved.above.value);
            // Noise, not a step, placed a pair whose values differ by less than half the
            // margin; and a storm's onset rule is proved only by an onset.
            if (av - bv).abs() < 0.5 * moved.margin {
                return format!(
                    "not confirmed: under the moved knobs the closest sizes ({} and {} elements) are {} and {}, less than half the margin of {} apart, so noise, not a step, placed them",
                    group_thousands(b as i64),
                    group_thousands(a as i64),
                    fmt_count(bv),
                    fmt_count(av),
                    fmt_count(moved.margin)
                );
            }
            if rule.onset_only && !crate::analysis::thresholds::is_onset(metric.threshold(), bv, av)
            {
                // Where it lies is said first: a change in the rule's window that is not
                // the onset is not "not confirmed" alone, as if nothing had moved there.
                return format!(
                    "{}not confirmed: the change found under the moved knobs ({} → {}) does not rise from nothing, as the onset the rule predicts does",
                    if rule.holds(b, a) {
                        "a change lies where the moved rule puts it, but it is "
                    } else {
                        ""
                    },
                    fmt_count(bv),
                    fmt_count(av)
                );
            }
            let slack = auto_resolution(from);
            // Within 3 % of the rule's crossing point (or window): as close as a cliff
            // only near its threshold can say.
            let (lo, hi) = rule.elements();
            let mid = (b + a) as f64 / 2.0;
            let close = mid >= lo as f64 * 0.97 && mid <= hi as f64 * 1.03;
            let holds = rule.holds(b, a);
            if holds && at {
                "confirmed".into()
            } else if holds {
                "confirmed near: the threshold's cliff moved to where its rule puts it; this cliff is only near the threshold, so what else sets its place is not known".into()
            } else if close && !at {
                "confirmed near: a cliff moved with the threshold, to within 3 % of where its rule puts it; this cliff is only near the threshold".into()
            } else if close {
                "moved, to within 3 % of where the rule puts it, but not to the element".into()
            } else if a + slack >= old.0 && b <= old.1 + slack {
                "did not move".into()
            } else {
                "moved, but not to where the rule puts it".into()
            }
        }
        Err(CliffError::NoChange { .. }) => format!(
            "not confirmed: no change of {} between {} and {} elements",
            metric.name(),
            group_thousands(from as i64),
            group_thousands(to as i64)
        ),
        Err(e @ CliffError::NotAStep { .. }) => format!("not confirmed: {e}"),
        Err(e) => format!("not measured: {e}"),
    }
}

/// The resolution run-all bisects to: neighbouring sizes up to 8,192 elements, then a
/// 1/8,192 of the size (64 KiB of f64 at a million elements).
pub fn auto_resolution(size: u64) -> u64 {
    (size / 8192).max(1)
}

impl FoundCliff {
    /// Whether the change rises from nothing (see [`crate::analysis::thresholds::is_onset`]).
    pub fn onset(&self) -> bool {
        crate::analysis::thresholds::is_onset(
            Metric::of_name(&self.metric).threshold(),
            self.below_value,
            self.above_value,
        )
    }

    pub fn new(spec: &RunSpec, metric: Metric, c: &Cliff) -> Self {
        FoundCliff {
            allocator: spec.allocator_label(),
            workload: spec.workload,
            variant: spec.variant,
            threads: spec.threads,
            metric: metric.name().into(),
            below_size: c.below.size,
            below_value: c.below.value,
            above_size: c.above.size,
            above_value: c.above.value,
            probes: c.probes,
            unresolved: None,
            confirmation: None,
            evidence: None,
        }
    }

    /// A change seen between two sweep sizes that bisection could not pin down, and why.
    pub fn unresolved(spec: &RunSpec, metric: Metric, j: &Jump, why: String) -> Self {
        FoundCliff {
            allocator: spec.allocator_label(),
            workload: spec.workload,
            variant: spec.variant,
            threads: spec.threads,
            metric: metric.name().into(),
            below_size: j.from_size,
            below_value: j.from_value,
            above_size: j.to_size,
            above_value: j.to_value,
            probes: 0,
            unresolved: Some(why),
            confirmation: None,
            evidence: None,
        }
    }

    /// What changes at the cliff, from the evidence either side: the side with more of
    /// its metric read against the other by the one cause composer, per iteration; None
    /// without a recording.
    pub fn why(&self) -> Option<crate::analysis::mechanism::Why> {
        use crate::analysis::mechanism::{why, Counts, Side};
        let [below, above] = self.evidence.as_ref()?;
        let faults = self.metric == Metric::Faults.name();
        let counts = |r: &crate::model::evidence::Recorded, value: f64| {
            let mut c = r.get().map(Counts::of_evidence).unwrap_or_default();
            if faults {
                c.faults = value;
            }
            c
        };
        let g = |n: u64| format!("{} elements", crate::fmt::group_thousands(n as i64));
        let (b_name, a_name) = (g(self.below_size), g(self.above_size));
        let b = Side {
            name: &b_name,
            counts: counts(below, self.below_value),
            evidence: Some(below),
        };
        let a = Side {
            name: &a_name,
            counts: counts(above, self.above_value),
            evidence: Some(above),
        };
        let w = if self.above_value >= self.below_value {
            why(a, b, true, crate::model::evidence::Per::Iteration)
        } else {
            why(b, a, true, crate::model::evidence::Per::Iteration)
        };
        w.explains().then_some(w)
    }

    pub fn describe(&self) -> String {
        use crate::fmt::fmt_count;
        if let Some(why) = &self.unresolved {
            return format!(
                "{} {} ({}, {}): {} per iteration {} at {} elements and {} at {} in the sweep — not bisected: {why}",
                self.allocator,
                self.variant,
                self.workload,
                crate::fmt::Threads(self.threads),
                self.metric,
                fmt_count(self.below_value),
                crate::fmt::group_thousands(self.below_size as i64),
                fmt_count(self.above_value),
                crate::fmt::group_thousands(self.above_size as i64),
            );
        }
        let cause = crate::analysis::thresholds::cause(
            &self.allocator,
            self.workload.live_buffers(self.variant),
            self.onset(),
            self.below_size,
            self.above_size,
        );
        let gap = if self.above_size == self.below_size + 1 {
            String::new()
        } else {
            format!(
                " (bisected to {} elements)",
                crate::fmt::group_thousands((self.above_size - self.below_size) as i64)
            )
        };
        format!(
            "{} {} ({}, {}): {} per iteration {} at {} elements ({} B per f64 buffer), {} at {} elements{gap}",
            self.allocator,
            self.variant,
            self.workload,
            crate::fmt::Threads(self.threads),
            self.metric,
            fmt_count(self.below_value),
            fmt_count(self.below_size as f64),
            fmt_count((self.below_size * 8) as f64),
            fmt_count(self.above_value),
            fmt_count(self.above_size as f64),
        ) + &cause.short()
            + &self
                .confirmation
                .as_ref()
                .filter(|c| cause.proved_by(&c.threshold))
                .map(|c| format!("; moved: {}", c.describe()))
                .unwrap_or_default()
            + &self
                .why()
                .map(|w| format!("; what changes: {}", w.text))
                .unwrap_or_default()
    }
}

/// The two neighbouring sizes either side of the onset.
pub struct Cliff<R = RunRecord> {
    pub below: Probe<R>,
    pub above: Probe<R>,
    pub probes: usize,
    /// How far from the low side's trend a value had to be to count as past the onset.
    pub margin: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum CliffError {
    #[error("{0}")]
    Run(String),
    /// A probe not started: its bound (`--max-time`) would have passed before it ended.
    #[error("{0}")]
    OutOfTime(String),
    #[error("{bound}: the bisection stopped after {probes} probes with the change of {metric} between {} elements ({}) and {} elements ({}); a longer --max-time, or --from and --to closer around these, finds it to the element", group_thousands(*.below as i64), fmt_count(*.below_value), group_thousands(*.above as i64), fmt_count(*.above_value))]
    CutShort {
        bound: String,
        metric: &'static str,
        probes: usize,
        below: u64,
        below_value: f64,
        above: u64,
        above_value: f64,
    },
    #[error("{metric} is {} at {} and {} at {} elements: {} apart from what the low side's level ({trend}) leads to expect, within the noise margin of {}, so there is no change of behaviour to find in this range; widen it", fmt_count(*.from_value), group_thousands(*.from as i64), fmt_count(*.to_value), group_thousands(*.to as i64), fmt_count(*.departure), fmt_count(*.margin))]
    NoChange {
        metric: &'static str,
        from: u64,
        from_value: f64,
        to: u64,
        to_value: f64,
        /// `to_value` minus what the trend expects at `to`.
        departure: f64,
        margin: f64,
        trend: &'static str,
    },
    #[error("{metric} departs from the low side's trend by {} in this range, but not in one step: at the closest pair of sizes bisection reached, {} and {} elements, it is {} and {}, so the change is gradual or the level is noisy, not a cliff", fmt_count(*.departure), group_thousands(*.below as i64), group_thousands(*.above as i64), fmt_count(*.below_value), fmt_count(*.above_value))]
    NotAStep {
        metric: &'static str,
        below: u64,
        below_value: f64,
        above: u64,
        above_value: f64,
        /// The far end's departure from the trend (at the range's `to`).
        departure: f64,
    },
    #[error("{0} is unavailable in these runs: {1}")]
    Unavailable(&'static str, String),
    /// Ctrl-C during a probe: nothing past it was measured.
    #[error("interrupted during a probe at {} elements", group_thousands(*.0 as i64))]
    Interrupted(u64),
}

impl Trend {
    fn words(self) -> &'static str {
        match self {
            Trend::Proportional => "growing in proportion to the size",
            Trend::Level => "a level, with the slope measured below the range",
            Trend::Flat => "the same at every size",
        }
    }
}

/// A bound on a bisection's probes: none starts that would end after `max_time` seconds
/// from its start, each expected to cost what the last one did.
pub struct Bound {
    started: std::time::Instant,
    max_time: f64,
    last: f64,
}

impl Bound {
    /// From now, `max_time` seconds.
    pub fn new(max_time: f64) -> Self {
        Bound {
            started: std::time::Instant::now(),
            max_time,
            last: 0.0,
        }
    }

    /// Measures one probe by `f`, unless the last one's cost from now would pass the
    /// bound: then [`CliffError::OutOfTime`] (the first probes always run).
    pub fn probe<T>(&mut self, f: impl FnOnce() -> Result<T, CliffError>) -> Result<T, CliffError> {
        let now = self.elapsed();
        if now + self.last > self.max_time {
            return Err(CliffError::OutOfTime(format!(
                "--max-time {} s would pass before the next probe ended (the last took {})",
                crate::fmt::trim_float(self.max_time),
                crate::fmt::fmt_ns(self.last * 1e9)
            )));
        }
        let out = f();
        self.last = self.elapsed() - now;
        out
    }

    /// Seconds since it began.
    pub fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Seconds left of it (0 when past).
    pub fn left(&self) -> f64 {
        (self.max_time - self.elapsed()).max(0.0)
    }

    /// What the last probe cost, seconds.
    pub fn last(&self) -> f64 {
        self.last
    }
}

/// Bisects `[from, to]` for the onset of the change of `metric` (see the module), until
/// the two sides are at most `resolution` elements apart (1: neighbouring sizes).
pub fn find<R>(
    measure: &mut dyn FnMut(u64) -> Result<Probe<R>, CliffError>,
    from: u64,
    to: u64,
    metric: Metric,
    trend: Trend,
    resolution: u64,
    progress: &mut dyn FnMut(&Probe<R>),
) -> Result<Cliff<R>, CliffError> {
    let mut lo = measure(from)?;
    progress(&lo);
    let mut hi = measure(to)?;
    progress(&hi);
    let mut probes = 2;
    let (level, level_size) = (lo.value, lo.size);
    let mut margin = metric.threshold().max(2.0 * lo.noise.max(hi.noise));
    // A level series (a run's figures: start-up plus what the sizes add — the input, the
    // first touch of each buffer) is not flat: its slope below the change comes from a
    // second size on the low side, half of `from`.
    // A few rounds' spread understates the noise: twice it is the margin, and a slope
    // from two noisy sizes is uncertain in proportion to how far it reaches.
    let mut slope = 0.0;
    let mut slope_noise = 0.0;
    if trend == Trend::Level && from >= 2 {
        let reference = measure(from / 2)?;
        progress(&reference);
        probes += 1;
        margin = margin.max(2.0 * reference.noise);
        let run = (from - reference.size) as f64;
        slope = ((level - reference.value) / run).max(0.0);
        slope_noise = 2.0 * lo.noise.max(reference.noise) / run;
    }
    // A low side within its noise of nothing is nothing: scaling its noise with the
    // size would make noise look like an onset.
    let trend = if level.abs() < margin {
        Trend::Level
    } else {
        trend
    };
    let departure = |p: &Probe<R>| {
        let sloped = slope * (p.size as f64 - level_size as f64);
        p.value - trend.expect(level_size, level, p.size) - sloped
    };
    // The direction of the change is the high end's: up from the level, or down.
    let up = departure(&hi) >= 0.0;
    let past = |p: &Probe<R>| {
        let d = departure(p);
        let reach = slope_noise * p.size.abs_diff(level_size) as f64;
        (if up { d } else { -d }) >= margin + reach
    };
    if !past(&hi) {
        return Err(CliffError::NoChange {
            metric: metric.name(),
            from,
            from_value: lo.value,
            to,
            to_value: hi.value,
            departure: departure(&hi),
            margin,
            trend: trend.words(),
        });
    }
    // The whole change, at the far end, for the step test below.
    let far_departure = departure(&hi);
    while hi.size - lo.size > resolution.max(1) {
        let mid = lo.size + (hi.size - lo.size) / 2;
        let m = match measure(mid) {
            Err(CliffError::OutOfTime(bound)) => {
                return Err(CliffError::CutShort {
                    bound,
                    metric: metric.name(),
                    probes,
                    below: lo.size,
                    below_value: lo.value,
                    above: hi.size,
                    above_value: hi.value,
                })
            }
            other => other?,
        };
        progress(&m);
        probes += 1;
        if past(&m) {
            hi = m;
        } else {
            lo = m;
        }
    }
    // A cliff is a step: most of the change happens between the two sides. Bisection
    // finds where a value crosses the margin whatever the shape, so a level that only
    // drifts from the trend (a count constant while the trend expects it to grow) would
    // be reported as a "cliff" between two nearly equal values; such a change is refused
    // here, with both values. Only where the probes are exact counts (one process each,
    // no noise: the built-in workload's): a command's counts per call carry their
    // rounds' noise, and at the onset of its ramp neighbours differ by noise alone.
    // From a level (not from nothing, where reaching the threshold is the onset by
    // definition), the step must also carry half of the whole change: a count that
    // grows along a line not through zero departs from the proportional trend by a page
    // at a time, and one page is no cliff.
    let step = if up { 1.0 } else { -1.0 } * (departure(&hi) - departure(&lo));
    let exact = lo.noise == 0.0 && hi.noise == 0.0;
    // (A per-run level, start-up included, varies by a few faults from run to run: its
    // far end says nothing of a step's size.)
    let from_level = level.abs() >= margin && trend == Trend::Proportional;
    if exact
        && (step < 0.5 * departure(&hi).abs() || (from_level && step < 0.5 * far_departure.abs()))
    {
        return Err(CliffError::NotAStep {
            metric: metric.name(),
            below: lo.size,
            below_value: lo.value,
            above: hi.size,
            above_value: hi.value,
            departure: far_departure,
        });
    }
    Ok(Cliff {
        below: lo,
        above: hi,
        probes,
        margin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::metric::{BRK, MADVISE, MINOR_FAULTS, MMAP, MREMAP, MUNMAP};

    /// Under the moved knobs, a pair of sizes whose values differ by less than half the
    /// margin is noise, not the moved cliff, and a storm's onset rule is proved only by a
    /// rise from nothing: neither confirms.
    #[test]
    fn a_moved_cliff_that_is_no_step_or_no_onset_confirms_nothing() {
        let rule = crate::analysis::thresholds::known(
            "system:mmap_threshold=1M,top_pad=256K,trim_threshold=256K",
            Some(2),
        )
        .into_iter()
        .find(|t| t.name.starts_with("glibc's M_TOP_PAD"))
        .unwrap();
        let probe = |size, value| Probe {
            size,
            value,
            noise: 0.1,
            record: (),
        };
        let verdict = |bv: f64, av: f64| {
            let found: Result<Cliff<()>, CliffError> = Ok(Cliff {
                below: probe(16_501, bv),
                above: probe(16_502, av),
                probes: 10,
                margin: 1.0,
            });
            confirm_verdict(
                true,
                &rule,
                (8_333, 8_334),
                (8_333, 20_800),
                Metric::Faults,
                &found,
            )
        };
        assert_eq!(verdict(0.0, 1.0), "confirmed");
        assert!(
            verdict(0.9, 1.1).starts_with("not confirmed: under the moved knobs the closest sizes (16,501 and 16,502 elements) are 0.90 and 1.10"),
            "{}",
            verdict(0.9, 1.1)
        );
        // In the moved rule's window but no onset: where it lies is said, and that it
        // is not the predicted onset.
        assert!(
            verdict(2.0, 3.0).starts_with("a change lies where the moved rule puts it, but it is not confirmed: the change found under the moved knobs (2.00 → 3.00) does not rise from nothing"),
            "{}",
            verdict(2.0, 3.0)
        );
    }

    #[test]
    fn a_change_that_could_not_be_bisected_says_where_and_why() {
        let spec = RunSpec {
            allocator: crate::model::spec::Allocator::System,
            workload: crate::model::spec::Workload::Scale,
            variant: crate::model::spec::Variant::InPlace,
            size: 2_000_000,
            threads: 1,
            seed: 1,
            knobs: Vec::new(),
            thp: Default::default(),
            library: None,
        };
        let j = Jump {
            workload: spec.workload,
            threads: 1,
            allocator: "system".into(),
            variant: spec.variant,
            from_size: 2_000_000,
            from_value: 0.0,
            to_size: 2_965_821,
            to_value: 445.615_384_615_384_64,
            from_row: 0,
        };
        let c = FoundCliff::unresolved(&spec, Metric::Faults, &j, "the probes saw none".into());
        let text = c.describe();
        assert!(
            text.contains("0 at 2,000,000 elements and 446 at 2,965,821 in the sweep — not bisected: the probes saw none"),
            "{text}"
        );
        let json = serde_json::to_string(&c).unwrap();
        assert!(
            json.contains("\"unresolved\":\"the probes saw none\""),
            "{json}"
        );
        let back: FoundCliff = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
    }

    /// A pretend allocator whose faults start at 12,345 elements.
    fn step(record: &RunRecord, size: u64) -> Result<Probe, CliffError> {
        let mut r = record.clone();
        r.size = size;
        r.per_iter[MINOR_FAULTS] = Some(if size >= 12_345 {
            size as f64 / 512.0
        } else {
            0.0
        });
        Ok(Probe {
            size,
            value: Metric::Faults.value(&r).unwrap_or(0.0),
            noise: 0.0,
            record: r,
        })
    }

    fn template() -> RunRecord {
        let json = include_str!("../../tests/data/record.json");
        serde_json::from_str(json).unwrap()
    }

    /// Two shapes bisection would report as a "cliff" between two nearly equal values,
    /// both seen on glibc: memory syscalls constant at 2 per iteration (brk below a set
    /// mmap threshold, mmap and munmap above it) against a trend that expects them to grow
    /// with the size, and a fault count that rises gradually before its step.
    #[test]
    fn a_change_that_is_not_a_step_is_not_a_cliff() {
        let template = template();
        let constant = |size: u64| {
            let mut r = template.clone();
            r.size = size;
            for m in [BRK, MMAP, MUNMAP, MADVISE, MREMAP] {
                r.per_iter[m] = Some(0.0);
            }
            r.per_iter[BRK] = Some(2.0);
            r.per_iter.derive();
            Ok(Probe {
                size,
                value: Metric::Syscalls.value(&r).unwrap(),
                noise: 0.0,
                record: r,
            })
        };
        let mut exec = constant;
        let e = find(
            &mut exec,
            1_572_863,
            4_194_004,
            Metric::Syscalls,
            Trend::Proportional,
            1,
            &mut |_| {},
        )
        .err()
        .unwrap();
        assert!(matches!(e, CliffError::NotAStep { .. }), "{e}");
        assert!(e.to_string().contains("not in one step"), "{e}");
        // Taken as what syscalls are (the same at every size), it is no change at all.
        let e = find(
            &mut exec,
            1_572_863,
            4_194_004,
            Metric::Syscalls,
            Metric::Syscalls.trend(),
            1,
            &mut |_| {},
        )
        .err()
        .unwrap();
        assert!(matches!(e, CliffError::NoChange { .. }), "{e}");
        // Two fault counts with no step anywhere: a ramp from 0 to 1,000 faults, and a
        // line not through zero (the storm's faults grow with the part of the buffers
        // beyond what the heap keeps), which against the proportional trend departs one
        // page at a time.
        // Faults per iteration at a size, and the range.
        type Shape = (fn(u64) -> f64, u64, u64);
        let shapes: [Shape; 2] = [
            (
                |n| ((n as f64 - 100_000.0) / 100.0).max(0.0),
                100_000,
                200_000,
            ),
            (|n| ((n - 10_000) / 100) as f64, 20_000, 100_000),
        ];
        for (faults, from, to) in shapes {
            let mut exec = |size: u64| {
                let mut r = template.clone();
                r.size = size;
                r.per_iter[MINOR_FAULTS] = Some(faults(size));
                Ok(Probe {
                    size,
                    value: faults(size),
                    noise: 0.0,
                    record: r,
                })
            };
            let e = find(
                &mut exec,
                from,
                to,
                Metric::Faults,
                Trend::Proportional,
                1,
                &mut |_| {},
            )
            .err()
            .unwrap();
            assert!(
                matches!(e, CliffError::NotAStep { .. }),
                "{from}..{to}: {e}"
            );
        }
        // A real step still passes (the test below checks its neighbours).
        let mut exec = |size| step(&template, size);
        assert!(find(
            &mut exec,
            1000,
            1_000_000,
            Metric::Faults,
            Trend::Proportional,
            1,
            &mut |_| {}
        )
        .is_ok());
    }

    #[test]
    fn bisection_finds_the_exact_neighbours() {
        let template = template();
        let mut exec = |size| step(&template, size);
        let mut seen = 0;
        let c = find(
            &mut exec,
            1000,
            1_000_000,
            Metric::Faults,
            Trend::Proportional,
            1,
            &mut |_| seen += 1,
        )
        .unwrap();
        assert_eq!((c.below.size, c.above.size), (12_344, 12_345));
        assert_eq!(c.below.value, 0.0);
        assert_eq!(c.probes, seen);
        assert!(c.probes <= 2 + 20, "bisection, not a scan: {}", c.probes);
        let coarse = find(
            &mut exec,
            1000,
            1_000_000,
            Metric::Faults,
            Trend::Proportional,
            100,
            &mut |_| {},
        )
        .unwrap();
        assert!(coarse.below.size < 12_345 && coarse.above.size >= 12_345);
        assert!(coarse.above.size - coarse.below.size <= 100 && coarse.probes < c.probes);
        let e = find(
            &mut exec,
            20_000,
            30_000,
            Metric::Faults,
            Trend::Proportional,
            1,
            &mut |_| {},
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("no change of behaviour"), "{e}");
    }

    #[test]
    fn the_onset_of_a_ramp_is_found_not_its_middle_and_noise_does_not_move_it() {
        // Per call: 0.05 faults below 25,050 elements (with ±1.5 of noise between
        // rounds), then a storm whose faults grow with the size: 66 at the onset, 1,100
        // at 300,000 (NumPy's func2 under glibc).
        let mut measure = |size: u64| -> Result<Probe<()>, CliffError> {
            let wobble = if size.is_multiple_of(3) { 0.7 } else { -0.6 };
            let value = if size >= 25_050 {
                size as f64 / 380.0
            } else {
                0.05 + wobble
            };
            Ok(Probe {
                size,
                value,
                noise: 1.5,
                record: (),
            })
        };
        for trend in [Trend::Proportional, Trend::Level] {
            let c = find(
                &mut measure,
                10_000,
                300_000,
                Metric::Faults,
                trend,
                1,
                &mut |_| {},
            )
            .unwrap();
            assert_eq!((c.below.size, c.above.size), (25_049, 25_050), "{trend:?}");
            assert_eq!(c.margin, 3.0);
        }
        // Per run: 12,000 faults of start-up, then the storm adds 14,000: a level
        // series whose both ends are far above any threshold.
        let mut per_run = |size: u64| -> Result<Probe<()>, CliffError> {
            let storm = if size >= 25_050 {
                14_000.0 + size as f64 / 10.0
            } else {
                0.0
            };
            Ok(Probe {
                size,
                value: 12_000.0 + (size % 7) as f64 + storm,
                noise: 8.0,
                record: (),
            })
        };
        let c = find(
            &mut per_run,
            10_000,
            300_000,
            Metric::Faults,
            Trend::Level,
            1,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!((c.below.size, c.above.size), (25_049, 25_050));
        // A drop is an onset too (down from the level).
        let mut drop = |size: u64| -> Result<Probe<()>, CliffError> {
            Ok(Probe {
                size,
                value: if size >= 777 { 0.0 } else { 300.0 },
                noise: 0.0,
                record: (),
            })
        };
        let c = find(
            &mut drop,
            100,
            5000,
            Metric::Faults,
            Trend::Level,
            1,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!((c.below.size, c.above.size), (776, 777));
    }
}
