//! `alloclab tune`: each allocator's defaults against its curated knob sets on one
//! workload, variant and size, with a verdict per set.

use crate::analysis::{cells, tune};
use crate::cli::TuneArgs;
use crate::engine::{self, preflight, ProcessExecutor};
use crate::error::{Error, Result};
use crate::export::{self, table, Format};
use crate::fmt::group_thousands;
use crate::model::budget::Budget;
use crate::model::knobs::AllocatorSpec;
use crate::model::run::RunSpec;
use crate::model::spec::{Allocator, Choice};
use crate::model::summary::SummaryRow;
use crate::ui::progress::Progress;
use std::time::Duration;

pub fn run(args: &TuneArgs) -> Result<()> {
    if !args.program.command.is_empty() {
        return run_command(args);
    }
    let allocators = match &args.allocators {
        Some(list) => crate::model::knobs::parse_spec_list(list).map_err(Error::bad)?,
        None => Allocator::ALL
            .iter()
            .map(|&a| AllocatorSpec::plain(a))
            .collect(),
    };
    if let Some(s) = allocators.iter().find(|s| !s.knobs.is_empty()) {
        return Err(Error::BadInput(format!(
            "--allocators {s}: tune tries its own knob sets; give allocator names (or installed libraries) without knobs"
        )));
    }
    let specs: Vec<RunSpec> = allocators
        .iter()
        .flat_map(|a| match &a.library {
            // An installed library: its defaults, beside the built-in allocators' sets.
            Some(_) => vec![a.clone()],
            None => tune::specs(a.allocator),
        })
        .map(|a| RunSpec {
            allocator: a.allocator,
            workload: args.workload,
            variant: args.variant,
            size: args.size,
            threads: 1,
            seed: 42,
            knobs: a.knobs,
            thp: Default::default(),
            library: a.library,
        })
        .collect();
    let workers = preflight::check(&specs).map_err(Error::bad)?;
    let mut exec = ProcessExecutor::new(workers, args.counters, Duration::from_secs(300))
        .map_err(|why| Error::counters(args.counters, why))?;
    crate::engine::begin();
    let order_seed = args.program.order_seed.unwrap_or_else(engine::clock_seed);
    let mut progress = Progress::new(specs.len() * args.processes as usize);
    let all = engine::run_rounds(
        &specs,
        &Budget {
            warmup_time_ns: 50_000_000,
            ..Budget::short(args.min_time)
        },
        args.processes,
        order_seed,
        &mut exec,
        &mut progress,
    );
    progress.clear();
    let rows: Vec<SummaryRow> = all.iter().map(cells::row).collect();
    // Each set against its allocator's defaults (the allocator's first cell).
    let time: Vec<_> = all
        .iter()
        .map(|c| {
            let base = all.iter().find(|b| b.spec.allocator == c.spec.allocator)?;
            (!std::ptr::eq(base, c))
                .then(|| cells::compare(base, c, args.noise_threshold))
                .flatten()
        })
        .collect();
    let text = match args.format {
        Format::Table => {
            let mut t = format!(
                "{} {} at {} elements; {} processes per set in interleaved rounds (order seed {order_seed}), medians with 95 % intervals, significant beyond ±{} %\n\n",
                args.workload,
                args.variant,
                group_thousands(args.size as i64),
                args.processes,
                args.noise_threshold * 100.0
            );
            t.push_str(&table::to_table(&rows));
            t.push('\n');
            for line in tune::verdicts(&rows, &time) {
                t.push_str(&line);
                t.push('\n');
            }
            t.push_str("\nWhy each set was tried:\n");
            for spec in &allocators {
                if let Some(l) = &spec.library {
                    t.push_str(&format!(
                        "  {}: {} preloaded into the system worker, with its defaults (compared with system's defaults when those ran)\n",
                        l.name,
                        l.path.display()
                    ));
                    continue;
                }
                let a = &spec.allocator;
                for (knobs, why) in tune::curated(*a) {
                    let label = if knobs.is_empty() {
                        a.to_string()
                    } else {
                        format!("{a}:{knobs}")
                    };
                    t.push_str(&format!("  {label}: {why}\n"));
                }
            }
            t
        }
        format => export::render(format, &rows),
    };
    super::print_out(&text)?;
    if rows.iter().any(|r| !r.status.is_ok()) {
        return Err(Error::RunFailed(
            "some knob sets failed (see their rows)".into(),
        ));
    }
    Ok(())
}

/// The allocator specs `tune -- CMD` tries: every curated set of each allocator given
/// (defaults first), installed libraries with their defaults.
fn command_sets(args: &TuneArgs) -> Result<Vec<AllocatorSpec>> {
    let given = match &args.allocators {
        Some(list) => crate::model::knobs::parse_spec_list(list).map_err(Error::bad)?,
        None => Allocator::ALL
            .iter()
            .map(|&a| AllocatorSpec::plain(a))
            .collect(),
    };
    let mut out = Vec::new();
    for s in given {
        if !s.knobs.is_empty() {
            return Err(Error::BadInput(format!(
                "--allocators {s}: tune tries its own knob sets; give allocator names (or installed libraries) without knobs"
            )));
        }
        if s.library.is_some() {
            out.push(s);
        } else {
            out.extend(tune::specs(s.allocator));
        }
    }
    Ok(out)
}

/// `tune -- CMD`: the curated sets applied to your command through exec's preloads and
/// environment (each knob read back by the probe), in interleaved rounds.
fn run_command(args: &TuneArgs) -> Result<()> {
    use crate::engine::program::{Template, CALLS, SIZE};
    let p = &args.program;
    let template = Template::new(p.command.clone());
    template.check(false, p.calls).map_err(Error::BadInput)?;
    let words = template.render(
        template.has(SIZE).then_some(args.size),
        template.has(CALLS).then_some(p.calls).flatten(),
    );
    let settings = crate::cli::command_settings(
        command_sets(args)?,
        &words,
        crate::cli::CommandOptions {
            runs: args.processes,
            warmup: p.warmup,
            show_output: p.show_output,
            thp: Default::default(),
            timeout: p.timeout,
            counters: args.counters,
            noise_threshold: args.noise_threshold,
            order_seed: p.order_seed,
        },
    )
    .map_err(Error::BadInput)?;
    crate::engine::begin();
    let mut progress = super::exec::ExecProgress::session();
    let record = crate::engine::command::run_session(&settings, &mut progress, &mut |_| Ok(()));
    progress.0.clear();
    let record = record?;
    let rows = crate::export::exec::rows(&record);
    let verdicts = tune::set_verdicts(&record);
    let advice = tune::recommendation(&verdicts, args.noise_threshold);
    let text = match args.format {
        Format::Json => {
            let v = serde_json::json!({
                "command": record.command,
                "rows": rows,
                "sets": verdicts,
                "recommendation": advice,
            });
            serde_json::to_string_pretty(&v).map_err(Error::failed)? + "\n"
        }
        Format::Table => {
            let mut t = crate::export::exec::header(&record);
            t.push('\n');
            t.push_str(&crate::export::exec::to_table(&rows));
            t.push('\n');
            for v in &verdicts {
                t.push_str(&v.line);
                t.push('\n');
            }
            t.push('\n');
            t.push_str(&advice);
            t.push('\n');
            t
        }
        format => export::render(format, &rows),
    };
    super::print_out(&text)?;
    if !record.complete {
        return Err(Error::Interrupted("nothing is saved by tune".into()));
    }
    let failed = rows.iter().filter(|r| !r.status.is_ok()).count();
    super::failed_runs(failed, rows.len(), "knob sets")
}
