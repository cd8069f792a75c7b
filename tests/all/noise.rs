//! Issue 25's machinery end to end: `calibrate --noise` reads back and its figures hang
//! together; compare's adaptive rounds account for every extra process and stop at
//! --max-time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;

#[test]
fn calibrate_noise_reads_back_with_one_p50_per_process_and_consistent_budgets() {
    let o = lab(&[
        "calibrate",
        "--noise",
        "--processes",
        "4",
        "--process-time",
        "0.12",
        "--size",
        "100000",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o.stdout);
    assert_eq!(v["processes"], 4);
    assert_eq!(v["process_p50_ns"].as_array().unwrap().len(), 4);
    // It says what ran.
    assert_eq!(v["complete"], true);
    assert_eq!(v["processes_planned"], 4);
    assert_eq!(v["stopped_by"], serde_json::Value::Null);
    let budgets = v["budgets"].as_array().unwrap();
    // Budgets up to half a process's measuring: 0.005 … 0.05 s.
    let seconds: Vec<f64> = budgets
        .iter()
        .map(|b| b["budget_s"].as_f64().unwrap())
        .collect();
    assert_eq!(seconds, vec![0.005, 0.01, 0.02, 0.05]);
    let mut last_windows = u64::MAX;
    let mut last_cost = 0.0;
    for b in budgets {
        // Longer windows: fewer of them, each process costs more, fewer pairs fit.
        let w = b["windows"].as_u64().unwrap();
        assert!(w <= last_windows, "{b}");
        last_windows = w;
        let cost = b["process_s"].as_f64().unwrap();
        assert!(
            cost > b["budget_s"].as_f64().unwrap() && cost >= last_cost,
            "{b}"
        );
        last_cost = cost;
        assert!(b["within_pct"].as_f64().unwrap() >= 0.0);
        // Four processes are too few for an A/A figure (12 at 95 %): none is given
        // (resampling pairs from them once claimed ±0.00 %, pairing a process with
        // itself).
        assert_eq!(b["ratio_pct"], serde_json::Value::Null, "{b}");
    }
    assert_eq!(v["aa_min_processes"], 12);
    // The warm-up profile covers the first seconds of every process without warm-up.
    assert!(!v["first_seconds_pct"].as_array().unwrap().is_empty());
    // Every candidate cause is judged: tested with ρ or a CPU difference and a p-value,
    // or untested with the reason; a cause explains only below the threshold.
    let causes = &v["causes"];
    assert_eq!(causes["processes"], 4);
    let list = causes["causes"].as_array().unwrap();
    let mut names: Vec<&str> = list.iter().map(|c| c["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "CPU",
            "CPU pressure",
            "huge-page coverage",
            "involuntary switches",
            "migrations",
            "run delay",
            "steal"
        ]
    );
    let threshold = causes["threshold"].as_f64().unwrap();
    assert!(threshold > 0.0 && threshold <= 0.05);
    for c in list {
        match c["p"].as_f64() {
            Some(p) => {
                assert!(p > 0.0 && p <= 1.0, "{c}");
                assert_eq!(c["explains"], p < threshold, "{c}");
                assert!(c["rho"].is_f64() || c["difference_pct"].is_f64(), "{c}");
            }
            None => {
                assert!(c["untested"].is_string(), "{c}");
                assert_eq!(c["explains"], false, "{c}");
            }
        }
        assert!(c["processes"].as_u64().unwrap() <= 4, "{c}");
    }
    // The figures behind the tests, one entry per process, with the same p50s.
    let per = causes["per_process"].as_array().unwrap();
    assert_eq!(per.len(), 4);
    for (p, p50) in per.iter().zip(v["process_p50_ns"].as_array().unwrap()) {
        assert_eq!(p["p50_ns"], *p50);
        assert!(p["conditions"]["cpu_start"].is_u64(), "{p}");
    }
}

#[test]
fn calibrate_refuses_noise_options_without_noise() {
    let o = lab(&["calibrate", "--processes", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--noise"), "{}", stderr(&o));
}

/// The table's procs column and its "rounds:" line.
fn procs_and_rounds(text: &str) -> (Vec<u64>, String) {
    let text = unwrapped(text);
    // The procs column shows only when a cell has two processes or more.
    let has_procs = text
        .lines()
        .any(|l| l.starts_with("allocator ") && l.contains(" procs "));
    let procs = if has_procs {
        table_rows(&text, &["system", "jemalloc"])
            .iter()
            .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
            .collect()
    } else {
        Vec::new()
    };
    let rounds = text
        .lines()
        .find(|l| l.starts_with("rounds:"))
        .expect("a rounds line")
        .to_string();
    (procs, rounds)
}

/// compare of system and jemalloc, in-place and reuse, at a short budget, with `extra`
/// options: the procs column, the rounds line and the whole screen.
fn small_compare(extra: &[&str]) -> (Vec<u64>, String, String) {
    let mut args = vec![
        "compare",
        "--size",
        "100000",
        "--allocators",
        "system,jemalloc",
        "--variants",
        "in-place,reuse",
        "--min-time",
        "0.005",
    ];
    args.extend_from_slice(extra);
    let o = lab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = unwrapped(&String::from_utf8_lossy(&o.stdout));
    let (procs, rounds) = procs_and_rounds(&text);
    (procs, rounds, text)
}

#[test]
fn adaptive_rounds_account_for_every_extra_process_and_stop_at_max_time() {
    // A --max-time with room for adaptive rounds (the six planned rounds take about
    // 0.5 s here): the extra processes the line reports are exactly those in the table
    // beyond 6 per cell.
    let (procs, rounds, text) = small_compare(&["--max-time", "2"]);
    assert_eq!(procs.len(), 4, "{text}");
    assert!(procs.iter().all(|p| *p >= 6), "{procs:?}");
    let extra: u64 = procs.iter().map(|p| p - 6).sum();
    assert!(
        rounds.contains(&format!("({extra} runs)")),
        "{rounds} vs {procs:?}"
    );
    // The printed comparisons: 2 against in-place, 2 against the fastest.
    assert!(rounds.contains("of 4 printed comparisons"), "{rounds}");
    // How far the session's own halves put its ratios: one line, its largest move
    // named with the two ratios it moved between.
    let next = text
        .lines()
        .find(|l| l.starts_with("next run: this session's halves put its ratios a median "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        next.contains("x, then ")
            && next.ends_with("a second run may differ as much (docs/method.md)"),
        "{next}"
    );

    // No time for a second round: --max-time bounds the --processes rounds too (only
    // the first always runs), every output says the session is incomplete, and the
    // line says which round did not fit and what is still open at --max-time.
    let (_, rounds, text) = small_compare(&["--precision", "0.01", "--max-time", "0.01"]);
    assert!(
        text.starts_with("incomplete: --max-time 0.01 s left no room for round 2 of the 6 planned; of the 6 processes planned per cell, every cell has 1 process, and no adaptive rounds ran"),
        "{text}"
    );
    assert!(
        text.contains(
            "\n1 of the 6 planned process(es) per cell (incomplete) in interleaved rounds"
        ),
        "{text}"
    );
    assert!(
        rounds.starts_with("rounds: 1 of the 6 planned for every cell (round 2 would have ended after --max-time 0.01 s); no adaptive rounds"),
        "{rounds}"
    );
    assert!(
        rounds.contains("still open at --max-time 0.01 s"),
        "{rounds}"
    );
}

/// `calibrate` with `args` must refuse (exit 2) before running anything, saying `says`.
fn refused(args: &[&str], says: &[&str]) {
    let o = lab(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?} printed something");
    for s in says {
        assert!(err.contains(s), "{args:?}: expected {s:?} in {err}");
    }
}

#[test]
fn calibrate_noise_refuses_settings_that_measure_nothing() {
    // A warm-up as long as the process: nothing left to judge (this printed a table of
    // zero spreads).
    refused(
        &[
            "calibrate",
            "--noise",
            "--warmup",
            "0.2",
            "--process-time",
            "0.05",
        ],
        &[
            "--warmup 0.2 is not shorter than --process-time 0.05",
            "--process-time 0.21 or more",
        ],
    );
    // A process too short for the shortest budget (this printed an empty table).
    refused(
        &["calibrate", "--noise", "--process-time", "0.001"],
        &["--process-time 0.02 or more"],
    );
    refused(
        &[
            "calibrate",
            "--noise",
            "--warmup",
            "0",
            "--process-time",
            "0.001",
        ],
        &["--process-time 0.001 judges no budget", "0.01 or more"],
    );
}

#[test]
fn calibrate_noise_refuses_a_per_seconds_beyond_an_hour() {
    // 86400 computed for minutes and ignored Ctrl-C.
    refused(
        &["calibrate", "--noise", "--per-seconds", "86400"],
        &["--per-seconds", "from 1 to 3600"],
    );
    refused(
        &["calibrate", "--noise", "--per-seconds", "0.1"],
        &["from 1 to 3600"],
    );
}

#[test]
fn calibrate_noise_refuses_the_observer_options_it_does_not_use() {
    // --rounds and --min-time were silently ignored with --noise.
    refused(
        &["calibrate", "--noise", "--rounds", "3"],
        &["--noise", "--rounds"],
    );
    refused(
        &["calibrate", "--noise", "--min-time", "0.5"],
        &["--noise", "--min-time"],
    );
}

/// The pids of the processes whose parent is `parent` now.
fn children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …: the fields after the last ')'.
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        if after.split_whitespace().nth(1) == Some(&parent.to_string()) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn calibrate_noise_after_sigint_says_in_its_json_what_ran_and_names_the_signal() {
    use std::collections::BTreeSet;
    use std::process::{Command, Stdio};
    let planned = 40;
    let mut child = Command::new(driver_path())
        .args([
            "calibrate",
            "--noise",
            "--processes",
            &planned.to_string(),
            "--process-time",
            "0.05",
            "--size",
            "100000",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the driver has started ten processes (its workers, after any its checks
    // start), by their pids, then Ctrl-C it: the signal a terminal sends, to the driver
    // alone.
    let mut seen = BTreeSet::new();
    while seen.len() < 10 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the driver ended before it was interrupted"
        );
        seen.extend(children(child.id()));
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // SAFETY: kill(2) of our own child's pid, which has not been reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("SIGINT"), "{err}");
    let v = json(&o.stdout);
    assert_eq!(v["complete"], false, "{v}");
    assert_eq!(v["stopped_by"], "SIGINT");
    assert_eq!(v["processes_planned"], planned);
    let ran = v["processes"].as_u64().unwrap();
    assert!((4..planned).contains(&ran), "{ran}");
    assert_eq!(v["process_p50_ns"].as_array().unwrap().len() as u64, ran);
}
