//! `report.html`: one self-contained page per results folder (and `compare --html`).
//! The charts are the lab's own SVG ([`super::svg`]), inlined, with a hover text and an
//! interval whisker on every point; a few lines of inline script switch allocators and
//! variants on and off. No network, no external script or font: the file opens offline
//! and stays readable without script (everything is shown).
//!
//! Why this approach: the lab already draws its SVG files with log axes, zero lines and
//! legends; reusing that writer keeps one charting code path to maintain, adds no
//! dependency or vendored library with its own licence and updates, and gives each
//! chart exactly the axes the measurements need. Interaction is limited to what helps
//! reading a 24-series chart: toggles and hover values.

use super::plots::{color, dash};
use super::svg::{render_with, Axis, Chart, Extras, Scale, Series, SeriesMeta};
use crate::analysis::command::ExecRow;
use crate::fmt::{fmt_ns, group_thousands};
use crate::model::metric::{Unit, MEMORY_SYSCALLS, MINOR_FAULTS, RUN_METRICS};
use crate::model::spec::{Allocator, Choice, Variant};
use crate::model::summary::SummaryRow;
use std::fmt::Write as _;

/// A per-cell chart: title, y label, value format, the value with its interval or range
/// (None: the row has no such value), caption.
type Dot<R> = (
    &'static str,
    &'static str,
    fn(f64) -> String,
    fn(&R) -> Option<(f64, Option<(f64, f64)>)>,
    &'static str,
);

/// A chart against size: title, y label, value format, the value.
type Line = (
    &'static str,
    &'static str,
    fn(f64) -> String,
    fn(&SummaryRow) -> Option<f64>,
);

/// One chart and what it shows, for the page.
pub struct Figure {
    pub chart: Chart,
    pub extras: Extras,
    pub caption: String,
}

/// A page: title, what ran where, the findings, the figures, and tables as preformatted
/// text.
#[derive(Default)]
pub struct Page {
    pub title: String,
    pub environment: Vec<String>,
    /// The headline findings, first on the page; with them the other findings fold.
    pub answer: super::headlines::Answer,
    /// Sections of markup of the lab's own making (a heat table), after the answer.
    pub sections: Vec<String>,
    pub findings: Vec<String>,
    pub figures: Vec<Figure>,
    /// SVG drawings already made (a folder's plots), each with its caption.
    pub drawings: Vec<(String, String)>,
    /// Preformatted text (a console's screen), each under its title.
    pub text: Vec<(String, String)>,
    /// Markdown of the lab's own (REPORT.md), each under its title, rendered as HTML.
    pub markdown: Vec<(String, String)>,
}

use super::escape_markup as esc;

/// A finding with its verdict words marked, so that a storm stands out.
fn finding(line: &str) -> String {
    let mut out = esc(line);
    for (word, class) in [
        (" slower", "slower"),
        (" faster", "faster"),
        ("no significant difference", "same"),
        ("undecided", "open"),
    ] {
        out = out.replace(word, &format!("<b class=\"{class}\">{word}</b>"));
    }
    out
}

/// A trace's answer item longer than this many characters folds where its events came
/// from (see [`answer_item`]).
const FOLD_ITEM_CHARS: usize = 600;

/// Whether a part of a trace's "where from" names the dynamic loader as its largest
/// cause: every frame of the chain after "N % from" / "N % in" is ld.so's (`_dl_…`,
/// `dl_…`, `dlopen_doit`), i.e. loading a library at start-up or at an import.
fn from_the_loader(part: &str) -> bool {
    let Some(at) = part
        .find(" % from ")
        .map(|i| i + 8)
        .or_else(|| part.find(" % in ").map(|i| i + 6))
    else {
        return false;
    };
    let chain = &part[at..];
    let end = [" (", ", "]
        .iter()
        .filter_map(|s| chain.find(s))
        .min()
        .unwrap_or(chain.len());
    chain[..end]
        .split(" → ")
        .all(|f| f.trim_start_matches('_').starts_with("dl"))
}

