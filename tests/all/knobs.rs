//! Allocator knobs reach the allocator (read back from it), and on glibc a knob set that
//! removes the out-of-place fault storm really does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use alloclab::model::metric::{BRK, MINOR_FAULTS};
use alloclab::model::spec::Allocator;
use std::process::Command;

fn with_knobs(
    a: Allocator,
    variant: &str,
    size: u64,
    knobs: &str,
) -> alloclab::model::record::RunRecord {
    let mut cmd = worker_cmd(a, variant, size, 30);
    cmd.arg(format!("--knobs={knobs}"));
    parse_record(&cmd.output().unwrap())
}

#[test]
fn every_knob_is_read_back_from_the_allocator() {
    let r = with_knobs(
        Allocator::Jemalloc,
        "in-place",
        1000,
        "dirty_decay_ms=-1,oversize_threshold=16M,retain=true,thp=never",
    );
    assert_eq!(r.knobs_effective["dirty_decay_ms"], "-1");
    assert_eq!(r.knobs_effective["oversize_threshold"], "16777216");
    assert_eq!(r.knobs_effective["retain"], "true");
    assert_eq!(r.knobs_effective["thp"], "never");
    // The mimalloc option indices of this build: each option set through its
    // environment variable reads back as set.
    let r = with_knobs(
        Allocator::Mimalloc,
        "in-place",
        1000,
        "purge_delay=123,allow_thp=0,purge_decommits=0,arena_eager_commit=1,allow_large_os_pages=0",
    );
    assert_eq!(r.knobs_effective["purge_delay"], "123");
    assert_eq!(r.knobs_effective["allow_thp"], "false");
    assert_eq!(r.knobs_effective["purge_decommits"], "false");
    assert_eq!(r.knobs_effective["arena_eager_commit"], "1");
    let r = with_knobs(
        Allocator::System,
        "in-place",
        1000,
        "top_pad=64M,mmap_max=0",
    );
    assert_eq!(r.knobs_effective["top_pad"], (64u64 << 20).to_string());
    assert_eq!(r.knobs_effective["mmap_max"], "0");
    assert_eq!(r.knobs[0].name, "mmap_max", "knobs are recorded, sorted");
}

#[test]
fn top_pad_removes_the_glibc_fault_storm() {
    let plain = with_knobs(Allocator::System, "out-of-place", 1_000_000, "");
    let padded = with_knobs(Allocator::System, "out-of-place", 1_000_000, "top_pad=64M");
    assert!(
        plain.per_iter[MINOR_FAULTS].unwrap() >= 1000.0,
        "{}",
        plain.per_iter[MINOR_FAULTS].unwrap()
    );
    assert!(
        padded.per_iter[MINOR_FAULTS].unwrap() < 10.0,
        "top_pad=64M still faults: {}",
        padded.per_iter[MINOR_FAULTS].unwrap()
    );
    assert_eq!(plain.checksum, padded.checksum);
}

#[test]
#[ignore = "needs perf tracepoints (root or CAP_PERFMON): a worker alone counts syscalls with perf only; .ci/run runs it with --ignored"]
fn top_pad_removes_the_brk_calls_too() {
    let plain = with_knobs(Allocator::System, "out-of-place", 1_000_000, "");
    let padded = with_knobs(Allocator::System, "out-of-place", 1_000_000, "top_pad=64M");
    let (Some(pb), Some(qb)) = (plain.per_iter[BRK], padded.per_iter[BRK]) else {
        panic!(
            "syscall counts unavailable: {:?}",
            plain.unavailable.get("syscalls")
        );
    };
    assert!(
        pb >= 1.0 && qb == 0.0,
        "brk per iteration: {pb} without, {qb} with top_pad"
    );
}

#[test]
fn thp_never_is_in_force_and_recorded() {
    let mut cmd = worker_cmd(Allocator::Mimalloc, "in-place", 1000, 5);
    cmd.arg("--thp=never");
    let r = parse_record(&cmd.output().unwrap());
    assert_eq!(r.thp_disabled, Some(true));
    let r = with_knobs(Allocator::Mimalloc, "in-place", 1000, "");
    assert_eq!(r.thp_disabled, Some(false));
}

#[test]
fn inherited_allocator_settings_do_not_leak_into_a_run() {
    // A MALLOC_CONF-style variable in the caller's environment must not change a run
    // silently: the worker restarts without it.
    let mut cmd = worker_cmd(Allocator::Jemalloc, "in-place", 1000, 5);
    cmd.env("_RJEM_MALLOC_CONF", "dirty_decay_ms:-1")
        .arg("--knobs=muzzy_decay_ms=0");
    let r = parse_record(&cmd.output().unwrap());
    assert_eq!(r.knobs_effective["muzzy_decay_ms"], "0");
    // jemalloc's default dirty_decay_ms is 10000: the inherited -1 did not apply.
    let out = Command::new(worker_path(Allocator::Jemalloc))
        .args([
            "--variant=in-place",
            "--size=1000",
            "--min-time=0",
            "--knobs=dirty_decay_ms=10000",
        ])
        .env("_RJEM_MALLOC_CONF", "dirty_decay_ms:-1")
        .output()
        .unwrap();
    assert_eq!(
        parse_record(&out).knobs_effective["dirty_decay_ms"],
        "10000"
    );
}

