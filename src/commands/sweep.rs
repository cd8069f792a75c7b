//! `alloclab sweep`: your command at a range of sizes under each allocator — time,
//! faults, memory syscalls and peak RSS per call — written as a results folder, and every
//! change of faults or syscalls between neighbouring sizes bisected to the exact size.

use crate::analysis::findings::{Figures, Item};
use crate::cli::SweepArgs;
use crate::commands::exec::ExecProgress;
use crate::commands::options::{command_settings, CommandOptions};
use crate::engine::command::ExecRecord;
use crate::engine::program::{self, CommandCliff, Per, PointRow, Template};
use crate::error::{Error, Result};
use crate::export::exec::{file_stem, histogram, interval_log, shell_words};
use crate::export::folder::{Folder, Kind};
use crate::export::svg::{self, Axis, Chart, Scale, Series};
use crate::export::table::{render_markdown, render_table, TableRow};
use crate::fmt::{fmt_count, fmt_ns, group_thousands};
use crate::model::experiment::geometric;
use crate::model::spec::{parse_size, Allocator};
use crate::ui::interrupt::interrupted;
use crate::ui::progress::Progress;
use serde::Serialize;

/// `--sizes`: FROM..TO (geometric, `per_octave` per doubling) or a list, ascending,
/// without repeats.
pub fn parse_sizes(text: &str, per_octave: u32) -> std::result::Result<Vec<u64>, String> {
    let size = |s: &str| parse_size(s.trim()).map_err(|e| format!("--sizes {text}: {e}"));
    let mut sizes = match text.split_once("..") {
        Some((a, b)) => {
            let (from, to) = (size(a)?, size(b)?);
            if from >= to {
                return Err(format!(
                    "--sizes {text}: the range must go up (FROM..TO with FROM < TO), e.g. 1e4..1e6"
                ));
            }
            geometric(from, to, per_octave)
        }
        None => text
            .split(',')
            .map(size)
            .collect::<std::result::Result<Vec<_>, _>>()?,
    };
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.len() < 2 {
        return Err(format!(
            "--sizes {text}: a sweep needs at least two sizes (FROM..TO, or a list such as 1e4,1e5,1e6)"
        ));
    }
    Ok(sizes)
}

/// The sweep as `sweep.json` keeps it.
#[derive(Serialize)]
struct SweepFile<'a> {
    schema: &'static str,
    command: Vec<String>,
    per: String,
    sizes: &'a [u64],
    complete: bool,
    /// What --max-time left undone, when it did (None: nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_time_cut: Option<&'a str>,
    rows: &'a [PointRow],
    cliffs: &'a [CommandCliff],
}

pub fn run(args: &SweepArgs, level: f64) -> Result<()> {
    let p = &args.program;
    if p.command.is_empty() {
        return Err(Error::BadInput(
            "no command given: put it after `--`, with {size} where it takes its input size".into(),
        ));
    }
    let template = Template::new(p.command.clone());
    template.check(true, p.calls).map_err(Error::BadInput)?;
    let sizes = parse_sizes(&args.sizes, args.per_octave).map_err(Error::BadInput)?;
    let per = template.per(p.calls);
    let settings = command_settings(
        crate::model::knobs::parse_spec_list(&args.allocators).map_err(Error::bad)?,
        &template.words,
        CommandOptions::of_program(
            p,
            args.runs,
            args.thp,
            args.counters,
            crate::model::metric::NOISE_THRESHOLD,
            level,
        ),
    )
    .map_err(Error::BadInput)?;
    let folder = super::exec::take_out_dir(&args.out, Kind::Sweep, args.force_out)?;
    crate::engine::begin();
    let mut sweep = Sweep {
        settings,
        template,
        per,
        sizes,
        folder,
        rows: Vec::new(),
        cliffs: Vec::new(),
        records: Vec::new(),
        started: std::time::Instant::now(),
        max_time: args.max_time,
        cut: None,
    };
    sweep.measure_sizes(&args.out)?;
    if !args.no_cliffs && sweep.cut.is_none() {
        sweep.bisect(args)?;
    }
    let complete = !interrupted() && sweep.cut.is_none();
    sweep.write(complete)?;
    sweep
        .folder
        .finish(complete)
        .map_err(|e| Error::RunFailed(format!("writing the results failed: {e}")))?;
    super::print_out(&sweep.screen(args.no_cliffs, complete))?;
    crate::fmt::say!("results in {}", args.out.display());
    if interrupted() {
        return Err(Error::Interrupted(
            "the sizes measured are kept; the cliffs not bisected are missing".into(),
        ));
    }
    let failed = sweep.rows.iter().filter(|r| !r.status.is_ok()).count();
    super::failed_runs(failed, sweep.rows.len(), "sizes × allocators")
}