/// An answer item as the page lists it: its sentence. A trace's item that runs long keeps
/// what the recorded evidence shows in view and folds where its events came from (their
/// native call stacks, one kind a line, the dynamic loader's last): the same words, in
/// the same figures, fewer of them in view.
fn answer_item(item: &crate::analysis::findings::Item) -> String {
    use crate::analysis::findings::Figures;
    let Some(Figures::Trace(f)) = &item.figures else {
        return finding(&item.text);
    };
    let at = f.lines.iter().position(|l| l.starts_with("where from: "));
    let (Some(at), None, true) = (at, &f.failed, item.text.chars().count() > FOLD_ITEM_CHARS)
    else {
        return finding(&item.text);
    };
    if at == 0 {
        return finding(&item.text);
    }
    let mut s = format!("{}.", finding(&f.lines[..at].join("; ")));
    let stacks: Vec<&str> = f.lines[at..]
        .iter()
        .map(|l| l.strip_prefix("where from: ").unwrap_or(l))
        .collect();
    let (loader, own): (Vec<&str>, Vec<&str>) = stacks.iter().partition(|p| from_the_loader(p));
    // The kinds of events the parts are of ("3,493 faults in the run …": "faults").
    let kinds = |parts: &[&str]| -> String {
        parts
            .iter()
            .filter_map(|p| {
                let mut w = p.split_whitespace();
                w.next()?
                    .chars()
                    .next()
                    .filter(char::is_ascii_digit)
                    .and(w.next())
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ =
        write!(
        s,
        "<details class=\"stacks\"><summary>where from: the native call stacks of {}{}</summary>",
        esc(&kinds(&own)),
        if loader.is_empty() {
            String::new()
        } else {
            format!("; the dynamic loader's (loading libraries): {}", esc(&kinds(&loader)))
        }
    );
    for p in &own {
        let _ = write!(s, "<div>{}</div>", finding(p));
    }
    if !loader.is_empty() {
        s.push_str("<div class=\"env\">The dynamic loader, loading libraries (at start-up and at imports):</div>");
        for p in &loader {
            let _ = write!(s, "<div>{}</div>", finding(p));
        }
    }
    s.push_str("</details>");
    s
}

const STYLE: &str = r#"
body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1200px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}.heat{border-collapse:collapse;margin:6px 0}.heat td,.heat th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top;font-size:14px}.heat td.slower{background:#fdd9b5}.heat td.faster{background:#c6dbef}.heat td.same{background:#eee}.heat td.open{background:#fff7bc}details.findings>summary{font-size:17px;font-weight:bold;margin:28px 0 8px;cursor:pointer;border-bottom:1px solid #ddd}
.env{color:#555;font-size:13px}.env div{margin:2px 0}
.listing{border-collapse:collapse;font-size:12px;margin:6px 0}.listing td,.listing th{padding:1px 6px;text-align:right;white-space:nowrap;border-bottom:1px solid #eee}.listing th{white-space:normal}.listing th:last-child,.listing td:last-child{text-align:left;white-space:pre-wrap;overflow-wrap:anywhere}.listing tr.hot{background:#fff3e0}h3{font-size:15px;margin:16px 0 4px;overflow-wrap:anywhere}
.wide{max-width:100%;overflow-x:auto}details.file>summary{cursor:pointer;margin:6px 0;overflow-wrap:anywhere}details.file .env{margin-left:6px}
details.stacks{margin:2px 0 0 0;font-size:13px}details.stacks>summary{cursor:pointer;color:#555}details.stacks div{margin:3px 0 3px 14px}
ul.findings li{overflow-wrap:anywhere}
ul.findings{padding-left:18px}ul.findings li{margin:4px 0;font-size:14px;line-height:1.4}
b.slower{color:#b03a2e}b.faster{color:#1e8449}b.same{color:#555;font-weight:normal}b.open{color:#9a7d0a}
.toggles{position:sticky;top:0;background:#fafafa;border:1px solid #ddd;padding:8px 10px;font-size:13px;z-index:2}
.toggles span{margin-right:14px}.toggles label{margin-right:8px;cursor:pointer;white-space:nowrap}
figure{margin:16px 0}figcaption{font-size:13px;color:#555;margin-top:4px}
svg .series.off{display:none}svg .legend.off{opacity:.25}svg circle{cursor:default}
pre{font-size:12px;background:#f6f6f6;padding:8px;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}
p.warn{color:#8a4b00;font-weight:bold}
.md{font-size:14px;overflow-wrap:anywhere}.md h1{font-size:18px}.md h2{font-size:16px}.md h3{font-size:15px}.md blockquote{margin:8px 0;padding:2px 12px;border-left:3px solid #ddd;color:#444}.md-table{max-width:100%;overflow-x:auto}.md table{border-collapse:collapse;margin:6px 0;font-size:13px}.md td,.md th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
"#;

/// The script: toggles, and a self-test (`#selftest`) that switches the first toggle off
/// and records on `<body>` whether its series disappeared — what the browser test reads,
/// with how far the page reaches past the window's right edge.
const SCRIPT: &str = r#"
(function(){
  var errors=[];
  window.addEventListener('error',function(e){errors.push(String(e.message));document.body.setAttribute('data-errors',errors.join(' | '));});
  function boxes(){return Array.prototype.slice.call(document.querySelectorAll('input.toggle'));}
  function apply(){
    var off={};
    boxes().forEach(function(c){if(!c.checked){off[c.getAttribute('data-key')+'='+c.getAttribute('data-value')]=true;}});
    document.querySelectorAll('svg [data-alloc]').forEach(function(g){
      var hide=off['alloc='+g.getAttribute('data-alloc')]||off['variant='+g.getAttribute('data-variant')];
      g.classList.toggle('off',!!hide);
    });
  }
  boxes().forEach(function(c){c.addEventListener('change',apply);});
  apply();
  var series=document.querySelectorAll('svg g.series');
  document.body.setAttribute('data-series',String(series.length));
  document.body.setAttribute('data-charts',String(document.querySelectorAll('figure svg').length));
  // How far the widest element reaches past the window's right edge (0: nothing to scroll
  // sideways for, the toggles included).
  var past=0;document.querySelectorAll('body *').forEach(function(e){past=Math.max(past,e.getBoundingClientRect().right-document.documentElement.clientWidth);});
  document.body.setAttribute('data-past-right',String(Math.ceil(past)));
  if(location.hash==='#selftest'){
    var c=boxes()[0],result='no toggles';
    if(c){
      var key=c.getAttribute('data-key'),value=c.getAttribute('data-value');
      var mine=Array.prototype.filter.call(series,function(g){return g.getAttribute('data-'+key)===value;});
      c.checked=false;apply();
      var hidden=mine.filter(function(g){return getComputedStyle(g).display==='none';}).length;
      var others=Array.prototype.filter.call(series,function(g){return g.getAttribute('data-'+key)!==value&&getComputedStyle(g).display!=='none';}).length;
      result=(mine.length>0&&hidden===mine.length&&others>0)?'ok':'failed: '+hidden+' of '+mine.length+' hidden, '+others+' others shown';
      c.checked=true;apply();
    }
    document.body.setAttribute('data-selftest',result);
  }
  if(!document.body.hasAttribute('data-errors')){document.body.setAttribute('data-errors','');}
})();
"#;

impl Page {
    /// The page as one HTML document.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
            esc(&self.title),
            esc(&self.title)
        );
        s.push_str("<div class=\"env\">");
        // A page led by its answer keeps its first line (what ran) and folds the
        // environment under it.
        let fold = !self.answer.is_empty() && self.environment.len() > 1;
        for (i, e) in self.environment.iter().enumerate() {
            if fold && i == 1 {
                s.push_str("<details><summary>Environment</summary>");
            }
            let _ = write!(s, "<div>{}</div>", esc(e));
        }
        if fold {
            s.push_str("</details>");
        }
        s.push_str("</div>\n");
        // Toggles for every allocator and variant the charts hold.
        let mut allocs: Vec<String> = Vec::new();
        let mut variants: Vec<String> = Vec::new();
        for f in &self.figures {
            for m in &f.extras.series {
                for (k, v) in &m.attrs {
                    let list = match *k {
                        "alloc" => &mut allocs,
                        "variant" => &mut variants,
                        _ => continue,
                    };
                    if !list.contains(v) {
                        list.push(v.clone());
                    }
                }
            }
        }
        if let Some(note) = &self.answer.incomplete {
            let _ = writeln!(s, "<p class=\"warn incomplete\">{}</p>", esc(note));
        }
        if !self.answer.items.is_empty() {
            s.push_str("<h2 id=\"answer\">Answer</h2>\n<ul class=\"findings answer\">\n");
            for item in &self.answer.items {
                let _ = writeln!(s, "<li>{}</li>", answer_item(item));
            }
            s.push_str("</ul>\n");
            if let Some(more) = self.answer.more_line() {
                let _ = writeln!(s, "<p class=\"more\">{}</p>", esc(&more));
            }
        }
        // The price of speed (one item per allocator priced) after the answer, folded,
        // so that the answer stays its five headlines.
        if !self.answer.price.is_empty() {
            let _ = writeln!(
                s,
                "<details class=\"price\"{}><summary>{} ({})</summary>\n<ul class=\"findings price\">",
                if self.answer.items.is_empty() { " open" } else { "" },
                crate::export::headlines::beside_heading(&self.answer.price),
                self.answer.price.len()
            );
            for item in &self.answer.price {
                let _ = writeln!(s, "<li>{}</li>", answer_item(item));
            }
            s.push_str("</ul></details>\n");
        }
        for section in &self.sections {
            s.push_str(section);
            s.push('\n');
        }
        if !self.findings.is_empty() {
            // Led by an answer, the findings (which repeat it among the rest) fold.
            if self.answer.is_empty() {
                s.push_str("<h2>Findings</h2>\n<ul class=\"findings\">\n");
            } else {
                let _ = write!(
                    s,
                    "<details class=\"findings\"><summary>All findings ({})</summary>\n<ul class=\"findings\">\n",
                    self.findings.len()
                );
            }
            for f in &self.findings {
                let _ = writeln!(s, "<li>{}</li>", finding(f));
            }
            s.push_str("</ul>\n");
            if !self.answer.is_empty() {
                s.push_str("</details>\n");
            }
        }
        if !self.figures.is_empty() {
            s.push_str("<h2>Charts</h2>\n");
            if allocs.len() + variants.len() > 1 {
                s.push_str("<div class=\"toggles\">");
                for (key, name, list) in [
                    ("alloc", "allocators", &allocs),
                    ("variant", "variants", &variants),
                ] {
                    if list.is_empty() {
                        continue;
                    }
                    let _ = write!(s, "<span>{name}: ");
                    for v in list {
                        let _ = write!(
                            s,
                            "<label><input type=\"checkbox\" class=\"toggle\" data-key=\"{key}\" data-value=\"{0}\" checked> {0}</label>",
                            esc(v)
                        );
                    }
                    s.push_str("</span>");
                }
                s.push_str(" <span>(hover a point for its value and interval)</span></div>\n");
            }
            for f in &self.figures {
                let _ = writeln!(
                    s,
                    "<figure>{}<figcaption>{}</figcaption></figure>",
                    render_with(&f.chart, &f.extras),
                    esc(&f.caption)
                );
            }
        }
        if !self.drawings.is_empty() {
            if self.figures.is_empty() {
                s.push_str("<h2>Charts</h2>\n");
            }
            for (caption, svg) in &self.drawings {
                let _ = writeln!(
                    s,
                    "<figure>{}<figcaption>{}</figcaption></figure>",
                    svg.trim(),
                    esc(caption)
                );
            }
        }
        for (title, text) in &self.text {
            let _ = writeln!(s, "<h2>{}</h2>\n<pre>{}</pre>", esc(title), esc(text));
        }
        for (title, md) in &self.markdown {
            let _ = writeln!(
                s,
                "<h2>{}</h2>\n<div class=\"md\">{}</div>",
                esc(title),
                super::markdown::to_html(md)
            );
        }
        let _ = write!(s, "<script>{SCRIPT}</script>\n</body></html>\n");
        s
    }
}

fn us(v: f64) -> String {
    fmt_ns(v * 1e3)
}

fn count(v: f64) -> String {
    if v >= 100.0 {
        group_thousands(v.round() as i64)
    } else if v != 0.0 && v.abs() < 0.01 {
        // Two significant digits, as log axes' lowest ticks need (0.001, not 0).
        crate::fmt::fmt_count(v)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        crate::fmt::trim_float((v * 100.0).round() / 100.0)
    }
}

fn mib(v: f64) -> String {
    format!("{} MiB", crate::fmt::trim_float((v * 10.0).round() / 10.0))
}

/// A category axis's ticks are its `x_labels`; the format is never asked.
fn no_ticks(_: f64) -> String {
    String::new()
}

/// A value with its interval or range, as a hover text says it.
fn value_text(format: fn(f64) -> String, v: f64, band: Option<(f64, f64)>) -> String {
    match band {
        Some((lo, hi)) => format!("{} [{}, {}]", format(v), format(lo), format(hi)),
        None => format(v),
    }
}

/// A y axis over every point of `series`: logarithmic where they span decades.
fn y_axis(label: &str, format: fn(f64) -> String, series: &[Series]) -> Axis {
    let values: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    Axis {
        label: label.into(),
        scale: if spans_decades(&values) {
            Scale::Log
        } else {
            Scale::Linear
        },
        format,
    }
}

/// A chart of one point per series at named x positions (variants, allocators); None
/// without points.
fn dot_figure(
    (title, ylabel, format, caption): (&str, &str, fn(f64) -> String, &str),
    x_label: &str,
    x_labels: Vec<(f64, String)>,
    dots: Vec<(Series, SeriesMeta)>,
) -> Option<Figure> {
    if dots.is_empty() {
        return None;
    }
    let (series, metas): (Vec<Series>, Vec<SeriesMeta>) = dots.into_iter().unzip();
    Some(Figure {
        chart: Chart {
            title: title.into(),
            x: Axis {
                label: x_label.into(),
                scale: Scale::Whole,
                format: no_ticks,
            },
            y: y_axis(ylabel, format, &series),
            series,
        },
        extras: Extras {
            series: metas,
            marks: Vec::new(),
            x_labels,
        },
        caption: caption.into(),
    })
}

fn percentile_name(x: f64) -> String {
    match x.round() as i64 {
        1 => "p50".into(),
        2 => "p90".into(),
        3 => "p99".into(),
        4 => "p99.9".into(),
        5 => "max".into(),
        _ => String::new(),
    }
}

/// The position of a variant on a per-variant axis, with allocators side by side.
fn variant_x(v: Variant, alloc_index: usize, allocs: usize) -> f64 {
    let i = Variant::ALL.iter().position(|x| *x == v).unwrap_or(0) as f64 + 1.0;
    let spread = 0.5;
    if allocs <= 1 {
        return i;
    }
    i - spread / 2.0 + spread * alloc_index as f64 / (allocs - 1) as f64
}

fn alloc_color(r: &SummaryRow, index: usize) -> &'static str {
    color(r.allocator, &r.allocator_spec, index)
}

/// Whether values span decades (a log axis then).
fn spans_decades(v: &[f64]) -> bool {
    let pos: Vec<f64> = v.iter().copied().filter(|x| *x > 0.0).collect();
    let (lo, hi) = (
        pos.iter().copied().fold(f64::INFINITY, f64::min),
        pos.iter().copied().fold(0.0, f64::max),
    );
    lo.is_finite() && hi / lo > 30.0
}

/// The charts of cells measured at one size (compare, or a run at one size): latency
/// percentiles per cell, the p50 with its interval, faults and memory syscalls per
/// iteration, and RSS.
pub fn cell_figures(rows: &[SummaryRow]) -> Vec<Figure> {
    let ok: Vec<&SummaryRow> = rows.iter().filter(|r| r.status.is_ok()).collect();
    if ok.is_empty() {
        return Vec::new();
    }
    let mut specs: Vec<String> = Vec::new();
    for r in &ok {
        if !specs.contains(&r.allocator_spec) {
            specs.push(r.allocator_spec.clone());
        }
    }
    let index = |r: &SummaryRow| {
        specs
            .iter()
            .position(|s| *s == r.allocator_spec)
            .unwrap_or(0)
    };
    let attrs = |r: &SummaryRow| {
        vec![
            ("alloc", r.allocator_spec.clone()),
            ("variant", r.variant.to_string()),
        ]
    };
    let procs = |r: &SummaryRow| {
        r.processes
            .map_or(String::new(), |n| format!(" (median of {n} processes)"))
    };
    let mut figures = Vec::new();

    // Latency percentiles, one line per cell; more than 8 lines (six allocators × four
    // variants make 24) are small multiples instead: one panel per variant, each with
    // its allocators (each panel scales to its own values; all take a log axis where
    // any cell's values span decades).
    let mut variants: Vec<Variant> = Vec::new();
    for r in &ok {
        if !variants.contains(&r.variant) {
            variants.push(r.variant);
        }
    }
    let panels: Vec<Option<Variant>> = if ok.len() > 8 && variants.len() > 1 {
        variants.iter().copied().map(Some).collect()
    } else {
        vec![None]
    };
    let all_points: Vec<Series> = ok
        .iter()
        .map(|r| Series {
            label: String::new(),
            color: "",
            dash: None,
            points: [r.p50_ns, r.p90_ns, r.p99_ns, r.p999_ns, r.max_ns]
                .iter()
                .flatten()
                .map(|&v| (1.0, v as f64 / 1e3))
                .collect(),
        })
        .collect();
    for panel in panels {
        let mut series = Vec::new();
        let mut metas = Vec::new();
        for r in ok.iter().filter(|r| panel.is_none_or(|v| r.variant == v)) {
            let qs = [
                (1.0, r.p50_ns, r.p50_ci_low_ns.zip(r.p50_ci_high_ns)),
                (2.0, r.p90_ns, None),
                (3.0, r.p99_ns, r.p99_ci_low_ns.zip(r.p99_ci_high_ns)),
                (4.0, r.p999_ns, None),
                (5.0, r.max_ns, None),
            ];
            let mut points = Vec::new();
            let mut tips = Vec::new();
            let mut bands = Vec::new();
            for (x, v, ci) in qs {
                let Some(v) = v else { continue };
                points.push((x, v as f64 / 1e3));
                bands.push(ci.map(|(lo, hi)| (lo as f64 / 1e3, hi as f64 / 1e3)));
                let band = ci.map(|(lo, hi)| (lo as f64 / 1e3, hi as f64 / 1e3));
                tips.push(format!(
                    "{} {} {}: {}{}",
                    r.allocator_spec,
                    r.variant,
                    percentile_name(x),
                    value_text(us, v as f64 / 1e3, band),
                    procs(r)
                ));
            }
            series.push(Series {
                label: format!("{} {}", r.allocator_spec, r.variant),
                color: alloc_color(r, index(r)),
                dash: dash(r.variant),
                points,
            });
            metas.push(SeriesMeta {
                attrs: attrs(r),
                tips,
                bands,
            });
        }
        figures.push(Figure {
        chart: Chart {
            title: match panel {
                Some(v) => format!("Latency per iteration, by percentile: {v}"),
                None => "Latency per iteration, by percentile".into(),
            },
            x: Axis {
                label: "percentile".into(),
                scale: Scale::Whole,
                format: no_ticks,
            },
            // Log or linear from every cell's values, the same for every panel.
            y: y_axis(
                "latency (log scale where values span decades)",
                us,
                if panel.is_some() { &all_points } else { &series },
            ),
            series,
        },
        extras: Extras {
            series: metas,
            marks: Vec::new(),
            x_labels: (1..=5)
                .map(|i| (f64::from(i), percentile_name(f64::from(i))))
                .collect(),
        },
        caption: "Each line is one cell (allocator × variant): the median over its processes of each process's percentile; whiskers are the intervals of the p50 and p99 medians.".into(),
    });
    }

    // Per-variant dot charts.
    let dots: [Dot<SummaryRow>; 4] = [
        (
            "p50 latency per cell, with its interval",
            "p50",
            us,
            |r| {
                Some((
                    r.p50_ns? as f64 / 1e3,
                    r.p50_ci_low_ns
                        .zip(r.p50_ci_high_ns)
                        .map(|(l, h)| (l as f64 / 1e3, h as f64 / 1e3)),
                ))
            },
            "The median over processes of each process's p50, with its interval (whisker).",
        ),
        (
            "Minor page faults per iteration",
            "minor faults / iteration",
            count,
            |r| {
                Some((
                    r.per_iter[MINOR_FAULTS]?,
                    r.spread.min[MINOR_FAULTS].zip(r.spread.max[MINOR_FAULTS]),
                ))
            },
            "Median over processes; the whisker is the range over processes. A fault storm (thousands per iteration) is the founding case's out-of-place glibc cell.",
        ),
        (
            "Memory syscalls per iteration",
            "memory syscalls / iteration",
            count,
            |r| {
                Some((
                    r.per_iter[MEMORY_SYSCALLS]?,
                    r.spread.min[MEMORY_SYSCALLS]
                        .zip(r.spread.max[MEMORY_SYSCALLS]),
                ))
            },
            "brk + mmap + munmap + madvise + mremap: the median over processes; the whisker is the range over processes.",
        ),
        (
            "Resident memory at the end of the run",
            "RSS (MiB)",
            mib,
            |r| Some((r.rss_end_bytes? as f64 / 1048576.0, None)),
            "Median over processes.",
        ),
    ];
    for (title, ylabel, format, get, caption) in dots {
        let dots = ok
            .iter()
            .filter_map(|r| {
                let (v, band) = get(r)?;
                let series = Series {
                    label: r.allocator_spec.clone(),
                    color: alloc_color(r, index(r)),
                    dash: None,
                    points: vec![(variant_x(r.variant, index(r), specs.len()), v)],
                };
                let meta = SeriesMeta {
                    attrs: attrs(r),
                    tips: vec![format!(
                        "{} {}: {}{}",
                        r.allocator_spec,
                        r.variant,
                        value_text(format, v, band),
                        procs(r)
                    )],
                    bands: vec![band],
                };
                Some((series, meta))
            })
            .collect();
        figures.extend(dot_figure(
            (title, ylabel, format, caption),
            "variant (allocators side by side)",
            variant_labels(&ok),
            dots,
        ));
    }
    figures
}

/// The variants present, at their positions on a per-variant axis.
fn variant_labels(rows: &[&SummaryRow]) -> Vec<(f64, String)> {
    Variant::ALL
        .iter()
        .enumerate()
        .filter(|(_, v)| rows.iter().any(|r| r.variant == **v))
        .map(|(i, v)| (i as f64 + 1.0, v.to_string()))
        .collect()
}

/// [`cell_figures`] for each (workload, size, threads) the rows hold, titled with it when
/// there are several (a threads experiment, two workloads), so that no chart mixes them.
pub fn grouped_cell_figures(rows: &[SummaryRow]) -> Vec<Figure> {
    let mut groups: Vec<(String, u64, u32)> = Vec::new();
    for r in rows {
        let key = (r.workload.to_string(), r.size, r.threads);
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    if groups.len() <= 1 {
        return cell_figures(rows);
    }
    groups
        .into_iter()
        .flat_map(|(workload, size, threads)| {
            let at: Vec<SummaryRow> = rows
                .iter()
                .filter(|r| {
                    r.workload.to_string() == workload && r.size == size && r.threads == threads
                })
                .cloned()
                .collect();
            let mut figures = cell_figures(&at);
            for f in &mut figures {
                f.chart.title = format!(
                    "{} · {workload}, {} {}, {}",
                    f.chart.title,
                    crate::fmt::fmt_elems(size as f64),
                    size_unit(&workload.to_string()),
                    crate::fmt::Threads(threads)
                );
            }
            figures
        })
        .collect()
}

/// The charts of cells measured over several sizes (a sweep): p50 per element, faults
/// and memory syscalls per iteration against the size, one line per allocator × variant,
/// with `cliffs` (size, label) marked.
pub fn sweep_figures(rows: &[SummaryRow], cliffs: &[(f64, String)]) -> Vec<Figure> {
    let ok: Vec<&SummaryRow> = rows
        .iter()
        .filter(|r| r.status.is_ok() && r.threads <= 1)
        .collect();
    let mut keys: Vec<(String, Variant, Allocator)> = Vec::new();
    for r in &ok {
        let k = (r.allocator_spec.clone(), r.variant, r.allocator);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let charts: [Line; 4] = [
        (
            "Throughput against size (the input read and the result written, at the p50)",
            "GB/s",
            |v| crate::fmt::trim_float((v * 100.0).round() / 100.0),
            |r| r.throughput_gb_per_s,
        ),
        (
            "p50 latency per element against size",
            "p50 per element (ns)",
            |v| crate::fmt::trim_float((v * 1000.0).round() / 1000.0),
            |r| Some(r.p50_ns? as f64 / r.size.max(1) as f64),
        ),
        (
            "Minor page faults per iteration against size",
            "minor faults / iteration",
            count,
            |r| r.per_iter[MINOR_FAULTS],
        ),
        (
            "Memory syscalls per iteration against size",
            "memory syscalls / iteration",
            count,
            |r| r.per_iter[MEMORY_SYSCALLS],
        ),
    ];
    let mut figures = Vec::new();
    for (title, ylabel, format, get) in charts {
        let mut series = Vec::new();
        let mut metas = Vec::new();
        for (i, (spec, variant, alloc)) in keys.iter().enumerate() {
            let mut mine: Vec<&&SummaryRow> = ok
                .iter()
                .filter(|r| r.allocator_spec == *spec && r.variant == *variant)
                .collect();
            mine.sort_by_key(|r| r.size);
            let points: Vec<(f64, f64)> = mine
                .iter()
                .filter_map(|r| Some((r.size as f64, get(r)?)))
                .collect();
            if points.is_empty() {
                continue;
            }
            let tips = points
                .iter()
                .map(|(x, y)| {
                    format!(
                        "{spec} {variant} at {} elements: {}",
                        group_thousands(*x as i64),
                        format(*y)
                    )
                })
                .collect();
            series.push(Series {
                label: format!("{spec} {variant}"),
                color: color(*alloc, spec, i),
                dash: dash(*variant),
                points,
            });
            metas.push(SeriesMeta {
                attrs: vec![("alloc", spec.clone()), ("variant", variant.to_string())],
                tips,
                bands: Vec::new(),
            });
        }
        if series.is_empty() {
            continue;
        }
        figures.push(Figure {
            chart: Chart {
                title: title.into(),
                x: Axis {
                    label: "elements".into(),
                    scale: Scale::Log,
                    format: crate::fmt::fmt_elems,
                },
                y: y_axis(ylabel, format, &series),
                series,
            },
            extras: Extras {
                series: metas,
                marks: cliffs.to_vec(),
                x_labels: Vec::new(),
            },
            caption: if cliffs.is_empty() {
                "One line per allocator × variant; hover a point for its value.".into()
            } else {
                "One line per allocator × variant; dashed red lines mark the cliffs (sizes where behaviour changes, bisected).".into()
            },
        });
    }
    figures
}

/// Whether rows span several sizes (a sweep).
pub fn is_sweep(rows: &[SummaryRow]) -> bool {
    let mut sizes: Vec<u64> = rows.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes.len() > 2
}

/// A folder's REPORT.md as it was written, with what its page lists beside it, kept as it
/// was written (no page reads the Markdown back): the paragraph that says how it was
/// measured, and every bullet that is not the answer's, each after its heading.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub md: String,
    pub environment: Vec<String>,
    pub findings: Vec<String>,
}

/// Writes `text` as a bullet of `md` and keeps it among `findings`, after `heading` where
/// it is under one, its markup taken off.
pub fn bullet(md: &mut String, findings: &mut Vec<String>, heading: &str, text: &str) {
    md.push_str("* ");
    md.push_str(text);
    md.push('\n');
    let plain = plain_links(&text.replace('`', "").replace("**", ""));
    findings.push(if heading.is_empty() {
        plain
    } else {
        format!("{heading} {plain}")
    });
}

/// Markdown links `[text](file)` as `text (file)`: the page names the folder's files
/// without linking out of itself.
pub fn plain_links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let tail = &rest[open + 1..];
        let Some(mid) = tail.find("](") else { break };
        let Some(close) = tail[mid + 2..].find(')') else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&format!(
            "{} ({})",
            &tail[..mid],
            &tail[mid + 2..mid + 2 + close]
        ));
        rest = &tail[mid + 2 + close + 1..];
    }
    out.push_str(rest);
    out
}

/// Scalar fields of an env.json, as "key: value" lines.
pub fn environment_lines(env: &serde_json::Value) -> Vec<String> {
    let Some(map) = env.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter_map(|(k, v)| {
            let text = match v {
                serde_json::Value::String(s) if !s.is_empty() => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            Some(format!("{k}: {text}"))
        })
        .collect()
}

/// A chart of exec's rows: title, y label, value format, the value with its interval
/// (None: the row has no such value), caption.
type ExecChart = (
    String,
    String,
    fn(f64) -> String,
    Box<dyn Fn(&ExecRow) -> Option<(f64, Option<(f64, f64)>)>>,
    String,
);

/// The charts of an exec session: each allocator's wall time with its interval, each
/// per-run registry entry whose runs are searched for behaviours but the memory
/// syscalls (faults, peak RSS), and the memory syscalls' sum, per run (or per call).
pub fn exec_figures(rows: &[ExecRow]) -> Vec<Figure> {
    let mut charts: Vec<ExecChart> = vec![(
        "Wall time per run, with its interval".into(),
        // The ticks carry their unit (ms or s, as fmt_ns picks it).
        "wall time".into(),
        |v| fmt_ns(v * 1e6),
        Box::new(|r| Some((r.wall_median_ms?, r.wall_ci_low_ms.zip(r.wall_ci_high_ms)))),
        "Median over the runs, with the interval of the median (whisker).".into(),
    )];
    for m in RUN_METRICS.iter().filter(|m| m.spread && !m.syscall) {
        let (format, unit): (fn(f64) -> String, &str) = match m.unit {
            Unit::Mib => (mib, " (MiB)"),
            Unit::Ms => (|v| fmt_ns(v * 1e6), ""),
            _ => (count, ""),
        };
        let m = *m;
        charts.push((
            format!("{} per run", crate::fmt::capitalized(m.label)),
            format!("{}{unit}", m.label),
            format,
            Box::new(move |r| Some((r.per_run[m]?, None))),
            format!("Median over the runs: {}.", m.meaning),
        ));
    }
    charts.push((
        "Memory syscalls per run (brk + mmap + munmap + madvise + mremap)".into(),
        "memory syscalls".into(),
        count,
        Box::new(|r| Some((r.per_run.memory_calls()?, None))),
        "Median over the runs.".into(),
    ));
    let ok: Vec<_> = rows.iter().filter(|r| r.status.is_ok()).collect();
    let mut figures = Vec::new();
    let x_labels: Vec<(f64, String)> = ok
        .iter()
        .enumerate()
        .map(|(i, r)| (i as f64 + 1.0, r.allocator.clone()))
        .collect();
    for (title, ylabel, format, get, caption) in &charts {
        let format = *format;
        let dots = ok
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let (v, band) = get(r)?;
                let alloc_of = |label: &str| {
                    label
                        .parse::<crate::model::knobs::AllocatorSpec>()
                        .map_or(Allocator::System, |a| a.allocator)
                };
                let alloc = alloc_of(&r.allocator);
                // The shade is the row's rank among the rows of its allocator (its knob
                // sets), not its place in the table: each allocator keeps its own colour.
                let shade = ok[..i]
                    .iter()
                    .filter(|o| alloc_of(&o.allocator) == alloc)
                    .count();
                let series = Series {
                    label: r.allocator.clone(),
                    color: color(alloc, &r.allocator, shade),
                    dash: None,
                    points: vec![(i as f64 + 1.0, v)],
                };
                let meta = SeriesMeta {
                    attrs: vec![("alloc", r.allocator.clone())],
                    tips: vec![format!(
                        "{}: {} ({} runs)",
                        r.allocator,
                        value_text(format, v, band),
                        r.runs
                    )],
                    bands: vec![band],
                };
                Some((series, meta))
            })
            .collect();
        figures.extend(dot_figure(
            (title, ylabel, format, caption),
            "allocator",
            x_labels.clone(),
            dots,
        ));
    }
    figures
}

/// One process's memory over its life, as a line of [`memory_figure`].
pub struct MemoryLine<'a> {
    /// The legend's name (the allocator spec, with the variant where there are several).
    pub label: String,
    /// Its allocator (the line's colour) and the variant (its dash), where a cell's.
    pub allocator: Allocator,
    pub variant: Option<Variant>,
    /// The samples, in time order.
    pub samples: &'a [crate::model::memory::MemorySample],
    /// What the line is of ("process 3 of 5, the median mean", "run 4").
    pub which: String,
}

/// Resident memory over time, one line per process given (x: ms since the process was
/// started, y: MiB); None without samples.
pub fn memory_figure(title: &str, caption: &str, lines: &[MemoryLine]) -> Option<Figure> {
    let drawn: Vec<(Series, SeriesMeta)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.samples.is_empty())
        .map(|(i, l)| {
            let series = Series {
                label: l.label.clone(),
                color: color(l.allocator, &l.label, i),
                dash: l.variant.and_then(dash),
                points: l
                    .samples
                    .iter()
                    .map(|s| (s.t_ms, s.rss_bytes as f64 / 1048576.0))
                    .collect(),
            };
            let mut attrs = vec![("alloc", l.label.clone())];
            if let Some(v) = l.variant {
                attrs.push(("variant", v.to_string()));
            }
            let meta = SeriesMeta {
                attrs,
                tips: l
                    .samples
                    .iter()
                    .map(|s| {
                        format!(
                            "{} ({}): {} resident at {} ms",
                            l.label,
                            l.which,
                            crate::fmt::human_bytes(s.rss_bytes),
                            crate::fmt::trim_float((s.t_ms * 10.0).round() / 10.0)
                        )
                    })
                    .collect(),
                bands: Vec::new(),
            };
            (series, meta)
        })
        .collect();
    if drawn.is_empty() {
        return None;
    }
    let (series, metas): (Vec<Series>, Vec<SeriesMeta>) = drawn.into_iter().unzip();
    Some(Figure {
        chart: Chart {
            title: title.into(),
            x: Axis {
                label: "time since the process started (ms)".into(),
                scale: Scale::Linear,
                format: count,
            },
            y: Axis {
                label: "resident memory (MiB)".into(),
                scale: Scale::Linear,
                format: mib,
            },
            series,
        },
        extras: Extras {
            series: metas,
            ..Extras::default()
        },
        caption: caption.into(),
    })
}

/// The runs' memory over time of an exec session: per allocator, the run whose mean
/// resident memory is the median of its runs'.
pub fn exec_memory_figure(record: &crate::model::command::ExecRecord) -> Option<Figure> {
    use crate::model::metric::MEM_MEAN;
    let lines: Vec<MemoryLine> = record
        .allocators
        .iter()
        .filter_map(|a| {
            let run = median_by(&a.runs, |r| r.memory_figures()[MEM_MEAN])?;
            Some(MemoryLine {
                label: a.allocator.clone(),
                allocator: a
                    .allocator
                    .parse::<crate::model::knobs::AllocatorSpec>()
                    .map_or(Allocator::System, |s| s.allocator),
                variant: None,
                samples: &run.memory,
                which: format!("run {}, the median mean of {}", run.round, a.runs.len()),
            })
        })
        .collect();
    memory_figure(
        "Resident memory over a run",
        &format!(
            "The command's own process (not its children), sampled by the driver{}; per allocator the run whose mean resident memory is the median of its runs'.",
            step_text(&lines)
        ),
        &lines,
    )
}

/// " every N ms" from the lines' median step between samples; empty without two samples.
pub fn step_text(lines: &[MemoryLine]) -> String {
    let mut gaps: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.samples.windows(2).map(|w| w[1].t_ms - w[0].t_ms))
        .collect();
    gaps.sort_by(f64::total_cmp);
    match gaps.get(gaps.len() / 2) {
        Some(g) => format!(
            " about every {} ms",
            crate::fmt::trim_float(g.round().max(1.0))
        ),
        None => String::new(),
    }
}

/// Resident memory over time of a run folder's cells: one chart per workload, variant,
/// size and thread count, one line per allocator (the cell's process whose mean resident
/// memory is the median of its processes').
pub fn cell_memory_figures(cells: &[crate::model::record::Cell]) -> Vec<Figure> {
    use crate::model::metric::MEM_MEAN;
    type Key = (crate::model::spec::Workload, Variant, u64, u32);
    let key = |c: &crate::model::record::Cell| -> Key {
        (c.spec.workload, c.spec.variant, c.spec.size, c.spec.threads)
    };
    let mut groups: Vec<Key> = Vec::new();
    for c in cells {
        if !groups.contains(&key(c)) {
            groups.push(key(c));
        }
    }
    groups
        .into_iter()
        .filter_map(|k| {
            let (workload, variant, size, threads) = k;
            let lines: Vec<MemoryLine> = cells
                .iter()
                .filter(|c| key(c) == k)
                .filter_map(|c| {
                    let records: Vec<(u32, &crate::model::record::RunRecord)> = c.records().collect();
                    let (round, r) = *median_by(&records, |(_, r)| r.memory[MEM_MEAN])?;
                    Some(MemoryLine {
                        label: c.spec.allocator_label(),
                        allocator: c.spec.allocator,
                        variant: None,
                        samples: &r.memory_timeline,
                        which: format!("process {} of {}, the median mean", round + 1, records.len()),
                    })
                })
                .collect();
            memory_figure(
                &format!(
                    "Resident memory over time · {workload} {variant}, {} {}, {}",
                    crate::fmt::fmt_elems(size as f64),
                    size_unit(&workload.to_string()),
                    crate::fmt::Threads(threads)
                ),
                &format!(
                    "Sampled from outside by the driver{}, from the worker's start (allocator set-up, warm-up, the measured loop, then its exit); per cell the process whose mean resident memory is the median of the cell's. Every sample: memory/<cell>.csv.",
                    step_text(&lines)
                ),
                &lines,
            )
        })
        .collect()
}

/// The item whose `key` is the (lower) median of the items that have one.
pub fn median_by<T>(items: &[T], key: impl Fn(&T) -> Option<f64>) -> Option<&T> {
    let mut keyed: Vec<(f64, &T)> = items.iter().filter_map(|t| Some((key(t)?, t))).collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = keyed.len();
    (n > 0).then(|| keyed[(n - 1) / 2].1)
}

/// A folder's page from its answer, its REPORT.md and the plots it drew (sweeps of a
/// command, traces): the answer, the report's other findings, the plots inline, and
/// REPORT.md.
pub fn folder_page(
    title: &str,
    report: &Report,
    drawings: Vec<(String, String)>,
    figures: Vec<Figure>,
    section: String,
    answer: super::headlines::Answer,
) -> String {
    Page {
        title: title.to_string(),
        environment: report.environment.clone(),
        findings: report.findings.clone(),
        answer,
        sections: if section.is_empty() {
            Vec::new()
        } else {
            vec![section]
        },
        drawings,
        figures,
        text: Vec::new(),
        markdown: vec![("REPORT.md".into(), report.md.clone())],
    }
    .render()
}

/// What a workload's size counts, by its name ("elements" where the name is unknown).
fn size_unit(workload: &str) -> &'static str {
    workload
        .parse::<crate::model::spec::Workload>()
        .map_or("elements", |w| w.size_unit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_trace_item_keeps_its_evidence_in_view_and_folds_its_stacks_loader_last() {
        let lines: Vec<String> = [
            "system: 200 brk per run shrank the heap by 3.0 GiB (a trim)",
            "262,481 faults per run landed on the trimmed pages",
            "where from: 268,725 faults in the run (4,198 samples), 69 % in ufunc_generic_fastcall → generic_wrapped_legacy_loop → DOUBLE_divide_X86_V3, the rest elsewhere",
            "193 mmap in the run (1009.3 KiB each), 66 % from _dl_map_object → _dl_map_object_from_fd → _dl_map_segments (triggered 72 % by dl_open_worker → _dl_catch_exception → dl_open_worker_begin, 28 % by _dl_map_object_deps → _dl_catch_exception → openaux), the rest elsewhere",
            "640 brk in the run (the heap grows by 3.0 GiB and is trimmed by 3.0 GiB in the run), 67 % from malloc → _int_malloc → sysmalloc (triggered 93 % by PyArray_NewFromDescr_int → PyDataMem_UserNEW → default_malloc, 6 % by _PyObject_Malloc, the rest by others), 32 % from free → _int_free → systrim, the rest elsewhere",
        ]
        .map(String::from)
        .to_vec();
        let item = crate::analysis::findings::trace_item("system", None, &lines, None, "run", &[])
            .unwrap();
        let html = answer_item(&item);
        let (shown, folded) = html.split_once("<details").unwrap();
        assert_eq!(
            shown,
            "system: 200 brk per run shrank the heap by 3.0 GiB (a trim); 262,481 faults per run landed on the trimmed pages."
        );
        assert!(
            folded.contains("<summary>where from: the native call stacks of faults, brk; the dynamic loader's (loading libraries): mmap</summary>"),
            "{folded}"
        );
        // Every part is there, word for word, the loader's last.
        let at = |needle: &str| {
            folded
                .find(&esc(needle))
                .unwrap_or_else(|| panic!("{needle}: {folded}"))
        };
        assert!(at(&lines[2]["where from: ".len()..]) < at(&lines[4]));
        assert!(at(&lines[4]) < at(&lines[3]));
        // A short item is its sentence.
        let short =
            crate::analysis::findings::trace_item("system", None, &lines[..3], None, "run", &[])
                .unwrap();
        assert_eq!(answer_item(&short), finding(&short.text));
        assert!(!from_the_loader(&lines[4]));
    }

    #[test]
    fn log_axis_ticks_below_a_hundredth_keep_their_digits() {
        assert_eq!(count(0.001), "0.001");
        assert_eq!(count(0.00001), "0.00001");
        assert_eq!(count(0.0025), "0.0025");
        assert_eq!(count(0.0), "0");
        assert_eq!(count(0.5), "0.5");
        assert_eq!(count(1234.0), "1,234");
    }

    #[test]
    fn findings_keep_their_heading_and_lose_their_markup() {
        let (mut md, mut found) = (String::new(), Vec::new());
        bullet(
            &mut md,
            &mut found,
            "scale, 1M elements:",
            "system: `3.00` brk, see [faults](flamegraphs/s.svg) and [x](y)",
        );
        bullet(&mut md, &mut found, "", "alone");
        assert_eq!(
            found,
            vec![
                "scale, 1M elements: system: 3.00 brk, see faults (flamegraphs/s.svg) and x (y)",
                "alone"
            ]
        );
        assert!(md.starts_with("* system: `3.00` brk"));
        assert!(
            finding("a 2.00x slower <b>").contains(r#"<b class="slower"> slower</b> &lt;b&gt;"#)
        );
    }
}
