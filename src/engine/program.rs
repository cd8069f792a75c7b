//! Your program at any size: a command as a template with `{size}` (and `{calls}`), run
//! under each allocator through `exec`'s sessions, measured per call, and bisected to the
//! exact size where its faults or memory syscalls per call change.
//!
//! With `{calls}` every allocator runs the command at N and at 2N calls, both in every
//! (shuffled) round; the per-round difference divided by N is one call's cost with the
//! program's start-up, imports and input set-up left out. Without it, a run's figures are
//! divided by `--calls` (start-up included), or kept per run.

use super::command::{run_session, ExecRecord, ExecSettings, Observer, SessionError};
use crate::analysis::cliff::{Metric, Probe, Trend};
use crate::analysis::command::{self as output, medians};
use crate::analysis::jumps::{changes, Point};
use crate::analysis::stats::{median, median_ci};
use crate::fmt::{fmt_count, group_thousands};
use crate::model::command::ExecRun;
use crate::model::metric::{
    CallFigures, Figures, Metric as MetricEntry, PerIteration, Source, SourceTotals, RUN_PEAK_RSS,
};
use crate::model::summary::RunStatus;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// The placeholder replaced with the size, in elements.
pub const SIZE: &str = "{size}";
/// The placeholder replaced with the number of calls a run makes.
pub const CALLS: &str = "{calls}";

/// A command whose arguments may hold `{size}` and `{calls}`.
#[derive(Clone, Debug)]
pub struct Template {
    /// The command and its arguments, placeholders not yet replaced.
    pub words: Vec<OsString>,
}

impl Template {
    /// A template of `words`, as given.
    pub fn new(words: Vec<OsString>) -> Self {
        Template { words }
    }

    /// Whether any argument holds `placeholder`.
    pub fn has(&self, placeholder: &str) -> bool {
        let p = placeholder.as_bytes();
        self.words
            .iter()
            .any(|w| w.as_bytes().windows(p.len()).any(|x| x == p))
    }

    /// The command with its placeholders replaced (bytes outside them kept as given).
    pub fn render(&self, size: Option<u64>, calls: Option<u64>) -> Vec<OsString> {
        self.words
            .iter()
            .map(|w| {
                let mut b = w.as_bytes().to_vec();
                if let Some(s) = size {
                    b = replace(&b, SIZE.as_bytes(), s.to_string().as_bytes());
                }
                if let Some(c) = calls {
                    b = replace(&b, CALLS.as_bytes(), c.to_string().as_bytes());
                }
                OsString::from_vec(b)
            })
            .collect()
    }

    /// Checks the placeholders against what the command is asked to do: `{size}` where
    /// sizes are given, `{calls}` only with `--calls`.
    pub fn check(&self, needs_size: bool, calls: Option<u64>) -> Result<(), String> {
        if needs_size && !self.has(SIZE) {
            return Err(format!(
                "the command has no {SIZE}: put it where the command takes its input size, e.g. `-- python3 experiments/numpy_temporaries.py --size {SIZE} --calls {CALLS} --only func2` (the lab replaces it with each size)"
            ));
        }
        if self.has(CALLS) && calls.is_none() {
            return Err(format!(
                "the command has {CALLS} but no --calls N was given: say how many calls a run makes (e.g. --calls 50)"
            ));
        }
        Ok(())
    }

    /// How figures are made per call: N and 2N calls with `{calls}`, else divided by
    /// `calls`, else per run.
    pub fn per(&self, calls: Option<u64>) -> Per {
        match calls {
            Some(n) if self.has(CALLS) => Per::Difference(n),
            Some(n) => Per::Divide(n),
            None => Per::Run,
        }
    }
}

fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// How a run's figures become per-call figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Per {
    /// `{calls}`: runs at N and at 2N calls, the difference over N.
    Difference(u64),
    /// `--calls N` without `{calls}`: a run's figures over N, start-up included.
    Divide(u64),
    /// Per run.
    Run,
}