/// The console's heading of the differences the sweep saw that were noise when measured
/// again: no change, and not listed as one.
const NOISE_HEADING: &str =
    "not a change: seen in the sweep, within the noise when measured again:";

/// The changes the sweep saw that were not bisected to a cliff: with `noise`, those that
/// were within the noise when measured again (no change); without, the others.
fn unresolved(cliffs: &[CommandCliff], noise: bool) -> Vec<&CommandCliff> {
    cliffs
        .iter()
        .filter(|c| c.unresolved.is_some() && c.noise == noise)
        .collect()
}

/// A sweep under way: what it runs, its folder, and what it has measured so far.
struct Sweep {
    settings: crate::engine::command::ExecSettings,
    template: Template,
    per: Per,
    sizes: Vec<u64>,
    folder: Folder,
    rows: Vec<PointRow>,
    cliffs: Vec<CommandCliff>,
    records: Vec<(u64, ExecRecord)>,
    /// When the sweep began, and its bound (--max-time, seconds).
    started: std::time::Instant,
    max_time: f64,
    /// What --max-time left undone ("sizes 8,000 to 12,000 not measured"), once it did.
    cut: Option<String>,
}

impl Sweep {
    /// Every size under every allocator, each size's record on disk as it runs and the
    /// folder rewritten after it; an interrupt keeps the sizes measured.
    fn measure_sizes(&mut self, out: &std::path::Path) -> Result<()> {
        let arms = if matches!(self.per, Per::Difference(_)) {
            2
        } else {
            1
        };
        let planned = self.sizes.len()
            * self.settings.allocators.len()
            * arms
            * (self.settings.runs + self.settings.warmup) as usize;
        let mut progress = ExecProgress::planned(Progress::with_results(planned));
        crate::fmt::say!("{}", self.per.describe());
        let mut last_size = None::<f64>;
        for (k, size) in self.sizes.clone().into_iter().enumerate() {
            // Each size is expected to cost what the last one did; the first always runs.
            let elapsed = self.started.elapsed().as_secs_f64();
            if last_size.is_some_and(|last| elapsed + last > self.max_time) {
                self.cut = Some(format!(
                    "--max-time {} s left no room for size {} and after: {} of the {} sizes measured, no change bisected",
                    crate::fmt::trim_float(self.max_time),
                    group_thousands(size as i64),
                    k,
                    self.sizes.len()
                ));
                break;
            }
            let size_started = std::time::Instant::now();
            let name = format!("points/n{size}.json");
            let f = &self.folder;
            let mut save = |r: &ExecRecord| f.json(&name, r).map_err(|e| e.to_string());
            let (record, point) = program::measure(
                &self.settings,
                &self.template,
                Some(size),
                self.per,
                &mut progress,
                &mut save,
            )?;
            let complete = record.complete;
            last_size = Some(size_started.elapsed().as_secs_f64());
            if complete {
                self.rows.extend(point);
                self.records.push((size, record));
            }
            self.write(false)?;
            if !complete {
                progress.0.clear();
                return Err(Error::Interrupted(format!(
                    "the sizes measured are kept in {}",
                    out.display()
                )));
            }
        }
        progress.0.finish();
        Ok(())
    }

