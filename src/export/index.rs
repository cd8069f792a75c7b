//! `index.html` of a folder of results folders (what `make run-all` writes): the run's
//! answer on its first screen — the founding case's verdict under glibc with its cause,
//! what removes it (the tunables experiment), the price of speed, where it starts (the
//! size sweep's cliffs) — then every allocator × variant as a heat table, and a link to
//! every folder's page.
//!
//! Every finding on it is read from the folders' findings.json, word for word, as their
//! own reports print it; the page lays the items out and composes none. What a folder
//! did not finish is read from its folder.json and runs, and said instead of a figure.
//! The page is written by [`crate::export::folder::write_index`], which replaces only an
//! index the lab wrote.

use crate::export::escape_markup as esc;
use crate::export::folder::{self, Kind};
use crate::export::results::{self, Loaded};
use crate::fmt::{fmt_count, group_thousands, human_bytes};
use crate::model::spec::{Variant, Workload};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// How the lab's index.html begins (the writer's mark of its own index).
pub use crate::export::folder::INDEX_HEAD as HEAD;

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
    /// Its findings.json (a run or trace folder's), or None where it has none that reads.
    findings: Option<Value>,
}

impl Entry {
    /// A readable run folder whose plan did not finish, or without findings.json:
    /// `report` of the parent rebuilds its REPORT.md, page and findings.json from what
    /// it holds before the index reads them.
    pub fn needs_rebuild(&self) -> bool {
        self.kind == Some(Kind::Run)
            && self.loaded.is_some()
            && (!self.complete || self.findings.is_none())
    }
}

/// Why an unfinished folder `e` is so, in words: "its run is still going (…)", "missing:
/// …", or "its run did not finish" where nothing names what is missing.
fn unfinished(e: &Entry) -> String {
    match (&e.writing, e.missing.is_empty()) {
        (Some(w), _) => w.clone(),
        (None, false) => format!("missing: {}", e.missing.join("; ")),
        (None, true) => "its run did not finish".into(),
    }
}

/// A folder's findings.json, where it has one that reads (bounded, a regular file).
fn findings_of(path: &Path) -> Option<Value> {
    let text = folder::read_limited(&path.join("findings.json"), 64 << 20).ok()?;
    serde_json::from_str(&text).ok()
}

/// The items of `list` ("answer", "comparisons", "price_of_speed", "cliffs", "changes")
/// of a findings.json.
fn items<'a>(findings: Option<&'a Value>, list: &str) -> Vec<&'a Value> {
    findings
        .and_then(|f| f[list].as_array())
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

/// An item's text, its words marked where they name a verdict.
fn item_html(item: &Value) -> String {
    let text = item["text"].as_str().unwrap_or_default();
    mark_words(text, item)
}

/// `text` with its comparison's words (`figures.words`) marked by their verdict's class.
fn mark_words(text: &str, item: &Value) -> String {
    let words = item["figures"]["words"].as_str().unwrap_or_default();
    match (words.is_empty(), text.find(words)) {
        (false, Some(at)) => format!(
            "{}<b class=\"{}\">{}</b>{}",
            esc(&text[..at]),
            class(&item["figures"]),
            esc(words),
            esc(&text[at + words.len()..])
        ),
        _ => esc(text),
    }
}

/// The CSS class of a comparison's verdict: the heat table's colour (with its word, for
/// readers who do not see the colour).
fn class(figures: &Value) -> &'static str {
    match figures["comparison"]["verdict"].as_str() {
        Some("slower") => "slower",
        Some("faster") => "faster",
        Some("no-significant-difference") => "same",
        _ => "open",
    }
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
                        findings: None,
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
            let findings = matches!(status.kind, Kind::Run | Kind::Trace)
                .then(|| findings_of(&path))
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
                findings,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// A difference item's figures, where `item` is one: of `allocator` (any with None),
/// `variant`, against what ("in-place", "defaults"), at the founding workload on one
/// thread.
fn difference<'a>(
    item: &'a Value,
    allocator: Option<&str>,
    variant: Option<&str>,
    against: &str,
) -> Option<&'a Value> {
    let f = &item["figures"];
    (f["kind"] == "difference"
        && f["against"] == against
        && allocator.is_none_or(|a| f["allocator"] == a)
        && variant.is_none_or(|v| f["variant"] == v))
    .then_some(f)
}

