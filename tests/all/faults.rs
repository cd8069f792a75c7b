//! Hostile inputs and faults, driven through the real binaries: no panic on bytes that
//! are not UTF-8, every refusal before any worker starts (nothing written, nothing run),
//! no worker or command outliving a killed driver, no descendant outliving its run, and
//! compare's finished rows kept after Ctrl-C.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use alloclab::export::results::ResultsDir;
use alloclab::model::spec::Allocator;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const TINY: &str = r#"
description = "tiny"
workloads = ["scale"]
variants = ["in-place", "out-of-place"]
allocators = ["system"]
sizes = [2000]

[budget]
min_time = 0
min_iters = 25
max_iters = 25
warmup_time = 0
warmup_iters = 1
"#;

fn experiment(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("tiny.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A copy of the driver beside worker scripts that leave `marker` when anything starts
/// them: a refusal made before any worker starts leaves no marker.
fn lab_that_marks_starts(marker: &Path) -> tempfile::TempDir {
    let lab = tempfile::tempdir().unwrap();
    std::fs::copy(driver_path(), lab.path().join("alloclab")).unwrap();
    for a in [Allocator::System, Allocator::Jemalloc, Allocator::Mimalloc] {
        let script = lab.path().join(a.worker_binary());
        std::fs::write(
            &script,
            format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    lab
}

/// Processes whose parent is `parent` and whose command name is `comm`, not zombies.
fn live_children(parent: u32, comm: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (head, rest) = stat.rsplit_once(") ")?;
            let mut f = rest.split_whitespace();
            let (state, ppid) = (f.next()?, f.next()?);
            (head.ends_with(&format!("({comm}")) && state != "Z" && ppid == parent.to_string())
                .then_some(pid)
        })
        .collect()
}

/// Whether `pid` is still a live process (a zombie is dead, only not yet reaped).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Polls `ready` every 10 ms; panics with `what` if it is not true within a minute.
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < Duration::from_secs(60), "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn arguments_and_paths_that_are_not_utf8_do_not_panic() {
    let o = Command::new(driver_path())
        .args([
            "exec",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--allocators",
            "system",
        ])
        .arg("--")
        .arg("echo")
        .arg(OsStr::from_bytes(b"x\xff"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path(), TINY);
    let out = dir.path().join(OsStr::from_bytes(b"out\xfe"));
    let o = Command::new(driver_path())
        .args(["run", "--no-calibration", "--quick", "--out"])
        .arg(&out)
        .arg(&exp)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let plan = std::fs::read_to_string(out.join("tiny/plan.json")).unwrap();
    assert!(
        plan.contains("out\u{fffd}"),
        "the command line is kept, lossily"
    );
    assert!(out.join("tiny/summary.csv").is_file());
}

#[test]
fn an_oversized_run_set_is_refused_with_its_size_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(
        dir.path(),
        r#"
description = "too big"
workloads = ["scale", "chain"]
variants = ["in-place", "out-of-place"]
allocators = ["system", "jemalloc", "mimalloc"]
sizes = { from = 32, to = "2^16", per_octave = 64 }
threads = [1, 2]
"#,
    );
    let out = dir.path().join("res");
    let o = Command::new(driver_path())
        .args(["run", "--no-calibration", "--out"])
        .arg(&out)
        .arg(&exp)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("runs (") && err.contains("--max-runs 10,000") && err.contains("at least"),
        "{err}"
    );
    assert!(!err.contains("calibrating"), "{err}");
    assert!(!out.exists(), "nothing is written for a refused run set");
}

