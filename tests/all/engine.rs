//! The one engine on a program nobody wrote for the lab (`examples/temporaries`, the
//! founding case's out-of-place pattern through libc's malloc): exec's rounds run in a
//! shuffled order fixed by a recorded seed; a command's cliff bisects to the onset of a
//! ramp, with `{calls}` and without; what a command's probes leave behind (`setsid`
//! daemons) does not outlive them; Ctrl-C during a cliff exits 130.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// exec's rounds of `--order-seed seed` into a folder: for each round, the allocators in
/// the order they ran.
fn exec_orders(seed: &str) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("exec");
    let t = temporaries();
    let o = lab(&[
        "exec",
        "--allocators",
        "system,jemalloc,mimalloc",
        "--runs",
        "6",
        // Six rounds exactly: the orders compared are of a fixed session.
        "--no-adaptive",
        "--warmup",
        "0",
        "--counters",
        "off",
        "--order-seed",
        seed,
        "--out",
        out.to_str().unwrap(),
        "--",
        t.to_str().unwrap(),
        "--elements",
        "1000",
        "--iterations",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let record = json(&std::fs::read(out.join("exec.json")).unwrap());
    assert_eq!(record["order_seed"].as_u64().unwrap().to_string(), seed);
    let mut rounds: Vec<Vec<(u64, String)>> = vec![Vec::new(); 6];
    for a in record["allocators"].as_array().unwrap() {
        let runs = a["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 6, "{a}");
        for r in runs {
            let round = r["round"].as_u64().unwrap() as usize;
            let position = r["position"].as_u64().unwrap();
            rounds[round - 1].push((position, a["allocator"].as_str().unwrap().to_string()));
        }
    }
    rounds
        .into_iter()
        .map(|mut r| {
            r.sort();
            let positions: Vec<u64> = r.iter().map(|x| x.0).collect();
            assert_eq!(positions, [0, 1, 2], "each allocator once per round");
            r.into_iter().map(|x| x.1).collect()
        })
        .collect()
}

#[test]
fn exec_shuffles_every_round_and_the_recorded_seed_repeats_the_order() {
    let orders = exec_orders("12345");
    // Not one fixed alternation: the rounds have different orders, and the allocator
    // that runs after system is not always the same one.
    let distinct: BTreeSet<&Vec<String>> = orders.iter().collect();
    assert!(distinct.len() > 1, "{orders:?}");
    let after_system: BTreeSet<Option<&String>> = orders
        .iter()
        .map(|o| {
            let p = o.iter().position(|a| a == "system").unwrap();
            o.get(p + 1)
        })
        .collect();
    assert!(after_system.len() > 1, "{orders:?}");
    assert_eq!(
        exec_orders("12345"),
        orders,
        "the seed fixes every round's order"
    );
}

/// `alloclab cliff --allocator system` on temporaries between 7,800 and 64,000 elements
/// (below 7,728 a run's heap needs one brk fewer to grow: a change of its own, per run):
/// glibc trims its heap after the two frees from about 8,210 elements on (two buffers of
/// 64 KiB and more leave a top above the 128 KiB trim threshold), and the faults per call
/// then grow with the size, from 1 at the onset to ~220 at 64,000: a ramp.
fn program_cliff(calls: &[&str], command: &[&str]) -> Value {
    let t = temporaries();
    let mut args = vec![
        "cliff",
        "--allocator",
        "system",
        "--from",
        "7800",
        "--to",
        "64000",
        "--format",
        "json",
    ];
    args.extend_from_slice(calls);
    args.extend_from_slice(&["--", t.to_str().unwrap(), "--elements", "{size}"]);
    args.extend_from_slice(command);
    let o = lab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    json(&o.stdout)
}

#[test]
fn a_command_cliff_bisects_to_the_onset_of_a_ramp_with_and_without_calls() {
    let side = |v: &Value, s: &str, key: &str| {
        (v[s]["size"].as_u64().unwrap(), v[s][key].as_f64().unwrap())
    };
    let mut onsets = Vec::new();
    for metric in ["faults", "syscalls"] {
        let key = if metric == "faults" {
            "minflt"
        } else {
            "memory_syscalls"
        };
        let per_call = program_cliff(
            &["--calls", "10", "--metric", metric],
            &["--iterations", "{calls}"],
        );
        // Per run, the faults at the onset (one per iteration, 20 in all) are lost in
        // the start-up's run-to-run spread; the heap trims (40 brk) are not.
        let per_run = (metric == "syscalls")
            .then(|| program_cliff(&["--metric", metric], &["--iterations", "20"]));
        for v in std::iter::once(&per_call).chain(per_run.as_ref()) {
            let ((below, below_value), (above, above_value)) =
                (side(v, "below", key), side(v, "above", key));
            assert_eq!(above, below + 1, "{v}");
            // The onset, not the middle of the ramp (a midpoint between the two ends'
            // faults lands near 36,000 here, 1 fault per call apart on a slope). The
            // faults start from nothing at the onset, so where they first reach 1 per
            // call wanders by a few hundred elements with the pages' alignment.
            assert!((8_000..9_500).contains(&above), "{metric}: {v}");
            let margin = v["margin"].as_f64().unwrap();
            assert!(margin >= 0.5, "{v}");
            assert!(above_value > below_value, "{v}");
        }
        if let Some(per_run) = &per_run {
            onsets.push((
                side(&per_call, "above", key).0,
                side(per_run, "above", key).0,
            ));
        }
    }
    // The heap trims (2 brk per call) start at one exact size, the same per call and per
    // run (the program's heap is the same): the two agree within a few elements.
    let (a, b) = onsets[0];
    assert!(a.abs_diff(b) <= 8, "per call {a}, per run {b}");
}

/// Live processes whose command line is exactly `words`.
fn processes_running(words: &[&str]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .collect();
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let state = stat
                .rsplit_once(") ")?
                .1
                .split_whitespace()
                .next()?
                .to_string();
            (state != "Z"
                && args.len() == words.len()
                && args.iter().zip(words).all(|(a, w)| *a == w.as_bytes()))
            .then_some(pid)
        })
        .collect()
}

