//! `alloclab calibrate`: what observing costs. The cost of each part of the observer
//! (clock reads, histogram record, perf enable/disable/read, the ptrace marker), measured
//! in a worker, and the observer's effect on the measured median of the founding case:
//! p50 with each counting method against p50 with no counters, alternating rounds.

use crate::counters::perf::SyscallCounters;
use crate::counters::{ptrace, CounterMode};
use crate::driver::{ProcessExecutor, RunFailure};
use crate::measure::{Budget, ObserverCosts};
use crate::spec::{Allocator, RunSpec, Variant, Workload};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

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

/// Measures the observer with the system allocator's scale workload at `size`.
pub fn calibrate(
    workers: &Path,
    size: u64,
    min_time_s: f64,
    rounds: u32,
) -> Result<Calibration, RunFailure> {
    let out = Command::new(workers.join(Allocator::System.worker_binary()))
        .arg("--observer-costs")
        .output()
        .map_err(|e| RunFailure {
            cause: format!("cannot start the system worker: {e}"),
        })?;
    let costs: ObserverCosts = serde_json::from_slice(&out.stdout).map_err(|e| RunFailure {
        cause: format!("the worker's observer costs do not parse: {e}"),
    })?;
    let budget = Budget {
        min_time_ns: crate::measure::secs_to_ns(min_time_s),
        warmup_time_ns: 50_000_000,
        ..Budget::default()
    };
    let exec = ProcessExecutor::new(
        workers.to_path_buf(),
        budget,
        CounterMode::Off,
        Duration::from_secs(300),
    );
    let mut unavailable = Vec::new();
    let perf_ok = match SyscallCounters::open() {
        Ok(_) => true,
        Err(why) => {
            unavailable.push(format!("perf: {why}"));
            false
        }
    };
    let ptrace_ok = match ptrace::unsupported() {
        None => true,
        Some(why) => {
            unavailable.push(format!("ptrace: {why}"));
            false
        }
    };
    let mut effects = Vec::new();
    for variant in [Variant::InPlace, Variant::OutOfPlace] {
        let spec = RunSpec {
            allocator: Allocator::System,
            workload: Workload::Scale,
            variant,
            size,
            threads: 1,
            seed: 42,
            knobs: Vec::new(),
            thp: Default::default(),
        };
        let (mut off, mut perf, mut traced) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds.max(1) {
            off.push(exec.spawn_worker(&spec, CounterMode::Off)?.p50_ns as f64);
            if perf_ok {
                perf.push(exec.spawn_worker(&spec, CounterMode::Perf)?.p50_ns as f64);
            }
            if ptrace_ok {
                traced.push(exec.traced_pass(&spec)?.0.p50_ns as f64);
            }
        }
        let Some(off) = crate::report::median(&off) else {
            continue;
        };
        for (method, on) in [("perf", perf), ("ptrace", traced)] {
            let Some(on) = crate::report::median(&on) else {
                continue;
            };
            effects.push(Effect {
                allocator: spec.allocator,
                workload: spec.workload,
                variant,
                size,
                method: method.into(),
                off_p50_ns: off,
                on_p50_ns: on,
                ratio: on / off,
            });
        }
    }
    Ok(Calibration {
        costs,
        effects,
        unavailable,
        rounds,
    })
}

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
