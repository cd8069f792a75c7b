//! `alloclab tune`: each allocator's defaults against its curated knob sets on one
//! workload, variant and size, with a verdict per set.

use crate::analysis::{cells, tune};
use crate::cli::TuneArgs;
use crate::driver::{self, preflight, ProcessExecutor};
use crate::error::{Error, Result};
use crate::export::{self, table, Format};
use crate::model::budget::Budget;
use crate::model::knobs::AllocatorSpec;
use crate::model::run::RunSpec;
use crate::model::spec::{Allocator, Choice};
use crate::model::summary::SummaryRow;
use crate::ui::fmt::{fmt_count, fmt_ns, group_thousands};
use crate::ui::progress::Progress;
use std::time::Duration;

pub fn run(args: &TuneArgs) -> Result<()> {
    if !args.program.command.is_empty() {
        return run_command(args);
    }
    let allocators = match &args.allocators {
        Some(list) => crate::model::knobs::parse_spec_list(list).map_err(|e| match e {
            crate::model::knobs::KnobError::Allocator(_) => Error::BadInput(format!(
                "{e}, or an installed library as name=/path/to/lib.so (`alloclab list` shows those found here)"
            )),
            e => Error::bad(e),
        })?,
        None => Allocator::ALL.iter().map(|&a| AllocatorSpec::plain(a)).collect(),
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
    let order_seed = driver::clock_seed();
    let mut progress = Progress::new(specs.len() * args.processes as usize);
    let all = driver::run_rounds(
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

/// One knob set of your command's tune, against its allocator's defaults.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SetVerdict {
    pub set: String,
    pub against: String,
    /// Wall time of a run against the defaults' (median of the per-round ratios).
    pub ratio: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: Option<String>,
    pub minflt: Option<f64>,
    pub minflt_defaults: Option<f64>,
    pub memory_syscalls: Option<f64>,
    pub memory_syscalls_defaults: Option<f64>,
    pub peak_rss_mib: Option<f64>,
    pub peak_rss_mib_defaults: Option<f64>,
    /// Median wall time of a run with this set.
    pub wall_ms: Option<f64>,
    pub line: String,
}

/// The ExecAllocators `tune -- CMD` tries: every curated set of each allocator given
/// (defaults first), installed libraries with their defaults.
fn command_sets(args: &TuneArgs) -> Result<Vec<crate::exec::ExecAllocator>> {
    use crate::exec::ExecAllocator;
    let given = match &args.allocators {
        Some(list) => crate::exec::parse_allocators(list).map_err(Error::BadInput)?,
        None => Allocator::ALL
            .iter()
            .map(|&a| ExecAllocator::Builtin(AllocatorSpec::plain(a)))
            .collect(),
    };
    let mut out = Vec::new();
    for a in given {
        match a {
            ExecAllocator::Builtin(s) if !s.knobs.is_empty() => {
                return Err(Error::BadInput(format!(
                    "--allocators {s}: tune tries its own knob sets; give allocator names (or installed libraries) without knobs"
                )))
            }
            ExecAllocator::Builtin(s) => out.extend(
                tune::specs(s.allocator)
                    .into_iter()
                    .map(ExecAllocator::Builtin),
            ),
            custom => out.push(custom),
        }
    }
    Ok(out)
}

/// Every set against its allocator's defaults (an installed library against glibc's),
/// from the runs of one session.
pub fn set_verdicts(record: &crate::exec::ExecRecord) -> Vec<SetVerdict> {
    use crate::exec::output;
    let rows = output::rows(record);
    let kind = |label: &str| label.split(':').next().unwrap_or(label).to_string();
    let is_builtin =
        |label: &str| crate::model::spec::parse_choice::<Allocator>(&kind(label)).is_ok();
    let mut out = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let defaults = if is_builtin(&r.allocator) {
            kind(&r.allocator)
        } else {
            "system".to_string()
        };
        if r.allocator == defaults {
            continue;
        }
        let Some(b) = rows.iter().position(|x| x.allocator == defaults) else {
            continue;
        };
        let base = &rows[b];
        let c = output::paired(
            &record.allocators[b].runs,
            &record.allocators[i].runs,
            record.noise_threshold,
        );
        let failed = r.error.as_ref().or(base.error.as_ref());
        let mut v = SetVerdict {
            set: r.allocator.clone(),
            against: defaults.clone(),
            ratio: c.map(|c| c.ratio),
            ci_low: c.and_then(|c| c.interval.map(|i| i.low)),
            ci_high: c.and_then(|c| c.interval.map(|i| i.high)),
            verdict: c.and_then(|c| c.verdict.map(|v| v.words().to_string())),
            minflt: r.minflt,
            minflt_defaults: base.minflt,
            memory_syscalls: crate::exec::program::memory(r),
            memory_syscalls_defaults: crate::exec::program::memory(base),
            peak_rss_mib: r.peak_rss_mib,
            peak_rss_mib_defaults: base.peak_rss_mib,
            wall_ms: r.wall_median_ms,
            line: String::new(),
        };
        let count = |x: Option<f64>| x.map_or("n/a".to_string(), fmt_count);
        v.line = match (failed, c) {
            (Some(e), _) => format!("{}: failed: {e}", r.allocator),
            (None, None) => format!("{}: no paired rounds with {defaults}", r.allocator),
            (None, Some(c)) => {
                let call = match c.verdict {
                    Some(crate::analysis::stats::Verdict::Faster) => "helps: ",
                    Some(crate::analysis::stats::Verdict::Slower) => "costs time: ",
                    _ => "",
                };
                let instead = if is_builtin(&r.allocator) {
                    String::new()
                } else {
                    "instead of glibc, ".to_string()
                };
                format!(
                    "{}: {instead}{call}{} against {defaults}'s defaults, per run; {} faults and {} memory syscalls per run (defaults: {} and {}); peak RSS {} vs {}",
                    r.allocator,
                    crate::analysis::explain::describe(&c),
                    count(v.minflt),
                    count(v.memory_syscalls),
                    count(v.minflt_defaults),
                    count(v.memory_syscalls_defaults),
                    v.peak_rss_mib.map_or("n/a".into(), |m| format!("{m:.1} MiB")),
                    v.peak_rss_mib_defaults.map_or("n/a".into(), |m| format!("{m:.1} MiB")),
                )
            }
        };
        out.push(v);
    }
    out
}

/// The one recommendation: of the sets significantly faster than their allocator's
/// defaults, the one whose runs are fastest, with its interval and memory price; or that
/// nothing helps significantly.
pub fn recommendation(verdicts: &[SetVerdict], threshold: f64) -> String {
    let best = verdicts
        .iter()
        .filter(|v| v.verdict.as_deref() == Some(crate::analysis::stats::Verdict::Faster.words()))
        .filter_map(|v| Some((v, v.ratio?, v.wall_ms?)))
        .min_by(|a, b| a.2.total_cmp(&b.2));
    match best {
        Some((v, ratio, wall)) => {
            let rss = match (v.peak_rss_mib, v.peak_rss_mib_defaults) {
                (Some(x), Some(b)) if (x - b).abs() < 0.05 => {
                    format!("peak RSS {x:.1} MiB, as with the defaults")
                }
                (Some(x), Some(b)) => format!(
                    "peak RSS {x:.1} MiB against {b:.1} MiB ({}{:.1} MiB)",
                    if x >= b { "+" } else { "−" },
                    (x - b).abs()
                ),
                _ => "peak RSS not measured".into(),
            };
            format!(
                "recommended: {} — the fastest of the sets that help ({} per run): {:.2}x faster than {}'s defaults [{:.2}x, {:.2}x]; {rss}",
                v.set,
                fmt_ns(wall * 1e6),
                1.0 / ratio,
                v.against,
                1.0 / v.ci_high.unwrap_or(ratio),
                1.0 / v.ci_low.unwrap_or(ratio),
            )
        }
        None => format!(
            "recommended: nothing — no knob set is faster than its allocator's defaults beyond ±{} % with 95 % confidence",
            threshold * 100.0
        ),
    }
}

/// `tune -- CMD`: the curated sets applied to your command through exec's preloads and
/// environment (each knob read back by the probe), in interleaved rounds.
fn run_command(args: &TuneArgs) -> Result<()> {
    use crate::exec::program::{Template, CALLS, SIZE};
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
        },
    )
    .map_err(Error::BadInput)?;
    crate::ui::interrupt::stop_on_interrupt();
    if let Err(e) = crate::driver::lifetime::become_subreaper() {
        eprintln!("warning: cannot become a child subreaper ({e})");
    }
    let mut progress = super::exec::ExecProgress::session();
    let record = crate::exec::run_session(&settings, &mut progress, &mut |_| Ok(()));
    progress.0.clear();
    let record = record.map_err(|e| match e {
        crate::exec::SessionError::BadInput(why) => Error::BadInput(why),
        e => Error::failed(e),
    })?;
    let rows = crate::exec::output::rows(&record);
    let verdicts = set_verdicts(&record);
    let advice = recommendation(&verdicts, args.noise_threshold);
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
            let mut t = crate::exec::output::header(&record);
            t.push('\n');
            t.push_str(&crate::exec::output::to_table(&rows));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, verdict: &str, ratio: f64, wall_ms: f64) -> SetVerdict {
        SetVerdict {
            set: name.into(),
            against: "system".into(),
            ratio: Some(ratio),
            ci_low: Some(ratio * 0.9),
            ci_high: Some(ratio * 1.1),
            verdict: Some(verdict.into()),
            minflt: None,
            minflt_defaults: None,
            memory_syscalls: None,
            memory_syscalls_defaults: None,
            peak_rss_mib: Some(70.0),
            peak_rss_mib_defaults: Some(60.0),
            wall_ms: Some(wall_ms),
            line: String::new(),
        }
    }

    #[test]
    fn the_recommendation_is_the_fastest_set_that_helps_with_its_memory_price() {
        use crate::analysis::stats::Verdict;
        let faster = Verdict::Faster.words();
        let sets = [
            // Helps most against its own (slow) defaults, but its runs are slower.
            set("jemalloc:dirty_decay_ms=-1", faster, 0.25, 500.0),
            set("system:top_pad=64M", faster, 0.4, 450.0),
            // Fastest of all, but not significantly faster than its defaults.
            set(
                "mimalloc:purge_delay=-1",
                Verdict::NoSignificantDifference.words(),
                0.9,
                400.0,
            ),
        ];
        let r = recommendation(&sets, 0.02);
        assert!(r.starts_with("recommended: system:top_pad=64M"), "{r}");
        assert!(
            r.contains("2.50x faster") && r.contains("(+10.0 MiB)"),
            "{r}"
        );
        let none = recommendation(&sets[2..], 0.02);
        assert!(none.starts_with("recommended: nothing"), "{none}");
    }
}
