//! The driver end to end: bad input is refused before anything runs, results parse back,
//! and a crashing, garbage-printing or disagreeing worker is reported without losing the
//! other rows.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use alloclab::model::spec::Allocator;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn alloclab(args: &[&str]) -> Output {
    Command::new(driver_path())
        .args(args)
        .output()
        .expect("driver starts")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn assert_refused(args: &[&str], needle: &str) {
    let o = alloclab(args);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{args:?} should exit 2: {}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty(), "{args:?} wrote to stdout");
    assert!(
        stderr(&o).contains(needle),
        "{args:?}: expected '{needle}' in: {}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("[1/"), "{args:?} started runs");
}

#[test]
fn bad_input_is_refused_with_what_would_be_right() {
    assert_refused(&["compare", "--size", "0"], "must be at least 1");
    assert_refused(
        &["compare", "--size", "lots"],
        "expected a whole number of elements",
    );
    assert_refused(&["compare", "--size", "1e15"], "only");
    assert_refused(
        &["compare", "--size", "1e15"],
        "is available (MemAvailable)",
    );
    assert_refused(
        &["compare", "--allocators", "system,hoard"],
        "valid allocators are system, jemalloc, mimalloc",
    );
    assert_refused(
        &["compare", "--variants", "sideways"],
        "valid variants are in-place, out-of-place, reuse",
    );
    assert_refused(
        &["compare", "--workload", "sort"],
        "valid workloads are scale",
    );
    assert_refused(
        &["compare", "--min-time", "-1"],
        "not a duration in seconds",
    );
    assert_refused(&["compare", "--format", "xml"], "table");
    assert_refused(&["compare", "--timeout", "0"], "expected seconds above 0");
    // An allocator the lab does not build: the message names the form that loads one.
    assert_refused(
        &["compare", "--allocators", "hoard"],
        "name=/path/to/lib.so",
    );
    assert_refused(
        &["exec", "--allocators", "hoard", "--", "true"],
        "name=/path/to/lib.so",
    );
    // Two specs with knobs joined by a comma are two specs; a knob that belongs to no
    // spec is still refused.
    assert_refused(
        &[
            "compare",
            "--allocators",
            "system:top_pad=64M,jemalloc:nosuch=1",
        ],
        "unknown knob 'nosuch' for jemalloc",
    );
    assert_refused(
        &["compare", "--allocators", "system:top_pad=99999999G"],
        "more than the",
    );
}

/// Six processes per cell and no adaptive rounds: the least that gives every
/// comparison its 95 % interval (the adaptive rounds are tested in tests/all/noise.rs).
fn small_compare(format: &str) -> Output {
    // Ten iterations per process and no minimum time: the properties are of the
    // fields and the processes, not of a precise p50.
    alloclab(&[
        "compare",
        "--size",
        "5000",
        "--min-time",
        "0",
        "--warmup-time",
        "0",
        "--no-adaptive",
        "--format",
        format,
    ])
}

#[test]
fn json_and_csv_carry_every_run_with_the_documented_fields() {
    let o = small_compare("json");
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    // Every built-in allocator by default, four variants each.
    assert_eq!(
        rows.len(),
        4 * <alloclab::model::spec::Allocator as alloclab::model::spec::Choice>::ALL.len()
    );
    let fields = [
        "allocator",
        "variant",
        "workload",
        "size",
        "iterations",
        "p50_ns",
        "p99_ns",
        "minflt_per_iter",
        "majflt_per_iter",
        "brk_per_iter",
        "mmap_per_iter",
        "munmap_per_iter",
        "madvise_per_iter",
        "rss_end_bytes",
        "checksum",
    ];
    for r in &rows {
        for f in fields {
            assert!(r.get(f).is_some(), "field {f} missing in {r}");
        }
        assert_eq!(r["status"], "ok");
        assert_eq!(r["size"], 5000);
        assert_eq!(r["checksum"], rows[0]["checksum"]);
        assert!(r["p50_ns"].as_u64().unwrap() <= r["p99_ns"].as_u64().unwrap());
        // At least six processes per cell (adaptive rounds may add some), each one's p50
        // carried: the p50 is their median, inside its interval, and the counts' medians
        // lie inside their min–max.
        let n = r["processes"].as_u64().unwrap() as usize;
        assert!(n >= 6, "{r}");
        assert_eq!(r["process_p50_ns"].as_array().unwrap().len(), n, "{r}");
        let (lo, p50, hi) = (
            r["p50_ci_low_ns"].as_u64().unwrap(),
            r["p50_ns"].as_u64().unwrap(),
            r["p50_ci_high_ns"].as_u64().unwrap(),
        );
        assert!(lo <= p50 && p50 <= hi, "{r}");
        let want = alloclab::analysis::stats::coverage(n, 0.95).unwrap();
        assert!(
            (r["ci_coverage"].as_f64().unwrap() - want).abs() < 1e-9,
            "{r}"
        );
        assert!(want >= 0.95);
        let f = |k: &str| r[k].as_f64().unwrap();
        assert!(f("minflt_per_iter_min") <= f("minflt_per_iter"));
        assert!(f("minflt_per_iter") <= f("minflt_per_iter_max"));
        // Ratios to in-place, with interval and verdict, on every other variant.
        if r["variant"] == "in-place" {
            assert!(r["vs_in_place"].is_null(), "{r}");
        } else {
            let (lo, x, hi) = (
                f("vs_in_place_ci_low"),
                f("vs_in_place"),
                f("vs_in_place_ci_high"),
            );
            assert!(lo <= x && x <= hi, "{r}");
            let verdict = r["vs_in_place_verdict"].as_str().unwrap();
            assert!(
                ["faster", "slower", "no significant difference"].contains(&verdict),
                "{r}"
            );
        }
    }

    let o = small_compare("csv");
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert!(header.contains(&"minflt_per_iter".into()) && header.contains(&"p50_ns".into()));
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), rows.len());
    for r in &records {
        assert_eq!(r.len(), header.len(), "{r:?}");
        assert!(r[col("p50_ns")].parse::<u64>().unwrap() > 0);
        // Each process's p50, the numbers separated by spaces in one cell (no JSON);
        // their median is the row's.
        let p: Vec<u64> = r[col("process_p50_ns")]
            .split(' ')
            .map(|n| n.parse().unwrap())
            .collect();
        // The p50 of the pooled iterations lies between the processes' own p50s.
        let pooled: u64 = r[col("pooled_p50_ns")].parse().unwrap();
        assert!(
            (*p.iter().min().unwrap()..=*p.iter().max().unwrap()).contains(&pooled),
            "{r:?}"
        );
        assert_eq!(p.len().to_string(), r[col("processes")], "{r:?}");
        let mut s = p.clone();
        s.sort_unstable();
        let median = (s[(s.len() - 1) / 2] + s[s.len() / 2]) as f64 / 2.0;
        let row_p50: f64 = r[col("p50_ns")].parse().unwrap();
        assert!((row_p50 - median).abs() <= 1.0, "{r:?}");
    }
}

