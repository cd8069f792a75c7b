//! `index.html` of a folder of results folders (what `make run-all` writes): the run's
//! answer on its first screen — the founding case's verdict under glibc with the
//! mechanism its counts show, what removes it (the tunables experiment), where it starts
//! (the size sweep's cliffs, each matched against the allocator's known thresholds) —
//! then every allocator × variant as a heat table, and a link to every folder's page.
//!
//! Everything on it is read from the folders (their runs, summaries and cliffs); a part
//! whose folder is missing or incomplete says so instead of a figure. The page is written
//! by [`crate::export::folder::write_index`], which replaces only an index the lab wrote.

use crate::analysis::answer::phrase;
use crate::analysis::cells;
use crate::analysis::stats::{Comparison, Verdict};
use crate::analysis::thresholds::{self, Cause};
use crate::export::escape_markup as esc;
use crate::export::folder::{self, Kind};
use crate::export::results::{self, Loaded};
use crate::fmt::{fmt_count, group_thousands, human_bytes};
use crate::model::metric::MINOR_FAULTS;
use crate::model::record::Cell;
use crate::model::spec::{Variant, Workload};
use crate::model::summary::SummaryRow;
use std::fmt::Write as _;
use std::path::Path;

/// The items as a list, each without its heading up to `after` (what the paragraph
/// above it already says).
fn item_list(out: &mut String, items: &[crate::analysis::findings::Item], after: &str) {
    out.push_str(r#"<ul class="price">"#);
    for item in items {
        let text = item
            .text
            .split_once(after)
            .map_or(item.text.as_str(), |(_, rest)| rest);
        let _ = write!(out, "<li>{}</li>", esc(text));
    }
    out.push_str("</ul>");
}

/// How the lab's index.html begins (the writer's mark of its own index).
pub use crate::export::folder::INDEX_HEAD as HEAD;

/// The noise band of the page's verdicts (the reports' own).
const THRESHOLD: f64 = crate::model::metric::NOISE_THRESHOLD;

/// One results folder under the parent.
pub struct Entry {
    /// Its name as shown (invalid UTF-8 replaced).
    pub name: String,
    /// What it holds (None: its folder.json could not be read; `problem` says why).
    kind: Option<Kind>,
    complete: bool,
    /// Where its plan did not finish, what has no result (a run folder's from its runs
    /// and folder.json, another's from folder.json).
    missing: Vec<String>,
    /// "its run is still going (alloclab pid N is writing it)": another alloclab holds it.
    writing: Option<String>,
    /// The link to its report.html, percent-encoded from the name's bytes.
    page: Option<String>,
    /// A run folder's cells.
    loaded: Option<Loaded>,
    /// Why a run folder's results could not be read.
    pub problem: Option<String>,
    /// A trace folder's call path under glibc: (variant, size, mechanism line).
    traced: Option<(String, u64, String)>,
}

impl Entry {
    /// A run folder whose plan did not finish, readable, with no page or a page built
    /// before it knew (its REPORT.md does not say INCOMPLETE): `report` of the parent
    /// rebuilds it.
    pub fn needs_rebuild(&self) -> bool {
        self.kind == Some(Kind::Run)
            && !self.complete
            && self.loaded.is_some()
            && self.page.is_none()
    }
}

/// The glibc mechanism line of a trace folder's trace.json, with its variant and size.
fn traced_mechanism(path: &Path) -> Option<(String, u64, String)> {
    traced_mechanism_of(&std::fs::read_to_string(path.join("trace.json")).ok()?)
}

/// The same, from trace.json's text.
fn traced_mechanism_of(text: &str) -> Option<(String, u64, String)> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let mechanism = v["allocators"]
        .as_array()?
        .iter()
        .find(|a| a["label"] == "system")?["mechanism"]
        .as_str()?
        .to_string();
    Some((
        v["variant"].as_str()?.to_string(),
        v["size"].as_u64()?,
        mechanism,
    ))
}

