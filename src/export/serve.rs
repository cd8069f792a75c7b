//! A `serve` session's outputs: the answer-first screen, `serve.json`, `summary.csv`,
//! `histograms/<allocator>.<rate>.us.hgrm` (latency from the intended start) and
//! `….from-sent.us.hgrm`, `memory/<allocator>.csv` and REPORT.md.

use crate::analysis::serve::{answer, rows, ServeRow};
use crate::export::folder::Folder;
use crate::fmt::{fmt_ns, group_thousands, human_bytes};
use crate::model::serve::ServeRecord;
use crate::model::spec::file_stem;

/// The table: one line per rate and allocator.
pub fn table(rows: &[ServeRow], width: usize) -> String {
    // Below 100 columns the p99.9 and max columns are left out (REPORT.md, summary.csv
    // and serve.json keep them), so that the table fits the terminal.
    let wide = width >= 100;
    let line = |cells: [String; 10]| {
        let mut l = format!(
            "{:<14} {:>9} {:>5} {:>9} {:>9}",
            cells[0], cells[1], cells[2], cells[3], cells[4]
        );
        if wide {
            l.push_str(&format!(" {:>9} {:>9}", cells[5], cells[6]));
        }
        l.push_str(&format!(
            " {:>10} {:>8} {:>9}\n",
            cells[7], cells[8], cells[9]
        ));
        l
    };
    let mut s = line(
        [
            "allocator",
            "rate/s",
            "procs",
            "p50",
            "p99",
            "p99.9",
            "max",
            "p99 sent",
            "RSS/used",
            "flt/1k",
        ]
        .map(String::from),
    );
    for r in rows {
        s.push_str(&line([
            r.allocator.clone(),
            group_thousands(r.rate_per_s as i64),
            r.processes.to_string(),
            fmt_ns(r.p50_ns),
            fmt_ns(r.p99_ns),
            fmt_ns(r.p999_ns),
            fmt_ns(r.max_ns),
            fmt_ns(r.p99_from_sent_ns),
            r.rss_per_used().map_or("-".into(), |x| format!("{x:.2}")),
            format!("{:.1}", r.faults_per_1000),
        ]));
    }
    s
}

/// What the session was, in one paragraph.
pub fn header(record: &ServeRecord) -> String {
    format!(
        "server: {}\nload: RESP, open loop, rates {} requests/s, {} s each over {} connection(s); the built-in service's requests (75 % GET, 20 % SET, 5 % DEL over 16,384 keys, values of Facebook's ETC sizes, seed {}); latency from each request's intended start; {} server process(es) per allocator, one per round in a shuffled order (seed {})\n",
        crate::fmt::shell_words(&record.command),
        record
            .rates_per_s
            .iter()
            .map(|r| group_thousands(*r as i64))
            .collect::<Vec<_>>()
            .join(", "),
        crate::fmt::trim_float(record.seconds_per_rate),
        record.connections,
        record.seed,
        record.processes,
        record.order_seed
    )
}

/// What runs under an allocator whose name alone would mislead (a server that links its
/// own allocator library), one line each.
pub fn notes(record: &ServeRecord) -> Vec<String> {
    let program = record.command.first().map_or("the server", String::as_str);
    let name = program.rsplit('/').next().unwrap_or(program);
    record
        .allocators
        .iter()
        .filter_map(|a| {
            let own = a.own_allocator.as_deref()?;
            Some(format!(
                "{name} links {own} itself: {} preloads alloclab's glibc shim so that glibc's malloc serves it; to measure it as shipped, name {own} as an allocator",
                a.allocator
            ))
        })
        .collect()
}

/// The failures, one line each.
pub fn failures(record: &ServeRecord) -> Vec<String> {
    record
        .allocators
        .iter()
        .filter_map(|a| {
            let why = a.failure.as_ref()?;
            let tail = a
                .stderr_tail
                .as_deref()
                .map(|t| {
                    t.lines()
                        .filter(|l| !l.trim().is_empty())
                        .collect::<Vec<_>>()
                })
                .filter(|last| !last.is_empty())
                .map(|last| {
                    format!(
                        "; its stderr ended with: {}",
                        last[last.len().saturating_sub(2)..].join(" / ")
                    )
                })
                .unwrap_or_default();
            Some(format!("{} failed: {why}{tail}", a.allocator))
        })
        .collect()
}