#[test]
fn compare_labels_runs_by_their_full_spec() {
    let o = Command::new(driver_path())
        .args([
            "compare",
            "--size",
            "1e6",
            "--allocators",
            "system:top_pad=64M;system",
            "--variants",
            "out-of-place",
            "--min-time",
            "0",
            "--min-iters",
            "10",
            "--max-iters",
            "10",
            "--warmup-time",
            "0",
            "--no-adaptive",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let labels: Vec<&str> = rows
        .iter()
        .map(|r| r["allocator_spec"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["system:top_pad=64M", "system"]);
    assert!(rows[0]["minflt_per_iter"].as_f64().unwrap() < 10.0);
    assert!(rows[1]["minflt_per_iter"].as_f64().unwrap() >= 1000.0);

    let bad = Command::new(driver_path())
        .args(["compare", "--allocators", "jemalloc:decay=1"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("valid knobs are dirty_decay_ms"));
}

#[test]
fn cliff_finds_neighbouring_sizes_and_says_when_there_is_none() {
    let o = Command::new(driver_path())
        .args([
            "cliff",
            "--allocator",
            "system",
            "--variant",
            "out-of-place",
            "--from",
            "1000",
            "--to",
            "1e5",
            "--min-time",
            "0",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let size_of = |prefix: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap();
        line.split(':')
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap()
    };
    let (below, above) = (size_of("below"), size_of("above"));
    assert_eq!(above, below + 1, "{text}");
    assert!(text.contains("0 minor faults per iteration"), "{text}");
    // glibc's out-of-place storm starts where two buffers no longer fit in the top the
    // last trim left: inside M_TOP_PAD's window, which the line names.
    assert!((8_192..=8_448).contains(&above), "{text}");
    assert!(
        text.contains("behind it: glibc's M_TOP_PAD (128.0 KiB default)"),
        "{text}"
    );

    // The same cliff as JSON: the two neighbouring sizes and their values either side.
    let o = Command::new(driver_path())
        .args([
            "cliff",
            "--allocator",
            "system",
            "--variant",
            "out-of-place",
        ])
        .args([
            "--from",
            "1000",
            "--to",
            "1e5",
            "--min-time",
            "0",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["below"]["size"], below, "{v}");
    assert_eq!(v["above"]["size"], above, "{v}");
    assert!(v["below"]["value_per_iter"].as_f64().unwrap() < 1.0, "{v}");
    assert!(v["above"]["value_per_iter"].as_f64().unwrap() >= 1.0, "{v}");
    assert_eq!(v["metric"], "minor faults");
    assert_eq!(v["change"], "cross", "{v}");
    assert!(
        v["behind_it"]
            .as_str()
            .unwrap()
            .contains("predicted from 8,192 to 8,448 elements"),
        "{v}"
    );
    // Both sides measured again in six interleaved processes: an interval around each
    // median, and the faulting side significantly slower than the other.
    for side in ["below_replicated", "above_replicated"] {
        let r = &v[side];
        assert_eq!(r["processes"], 6, "{v}");
        let (lo, p50, hi) = (
            r["p50_ci_low_ns"].as_u64().unwrap(),
            r["p50_ns"].as_u64().unwrap(),
            r["p50_ci_high_ns"].as_u64().unwrap(),
        );
        assert!(lo <= p50 && p50 <= hi, "{v}");
    }
    // A timing verdict depends on the machine's load: only the opposite one would be
    // wrong (the counts above say what changed).
    assert_ne!(v["above_vs_below"]["verdict"], "faster", "{v}");

    let o = Command::new(driver_path())
        .args([
            "cliff",
            "--allocator",
            "system",
            "--variant",
            "in-place",
            "--from",
            "1000",
            "--to",
            "2000",
            "--min-time",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no change of behaviour"), "{err}");
    // Sizes and values as numbers are written elsewhere: grouped, a few digits.
    assert!(
        err.contains(" at 1,000 and ") && err.contains(" at 2,000 elements: "),
        "{err}"
    );
}

#[test]
fn tune_reports_which_knob_sets_remove_the_storm() {
    let o = Command::new(driver_path())
        .args([
            "tune",
            "--allocators",
            "system",
            "--min-time",
            "0.02",
            // The rows' fault counts are exact: two processes per set say them (the
            // verdicts below need six).
            "--processes",
            "2",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0]["allocator_spec"], "system");
    assert!(rows[0]["minflt_per_iter"].as_f64().unwrap() >= 1000.0);
    let padded = rows
        .iter()
        .find(|r| r["allocator_spec"] == "system:top_pad=64M")
        .unwrap();
    assert!(padded["minflt_per_iter"].as_f64().unwrap() < 10.0);
    let o = Command::new(driver_path())
        .env("COLUMNS", "100")
        .args(["tune", "--allocators", "system", "--min-time", "0.02"])
        .output()
        .unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    // The answer first, in the reader's width: each set's verdict, then the table of sets
    // named under their allocator, then how it ran and why each set was tried.
    for l in text.lines() {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    assert!(
        text.starts_with("scale out-of-place at 1,000,000 elements, each knob set against its allocator's defaults:\n"),
        "{text}"
    );
    assert!(
        unwrapped(&text)
            .contains("system:top_pad=64M: removes the faults and the memory syscalls; helps: "),
        "{text}"
    );
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle}:\n{text}"))
    };
    assert!(at("\nsystem:top_pad=64M: removes the faults") < at("\nset "));
    assert!(at("\nset ") < at("\nsystem (defaults) "));
    assert!(at("\nsystem (defaults) ") < at("\n  top_pad=64M "));
    assert!(at("\n  top_pad=64M ") < at("Why each set was tried:"));
}

#[test]
fn allocators_without_knobs_or_statistics_say_why() {
    let r = with_knobs(Allocator::Rpmalloc, "reuse", 1000, "");
    assert!(r.allocator_stats.is_empty());
    assert!(r.unavailable["allocator_stats"].contains("ENABLE_STATISTICS"));
    for a in [Allocator::Snmalloc, Allocator::Rpmalloc] {
        let e = format!("{a}:x=1")
            .parse::<alloclab::model::knobs::AllocatorSpec>()
            .unwrap_err()
            .to_string();
        // Why it has none of its own, then the lab's own it takes.
        assert!(
            e.contains(&format!("unknown knob 'x' for {a}: "))
                && e.contains("; the lab's own knobs are burst_on_thread")
                && !e.contains("valid knobs"),
            "{e}"
        );
    }
    // TCMalloc's own release rate is not a knob here, and the error says why.
    let e = "tcmalloc:release_rate=1M"
        .parse::<alloclab::model::knobs::AllocatorSpec>()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ProcessBackgroundActions")
            && e.contains("the lab's own knobs are release_at_idle, burst_on_thread"),
        "{e}"
    );
    let why = alloclab::model::knobs::no_knobs_reason(Allocator::Tcmalloc).unwrap();
    assert!(why.contains("ProcessBackgroundActions"), "{why}");
}

#[test]
fn each_allocator_reports_its_own_statistics() {
    for (a, keys) in [
        (
            Allocator::System,
            &["arena", "hblkhd", "uordblks", "fordblks", "keepcost"][..],
        ),
        (
            Allocator::Jemalloc,
            &["allocated", "active", "resident", "mapped", "retained"][..],
        ),
        (
            Allocator::Mimalloc,
            &["current_rss", "peak_rss", "current_commit", "peak_commit"][..],
        ),
        (
            Allocator::Tcmalloc,
            &[
                "current_allocated_bytes",
                "heap_size",
                "pageheap_free_bytes",
            ][..],
        ),
        (
            Allocator::Snmalloc,
            &["current_memory_usage", "peak_memory_usage"][..],
        ),
    ] {
        let r = with_knobs(a, "reuse", 100_000, "");
        for k in keys {
            assert!(
                r.allocator_stats.contains_key(*k),
                "{a}: no {k} in {:?} ({:?})",
                r.allocator_stats,
                r.unavailable
            );
        }
        // The reuse buffer (800 kB) is live at the end of the measured phase.
        let live = match a {
            Allocator::System => r.allocator_stats["uordblks"] + r.allocator_stats["hblkhd"],
            Allocator::Jemalloc => r.allocator_stats["allocated"],
            Allocator::Mimalloc => r.allocator_stats["current_commit"],
            Allocator::Tcmalloc => r.allocator_stats["current_allocated_bytes"],
            Allocator::Snmalloc => r.allocator_stats["current_memory_usage"],
            Allocator::Rpmalloc => unreachable!("rpmalloc keeps no statistics"),
        };
        assert!(live >= 800_000, "{a}: {:?}", r.allocator_stats);
    }
}

/// tune's --max-time: the first round always runs, no later one that would end after
/// it; the screen opens with what ran, and its method line counts the processes that did.
#[test]
fn tune_stops_at_max_time_and_says_how_many_rounds_ran() {
    let o = Command::new(driver_path())
        .args([
            "tune",
            "--allocators",
            "system",
            "--min-time",
            "0.005",
            "--size",
            "100000",
            "--max-time",
            "0.01",
        ])
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.starts_with(
            "incomplete: --max-time 0.01 s left no room for round 2 of the 6 planned: 1 processes per set"
        ),
        "{text}"
    );
    assert!(
        text.contains("1 processes per set in interleaved rounds"),
        "{text}"
    );
}