/// The results folders directly under `parent` (a folder with the lab's folder.json, or
/// a link to one), by name; anything else is left alone. A folder.json that cannot be
/// read (cut short, too large, not the lab's) is an entry with its problem, not skipped.
pub fn entries(parent: &Path) -> Vec<Entry> {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(dir) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut out: Vec<Entry> = dir
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let path = e.path();
            let raw = e.file_name();
            let name = raw.to_string_lossy().into_owned();
            let status = match folder::status(&path) {
                Ok(s) => s?,
                Err(why) => {
                    return Some(Entry {
                        name,
                        kind: None,
                        complete: false,
                        missing: Vec::new(),
                        writing: None,
                        page: None,
                        loaded: None,
                        problem: Some(why.to_string()),
                        traced: None,
                    })
                }
            };
            if status.kind == Kind::Generate {
                return None;
            }
            let page = path.join("report.html").is_file().then(|| {
                let mut link = percent_bytes(raw.as_bytes());
                link.push_str("/report.html");
                link
            });
            let traced = (status.kind == Kind::Trace)
                .then(|| traced_mechanism(&path))
                .flatten();
            // A folder another alloclab is writing now is not a stopped one.
            let writing = folder::writer_of(&path)
                .map(|holder| format!("its run is still going (alloclab {holder} is writing it)"));
            let (loaded, problem) = match status.kind {
                Kind::Run => match results::load(&path) {
                    Ok(l) => (Some(l), None),
                    Err(_) if writing.is_some() => (None, None),
                    Err(e) => (None, Some(e.to_string())),
                },
                _ => (None, None),
            };
            let missing = match &loaded {
                Some(l) => l.missing(),
                None if writing.is_some() => Vec::new(),
                None if !status.complete && status.missing.is_empty() => {
                    vec!["its plan did not finish (folder.json says complete: false)".into()]
                }
                None => status.missing.clone(),
            };
            Some(Entry {
                name,
                kind: Some(status.kind),
                complete: status.complete && missing.is_empty() && writing.is_none(),
                missing,
                writing,
                page,
                loaded,
                problem,
                traced,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The cell of `label` (allocator label) and `variant` at `size`.
fn cell<'a>(cells: &'a [Cell], label: &str, variant: Variant, size: u64) -> Option<&'a Cell> {
    cells.iter().find(|c| {
        c.spec.allocator_label() == label
            && c.spec.variant == variant
            && c.spec.size == size
            && c.records().next().is_some()
    })
}

/// The CSS class of a verdict: the heat table's colour (with its word, for readers who
/// do not see the colour).
fn class(c: Option<&Comparison>) -> &'static str {
    match c.and_then(|c| c.verdict) {
        Some(Verdict::Slower) => "slower",
        Some(Verdict::Faster) => "faster",
        Some(Verdict::NoSignificantDifference) => "same",
        _ => "open",
    }
}

