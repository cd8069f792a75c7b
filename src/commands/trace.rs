//! `alloclab trace`: why and when. One built-in cell under each allocator: untraced
//! processes in interleaved rounds (the reference the traced run is stated against),
//! then one traced run per allocator whose every iteration is kept (latency, faults, RSS,
//! heap top) and, where perf works, whose faults and memory syscalls come with their
//! call stacks: a timeline, folded stacks, flame graphs and one mechanism line each.

use crate::analysis::stats::{level, median, median_ci};
use crate::analysis::trace::{self as analysis, EventKind};
use crate::cli::TraceArgs;
use crate::engine::{self, preflight, trace, ProcessExecutor};
use crate::error::{Error, Result};
use crate::export::folder::Kind;
use crate::export::trace::{self as export, AllocatorTrace, Overhead, TraceReport};
use crate::model::budget::Budget;
use crate::model::run::WorkerRequest;
use crate::ui::interrupt::interrupted;
use crate::ui::progress::Progress;
use std::time::Duration;

pub fn run(args: &TraceArgs) -> Result<()> {
    let specs = args.specs()?;
    let workers = preflight::check(&specs).map_err(Error::bad)?;
    let mut executor = ProcessExecutor::new(
        workers,
        crate::counters::CounterMode::Auto,
        Duration::from_secs_f64(args.timeout),
    )
    .map_err(|why| Error::counters(crate::counters::CounterMode::Auto, why))?;
    let mut folder = super::exec::take_out_dir(&args.out, Kind::Trace)?;
    engine::begin();
    let sampling = trace::perf_tool().map(|perf| trace::Sampling {
        perf,
        fault_period: args.fault_period,
        stack_bytes: args.stack_bytes,
    });
    if let Err(why) = &sampling {
        eprintln!("note: no call stacks: {why}; the timeline is measured without them");
    }
    let order_seed = args.order_seed.unwrap_or_else(engine::clock_seed);

    // The untraced reference: compare's budget, interleaved rounds.
    let mut progress = Progress::new(specs.len() * (args.processes as usize + 1));
    let cells = if args.processes > 0 {
        engine::run_rounds(
            &specs,
            // compare's default budget: 0.07 s measured after 0.02 s of warm-up.
            &Budget::short(0.07),
            args.processes,
            order_seed,
            &mut executor,
            &mut progress,
        )
    } else {
        Vec::new()
    };

    let budget = Budget {
        warmup_time_ns: 0,
        warmup_iters: args.warmup_iters,
        min_time_ns: 0,
        min_iters: args.iterations,
        max_iters: args.iterations,
    };
    let mut traces: Vec<AllocatorTrace> = Vec::new();
    for spec in &specs {
        if interrupted() {
            break;
        }
        let label = spec.allocator_label();
        // Under perf the worker counts its memory syscalls itself too (tracepoint
        // counters, independent of perf's samples): the samples are checked against them.
        let request = WorkerRequest {
            spec: spec.clone(),
            budget,
            counters: match &sampling {
                Ok(_) => crate::counters::CounterMode::Perf,
                Err(_) => crate::counters::CounterMode::Off,
            },
            timeline: true,
        };
        progress.start(&format!(
            "{label}: traced run of {} iterations",
            args.iterations
        ));
        let outcome = match &sampling {
            Ok(s) => {
                let data = folder.path(&format!("perf/{}.data", export::file_stem(&label)));
                if let Some(dir) = data.parent() {
                    std::fs::create_dir_all(dir).map_err(Error::failed)?;
                }
                let traced = trace::run(&executor, &request, s, &data);
                if !args.keep_perf_data {
                    let _ = std::fs::remove_file(&data);
                    let _ = std::fs::remove_dir(data.with_file_name(""));
                }
                traced
            }
            Err(_) => executor
                .spawn_request(&request, None)
                .map(|record| trace::Traced {
                    record,
                    events: Vec::new(),
                    skipped_lines: 0,
                    lost: None,
                }),
        };
        match &outcome {
            Ok(_) => progress.finish_with("traced", false),
            Err(f) => progress.finish_with(&f.cause, true),
        }
        let untraced: Vec<f64> = cells
            .iter()
            .find(|c| c.spec == *spec)
            .map(|c| c.records().map(|(_, r)| r.p50_ns as f64).collect())
            .unwrap_or_default();
        let t = match outcome {
            Ok(traced) => {
                let placed = analysis::place(&traced.record.timeline, &traced.events);
                let attributions = match &sampling {
                    Ok(_) => analysis::attribute(&placed, &traced.record.timeline),
                    Err(_) => Vec::new(),
                };
                let mechanism = match &sampling {
                    Ok(_) => Some(analysis::mechanism(
                        &label,
                        &attributions,
                        &placed.per_iteration,
                    )),
                    Err(_) => None,
                };
                let check = sample_check(&traced.record, &placed);
                // A mechanism drawn from samples that miss some calls says so.
                let mechanism = match (mechanism, &check) {
                    (Some(m), Some((c, true))) => Some(format!("{m} NOT ALL CALLS SAMPLED: {c}.")),
                    (m, _) => m,
                };
                let check = check.map(|(c, _)| c);
                let fold = |kinds: &[EventKind]| analysis::fold(&placed.inside, kinds);
                let traced_ns: Vec<f64> = traced
                    .record
                    .timeline
                    .iter()
                    .map(|s| s.elapsed_ns as f64)
                    .collect();
                AllocatorTrace {
                    label: label.clone(),
                    allocator: spec.allocator,
                    failure: None,
                    mechanism,
                    attributions,
                    overhead: overhead(&traced_ns, &untraced),
                    faults_folded: fold(&[EventKind::Fault]),
                    syscalls_folded: fold(&EventKind::SYSCALLS),
                    between: placed.between.clone(),
                    per_iteration: placed.per_iteration,
                    skipped_lines: traced.skipped_lines,
                    lost: traced.lost,
                    sample_check: check,
                    record: Some(traced.record),
                }
            }
            Err(f) => {
                AllocatorTrace::failed(&label, spec.allocator, f.cause, overhead(&[], &untraced))
            }
        };
        traces.push(t);
    }
    progress.clear();
    let complete = !interrupted() && traces.len() == specs.len();
    let report = TraceReport {
        schema: export::SCHEMA.into(),
        workload: args.workload,
        variant: args.variant,
        size: args.size,
        iterations: args.iterations,
        fault_period: args.fault_period,
        attribution: match &sampling {
            Ok(_) => None,
            Err(why) => Some(why.clone()),
        },
        processes: args.processes,
        order_seed,
        complete,
        allocators: traces,
    };
    export::save(&folder, &report).map_err(Error::failed)?;
    folder.finish(complete).map_err(Error::failed)?;
    super::print_out(&export::console(&report, &args.out))?;
    if interrupted() {
        return Err(Error::Interrupted(format!(
            "{} of {} allocators traced; {} says incomplete",
            report.allocators.len(),
            specs.len(),
            args.out.display()
        )));
    }
    let failed = report
        .allocators
        .iter()
        .filter(|t| t.failure.is_some())
        .count();
    super::failed_runs(failed, specs.len(), "traced runs")
}

