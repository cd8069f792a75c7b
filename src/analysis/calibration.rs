//! What observing costs, as measured by `alloclab calibrate`: the cost of each part of
//! the observer and each counting method's effect on the founding case's median, and the
//! lines that describe them.

use crate::model::overhead::ObserverCosts;
use crate::model::spec::{Allocator, Variant, Workload};
use serde::{Deserialize, Serialize};

/// How much a counting method moves the measured median of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    pub allocator: Allocator,
    /// The allocator as given, with knobs or as an installed library's name (absent in
    /// calibrations saved before it was recorded: then `allocator`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator_spec: Option<String>,
    pub workload: Workload,
    pub variant: Variant,
    pub size: u64,
    /// "perf" or "ptrace" (the traced pass's own latency).
    pub method: String,
    /// Median over rounds of the runs' p50, without counters and with this method.
    pub off_p50_ns: f64,
    pub on_p50_ns: f64,
    /// on / off: 1.01 means the observer adds 1 % to the median. The median of the
    /// per-round ratios (each round runs off and on back to back).
    pub ratio: f64,
    /// Interval of that ratio and its coverage (absent with one round, and in
    /// calibrations saved before intervals existed).
    #[serde(default)]
    pub ratio_ci_low: Option<f64>,
    #[serde(default)]
    pub ratio_ci_high: Option<f64>,
    #[serde(default)]
    pub ci_coverage: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub costs: ObserverCosts,
    pub effects: Vec<Effect>,
    /// Methods that could not be measured here, and why.
    pub unavailable: Vec<String>,
    pub rounds: u32,
    /// Each process's measured time, in seconds (absent in calibrations from before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_time_s: Option<f64>,
    /// The seed of the rounds' shuffled orders (absent in calibrations from before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
}

/// The goal for the observer's effect on the median.
pub const GOAL_RATIO: f64 = 1.02;

impl Calibration {
    /// Lines for people: costs, effects, and whether the goal is met.
    pub fn describe(&self) -> Vec<String> {
        let c = &self.costs;
        let mut lines = vec![
            format!(
                "clock-read pair {:.0} ns, histogram record {:.1} ns, harness {:.0} ns per sample",
                c.clock_pair_ns, c.record_ns, c.harness_ns_per_sample
            ),
            match (c.perf_enable_disable_ns, c.perf_read_ns) {
                (Some(e), Some(r)) => format!(
                    "perf counters: enable + disable {:.1} µs, read all {:.1} µs (once per run, outside the loop)",
                    e / 1e3,
                    r / 1e3
                ),
                _ => format!(
                    "perf counters: unavailable ({})",
                    c.perf_unavailable.as_deref().unwrap_or("unknown")
                ),
            },
            format!("ptrace phase marker: {:.0} ns untraced (twice per run)", c.ptrace_marker_ns),
        ];
        for e in &self.effects {
            let pct = |r: f64| format!("{:+.2} %", (r - 1.0) * 100.0);
            let verdict = match (e.ratio_ci_low, e.ratio_ci_high, e.ci_coverage) {
                (Some(lo), Some(hi), Some(cov)) => {
                    let interval =
                        format!("[{}, {}] ({:.1} % interval)", pct(lo), pct(hi), cov * 100.0);
                    if hi <= GOAL_RATIO && lo >= 1.0 / GOAL_RATIO {
                        format!("{interval}: within the 2 % goal")
                    } else if lo > GOAL_RATIO {
                        format!("{interval}: over the 2 % goal")
                    } else {
                        format!("{interval}: not resolved, the interval reaches beyond ±2 % (run-to-run noise; more --rounds narrow it)")
                    }
                }
                _ => "one round: no interval (more --rounds give one)".to_string(),
            };
            lines.push(format!(
                "{} {} {} n={}: {} moves the median {:+.2} % ({:.0} → {:.0} ns), {verdict}",
                e.allocator_spec
                    .clone()
                    .unwrap_or_else(|| e.allocator.to_string()),
                e.workload,
                e.variant,
                e.size,
                e.method,
                (e.ratio - 1.0) * 100.0,
                e.off_p50_ns,
                e.on_p50_ns
            ));
        }
        for u in &self.unavailable {
            lines.push(format!("not measured: {u}"));
        }
        lines
    }
}