    /// Each change between neighbouring sizes bisected to its sizes (and, with
    /// --bytes-per-element, matched to the allocator's thresholds and confirmed), each
    /// on disk once found.
    fn bisect(&mut self, args: &SweepArgs) -> Result<()> {
        let per = self.per;
        let jumps = program::jumps(&self.rows, per);
        let count = jumps.len();
        for (k, j) in jumps.into_iter().enumerate() {
            if interrupted() {
                break;
            }
            if self.started.elapsed().as_secs_f64() >= self.max_time {
                self.cut = Some(format!(
                    "--max-time {} s ran out before {} of the {count} changes were bisected (every size was measured)",
                    crate::fmt::trim_float(self.max_time),
                    count - k
                ));
                break;
            }
            crate::fmt::say!(
                "bisecting: {} {} per {} between {} and {} elements",
                j.allocator,
                j.metric.name(),
                per.unit(),
                group_thousands(j.from_size as i64),
                group_thousands(j.to_size as i64)
            );
            let mut quiet = ExecProgress::quiet();
            let mut show = |probe: &crate::analysis::cliff::Probe<program::PointRow>| {
                crate::fmt::say!(
                    "  size {:>12}: {} {} per {}",
                    group_thousands(probe.size as i64),
                    fmt_count(probe.value),
                    j.metric.name(),
                    per.unit()
                )
            };
            let c = program::bisect(
                &self.settings,
                &self.template,
                per,
                &j,
                args.resolution,
                &mut quiet,
                &mut show,
            );
            // A bisection cut short is no cliff. One finished is on disk before its
            // confirmation starts, so that a kill during that keeps it; Ctrl-C there
            // keeps it too, its confirmation saying it was not measured.
            if interrupted() {
                break;
            }
            self.cliffs.push(c);
            self.write(false)?;
            let (Some(per_element), Some(c)) = (args.bytes_per_element, self.cliffs.last_mut())
            else {
                continue;
            };
            program::explain(
                &self.settings,
                &self.template,
                per,
                c,
                program::Buffers {
                    per_element,
                    live: args.buffers,
                },
                args.confirm,
                args.resolution,
                &mut quiet,
                &mut show,
                &mut |line| crate::fmt::say!("{line}"),
            );
            if let Some(conf) = &c.confirmation {
                crate::fmt::say!("  {}", conf.describe());
            }
            self.write(false)?;
        }
        Ok(())
    }

    /// The console: the answer first (where the counts change), the table of every size,
    /// then the changes the sweep saw that did not hold when measured again.
    fn screen(&self, no_cliffs: bool, complete: bool) -> String {
        let (per, cliffs) = (self.per, &self.cliffs);
        let width = crate::fmt::screen_width();
        let mut text = String::new();
        if let Some(cut) = &self.cut {
            text.push_str(&crate::fmt::wrap(
                &format!("INCOMPLETE: {cut} (a longer --max-time measures the rest)"),
                width,
                "",
                "  ",
            ));
        }
        let items = answer(cliffs, &self.rows, per.unit());
        if !items.is_empty() {
            text.push_str(&format!(
                "where faults or memory syscalls per {} change:\n",
                per.unit()
            ));
            for i in &items {
                text.push_str(&crate::fmt::wrap(&i.text, width, "  ", "    "));
            }
        } else if !complete && self.cut.is_none() {
            text.push_str(&crate::fmt::wrap(
                "INCOMPLETE: the sweep stopped before every size was measured and every change bisected, so it states no cliff",
                width,
                "",
                "  ",
            ));
        } else if !no_cliffs {
            text.push_str(&crate::fmt::wrap(
                &format!(
                    "no change between neighbouring sizes: no allocator's faults per {0} move by 1 or more beyond their noise other than by growing with the size, nor its memory syscalls per {0} by 0.5 or more beyond theirs{1}",
                    per.unit(),
                    if cliffs.is_empty() { "" } else { " (the changes the sweep saw did not hold when measured again)" }
                ),
                width,
                "",
                "  ",
            ));
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&table(&self.rows, false, self.settings.level));
        // A change that did not hold when measured again is no change: said apart.
        for (heading, noise) in [
            ("seen in the sweep, not bisected:", false),
            (NOISE_HEADING, true),
        ] {
            let listed = unresolved(cliffs, noise);
            if listed.is_empty() {
                continue;
            }
            text.push_str(&format!("\n{heading}\n"));
            for c in listed {
                text.push_str(&crate::fmt::wrap(
                    &c.describe(per.unit()),
                    width,
                    "  ",
                    "    ",
                ));
            }
        }
        text
    }
}