/// The screen: the answer first, then the table, then what failed.
pub fn screen(record: &ServeRecord, target_ns: f64, width: usize) -> String {
    let rows = rows(record);
    let mut s = String::new();
    if !record.complete {
        s.push_str("incomplete: interrupted before every planned server process ran; the figures are from those that finished\n");
    }
    for l in answer(record, &rows, target_ns) {
        s.push_str(&crate::fmt::wrap(&l, width, "", "      "));
    }
    for l in failures(record).into_iter().chain(notes(record)) {
        s.push_str(&crate::fmt::wrap(&l, width, "", "      "));
    }
    s.push('\n');
    s.push_str(&table(&rows, width));
    s.push('\n');
    s.push_str(&crate::fmt::wrap_lines(&header(record), width));
    s
}

/// REPORT.md.
pub fn report(record: &ServeRecord, target_ns: f64) -> String {
    let rows = rows(record);
    let mut s = String::from("# alloclab serve\n\n");
    if !record.complete {
        s.push_str("> **Incomplete:** interrupted before every planned server process ran.\n\n");
    }
    s.push_str("## Answer\n\n");
    for l in answer(record, &rows, target_ns) {
        s.push_str(&format!("- {l}\n"));
    }
    for l in failures(record).into_iter().chain(notes(record)) {
        s.push_str(&format!("- {l}\n"));
    }
    s.push_str("\n## Per rate\n\n| allocator | rate/s | processes | p50 | p99 | p99.9 | max | p99 from the send | RSS | used_memory | faults per 1,000 | CPU per request |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in &rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} µs |\n",
            r.allocator,
            group_thousands(r.rate_per_s as i64),
            r.processes,
            fmt_ns(r.p50_ns),
            fmt_ns(r.p99_ns),
            fmt_ns(r.p999_ns),
            fmt_ns(r.max_ns),
            fmt_ns(r.p99_from_sent_ns),
            human_bytes(r.rss_end as u64),
            r.used_end.map_or("-".into(), |u| human_bytes(u as u64)),
            r.faults_per_1000,
            r.cpu_us_per_request
        ));
    }
    s.push_str("\n## Method\n\n");
    s.push_str(&header(record));
    s.push_str("\nEvery server process is started under its allocator (preloaded as `alloclab exec` does), waited for until it answers PING, filled with the keys that hold a value, then driven at each rate in turn and stopped with `SHUTDOWN NOSAVE`. RSS is read from /proc/<pid>/statm and used_memory from the server's `INFO memory` at the end of each rate; faults and CPU per request from /proc/<pid>/stat across the rate's phase. The load generator runs on the same machine and shares its cores with the server: its own lateness (the latest a request went out after it was due) is in serve.json as `send_lag_max_ns`, and it is in the latency from the intended start.\n");
    s
}

/// summary.csv: one line per allocator and rate.
fn summary_csv(rows: &[ServeRow], record_band: f64) -> String {
    let mut s = String::from("allocator,rate_per_s,processes,p50_ns,p99_ns,p999_ns,max_ns,p99_from_sent_ns,p99_vs_first,p99_vs_first_low,p99_vs_first_high,verdict,served_per_s,rss_end_bytes,used_memory_end_bytes,faults_per_1000,cpu_us_per_request\n");
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x}"));
    for r in rows {
        let c = r.vs_first.as_ref();
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{:.1},{},{},{:.3},{:.3}\n",
            crate::export::csv::field(&r.allocator),
            r.rate_per_s,
            r.processes,
            r.p50_ns,
            r.p99_ns,
            r.p999_ns,
            r.max_ns,
            r.p99_from_sent_ns,
            opt(c.map(|c| c.ratio)),
            opt(c.and_then(|c| c.interval).map(|i| i.low)),
            opt(c.and_then(|c| c.interval).map(|i| i.high)),
            c.map_or(String::new(), |c| crate::export::csv::field(
                &crate::analysis::serve::verdict_words(c, record_band)
            )),
            r.served_per_s,
            r.rss_end,
            opt(r.used_end),
            r.faults_per_1000,
            r.cpu_us_per_request
        ));
    }
    s
}