impl Per {
    /// What the figures are per: "call" or "run".
    pub fn unit(self) -> &'static str {
        match self {
            Per::Run => "run",
            _ => "call",
        }
    }

    /// How the figures were made, for reports.
    pub fn describe(self) -> String {
        match self {
            Per::Difference(n) => format!(
                "per call: every allocator ran the command at {} and at {} calls in every round; each round's difference over {} calls leaves out start-up and set-up",
                group_thousands(n as i64),
                group_thousands(2 * n as i64),
                group_thousands(n as i64)
            ),
            Per::Divide(n) => format!(
                "per call: each run's figures over its {} calls, start-up included (give {CALLS} in the command to leave it out)",
                group_thousands(n as i64)
            ),
            Per::Run => "per run of the command, start-up included".into(),
        }
    }

    /// What `metric`'s figures do along the sizes where behaviour does not change: faults
    /// as a difference per call grow with what a call touches, and a run's faults carry
    /// the start-up's level; memory syscalls are calls, as many at any size (start-up's
    /// included), as for the built-in workload ([`Metric::trend`]).
    pub fn trend(self, metric: Metric) -> Trend {
        match (metric, self) {
            (Metric::Syscalls, _) => Trend::Flat,
            (Metric::Faults, Per::Difference(_)) => Trend::Proportional,
            (Metric::Faults, Per::Divide(_) | Per::Run) => Trend::Level,
        }
    }

    fn divisor(self) -> f64 {
        match self {
            Per::Difference(n) | Per::Divide(n) => n as f64,
            Per::Run => 1.0,
        }
    }
}

/// Suffix of the rows that ran 2N calls.
const TWICE: &str = " (2N calls)";

/// One allocator at one size, per call (or per run).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointRow {
    /// The size `{size}` was replaced with, in elements (0 without one).
    pub size: u64,
    /// The allocator's label, as its spec was given.
    pub allocator: String,
    /// Failed where the allocator's row failed (either row, with N and with 2N calls).
    pub status: RunStatus,
    /// Why it failed; None when it did not.
    pub error: Option<String>,
    /// Rounds measured.
    pub runs: usize,
    /// "call" or "run".
    pub per: String,
    /// Wall time per call: median over the rounds, its 95 % interval and coverage.
    pub time_ns: Option<f64>,
    /// Lower end of that interval, in ns.
    pub time_ci_low_ns: Option<f64>,
    /// Upper end of that interval, in ns.
    pub time_ci_high_ns: Option<f64>,
    /// The coverage that interval reaches with this many rounds (a fraction).
    pub ci_coverage: Option<f64>,
    /// Faults and memory syscalls per call (or run): the faults the median over the
    /// rounds of each round's figure, the syscalls from the runs' medians (the traced
    /// run's with ptrace); their spread over the rounds. In CSV and JSON one column each
    /// ([`crate::model::metric::PER_CALL`]'s stems, then `<stem>_noise`).
    #[serde(flatten)]
    pub per_call: CallFigures,
    /// Peak RSS of the (longer) run, median over rounds.
    pub peak_rss_mib: Option<f64>,
    /// Median wall time of a whole (longer) run.
    pub run_wall_ms: Option<f64>,
    /// How syscalls were counted ("perf", "ptrace"), or why they were not.
    pub syscall_counter: String,
}

impl PointRow {
    /// Its figure of `m` per call (or run): minor faults or memory syscalls; None where unknown.
    pub fn value(&self, m: Metric) -> Option<f64> {
        self.per_call.value[m.registry()]
    }

    /// The spread of `m` over the rounds (0 where unknown).
    pub fn noise(&self, m: Metric) -> f64 {
        self.per_call.noise[m.registry()].unwrap_or(0.0)
    }
}

/// max − min of `v` (None when empty).
fn spread(v: &[f64]) -> Option<f64> {
    let max = v.iter().copied().reduce(f64::max)?;
    let min = v.iter().copied().reduce(f64::min)?;
    Some(max - min)
}