fn time(r: &PointRow) -> String {
    match (r.time_ns, r.time_ci_low_ns, r.time_ci_high_ns) {
        (Some(t), Some(lo), Some(hi)) => format!("{} [{}, {}]", fmt_ns(t), fmt_ns(lo), fmt_ns(hi)),
        (Some(t), _, _) => fmt_ns(t),
        _ => "n/a".into(),
    }
}

/// The per-call figures the table shows: those with a spread over the rounds (faults,
/// memory syscalls).
fn shown() -> impl Iterator<Item = crate::model::metric::Metric> {
    crate::model::metric::PER_CALL
        .into_iter()
        .filter(|m| m.spread)
}

/// The rows as a plain-text or Markdown table.
fn table(rows: &[PointRow], markdown: bool, level: f64) -> String {
    let unit = rows.first().map_or("call", |r| r.per.as_str());
    let headers = [
        "size".to_string(),
        "allocator".to_string(),
        format!(
            "time/{unit} [{} CI]",
            crate::analysis::stats::level_text(level)
        ),
    ]
    .into_iter()
    .chain(shown().map(|m| format!("{}/{unit}", m.short)))
    .chain(["peak RSS".to_string(), "runs".to_string()])
    .collect::<Vec<_>>();
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    let count = |v: Option<f64>| v.map_or("n/a".to_string(), fmt_count);
    let t: Vec<TableRow> = rows
        .iter()
        .map(|r| TableRow {
            cells: [group_thousands(r.size as i64), r.allocator.clone(), time(r)]
                .into_iter()
                .chain(shown().map(|m| count(r.per_call.value[m])))
                .chain([
                    r.peak_rss_mib
                        .map_or("n/a".into(), |m| format!("{m:.1} MiB")),
                    r.runs.to_string(),
                ])
                .collect(),
            // The table writes "FAILED: " before it.
            failure: r.error.clone(),
        })
        .collect();
    if markdown {
        render_markdown(&h, 2, &t)
    } else {
        render_table(&h, 2, &t)
    }
}

/// The colour of an exec allocator label (installed libraries in greys).
fn colour(label: &str, shade: usize) -> &'static str {
    let name = label.split(':').next().unwrap_or(label);
    match crate::model::spec::parse_choice::<Allocator>(name) {
        Ok(a) => crate::export::plots::color(a, label, shade),
        Err(_) => crate::export::plots::color(Allocator::System, label, shade),
    }
}

fn plot(
    rows: &[PointRow],
    title: &str,
    y: &str,
    scale: Scale,
    value: fn(&PointRow) -> Option<f64>,
    format: fn(f64) -> String,
) -> String {
    let mut labels: Vec<&str> = Vec::new();
    for r in rows {
        if !labels.contains(&r.allocator.as_str()) {
            labels.push(&r.allocator);
        }
    }
    let mut shades: Vec<(Allocator, usize)> = Vec::new();
    let series = labels
        .iter()
        .map(|l| {
            let a = l
                .split(':')
                .next()
                .and_then(|n| crate::model::spec::parse_choice::<Allocator>(n).ok())
                .unwrap_or(Allocator::System);
            let shade = shades.iter().filter(|(x, _)| *x == a).count();
            shades.push((a, shade));
            Series {
                label: l.to_string(),
                color: colour(l, shade),
                dash: None,
                points: rows
                    .iter()
                    .filter(|r| r.allocator == *l && r.status.is_ok())
                    .filter_map(|r| Some((r.size as f64, value(r)?)))
                    // A difference below 0 is noise larger than the calls' cost: a count
                    // sits on the axis' floor; a time is left out (the table keeps it).
                    .filter_map(|(x, y)| match scale {
                        Scale::Log => (y > 0.0).then_some((x, y)),
                        _ => Some((x, y.max(0.0))),
                    })
                    .collect(),
            }
        })
        .collect();
    svg::render(&Chart {
        title: title.into(),
        x: Axis {
            label: "size (elements)".into(),
            scale: Scale::Log,
            format: |v| fmt_count(v),
        },
        y: Axis {
            label: y.into(),
            scale,
            format,
        },
        series,
    })
}

