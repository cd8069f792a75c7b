//! Issue 25's machinery end to end: `calibrate --noise` reads back and its figures hang
//! together; compare's adaptive rounds account for every extra process and stop at
//! --max-time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

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
    }
    // The warm-up profile covers the first seconds of every process without warm-up.
    assert!(!v["first_seconds_pct"].as_array().unwrap().is_empty());
}

#[test]
fn calibrate_refuses_noise_options_without_noise() {
    let o = lab(&["calibrate", "--processes", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--noise"), "{}", stderr(&o));
}

/// The table's procs column and its "rounds:" line.
fn procs_and_rounds(text: &str) -> (Vec<u64>, String) {
    let procs = text
        .lines()
        .filter(|l| l.starts_with("system ") || l.starts_with("jemalloc "))
        .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
        .collect();
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
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let (procs, rounds) = procs_and_rounds(&text);
    (procs, rounds, text)
}

#[test]
fn adaptive_rounds_account_for_every_extra_process_and_stop_at_max_time() {
    // A generous --max-time: adaptive rounds may run; the extra processes the line
    // reports are exactly those in the table beyond 6 per cell.
    let (procs, rounds, text) = small_compare(&["--max-time", "8"]);
    assert_eq!(procs.len(), 4, "{text}");
    assert!(procs.iter().all(|p| *p >= 6), "{procs:?}");
    let extra: u64 = procs.iter().map(|p| p - 6).sum();
    assert!(
        rounds.contains(&format!("({extra} runs)")),
        "{rounds} vs {procs:?}"
    );
    // The printed comparisons: 2 against in-place, 2 against the fastest.
    assert!(rounds.contains("of 4 printed comparisons"), "{rounds}");

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