/// The per-call rows of a session made by [`measure`], one per allocator.
pub fn point_rows(record: &ExecRecord, size: u64, per: Per) -> Vec<PointRow> {
    let rows = output::rows(record);
    let step = if matches!(per, Per::Difference(_)) {
        2
    } else {
        1
    };
    let d = per.divisor();
    let mut out = Vec::new();
    for i in (0..rows.len()).step_by(step) {
        let (base, long) = (&rows[i], &rows[i + step - 1]);
        let (ra, la) = (&record.allocators[i], &record.allocators[i + step - 1]);
        let failure = base.error.clone().or_else(|| long.error.clone());
        let mut p = PointRow {
            size,
            allocator: base.allocator.clone(),
            status: if failure.is_none() {
                RunStatus::Ok
            } else {
                RunStatus::Failed
            },
            error: failure,
            per: per.unit().into(),
            syscall_counter: base.syscall_counter.clone(),
            ..Default::default()
        };
        // Per round: the longer run minus the shorter one (or the run itself), each
        // figure per call.
        let of = |r: &ExecRun| Figures::of_totals(&SourceTotals::of_run(&r.usage, r.syscalls));
        let rounds: Vec<(f64, Figures)> = la
            .runs
            .iter()
            .filter_map(|l| {
                if step == 1 {
                    return Some((l.wall_ns as f64 / d, of(l).divided(d)));
                }
                let b = ra.runs.iter().find(|b| b.round == l.round)?;
                Some((
                    (l.wall_ns as f64 - b.wall_ns as f64) / d,
                    of(l).zip(&of(b), |x, y| Some((x - y) / d)),
                ))
            })
            .collect();
        p.runs = rounds.len();
        if !rounds.is_empty() {
            let t: Vec<f64> = rounds.iter().map(|x| x.0).collect();
            p.time_ns = median(&t);
            if let Some(ci) = median_ci(&t, record.confidence) {
                p.time_ci_low_ns = Some(ci.low);
                p.time_ci_high_ns = Some(ci.high);
                p.ci_coverage = Some(ci.coverage);
            }
            // Of each figure: its values over the rounds, where every round has it.
            let over_rounds =
                |m: MetricEntry| -> Option<Vec<f64>> { rounds.iter().map(|(_, f)| f[m]).collect() };
            // The syscalls from the rows' medians (with ptrace: the traced run's).
            let traced = record.syscall_counter == "ptrace";
            let (fl, fb) = (medians::<PerIteration>(la, traced), medians(ra, traced));
            let from_rows = if step == 1 {
                fl.divided(d)
            } else {
                fl.zip(&fb, |x, y| Some((x - y) / d))
            };
            p.per_call = CallFigures {
                value: Figures::each(|m| match m.source {
                    Source::Syscalls => from_rows[m],
                    _ => over_rounds(m).and_then(|v| median(&v)),
                }),
                noise: Figures::each(|m| {
                    over_rounds(m).and_then(|v| spread(&v)).filter(|_| m.spread)
                }),
            };
            p.peak_rss_mib = long.per_run[RUN_PEAK_RSS];
            p.run_wall_ms = long.wall_median_ms;
        }
        out.push(p);
    }
    out
}

/// Runs `base`'s allocators on `template` at `size` (`runs` rounds after `warmup`), and
/// returns the session's record and its per-call rows.
pub fn measure(
    base: &ExecSettings,
    template: &Template,
    size: Option<u64>,
    per: Per,
    observer: &mut dyn Observer,
    save: &mut dyn FnMut(&ExecRecord) -> Result<(), String>,
) -> Result<(ExecRecord, Vec<PointRow>), SessionError> {
    let (command, second) = match per {
        Per::Difference(n) => (
            template.render(size, Some(n)),
            Some((template.render(size, Some(2 * n)), TWICE.to_string())),
        ),
        Per::Divide(n) => (template.render(size, Some(n)), None),
        Per::Run => (template.render(size, None), None),
    };
    let settings = ExecSettings {
        command,
        second,
        ..base.clone()
    };
    let record = run_session(&settings, observer, save)?;
    let rows = point_rows(&record, size.unwrap_or(0), per);
    Ok((record, rows))
}

/// One bisection probe: the allocator of `base` (one allocator) at `size`, its value of
/// `metric` per call.
pub fn probe(
    base: &ExecSettings,
    template: &Template,
    size: u64,
    per: Per,
    metric: Metric,
    observer: &mut dyn Observer,
) -> Result<Probe<PointRow>, crate::analysis::cliff::CliffError> {
    use crate::analysis::cliff::CliffError;
    let (record, rows) = measure(base, template, Some(size), per, observer, &mut |_| Ok(()))
        .map_err(|e| CliffError::Run(e.to_string()))?;
    if !record.complete {
        return Err(CliffError::Interrupted(size));
    }
    let row = rows
        .into_iter()
        .next()
        .ok_or_else(|| CliffError::Run("no allocator ran".into()))?;
    if let Some(e) = &row.error {
        return Err(CliffError::Run(format!(
            "the command failed at size {size}: {e}"
        )));
    }
    let value = row.value(metric).ok_or_else(|| {
        CliffError::Unavailable(metric.name(), format!("syscalls: {}", row.syscall_counter))
    })?;
    Ok(Probe {
        size,
        value,
        noise: row.noise(metric),
        record: row,
    })
}

