//! The CI services' formats end to end: `compare` and `exec` with `--format bmf` and
//! `--format github-action-benchmark`, each output checked against its published schema
//! (by hand, mirroring it; and by Python's `jsonschema` where it is installed), the
//! bounds around their values, the names (one per cell or allocator, with the testbed
//! id of this machine), and exec's figures against the summary.csv of the same session.
//! Commands that cannot give these formats refuse them before anything runs.
//!
//! The schemas, as published:
//! * BMF: <https://bencher.dev/bmf.json> (JSON Schema draft-07): an object; every
//!   property (pattern `.+`) an object; every property of that (pattern `.+`) an object
//!   with `value`, `lower_value`, `upper_value` of type number, `value` required.
//! * github-action-benchmark, `customSmallerIsBetter`: its README ("Every entry in the
//!   JSON file you provide only needs to provide name, unit, and value. You can also
//!   provide optional range … and extra …") and the zod schema `BenchmarkResult` of
//!   src/extract.ts: an array of objects with `name` string, `value` number, `range`
//!   optional string, `unit` string, `extra` optional string; an empty array is refused
//!   ("No benchmark result was found").

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use alloclab::export::ci::{exec_name, Testbed, BENCHER_NAME_MAX};
use alloclab::model::environment::Environment;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

/// bencher.dev/bmf.json, as a JSON Schema document (for the Python validator).
fn bmf_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema",
        "type": "object",
        "patternProperties": {
            ".+": {
                "type": "object",
                "patternProperties": {
                    ".+": {
                        "type": "object",
                        "properties": {
                            "value": {"type": "number"},
                            "lower_value": {"type": "number"},
                            "upper_value": {"type": "number"}
                        },
                        "required": ["value"]
                    }
                }
            }
        }
    })
}

/// github-action-benchmark's `BenchmarkResult[]` (zod, src/extract.ts) as a JSON
/// Schema, with the action's refusal of an empty array as `minItems`.
fn gab_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema",
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "value": {"type": "number"},
                "range": {"type": "string"},
                "unit": {"type": "string"},
                "extra": {"type": "string"}
            },
            "required": ["name", "value", "unit"]
        }
    })
}

/// The BMF schema, checked by hand: every constraint of bmf.json. (Keys are never
/// empty, so `.+` matches each.)
fn check_bmf(doc: &Value) -> Result<(), String> {
    let benches = doc.as_object().ok_or("the document is not an object")?;
    for (name, measures) in benches {
        if name.is_empty() {
            return Err("an empty benchmark name".into());
        }
        let measures = measures
            .as_object()
            .ok_or(format!("{name}: not an object"))?;
        for (measure, metric) in measures {
            if measure.is_empty() {
                return Err(format!("{name}: an empty measure"));
            }
            let metric = metric
                .as_object()
                .ok_or(format!("{name} {measure}: not an object"))?;
            if !metric.contains_key("value") {
                return Err(format!("{name} {measure}: no value"));
            }
            for key in ["value", "lower_value", "upper_value"] {
                if let Some(v) = metric.get(key) {
                    if !v.is_number() {
                        return Err(format!("{name} {measure}: {key} is not a number: {v}"));
                    }
                }
            }
        }
    }
    Ok(())
}

