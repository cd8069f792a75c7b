//! A traced Python command's lines as Python users know them from line_profiler and
//! Scalene: the script's own lines, each with — per allocator — the page faults and
//! memory syscalls per execution of the line and the native path behind them. The
//! console shows the hottest lines first; the page lists every line of the script, then
//! the heaviest lines of the other files, folded.

use crate::analysis::python::PythonView;
use crate::fmt::group_thousands;
use std::fmt::Write as _;
use std::path::Path;

/// What one allocator's run did at one line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Events {
    /// How many times the line started.
    pub executions: u64,
    pub faults: u64,
    /// brk + mmap + munmap + madvise + mremap.
    pub calls: u64,
    /// (kind, events, the native path most of them came through), in the lab's order of
    /// kinds.
    pub paths: Vec<(String, u64, Option<String>)>,
}

impl Events {
    fn per_execution(&self, n: u64) -> Option<f64> {
        (self.executions > 0).then(|| n as f64 / self.executions as f64)
    }
}

/// One line of the traced program with its events under each allocator.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub file: String,
    pub line: u32,
    pub function: String,
    pub source: Option<String>,
    /// Per allocator, in the order given to [`lines`]: None where its run made no event
    /// at this line.
    pub per: Vec<Option<Events>>,
}

impl Line {
    /// How many times the line started (the most under any allocator).
    fn runs(&self) -> u64 {
        self.per
            .iter()
            .flatten()
            .map(|e| e.executions)
            .max()
            .unwrap_or(0)
    }

    /// Every event at the line, under every allocator.
    fn events(&self) -> u64 {
        self.per.iter().flatten().map(|e| e.faults + e.calls).sum()
    }
}

const KINDS: [&str; 6] = ["fault", "brk", "mmap", "munmap", "madvise", "mremap"];

/// The lines at which any allocator's run made an event: those that ran more than once
/// first, each group the most events (faults and memory syscalls, over all allocators)
/// first.
pub fn lines(views: &[&PythonView]) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    for (i, v) in views.iter().enumerate() {
        for kind in KINDS {
            // madvise rows are per advice ("madvise(DONTNEED)"), in the kind's place.
            let of_kind = |r: &&crate::analysis::python::LineRow| {
                r.kind == kind
                    || r.kind
                        .strip_prefix(kind)
                        .is_some_and(|rest| rest.starts_with('('))
            };
            for r in v.lines.iter().filter(of_kind) {
                let at = match out
                    .iter()
                    .position(|l| l.file == r.file && l.line == r.line)
                {
                    Some(at) => at,
                    None => {
                        out.push(Line {
                            file: r.file.clone(),
                            line: r.line,
                            function: r.function.clone(),
                            source: r.source.clone(),
                            per: vec![None; views.len()],
                        });
                        out.len() - 1
                    }
                };
                let e = out[at].per[i].get_or_insert_with(Events::default);
                e.executions = e.executions.max(r.executions);
                if kind == "fault" {
                    e.faults += r.count;
                } else {
                    e.calls += r.count;
                }
                e.paths.push((r.kind.clone(), r.count, r.cause.clone()));
            }
        }
    }
    // A line that ran more than once (a loop's, a called function's) before one that ran
    // once (an import, the set-up), each the most events first.
    out.sort_by(|a, b| {
        (b.runs() > 1)
            .cmp(&(a.runs() > 1))
            .then(b.events().cmp(&a.events()))
            .then(a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });
    out
}