/// A change between neighbouring sizes of a sweep: `metric` per call changes between
/// rows `from` and `to` of one allocator.
#[derive(Clone, Debug, PartialEq)]
pub struct Jump {
    /// The allocator's label.
    pub allocator: String,
    /// What changes: minor faults or memory syscalls.
    pub metric: Metric,
    /// The smaller of the two sizes, in elements.
    pub from_size: u64,
    /// `metric` per call (or run) at `from_size`.
    pub from_value: f64,
    /// The larger of the two sizes, in elements.
    pub to_size: u64,
    /// `metric` per call (or run) at `to_size`.
    pub to_value: f64,
}

/// Every change of faults or memory syscalls between neighbouring measured sizes,
/// allocator by allocator (failed rows skipped over), by the lab's one rule
/// ([`crate::analysis::jumps::changes`]): at least the metric's threshold and the noise of
/// both sizes, and a change of rate beyond the figures' own trend.
pub fn jumps(rows: &[PointRow], per: Per) -> Vec<Jump> {
    let mut names: Vec<&str> = Vec::new();
    for r in rows {
        if !names.contains(&r.allocator.as_str()) {
            names.push(&r.allocator);
        }
    }
    let mut out = Vec::new();
    for metric in [Metric::Faults, Metric::Syscalls] {
        for name in &names {
            let mut mine: Vec<Point> = rows
                .iter()
                .filter(|r| r.allocator == *name && r.status.is_ok())
                .filter_map(|r| {
                    Some(Point {
                        size: r.size,
                        value: r.value(metric)?,
                        noise: r.noise(metric),
                    })
                })
                .collect();
            mine.sort_by_key(|p| p.size);
            for i in changes(&mine, per.trend(metric), metric.threshold()) {
                let (a, b) = (mine[i], mine[i + 1]);
                out.push(Jump {
                    allocator: name.to_string(),
                    metric,
                    from_size: a.size,
                    from_value: a.value,
                    to_size: b.size,
                    to_value: b.value,
                });
            }
        }
    }
    out
}

/// A change bisected to the exact size, or why it could not be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommandCliff {
    /// The allocator's label.
    pub allocator: String,
    /// What changes: "minor faults" or "memory syscalls".
    pub metric: String,
    /// The smallest change of `metric` per call (or run) that counts.
    pub threshold: f64,
    /// The neighbouring sizes of the sweep the change lies between, and their values.
    pub sweep_from: u64,
    /// `metric` per call (or run) at `sweep_from`.
    pub sweep_from_value: f64,
    /// The larger of the two sweep sizes, in elements.
    pub sweep_to: u64,
    /// `metric` per call (or run) at `sweep_to`.
    pub sweep_to_value: f64,
    /// The exact sizes either side (one element apart, or the resolution asked for).
    pub below_size: Option<u64>,
    /// `metric` per call (or run) at `below_size`.
    pub below_value: Option<f64>,
    /// The larger of the two exact sizes, in elements (None where not bisected).
    pub above_size: Option<u64>,
    /// `metric` per call (or run) at `above_size`.
    pub above_value: Option<f64>,
    /// How many sizes the bisection measured (None where it found no exact size).
    pub probes: Option<usize>,
    /// How far from the low side's level a value had to be to count as past the onset
    /// (the threshold, or the measured noise where larger).
    #[serde(default)]
    pub margin: Option<f64>,
    /// Why there is no exact size.
    pub unresolved: Option<String>,
    /// Measured again, the two sizes' values were within the noise margin of each other:
    /// the sweep's difference was noise, no change (`unresolved` says the figures).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub noise: bool,
    /// What the calls and faults did at `below_size` and `above_size`, from one recorded
    /// run each; None where none was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<[crate::model::evidence::Recorded; 2]>,
    /// The allocator's known threshold at the cliff, near it, or none (with
    /// `--bytes-per-element`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_it: Option<String>,
    /// The cliff bisected again with that threshold moved by its knob (`--confirm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<crate::analysis::cliff::Confirmation>,
}