/// The founding case: the numpy-temporaries folder (or the first run folder with
/// glibc's in-place and out-of-place cells of the founding workload, `scale`), its size,
/// and its heat table; into `price`, the price of speed of its cells and what every
/// folder with an idle phase gave back after the burst (a section of its own, after
/// what removes the cost).
fn founding(entries: &[Entry], html: &mut String, price: &mut String) -> Option<String> {
    let mut names: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.kind == Some(Kind::Run))
        .collect();
    names.sort_by_key(|e| e.name != "numpy-temporaries");
    // The founding folder that could not be read is said, not passed over in silence.
    // So is one that has not measured them yet (a run stopped early).
    let mut damaged: Vec<String> = names
        .iter()
        .filter(|e| e.name == "numpy-temporaries")
        .filter_map(|e| {
            Some(format!(
                "Could not read {}: {}",
                e.name,
                e.problem.as_ref()?
            ))
        })
        .collect();
    for e in names
        .iter()
        .filter(|e| e.name == "numpy-temporaries" && !e.complete)
    {
        let has = |v: Variant| {
            e.loaded.as_ref().is_some_and(|l| {
                l.cells.iter().any(|c| {
                    c.spec.allocator_label() == "system"
                        && c.spec.variant == v
                        && c.spec.workload == Workload::Scale
                        && c.spec.threads == 1
                })
            })
        };
        if !(has(Variant::InPlace) && has(Variant::OutOfPlace)) {
            damaged.push(format!(
                "{} is INCOMPLETE: glibc's in-place and out-of-place cells do not both have results yet (missing: {})",
                e.name,
                e.missing.join("; ")
            ));
        }
    }
    for e in names {
        let Some(loaded) = &e.loaded else {
            continue;
        };
        // The founding workload on one thread only: another workload's cells (chain's)
        // are not `a.astype(np.float64) / 255.0`, and NumPy's is one thread.
        let scale: Vec<Cell> = loaded
            .cells
            .iter()
            .filter(|c| c.spec.workload == Workload::Scale && c.spec.threads == 1)
            .cloned()
            .collect();
        let cells = &scale;
        let Some(size) = cells
            .iter()
            .filter(|c| {
                c.spec.allocator_label() == "system" && c.spec.variant == Variant::OutOfPlace
            })
            .map(|c| c.spec.size)
            .max()
        else {
            continue;
        };
        let (Some(base), Some(oop)) = (
            cell(cells, "system", Variant::InPlace, size),
            cell(cells, "system", Variant::OutOfPlace, size),
        ) else {
            continue;
        };
        let c = cells::compare(base, oop, THRESHOLD)?;
        // The price of speed: what the faster allocators hold for it, one line each.
        let priced =
            crate::analysis::price::price_of_speed(&cells.iter().collect::<Vec<_>>(), THRESHOLD);
        if !priced.is_empty() {
            price.push_str(r#"<p>Each allocator's time against glibc's and the resident memory it holds for it (over each worker's life, sampled by the driver; folder numpy-temporaries):</p>"#);
            item_list(price, &priced, "): ");
        }
        // After the burst, where a folder idled its workers (experiments/after-burst).
        for other in entries.iter().filter(|e| e.kind == Some(Kind::Run)) {
            let Some(l) = &other.loaded else { continue };
            let items = crate::analysis::price::after_burst(&l.cells.iter().collect::<Vec<_>>());
            if items.is_empty() {
                continue;
            }
            let context = items[0]
                .text
                .split_once(" idle: ")
                .and_then(|(head, _)| head.strip_prefix("after the burst, "))
                .map_or(String::new(), |c| format!("{c} idle, "));
            let _ = write!(
                price,
                r#"<p><b>After the burst</b> ({}folder {}): what each allocator held at its peak, once every buffer was freed and after the idle, and how long until half came back:</p>"#,
                esc(&context),
                esc(&other.name)
            );
            item_list(price, &items, " idle: ");
        }
        // Huge pages, where a folder ran cells with THP off beside cells with it
        // (experiments/huge-pages): the founding case's second temporary, per allocator.
        for other in entries.iter().filter(|e| e.kind == Some(Kind::Run)) {
            let Some(l) = &other.loaded else { continue };
            let items: Vec<_> =
                crate::analysis::price::huge_pages(&l.cells.iter().collect::<Vec<_>>(), THRESHOLD)
                    .into_iter()
                    .filter(|i| {
                        i.huge_pages()
                            .is_some_and(|h| h.variant == Variant::OutOfPlace && h.moved())
                    })
                    .collect();
            let Some(first) = items.first().and_then(|i| i.huge_pages()) else {
                continue;
            };
            let advised = l
                .cells
                .iter()
                .any(|c| c.spec.thp == crate::model::spec::Thp::Advise);
            let _ = write!(
                price,
                r#"<p><b>Huge pages</b> ({} out-of-place at {} elements, folder {}): each allocator with transparent huge pages as the machine gives them (THP here: {}){}, against itself with THP off (those whose time or memory moved); the bytes faulted in count the memory whatever the page size:</p>"#,
                esc(&first.workload.to_string()),
                group_thousands(first.size as i64),
                esc(&other.name),
                esc(l
                    .cells
                    .iter()
                    .find_map(|c| c.records().next().map(|(_, r)| r.env.thp_enabled.clone()))
                    .as_deref()
                    .unwrap_or("unknown")),
                if advised {
                    " and with its buffers advised as NumPy advises every array of 4 MiB or more (thp=advise)"
                } else {
                    ""
                }
            );
            item_list(price, &items, "): ");
        }
        html.push_str(r#"<section id="answer"><h2>The founding case</h2>"#);
        for d in &damaged {
            let _ = write!(
                html,
                r#"<p class="warn">{}; the answer below is from {}.</p>"#,
                esc(d),
                esc(&e.name)
            );
        }
        let _ = write!(
            html,
            r#"<p class="verdict">Under glibc, the second temporary (<code>t = a.astype(np.float64); t / 255.0</code>) is <b class="{}">{}</b> than dividing the one temporary in place, at {} elements ({} per f64 buffer; folder {}).</p><p class="why"><b>Why:</b> {}.</p>"#,
            class(Some(&c)),
            esc(&phrase(&c)),
            group_thousands(size as i64),
            human_bytes(size * 8),
            esc(&e.name),
            esc(&cells::why((oop, "out-of-place"), (base, "in-place"), &c).text),
        );
        // The call path behind it, where a trace of glibc's out-of-place cell is here.
        if let Some((t, (_, n, line))) = entries.iter().find_map(|t| {
            t.traced
                .as_ref()
                .filter(|(v, _, _)| v == "out-of-place")
                .map(|x| (t, x))
        }) {
            let _ = write!(
                html,
                r#"<p class="why"><b>Traced</b> ({}, {} elements{}): {}</p>"#,
                esc(&t.name),
                group_thousands(*n as i64),
                if *n == size {
                    ""
                } else {
                    ", another size than the verdict's"
                },
                esc(line.strip_prefix("system: ").unwrap_or(line))
            );
        }
        if !e.complete {
            let _ = write!(
                html,
                r#"<p class="warn">INCOMPLETE: this folder's run did not finish (missing: {}); the figures are over the processes it has.</p>"#,
                esc(&e.missing.join("; "))
            );
        }
        html.push_str("</section>");
        return Some(heat_table(loaded, &oop.spec, "matrix"));
    }
    html.push_str(r#"<section id="answer"><h2>The founding case</h2>"#);
    for d in &damaged {
        let _ = write!(html, r#"<p class="warn">{}.</p>"#, esc(d));
    }
    html.push_str(r#"<p class="warn">No readable results folder here holds glibc's in-place and out-of-place cells (the numpy-temporaries experiment): <code>make run-all</code> writes one.</p></section>"#);
    None
}

/// Every allocator × variant of `loaded` at one workload, thread count and size (those
/// of `at`): the ratio to that allocator's in-place cell, coloured by its verdict, with
/// faults per iteration. `id` is the section's id.
pub(crate) fn heat_table(loaded: &Loaded, at: &crate::model::run::RunSpec, id: &str) -> String {
    heat_table_of(
        &loaded.cells,
        loaded.plan.experiment.processes,
        THRESHOLD,
        at,
        id,
    )
}

/// [`heat_table`] of `cells` measured with `processes` per cell, verdicts against a noise
/// band of ±`threshold` (compare's page, a folder's page).
pub(crate) fn heat_table_of(
    cells: &[Cell],
    processes: u32,
    threshold: f64,
    at: &crate::model::run::RunSpec,
    id: &str,
) -> String {
    let (size, workload, threads) = (at.size, at.workload, at.threads);
    let all: Vec<Cell> = cells
        .iter()
        .filter(|c| c.spec.workload == workload && c.spec.threads == threads)
        .cloned()
        .collect();
    let cells = &all;
    let mut labels: Vec<String> = Vec::new();
    let mut variants: Vec<Variant> = Vec::new();
    for c in cells.iter().filter(|c| c.spec.size == size) {
        let l = c.spec.allocator_label();
        if !labels.contains(&l) {
            labels.push(l);
        }
        if !variants.contains(&c.spec.variant) {
            variants.push(c.spec.variant);
        }
    }
    let how = if processes > 1 {
        format!(
            "median of the per-round ratios, {} interval; a colour and a word for the verdict beyond ±{} %",
            crate::analysis::stats::level_text(
                cells
                    .first()
                    .map_or(crate::analysis::stats::DEFAULT_LEVEL, |c| c.level)
            ),
            threshold * 100.0
        )
    } else {
        "one process per cell: the ratio of the p50s, no interval and no verdict".to_string()
    };
    let mut t = format!(
        r#"<section id="{}"><h2>Every allocator and variant: {workload}, {} elements, {}</h2><p>Each cell: its time against the same allocator's in-place cell ({how}), and its minor faults per iteration.</p><table class="heat"><tr><th>allocator</th>"#,
        esc(id),
        group_thousands(size as i64),
        crate::fmt::Threads(threads),
    );
    for v in &variants {
        let _ = write!(t, "<th>{}</th>", esc(&v.to_string()));
    }
    t.push_str("</tr>");
    for l in &labels {
        let _ = write!(t, "<tr><th>{}</th>", esc(l));
        let base = cell(cells, l, Variant::InPlace, size);
        for v in &variants {
            let Some(c) = cell(cells, l, *v, size) else {
                t.push_str("<td class=\"open\">—</td>");
                continue;
            };
            let row = cells::row(c);
            let faults = row.per_iter[MINOR_FAULTS]
                .map(|f| format!("{} faults", fmt_count(f)))
                .unwrap_or_else(|| "faults n/a".into());
            if *v == Variant::InPlace {
                let p50 = row
                    .p50_ns
                    .map(|v| crate::fmt::fmt_ns(v as f64))
                    .unwrap_or_default();
                let _ = write!(
                    t,
                    "<td class=\"base\">{} (the base)<br><small>{}</small></td>",
                    esc(&p50),
                    esc(&faults)
                );
                continue;
            }
            let cmp = base.and_then(|b| cells::compare(b, c, threshold));
            let text = cmp.as_ref().map(phrase).unwrap_or_else(|| "no pair".into());
            let _ = write!(
                t,
                "<td class=\"{}\">{}<br><small>{}</small></td>",
                class(cmp.as_ref()),
                esc(&text),
                esc(&faults)
            );
        }
        t.push_str("</tr>");
    }
    t.push_str("</table></section>");
    t
}

/// What removes the founding case's faults: per allocator of the tunables folder, its
/// knob sets' out-of-place cells against its defaults', those that remove most faults.
fn remedies(entries: &[Entry], html: &mut String) {
    let Some(loaded) = named(entries, "tunables", "What removes it", "remedies", html) else {
        return;
    };
    html.push_str(r#"<section id="remedies"><h2>What removes it</h2><p>Knob sets of the tunables experiment, out-of-place, against the same allocator's defaults (paired rounds), fastest first: those that remove its faults, and those that add faults.</p>"#);
    let complete = loaded.complete();
    if !complete {
        let _ = write!(
            html,
            r#"<p class="warn">INCOMPLETE: the tunables run did not finish (missing: {}). Only the knob sets with results are below; one without results is not judged.</p>"#,
            esc(&loaded.missing().join("; "))
        );
    }
    html.push_str("<ul>");
    let mut any = false;
    // Knob-set cells compared with their allocator's defaults, whatever they changed;
    // those that remove faults, fastest first over every allocator.
    let mut compared = 0;
    let mut found: Vec<(f64, String)> = Vec::new();
    let mut worse_lines: Vec<String> = Vec::new();
    for base in loaded
        .cells
        .iter()
        .filter(|c| c.spec.knobs.is_empty() && c.spec.variant == Variant::OutOfPlace)
    {
        let base_row = cells::row(base);
        let base_faults = base_row.per_iter[MINOR_FAULTS].unwrap_or(0.0);
        let mut worse: Vec<String> = Vec::new();
        for c in loaded.cells.iter().filter(|c| {
            c.spec.allocator == base.spec.allocator
                && !c.spec.knobs.is_empty()
                && c.spec.variant == Variant::OutOfPlace
                && c.spec.thp == base.spec.thp
                && c.spec.size == base.spec.size
        }) {
            let row = cells::row(c);
            let faults = row.per_iter[MINOR_FAULTS].unwrap_or(0.0);
            compared += 1;
            if (faults - base_faults).abs() < 0.1 * base_faults.max(10.0) {
                continue;
            }
            let Some(cmp) = cells::compare(base, c, THRESHOLD) else {
                continue;
            };
            let short = match (loaded.short_of(base), loaded.short_of(c)) {
                (None, None) => String::new(),
                _ => format!(
                    " (INCOMPLETE: {} and {} of {} processes)",
                    base.runs.len(),
                    c.runs.len(),
                    loaded.plan.experiment.processes.max(1)
                ),
            };
            let rss = |r: &SummaryRow| {
                r.rss_peak_bytes
                    .map(human_bytes)
                    .unwrap_or_else(|| "n/a".into())
            };
            if faults > base_faults {
                worse.push(format!(
                    "<code>{}</code> ({} → {} faults, {}){}",
                    esc(&c.spec.allocator_label()),
                    esc(&fmt_count(base_faults)),
                    esc(&fmt_count(faults)),
                    esc(&phrase(&cmp)),
                    esc(&short)
                ));
                continue;
            }
            found.push((
                cmp.ratio,
                format!(
                    "<li><code>{}</code>: {}; faults {} → {} per iteration; peak RSS {} → {}{}</li>",
                    esc(&c.spec.allocator_label()),
                    esc(&phrase(&cmp)),
                    esc(&fmt_count(base_faults)),
                    esc(&fmt_count(faults)),
                    esc(&rss(&base_row)),
                    esc(&rss(&row)),
                    esc(&short),
                ),
            ));
        }
        if !worse.is_empty() {
            worse_lines.push(format!(
                "<li class=\"worse\">Adds faults instead: {}</li>",
                worse.join("; ")
            ));
        }
    }
    found.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (_, li) in found {
        html.push_str(&li);
        any = true;
    }
    for li in worse_lines {
        html.push_str(&li);
        any = true;
    }
    // Knob sets with results whose allocator's defaults have none: measured, never
    // compared (a run stopped before the defaults' cell ran, or a file without them).
    let uncompared: Vec<String> = loaded
        .cells
        .iter()
        .filter(|c| !c.spec.knobs.is_empty() && c.spec.variant == Variant::OutOfPlace)
        .filter(|c| {
            !loaded.cells.iter().any(|b| {
                b.spec.knobs.is_empty()
                    && b.spec.variant == Variant::OutOfPlace
                    && b.spec.allocator == c.spec.allocator
                    && b.spec.thp == c.spec.thp
                    && b.spec.size == c.spec.size
            })
        })
        .map(|c| format!("<code>{}</code>", esc(&c.spec.allocator_label())))
        .collect();
    if !uncompared.is_empty() {
        let _ = write!(
            html,
            "<li class=\"warn\">Not compared ({}): {}</li>",
            if complete {
                "the experiment has no cell of their allocator's defaults"
            } else {
                "INCOMPLETE: their allocator's defaults have no results"
            },
            uncompared.join(", ")
        );
    }
    if !any && complete && compared > 0 {
        html.push_str(
            "<li>No knob set changed the faults of its allocator's out-of-place cell.</li>",
        );
    } else if !any && compared > 0 {
        // Not "no knob set changes them": the knob sets without results were not run.
        html.push_str(
            "<li>No knob set compared so far changed the faults of its allocator's out-of-place cell (INCOMPLETE: the others were not measured).</li>",
        );
    } else if !any && uncompared.is_empty() && !complete {
        html.push_str("<li>No knob set has results yet (INCOMPLETE).</li>");
    } else if !any && uncompared.is_empty() {
        html.push_str("<li>The experiment has no knob set.</li>");
    }
    html.push_str("</ul></section>");
}

/// The run folder `name`'s results; where it is missing or unreadable, the section
/// (`title`, `id`) says so and None.
fn named<'a>(
    entries: &'a [Entry],
    name: &str,
    title: &str,
    id: &str,
    html: &mut String,
) -> Option<&'a Loaded> {
    let e = entries
        .iter()
        .find(|e| matches!(e.kind, Some(Kind::Run) | None) && e.name == name);
    match e.map(|e| (&e.loaded, &e.problem, &e.missing)) {
        Some((Some(l), _, _)) => Some(l),
        Some((None, None, _)) if e.is_some_and(|e| e.writing.is_some()) => {
            let _ = write!(
                html,
                r#"<section id="{id}"><h2>{title}</h2><p class="warn">INCOMPLETE: the {name} folder has no results yet: {}.</p></section>"#,
                esc(e.and_then(|e| e.writing.as_deref()).unwrap_or_default())
            );
            None
        }
        Some((None, problem, _)) => {
            let _ = write!(
                html,
                r#"<section id="{id}"><h2>{title}</h2><p class="warn">The {name} folder could not be read: {}.</p></section>"#,
                esc(problem.as_deref().unwrap_or("no results"))
            );
            None
        }
        None => {
            let _ = write!(
                html,
                r#"<section id="{id}"><h2>{title}</h2><p class="warn">No {name} folder here: <code>make run-all</code> writes one.</p></section>"#
            );
            None
        }
    }
}

/// A cliff: the allocator label, the sizes either side (elements), and whether they were
/// bisected (else they are the sweep's own sizes).
type CliffKey = (String, u64, u64, bool);

/// What a change is of, for the rules that need it: the variant's live buffers, and
/// whether the change rises from nothing.
type ChangeOf = (Option<u64>, bool);

/// Where it starts: the size sweep's cliffs (bisected, from cliffs.json; else the sweep's
/// own jumps), each with the threshold behind it.
fn cliffs(entries: &[Entry], html: &mut String) {
    let Some(loaded) = named(entries, "size-sweep", "Where it starts", "cliffs", html) else {
        return;
    };
    html.push_str(r#"<section id="cliffs"><h2>Where it starts</h2><p>The sizes where each allocator's faults or memory syscalls per iteration change, and the known threshold of that allocator at that size (its crossing point computed from the allocator's rules): <span class="explained">at a known threshold</span>, <span class="near">near one only</span>, <span class="unexplained">none known</span>.</p>"#);
    if !loaded.complete() {
        let _ = write!(
            html,
            r#"<p class="warn">INCOMPLETE: the size sweep did not finish (missing: {}). A change between two sizes with one unmeasured between them is not stated.</p>"#,
            esc(&loaded.missing().join("; "))
        );
    }
    html.push_str(r#"<table class="cliffs"><tr><th>allocator</th><th>what changes, per iteration</th><th>between</th><th>behind it</th></tr>"#);
    // Each change as (the cliff: allocator, sizes, bisected?) and what changes there.
    let mut rows: Vec<(CliffKey, ChangeOf, String)> = loaded
        .cliffs
        .iter()
        .filter(|c| c.unresolved.is_none())
        .map(|c| {
            (
                (c.allocator.clone(), c.below_size, c.above_size, true),
                (c.workload.live_buffers(c.variant), c.onset()),
                format!(
                    "{}: {} {} → {}",
                    c.variant,
                    c.metric,
                    fmt_count(c.below_value),
                    fmt_count(c.above_value)
                ),
            )
        })
        .collect();
    if rows.is_empty() {
        let summary: Vec<SummaryRow> = loaded.cells.iter().map(cells::row).collect();
        // Only between neighbouring sizes of the plan (a size without results between
        // two others hides where the change is).
        let (faults, syscalls) = loaded.jumps(&summary);
        for (metric, jumps) in [("minor faults", faults), ("memory syscalls", syscalls)] {
            rows.extend(jumps.into_iter().map(|j| {
                (
                    (j.allocator.clone(), j.from_size, j.to_size, false),
                    (
                        j.workload.live_buffers(j.variant),
                        thresholds::is_onset(
                            crate::analysis::cliff::Metric::of_name(metric).threshold(),
                            j.from_value,
                            j.to_value,
                        ),
                    ),
                    format!(
                        "{}: {metric} {} → {}",
                        j.variant,
                        fmt_count(j.from_value),
                        fmt_count(j.to_value)
                    ),
                )
            }));
        }
    }
    if rows.is_empty() {
        html.push_str(if loaded.complete() {
            "<tr><td colspan=\"4\">No change of faults or memory syscalls between neighbouring sizes.</td></tr>"
        } else {
            "<tr><td colspan=\"4\">No change of faults or memory syscalls between neighbouring sizes that both have results (INCOMPLETE: the others are not judged).</td></tr>"
        });
    }
    // One finding per cliff: the variants and counts that change at the same sizes of
    // one allocator are one row.
    // Each with the live buffers of its variants, for the rules that count them.
    let mut groups: Vec<(CliffKey, Vec<ChangeOf>, Vec<String>)> = Vec::new();
    for (key, of, what) in rows {
        match groups.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, l, v)) => {
                l.push(of);
                v.push(what);
            }
            None => groups.push((key, vec![of], vec![what])),
        }
    }
    for ((label, below, above, bisected), ofs, whats) in groups {
        let lives: Vec<Option<u64>> = ofs.iter().map(|o| o.0).collect();
        let onset = ofs.iter().any(|o| o.1);
        let cause = thresholds::cause_of(&label, &lives, onset, below, above);
        let cls = match cause {
            Cause::At { .. } => "explained",
            Cause::Near { .. } => "near",
            Cause::Unexplained { .. } => "unexplained",
        };
        // Where moving the threshold sent the cliff (run --confirm).
        let moved = loaded
            .cliffs
            .iter()
            .filter(|c| c.allocator == label && c.below_size == below && c.above_size == above)
            .filter_map(|c| c.confirmation.as_ref())
            .find(|c| cause.proved_by(&c.threshold))
            .map(|c| {
                format!(
                    "<br><b class=\"{}\">Moved: {}</b>",
                    if c.verdict.starts_with("confirmed") {
                        "confirmed"
                    } else {
                        "unconfirmed"
                    },
                    esc(&c.describe())
                )
            })
            .unwrap_or_default();
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{} and {} elements{}<br><small>{} → {} per f64 buffer</small></td><td class=\"{cls}\">{}{moved}</td></tr>",
            esc(&label),
            whats.iter().map(|w| esc(w)).collect::<Vec<_>>().join("<br>"),
            group_thousands(below as i64),
            group_thousands(above as i64),
            if bisected { " (bisected)" } else { " (the sweep's sizes)" },
            esc(&human_bytes(below * 8)),
            esc(&human_bytes(above * 8)),
            esc(&cause.sentence()),
        );
    }
    html.push_str("</table><p>A named threshold is the explanation the allocator's rules give; it is proved by moving the threshold with its knob (the spec that “moves it”) and finding the cliff where the rule then puts it: <code>alloclab run --confirm</code> does that after bisecting (on in run-all's size sweep), and the row then says where the cliff went.</p></section>");
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;max-width:1100px;margin:1.2em auto;padding:0 1em;color:#1b1b1b}h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.2em 0 .4em}.verdict{font-size:1.25em}.why{font-size:1.05em}table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}.slower{background:#fdd9b5}.faster{background:#c6dbef}.same{background:#eee}.open,.near{background:#fff7bc}.explained{background:#d9f0d3}.unexplained{background:#f4f4f4}.worse{color:#8a4b00}b.confirmed{color:#1a6b1a}b.unconfirmed{color:#8a4b00}.cliffs td:nth-child(2),.cliffs td:nth-child(3){white-space:nowrap}.cliffs td:nth-child(4){overflow-wrap:anywhere}.base{background:#fff}b.slower,b.faster{padding:0 .2em}.warn{color:#8a4b00}small{color:#555}code{background:#f4f4f4;padding:0 .2em}";

/// The page's script: records errors, and with `#selftest` says whether the answer is
/// on the first screen and how many links the page has.
const SCRIPT: &str = "window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message))});document.addEventListener('DOMContentLoaded',function(){var b=document.body;var a=document.getElementById('answer');var v=a?a.querySelector('.verdict'):null;var r=v?v.getBoundingClientRect():null;b.setAttribute('data-answer-first-screen',r&&r.bottom<=window.innerHeight&&r.top>=0?'yes':'no');b.setAttribute('data-links',String(document.querySelectorAll('a[href]').length));b.setAttribute('data-errors',window.__errors.join('; '));});";

/// The whole page for the results folders under `parent`.
pub fn page(parent: &Path, entries: &[Entry]) -> String {
    let mut body = String::new();
    let mut price = String::new();
    let heat = founding(entries, &mut body, &mut price);
    remedies(entries, &mut body);
    if !price.is_empty() {
        body.push_str(r#"<section id="price"><h2>The price of speed</h2>"#);
        body.push_str(&price);
        body.push_str("</section>");
    }
    cliffs(entries, &mut body);
    if let Some(h) = heat {
        body.push_str(&h);
    }
    body.push_str(r#"<section id="folders"><h2>Every folder</h2><table><tr><th>folder</th><th>kind</th><th>state</th><th>page</th></tr>"#);
    for e in entries {
        let state = match (&e.problem, e.complete) {
            (Some(p), _) => format!("unreadable: {p}"),
            (None, _) if e.writing.is_some() => {
                format!("INCOMPLETE: {}", e.writing.as_deref().unwrap_or_default())
            }
            (None, true) => "complete".into(),
            (None, false) => format!("INCOMPLETE: missing {}", e.missing.join("; ")),
        };
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td{}>{}</td><td>{}</td></tr>",
            esc(&e.name),
            e.kind.map_or("unknown", Kind::name),
            if e.problem.is_some() {
                " class=\"warn\""
            } else {
                ""
            },
            esc(&state),
            e.page
                .as_ref()
                .map(|p| format!("<a href=\"{}\">report.html</a>", esc(p)))
                .unwrap_or_else(|| "—".into())
        );
    }
    body.push_str("</table></section>");
    let env = entries
        .iter()
        .filter(|e| e.kind == Some(Kind::Run) && e.loaded.is_some())
        .min_by_key(|e| e.name != "numpy-temporaries")
        .and_then(|e| std::fs::read_to_string(parent.join(&e.name).join("env.json")).ok())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    if let Some(env) = env {
        body.push_str("<details id=\"environment\"><summary>Environment</summary><ul>");
        for line in crate::export::html::environment_lines(&env) {
            let _ = write!(body, "<li>{}</li>", esc(&line));
        }
        body.push_str("</ul></details>");
    }
    // An answer read from folders whose plans did not finish says so first.
    let unfinished: Vec<String> = entries
        .iter()
        .filter(|e| !e.complete || e.problem.is_some())
        .map(|e| match (&e.problem, &e.writing) {
            (Some(p), _) => format!("{} (could not be read: {p})", e.name),
            (None, Some(w)) if e.missing.is_empty() => format!("{} ({w})", e.name),
            (None, Some(w)) => {
                format!("{} ({w}; missing so far: {})", e.name, e.missing.join("; "))
            }
            (None, None) => format!("{} (missing: {})", e.name, e.missing.join("; ")),
        })
        .collect();
    let (title_mark, banner) = if unfinished.is_empty() {
        ("", String::new())
    } else {
        (
            "INCOMPLETE: ",
            format!(
                r#"<p class="warn">INCOMPLETE: {} of these folders did not finish or could not be read: {}. Each part below that rests on one says so; nothing that needs what is missing is stated.</p>"#,
                unfinished.len(),
                esc(&unfinished.join("; "))
            ),
        )
    };
    format!(
        "{HEAD}<meta name=\"viewport\" content=\"width=device-width\"><title>{title_mark}alloclab: the run's answer</title><style>{STYLE}</style><script>{SCRIPT}</script></head><body><h1>{title_mark}alloclab: what the allocators do to the founding case</h1><p><small>{} in {}; each figure below is read from them.</small></p>{banner}{body}</body></html>\n",
        crate::fmt::counted(entries.len(), "results folder", "results folders"),
        esc(&parent.display().to_string()),
    )
}

/// A name's bytes as a URL path segment: what a path may not hold, percent-escaped.
fn percent_bytes(p: &[u8]) -> String {
    let mut out = String::new();
    for &b in p {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace folder's glibc line (trace.json as `alloclab trace` writes it) is what the
    /// index puts under the founding verdict; other allocators' lines are not.
    #[test]
    fn a_trace_folder_gives_the_founding_case_its_call_path() {
        let text = r#"{"schema":"alloclab.trace/1","workload":"scale","variant":"out-of-place","size":1000000,"allocators":[
              {"label":"jemalloc","mechanism":"jemalloc: 2.00 madvise per iteration"},
              {"label":"system","mechanism":"system: 3.00 brk per iteration, 33 % from free → _int_free → systrim."}]}"#;
        let (variant, size, line) = traced_mechanism_of(text).unwrap();
        assert_eq!((variant.as_str(), size), ("out-of-place", 1_000_000));
        assert!(line.contains("free → _int_free → systrim"), "{line}");
        assert!(traced_mechanism_of("{ not json").is_none());
        // A folder without trace.json has none.
        assert!(traced_mechanism(Path::new("/nonexistent-alloclab-folder")).is_none());
    }

    #[test]
    fn links_are_percent_escaped() {
        assert_eq!(percent_bytes(b"a b"), "a%20b");
        assert_eq!(percent_bytes(b"x\"y\xff/"), "x%22y%FF/");
    }
}