/// The lines of the program's own script: those in a file the command names (its
/// script, as an argument), else those in any real file (not a frozen module's
/// `<frozen …>`), else all (`python3 -c`'s `<string>`); and how many lines with events
/// are elsewhere.
pub fn own(lines: Vec<Line>, command: &[String]) -> (Vec<Line>, usize) {
    let named: Vec<std::path::PathBuf> = command
        .iter()
        .filter_map(|a| std::fs::canonicalize(a).ok())
        .filter(|p| p.is_file())
        .collect();
    let in_named = |l: &Line| std::fs::canonicalize(&l.file).is_ok_and(|p| named.contains(&p));
    let total = lines.len();
    let mine: Vec<Line> = if lines.iter().any(in_named) {
        lines.into_iter().filter(in_named).collect()
    } else if lines.iter().any(|l| !l.file.starts_with('<')) {
        lines
            .into_iter()
            .filter(|l| !l.file.starts_with('<'))
            .collect()
    } else {
        // Only code without a file: `python3 -c CODE`'s `<string>` is the program's (its
        // text from CODE), a frozen module's is not.
        let code = command
            .iter()
            .position(|a| a == "-c")
            .and_then(|i| command.get(i + 1));
        lines
            .into_iter()
            .filter(|l| !l.file.starts_with("<frozen"))
            .map(|mut l| {
                if l.file == "<string>" && l.source.is_none() {
                    l.source = code
                        .and_then(|c| c.lines().nth(l.line.saturating_sub(1) as usize))
                        .map(str::to_string);
                }
                l
            })
            .collect()
    };
    let elsewhere = total - mine.len();
    (mine, elsewhere)
}

/// A count per execution as a person reads it: whole from 100, one decimal from 10, two
/// below; "–" where the line did not run.
fn per(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v >= 100.0 => group_thousands(v.round() as i64),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(0.0) => "0".into(),
        Some(v) => format!("{v:.2}"),
    }
}

fn file_name(file: &str) -> String {
    Path::new(file)
        .file_name()
        .map_or(file.to_string(), |f| f.to_string_lossy().into_owned())
}

/// Where a line is, as the table's first column: its number, with the file's name when
/// the lines are in more than one file.
fn place(l: &Line, one_file: bool) -> String {
    if one_file {
        l.line.to_string()
    } else {
        format!("{}:{}", file_name(&l.file), l.line)
    }
}