/// github-action-benchmark's schema, checked by hand.
fn check_gab(doc: &Value) -> Result<(), String> {
    let entries = doc.as_array().ok_or("the document is not an array")?;
    if entries.is_empty() {
        return Err("no entry: the action refuses an empty array".into());
    }
    for e in entries {
        let e = e.as_object().ok_or(format!("{e}: not an object"))?;
        for (key, required, is_type) in [
            ("name", true, Value::is_string as fn(&Value) -> bool),
            ("unit", true, Value::is_string),
            ("value", true, Value::is_number),
            ("range", false, Value::is_string),
            ("extra", false, Value::is_string),
        ] {
            match e.get(key) {
                None if required => return Err(format!("{e:?}: no {key}")),
                Some(v) if !is_type(v) => return Err(format!("{key} has the wrong type: {v}")),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Validates `doc` against `schema` with Python's `jsonschema` (Draft 7); None where it
/// is not installed.
fn python_validate(schema: &Value, doc: &Value) -> Option<Result<(), String>> {
    python_validate_all(schema, std::slice::from_ref(doc)).map(|mut r| r.remove(0))
}

/// Python's jsonschema on each of `docs` against `schema`, in one Python process (each
/// start imports jsonschema, about 0.15 s); None where python3 or jsonschema is missing.
fn python_validate_all(schema: &Value, docs: &[Value]) -> Option<Vec<Result<(), String>>> {
    static HAS_JSONSCHEMA: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let has = *HAS_JSONSCHEMA.get_or_init(|| {
        std::process::Command::new("python3")
            .args(["-c", "import jsonschema"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !has {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let schema_path = dir.path().join("schema.json");
    let docs_path = dir.path().join("docs.json");
    std::fs::write(&schema_path, schema.to_string()).unwrap();
    std::fs::write(&docs_path, Value::Array(docs.to_vec()).to_string()).unwrap();
    // One line per document: "ok", or the validator's message on one line.
    let o = std::process::Command::new("python3")
        .args([
            "-c",
            "import json, sys, jsonschema\n\
             schema = json.load(open(sys.argv[1]))\n\
             jsonschema.Draft7Validator.check_schema(schema)\n\
             v = jsonschema.Draft7Validator(schema)\n\
             for doc in json.load(open(sys.argv[2])):\n\
             \x20   try:\n\
             \x20       v.validate(doc)\n\
             \x20       print('ok')\n\
             \x20   except jsonschema.ValidationError as e:\n\
             \x20       print('refused: ' + e.message.replace('\\n', ' '))",
        ])
        .arg(&schema_path)
        .arg(&docs_path)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the validator failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let said: Vec<Result<(), String>> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            if l == "ok" {
                Ok(())
            } else {
                Err(l.to_string())
            }
        })
        .collect();
    assert_eq!(said.len(), docs.len(), "one answer per document");
    Some(said)
}

/// `doc` passes Python's validator, where it is installed (the checks by hand ran
/// anyway; stderr says when this one could not).
fn check_with_python(schema: &Value, doc: &Value) {
    match python_validate(schema, doc) {
        None => eprintln!(
            "note: python3 with jsonschema not found; the schemas were checked by hand only"
        ),
        Some(r) => r.unwrap_or_else(|e| panic!("jsonschema refused the document: {e}")),
    }
}

/// `check` and Python's validator (where installed, all documents in one process)
/// accept `good` and refuse each of `bad`.
fn both_checkers_agree(
    schema: &Value,
    check: fn(&Value) -> Result<(), String>,
    good: Value,
    bad: &[Value],
) {
    assert!(check(&good).is_ok());
    for doc in bad {
        assert!(check(doc).is_err(), "accepted {doc}");
    }
    let docs: Vec<Value> = std::iter::once(good).chain(bad.iter().cloned()).collect();
    if let Some(said) = python_validate_all(schema, &docs) {
        said[0].clone().unwrap();
        for (doc, r) in bad.iter().zip(&said[1..]) {
            assert!(r.is_err(), "jsonschema accepted {doc}");
        }
    }
}

/// The checkers refuse what the schemas refuse: a test that cannot fail checks nothing.
#[test]
fn the_schema_checks_refuse_documents_outside_the_schemas() {
    both_checkers_agree(
        &bmf_schema(),
        check_bmf,
        json!({"b": {"latency": {"value": 1.0, "lower_value": 0.5}}}),
        &[
            json!([]),
            json!({"b": 1}),
            json!({"b": {"latency": 2}}),
            json!({"b": {"latency": {"lower_value": 1.0}}}),
            json!({"b": {"latency": {"value": "1"}}}),
            json!({"b": {"latency": {"value": 1, "upper_value": null}}}),
        ],
    );
    both_checkers_agree(
        &gab_schema(),
        check_gab,
        json!([{"name": "n", "unit": "ns", "value": 3, "range": "r", "extra": "e"}]),
        &[
            json!([]),
            json!({}),
            json!([{"unit": "ns", "value": 3}]),
            json!([{"name": "n", "value": 3}]),
            json!([{"name": "n", "unit": "ns"}]),
            json!([{"name": "n", "unit": "ns", "value": "3"}]),
            json!([{"name": "n", "unit": "ns", "value": 3, "range": 2}]),
            json!([{"name": "n", "unit": "ns", "value": 3, "extra": {"a": 1}}]),
        ],
    );
}

/// This machine's testbed, as the lab fingerprints it.
fn this_testbed() -> Testbed {
    Testbed::of(&Environment::of_driver())
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        stderr(o)
    );
}

/// `lower_value ≤ value ≤ upper_value`, both bounds or neither.
fn check_bounds(name: &str, measure: &str, m: &Value) -> Option<(f64, f64)> {
    let value = m["value"].as_f64().unwrap();
    assert!(value.is_finite() && value >= 0.0, "{name} {measure}: {m}");
    match (m.get("lower_value"), m.get("upper_value")) {
        (None, None) => None,
        (Some(lo), Some(hi)) => {
            let (lo, hi) = (lo.as_f64().unwrap(), hi.as_f64().unwrap());
            assert!(
                lo <= value && value <= hi,
                "{name} {measure}: not lower <= value <= upper: {m}"
            );
            Some((lo, hi))
        }
        _ => panic!("{name} {measure}: one bound without the other: {m}"),
    }
}

/// Only the three keys of a metric (the schema allows others; the lab writes none).
fn only_metric_keys(m: &Value) {
    for k in m.as_object().unwrap().keys() {
        assert!(
            ["value", "lower_value", "upper_value"].contains(&k.as_str()),
            "unexpected key {k} in {m}"
        );
    }
}

const COMPARE: [&str; 10] = [
    "compare",
    "--size",
    "2000",
    "--min-time",
    "0",
    "--warmup-time",
    "0",
    "--allocators",
    "system,jemalloc",
    "--variants=in-place,out-of-place",
];

fn compare(format: &str, extra: &[&str]) -> Output {
    let mut args = COMPARE.to_vec();
    args.extend(["--format", format]);
    args.extend_from_slice(extra);
    lab(&args)
}

fn compare_names(testbed: &Testbed) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for alloc in ["system", "jemalloc"] {
        for variant in ["in-place", "out-of-place"] {
            names.insert(format!(
                "alloclab/testbed-{}/compare/scale/{variant}/2000/{alloc}",
                testbed.id()
            ));
        }
    }
    names
}

#[test]
fn compare_bmf_follows_bencher_metric_format() {
    let testbed = this_testbed();
    // Six processes a cell reach a 95 % interval; a fixed number (--no-adaptive): the
    // property is the format, not the adaptive rounds.
    let o = compare("bmf", &["--processes", "6", "--no-adaptive"]);
    ok(&o);
    let doc = json(&o.stdout);
    check_bmf(&doc).unwrap();
    check_with_python(&bmf_schema(), &doc);
    let benches = doc.as_object().unwrap();
    let names: BTreeSet<String> = benches.keys().cloned().collect();
    assert_eq!(names, compare_names(&testbed));
    for (name, measures) in benches {
        let measures = measures.as_object().unwrap();
        for required in [
            "latency",
            "latency-p99",
            "minor-faults-per-iter",
            "peak-rss",
        ] {
            assert!(measures.contains_key(required), "{name}: no {required}");
        }
        for (measure, m) in measures {
            only_metric_keys(m);
            let bounds = check_bounds(name, measure, m);
            // 3 processes or more: the latencies have their interval, the counts their
            // spread; RSS has neither.
            match measure.as_str() {
                "latency" | "latency-p99" | "minor-faults-per-iter" => {
                    assert!(bounds.is_some(), "{name} {measure}: no bounds")
                }
                "peak-rss" | "end-rss" => assert!(bounds.is_none(), "{name} {measure}"),
                _ => {}
            }
        }
    }
    let err = stderr(&o);
    assert!(err.contains(&testbed.describe()), "{err}");
    assert!(err.contains("95 % interval of the median over"), "{err}");
}

#[test]
fn compare_with_one_process_per_cell_gives_no_bounds() {
    // --max-time leaves no room for adaptive rounds: one process per cell.
    let o = compare("bmf", &["--processes", "1", "--max-time", "0.001"]);
    ok(&o);
    let doc = json(&o.stdout);
    check_bmf(&doc).unwrap();
    for (name, measures) in doc.as_object().unwrap() {
        for (measure, m) in measures.as_object().unwrap() {
            assert_eq!(
                check_bounds(name, measure, m),
                None,
                "{name} {measure}: {m}"
            );
        }
    }
    let o = compare(
        "github-action-benchmark",
        &["--processes", "1", "--max-time", "0.001"],
    );
    ok(&o);
    let doc = json(&o.stdout);
    check_gab(&doc).unwrap();
    for e in doc.as_array().unwrap() {
        assert!(e.get("range").is_none(), "{e}");
    }
}

#[test]
fn a_compare_cut_by_max_time_says_so_on_every_entry() {
    // 1,000 processes planned per cell; --max-time leaves room for a few rounds only.
    let o = compare(
        "github-action-benchmark",
        &["--processes", "1000", "--max-time", "0.3"],
    );
    ok(&o);
    let doc = json(&o.stdout);
    check_gab(&doc).unwrap();
    for e in doc.as_array().unwrap() {
        let extra = e["extra"].as_str().unwrap();
        assert!(
            extra.contains("session: INCOMPLETE, stopped by max-time")
                && extra.contains("(planned 1000)"),
            "{extra}"
        );
    }
    assert!(
        stderr(&o).contains("incomplete: --max-time"),
        "{}",
        stderr(&o)
    );
}

/// "95 % CI 12–15" or "min–max 3–3.5": the two numbers.
fn range_bounds(range: &str) -> (f64, f64) {
    let numbers = range.rsplit(' ').next().unwrap();
    let (lo, hi) = numbers.split_once('–').unwrap();
    (lo.parse().unwrap(), hi.parse().unwrap())
}

#[test]
fn compare_github_action_benchmark_follows_its_schema() {
    let testbed = this_testbed();
    // Six processes a cell, no adaptive rounds: the property is the format.
    let o = compare(
        "github-action-benchmark",
        &["--processes", "6", "--no-adaptive"],
    );
    ok(&o);
    let doc = json(&o.stdout);
    check_gab(&doc).unwrap();
    check_with_python(&gab_schema(), &doc);
    let entries = doc.as_array().unwrap();
    let names: BTreeSet<&str> = entries
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), entries.len(), "names repeat");
    let benches: BTreeSet<String> = names
        .iter()
        .map(|n| n.rsplit_once('/').unwrap().0.to_string())
        .collect();
    assert_eq!(benches, compare_names(&testbed));
    for e in entries {
        let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
        for k in &keys {
            assert!(
                ["name", "unit", "value", "range", "extra"].contains(k),
                "unexpected key {k} in {e}"
            );
        }
        let name = e["name"].as_str().unwrap();
        let value = e["value"].as_f64().unwrap();
        if let Some(range) = e.get("range") {
            let (lo, hi) = range_bounds(range.as_str().unwrap());
            assert!(lo <= value && value <= hi, "{e}");
        }
        let extra = e["extra"].as_str().unwrap();
        let alloc = if name.contains("/system/") {
            "allocator system: glibc "
        } else {
            "allocator jemalloc: jemalloc "
        };
        for needle in [
            testbed.describe().as_str(),
            alloc,
            "session: complete",
            "processes: ",
        ] {
            assert!(extra.contains(needle), "{needle} not in {extra}");
        }
        let unit = e["unit"].as_str().unwrap();
        let measure = name.rsplit('/').next().unwrap();
        let expected = match measure {
            "latency" | "latency-p99" => "ns",
            "minor-faults-per-iter" => "faults/iter",
            "memory-syscalls-per-iter" => "syscalls/iter",
            "peak-rss" | "end-rss" => "bytes",
            other => panic!("unexpected measure {other}"),
        };
        assert_eq!(unit, expected, "{name}");
    }
}

const ITERS: &str = "20";

fn exec_with(format: &str, out: &Path) -> Output {
    let t = temporaries();
    lab(&[
        "exec",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--allocators",
        "system,jemalloc",
        "--format",
        format,
        "--out",
        out.to_str().unwrap(),
        "--",
        t.to_str().unwrap(),
        "--iterations",
        ITERS,
    ])
}

/// summary.csv of an exec folder: one map of column → text per allocator.
fn summary(dir: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(dir.join("summary.csv")).unwrap();
    let header = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            header
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn cell(row: &std::collections::BTreeMap<String, String>, col: &str) -> Option<f64> {
    let v = row.get(col).unwrap_or_else(|| panic!("no column {col}"));
    (!v.is_empty()).then(|| v.parse().unwrap())
}

/// Equal up to the float's last bits (ms in the CSV, ns in the format).
fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// A measure, the value the row says it has (None: not measured) and its bounds.
type Expected = (&'static str, Option<f64>, Option<(f64, f64)>);

/// Each exec figure against the summary.csv row of the same session.
fn expected_exec_figures(row: &std::collections::BTreeMap<String, String>) -> Vec<Expected> {
    let ns = |col: &str| cell(row, col).map(|ms| ms * 1e6);
    let bounds = match (ns("wall_ci_low_ms"), ns("wall_ci_high_ms")) {
        (Some(lo), Some(hi)) => Some((lo, hi)),
        _ => None,
    };
    vec![
        ("latency", ns("wall_median_ms"), bounds),
        ("minor-faults", cell(row, "minflt"), None),
        ("brk-calls", cell(row, "brk"), None),
        ("mmap-calls", cell(row, "mmap"), None),
        ("munmap-calls", cell(row, "munmap"), None),
        ("madvise-calls", cell(row, "madvise"), None),
        ("mremap-calls", cell(row, "mremap"), None),
        (
            "peak-rss",
            cell(row, "peak_rss_mib").map(|m| m * 1_048_576.0),
            None,
        ),
    ]
}

#[test]
fn exec_bmf_carries_the_figures_of_the_sessions_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("exec");
    let o = exec_with("bmf", &out);
    ok(&o);
    let doc = json(&o.stdout);
    check_bmf(&doc).unwrap();
    check_with_python(&bmf_schema(), &doc);
    let env: Environment =
        serde_json::from_str(&std::fs::read_to_string(out.join("env.json")).unwrap()).unwrap();
    let testbed = Testbed::of(&env);
    assert_eq!(testbed, this_testbed(), "the session ran on this machine");
    let rows = summary(&out);
    assert_eq!(rows.len(), 2);
    let benches = doc.as_object().unwrap();
    assert_eq!(benches.len(), 2, "{doc}");
    for row in &rows {
        let name = exec_name(&testbed.id(), &row["command"], &row["allocator"]);
        assert!(name.len() <= BENCHER_NAME_MAX);
        let measures = benches
            .get(&name)
            .unwrap_or_else(|| panic!("no benchmark {name} in {doc}"));
        let mut expected_keys = BTreeSet::new();
        for (measure, value, bounds) in expected_exec_figures(row) {
            let Some(value) = value else {
                // Not measured: not there, never a 0.
                assert!(measures.get(measure).is_none(), "{name} {measure}");
                continue;
            };
            expected_keys.insert(measure.to_string());
            let m = &measures[measure];
            only_metric_keys(m);
            assert!(
                same(m["value"].as_f64().unwrap(), value),
                "{name} {measure}: {m} against the row's {value}"
            );
            let got = check_bounds(&name, measure, m);
            match (got, bounds) {
                (None, None) => {}
                (Some(g), Some(b)) => {
                    assert!(
                        same(g.0, b.0) && same(g.1, b.1),
                        "{name} {measure}: {g:?} {b:?}"
                    )
                }
                _ => panic!("{name} {measure}: bounds {got:?}, the row's {bounds:?}"),
            }
        }
        let keys: BTreeSet<String> = measures.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, expected_keys, "{name}");
        // Three runs: an interval, of 75 % coverage (said on stderr).
        assert!(measures["latency"].get("lower_value").is_some());
    }
    let err = stderr(&o);
    assert!(err.contains(&testbed.describe()), "{err}");
    assert!(
        err.contains("75.0 % interval of the median over 3 runs"),
        "{err}"
    );
}

#[test]
fn exec_github_action_benchmark_carries_the_figures_of_the_sessions_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("exec");
    let o = exec_with("github-action-benchmark", &out);
    ok(&o);
    let doc = json(&o.stdout);
    check_gab(&doc).unwrap();
    check_with_python(&gab_schema(), &doc);
    let env: Environment =
        serde_json::from_str(&std::fs::read_to_string(out.join("env.json")).unwrap()).unwrap();
    let testbed = Testbed::of(&env);
    let entries = doc.as_array().unwrap();
    let mut seen = 0;
    for row in summary(&out) {
        let bench = exec_name(&testbed.id(), &row["command"], &row["allocator"]);
        for (measure, value, bounds) in expected_exec_figures(&row) {
            let name = format!("{bench}/{measure}");
            let e = entries.iter().find(|e| e["name"] == name.as_str());
            let Some(value) = value else {
                assert!(e.is_none(), "{name} was not measured: {e:?}");
                continue;
            };
            let e = e.unwrap_or_else(|| panic!("no entry {name}"));
            seen += 1;
            assert!(
                same(e["value"].as_f64().unwrap(), value),
                "{e} against {value}"
            );
            match (e.get("range"), bounds) {
                (None, None) => {}
                (Some(r), Some(b)) => {
                    let (lo, hi) = range_bounds(r.as_str().unwrap());
                    // The range prints the bounds as the format's numbers.
                    assert!(same(lo, b.0) && same(hi, b.1), "{e}: {b:?}");
                    assert!(r.as_str().unwrap().starts_with("75.0 % CI "), "{e}");
                }
                other => panic!("{name}: {other:?}"),
            }
            let extra = e["extra"].as_str().unwrap();
            for needle in [
                testbed.describe(),
                format!("allocator {}: ", row["allocator"]),
                format!("command: {}", row["command"]),
                "runs: 3 (planned 3)".into(),
                "session: complete".into(),
            ] {
                assert!(extra.contains(&needle), "{needle} not in {extra}");
            }
        }
    }
    assert_eq!(seen, entries.len(), "entries that no row explains: {doc}");
}

#[test]
fn commands_without_the_ci_formats_refuse_them_before_anything_runs() {
    for args in [
        &["tune", "--format", "bmf"][..],
        &["tune", "--format", "github-action-benchmark", "--", "true"],
        &[
            "cliff",
            "--allocator",
            "system",
            "--from",
            "1000",
            "--to",
            "2000",
            "--format",
            "bmf",
        ],
        &[
            "diff",
            "a.json",
            "b.json",
            "--format",
            "github-action-benchmark",
        ],
    ] {
        let o = lab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains("given by `alloclab compare` and `alloclab exec`"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("[1/"), "{args:?} started runs: {err}");
    }
    // A command whose benchmark names Bencher would not take.
    let long = "x".repeat(BENCHER_NAME_MAX);
    let o = lab(&["exec", "--format", "bmf", "--", "true", &long]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let err = stderr(&o);
    assert!(err.contains("more than the 1024 Bencher takes"), "{err}");
    assert!(!err.contains("[1/"), "started runs: {err}");
}

/// Output that cannot be written is never a success: a closed stdout (`>&-`) is refused
/// before anything runs (Rust's stdout would take the writes as done), a full device is
/// a failure (exit 1).
#[test]
fn output_that_cannot_be_written_is_an_error() {
    let lab = driver_path();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"exec "$0" exec --format bmf --runs 1 --allocators system --out "$1" -- /bin/true >&-"#)
        .arg(&lab)
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("stdout is closed"), "{}", stderr(&o));
    assert!(!out.exists(), "nothing ran");
    // A shell's `> /dev/null` is kept: the results go to the folder only.
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"exec "$0" list > /dev/null"#)
        .arg(&lab)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = std::process::Command::new(&lab)
        .arg("list")
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("writing the results failed"),
        "{}",
        stderr(&o)
    );
    // Help and version pages are output too: refused with nowhere to go, a failure where
    // they cannot be written.
    for args in [&["--help"][..], &["--version"], &["compare", "--help"]] {
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" >&-"#)
            .arg(&lab)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
    for args in [&["--help"][..], &["--version"], &["compare", "--help"]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = std::process::Command::new(&lab)
            .args(args)
            .stdout(full)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
    }
    // stdout open for reading only (`1</dev/null`) takes no write: refused as closed.
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"exec "$0" list 1</dev/null"#)
        .arg(&lab)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("stdout is closed or not open for writing"),
        "{}",
        stderr(&o)
    );
}
