//! The lab's fault and syscall counts agree with an independent counter: `perf stat` on
//! the same worker command. perf counts the whole process (start-up, warm-up, output),
//! the lab only its measured phase, so two runs that differ only in their iteration count
//! are compared: the fixed part cancels, and what is left must agree.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use alloclab::spec::Allocator;
use common::*;
use std::collections::BTreeMap;
use std::process::Command;

const EVENTS: [&str; 6] = [
    "page-faults",
    "syscalls:sys_enter_brk",
    "syscalls:sys_enter_mmap",
    "syscalls:sys_enter_munmap",
    "syscalls:sys_enter_madvise",
    "syscalls:sys_enter_mremap",
];

fn perf_usable() -> Result<(), String> {
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", &EVENTS.join(","), "--", "true"])
        .output()
        .map_err(|e| format!("perf not runnable: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || err.contains("<not supported>") || err.contains("<not counted>") {
        return Err(format!(
            "perf stat cannot count {EVENTS:?} here: {}",
            err.trim()
        ));
    }
    Ok(())
}

/// perf's totals and the lab's record for one worker command.
fn perf_and_lab(
    a: Allocator,
    variant: &str,
    iters: u64,
) -> (BTreeMap<String, u64>, alloclab::record::RunRecord) {
    let dir = tempfile::tempdir().unwrap();
    let perf_out = dir.path().join("perf.csv");
    let worker = worker_cmd(a, variant, 1_000_000, iters);
    let mut cmd = Command::new("perf");
    cmd.args(["stat", "-x,", "-o"])
        .arg(&perf_out)
        .args(["-e", &EVENTS.join(","), "--"])
        .arg(worker.get_program())
        .args(worker.get_args());
    let out = cmd.output().expect("perf starts");
    let record = parse_record(&out);
    let text = std::fs::read_to_string(&perf_out).unwrap();
    let mut counts = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let cells: Vec<&str> = line.split(',').collect();
        if cells.len() >= 3 {
            if let Ok(v) = cells[0].parse::<u64>() {
                counts.insert(cells[2].to_string(), v);
            }
        }
    }
    assert_eq!(counts.len(), EVENTS.len(), "perf output: {text}");
    (counts, record)
}

fn lab_total(r: &alloclab::record::RunRecord, event: &str) -> Option<u64> {
    let t = &r.totals;
    let s = t.syscalls.as_ref();
    match event {
        "page-faults" => Some(t.minflt + t.majflt),
        "syscalls:sys_enter_brk" => s.map(|s| s.brk),
        "syscalls:sys_enter_mmap" => s.map(|s| s.mmap),
        "syscalls:sys_enter_munmap" => s.map(|s| s.munmap),
        "syscalls:sys_enter_madvise" => s.map(|s| s.madvise),
        "syscalls:sys_enter_mremap" => s.map(|s| s.mremap),
        _ => None,
    }
}

#[test]
fn lab_counts_agree_with_perf_stat() {
    if let Err(why) = perf_usable() {
        eprintln!("skipped: {why}");
        return;
    }
    let (short, long) = (10u64, 40u64);
    for (a, variant) in [
        (Allocator::System, "out-of-place"),
        (Allocator::System, "in-place"),
        (Allocator::Jemalloc, "out-of-place"),
        (Allocator::Mimalloc, "out-of-place"),
    ] {
        let (p1, r1) = perf_and_lab(a, variant, short);
        let (p2, r2) = perf_and_lab(a, variant, long);
        for event in EVENTS {
            let (Some(l1), Some(l2)) = (lab_total(&r1, event), lab_total(&r2, event)) else {
                eprintln!(
                    "{a} {variant}: lab has no {event} ({:?}); compared the rest",
                    r1.unavailable
                );
                continue;
            };
            // The measured phase is part of the process.
            assert!(
                l1 <= p1[event] && l2 <= p2[event],
                "{a} {variant} {event}: lab {l1}/{l2} > perf {}/{}",
                p1[event],
                p2[event]
            );
            eprintln!(
                "{a} {variant} {event}: perf {}→{}, lab {l1}→{l2}",
                p1[event], p2[event]
            );
            // What the extra iterations added agrees.
            let d_perf = p2[event] as i64 - p1[event] as i64;
            let d_lab = l2 as i64 - l1 as i64;
            let tolerance = if event == "page-faults" {
                64 + d_lab.abs() / 50
            } else {
                2
            };
            assert!(
                (d_perf - d_lab).abs() <= tolerance,
                "{a} {variant} {event}: {} more iterations added {d_perf} by perf but {d_lab} by the lab",
                long - short
            );
        }
    }
}