/// The console's listing in `width` columns: a heading, a table of the `top` hottest
/// lines (per allocator faults and memory syscalls per execution, then the line's text,
/// cut to fit), and under each of the first `paths` of them the native path behind its
/// events, per allocator.
pub fn console(
    labels: &[&str],
    lines: &[Line],
    elsewhere: usize,
    width: usize,
    top: usize,
    paths: usize,
) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let one_file = lines.iter().all(|l| l.file == lines[0].file);
    let mut s = crate::fmt::wrap(
        &format!(
            "by line{}, per execution (repeated lines first; every line in report.html):",
            if one_file {
                format!(" of {}", file_name(&lines[0].file))
            } else {
                String::new()
            }
        ),
        width,
        "",
        "  ",
    );
    let shown = &lines[..lines.len().min(top)];
    let line_w = shown
        .iter()
        .map(|l| place(l, one_file).chars().count())
        .chain([4])
        .max()
        .unwrap_or(4);
    let runs = Line::runs;
    let runs_w = shown
        .iter()
        .map(|l| group_thousands(runs(l) as i64).len())
        .chain([4])
        .max()
        .unwrap_or(4);
    // Per allocator two columns, faults and memory calls, under its name.
    // No event recorded at the line under an allocator: 0 of each.
    let cell = |l: &Line, i: usize, calls: bool| match &l.per[i] {
        Some(e) => per(e.per_execution(if calls { e.calls } else { e.faults })),
        None => "0".into(),
    };
    let widths: Vec<(usize, usize)> = labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let f = shown
                .iter()
                .map(|l| cell(l, i, false).chars().count())
                .chain([6])
                .max()
                .unwrap_or(6);
            let c = shown
                .iter()
                .map(|l| cell(l, i, true).chars().count())
                .chain([9])
                .max()
                .unwrap_or(9);
            // The group is at least as wide as the allocator's name.
            let extra = label.chars().count().saturating_sub(f + 2 + c);
            (f + extra, c)
        })
        .collect();
    // As many allocators per table as the width takes (one at least); the first table
    // carries the source and, under its first rows, the native paths of every allocator.
    let fixed = line_w + 2 + runs_w;
    let mut chunks: Vec<Vec<usize>> = vec![Vec::new()];
    let mut used = fixed;
    for (i, (f, c)) in widths.iter().enumerate() {
        let w = 2 + f + 2 + c;
        let last = chunks.last_mut().expect("one chunk at least");
        if !last.is_empty() && used + w > width {
            chunks.push(vec![i]);
            used = fixed + w;
        } else {
            last.push(i);
            used += w;
        }
    }
    for (n, chunk) in chunks.iter().enumerate() {
        if n > 0 {
            s.push('\n');
        }
        let mut head = format!("{:line_w$}  {:runs_w$}", "", "");
        let mut sub = format!("{:<line_w$}  {:>runs_w$}", "line", "runs");
        for &i in chunk {
            let (f, c) = widths[i];
            let _ = write!(head, "  {:<w$}", labels[i], w = f + 2 + c);
            let _ = write!(sub, "  {:>f$}  {:>c$}", "faults", "mem calls");
        }
        let room = width.saturating_sub(sub.chars().count() + 2);
        let with_source = n == 0 && room >= 12;
        if with_source {
            sub.push_str("  source");
        }
        s.push_str(head.trim_end());
        s.push('\n');
        s.push_str(&sub);
        s.push('\n');
        for (k, l) in shown.iter().enumerate() {
            let mut row = format!(
                "{:<line_w$}  {:>runs_w$}",
                place(l, one_file),
                group_thousands(runs(l) as i64)
            );
            for &i in chunk {
                let (f, c) = widths[i];
                let _ = write!(row, "  {:>f$}  {:>c$}", cell(l, i, false), cell(l, i, true));
            }
            if with_source {
                let src = l.source.as_deref().unwrap_or("").trim();
                let cut: String = if src.chars().count() > room {
                    src.chars().take(room - 1).chain(['…']).collect()
                } else {
                    src.to_string()
                };
                let _ = write!(row, "  {cut}");
            }
            s.push_str(row.trim_end());
            s.push('\n');
            if n == 0 && k < paths {
                s.push_str(&path_lines(labels, l, width));
            }
        }
    }
    let more = lines.len() - shown.len();
    if more + elsewhere > 0 {
        let mut said = Vec::new();
        if more > 0 {
            said.push(format!("{more} more lines with events"));
        }
        if elsewhere > 0 {
            said.push(format!(
                "{elsewhere} lines in other files (the standard library's, an import's)"
            ));
        }
        s.push_str(&crate::fmt::wrap(
            &format!("… and {}: report.html lists them", said.join(", and ")),
            width,
            "",
            "  ",
        ));
    }
    s
}

/// Under a line of the console's table: per allocator, the native path behind each kind
/// of its events there (a kind made less than once in ten executions as a count in all).
fn path_lines(labels: &[&str], l: &Line, width: usize) -> String {
    let mut s = String::new();
    for (i, label) in labels.iter().enumerate() {
        let Some(e) = &l.per[i] else { continue };
        let said: Vec<String> = e
            .paths
            .iter()
            .filter(|(_, n, _)| *n > 0)
            .map(|(kind, n, path)| {
                let what = if kind == "fault" { "faults" } else { kind };
                let each = match e.per_execution(*n) {
                    Some(r) if r < 0.1 => format!("{} {what} in all", group_thousands(*n as i64)),
                    r => format!("{} {what}", per(r)),
                };
                match path {
                    Some(p) => format!("{each} via {p}"),
                    None => each,
                }
            })
            .collect();
        if !said.is_empty() {
            s.push_str(&crate::fmt::wrap(
                &format!("{label}: {}", said.join("; ")),
                width,
                "    ",
                "      ",
            ));
        }
    }
    s
}

/// The largest script file the page lists whole; a larger one is listed by its lines
/// with events only.
const LISTED_BYTES: u64 = 1 << 20;

/// The most lines of the script the page lists whole; a longer script is listed by its
/// lines with events (at most [`SCRIPT_ROWS`] of them, the heaviest).
const LISTED_LINES: usize = 2_000;