/// The sweep's answer: each cliff bisected to its sizes, in words, with the cliff as
/// cliffs.json keeps it (a change the sweep saw that did not hold when measured again is
/// not an answer: it is listed after them). The console, REPORT.md, report.html and
/// findings.json show these items.
fn answer(cliffs: &[CommandCliff], rows: &[PointRow], unit: &str) -> Vec<Item> {
    cliffs
        .iter()
        .filter(|c| c.unresolved.is_none())
        .map(|c| Item {
            text: format!("{}{}", c.describe(unit), time_effect(c, rows, unit)),
            parts: None,
            figures: serde_json::to_value(c).ok().map(Figures::SweepCliff),
            incomplete: None,
        })
        .collect()
}

/// What the time per call does across cliff `c`: the allocator's measured time at the
/// sweep's sizes either side of it, with their intervals ("; time per call in the
/// sweep: 2.10 ms at 8,000 elements, 5.81 ms at 16,000"), or nothing where either size
/// has no time.
fn time_effect(c: &CommandCliff, rows: &[PointRow], unit: &str) -> String {
    let at = |size: u64| {
        rows.iter()
            .find(|r| r.allocator == c.allocator && r.size == size && r.status.is_ok())
            .filter(|r| r.time_ns.is_some())
    };
    match (at(c.sweep_from), at(c.sweep_to)) {
        (Some(a), Some(b)) => format!(
            "; time per {unit} in the sweep: {} at {} elements, {} at {}",
            time(a),
            group_thousands(c.sweep_from as i64),
            time(b),
            group_thousands(c.sweep_to as i64)
        ),
        _ => String::new(),
    }
}

/// The folder's files, rewritten from what is measured so far (every file atomically).
impl Sweep {
    /// Every file of the folder; `complete` only once every size is measured and every
    /// change bisected.
    fn write(&self, complete: bool) -> Result<()> {
        self.write_data(complete)?;
        let (plots_md, drawings) = self.write_plots()?;
        self.write_report(complete, &plots_md, drawings)
    }

    /// sweep.json, cliffs.json, summary.csv and every size's HdrHistogram files.
    fn write_data(&self, complete: bool) -> Result<()> {
        let (folder, per, sizes, rows, cliffs, records) = (
            &self.folder,
            self.per,
            &self.sizes[..],
            &self.rows[..],
            &self.cliffs[..],
            &self.records[..],
        );
        let command = self.command();
        let err = |e: crate::export::results::ResultsError| {
            Error::RunFailed(format!("writing the results failed: {e}"))
        };
        folder
            .json(
                "sweep.json",
                &SweepFile {
                    schema: "alloclab.sweep/1",
                    command: command.clone(),
                    per: per.describe(),
                    sizes,
                    complete,
                    max_time_cut: self.cut.as_deref(),
                    rows,
                    cliffs,
                },
            )
            .map_err(err)?;
        folder.json("cliffs.json", &cliffs).map_err(err)?;
        folder
            .text(
                "summary.csv",
                &crate::export::csv::csv_of(rows, &PointRow::default()),
            )
            .map_err(err)?;
        // Run times of every size and allocator, in the lab's HdrHistogram files.
        // With {calls}, the 2N-call runs of each allocator (its second row).
        let step = if matches!(per, Per::Difference(_)) {
            2
        } else {
            1
        };
        for (size, r) in records {
            for pair in r.allocators.chunks(step) {
                let (name, runs) = (&pair[0].allocator, &pair[pair.len() - 1]);
                if let Some(h) = histogram(runs) {
                    let stem = format!("{}-n{size}", file_stem(name));
                    let of = if step == 2 {
                        format!("the command at size {size}, its 2N-call runs")
                    } else {
                        format!("the command at size {size}")
                    };
                    let log = interval_log(runs, &of);
                    folder.histogram(&stem, &h, &log).map_err(err)?;
                }
            }
        }
        Ok(())
    }

