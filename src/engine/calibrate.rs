//! `alloclab calibrate`: what observing costs. The cost of each part of the observer
//! (clock reads, histogram record, perf enable/disable/read, the ptrace marker), measured
//! in a worker, and the observer's effect on the measured median of the founding case:
//! p50 with each counting method against p50 with no counters, alternating rounds.

use crate::analysis::calibration::{Calibration, Effect, GOAL_RATIO};
use crate::analysis::stats::{compare_paired, median};
use crate::counters::linux::perf::SyscallCounters;
use crate::counters::{ptrace, CounterMode};
use crate::engine::schedule::{Next, Order, Schedule};
use crate::engine::ProcessExecutor;
use crate::model::knobs::AllocatorSpec;
use crate::model::record::RunFailure;
use crate::model::run::RunSpec;
use crate::model::spec::{Variant, Workload};
use crate::worker::measure::{Budget, ObserverCosts};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Measures the observer with the scale workload at `size` under `alloc` (the system
/// allocator in `run`; any spec, installed libraries too, in `alloclab calibrate`).
pub fn calibrate(
    workers: &Path,
    alloc: &AllocatorSpec,
    size: u64,
    min_time_s: f64,
    rounds: u32,
    level: f64,
) -> Result<Calibration, RunFailure> {
    let worker = alloc.allocator.worker_binary();
    let out = Command::new(workers.join(worker))
        .arg("--observer-costs")
        .output()
        .map_err(|e| RunFailure {
            cause: format!("cannot start {worker}: {e}"),
        })?;
    let costs: ObserverCosts = serde_json::from_slice(&out.stdout).map_err(|e| RunFailure {
        cause: format!("the worker's observer costs do not parse: {e}"),
    })?;
    let budget = Budget {
        warmup_time_ns: 50_000_000,
        ..Budget::short(min_time_s)
    };
    let mut exec = ProcessExecutor::new(
        workers.to_path_buf(),
        CounterMode::Off,
        Duration::from_secs(300),
    )
    .map_err(|why| RunFailure { cause: why.0 })?;
    exec.timeout_hint = "each run has 300 s: lower --min-time or --size".into();
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
    let order_seed = super::clock_seed();
    for variant in [Variant::InPlace, Variant::OutOfPlace] {
        let spec = RunSpec {
            allocator: alloc.allocator,
            workload: Workload::Scale,
            variant,
            size,
            threads: 1,
            seed: 42,
            knobs: alloc.knobs.clone(),
            thp: Default::default(),
            library: alloc.library.clone(),
        };
        // Off, perf and ptrace in every round of the one schedule, in a shuffled order.
        let methods: Vec<CounterMode> = [
            (CounterMode::Off, true),
            (CounterMode::Perf, perf_ok),
            (CounterMode::Ptrace, ptrace_ok),
        ]
        .into_iter()
        .filter_map(|(m, ok)| ok.then_some(m))
        .collect();
        let mut p50s: Vec<Vec<f64>> = vec![Vec::new(); methods.len()];
        let mut failure: Option<RunFailure> = None;
        Schedule {
            subjects: methods.len(),
            warmup: 0,
            seed: order_seed,
            order: Order::Shuffled,
        }
        .rounds(rounds.max(1), &mut |i, _, _| {
            let p50 = match methods[i] {
                CounterMode::Ptrace => exec.traced_pass(&spec, &budget).map(|r| r.0.p50_ns),
                mode => exec.spawn_worker(&spec, &budget, mode).map(|r| r.p50_ns),
            };
            match p50 {
                Ok(p) => {
                    p50s[i].push(p as f64);
                    Next::Keep
                }
                Err(f) => {
                    failure = Some(f);
                    Next::Stop
                }
            }
        });
        if let Some(f) = failure {
            return Err(f);
        }
        let of = |m: CounterMode| {
            methods
                .iter()
                .position(|x| *x == m)
                .map(|i| p50s[i].clone())
                .unwrap_or_default()
        };
        let (off, perf, traced) = (
            of(CounterMode::Off),
            of(CounterMode::Perf),
            of(CounterMode::Ptrace),
        );
        let Some(off_median) = median(&off) else {
            continue;
        };
        for (method, on) in [("perf", perf), ("ptrace", traced)] {
            let Some(on_median) = median(&on) else {
                continue;
            };
            // Each round ran off and on (in a shuffled order): the rounds pair them.
            let pairs: Vec<(f64, f64)> = off.iter().copied().zip(on.iter().copied()).collect();
            let Some(c) = compare_paired(&pairs, GOAL_RATIO - 1.0, level) else {
                continue;
            };
            effects.push(Effect {
                allocator: spec.allocator,
                allocator_spec: Some(spec.allocator_label()),
                workload: spec.workload,
                variant,
                size,
                method: method.into(),
                off_p50_ns: off_median,
                on_p50_ns: on_median,
                ratio: c.ratio,
                ratio_ci_low: c.interval.map(|ci| ci.low),
                ratio_ci_high: c.interval.map(|ci| ci.high),
                ci_coverage: c.interval.map(|ci| ci.coverage),
            });
        }
    }
    Ok(Calibration {
        costs,
        effects,
        unavailable,
        rounds,
        min_time_s: Some(min_time_s),
        order_seed: Some(order_seed),
    })
}
