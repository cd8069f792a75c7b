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
    pub workload: Workload,
    pub variant: Variant,
    pub size: u64,
    /// "perf" or "ptrace" (the traced pass's own latency).
    pub method: String,
    /// Median over rounds of the runs' p50, without counters and with this method.
    pub off_p50_ns: f64,
    pub on_p50_ns: f64,
    /// on / off: 1.01 means the observer adds 1 % to the median.
    pub ratio: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub costs: ObserverCosts,
    pub effects: Vec<Effect>,
    /// Methods that could not be measured here, and why.
    pub unavailable: Vec<String>,
    pub rounds: u32,
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
            let verdict = if e.ratio > GOAL_RATIO {
                format!(
                    "over the 2 % goal by {:.1} points",
                    (e.ratio - GOAL_RATIO) * 100.0
                )
            } else if e.ratio < 1.0 / GOAL_RATIO {
                "faster with counters than without: run-to-run noise is at least this large here (more --rounds narrow it)".to_string()
            } else {
                "within the 2 % goal".to_string()
            };
            lines.push(format!(
                "{} {} {} n={}: {} moves the median {:+.2} % ({:.0} → {:.0} ns), {verdict}",
                e.allocator,
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