/// The most rows of a script listed by its lines with events.
const SCRIPT_ROWS: usize = 500;

/// The most rows of another file (the standard library's, an import's): its heaviest
/// lines with events, in the order of the file.
const OTHER_ROWS: usize = 12;

/// The most other files listed, the heaviest first; the rest are counted.
const OTHER_FILES: usize = 40;

/// A file as the page names another file: from its package (after `site-packages/`) or
/// its place in the standard library (after `lib/pythonX.Y/`), else whole.
fn short_path(file: &str) -> &str {
    if let Some(i) = file.rfind("/site-packages/") {
        return &file[i + "/site-packages/".len()..];
    }
    if let Some(i) = file.find("/lib/python") {
        let rest = &file[i + "/lib/python".len()..];
        if let Some(j) = rest.find('/') {
            return &rest[j + 1..];
        }
    }
    file
}

/// The files the command names (its script, as an argument, by their real path), and
/// `python3 -c`'s `<string>`: the program's own, which the page lists first and whole.
fn script_files(lines: &[Line], command: &[String]) -> Vec<String> {
    let named: Vec<std::path::PathBuf> = command
        .iter()
        .filter_map(|a| std::fs::canonicalize(a).ok())
        .filter(|p| p.is_file())
        .collect();
    let dash_c = command.iter().any(|a| a == "-c");
    let mut files: Vec<String> = lines
        .iter()
        .map(|l| l.file.as_str())
        .filter(|f| {
            (dash_c && *f == "<string>")
                || std::fs::canonicalize(f).is_ok_and(|p| named.contains(&p))
        })
        .map(str::to_string)
        .collect();
    files.sort_unstable();
    files.dedup();
    files
}