impl CommandCliff {
    /// One line for people: the exact sizes and values (or why there are none), what is behind
    /// the change and its confirmation; `unit` is what the values are per ("call" or "run").
    pub fn describe(&self, unit: &str) -> String {
        let mut line = self.describe_sizes(unit);
        if let Some(b) = &self.behind_it {
            line.push_str(&format!("; behind it: {b}"));
        }
        if let Some(c) = &self.confirmation {
            line.push_str(&format!("; moved: {}", c.describe()));
        }
        if let Some(w) = self.why() {
            line.push_str(&format!("; what changes: {}", w.text));
        }
        line
    }

    /// What changes at the cliff, from the evidence either side ([`why_across`]).
    pub fn why(&self) -> Option<crate::analysis::mechanism::Why> {
        why_across(
            (self.below_size?, self.above_size?),
            (self.below_value?, self.above_value?),
            self.evidence.as_ref()?,
        )
    }

    fn describe_sizes(&self, unit: &str) -> String {
        match (self.below_size, self.above_size, &self.unresolved) {
            (Some(b), Some(a), _) => format!(
                "{} {}: {} per {unit} at {} elements, {} at {} ({} probes)",
                self.allocator,
                self.metric,
                fmt_count(self.below_value.unwrap_or(f64::NAN)),
                group_thousands(b as i64),
                fmt_count(self.above_value.unwrap_or(f64::NAN)),
                group_thousands(a as i64),
                self.probes.unwrap_or(0)
            ),
            (_, _, why) if self.noise => format!(
                "{} {}: {} at {} and {} at {} elements per {unit} in the sweep, no change: {}",
                self.allocator,
                self.metric,
                fmt_count(self.sweep_from_value),
                group_thousands(self.sweep_from as i64),
                fmt_count(self.sweep_to_value),
                group_thousands(self.sweep_to as i64),
                why.as_deref().unwrap_or("unknown")
            ),
            (_, _, why) => format!(
                "{} {}: changes between {} ({}) and {} ({}) per {unit} in the sweep, not bisected: {}",
                self.allocator,
                self.metric,
                group_thousands(self.sweep_from as i64),
                fmt_count(self.sweep_from_value),
                group_thousands(self.sweep_to as i64),
                fmt_count(self.sweep_to_value),
                why.as_deref().unwrap_or("unknown")
            ),
        }
    }
}

/// What changes across a cliff of a command between `sizes` (below, above; the cliff's
/// metric there `values`), from one recorded run at each (`evidence`, per run): the side
/// with more of the metric read against the other by the one cause composer; None where
/// nothing differs.
pub fn why_across(
    (below, above): (u64, u64),
    (bv, av): (f64, f64),
    evidence: &[crate::model::evidence::Recorded; 2],
) -> Option<crate::analysis::mechanism::Why> {
    use crate::analysis::mechanism::{why, Counts, Side};
    let counts =
        |r: &crate::model::evidence::Recorded| r.get().map(Counts::of_evidence).unwrap_or_default();
    let g = |n: u64| format!("{} elements", group_thousands(n as i64));
    let (b_name, a_name) = (g(below), g(above));
    let b = Side {
        name: &b_name,
        counts: counts(&evidence[0]),
        evidence: Some(&evidence[0]),
    };
    let a = Side {
        name: &a_name,
        counts: counts(&evidence[1]),
        evidence: Some(&evidence[1]),
    };
    let w = if av >= bv {
        why(a, b, true, crate::model::evidence::Per::Run)
    } else {
        why(b, a, true, crate::model::evidence::Per::Run)
    };
    w.explains().then_some(w)
}

/// The evidence of `base`'s first allocator running `template` at each of `sizes` (with
/// the calls `per` asks for): one recorded run each.
pub fn evidence_at(
    base: &ExecSettings,
    template: &Template,
    per: Per,
    sizes: [u64; 2],
) -> Option<[crate::model::evidence::Recorded; 2]> {
    let a = base.allocators.first()?;
    let calls = match per {
        Per::Difference(n) | Per::Divide(n) => Some(n),
        Per::Run => None,
    };
    let evidence = sizes.map(|size| {
        crate::engine::command::evidence_of(
            a,
            base,
            &base.program,
            &template.render(Some(size), calls),
        )
    });
    (!crate::ui::interrupt::interrupted()).then_some(evidence)
}