#[test]
fn refusals_come_before_any_worker_starts() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("a-worker-started");
    let lab = lab_that_marks_starts(&marker);
    let exp = experiment(dir.path(), TINY);
    let run = |out: &Path, extra: &[&str]| {
        let o = Command::new(lab.path().join("alloclab"))
            .args(["run", "--no-calibration", "--counters", "off", "--out"])
            .arg(out)
            .args(extra)
            .arg(&exp)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(!marker.exists(), "a worker ran before the refusal");
        assert!(!stderr(&o).contains("calibrating"), "{}", stderr(&o));
        stderr(&o)
    };

    // A folder another alloclab is writing.
    let out = dir.path().join("locked");
    let held = ResultsDir::open(&out.join("tiny"), alloclab::export::folder::Claim::Own).unwrap();
    assert!(run(&out, &[]).contains("being written by another alloclab run"));
    drop(held);
    assert!(!out.join("tiny/plan.json").exists());

    // --out is a file.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let err = run(&file, &[]);
    assert!(err.contains("a-file"), "{err}");

    // A folder of exec results.
    let out = dir.path().join("exec-results");
    std::fs::create_dir_all(out.join("tiny")).unwrap();
    std::fs::write(out.join("tiny/exec.json"), "{}").unwrap();
    assert!(run(&out, &[]).contains("results of `alloclab exec`"));
    assert!(!out.join("tiny/plan.json").exists());

    // A knob that would make every run fail to allocate.
    let big = experiment(
        dir.path(),
        &TINY.replace(r#"["system"]"#, r#"["system:top_pad=99999999G"]"#),
    );
    assert_eq!(big, exp);
    let err = run(&dir.path().join("padded"), &[]);
    assert!(
        err.contains("top_pad=") && err.contains("MemAvailable"),
        "{err}"
    );
}

#[test]
fn exec_refuses_a_folder_of_run_results() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plan.json"), "{}").unwrap();
    let o = Command::new(driver_path())
        .args(["exec", "--runs", "1", "--allocators", "system", "--out"])
        .arg(dir.path())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("results of `alloclab run`"));
    assert!(!dir.path().join("exec.json").exists());
}