#[test]
fn what_a_command_cliff_leaves_behind_does_not_outlive_its_probes() {
    // Every run starts a daemon in a session of its own, then does the work.
    let t = temporaries();
    let marker = "4127.5";
    let script = format!(
        "setsid sleep {marker} </dev/null >/dev/null 2>&1 & exec {} --elements \"$1\" --iterations 5",
        t.display()
    );
    let o = lab(&[
        "cliff",
        "--allocator",
        "system",
        "--from",
        "4000",
        "--to",
        "64000",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--",
        "sh",
        "-c",
        &script,
        "sh",
        "{size}",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let left = processes_running(&["sleep", marker]);
    // Clean up before asserting, so that a failure leaves nothing behind either.
    for pid in &left {
        // SAFETY: kill takes plain integers.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "{} daemons outlived the cliff", left.len());
}

#[test]
fn ctrl_c_during_a_command_cliff_exits_130() {
    let marker = "3917.5";
    let driver = Command::new(driver_path())
        .args([
            "cliff",
            "--allocator",
            "system",
            "--from",
            "1000",
            "--to",
            "2000",
            "--",
            "sh",
            "-c",
            &format!("exec sleep {marker}"),
            "sh",
            "{size}",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let start = Instant::now();
    while processes_running(&["sleep", marker]).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the probe never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Ctrl-C reaches the driver's foreground group, as at a terminal.
    // SAFETY: kill has no memory-safety preconditions; the group is the driver's own.
    unsafe { libc::kill(-(driver.id() as i32), libc::SIGINT) };
    let o = driver.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
    assert!(processes_running(&["sleep", marker]).is_empty());
}

/// `compare --order blocked`: in every round each allocator's cells run one after
/// another, and in the second round of each pair every allocator's cells run in the
/// reverse order of the first (ABBA); the method line names the order. Read from the
/// progress lines, one per run, in the order the runs happened.
#[test]
fn a_blocked_compare_runs_each_allocators_cells_together_and_reverses_them_every_second_round() {
    // A line per run on stderr (not a terminal here): the order the runs happened in.
    let o = std::process::Command::new(driver_path())
        .env("ALLOCLAB_PROGRESS", "runs")
        .args([
            "compare",
            "--order",
            "blocked",
            "--allocators",
            "system,jemalloc,mimalloc",
            "--variants",
            "in-place,out-of-place,reuse",
            "--processes",
            "4",
            "--max-time",
            "1000",
            "--no-adaptive",
            "--size",
            "100000",
            "--counters",
            "off",
            "--order-seed",
            "7",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = unwrapped(&String::from_utf8_lossy(&o.stdout));
    assert!(
        stdout.contains("interleaved rounds (each allocator's cells together, reversed every second round, order seed 7)"),
        "{stdout}"
    );
    // "[3/36] jemalloc scale reuse size=100000 (round 1) (ETA 1s)" → (round, allocator, variant)
    let runs: Vec<(u32, String, String)> = stderr(&o)
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix('[')?.split_once("] ")?.1;
            let (what, round) = rest.split_once(" (round ")?;
            let round: u32 = round.split(')').next()?.parse().ok()?;
            let mut w = what.split(' ');
            let alloc = w.next()?.to_string();
            let variant = w.nth(1)?.to_string();
            Some((round, alloc, variant))
        })
        .collect();
    let rounds: BTreeSet<u32> = runs.iter().map(|r| r.0).collect();
    assert!(rounds.len() >= 4, "{runs:?}");
    let round = |r: u32| -> Vec<(String, String)> {
        runs.iter()
            .filter(|x| x.0 == r)
            .map(|x| (x.1.clone(), x.2.clone()))
            .collect()
    };
    for r in 1..=4 {
        let order = round(r);
        assert_eq!(order.len(), 9, "round {r}: {order:?}");
        let changes = order.windows(2).filter(|w| w[0].0 != w[1].0).count();
        assert_eq!(changes, 2, "round {r}, allocators not together: {order:?}");
    }
    for r in [2, 4] {
        for alloc in ["system", "jemalloc", "mimalloc"] {
            let of = |r: u32| -> Vec<String> {
                round(r)
                    .into_iter()
                    .filter(|x| x.0 == alloc)
                    .map(|x| x.1)
                    .collect()
            };
            let mut first = of(r - 1);
            first.reverse();
            assert_eq!(of(r), first, "round {r}, {alloc}");
        }
    }
}

#[test]
fn a_cliff_cut_short_by_max_time_says_between_which_sizes_the_change_lies() {
    let cliff = |max_time: &str| {
        lab(&[
            "cliff",
            "--allocator",
            "system",
            "--workload",
            "scale",
            "--variant",
            "out-of-place",
            "--from",
            "1000",
            "--to",
            "100000",
            "--min-time",
            "0.01",
            "--format",
            "json",
            "--max-time",
            max_time,
        ])
    };
    let whole = cliff("600");
    assert!(whole.status.success(), "{}", stderr(&whole));
    let v = json(&whole.stdout);
    let (below, above) = (
        v["below"]["size"].as_u64().unwrap(),
        v["above"]["size"].as_u64().unwrap(),
    );
    assert_eq!(above, below + 1, "{v}");
    // The same bisection cut short: a failure that says where it had got to, and the
    // whole one's cliff lies within it (the probes are exact counts, the path the same).
    let cut = cliff("0.3");
    assert_eq!(cut.status.code(), Some(1), "{}", stderr(&cut));
    assert!(cut.stdout.is_empty());
    let err = stderr(&cut);
    assert!(
        err.contains("--max-time 0.3 s would pass before the next probe ended"),
        "{err}"
    );
    if let Some(at) = err.find("the bisection stopped after") {
        let size = |after: &str| -> u64 {
            let from = err[at..].find(after).unwrap() + at + after.len();
            let words = &err[from..];
            words[..words.find(" elements").unwrap()]
                .replace(',', "")
                .parse()
                .unwrap()
        };
        let (lo, hi) = (size(" between "), size(") and "));
        assert!(
            lo <= below && above <= hi && hi - lo > 1,
            "{lo}..{hi} against {below}..{above}: {err}"
        );
    }
}