/// The founding case: the numpy-temporaries folder (or the first run folder whose
/// findings compare glibc's out-of-place cell of the founding workload, `scale` on one
/// thread, with its in-place one), its finding at its largest size, and the heat table
/// of that size; into `price`, the price of speed of that folder and what every folder
/// with an idle phase gave back after the burst and with huge pages (a section of its
/// own, after what removes the cost). All of it read from the folders' findings.json.
fn founding(
    parent: &Path,
    entries: &[Entry],
    html: &mut String,
    price: &mut String,
    removed: &mut Vec<String>,
) -> Option<String> {
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
                "{} is INCOMPLETE: glibc's in-place and out-of-place cells do not both have results yet ({})",
                e.name,
                unfinished(e)
            ));
        }
    }
    for e in names {
        // The founding workload on one thread only: another workload's cells (chain's)
        // are not `a.astype(np.float64) / 255.0`, and NumPy's is one thread.
        let founding = |item: &&Value| {
            difference(item, Some("system"), Some("out-of-place"), "in-place")
                .is_some_and(|f| f["workload"] == "scale" && f["threads"] == 1)
        };
        let Some(item) = items(e.findings.as_ref(), "comparisons")
            .into_iter()
            .filter(founding)
            .max_by_key(|i| i["figures"]["size"].as_u64().unwrap_or(0))
        else {
            continue;
        };
        let size = item["figures"]["size"].as_u64().unwrap_or(0);
        *removed = item["figures"]["removed_by"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| r.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        // Where the finding names no remedy (no verdict: a quick run's one process per
        // cell), the folder's own comparisons that would: glibc's out-of-place cell
        // against the fastest allocator's, and glibc reusing one output buffer.
        if removed.is_empty() {
            let all = items(e.findings.as_ref(), "comparisons");
            let of = |variant: &str, against: &str| {
                all.iter()
                    .filter(|i| {
                        difference(i, Some("system"), Some(variant), against).is_some_and(|f| {
                            f["workload"] == "scale" && f["threads"] == 1 && f["size"] == size
                        })
                    })
                    .map(|i| i["text"].as_str().unwrap_or_default().to_string())
                    .next()
            };
            removed.extend(of("out-of-place", "fastest"));
            removed.extend(of("reuse", "in-place"));
        }
        price_section(entries, e, price);
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
            r#"<p>Measured by the lab's Rust stand-in for NumPy's temporaries (the experiment {name}, run by the lab's worker processes, not by NumPy): a second temporary buffer for the result, as <code>t = a.astype(np.float64); t / 255.0</code> makes one (the out-of-place cell), against the result divided in place, as <code>a.astype(np.float64) / 255.0</code> does. Under glibc, at {} elements ({} per f64 buffer; folder {}):</p><p class="verdict">{}</p>"#,
            group_thousands(size as i64),
            human_bytes(size * 8),
            folder_link(e),
            item_html(item),
            name = esc(&e.name),
        );
        numpy_runs(parent, entries, html);
        chart(parent, e, size, html);
        // The call path behind it, where a trace of glibc's out-of-place cell is here.
        for t in entries.iter().filter(|t| t.kind == Some(Kind::Trace)) {
            let f = t.findings.as_ref();
            if f.is_none_or(|f| f["variant"] != "out-of-place") {
                continue;
            }
            let n = f.and_then(|f| f["size"].as_u64()).unwrap_or(0);
            for traced in items(f, "answer").into_iter().filter(|i| {
                i["figures"]["kind"] == "trace" && i["figures"]["allocator"] == "system"
            }) {
                let _ = write!(
                    html,
                    r#"<p class="why"><b>Traced</b> ({}, {} elements{}): {}</p>"#,
                    esc(&t.name),
                    group_thousands(n as i64),
                    if n == size {
                        ""
                    } else {
                        ", another size than the verdict's"
                    },
                    esc(traced["text"].as_str().unwrap_or_default())
                );
            }
        }
        if !e.complete {
            let _ = write!(
                html,
                r#"<p class="warn">INCOMPLETE: this folder's run did not finish ({}); the figures are over the processes it has.</p>"#,
                esc(&unfinished(e))
            );
        }
        html.push_str("</section>");
        let heat: Vec<Value> = items(e.findings.as_ref(), "comparisons")
            .into_iter()
            .filter_map(|i| difference(i, None, None, "in-place"))
            .filter(|f| f["workload"] == "scale" && f["threads"] == 1 && f["size"] == size)
            .cloned()
            .collect();
        let processes = e.loaded.as_ref().map_or(1, |l| l.plan.experiment.processes);
        return Some(heat_table_of(
            &heat,
            processes,
            (Workload::Scale, 1, size),
            "matrix",
        ));
    }
    html.push_str(r#"<section id="answer"><h2>The founding case</h2>"#);
    for d in &damaged {
        let _ = write!(html, r#"<p class="warn">{}.</p>"#, esc(d));
    }
    html.push_str(r#"<p class="warn">No readable results folder here holds glibc's in-place and out-of-place cells (the numpy-temporaries experiment): <code>make run-all</code> writes one.</p></section>"#);
    None
}

/// A folder's name, linked to its page where it has one.
fn folder_link(e: &Entry) -> String {
    match &e.page {
        Some(p) => format!("<a href=\"{}\">{}</a>", esc(p), esc(&e.name)),
        None => esc(&e.name),
    }
}

/// The exec folders of NumPy's own runs (`make exec-numpy`): func1 and func2.
const NUMPY_FOLDERS: [(&str, &str); 2] = [
    ("exec-numpy-func1", "func1: a.astype(np.float64) / 255.0"),
    (
        "exec-numpy-func2",
        "func2: t = a.astype(np.float64); t / 255.0",
    ),
];

/// One allocator's whole-program figures of an exec folder's summary.csv: (allocator,
/// status, runs, wall p50 in ms).
type WholeProgram = (String, String, String, Option<f64>);

/// An exec folder's rows, as its summary.csv keeps them (None: no readable file).
fn exec_rows(folder: &Path) -> Option<Vec<WholeProgram>> {
    let text = crate::files::read_to_string(folder.join("summary.csv")).ok()?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let rows: Vec<std::collections::HashMap<String, String>> =
        reader.deserialize().collect::<Result<_, _>>().ok()?;
    Some(
        rows.into_iter()
            .map(|r| {
                let get = |k: &str| r.get(k).cloned().unwrap_or_default();
                (
                    get("allocator"),
                    get("status"),
                    get("runs"),
                    get("wall_median_ms").parse().ok(),
                )
            })
            .collect(),
    )
}

/// NumPy's own func1 and func2 as whole programs under each allocator, where `make
/// exec-numpy` wrote their folders here: each allocator's median wall time of the whole
/// program, as the folders' summary.csv keep them, with a link to each folder's page.
fn numpy_runs(parent: &Path, entries: &[Entry], html: &mut String) {
    let found: Vec<(&Entry, &str, Vec<WholeProgram>)> = NUMPY_FOLDERS
        .iter()
        .filter_map(|(name, what)| {
            let e = entries
                .iter()
                .find(|e| e.name == *name && e.kind == Some(Kind::Exec))?;
            Some((e, *what, exec_rows(&parent.join(name))?))
        })
        .collect();
    if found.is_empty() {
        html.push_str(r#"<p class="why"><b>NumPy itself</b>: no exec-numpy-func1 or exec-numpy-func2 folder here (<code>make exec-numpy EXEC_OUT=dir</code>, or <code>make run-all</code> where NumPy is installed, writes them).</p>"#);
        return;
    }
    let mut allocators: Vec<&str> = Vec::new();
    for (_, _, rows) in &found {
        for r in rows {
            if !allocators.contains(&r.0.as_str()) {
                allocators.push(&r.0);
            }
        }
    }
    let _ = write!(
        html,
        r#"<p class="why"><b>NumPy itself</b>, the whole Python program per run (start-up included), median wall time over its runs under each allocator (folders {}):</p><table class="numpy"><tr><th>allocator</th>"#,
        found
            .iter()
            .map(|(e, _, _)| folder_link(e))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (_, what, _) in &found {
        let _ = write!(html, "<th><code>{}</code></th>", esc(what));
    }
    html.push_str("</tr>");
    for a in allocators {
        let _ = write!(html, "<tr><th>{}</th>", esc(a));
        for (_, _, rows) in &found {
            let cell = match rows.iter().find(|r| r.0 == a) {
                Some((_, status, runs, Some(ms))) if status == "ok" => format!(
                    "{} <small>({})</small>",
                    esc(&crate::fmt::fmt_ns(ms * 1e6)),
                    esc(&match runs.parse::<usize>() {
                        Ok(n) => crate::fmt::counted(n, "run", "runs"),
                        Err(_) => format!("{runs} runs"),
                    })
                ),
                Some((_, status, _, _)) => format!("<span class=\"warn\">{}</span>", esc(status)),
                None => "—".into(),
            };
            let _ = write!(html, "<td>{cell}</td>");
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
    for (e, _, _) in found.iter().filter(|(e, _, _)| !e.complete) {
        let _ = write!(
            html,
            r#"<p class="warn">INCOMPLETE: folder {}'s runs did not finish ({}).</p>"#,
            esc(&e.name),
            esc(&unfinished(e))
        );
    }
}

/// The founding folder's chart of every allocator's latency at `size`, where it drew one
/// (plots/scale-n{size}-t1-latency.svg), as an image linked to the file.
fn chart(parent: &Path, e: &Entry, size: u64, html: &mut String) {
    use std::os::unix::ffi::OsStrExt as _;
    let file = format!("plots/scale-n{size}-t1-latency.svg");
    let path = parent.join(&e.name).join(&file);
    if !path.is_file() {
        return;
    }
    let mut src = percent_bytes(std::ffi::OsStr::new(&e.name).as_bytes());
    src.push('/');
    src.push_str(&file);
    let _ = write!(
        html,
        r#"<figure class="chart"><a href="{0}"><img src="{0}" alt="latency percentiles of every allocator and variant at {1} elements" width="760"></a><figcaption>Latency percentiles of every allocator and variant of the Rust stand-in at {1} elements (folder {2}, {3}).</figcaption></figure>"#,
        esc(&src),
        group_thousands(size as i64),
        esc(&e.name),
        esc(&file)
    );
}

/// Into `price`: the founding folder `e`'s price of speed, and what every run folder's
/// findings say after the burst and of huge pages (out of place, those that moved), each
/// group under its lead, each item its subject and words.
fn price_section(entries: &[Entry], e: &Entry, price: &mut String) {
    let of_kind = |e: &Entry, kind: &str| -> Vec<Value> {
        items(e.findings.as_ref(), "price_of_speed")
            .into_iter()
            .filter(|i| i["figures"]["kind"] == kind)
            .filter(|i| {
                kind != "huge-pages"
                    || (i["figures"]["moved"] == true && i["figures"]["variant"] == "out-of-place")
            })
            .cloned()
            .collect()
    };
    let priced = of_kind(e, "price");
    if !priced.is_empty() {
        let _ = write!(
            price,
            r#"<p>Each allocator's time against glibc's and the resident memory it holds for it (over each worker's life, sampled by the driver; folder {}):</p>"#,
            esc(&e.name)
        );
        grouped(price, &priced);
        short_note(price, e);
    }
    for other in entries.iter().filter(|e| e.kind == Some(Kind::Run)) {
        let burst = of_kind(other, "after-burst");
        if !burst.is_empty() {
            let _ = write!(
                price,
                r#"<p><b>After the burst</b> (folder {}): what each allocator held at its peak, once every buffer was freed and after the idle, and how long until half came back:</p>"#,
                esc(&other.name)
            );
            grouped(price, &burst);
            short_note(price, other);
        }
        let huge = of_kind(other, "huge-pages");
        if !huge.is_empty() {
            let _ = write!(
                price,
                r#"<p><b>Huge pages</b> (folder {}): each allocator with transparent huge pages as the machine gives them or advised, against itself with THP off (those whose time or memory moved); the bytes faulted in count the memory whatever the page size:</p>"#,
                esc(&other.name)
            );
            grouped(price, &huge);
            short_note(price, other);
        }
    }
}

/// Below a part listed from folder `e`'s findings, where its run did not finish: that
/// the list holds only the cells with results (each item resting on a short cell says
/// so itself), and what is missing.
fn short_note(out: &mut String, e: &Entry) {
    if e.complete && e.writing.is_none() {
        return;
    }
    let _ = write!(
        out,
        r#"<p class="warn">INCOMPLETE: folder {}'s run did not finish ({}); only the cells with results are listed, and an allocator without them is absent.</p>"#,
        esc(&e.name),
        esc(&unfinished(e))
    );
}

/// Items under their leads: each lead once, then a list of the items' subjects and words
/// (an item without parts as its whole text).
fn grouped(out: &mut String, items: &[Value]) {
    let mut lead: Option<&str> = None;
    for item in items {
        let parts = &item["parts"];
        let this = parts["lead"].as_str();
        if this != lead {
            if lead.is_some() {
                out.push_str("</ul>");
            }
            if let Some(l) = this {
                let _ = write!(out, "<p>{}:</p>", esc(l));
            }
            out.push_str(r#"<ul class="price">"#);
            lead = this;
        }
        match (parts["subject"].as_str(), parts["body"].as_str()) {
            (Some(s), Some(b)) => {
                let _ = write!(
                    out,
                    "<li><code>{}</code> {}</li>",
                    esc(s),
                    mark_words(b, item)
                );
            }
            _ => {
                let _ = write!(out, "<li>{}</li>", item_html(item));
            }
        }
    }
    if lead.is_some() || !items.is_empty() {
        out.push_str("</ul>");
    }
}

/// Every allocator × variant at one workload, thread count and size as a heat table,
/// from `comparisons` (each a difference's figures against its allocator's in-place
/// cell, as findings.json keeps them): the ratio in its words, coloured by its verdict,
/// with faults per iteration; the in-place column is the base's p50 and faults. `id` is
/// the section's id.
pub(crate) fn heat_table_of(
    comparisons: &[Value],
    processes: u32,
    (workload, threads, size): (Workload, u32, u64),
    id: &str,
) -> String {
    let mut labels: Vec<&str> = Vec::new();
    let mut variants: Vec<String> = vec![Variant::InPlace.to_string()];
    for f in comparisons {
        let l = f["allocator"].as_str().unwrap_or_default();
        if !labels.contains(&l) {
            labels.push(l);
        }
        let v = f["variant"].as_str().unwrap_or_default().to_string();
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    let how = if processes > 1 {
        format!(
            "median of the per-round ratios with its interval; a colour and a word for the verdict beyond ±{} %",
            crate::model::metric::NOISE_THRESHOLD * 100.0
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
        let _ = write!(t, "<th>{}</th>", esc(v));
    }
    t.push_str("</tr>");
    let faults = |counts: &Value| {
        counts["minflt_per_iter"]
            .as_f64()
            .map(|f| format!("{} faults", fmt_count(f)))
            .unwrap_or_else(|| "faults n/a".into())
    };
    for l in &labels {
        let _ = write!(t, "<tr><th>{}</th>", esc(l));
        let of = |v: &str| {
            comparisons
                .iter()
                .find(|f| f["allocator"] == *l && f["variant"] == v)
        };
        for v in &variants {
            if *v == Variant::InPlace.to_string() {
                let base = comparisons.iter().find(|f| f["allocator"] == *l);
                let p50 = base
                    .and_then(|f| f["against_p50_ns"].as_f64())
                    .map(crate::fmt::fmt_ns)
                    .unwrap_or_default();
                let _ = write!(
                    t,
                    "<td class=\"base\">{} (the base)<br><small>{}</small></td>",
                    esc(&p50),
                    esc(&base
                        .map(|f| faults(&f["against_counts"]))
                        .unwrap_or_default())
                );
                continue;
            }
            match of(v) {
                Some(f) => {
                    let _ = write!(
                        t,
                        "<td class=\"{}\">{}<br><small>{}</small></td>",
                        class(f),
                        esc(f["words"].as_str().unwrap_or_default()),
                        esc(&faults(&f["counts"]))
                    );
                }
                None => t.push_str("<td class=\"open\">—</td>"),
            }
        }
        t.push_str("</tr>");
    }
    t.push_str("</table></section>");
    t
}

/// [`heat_table_of`] of an answer's findings against in-place (compare's page, a
/// folder's page).
pub(crate) fn heat_table(
    answer: &crate::analysis::answer::Answer,
    processes: u32,
    id: &str,
) -> Option<String> {
    use crate::analysis::answer::Against;
    let comparisons: Vec<Value> = answer
        .findings()
        .chain(&answer.open)
        .filter(|f| f.kind == Against::InPlace)
        .filter_map(|f| serde_json::to_value(&f.figures).ok())
        .collect();
    let f = answer.findings().chain(&answer.open).next()?;
    Some(heat_table_of(
        &comparisons,
        processes,
        (f.figures.workload, f.figures.threads, f.figures.size),
        id,
    ))
}

/// What removes the founding case's faults, the allocator in question first: glibc's own
/// tunables (the tunables folder's knob sets of glibc, out of place against glibc's
/// defaults), then what the founding finding says removes it without tuning glibc
/// (another allocator, reusing the output buffer: `removed`, its figures' words), then
/// the other allocators' knob sets — all as the folders' findings say them.
fn remedies(entries: &[Entry], removed: &[String], html: &mut String) {
    html.push_str(r#"<section id="remedies"><h2>What removes it</h2>"#);
    let tunables = named(
        entries,
        "tunables",
        "glibc's own tunables and other knob sets",
        "tunables",
        html,
    );
    let Some((e, loaded)) = tunables else {
        compare_remedies(removed, html);
        html.push_str("</section>");
        return;
    };
    let complete = loaded.complete();
    if !complete {
        let _ = write!(
            html,
            r#"<p class="warn">INCOMPLETE: the tunables run did not finish (missing: {}). Only the knob sets with results are below; one without results is not judged.</p>"#,
            esc(&loaded.missing().join("; "))
        );
    }
    let all: Vec<&Value> = items(e.findings.as_ref(), "comparisons")
        .into_iter()
        .filter(|i| difference(i, None, Some("out-of-place"), "defaults").is_some())
        .collect();
    let compared = all.len();
    // Those that change something: a verdict of faster or slower, or counts that differ.
    let mut found: Vec<&Value> = all
        .into_iter()
        .filter(|i| {
            let f = &i["figures"];
            matches!(
                f["comparison"]["verdict"].as_str(),
                Some("faster" | "slower")
            ) || f["cause"]["basis"] != "no-difference"
        })
        .collect();
    found.sort_by(|a, b| {
        let r = |i: &Value| i["figures"]["comparison"]["ratio"].as_f64().unwrap_or(1.0);
        r(a).total_cmp(&r(b))
    });
    let any = !found.is_empty();
    let glibc = |i: &&Value| {
        i["figures"]["allocator"]
            .as_str()
            .is_some_and(|a| a == "system" || a.starts_with("system:") || a.starts_with("system "))
    };
    let (own, others): (Vec<&Value>, Vec<&Value>) = found.into_iter().partition(glibc);
    let list = |html: &mut String, items: &[&Value]| {
        html.push_str("<ul>");
        for i in items {
            let parts = &i["parts"];
            let _ = write!(
                html,
                "<li><code>{}</code>: {}</li>",
                esc(parts["subject"].as_str().unwrap_or_default()),
                mark_words(parts["body"].as_str().unwrap_or_default(), i)
            );
        }
        html.push_str("</ul>");
    };
    let _ = write!(
        html,
        r#"<p><b>glibc's own tunables</b> (M_TOP_PAD, M_TRIM_THRESHOLD, M_MMAP_THRESHOLD: the knobs <code>top_pad</code>, <code>trim_threshold</code>, <code>mmap_threshold</code>), out-of-place against glibc's defaults (paired rounds), fastest first (folder {}):</p>"#,
        folder_link(e)
    );
    if own.is_empty() {
        html.push_str(
            "<ul><li>No knob set of glibc's changed its out-of-place cell here.</li></ul>",
        );
    } else {
        list(html, &own);
    }
    compare_remedies(removed, html);
    if !others.is_empty() {
        html.push_str("<p><b>The other allocators' knobs</b>, each against its own defaults, fastest first:</p>");
        list(html, &others);
    }
    html.push_str("<ul>");
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
        html.push_str("<li>No knob set changed its allocator's out-of-place cell.</li>");
    } else if !any && compared > 0 {
        // Not "no knob set changes it": the knob sets without results were not run.
        html.push_str(
            "<li>No knob set compared so far changed its allocator's out-of-place cell (INCOMPLETE: the others were not measured).</li>",
        );
    } else if !any && uncompared.is_empty() && !complete {
        html.push_str("<li>No knob set has results yet (INCOMPLETE).</li>");
    } else if !any && uncompared.is_empty() {
        html.push_str("<li>The experiment has no knob set.</li>");
    }
    html.push_str("</ul></section>");
}

/// Without tuning glibc: what the founding finding says removes its cost, measured in the
/// same rounds (another allocator, reusing one output buffer: working in place).
fn compare_remedies(removed: &[String], html: &mut String) {
    if removed.is_empty() {
        return;
    }
    html.push_str("<p><b>Without tuning glibc</b>: another allocator, or reusing one output buffer (working in place), as the founding folder's findings say them (measured in the same rounds):</p><ul>");
    for r in removed {
        let _ = write!(html, "<li>{}</li>", esc(r));
    }
    html.push_str("</ul>");
}

/// The run folder `name` and its results; where it is missing or unreadable, the section
/// (`title`, `id`) says so and None.
fn named<'a>(
    entries: &'a [Entry],
    name: &str,
    title: &str,
    id: &str,
    html: &mut String,
) -> Option<(&'a Entry, &'a Loaded)> {
    let e = entries
        .iter()
        .find(|e| matches!(e.kind, Some(Kind::Run) | None) && e.name == name);
    match e.map(|e| (e, &e.loaded, &e.problem)) {
        Some((e, Some(l), _)) => Some((e, l)),
        Some((e, None, None)) if e.writing.is_some() => {
            let _ = write!(
                html,
                r#"<section id="{id}"><h2>{title}</h2><p class="warn">INCOMPLETE: the {name} folder has no results yet: {}.</p></section>"#,
                esc(e.writing.as_deref().unwrap_or_default())
            );
            None
        }
        Some((_, None, problem)) => {
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

/// Where it starts: the size sweep folder's cliffs as its findings.json keeps them (one
/// row per allocator and pair of sizes, with the threshold behind it and where moving it
/// sent the cliff), or where none was bisected the sweep's own changes.
fn cliffs(entries: &[Entry], html: &mut String) {
    let Some((e, loaded)) = named(entries, "size-sweep", "Where it starts", "cliffs", html) else {
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
    let cliffs = items(e.findings.as_ref(), "cliffs");
    let changes = items(e.findings.as_ref(), "changes");
    if cliffs.is_empty() {
        if changes.is_empty() {
            html.push_str(if loaded.complete() {
                "<p>No change of faults or memory syscalls between neighbouring sizes.</p>"
            } else {
                "<p>No change of faults or memory syscalls between neighbouring sizes that both have results (INCOMPLETE: the others are not judged).</p>"
            });
        } else {
            html.push_str("<p>No change was bisected; the sweep's own changes between neighbouring sizes:</p><ul>");
            for c in changes {
                let _ = write!(html, "<li>{}</li>", item_html(c));
            }
            html.push_str("</ul>");
        }
        html.push_str("</section>");
        return;
    }
    html.push_str(r#"<table class="cliffs"><tr><th>allocator</th><th>what changes, per iteration</th><th>between</th><th>behind it</th></tr>"#);
    for c in cliffs {
        let f = &c["figures"];
        let changes: Vec<String> = f["changes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|ch| {
                        esc(&format!(
                            "{}: {} {} → {}",
                            ch["variant"].as_str().unwrap_or_default(),
                            ch["metric"].as_str().unwrap_or_default(),
                            fmt_count(ch["below_value"].as_f64().unwrap_or(0.0)),
                            fmt_count(ch["above_value"].as_f64().unwrap_or(0.0))
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let cls = match f["cause"].as_str() {
            Some("at") => "explained",
            Some("near") => "near",
            _ => "unexplained",
        };
        let moved = f["moved"]
            .as_str()
            .map(|m| {
                format!(
                    "<br><b class=\"{}\">Moved: {}</b>",
                    if f["confirmed"] == true {
                        "confirmed"
                    } else {
                        "unconfirmed"
                    },
                    esc(m)
                )
            })
            .unwrap_or_default();
        let (below, above) = (
            f["below_size"].as_u64().unwrap_or(0),
            f["above_size"].as_u64().unwrap_or(0),
        );
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{} and {} elements (bisected)<br><small>{} → {} per f64 buffer</small></td><td class=\"{cls}\">{}{moved}</td></tr>",
            esc(f["allocator"].as_str().unwrap_or_default()),
            changes.join("<br>"),
            group_thousands(below as i64),
            group_thousands(above as i64),
            esc(&human_bytes(below * 8)),
            esc(&human_bytes(above * 8)),
            esc(f["behind"].as_str().unwrap_or_default()),
        );
    }
    html.push_str("</table><p>A named threshold is the explanation the allocator's rules give; it is proved by moving the threshold with its knob (the spec that “moves it”) and finding the cliff where the rule then puts it: <code>alloclab run --confirm</code> does that after bisecting (on in run-all's size sweep), and the row then says where the cliff went.</p></section>");
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;max-width:1100px;margin:1.2em auto;padding:0 1em;color:#1b1b1b}h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.2em 0 .4em}.verdict{font-size:1.25em}.why{font-size:1.05em}table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}.slower{background:#fdd9b5}.faster{background:#c6dbef}.same{background:#eee}.open,.near{background:#fff7bc}.explained{background:#d9f0d3}.unexplained{background:#f4f4f4}.worse{color:#8a4b00}b.confirmed{color:#1a6b1a}b.unconfirmed{color:#8a4b00}.cliffs td:nth-child(2),.cliffs td:nth-child(3){white-space:nowrap}.cliffs td:nth-child(4){overflow-wrap:anywhere}.base{background:#fff}b.slower,b.faster{padding:0 .2em}.warn{color:#8a4b00}small{color:#555}code{background:#f4f4f4;padding:0 .2em}.folders{font-size:.95em}.chart img{max-width:100%;height:auto;border:1px solid #eee}figure{margin:.6em 0}figcaption{font-size:.85em;color:#555}";

/// The page's script: records errors, and with `#selftest` says whether the answer is
/// on the first screen and how many links the page has.
const SCRIPT: &str = "window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message))});document.addEventListener('DOMContentLoaded',function(){var b=document.body;var a=document.getElementById('answer');var v=a?a.querySelector('.verdict'):null;var r=v?v.getBoundingClientRect():null;b.setAttribute('data-answer-first-screen',r&&r.bottom<=window.innerHeight&&r.top>=0?'yes':'no');b.setAttribute('data-links',String(document.querySelectorAll('a[href]').length));b.setAttribute('data-errors',window.__errors.join('; '));});";

/// The whole page for the results folders under `parent`.
pub fn page(parent: &Path, entries: &[Entry]) -> String {
    let mut body = String::new();
    let mut price = String::new();
    let mut removed = Vec::new();
    let heat = founding(parent, entries, &mut body, &mut price, &mut removed);
    remedies(entries, &removed, &mut body);
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
            (None, true) if e.writing.is_none() => "complete".into(),
            (None, _) => format!("INCOMPLETE: {}", unfinished(e)),
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
        .and_then(|e| crate::files::read_to_string(parent.join(&e.name).join("env.json")).ok())
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
    // Every folder's page, linked on the first screen (their states are in the table at
    // the end).
    let nav: Vec<String> = entries
        .iter()
        .filter(|e| e.page.is_some())
        .map(folder_link)
        .collect();
    let nav = if nav.is_empty() {
        String::new()
    } else {
        format!(
            r##"<p class="folders">Folders: {} (<a href="#folders">their states</a>)</p>"##,
            nav.join(" · ")
        )
    };
    format!(
        "{HEAD}<meta name=\"viewport\" content=\"width=device-width\"><title>{title_mark}alloclab: the run's answer</title><style>{STYLE}</style><script>{SCRIPT}</script></head><body><h1>{title_mark}alloclab: what the allocators do to the founding case</h1><p><small>{} in {}; each figure below is read from them.</small></p>{banner}{nav}{body}</body></html>\n",
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

    #[test]
    fn links_are_percent_escaped() {
        assert_eq!(percent_bytes(b"a b"), "a%20b");
        assert_eq!(percent_bytes(b"x\"y\xff/"), "x%22y%FF/");
    }
}
