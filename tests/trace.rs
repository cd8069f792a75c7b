//! `alloclab trace` end to end: the timeline of every iteration agrees with the worker's
//! own counters and parses back; with perf, glibc's brk calls are attributed to the trim
//! in free, jemalloc's madvise to its purge path, and mimalloc has none; without perf
//! events (user nobody) the timeline is still measured and the attribution says what it
//! needs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

fn trace_into(dir: &Path, allocators: &str, nobody: bool) -> std::process::Output {
    let mut cmd = Command::new(driver_path());
    cmd.args([
        "trace",
        "--size",
        "1000000",
        "--variant",
        "out-of-place",
        "--allocators",
        allocators,
        "--iterations",
        "20",
        "--processes",
        "0",
        "--out",
    ])
    .arg(dir);
    if nobody {
        drop_to_nobody(&mut cmd);
    }
    cmd.output().unwrap()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every row of a timeline CSV, as numbers (empty fields as None).
fn timeline(path: &Path) -> (Vec<String>, Vec<Vec<Option<f64>>>) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|rec| {
            rec.unwrap()
                .iter()
                .map(|f| (!f.is_empty()).then(|| f.parse::<f64>().unwrap()))
                .collect()
        })
        .collect();
    (header, rows)
}

fn column(header: &[String], rows: &[Vec<Option<f64>>], name: &str) -> Vec<Option<f64>> {
    let i = header.iter().position(|h| h == name).unwrap();
    rows.iter().map(|r| r[i]).collect()
}

