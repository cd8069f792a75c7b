//! `alloclab calibrate`: what observing costs here, printed as lines or JSON.

use crate::cli::CalibrateArgs;
use crate::engine::{calibrate, preflight};
use crate::error::{Error, Result};
use crate::model::knobs::AllocatorSpec;
use crate::model::run::RunSpec;
use crate::model::spec::{Variant, Workload};

pub fn run(args: &CalibrateArgs, level: f64) -> Result<()> {
    let alloc: AllocatorSpec = args
        .allocator
        .parse()
        .map_err(|e| Error::BadInput(format!("--allocator: {e}")))?;
    let founding_case = RunSpec {
        allocator: alloc.allocator,
        workload: Workload::Scale,
        variant: Variant::OutOfPlace,
        size: args.size,
        threads: 1,
        seed: 42,
        knobs: alloc.knobs.clone(),
        thp: Default::default(),
        library: alloc.library.clone(),
    };
    if args.noise {
        return noise(
            args,
            RunSpec {
                variant: args.variant,
                ..founding_case
            },
            level,
        );
    }
    let workers = preflight::check(&[founding_case]).map_err(Error::bad)?;
    crate::engine::begin();
    let c = calibrate::calibrate(
        &workers,
        &alloc,
        args.size,
        args.min_time,
        args.rounds,
        level,
    )
    .map_err(|e| Error::RunFailed(format!("calibration failed: {}", e.cause)))?;
    let text = if args.json {
        serde_json::to_string_pretty(&c).map_err(Error::failed)? + "\n"
    } else {
        c.describe().iter().map(|l| format!("{l}\n")).collect()
    };
    super::print_out(&text)
}

/// `--noise`: long processes of one cell, every iteration kept, then the noise within,
/// between and over them, and the budget that buys the narrowest ratio interval.
fn noise(args: &CalibrateArgs, spec: RunSpec, level: f64) -> Result<()> {
    use crate::analysis::noise::{analyse, budgets, check_settings};
    use crate::ui::interrupt::{count, signal_name};

    // Settings that would measure nothing are refused before any process runs.
    check_settings(args.process_time, args.budget_warmup).map_err(Error::BadInput)?;
    if let Some(cpu) = args.cpu {
        crate::counters::conditions::check_cpu(cpu)
            .map_err(|why| Error::BadInput(format!("--cpu {cpu}: {why}")))?;
    }
    let signal = || signal_name().unwrap_or("an interrupt");
    let (series, mut processes) = noise_series(args, &spec)?;
    if series.len() < 4 {
        return Err(Error::Interrupted(format!(
            "after {} of {} processes; the noise needs at least 4, nothing printed",
            series.len(),
            args.processes
        )));
    }
    let budgets = budgets(args.process_time, args.budget_warmup);
    let warmup = args.budget_warmup;
    // The analysis of what ran stops at the next signal (after a Ctrl-C that ended the
    // measurement, a second one).
    let signals = count();
    let stop = || count() > signals;
    let mut n = analyse(
        &series,
        warmup,
        10,
        &budgets,
        args.per_seconds,
        level,
        &stop,
    )
    .map_err(|_| {
        Error::Interrupted(format!(
            "while analysing {} processes; nothing printed",
            series.len()
        ))
    })?;
    // What ran, in every output: an interrupt during the last process stops the plan.
    for (p, p50) in processes.iter_mut().zip(&n.process_p50_ns) {
        p.p50_ns = *p50;
    }
    n.causes = Some(crate::analysis::causes::explain(&processes, 42, args.cpu));
    n.cell = spec.to_string();
    n.cpu = args.cpu;
    n.processes_planned = args.processes as usize;
    n.complete = series.len() == n.processes_planned;
    n.stopped_by = (!n.complete).then(|| signal().to_string());
    let text = if args.json {
        serde_json::to_string_pretty(&n).map_err(Error::failed)? + "\n"
    } else {
        let width = crate::fmt::screen_width();
        n.describe(&spec.to_string())
            .iter()
            .map(|l| {
                // Table rows fit; only prose is wrapped (wrapping joins spaces).
                if l.chars().count() > width {
                    crate::fmt::wrap_lines(l, width)
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    };
    let incomplete = (!n.complete).then(|| {
        format!(
            "incomplete after {} of {} processes; the figures above are from those",
            series.len(),
            args.processes
        )
    });
    super::print_out(&text)?;
    match incomplete {
        Some(note) => Err(Error::Interrupted(note)),
        None => Ok(()),
    }
}

/// Each process's every iteration, timed from its first (no warm-up: the warm-up a
/// process needs is read from them), and its time outside the measured window.
fn noise_series(
    args: &CalibrateArgs,
    spec: &RunSpec,
) -> Result<(
    Vec<crate::analysis::noise::Series>,
    Vec<crate::analysis::causes::Process>,
)> {
    use crate::analysis::noise::Series;
    use crate::model::run::WorkerRequest;
    use crate::ui::interrupt::interrupted;
    use crate::worker::measure::Budget;
    let workers = preflight::check(std::slice::from_ref(spec)).map_err(Error::bad)?;
    let executor = crate::engine::ProcessExecutor::new(
        workers,
        crate::counters::CounterMode::Off,
        std::time::Duration::from_secs_f64(args.process_time * 10.0 + 60.0),
    )
    .map_err(|why| Error::RunFailed(why.0))?;
    crate::engine::begin();
    let request = WorkerRequest {
        spec: spec.clone(),
        // No warm-up: every iteration from the first is kept, and the warm-up a
        // process needs is read from them.
        budget: Budget {
            warmup_time_ns: 0,
            warmup_iters: 0,
            min_time_ns: (args.process_time * 1e9) as u64,
            min_iters: 10,
            max_iters: 1_000_000,
            idle_ns: 0,
        },
        counters: crate::counters::CounterMode::Off,
        timeline: true,
        cpu: args.cpu,
        layout: None,
        stall: None,
    };
    let mut progress = crate::ui::progress::Progress::new(args.processes as usize);
    let mut series = Vec::new();
    let mut processes = Vec::new();
    for i in 0..args.processes {
        if interrupted() {
            break;
        }
        progress.start(&format!("{spec} (process {})", i + 1));
        let started = std::time::Instant::now();
        let record = executor.spawn_request(&request, None);
        let wall = started.elapsed().as_nanos() as u64;
        progress.finish_one();
        if interrupted() {
            break;
        }
        let record = record
            .map_err(|f| Error::RunFailed(format!("process {} failed: {}", i + 1, f.cause)))?;
        processes.push(crate::analysis::causes::Process {
            p50_ns: record.p50_ns as f64,
            conditions: record.conditions.clone(),
            involuntary_switches: Some(record.totals.usage.nivcsw),
        });
        let t0 = record.timeline.first().map_or(0, |x| x.start_ns);
        series.push(Series {
            samples: record
                .timeline
                .iter()
                .map(|x| (x.start_ns - t0, x.elapsed_ns))
                .collect(),
            outside_ns: wall.saturating_sub(record.measured_wall_ns),
        });
    }
    progress.clear();
    Ok((series, processes))
}