/// What a program's buffers are, for naming its cliffs: bytes per element of `{size}`,
/// and how many of them one call holds at once (where known).
#[derive(Clone, Copy, Debug)]
pub struct Buffers {
    /// Bytes per element of `{size}` in the program's buffers (`--bytes-per-element`).
    pub per_element: u64,
    /// How many such buffers one call holds at once (`--buffers`); None where not given.
    pub live: Option<u64>,
}

/// The threshold behind a cliff of a program between `below` and `above` (each a size
/// and its value), or why none is named: two sizes whose values differ by less than half
/// the bisection's `margin` were placed by the rounds' noise, not by a step.
pub fn name_cliff(
    allocator: &str,
    metric: Metric,
    below: (u64, f64),
    above: (u64, f64),
    margin: f64,
    buffers: Buffers,
    why: Option<&crate::analysis::mechanism::Why>,
) -> Result<crate::analysis::thresholds::Cause, String> {
    use crate::analysis::thresholds;
    let ((b, bv), (a, av)) = (below, above);
    // A storm's onset rule (M_TOP_PAD's) explains a rise from nothing: per iteration of
    // the built-in workload the near side has no such calls. A program's figures per run
    // (or per call, start-up included) carry its start-up's calls and faults on both
    // sides, so there the recorded evidence says it: trims on the costlier side that the
    // other did not make are a trim storm's onset.
    let trims = why.is_some_and(|w| w.mechanisms.iter().any(|m| m.key == "trim"));
    if (av - bv).abs() < 0.5 * margin {
        return Err(format!(
            "not named: at the two sizes it is {} and {}, less than half the margin of {} apart, so the rounds' noise, not a step, placed it",
            fmt_count(bv),
            fmt_count(av),
            fmt_count(margin)
        ));
    }
    Ok(thresholds::cause_per(
        allocator,
        buffers.live,
        thresholds::is_onset(metric.threshold(), bv, av) || (trims && av > bv),
        buffers.per_element,
        b,
        a,
    ))
}

/// Names the threshold behind a bisected cliff (`behind_it`) and, with `confirm`, bisects
/// it again under the knob set that moves that threshold, and says whether the cliff
/// went where the threshold's rule puts it (`confirmation`), as `run --confirm` does for
/// the built-in workload.
#[allow(clippy::too_many_arguments)]
pub fn explain(
    base: &ExecSettings,
    template: &Template,
    per: Per,
    cliff: &mut CommandCliff,
    buffers: Buffers,
    confirm: bool,
    resolution: u64,
    observer: &mut dyn Observer,
    show: &mut dyn FnMut(&Probe<PointRow>),
    say: &mut dyn FnMut(&str),
) {
    use crate::analysis::cliff::{self, Confirmation};
    use crate::analysis::thresholds::{self, Cause};
    let (Some(below), Some(above), Some(bv), Some(av)) = (
        cliff.below_size,
        cliff.above_size,
        cliff.below_value,
        cliff.above_value,
    ) else {
        return;
    };
    let metric = Metric::of_name(&cliff.metric);
    let margin = cliff.margin.unwrap_or(metric.threshold());
    let named = name_cliff(
        &cliff.allocator,
        metric,
        (below, bv),
        (above, av),
        margin,
        buffers,
        cliff.why().as_ref(),
    );
    let cause = match named {
        Ok(cause) => {
            cliff.behind_it = Some(cause.sentence());
            cause
        }
        Err(why) => {
            cliff.behind_it = Some(why);
            return;
        }
    };
    if !confirm {
        return;
    }
    let Some((threshold, moved)) = cause.movable() else {
        return;
    };
    let mut conf = Confirmation::of(moved, threshold);
    let Some(current) = base
        .allocators
        .iter()
        .find(|a| a.to_string() == cliff.allocator)
    else {
        return;
    };
    let spec = match moved.parse::<crate::model::knobs::AllocatorSpec>() {
        Ok(s) if s.allocator == current.allocator && s.library == current.library => s,
        _ => {
            conf.verdict = format!("not measured: {moved} is not a spec of {}", cliff.allocator);
            cliff.confirmation = Some(conf);
            return;
        }
    };
    let Some(rule) = thresholds::predicted_under(&spec.to_string(), buffers.live, threshold) else {
        return;
    };
    conf.predict(&rule);
    let (from, to) = cliff::confirm_range(below, above, &rule);
    say(&format!(
        "confirming: {} {} at {}: bisecting under {spec} between {} and {} elements (predicted {})",
        cliff.allocator,
        metric.name(),
        threshold.name,
        group_thousands(from as i64),
        group_thousands(to as i64),
        rule.predicted_text()
    ));
    let one = ExecSettings {
        allocators: vec![spec],
        warmup: 0,
        ..base.clone()
    };
    let mut measure = |size| probe(&one, template, size, per, metric, observer);
    let found = cliff::find(
        &mut measure,
        from,
        to,
        metric,
        per.trend(metric),
        resolution,
        show,
    );
    conf.judge(
        matches!(cause, Cause::At { .. }),
        &rule,
        (below, above),
        (from, to),
        metric,
        &found,
    );
    cliff.confirmation = Some(conf);
}

