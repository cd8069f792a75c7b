//! `alloclab cliff`: bisection to the exact size where faults or syscalls per iteration
//! change, for one allocator, workload and variant.

use crate::analysis::cliff::{self, Probe};
use crate::cli::CliffArgs;
use crate::driver::{self, preflight, ProcessExecutor};
use crate::error::{Error, Result};
use crate::export::Format;
use crate::model::budget::Budget;
use crate::model::knobs::AllocatorSpec;
use crate::model::run::RunSpec;
use crate::ui::fmt::{fmt_count, fmt_ns, human_bytes};
use std::time::Duration;

pub fn run(args: &CliffArgs) -> Result<()> {
    if matches!(args.format, Format::Csv | Format::Markdown) {
        return Err(Error::BadInput(
            "cliff prints table or json (--format table|json)".into(),
        ));
    }
    let alloc: AllocatorSpec = args.allocator.parse().map_err(Error::bad)?;
    if args.from >= args.to {
        return Err(Error::BadInput(format!(
            "--from ({}) must be smaller than --to ({})",
            args.from, args.to
        )));
    }
    let base = RunSpec {
        allocator: alloc.allocator,
        workload: args.workload,
        variant: args.variant,
        size: args.to,
        threads: 1,
        seed: 42,
        knobs: alloc.knobs,
        thp: args.thp,
        library: alloc.library,
    };
    let workers = preflight::check(std::slice::from_ref(&base)).map_err(Error::bad)?;
    let mut exec = ProcessExecutor::new(workers, args.counters, Duration::from_secs(300))
        .map_err(|why| Error::counters(args.counters, why))?;
    let budget = Budget::short(args.min_time);
    let metric = args.metric;
    let mut show = |p: &Probe| {
        eprintln!(
            "  size {:>12}: {} {} per iteration",
            fmt_count(p.size as f64),
            fmt_count(p.value),
            metric.name()
        );
    };
    let mut measure = |size| driver::probe(&mut exec, &base, &budget, size, metric);
    let c = cliff::find(&mut measure, args.from, args.to, metric, 1, &mut show)
        .map_err(Error::failed)?;
    let side = |p: &Probe| {
        format!(
            "{} elements ({} per f64 buffer): {} {} per iteration, p50 {}",
            fmt_count(p.size as f64),
            human_bytes(p.size * 8),
            fmt_count(p.value),
            metric.name(),
            fmt_ns(p.record.p50_ns as f64)
        )
    };
    if args.format == Format::Json {
        let side = |p: &Probe| {
            serde_json::json!({
                "size": p.size,
                "value_per_iter": p.value,
                "p50_ns": p.record.p50_ns,
                "p99_ns": p.record.p99_ns,
                "minflt_per_iter": p.record.minflt_per_iter,
                "memory_syscalls_per_iter": p.record.memory_syscalls_per_iter(),
            })
        };
        let value = serde_json::json!({
            "allocator": base.allocator_label(),
            "workload": base.workload,
            "variant": base.variant,
            "metric": metric.name(),
            "threshold": metric.threshold(),
            "below": side(&c.below),
            "above": side(&c.above),
            "probes": c.probes,
        });
        return super::print_out(
            &(serde_json::to_string_pretty(&value).map_err(Error::failed)? + "\n"),
        );
    }
    super::print_out(&format!(
        "{} {} {}: {} per iteration cross {} between\n  below: {}\n  above: {}\n({} probes)\n",
        base.allocator_label(),
        base.workload,
        base.variant,
        metric.name(),
        metric.threshold(),
        side(&c.below),
        side(&c.above),
        c.probes
    ))
}
