//! The real worker binaries: records parse back, every allocator computes the same
//! output, allocation counts are exact, and the founding phenomenon really happens.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use alloclab::model::metric::{ALLOCS, ALLOC_BYTES, BRK, MINOR_FAULTS};
use alloclab::model::spec::{Allocator, Choice, Variant};
use alloclab::worker::workload::{checksum_f64, input_bytes};
use std::process::Command;

#[test]
fn every_worker_prints_a_consistent_record_with_identical_checksums() {
    let size = 10_000;
    let input = input_bytes(size as usize, 42);
    let expected: Vec<f64> = input.iter().map(|&x| f64::from(x) / 255.0).collect();
    let expected = format!("{:016x}", checksum_f64(&expected));
    for &a in Allocator::ALL {
        for &v in Variant::ALL {
            let r = run_worker(a, v.name(), size, 50);
            assert_eq!((r.allocator, r.variant, r.size), (a, v, size));
            assert_eq!(r.iterations, 50);
            assert_eq!(r.checksum, expected, "{a} {v} computed a different output");
            let h = r.histogram.decode().unwrap();
            // One sample per iteration, or per batch when iterations are very short.
            assert_eq!(h.len(), r.samples);
            assert_eq!(r.samples, 50u64.div_ceil(r.batch), "{a} {v}");
            assert!(r.min_ns <= r.p50_ns && r.p50_ns <= r.p90_ns, "{r:?}");
            assert!(r.p90_ns <= r.p99_ns && r.p99_ns <= r.p999_ns && r.p999_ns <= r.max_ns);
            assert_eq!(r.p99_ns, h.value_at_quantile(0.99));
            assert!(r.env.allocator_version.starts_with(match a {
                Allocator::System => "glibc",
                Allocator::Jemalloc => "jemalloc",
                Allocator::Mimalloc => "mimalloc",
                Allocator::Tcmalloc => "TCMalloc",
                Allocator::Snmalloc => "snmalloc",
                Allocator::Rpmalloc => "rpmalloc",
            }));
            assert!(r.overhead.harness_overhead_ns_per_sample > 0.0);
            // Counted allocations are exact: one buffer, two, or none.
            let want = match v {
                Variant::InPlace | Variant::Fused => 1.0,
                Variant::OutOfPlace => 2.0,
                Variant::Reuse => 0.0,
            };
            assert_eq!(r.per_iter[ALLOCS], Some(want), "{a} {v}");
            assert_eq!(r.per_iter[ALLOC_BYTES], Some(want * 8.0 * size as f64));
            // Syscall counts are either measured or explained, never silently missing.
            assert_eq!(
                r.per_iter[BRK].is_some(),
                !r.unavailable.contains_key("syscalls")
            );
        }
    }
}

#[test]
fn glibc_out_of_place_faults_and_trims_in_place_does_not() {
    let size = 1_000_000;
    let out = run_worker(Allocator::System, "out-of-place", size, 30);
    let inp = run_worker(Allocator::System, "in-place", size, 30);
    assert!(
        out.per_iter[MINOR_FAULTS].unwrap() >= 1000.0,
        "out-of-place should re-fault its pages every iteration: {} faults/iter",
        out.per_iter[MINOR_FAULTS].unwrap()
    );
    assert!(
        inp.per_iter[MINOR_FAULTS].unwrap() < 10.0,
        "in-place should reuse its pages: {} faults/iter",
        inp.per_iter[MINOR_FAULTS].unwrap()
    );
}