    /// The plots against size; REPORT.md's lines for them and the drawings for the page.
    fn write_plots(&self) -> Result<(String, Vec<(String, String)>)> {
        let (folder, per, rows) = (&self.folder, self.per, &self.rows[..]);
        let unit = per.unit();
        let err = |e: crate::export::results::ResultsError| {
            Error::RunFailed(format!("writing the results failed: {e}"))
        };
        let plots = [
            (
                "faults-per-call",
                format!("minor faults per {unit}"),
                Scale::LogFloor(0.01),
                (|r: &PointRow| r.value(crate::analysis::cliff::Metric::Faults))
                    as fn(&PointRow) -> Option<f64>,
                (|v: f64| fmt_count(v)) as fn(f64) -> String,
            ),
            (
                "memory-syscalls-per-call",
                format!("memory syscalls per {unit}"),
                Scale::LogFloor(0.01),
                |r: &PointRow| r.value(crate::analysis::cliff::Metric::Syscalls),
                |v: f64| fmt_count(v),
            ),
            (
                "time-per-call",
                format!("wall time per {unit}"),
                Scale::Log,
                |r: &PointRow| r.time_ns,
                |v: f64| fmt_ns(v),
            ),
            (
                "peak-rss",
                "peak RSS (MiB)".to_string(),
                Scale::Log,
                |r: &PointRow| r.peak_rss_mib,
                |v: f64| fmt_count(v),
            ),
        ];
        let mut md = String::new();
        let mut drawings = Vec::new();
        for (name, y, scale, value, format) in plots {
            let svg = plot(rows, &format!("{y} against size"), &y, scale, value, format);
            folder
                .text(&format!("plots/{name}.svg"), &svg)
                .map_err(err)?;
            md.push_str(&format!("![{y}](plots/{name}.svg)\n"));
            drawings.push((format!("{y} against size (plots/{name}.svg)"), svg));
        }
        Ok((md, drawings))
    }

    /// findings.json, REPORT.md and report.html: the answer first.
    fn write_report(
        &self,
        complete: bool,
        plots_md: &str,
        drawings: Vec<(String, String)>,
    ) -> Result<()> {
        let err = |e: crate::export::results::ResultsError| {
            Error::RunFailed(format!("writing the results failed: {e}"))
        };
        let items = answer(&self.cliffs, &self.rows, self.per.unit());
        self.folder
            .json(
                "findings.json",
                &crate::analysis::findings::SweepFindings {
                    schema: crate::analysis::findings::SCHEMA,
                    command: self.command(),
                    complete,
                    answer: items.clone(),
                },
            )
            .map_err(err)?;
        let md = self.markdown(complete, &items, plots_md);
        self.folder.text("REPORT.md", &md.md).map_err(err)?;
        let (rows, sizes) = (&self.rows, &self.sizes);
        // An unfinished sweep says so in the page's title, as an unfinished run's page does.
        let title = if complete {
            "alloclab sweep".to_string()
        } else {
            format!(
                "INCOMPLETE ({} of {} sizes): alloclab sweep",
                group_thousands(
                    rows.iter()
                        .map(|r| r.size)
                        .collect::<std::collections::BTreeSet<_>>()
                        .len() as i64
                ),
                group_thousands(sizes.len() as i64)
            )
        };
        let page = crate::export::html::folder_page(
            &title,
            &md,
            drawings,
            Vec::new(),
            String::new(),
            crate::export::headlines::Answer {
                price: Vec::new(),
                items,
                more: 0,
                incomplete: (!complete).then(|| match &self.cut {
                    Some(cut) => format!("INCOMPLETE: {cut}"),
                    None => "INCOMPLETE: not every size was measured, or not every cliff bisected"
                        .to_string(),
                }),
            },
        );
        self.folder.text("report.html", &page).map_err(err)?;
        Ok(())
    }