/// Starts `cmd`, waits for its child named `comm`, kills the driver with SIGKILL and
/// checks that the child dies too.
fn child_dies_with_the_driver(mut cmd: Command, comm: &str) {
    let mut driver = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Vec::new();
    wait_for(&format!("the driver never started {comm}"), || {
        child = live_children(driver.id(), comm);
        !child.is_empty()
    });
    driver.kill().unwrap(); // SIGKILL
    driver.wait().unwrap();
    // The child would sleep for minutes on its own: dead within the minute means killed.
    let start = Instant::now();
    while alive(child[0]) {
        if start.elapsed() > Duration::from_secs(60) {
            // SAFETY: kill takes plain integers; the orphan is cleaned up before failing.
            unsafe { libc::kill(child[0] as i32, libc::SIGKILL) };
            panic!("{comm} ({}) outlived the killed driver", child[0]);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_killed_driver_leaves_no_worker_or_command_alive() {
    // A command run by exec.
    let mut exec = Command::new(driver_path());
    exec.args([
        "exec",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--allocators",
        "system",
    ])
    .args(["--counters", "off", "--", "sleep", "600"]);
    child_dies_with_the_driver(exec, "sleep");

    // A worker of compare (here a script that becomes a long sleep).
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(driver_path(), dir.path().join("alloclab")).unwrap();
    let worker = dir.path().join("alloclab-system");
    std::fs::write(&worker, "#!/bin/sh\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&worker, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut compare = Command::new(dir.path().join("alloclab"));
    compare.args(["compare", "--allocators", "system", "--counters", "off"]);
    child_dies_with_the_driver(compare, "sleep");
}

#[test]
fn a_descendant_that_leaves_the_session_does_not_outlive_its_run() {
    for counters in ["off", "ptrace"] {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!(
            "setsid sleep 31 & echo $! > '{}'; sleep 0.3",
            pid_file.display()
        );
        let o = Command::new(driver_path())
            .args([
                "exec",
                "--runs",
                "1",
                "--warmup",
                "0",
                "--allocators",
                "system",
            ])
            .args(["--counters", counters, "--", "sh", "-c", &script])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{counters}: {}", stderr(&o));
        let pid: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            !alive(pid),
            "{counters}: the setsid'd sleep ({pid}) outlived its run"
        );
    }
}

#[test]
fn compare_shows_the_finished_rows_after_ctrl_c() {
    // The real system worker, and a mimalloc "worker" that hangs until Ctrl-C.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(driver_path(), dir.path().join("alloclab")).unwrap();
    std::fs::copy(
        worker_path(Allocator::System),
        dir.path().join("alloclab-system"),
    )
    .unwrap();
    let hang = dir.path().join("alloclab-mimalloc");
    std::fs::write(&hang, "#!/bin/sh\nexec sleep 30\n").unwrap();
    std::fs::set_permissions(&hang, std::fs::Permissions::from_mode(0o755)).unwrap();
    // An order seed whose first round runs both system cells before the hanging ones
    // (cells 0, 1 are system's, 2, 3 mimalloc's; the lab shuffles with SplitMix).
    let seed = (0u64..)
        .find(|&seed| {
            let mut order = [0, 1, 2, 3];
            alloclab::analysis::stats::SplitMix(seed).shuffle(&mut order);
            order[0] < 2 && order[1] < 2
        })
        .unwrap()
        .to_string();
    let driver = Command::new(dir.path().join("alloclab"))
        .args([
            "compare",
            "--size",
            "2000",
            "--allocators",
            "system,mimalloc",
        ])
        .args(["--processes", "2", "--order-seed", &seed])
        .args(["--variants", "in-place,out-of-place", "--counters", "off"])
        .args(["--min-time", "0", "--min-iters", "25", "--max-iters", "25"])
        .args(["--warmup-time", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_for("the hanging worker never started", || {
        !live_children(driver.id(), "sleep").is_empty()
    });
    // Ctrl-C reaches the whole foreground group, as at a terminal.
    // SAFETY: kill has no memory-safety preconditions; the group is the driver's own.
    unsafe { libc::kill(-(driver.id() as i32), libc::SIGINT) };
    let o = driver.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let out = unwrapped(&String::from_utf8_lossy(&o.stdout));
    assert!(
        out.starts_with("incomplete: interrupted by SIGINT after 2 of 8 runs; of the 2 processes planned per cell, 2 cells have 1 process, 2 have none; the rows are from the finished runs"),
        "{out}"
    );
    assert!(out.contains("scale, 2,000 elements"), "{out}");
    let rows: Vec<&str> = table_rows(&out, &["system", "mimalloc"]);
    assert_eq!(rows.len(), 2, "{out}");
    assert!(rows.iter().all(|r| r.starts_with("system ")), "{out}");
}

#[test]
fn messages_say_what_happened_in_words() {
    // The memory refusal names the experiment file and counts every thread.
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(
        dir.path(),
        &TINY
            .replace("sizes = [2000]", "sizes = [\"2^33\"]\nthreads = [8]")
            .replace(
                r#"variants = ["in-place", "out-of-place"]"#,
                r#"variants = ["in-place"]"#,
            ),
    );
    let o = Command::new(driver_path())
        .args(["run", "--no-calibration", "--out"])
        .arg(dir.path().join("res"))
        .arg(&exp)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("tiny.toml") && err.contains("at size 8589934592 with 8 threads"),
        "{err}"
    );

    // A command killed by a signal: "the command was killed by signal 11 (SIGSEGV)".
    let o = Command::new(driver_path())
        .args([
            "exec",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--allocators",
            "system",
        ])
        .args(["--", "sh", "-c", "kill -SEGV $$"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(
        all.contains("the command was killed by signal 11 (SIGSEGV)"),
        "{all}"
    );

    // A failing command's row ends with what it said on stderr.
    let o = Command::new(driver_path())
        .args([
            "exec",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--allocators",
            "system",
        ])
        .args([
            "--",
            "sh",
            "-c",
            "echo one >&2; echo 'no such file: data.csv' >&2; exit 2",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("exited with status 2 (run 1/1); its stderr ended with: one / no such file: data.csv (all its output: --show-output)"),
        "{out}"
    );
}