/// What holds with or without perf: one row per iteration, in time order, whose faults
/// add up to what the worker's getrusage counted over the whole measured phase (the
/// reads between iterations fault nothing here); glibc really faults every iteration,
/// mimalloc does not.
fn check_timeline(dir: &Path) {
    let folder = json(&dir.join("folder.json"));
    assert_eq!(folder["kind"], "trace");
    assert_eq!(folder["complete"], true);
    let trace = json(&dir.join("trace.json"));
    assert_eq!(trace["schema"], "alloclab.trace/1");
    assert_eq!(trace["complete"], true);
    for label in ["system", "mimalloc"] {
        let record = json(&dir.join(format!("runs/{label}.json")));
        let (header, rows) = timeline(&dir.join(format!("timeline/{label}.csv")));
        assert_eq!(rows.len(), 20, "{label}: one row per iteration");
        assert_eq!(record["timeline"].as_array().unwrap().len(), 20);
        let start = column(&header, &rows, "start_ms");
        assert!(start.windows(2).all(|w| w[0] < w[1]), "{label}: {start:?}");
        let faults: Vec<f64> = column(&header, &rows, "minflt")
            .into_iter()
            .map(Option::unwrap)
            .collect();
        let total = record["totals"]["minflt"].as_f64().unwrap();
        let sum: f64 = faults.iter().sum();
        assert!(
            sum <= total && total - sum <= 20.0,
            "{label}: iterations {sum} vs the measured phase {total}"
        );
        let mut sorted = faults.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[10];
        match label {
            "system" => assert!(median > 1000.0, "glibc out-of-place re-faults: {faults:?}"),
            _ => assert!(median < 1.0, "mimalloc keeps its pages: {faults:?}"),
        }
        assert!(column(&header, &rows, "rss_bytes")
            .iter()
            .all(|r| r.is_some_and(|v| v > 0.0)));
    }
    let report = std::fs::read_to_string(dir.join("REPORT.md")).unwrap();
    assert!(report.contains("## Mechanism"), "{report}");
    for plot in ["latency", "faults", "rss"] {
        let svg = std::fs::read_to_string(dir.join(format!("plots/{plot}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }
}

#[test]
fn the_timeline_keeps_every_iteration_and_agrees_with_getrusage() {
    let dir = tempfile::tempdir().unwrap();
    let o = trace_into(dir.path(), "system,mimalloc", false);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    check_timeline(dir.path());
}

#[test]
#[ignore = "needs the perf tool and perf events (root or CAP_PERFMON); .ci/run runs it with --ignored"]
fn glibc_brk_is_attributed_to_the_trim_in_free_and_jemalloc_madvise_to_its_purge() {
    let dir = tempfile::tempdir().unwrap();
    let o = trace_into(dir.path(), "system,jemalloc,mimalloc", false);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    check_timeline(dir.path());
    let trace = json(&dir.path().join("trace.json"));
    assert!(trace["attribution"].is_null(), "{}", trace["attribution"]);
    let alloc = |label: &str| {
        trace["allocators"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["label"] == label)
            .unwrap()
            .clone()
    };
    let causes = |a: &serde_json::Value, kind: &str| -> Vec<(String, f64)> {
        a["attributions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["kind"] == kind)
            .flat_map(|x| x["causes"].as_array().unwrap().clone())
            .map(|c| {
                (
                    c["chain"].as_str().unwrap().to_string(),
                    c["share"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    // glibc: the trim is one of its brk calls' causes, by name.
    let system = alloc("system");
    let brk = causes(&system, "brk");
    assert!(
        brk.iter()
            .any(|(chain, share)| chain == "free → _int_free → systrim" && *share > 0.2),
        "{brk:?}"
    );
    // Every memory syscall the worker counted itself was sampled with its stack.
    for a in ["system", "jemalloc", "mimalloc"] {
        let check = alloc(a)["sample_check"].as_str().unwrap().to_string();
        assert!(!check.contains("short by"), "{a}: {check}");
    }
    // jemalloc: madvise from its purge path.
    let madvise = causes(&alloc("jemalloc"), "madvise");
    assert!(
        madvise.iter().any(|(chain, _)| chain.contains("purge")),
        "{madvise:?}"
    );
    // mimalloc: no memory syscall at all.
    let mimalloc = alloc("mimalloc");
    for kind in ["brk", "mmap", "munmap", "madvise", "mremap"] {
        assert!(causes(&mimalloc, kind).is_empty(), "mimalloc {kind}");
    }
    let m = mimalloc["mechanism"].as_str().unwrap();
    assert!(m.contains("no memory syscall"), "{m}");
    // The timeline's syscall columns agree with the attribution: 3 brk per iteration.
    let (header, rows) = timeline(&dir.path().join("timeline/system.csv"));
    let brk_col = column(&header, &rows, "brk");
    assert!(brk_col.iter().all(|b| *b == Some(3.0)), "{brk_col:?}");
    // Folded stacks parse as "frames count"; the flame graphs are SVG.
    for f in ["system.syscalls", "system.faults", "jemalloc.syscalls"] {
        let text = std::fs::read_to_string(dir.path().join(format!("stacks/{f}.folded"))).unwrap();
        assert!(!text.is_empty(), "{f}");
        for line in text.lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            assert!(!stack.is_empty() && n.parse::<u64>().unwrap() > 0, "{line}");
        }
        let svg = std::fs::read_to_string(dir.path().join(format!("flamegraphs/{f}.svg"))).unwrap();
        assert!(
            svg.contains("<svg") && svg.trim_end().ends_with("</svg>"),
            "{f}"
        );
    }
    assert!(dir
        .path()
        .join("flamegraphs/diff.system-vs-jemalloc.syscalls.svg")
        .is_file());
}

#[test]
#[ignore = "needs root (drops to user nobody); .ci/run runs it with --ignored"]
fn without_perf_events_the_timeline_stands_and_the_attribution_says_what_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let o = trace_into(dir.path(), "system,mimalloc", true);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    check_timeline(dir.path());
    let trace = json(&dir.path().join("trace.json"));
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap();
    if paranoid.trim().parse::<i32>().unwrap() <= -1 {
        // Perf events open to everyone here: nobody gets the stacks too.
        assert!(trace["attribution"].is_null(), "{}", trace["attribution"]);
    } else {
        let why = trace["attribution"].as_str().unwrap();
        assert!(why.contains("CAP_PERFMON"), "{why}");
        assert!(stderr(&o).contains("no call stacks"), "{}", stderr(&o));
    }
}