/// The page's section: the script's own files first, listed whole (line numbers, per
/// allocator faults and memory syscalls per execution, the native paths as each cell's
/// hover text), the lines with events marked; then every other file with events folded
/// (`<details>`), the heaviest (most faults and memory syscalls under all allocators)
/// first, each by its heaviest [`OTHER_ROWS`] lines with events. A script that cannot be
/// read (or is larger than 1 MiB or [`LISTED_LINES`] lines) is listed by its lines with
/// events.
pub fn html(labels: &[&str], lines: &[Line], command: &[String]) -> String {
    use super::escape_markup as esc;
    if lines.is_empty() {
        return String::new();
    }
    let scripts = script_files(lines, command);
    // Every file with events and its weight: (file, faults + memory syscalls).
    let mut others: Vec<(&str, u64)> = Vec::new();
    for l in lines {
        if scripts.contains(&l.file) {
            continue;
        }
        match others.iter_mut().find(|(f, _)| *f == l.file) {
            Some((_, w)) => *w += l.events(),
            None => others.push((l.file.as_str(), l.events())),
        }
    }
    others.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut h = String::from(
        "<h2 id=\"lines\">By line of the script</h2>\n<p class=\"env\">Per execution of the line, per allocator: page faults and memory syscalls (brk, mmap, munmap, madvise, mremap); hover a figure for the native path behind it. Lines with events are marked. The script first, then the other files with events (the standard library's, the imports'), the most events first.</p>\n",
    );
    let head = |h: &mut String| {
        h.push_str("<div class=\"wide\"><table class=\"listing\"><tr><th>line</th><th>runs</th>");
        for label in labels {
            let _ = write!(
                h,
                "<th>{} faults</th><th>{} mem calls</th>",
                esc(label),
                esc(label)
            );
        }
        h.push_str("<th>source</th></tr>\n");
    };
    let row = |h: &mut String, at: &[&Line], number: u32, source: &str| {
        let l = at.iter().find(|l| l.line == number);
        let runs = l.map_or(String::new(), |l| group_thousands(l.runs() as i64));
        let _ = write!(
            h,
            "<tr{}><td>{number}</td><td>{runs}</td>",
            if l.is_some() { " class=\"hot\"" } else { "" }
        );
        for i in 0..labels.len() {
            let e = l.and_then(|l| l.per[i].as_ref());
            for calls in [false, true] {
                let Some(e) = e else {
                    // A line with events under another allocator had none here.
                    h.push_str(if l.is_some() {
                        "<td>0</td>"
                    } else {
                        "<td></td>"
                    });
                    continue;
                };
                let n = if calls { e.calls } else { e.faults };
                let paths: Vec<String> = e
                    .paths
                    .iter()
                    .filter(|(kind, n, _)| (kind != "fault") == calls && *n > 0)
                    .map(|(kind, n, p)| {
                        format!(
                            "{} {kind}{}",
                            group_thousands(*n as i64),
                            p.as_ref().map_or(String::new(), |p| format!(" via {p}"))
                        )
                    })
                    .collect();
                let _ = write!(
                    h,
                    "<td title=\"{}\">{}</td>",
                    esc(&paths.join("; ")),
                    per(e.per_execution(n))
                );
            }
        }
        let _ = writeln!(h, "<td><code>{}</code></td></tr>", esc(source));
    };
    // A file's lines with events: the heaviest `most`, in the order of the file; and how
    // many more there are.
    let heaviest = |at: &[&Line], most: usize| -> (Vec<(u32, String)>, usize) {
        let mut by_weight: Vec<&&Line> = at.iter().collect();
        by_weight.sort_by(|a, b| b.events().cmp(&a.events()).then(a.line.cmp(&b.line)));
        let more = by_weight.len().saturating_sub(most);
        let mut kept: Vec<(u32, String)> = by_weight
            .into_iter()
            .take(most)
            .map(|l| (l.line, l.source.clone().unwrap_or_default()))
            .collect();
        kept.sort_by_key(|(n, _)| *n);
        (kept, more)
    };
    let more_line = |h: &mut String, more: usize| {
        if more > 0 {
            let _ = writeln!(
                h,
                "<p class=\"env\">… and {} more line{} with fewer events (trace.json has every line).</p>",
                group_thousands(more as i64),
                if more == 1 { "" } else { "s" }
            );
        }
    };
    for file in &scripts {
        let at: Vec<&Line> = lines.iter().filter(|l| &l.file == file).collect();
        let text = std::fs::metadata(file)
            .ok()
            .filter(|m| m.is_file() && m.len() <= LISTED_BYTES)
            .and_then(|_| crate::files::read_to_string(file).ok())
            .filter(|t| t.lines().count() <= LISTED_LINES);
        let _ = writeln!(h, "<h3 class=\"script\">{}</h3>", esc(file));
        head(&mut h);
        let more = match &text {
            Some(text) => {
                for (i, source) in text.lines().enumerate() {
                    row(&mut h, &at, i as u32 + 1, source);
                }
                0
            }
            None => {
                let (kept, more) = heaviest(&at, SCRIPT_ROWS);
                for (n, source) in kept {
                    row(&mut h, &at, n, &source);
                }
                more
            }
        };
        h.push_str("</table></div>\n");
        more_line(&mut h, more);
    }
    if !others.is_empty() {
        let _ = writeln!(
            h,
            "<h3>{} other file{} with events, the most first</h3>",
            group_thousands(others.len() as i64),
            if others.len() == 1 { "" } else { "s" }
        );
    }
    for (file, _) in others.iter().take(OTHER_FILES) {
        let at: Vec<&Line> = lines.iter().filter(|l| l.file == *file).collect();
        // The file's events per allocator, as its summary says them.
        let sums: Vec<String> = labels
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let (f, c) = at
                    .iter()
                    .filter_map(|l| l.per[i].as_ref())
                    .fold((0, 0), |(f, c), e| (f + e.faults, c + e.calls));
                format!(
                    "{label} {} faults, {} mem calls",
                    group_thousands(f as i64),
                    group_thousands(c as i64)
                )
            })
            .collect();
        let _ = writeln!(
            h,
            "<details class=\"file\"><summary><code title=\"{}\">{}</code> <span class=\"env\">{} line{} with events; {}</span></summary>",
            esc(file),
            esc(short_path(file)),
            group_thousands(at.len() as i64),
            if at.len() == 1 { "" } else { "s" },
            esc(&sums.join(" · "))
        );
        head(&mut h);
        let (kept, more) = heaviest(&at, OTHER_ROWS);
        for (n, source) in kept {
            row(&mut h, &at, n, &source);
        }
        h.push_str("</table></div>\n");
        more_line(&mut h, more);
        h.push_str("</details>\n");
    }
    if others.len() > OTHER_FILES {
        let rest = &others[OTHER_FILES..];
        let _ = writeln!(
            h,
            "<p class=\"env\">… and {} more file{} with fewer events (trace.json has every line).</p>",
            group_thousands(rest.len() as i64),
            if rest.len() == 1 { "" } else { "s" }
        );
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::python::LineRow;

    fn row(kind: &str, line: u32, count: u64, executions: u64, cause: &str) -> LineRow {
        LineRow {
            kind: kind.into(),
            function: "churn".into(),
            file: "/nonexistent/x.py".into(),
            line,
            source: Some(format!("statement_{line}()")),
            count,
            share: 0.5,
            executions,
            per_execution: Some(count as f64 / executions as f64),
            cause: Some(cause.into()),
            via: None,
        }
    }

    fn view(lines: Vec<LineRow>) -> PythonView {
        PythonView {
            lines,
            ..PythonView::default()
        }
    }

    #[test]
    fn the_page_lists_the_script_whole_first_and_folds_the_other_files_heaviest_first() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.py");
        std::fs::write(&script, "import numpy\nx = 1\ny = numpy.ones(9)\n").unwrap();
        let script = script.to_string_lossy().into_owned();
        let at = |file: &str, line: u32, faults: u64| Line {
            file: file.into(),
            line,
            function: "<module>".into(),
            source: Some(format!("line_{line}")),
            per: vec![Some(Events {
                executions: 1,
                faults,
                ..Events::default()
            })],
        };
        let light = "/usr/lib/python3.12/site-packages/light/mod.py";
        let heavy = "/usr/lib/python3.12/heavy.py";
        let mut l = vec![at(&script, 3, 1), at(light, 1, 5)];
        // The heavy file has more lines with events than the page lists of another file.
        l.extend((1..=OTHER_ROWS as u32 + 3).map(|n| at(heavy, n * 10, n as u64)));
        let command = ["python3".to_string(), script.clone()];
        let page = html(&["system"], &l, &command);
        let find = |needle: &str| {
            page.find(needle)
                .unwrap_or_else(|| panic!("{needle}\n{page}"))
        };
        // The script first, every line of it; the other files after it, folded, the
        // heaviest first, named from their package or the standard library.
        assert!(find(&format!("<h3 class=\"script\">{script}</h3>")) < find("<details"));
        assert!(page.contains("<tr><td>2</td><td></td>"), "{page}");
        assert!(
            find(">heavy.py</code>") < find(">light/mod.py</code>"),
            "{page}"
        );
        assert!(page.contains("2 other files with events"), "{page}");
        // The heavy file by its heaviest lines, the rest counted.
        let heavy_rows = page
            .split(">heavy.py</code>")
            .nth(1)
            .unwrap()
            .split("</details>")
            .next()
            .unwrap();
        assert_eq!(heavy_rows.matches("<tr class=\"hot\">").count(), OTHER_ROWS);
        assert!(
            !heavy_rows.contains("<td>10</td>"),
            "the lightest line is left out"
        );
        assert!(heavy_rows.contains("… and 3 more lines"), "{heavy_rows}");
    }

    #[test]
    fn the_programs_own_lines_are_its_scripts_or_its_dash_c_codes() {
        let at = |file: &str, line: u32| Line {
            file: file.into(),
            line,
            function: "<module>".into(),
            source: None,
            per: vec![Some(Events {
                executions: 5,
                faults: 50,
                ..Events::default()
            })],
        };
        let command: Vec<String> = [
            "python3",
            "-c",
            "\nfor i in range(5):\n    b = bytearray(9)",
        ]
        .map(String::from)
        .to_vec();
        let (mine, elsewhere) = own(
            vec![at("<string>", 3), at("<frozen importlib._bootstrap>", 7)],
            &command,
        );
        assert_eq!(elsewhere, 1);
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].source.as_deref(), Some("    b = bytearray(9)"));
        // A real file beside frozen ones: the real one.
        let (mine, elsewhere) = own(
            vec![at("/nonexistent/x.py", 3), at("<frozen zipimport>", 7)],
            &["python3".to_string()],
        );
        assert_eq!((mine.len(), elsewhere), (1, 1));
        assert_eq!(mine[0].file, "/nonexistent/x.py");
    }

    #[test]
    fn each_line_gathers_its_kinds_per_allocator_and_the_hottest_comes_first() {
        let system = view(vec![
            row("fault", 13, 12_000, 12, "memset"),
            row("brk", 13, 24, 12, "sysmalloc"),
            row("munmap", 14, 12, 12, "free"),
        ]);
        let mimalloc = view(vec![row("fault", 13, 24, 12, "memset")]);
        let l = lines(&[&system, &mimalloc]);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].line, 13);
        let s = l[0].per[0].as_ref().unwrap();
        assert_eq!((s.executions, s.faults, s.calls), (12, 12_000, 24));
        assert_eq!(l[0].per[1].as_ref().unwrap().faults, 24);
        assert_eq!(l[1].line, 14);
        assert!(l[1].per[1].is_none());

        let text = console(&["system", "mimalloc"], &l, 0, 100, 10, 1);
        for t in text.lines() {
            assert!(t.chars().count() <= 100, "{t}");
        }
        let rows: Vec<&str> = text.lines().collect();
        assert!(
            rows[0].starts_with("by line of x.py, per execution "),
            "{text}"
        );
        assert!(
            rows[1].contains("system") && rows[1].contains("mimalloc"),
            "{text}"
        );
        assert!(rows[2].starts_with("line  runs  "), "{text}");
        // Line 13: 1,000 faults and 2.00 brk per execution under system, 2.00 faults
        // under mimalloc; its text last.
        let r13: Vec<&str> = rows[3].split_whitespace().collect();
        assert_eq!(
            &r13[..6],
            ["13", "12", "1,000", "2.00", "2.00", "0"],
            "{text}"
        );
        assert!(rows[3].ends_with("statement_13()"), "{text}");
        assert!(
            rows[4].contains("system: 1,000 faults via memset; 2.00 brk via sysmalloc"),
            "{text}"
        );
        // Only the first line gets its paths.
        assert!(!text.contains("via free"), "{text}");
        // The page lists the lines of a file it cannot read by their events.
        let page = html(&["system", "mimalloc"], &l, &[]);
        assert!(
            page.contains("<tr class=\"hot\"><td>13</td><td>12</td>"),
            "{page}"
        );
        assert!(
            page.contains("title=\"12,000 fault via memset\">1,000</td>"),
            "{page}"
        );
        // Six allocators in 100 columns: tables side by side would not fit, so the
        // allocators go into as many tables as the width needs.
        let six: Vec<PythonView> = (0..6)
            .map(|_| view(vec![row("fault", 13, 12, 12, "memset")]))
            .collect();
        let refs: Vec<&PythonView> = six.iter().collect();
        let labels = [
            "system", "jemalloc", "mimalloc", "tcmalloc", "snmalloc", "rpmalloc",
        ];
        let wide = console(&labels, &lines(&refs), 0, 100, 10, 1);
        for t in wide.lines() {
            assert!(t.chars().count() <= 100, "{t}\n{wide}");
        }
        assert_eq!(wide.matches("\nline  runs").count(), 2, "{wide}");
        assert_eq!(wide.matches("rpmalloc").count(), 2, "{wide}");
        // Narrow: the source gives way, never the figures.
        let narrow = console(&["system", "mimalloc"], &l, 0, 50, 10, 0);
        assert!(!narrow.contains("statement_13"), "{narrow}");
    }
}