    /// The command as its words.
    fn command(&self) -> Vec<String> {
        self.template
            .words
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect()
    }

    /// REPORT.md: the command, the answer (and the changes not bisected), the plots and
    /// the table.
    fn markdown(
        &self,
        complete: bool,
        items: &[Item],
        plots_md: &str,
    ) -> crate::export::html::Report {
        let mut found = Vec::new();
        let (per, sizes, rows, cliffs) = (self.per, &self.sizes, &self.rows, &self.cliffs);
        let unit = per.unit();
        let mut md = format!(
            "# alloclab sweep\n\n```\n{}\n```\n\n",
            shell_words(&self.command())
        );
        if !complete {
            let measured = rows
                .iter()
                .map(|r| r.size)
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            match &self.cut {
                Some(cut) => md.push_str(&format!(
                    "> **Incomplete:** {cut}; a longer `--max-time` measures the rest.\n\n"
                )),
                None => md.push_str(&format!(
            "> **Incomplete:** {measured} of {} sizes measured{}; the sweep is still going, or was interrupted or killed. Only a finished sweep says `\"complete\": true` in sweep.json and folder.json.\n\n",
            sizes.len(),
            if measured == sizes.len() { " (the cliffs between them are not all bisected)" } else { "" }
        )),
            }
        }
        let about = format!(
            "Figures are {}; time is the median over the rounds with its {} interval. Sizes: {}.",
            per.describe(),
            crate::analysis::stats::level_text(self.settings.level),
            sizes
                .iter()
                .map(|s| group_thousands(*s as i64))
                .collect::<Vec<_>>()
                .join(", ")
        );
        md.push_str(&format!("{about}\n\n"));
        md.push_str("## Where behaviour changes\n\n");
        if items.is_empty() {
            md.push_str("No change bisected (none found between neighbouring sizes, or `--no-cliffs`, or not reached).\n\n");
        }
        for i in items {
            md.push_str(&format!("* {}\n", i.text));
        }
        for (heading, noise) in [
            ("Seen in the sweep, not bisected:", false),
            (
                "Not a change: seen in the sweep, within the noise when measured again:",
                true,
            ),
        ] {
            let listed = unresolved(cliffs, noise);
            if listed.is_empty() {
                continue;
            }
            md.push_str(&format!("\n**{heading}**\n\n"));
            for c in listed {
                crate::export::html::bullet(&mut md, &mut found, heading, &c.describe(unit));
            }
        }
        md.push_str("\n## Plots\n\n");
        md.push_str(plots_md);
        md.push_str("\n## Summary\n\n");
        md.push_str(&table(rows, true, self.settings.level));
        md.push_str("\nEvery run: `points/n<size>.json` (exec's record of that size). Run times: `histograms/<allocator>-n<size>.us.csv` (HdrHistogram, µs; with {calls}, the 2N-call runs). All rows: `summary.csv`; cliffs: `cliffs.json`.\n");
        crate::export::html::Report {
            md,
            environment: vec![shell_words(&self.command()), about],
            findings: found,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_ranges_and_lists() {
        assert_eq!(parse_sizes("1000..4000", 1).unwrap(), [1000, 2000, 4000]);
        assert_eq!(parse_sizes("1e4,2^10,1e4", 2).unwrap(), [1024, 10000]);
        for bad in ["", "5", "4000..1000", "1e4..x", "a,b"] {
            assert!(parse_sizes(bad, 2).is_err(), "{bad:?} accepted");
        }
        assert!(parse_sizes("4000..1000", 2)
            .unwrap_err()
            .contains("must go up"));
    }
}
