//! The lab's fault and syscall counts agree with an independent counter: `perf stat` on
//! the same worker command. perf counts the whole process (start-up, warm-up, output),
//! the lab only its measured phase, so two runs that differ only in their iteration count
//! are compared: the fixed part cancels, and what is left must agree.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use alloclab::model::spec::Allocator;
use std::collections::BTreeMap;

/// perf's totals and the lab's record for one worker command.
fn perf_and_lab(
    a: Allocator,
    variant: &str,
    iters: u64,
) -> (BTreeMap<String, u64>, alloclab::model::record::RunRecord) {
    let (counts, out) = perf_stat(&worker_cmd(a, variant, 1_000_000, iters));
    (counts, parse_record(&out))
}

fn lab_total(r: &alloclab::model::record::RunRecord, event: &str) -> Option<u64> {
    let t = &r.totals;
    let s = t.syscalls.as_ref();
    match event {
        "page-faults" => Some(t.usage.minflt + t.usage.majflt),
        "syscalls:sys_enter_brk" => s.map(|s| s.brk),
        "syscalls:sys_enter_mmap" => s.map(|s| s.mmap),
        "syscalls:sys_enter_munmap" => s.map(|s| s.munmap),
        "syscalls:sys_enter_madvise" => s.map(|s| s.madvise),
        "syscalls:sys_enter_mremap" => s.map(|s| s.mremap),
        _ => None,
    }
}

#[test]
#[ignore = "needs perf stat and tracepoints (root); .ci/run runs it with --ignored"]
fn lab_counts_agree_with_perf_stat() {
    if let Err(why) = perf_usable() {
        panic!("cannot run here: {why}");
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
        for event in PERF_EVENTS {
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