/// findings.json of a serve folder: the answer's items, word for word as the screen and
/// REPORT.md print them, what failed and the notes.
#[derive(serde::Serialize)]
struct ServeFindings {
    schema: &'static str,
    command: Vec<String>,
    complete: bool,
    noise_threshold: f64,
    confidence: f64,
    p99_target_ns: f64,
    answer: Vec<crate::analysis::findings::Item>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    failed: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
}

/// Writes every file of the session into `folder` (after every server process).
pub fn save(folder: &Folder, record: &ServeRecord, target_ns: f64) -> Result<(), String> {
    let err = |e: crate::export::results::ResultsError| e.to_string();
    folder.json("serve.json", record).map_err(err)?;
    folder.json("env.json", &record.environment).map_err(err)?;
    let rows = rows(record);
    folder
        .text("summary.csv", &summary_csv(&rows, record.noise_threshold))
        .map_err(err)?;
    for a in &record.allocators {
        for &rate in &record.rates_per_s {
            for (from_sent, suffix, what) in [
                (false, "", "from each request's intended start"),
                (true, ".from-sent", "from each request's write"),
            ] {
                let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
                let mut intervals = Vec::new();
                for r in &a.runs {
                    let Some(p) = r.phases.iter().find(|p| p.rate_per_s == rate) else {
                        continue;
                    };
                    let h = if from_sent {
                        &p.from_sent
                    } else {
                        &p.from_intended
                    };
                    let Ok(h) = h.decode() else { continue };
                    match &mut merged {
                        None => merged = Some(h.clone()),
                        Some(m) => {
                            let _ = m.add(&h);
                        }
                    }
                    intervals.push(crate::export::hlog::Interval {
                        label: format!("server process of round {}", r.round),
                        start_unix_ns: None,
                        length_ns: p.sent_for_ns,
                        histogram: h,
                    });
                }
                let Some(m) = merged else { continue };
                let log = crate::export::hlog::IntervalLog {
                    what: format!(
                        "latency {what} of {} at {rate} requests/s; one interval per server process",
                        a.allocator
                    ),
                    intervals,
                };
                folder
                    .histogram(
                        &format!("{}.{rate}-per-s{suffix}", file_stem(&a.allocator)),
                        &m,
                        &log,
                    )
                    .map_err(err)?;
            }
        }
        let runs: Vec<(String, &[crate::model::memory::MemorySample])> = a
            .runs
            .iter()
            .map(|r| (r.round.to_string(), &r.memory[..]))
            .collect();
        if let Some(text) = crate::export::results::memory_csv("process", &runs) {
            folder
                .text(&format!("memory/{}.csv", file_stem(&a.allocator)), &text)
                .map_err(err)?;
        }
    }
    folder
        .json(
            "findings.json",
            &ServeFindings {
                schema: crate::analysis::findings::SCHEMA,
                command: record.command.clone(),
                complete: record.complete,
                noise_threshold: record.noise_threshold,
                confidence: record.confidence,
                p99_target_ns: target_ns,
                answer: answer(record, &rows, target_ns)
                    .into_iter()
                    .map(crate::analysis::findings::Item::text)
                    .collect(),
                failed: failures(record),
                notes: notes(record),
            },
        )
        .map_err(err)?;
    let md = report(record, target_ns);
    folder.text("REPORT.md", &md).map_err(err)?;
    folder
        .text("report.html", &page(record, &md))
        .map_err(err)?;
    Ok(())
}

/// report.html: REPORT.md as one self-contained page, titled with the server's command.
fn page(record: &ServeRecord, md: &str) -> String {
    let title = format!(
        "alloclab serve — {}",
        crate::fmt::shell_words(&record.command)
    );
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>body{{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:1.5rem auto;padding:0 1rem;color:#222}}table{{border-collapse:collapse;display:block;overflow-x:auto}}td,th{{border:1px solid #ccc;padding:.2rem .5rem;text-align:right}}td:first-child,th:first-child{{text-align:left}}code{{background:#f3f3f3}}li{{margin:.3rem 0}}</style></head><body>\n{}\n</body></html>\n",
        crate::export::escape_markup(&title),
        crate::export::markdown::to_html(md)
    )
}
