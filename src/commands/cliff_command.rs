//! `alloclab cliff -- CMD`: the onset of a change in your command's faults or memory
//! syscalls, bisected over `{size}` under one allocator (see [`crate::engine::program`]).

use crate::analysis::cliff::{self, Probe};
use crate::cli::CliffArgs;
use crate::engine::program::{self, PointRow, Template};
use crate::error::{Error, Result};
use crate::export::Format;
use crate::fmt::{fmt_count, fmt_ns};
use serde::Serialize;

/// `cliff -- CMD --format json`.
#[derive(Serialize)]
struct CommandCliffOutput<'a> {
    command: Vec<String>,
    allocator: String,
    /// What the figures are per (run, call).
    per: String,
    metric: &'static str,
    threshold: f64,
    /// The measured rows either side of the onset.
    below: &'a PointRow,
    above: &'a PointRow,
    probes: usize,
    rounds_per_probe: u32,
    /// How far a value had to leave the low side's trend to count as past the onset.
    margin: f64,
    order_seed: u64,
    /// With --bytes-per-element: the allocator's known threshold at the cliff, near it,
    /// or none, or why none is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    behind_it: Option<String>,
    /// What changes across the cliff, from one recorded run either side.
    what_changes: Option<String>,
}

/// The cliff of your command: `{size}` bisected between --from and --to under one
/// allocator, per call (see [`crate::engine::program`]).
pub fn run(args: &CliffArgs, level: f64) -> Result<()> {
    let p = &args.program;
    let template = Template::new(p.command.clone());
    template.check(true, p.calls).map_err(Error::BadInput)?;
    let per = template.per(p.calls);
    let settings = settings(args, &template, level)?;
    crate::engine::begin();
    crate::fmt::say!("{}", per.describe());
    let metric = args.metric;
    let mut quiet = super::exec::ExecProgress::quiet();
    let mut show = |p: &Probe<program::PointRow>| {
        crate::fmt::say!(
            "  size {:>12}: {} {} per {}",
            fmt_count(p.size as f64),
            fmt_count(p.value),
            metric.name(),
            per.unit()
        );
    };
    let mut bound = cliff::Bound::new(args.max_time);
    let mut measure =
        |size| bound.probe(|| program::probe(&settings, &template, size, per, metric, &mut quiet));
    let c = cliff::find(
        &mut measure,
        args.from,
        args.to,
        metric,
        per.trend(metric),
        1,
        &mut show,
    )
    .map_err(Error::from)?;
    let label = settings.allocators[0].to_string();
    // What changes across it, from one recorded run either side.
    let why = program::evidence_at(&settings, &template, per, [c.below.size, c.above.size])
        .and_then(|e| {
            program::why_across(
                (c.below.size, c.above.size),
                (c.below.value, c.above.value),
                &e,
            )
        });
    let what_changes = why.as_ref().map(|w| w.text.clone());
    let behind_it = args.bytes_per_element.map(|per_element| {
        program::name_cliff(
            &label,
            metric,
            (c.below.size, c.below.value),
            (c.above.size, c.above.value),
            c.margin,
            program::Buffers {
                per_element,
                live: args.buffers,
            },
            why.as_ref(),
        )
        .map_or_else(|why| why, |cause| cause.sentence())
    });
    if args.format == Format::Json {
        let value = CommandCliffOutput {
            command: template
                .words
                .iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect(),
            allocator: label,
            per: per.describe(),
            metric: metric.name(),
            threshold: metric.threshold(),
            below: &c.below.record,
            above: &c.above.record,
            probes: c.probes,
            rounds_per_probe: args.runs,
            margin: c.margin,
            order_seed: settings.order_seed,
            behind_it,
            what_changes,
        };
        return super::print_out(
            &(serde_json::to_string_pretty(&value).map_err(Error::failed)? + "\n"),
        );
    }
    super::print_out(&crate::fmt::wrap_lines(
        &text(args, per, &label, &c, behind_it, what_changes),
        crate::fmt::screen_width(),
    ))
}

/// The command under the one allocator --allocator names.
fn settings(
    args: &CliffArgs,
    template: &Template,
    level: f64,
) -> Result<crate::engine::command::ExecSettings> {
    let p = &args.program;
    let allocators = crate::model::knobs::parse_spec_list(&args.allocator).map_err(Error::bad)?;
    if allocators.len() != 1 {
        return Err(Error::BadInput(format!(
            "--allocator {}: cliff bisects under one allocator; give one (sweep runs several)",
            args.allocator
        )));
    }
    super::options::command_settings(
        allocators,
        &template.words,
        super::options::CommandOptions::of_program(
            p,
            args.runs,
            args.thp,
            args.counters,
            args.noise_threshold,
            level,
        ),
    )
    .map_err(Error::BadInput)
}

/// The cliff in words: its sizes either side, with every figure there.
fn text(
    args: &CliffArgs,
    per: program::Per,
    label: &str,
    c: &cliff::Cliff<program::PointRow>,
    behind_it: Option<String>,
    what_changes: Option<String>,
) -> String {
    let metric = args.metric;
    let side = |p: &Probe<program::PointRow>| {
        let r = &p.record;
        format!(
            "{} elements: {} {} per {unit}; {}, {} per {unit}; peak RSS {}",
            fmt_count(p.size as f64),
            fmt_count(p.value),
            metric.name(),
            crate::model::metric::PER_CALL
                .iter()
                .filter(|m| m.spread)
                .map(|m| format!(
                    "{} {}",
                    r.per_call.value[*m].map_or("n/a".into(), fmt_count),
                    m.label
                ))
                .collect::<Vec<_>>()
                .join(", "),
            r.time_ns.map_or("n/a".into(), fmt_ns),
            r.peak_rss_mib
                .map_or("n/a".into(), |m| format!("{m:.1} MiB")),
            unit = per.unit(),
        )
    };
    format!(
        "{label}: the onset of {} per {}: the first size that leaves the level of --from ({}) by {} or more (the threshold, or twice the spread of a size's rounds where larger)\n  below: {}\n  above: {}\n({} probes, {} each){}{}\n",
        metric.name(),
        per.unit(),
        match per.trend(metric) {
            cliff::Trend::Proportional => "in proportion to the size",
            cliff::Trend::Level => "plus the slope measured at half of it",
            cliff::Trend::Flat => "the same at every size",
        },
        fmt_count(c.margin),
        side(&c.below),
        side(&c.above),
        c.probes,
        crate::fmt::counted(args.runs as usize, "round", "rounds"),
        behind_it
            .map(|b| format!("\nbehind it: {b}"))
            .unwrap_or_default(),
        what_changes
            .map(|w| format!("\nwhat changes: {w}"))
            .unwrap_or_default(),
    )
}