/// Bisects `jump` with probes of `base` narrowed to its allocator.
pub fn bisect(
    base: &ExecSettings,
    template: &Template,
    per: Per,
    jump: &Jump,
    resolution: u64,
    observer: &mut dyn Observer,
    show: &mut dyn FnMut(&Probe<PointRow>),
) -> CommandCliff {
    let mut out = CommandCliff {
        allocator: jump.allocator.clone(),
        metric: jump.metric.name().into(),
        threshold: jump.metric.threshold(),
        sweep_from: jump.from_size,
        sweep_from_value: jump.from_value,
        sweep_to: jump.to_size,
        sweep_to_value: jump.to_value,
        below_size: None,
        below_value: None,
        above_size: None,
        above_value: None,
        probes: None,
        margin: None,
        unresolved: None,
        noise: false,
        behind_it: None,
        confirmation: None,
        evidence: None,
    };
    let Some(a) = base
        .allocators
        .iter()
        .find(|a| a.to_string() == jump.allocator)
    else {
        out.unresolved = Some("the allocator is not in this session".into());
        return out;
    };
    // The sweep has warmed the machine up: probes run the sweep's rounds without warm-up.
    let one = ExecSettings {
        allocators: vec![a.clone()],
        warmup: 0,
        ..base.clone()
    };
    let mut measure = |size| probe(&one, template, size, per, jump.metric, observer);
    match crate::analysis::cliff::find(
        &mut measure,
        jump.from_size,
        jump.to_size,
        jump.metric,
        per.trend(jump.metric),
        resolution,
        show,
    ) {
        Ok(c) => {
            out.below_size = Some(c.below.size);
            out.below_value = Some(c.below.value);
            out.above_size = Some(c.above.size);
            out.above_value = Some(c.above.value);
            out.probes = Some(c.probes);
            out.margin = Some(c.margin);
            // What the calls and faults did either side: one recorded run each.
            out.evidence = evidence_at(&one, template, per, [c.below.size, c.above.size]);
        }
        Err(e) => {
            out.noise = matches!(e, crate::analysis::cliff::CliffError::NoChange { .. });
            out.unresolved = Some(match e {
                crate::analysis::cliff::CliffError::NoChange {
                    from,
                    from_value,
                    to,
                    to_value,
                    margin,
                    ..
                } => format!(
                    "measured again, {} per {} is {} at {} and {} at {} elements, within the noise margin of {} of each other's level: the sweep's values vary from run to run (more --calls or --runs steady them)",
                    jump.metric.name(),
                    per.unit(),
                    fmt_count(from_value),
                    group_thousands(from as i64),
                    fmt_count(to_value),
                    group_thousands(to as i64),
                    fmt_count(margin),
                ),
                e => e.to_string(),
            })
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program's memory syscalls per run step from start-up's 20 to 58 at 8,211/8,212
    /// elements (two live buffers of 8 bytes an element), inside M_TOP_PAD's window of
    /// 8,192 to 8,448: the storm's onset rule names it where the recorded evidence shows
    /// trims on the costlier side, and not on the counts alone (they do not rise from
    /// nothing).
    #[test]
    fn a_programs_trim_storm_over_its_start_up_is_named_by_the_evidence() {
        use crate::analysis::mechanism::{Held, Why};
        use crate::analysis::thresholds::Cause;
        let buffers = Buffers {
            per_element: 8,
            live: Some(2),
        };
        let name = |why: Option<&Why>| {
            name_cliff(
                "system",
                Metric::Syscalls,
                (8_211, 20.0),
                (8_212, 58.0),
                0.5,
                buffers,
                why,
            )
            .unwrap()
        };
        let is_top_pad = |c: &Cause| matches!(c, Cause::At { threshold, .. } if threshold.name.contains("M_TOP_PAD"));
        assert!(!is_top_pad(&name(None)), "{}", name(None).sentence());
        let trims = Why {
            text: String::new(),
            mechanisms: vec![Held {
                key: "trim",
                name: "a trim",
                per: crate::model::evidence::Per::Run,
                calls: 20.0,
                bytes: 2.6e6,
                faults: None,
                sentence: String::new(),
            }],
            basis: "mechanism",
        };
        let named = name(Some(&trims));
        assert!(is_top_pad(&named), "{}", named.sentence());
    }

    fn t(words: &[&str]) -> Template {
        Template::new(words.iter().map(OsString::from).collect())
    }

    #[test]
    fn placeholders_are_replaced_anywhere_in_an_argument() {
        let c = t(&["prog", "--n={size}", "{calls}", "x{size}y{size}"]);
        assert!(c.has(SIZE) && c.has(CALLS));
        assert_eq!(
            c.render(Some(12), Some(3)),
            ["prog", "--n=12", "3", "x12y12"].map(OsString::from)
        );
        // Without a value a placeholder stays as given.
        assert_eq!(c.render(None, None)[1], OsString::from("--n={size}"));
    }

    #[test]
    fn placeholders_are_checked_against_the_options() {
        assert!(t(&["prog", "--n", "5"])
            .check(true, None)
            .unwrap_err()
            .contains("no {size}"));
        assert!(t(&["prog", "{size}", "{calls}"])
            .check(true, None)
            .unwrap_err()
            .contains("--calls"));
        assert!(t(&["prog", "{size}", "{calls}"])
            .check(true, Some(5))
            .is_ok());
        assert!(t(&["prog"]).check(false, None).is_ok());
        assert_eq!(t(&["p", "{calls}"]).per(Some(4)), Per::Difference(4));
        assert_eq!(t(&["p"]).per(Some(4)), Per::Divide(4));
        assert_eq!(t(&["p"]).per(None), Per::Run);
    }

    /// Per-call figures of `faults` and `calls` memory syscalls.
    fn per_call(faults: f64, calls: f64) -> CallFigures {
        let mut value = Figures::default();
        value[Metric::Faults.registry()] = Some(faults);
        value[Metric::Syscalls.registry()] = Some(calls);
        CallFigures {
            value,
            noise: Figures::default(),
        }
    }

    #[test]
    fn jumps_are_changes_beyond_threshold_and_trend_between_neighbouring_sizes_per_allocator() {
        let row = |a: &str, size, f: f64, ok: bool| PointRow {
            size,
            allocator: a.into(),
            status: if ok { RunStatus::Ok } else { RunStatus::Failed },
            per_call: per_call(f, 0.0),
            ..Default::default()
        };
        let rows = [
            row("system", 100, 0.0, true),
            row("system", 400, 500.0, true),
            row("system", 200, 0.2, true),
            row("jemalloc", 100, 0.0, true),
            row("jemalloc", 200, 9.0, false),
            row("jemalloc", 400, 0.5, true),
        ];
        let j = jumps(&rows, Per::Difference(10));
        assert_eq!(j.len(), 1, "{j:?}");
        assert_eq!(
            (j[0].allocator.as_str(), j[0].from_size, j[0].to_size),
            ("system", 200, 400)
        );
        // Memory syscalls are calls, flat along the sizes: 2 then 3 per call is a
        // change although the rate per element hardly moves.
        let calls = |size, n: f64| PointRow {
            size,
            allocator: "system".into(),
            status: RunStatus::Ok,
            per_call: per_call(0.0, n),
            ..Default::default()
        };
        let j = jumps(
            &[calls(12_000, 2.0), calls(20_000, 3.0)],
            Per::Difference(10),
        );
        assert_eq!(j.len(), 1, "{j:?}");
        assert_eq!((j[0].metric, j[0].from_size), (Metric::Syscalls, 12_000));
    }
}