/// The default screen of `compare` at the founding size, in 100 columns: the answer
/// first (glibc's out-of-place verdict with its interval, the trim in words, what removes
/// it), then the table that fits, every line within the width.
#[test]
fn the_first_screen_is_the_answer_in_the_readers_width() {
    // Six processes per cell: the fewest a 95 % interval needs.
    let o = Command::new(driver_path())
        .env("COLUMNS", "100")
        .args([
            "compare",
            "--size",
            "1000000",
            "--allocators",
            "system,mimalloc",
            "--variants",
            "in-place,out-of-place",
            "--min-time",
            "0",
            "--warmup-time",
            "0",
            "--no-adaptive",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for l in &lines {
        assert!(
            l.chars().count() <= 100,
            "wider than 100 columns: {l}\n{text}"
        );
    }
    assert!(lines[0].starts_with("scale, 1,000,000 elements"), "{text}");
    // glibc's verdict opens the answer, with its interval; the cause and the remedy in
    // words follow within the first 20 lines.
    let verdict = lines
        .iter()
        .position(|l| l.starts_with("system ") && l.contains("out-of-place vs in-place: "))
        .unwrap_or_else(|| panic!("no verdict for system: {text}"));
    assert!(verdict <= 3, "{text}");
    assert!(lines[verdict].contains(" slower ["), "{text}");
    let first: String = lines[..20.min(lines.len())].join(" ");
    let words: Vec<&str> = first.split_whitespace().collect();
    let first = words.join(" ");
    assert!(first.contains("why: "), "{text}");
    assert!(first.contains("(a trim)"), "{text}");
    assert!(
        first.contains("removed by: mimalloc (out-of-place "),
        "{text}"
    );
    assert!(first.contains("system:top_pad=64M"), "{text}");
    // Then the table that fits: after the answer, one row per cell.
    let header = lines
        .iter()
        .position(|l| l.starts_with("allocator "))
        .unwrap_or_else(|| panic!("no table: {text}"));
    assert!(header > verdict + 3, "{text}");
    for h in ["p50", "±p50", "faults/it", "mem calls/it", "rss_end"] {
        assert!(lines[header].contains(h), "{h}: {text}");
    }
    assert!(!lines[header].contains("madvise/it"), "{text}");
    assert_eq!(
        lines[header + 1..]
            .iter()
            .take_while(|l| !l.is_empty())
            .count(),
        4,
        "{text}"
    );
}

#[test]
fn verbose_table_shows_every_run_and_one_explanation_per_allocator() {
    let o = alloclab(&[
        "compare",
        "--size",
        "5000",
        "--min-time",
        "0",
        "--warmup-time",
        "0",
        "--no-adaptive",
        "--verbose",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    let unwrapped = unwrapped(&text);
    for a in ["system", "jemalloc", "mimalloc"] {
        // Every ratio to in-place comes with its interval and a verdict: one finding per
        // variant, as the answer words it.
        for v in ["out-of-place", "reuse", "fused"] {
            let line = unwrapped
                .lines()
                .find(|l| l.contains(&format!(": {a} {v} vs in-place: ")))
                .unwrap_or_else(|| panic!("no finding for {a} {v}: {text}"));
            assert_eq!(
                line.matches(" slower [").count()
                    + line.matches(" faster [").count()
                    + line.matches("no significant difference (").count(),
                1,
                "one verdict: {line}"
            );
        }
    }
    // Per variant, the allocators against the fastest.
    for v in ["in-place", "out-of-place", "reuse", "fused"] {
        assert!(
            unwrapped
                .lines()
                .any(|l| l.contains(&format!(" {v} vs ")) && l.contains(" (the fastest): ")),
            "{text}"
        );
    }
    for h in ["procs", "p50", "±p50", "minflt/it", "brk/it"] {
        assert!(text.contains(h), "{h}: {text}");
    }
}

/// A directory with a copy of the driver and the given workers (name → shell script, or
/// None for the real worker).
fn lab_dir(workers: &[(Allocator, Option<&str>)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(driver_path(), dir.path().join("alloclab")).unwrap();
    for (a, script) in workers {
        let dest = dir.path().join(a.worker_binary());
        match script {
            Some(s) => std::fs::write(&dest, format!("#!/bin/sh\n{s}\n")).unwrap(),
            None => {
                std::fs::copy(worker_path(*a), &dest).unwrap();
            }
        }
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(dir.join("alloclab"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn crashed_and_garbled_workers_are_reported_and_the_rest_still_shown() {
    let dir = lab_dir(&[
        (Allocator::System, Some("kill -9 $$")),
        (Allocator::Jemalloc, Some("echo 'this is not json'")),
        (Allocator::Mimalloc, None),
    ]);
    let args = [
        "compare",
        "--allocators",
        "system,jemalloc,mimalloc",
        "--size",
        "2000",
        "--min-time",
        "0",
        "--warmup-time",
        "0",
        "--no-adaptive",
    ];
    let o = run_in(dir.path(), &args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    assert_eq!(
        text.matches("FAILED: 6 of 6 processes failed: killed by signal 9 (SIGKILL)")
            .count(),
        4,
        "{text}"
    );
    assert_eq!(
        text.matches("processes failed: invalid output: not JSON")
            .count(),
        4,
        "{text}"
    );
    let mimalloc_rows = table_rows(&text, &["mimalloc"])
        .into_iter()
        .filter(|l| !l.contains("FAILED"));
    assert_eq!(mimalloc_rows.count(), 4, "{text}");
    assert!(
        stderr(&o).contains("8 of 12 cells failed"),
        "{}",
        stderr(&o)
    );

    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let o = run_in(dir.path(), &json_args);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let failed: Vec<_> = rows.iter().filter(|r| r["status"] == "failed").collect();
    assert_eq!(failed.len(), 8);
    assert!(failed
        .iter()
        .all(|r| r["p50_ns"].is_null() && r["error"].is_string()));
}

#[test]
fn runs_that_disagree_on_the_output_are_not_compared() {
    let real = worker_path(Allocator::Jemalloc);
    let liar = format!(
        "'{}' \"$@\" | sed 's/\"checksum\":\"[0-9a-f]*\"/\"checksum\":\"00000000deadbeef\"/'",
        real.display()
    );
    let dir = lab_dir(&[
        (Allocator::System, None),
        (Allocator::Jemalloc, Some(&liar)),
    ]);
    let o = run_in(
        dir.path(),
        &[
            "compare",
            "--size",
            "2000",
            "--min-time",
            "0",
            "--allocators",
            "system,jemalloc",
            // Two processes a cell show the mismatch; no adaptive rounds.
            "--processes",
            "2",
            "--no-adaptive",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        o.stdout.is_empty(),
        "a table was printed despite the mismatch"
    );
    assert!(
        stderr(&o).contains("computed different outputs"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("00000000deadbeef"), "{}", stderr(&o));
}

#[test]
fn missing_worker_binaries_are_named_before_anything_runs() {
    let dir = lab_dir(&[(Allocator::System, None)]);
    let o = run_in(dir.path(), &["compare", "--size", "1000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("alloclab-jemalloc not found"),
        "{}",
        stderr(&o)
    );
    let o = run_in(
        dir.path(),
        &[
            "compare",
            "--size",
            "1000",
            "--allocators",
            "system",
            "--min-time",
            "0",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn compare_refuses_a_plan_over_max_runs_before_anything_runs() {
    // 24 cells × 1,000 processes.
    assert_refused(&["compare", "--processes", "1000"], "24,000 runs");
    assert_refused(&["compare", "--processes", "1000"], "--max-runs 10,000");
    assert_refused(
        &[
            "compare",
            "--processes",
            "10",
            "--allocators",
            "system",
            "--max-runs",
            "39",
        ],
        "4 cells × --processes 10 = 40 runs",
    );
}

/// A compare of 1,000 processes per cell (4 cells), stopped with SIGINT to its process
/// group (as Ctrl-C at a terminal does) once its fifth run — the second round — has
/// started, so that every cell has a process; returns its output.
fn interrupted_compare(format: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "compare",
        "--size",
        "5000",
        "--min-time",
        "0.02",
        "--warmup-time",
        "0",
        "--processes",
        "1000",
        "--max-time",
        "3600",
        "--allocators",
        "system,jemalloc",
        "--variants",
        "in-place,out-of-place",
        "--format",
        format,
    ];
    args.extend_from_slice(extra);
    interrupted_after_runs(&args, 5)
}

/// After Ctrl-C every format says the session is incomplete, how it stopped and how
/// many processes each cell has of the 1,000 planned — never "1000 process(es) per
/// cell" or "1000 for every cell".
#[test]
fn an_interrupted_compare_says_so_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    for format in ["json", "csv", "markdown", "table"] {
        let extra: Vec<&str> = if format == "table" {
            vec!["--html", page.to_str().unwrap()]
        } else {
            Vec::new()
        };
        let o = interrupted_compare(format, &extra);
        assert_eq!(o.status.code(), Some(130), "{format}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("interrupted by SIGINT: after "),
            "{format}: {}",
            stderr(&o)
        );
        let out = unwrapped(&String::from_utf8(o.stdout.clone()).unwrap());
        let processes: Vec<u64> = match format {
            "json" => {
                let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
                for r in &rows {
                    assert_eq!(r["complete"], false, "{r}");
                    assert_eq!(r["stopped_by"], "SIGINT", "{r}");
                    assert_eq!(r["processes_planned"], 1000, "{r}");
                }
                rows.iter()
                    .map(|r| r["processes"].as_u64().unwrap())
                    .collect()
            }
            "csv" => {
                let mut reader = csv::Reader::from_reader(out.as_bytes());
                let header = reader.headers().unwrap().clone();
                let col = |name: &str| header.iter().position(|h| h == name).unwrap();
                let records: Vec<csv::StringRecord> =
                    reader.records().map(Result::unwrap).collect();
                for r in &records {
                    assert_eq!(&r[col("complete")], "false", "{r:?}");
                    assert_eq!(&r[col("stopped_by")], "SIGINT", "{r:?}");
                    assert_eq!(&r[col("processes_planned")], "1000", "{r:?}");
                }
                records
                    .iter()
                    .map(|r| r[col("processes")].parse().unwrap())
                    .collect()
            }
            "markdown" => {
                assert!(
                    out.starts_with("> **Incomplete:** interrupted by SIGINT after "),
                    "{out}"
                );
                vec![1]
            }
            _ => {
                assert!(
                    out.starts_with("incomplete: interrupted by SIGINT after "),
                    "{out}"
                );
                // The procs column (and its mention) shows when a cell has two.
                assert!(
                    out.contains(" of the 1000 planned process(es) per cell (procs; incomplete)")
                        || out
                            .contains("\n1 of the 1000 planned process(es) per cell (incomplete)"),
                    "{out}"
                );
                assert!(
                    out.contains("rounds: interrupted by SIGINT during the 1000 planned: "),
                    "{out}"
                );
                let html = std::fs::read_to_string(&page).unwrap();
                assert!(
                    html.contains("<title>INCOMPLETE: alloclab compare"),
                    "{html}"
                );
                assert!(html.contains("incomplete: interrupted by SIGINT after "));
                vec![1]
            }
        };
        // Every cell has a process (JSON and CSV rows say how many).
        let rows = if matches!(format, "json" | "csv") {
            4
        } else {
            1
        };
        assert_eq!(processes.len(), rows, "{format}: {out}");
        assert!(
            processes.iter().all(|&n| (1..=3).contains(&n)),
            "{format}: {processes:?}"
        );
        for claim in [
            "1000 process(es) per cell or more",
            "rounds: 1000 for every cell",
        ] {
            assert!(!out.contains(claim), "{format}: {out}");
        }
    }
}

/// --max-time bounds the --processes rounds too: 1,000 rounds of at least 0.05 s each
/// cannot fit into 1 s, so compare stops starting rounds, exits 0 and says in every
/// output how many of the planned processes every cell got and why.
#[test]
fn max_time_bounds_the_planned_rounds_and_says_so() {
    let args = |format: &'static str| {
        vec![
            "compare",
            "--size",
            "5000",
            "--min-time",
            "0.05",
            "--warmup-time",
            "0",
            "--processes",
            "1000",
            "--max-time",
            "1",
            "--allocators",
            "system",
            "--variants",
            "in-place,out-of-place",
            "--format",
            format,
        ]
    };
    let o = alloclab(&args("json"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows.len(), 2);
    let n = rows[0]["processes"].as_u64().unwrap();
    assert!((1..1000).contains(&n), "{n}");
    for r in &rows {
        assert_eq!(r["complete"], false, "{r}");
        assert_eq!(r["stopped_by"], "max-time", "{r}");
        assert_eq!(r["processes_planned"], 1000, "{r}");
        // Whole rounds: every cell the same.
        assert_eq!(r["processes"].as_u64(), Some(n), "{r}");
    }
    assert!(
        stderr(&o).contains("incomplete: --max-time 1 s left no room for round "),
        "{}",
        stderr(&o)
    );
    let o = alloclab(&args("table"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = unwrapped(&String::from_utf8(o.stdout).unwrap());
    assert!(out.starts_with("incomplete: --max-time 1 s"), "{out}");
    let rounds = out.lines().find(|l| l.starts_with("rounds: ")).unwrap();
    assert!(
        rounds.contains(" of the 1000 planned for every cell (round ")
            && rounds.contains(" would have ended after --max-time 1 s); no adaptive rounds"),
        "{rounds}"
    );
}

/// Names and sizes as people type them: glibc's malloc by the names its headers print,
/// `--variant` for `--variants`, sizes as the lab prints them or as people say them; a
/// typo is refused with the name meant.
#[test]
fn names_and_sizes_are_read_as_people_type_them() {
    let o = alloclab(&[
        "compare",
        "--allocator",
        "glibc",
        "--variant",
        "fused",
        "--size",
        "1,000,000",
        "--processes",
        "1",
        "--min-time",
        "0",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["allocator"], "system");
    assert_eq!(rows[0]["size"], 1_000_000);
    assert_refused(
        &["compare", "--allocators", "jemaloc"],
        "(did you mean 'jemalloc'?)",
    );
    assert_refused(
        &["compare", "--variants", "outofplace"],
        "(did you mean 'out-of-place'?)",
    );
    assert_refused(&["compare", "--size", "1,00"], "1,000,000");
}

/// A mistyped option of a command that runs your program is not taken for the program:
/// it is named, with the option meant, before anything runs (exit 2).
#[test]
fn a_mistyped_option_is_named_not_run_as_the_command() {
    for (args, said) in [
        (
            &["exec", "--max-tme", "3", "--", "true"][..],
            "unknown option '--max-tme' for alloclab exec (did you mean '--max-time'?)",
        ),
        (
            &[
                "sweep",
                "--sizes",
                "1000,2000",
                "--precision",
                "3",
                "--",
                "true",
                "{size}",
            ][..],
            "unknown option '--precision' for alloclab sweep: its options go before `--`",
        ),
        (
            &[
                "tune",
                "--allocator",
                "system",
                "--procesess=2",
                "--",
                "true",
            ][..],
            "unknown option '--procesess' for alloclab tune (did you mean '--processes'?)",
        ),
    ] {
        let o = lab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(said), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("[1/"), "{args:?} started runs");
        assert!(o.stdout.is_empty());
    }
}

/// stderr into a pipe nobody reads any more (`alloclab compare … 2>&1 | head -1` once
/// head has exited): the progress lines are dropped, the run ends as it would, no panic.
#[test]
fn a_closed_stderr_is_no_panic() {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe writes two descriptors into the array; the read end is closed at once
    // and the write end handed to the child, owned once.
    let writer = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::close(fds[0]);
        std::os::fd::OwnedFd::from_raw_fd(fds[1])
    };
    let status = Command::new(driver_path())
        .args([
            "compare",
            "--size",
            "10000",
            "--variants",
            "in-place",
            "--allocators",
            "system",
            "--processes",
            "2",
            "--no-adaptive",
            "--counters",
            "off",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::from(writer))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
}

/// One of exec's own options after the command goes to the command, as the command line
/// says; alloclab warns, naming where it would belong, and runs as asked.
#[test]
fn an_option_of_alloclabs_after_the_command_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ex");
    let o = lab(&[
        "exec",
        "--out",
        out.to_str().unwrap(),
        "--runs",
        "2",
        "--allocators",
        "system",
        "--counters",
        "off",
        "--",
        "/bin/true",
        "--runs",
        "1",
        "--help",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = unwrapped(&stderr(&o));
    assert!(
        err.contains("warning: --runs comes after the command, so it goes to /bin/true, not to alloclab exec"),
        "{err}"
    );
    // --help is no option of exec's own to warn about (clap's), and the program's
    // arguments are its own.
    assert!(!err.contains("warning: --help"), "{err}");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("exec.json")).unwrap()).unwrap();
    assert_eq!(record["allocators"][0]["runs"].as_array().unwrap().len(), 2);
}
