//! Files and text written for people and tools: one exporter per format (table,
//! Markdown, CSV, JSON, and the CI services' formats), HdrHistogram percentile files and
//! interval logs, SVG plots, the results folder with its summary and REPORT.md.

pub mod answer;
pub mod ci;
pub mod csv;
pub mod diff_screen;
pub mod exec;
pub mod flame;
pub mod folder;
pub mod guide;
pub mod hdr;
pub mod headlines;
pub mod hlog;
pub mod html;
pub mod index;
pub mod markdown;
pub mod plots;
pub mod python_listing;
pub mod report_md;
pub mod results;
pub mod serve;
pub mod svg;
pub mod table;
pub mod trace;
pub mod trace_python;

use serde::Serialize;

/// The one escaper of text and attribute values in HTML and SVG (report.html, plots,
/// charts): `&`, `<`, `>`, `"` and `'` become entities, so that any allocator, library
/// or command name is shown as written and never ends an attribute or a tag.
pub fn escape_markup(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The output formats of the commands that print rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns with units, plus one explanation line per allocator.
    Table,
    Markdown,
    Csv,
    Json,
    /// Bencher Metric Format: per benchmark, its measures with value, lower_value and
    /// upper_value (compare and exec).
    Bmf,
    /// github-action-benchmark's customSmallerIsBetter JSON (compare and exec).
    GithubActionBenchmark,
}

impl Format {
    /// The format of rows, or None for a CI service's format (figures per benchmark,
    /// rendered by [`ci`] with the testbed and the session, not from rows alone).
    pub fn rows(self) -> Option<RowFormat> {
        match self {
            Format::Table => Some(RowFormat::Table),
            Format::Markdown => Some(RowFormat::Markdown),
            Format::Csv => Some(RowFormat::Csv),
            Format::Json => Some(RowFormat::Json),
            Format::Bmf | Format::GithubActionBenchmark => None,
        }
    }

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
            Format::Json => "json",
            Format::Bmf => "bmf",
            Format::GithubActionBenchmark => "github-action-benchmark",
        }
    }
}

/// The formats every command that prints rows can give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFormat {
    Table,
    Markdown,
    Csv,
    Json,
}

/// Rows that every format can render: JSON and CSV from their serialized fields, the two
/// tables from the type's own columns.
pub trait Rows: Serialize + Sized {
    /// A row with every value null: its field names are the CSV header.
    fn empty() -> Self;
    /// The aligned plain-text table.
    fn table(rows: &[Self]) -> String;
    /// The GitHub-flavoured Markdown table.
    fn markdown(rows: &[Self]) -> String;
}

/// A pretty JSON array of rows.
pub fn to_json<R: Serialize>(rows: &[R]) -> String {
    // Rows are plain structs of numbers and strings: serializing them cannot fail.
    serde_json::to_string_pretty(rows).expect("rows always serialize")
}

/// `rows` in `format` (the table without any context lines around it).
pub fn render<R: Rows>(format: RowFormat, rows: &[R]) -> String {
    match format {
        RowFormat::Json => to_json(rows) + "\n",
        RowFormat::Csv => csv::csv_of(rows, &R::empty()),
        RowFormat::Markdown => R::markdown(rows),
        RowFormat::Table => R::table(rows),
    }
}

impl Rows for crate::model::summary::SummaryRow {
    fn empty() -> Self {
        crate::model::summary::SummaryRow::empty()
    }
    fn table(rows: &[Self]) -> String {
        table::to_table(rows)
    }
    fn markdown(rows: &[Self]) -> String {
        table::to_markdown(rows)
    }
}