/// The observer must not move the allocator's thresholds. Its histograms (268 KiB of
/// counts each) are mmapped by glibc; when the worker freed its calibration histograms
/// before the measured phase, glibc's dynamic mmap threshold slid to 268 KiB and its trim
/// threshold to 536 KiB, and buffers of 128–200 KiB (up to 25,906 elements) stopped being
/// trimmed: this run gave 0 faults per iteration. With the observer's memory kept until
/// the record is written, glibc starts from its defaults, as the workload alone leaves
/// it, and 156 KiB buffers are trimmed and faulted in again every iteration.
#[test]
fn the_observers_memory_does_not_move_glibcs_thresholds() {
    let size = 20_000; // 156 KiB per buffer: above glibc's 128 KiB defaults
    let out = run_worker(Allocator::System, "out-of-place", size, 30);
    let inp = run_worker(Allocator::System, "in-place", size, 30);
    assert!(
        out.per_iter[MINOR_FAULTS].unwrap() >= 20.0,
        "out-of-place at {size} should be trimmed and re-faulted every iteration: {} faults/iter",
        out.per_iter[MINOR_FAULTS].unwrap()
    );
    assert!(
        inp.per_iter[MINOR_FAULTS].unwrap() < 1.0,
        "in-place at {size} reuses its pages: {} faults/iter",
        inp.per_iter[MINOR_FAULTS].unwrap()
    );
}

#[test]
#[ignore = "needs perf tracepoints (root or CAP_PERFMON): a worker alone counts syscalls with perf only; .ci/run runs it with --ignored"]
fn glibc_out_of_place_trims_with_brk_and_in_place_does_not() {
    let size = 1_000_000;
    let out = run_worker(Allocator::System, "out-of-place", size, 30);
    let inp = run_worker(Allocator::System, "in-place", size, 30);
    let (Some(ob), Some(ib)) = (out.per_iter[BRK], inp.per_iter[BRK]) else {
        panic!(
            "syscall counts unavailable: {:?}",
            out.unavailable.get("syscalls")
        );
    };
    assert!(
        ob >= 1.0,
        "out-of-place should trim with brk: {ob} brk/iter"
    );
    assert_eq!(ib, 0.0, "in-place makes no brk calls");
}