/// The traced run's median iteration against the untraced processes' p50s: the ratio,
/// and its range over the untraced median's interval.
fn overhead(traced_ns: &[f64], untraced_p50s: &[f64]) -> Overhead {
    let traced = median(traced_ns);
    let untraced = median(untraced_p50s);
    let ci = median_ci(untraced_p50s, level());
    Overhead {
        traced_median_ns: traced,
        untraced_median_ns: untraced,
        untraced_ci_ns: ci.map(|c| (c.low, c.high)),
        untraced_ci_coverage: ci.map(|c| c.coverage),
        untraced_processes: untraced_p50s.len(),
        ratio: traced.zip(untraced).map(|(t, u)| t / u),
        ratio_range: traced.zip(ci).map(|(t, c)| (t / c.high, t / c.low)),
    }
}

/// The memory syscalls perf sampled in the measured phase (inside the iterations and
/// between them) against what the worker's own tracepoint counters counted: equal
/// unless perf lost samples (the flag: some are missing). None where the worker could
/// not count.
fn sample_check(
    record: &crate::model::record::RunRecord,
    placed: &analysis::Placed<'_>,
) -> Option<(String, bool)> {
    let counted = record.totals.syscalls?;
    let counted = counted.brk + counted.mmap + counted.munmap + counted.madvise + counted.mremap;
    let inside: u64 = placed.per_iteration.iter().map(|e| e.syscalls()).sum();
    let between: u64 = placed
        .between
        .iter()
        .filter(|(k, _)| **k != EventKind::Fault)
        .map(|(_, n)| *n)
        .sum();
    let sampled = inside + between;
    Some(if sampled == counted && counted == 0 {
        (
            "no memory syscall counted by the worker's own counters, none sampled".to_string(),
            false,
        )
    } else if sampled == counted {
        (
            format!(
                "all {counted} memory syscalls the worker counted were sampled with their stacks"
            ),
            false,
        )
    } else {
        (
            format!(
                "perf sampled {sampled} memory syscalls where the worker counted {counted}: the per-iteration syscall figures and shares are short by {}",
                counted.abs_diff(sampled)
            ),
            true,
        )
    })
}