#[test]
fn a_worker_rejects_bad_arguments_with_the_valid_choices() {
    let out = std::process::Command::new(worker_path(Allocator::System))
        .args(["--variant=sideways", "--size=10"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in-place, out-of-place, reuse"), "{err}");
}

#[test]
fn the_labs_serialized_request_runs_exactly_that_run() {
    use alloclab::model::budget::Budget;
    use alloclab::model::counts::CounterMode;
    use alloclab::model::run::{RunSpec, WorkerRequest};
    let spec: RunSpec = RunSpec {
        allocator: Allocator::Jemalloc,
        workload: alloclab::model::spec::Workload::Scale,
        variant: Variant::OutOfPlace,
        size: 3000,
        threads: 1,
        seed: 7,
        knobs: "jemalloc:dirty_decay_ms=0"
            .parse::<alloclab::model::knobs::AllocatorSpec>()
            .unwrap()
            .knobs,
        thp: Default::default(),
        library: None,
    };
    let request = WorkerRequest {
        spec: spec.clone(),
        budget: Budget {
            warmup_time_ns: 0,
            warmup_iters: 1,
            min_time_ns: 0,
            min_iters: 17,
            max_iters: 17,
            idle_ns: 0,
        },
        counters: CounterMode::Off,
        timeline: false,
        cpu: None,
        layout: None,
        stall: None,
    };
    let json = serde_json::to_string(&request).unwrap();
    let out = std::process::Command::new(worker_path(Allocator::Jemalloc))
        .args(["--request", &json])
        .output()
        .unwrap();
    let r = parse_record(&out);
    assert_eq!(r.spec(), spec);
    assert_eq!(r.budget, request.budget);
    assert_eq!(r.iterations, 17);
    assert_eq!(r.knobs_effective["dirty_decay_ms"], "0");
    // A request for another allocator, or one that does not parse, is refused (2).
    for bad in [json.as_str(), "{\"spec\": 1}"] {
        let out = std::process::Command::new(worker_path(Allocator::Mimalloc))
            .args(["--request", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--request"), "{err}");
    }
}

/// A worker pinned to one CPU (taskset, an independent tool) reads that CPU at both
/// ends of its phase and no migration; beside a busy loop pinned to the same CPU it
/// waits on the run queue for a large part of its phase (the kernel shares the CPU:
/// about half of it on this VM) and is preempted.
#[test]
fn a_pinned_worker_reads_its_cpu_and_waits_for_it_beside_a_busy_loop() {
    let cpu = "0";
    let pinned = || {
        let mut c = Command::new("taskset");
        let w = worker_cmd(Allocator::System, "in-place", 1_000_000, 400);
        c.args(["-c", cpu]).arg(w.get_program()).args(w.get_args());
        parse_record(&c.output().expect("taskset runs"))
    };
    let alone = pinned();
    let c = alone
        .conditions
        .clone()
        .expect("the worker reads its conditions");
    assert_eq!((c.cpu_start, c.cpu_end), (Some(0), Some(0)), "{c:?}");
    if let Some(m) = c.migrations {
        assert_eq!(m, 0, "a pinned thread cannot move: {c:?}");
    } else {
        assert!(c.unavailable.contains_key("migrations"), "{c:?}");
    }
    let mut hog = Command::new("taskset")
        .args(["-c", cpu, "sh", "-c", "while :; do :; done"])
        .spawn()
        .expect("a busy loop starts");
    let shared = pinned();
    hog.kill().ok();
    hog.wait().ok();
    let (Some(a), Some(s)) = (
        c.run_delay_ns,
        shared.conditions.as_ref().and_then(|c| c.run_delay_ns),
    ) else {
        panic!("no run delay read: {c:?}");
    };
    let phase = shared.measured_wall_ns;
    assert!(
        s as f64 >= 0.2 * phase as f64,
        "sharing its CPU with a busy loop, the worker waited {s} ns of a {phase} ns phase"
    );
    assert!(
        a <= alone.measured_wall_ns + 50_000_000,
        "alone: {a} ns waited"
    );
    assert!(shared.totals.usage.nivcsw > 0, "the busy loop preempts it");
}

/// `--cpu` keeps a worker and its threads on that CPU: the record says so and its
/// conditions read it at both ends; a CPU the process may not use is refused by the
/// worker, and by compare and calibrate --noise before anything runs (exit 2, naming
/// the CPUs it may use).
#[test]
fn cpu_pins_the_worker_and_a_cpu_not_allowed_is_refused() {
    // Alternating CPUs: an unpinned worker would land where asked only by chance.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    for cpu in [0, 1, 0, 1, 0, 1].map(|c| c % cpus) {
        let mut w = worker_cmd(Allocator::System, "in-place", 100_000, 200);
        w.args(["--threads", "2", "--cpu", &cpu.to_string()]);
        let r = parse_record(&w.output().unwrap());
        let c = r.conditions.expect("conditions read");
        assert_eq!(c.pinned, Some(cpu));
        assert_eq!((c.cpu_start, c.cpu_end), (Some(cpu), Some(cpu)), "{c:?}");
        assert!(c.migrations.is_none_or(|m| m == 0), "{c:?}");
    }
    // calibrate --noise says the processes were kept there, in its JSON and its CPU line.
    let o = lab(&[
        "calibrate",
        "--noise",
        "--cpu",
        "0",
        "--processes",
        "4",
        "--process-time",
        "0.05",
        "--size",
        "100000",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o.stdout);
    assert_eq!(v["cpu"], 0);
    assert_eq!(v["cell"], "system scale in-place size=100000");
    let cpu_cause = v["causes"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "CPU")
        .unwrap();
    assert!(cpu_cause["untested"]
        .as_str()
        .unwrap()
        .contains("kept on CPU 0 (--cpu)"));
    let mut bad = worker_cmd(Allocator::System, "in-place", 1000, 10);
    bad.args(["--cpu", "100000"]);
    let o = bad.output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "bad input, like the worker's other options"
    );
    assert!(stderr(&o).contains("--cpu 100000"), "{}", stderr(&o));
    for args in [
        &["compare", "--size", "1000", "--cpu", "100000"][..],
        &["calibrate", "--noise", "--cpu", "100000"][..],
    ] {
        let o = lab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("--cpu 100000") && e.contains("give one of 0"),
            "{args:?}: {e}"
        );
        assert!(
            o.stdout.is_empty() && !e.contains("[1/"),
            "nothing ran: {e}"
        );
    }
}

/// `compare --jobs 2` runs two workers at once, each kept on a CPU of its own: every run
/// completes (a run's sweep of leftover children once killed its sibling), each cell gets
/// its processes, and the counts are those of one worker at a time. More jobs than CPUs
/// is refused before anything runs.
#[test]
fn jobs_run_workers_at_once_and_count_what_one_at_a_time_counts() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let too_many = (cpus + 1).to_string();
    let o = lab(&["compare", "--size", "1000", "--jobs", &too_many]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("--jobs {too_many}")) && e.contains("each job needs one of its own"),
        "{e}"
    );
    assert!(
        o.stdout.is_empty() && !e.contains("[1/"),
        "nothing ran: {e}"
    );
    if cpus < 2 {
        return;
    }
    let faults = |jobs: &str| -> Vec<(String, f64, Option<f64>)> {
        let o = lab(&[
            "compare",
            "--size",
            "200000",
            "--allocators",
            "system",
            "--variants",
            "in-place,out-of-place",
            "--processes",
            "4",
            "--no-adaptive",
            "--jobs",
            jobs,
            "--format",
            "json",
        ]);
        assert!(o.status.success(), "--jobs {jobs}: {}", stderr(&o));
        json(&o.stdout)
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                assert_eq!(r["status"], "ok", "--jobs {jobs}: {r}");
                assert_eq!(r["processes"], 4, "--jobs {jobs}: {r}");
                let cell = format!("{} {}", r["allocator"], r["variant"]);
                // Each worker counts its own huge-page faults (a per-process
                // tracepoint), so two at once have a count each, as one alone has.
                (
                    cell,
                    r["minflt_per_iter"].as_f64().unwrap(),
                    r["huge_faults_per_iter"].as_f64(),
                )
            })
            .collect()
    };
    let (alone, together) = (faults("1"), faults("2"));
    assert_eq!(alone.len(), 2);
    for ((cell, a, ha), (_, t, ht)) in alone.iter().zip(&together) {
        assert!(
            (a - t).abs() <= 0.01 * a.max(1.0),
            "{cell}: {a} alone, {t} at once"
        );
        assert_eq!(
            ha.is_some(),
            ht.is_some(),
            "{cell}: {ha:?} alone, {ht:?} at once"
        );
    }
    assert!(
        alone[1].1 > 100.0,
        "glibc's out-of-place case faults: {alone:?}"
    );
    // Every row says how its workers ran, and diff says when two sides ran differently.
    let dir = tempfile::tempdir().unwrap();
    let mut sides = Vec::new();
    for jobs in ["1", "2"] {
        let o = lab(&[
            "compare",
            "--size",
            "1000",
            "--allocators",
            "system",
            "--processes",
            "2",
            "--no-adaptive",
            "--jobs",
            jobs,
            "--format",
            "json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(json(&o.stdout).as_array().unwrap().iter().all(|r| r["jobs"]
            .as_u64()
            .map(|j| j.to_string())
            .as_deref()
            == Some(jobs)
            && r["cpu"].is_null()));
        let path = dir.path().join(format!("jobs{jobs}.json"));
        std::fs::write(&path, &o.stdout).unwrap();
        sides.push(path.to_str().unwrap().to_string());
    }
    let o = lab(&["diff", &sides[0], &sides[1]]);
    let out = unwrapped(&stdout(&o));
    assert!(
        out.contains("MEASURED DIFFERENTLY: one worker at a time in BASE, 2 workers at once (--jobs 2) in NEW"),
        "{out}"
    );
    let o = lab(&["diff", &sides[1], &sides[1]]);
    assert!(
        !stdout(&o).contains("MEASURED DIFFERENTLY"),
        "{}",
        stdout(&o)
    );
}
