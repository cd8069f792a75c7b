//! `alloclab run` and `alloclab report` end to end on a tiny experiment: every file is
//! written and parses back, resume keeps completed runs, a second writer is refused,
//! failures and interruptions lose nothing, and a report rebuilds from the runs alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use alloclab::export::hdr;
use alloclab::export::results::ResultsDir;
use alloclab::model::record::RunRecord;
use alloclab::model::spec::Allocator;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TINY: &str = r#"
description = "tiny"
workloads = ["scale"]
variants = ["in-place", "out-of-place"]
allocators = ["system", "mimalloc"]
sizes = [2000, 4000]

[budget]
min_time = 0
min_iters = 25
max_iters = 25
warmup_time = 0
warmup_iters = 1
"#;

fn setup(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("tiny.toml");
    std::fs::write(&exp, text).unwrap();
    (dir, exp)
}

fn run(driver: &Path, args: &[&str]) -> Output {
    Command::new(driver).args(args).output().unwrap()
}

fn text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn run_writes_every_file_and_they_parse_back() {
    let (dir, exp) = setup(TINY);
    let out = dir.path().join("res");
    // The one run of the tests that measures the observer first (the others skip it):
    // its six rounds and files, at 0.02 s a process (0.15 s by default: 7 s of the test).
    let o = Command::new(driver_path())
        .env("ALLOCLAB_CALIBRATION_MIN_TIME", "0.02")
        .args(["run", "--out", out.to_str().unwrap(), exp.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let res = out.join("tiny");
    let calibration: alloclab::analysis::calibration::Calibration =
        serde_json::from_str(&text(&res.join("calibration.json"))).unwrap();
    assert_eq!(calibration.rounds, 6);
    assert_eq!(calibration.min_time_s, Some(0.02));
    assert!(
        text(&res.join("REPORT.md")).contains(
            "### Observer\n\nMeasured before the runs (`alloclab calibrate`, 6 round(s) of 0.02 s a process)"
        ),
        "the report says what observing cost"
    );

    let summary = text(&res.join("summary.csv"));
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 1 + 8);
    let header: Vec<&str> = lines[0].split(',').collect();
    let id_col = header.iter().position(|h| *h == "run_id").unwrap();
    for line in &lines[1..] {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), header.len());
        let id = cells[id_col];
        let record =
            RunRecord::from_json(&text(&res.join("runs").join(format!("{id}.json")))).unwrap();
        assert_eq!(record.iterations, 25);
        let h = record.histogram.decode().unwrap();

        // CSV form: monotonic, total count = iterations, values = the in-memory histogram's.
        let rows =
            hdr::parse_csv(&text(&res.join("histograms").join(format!("{id}.us.csv")))).unwrap();
        assert!(rows
            .windows(2)
            .all(|w| w[0].value <= w[1].value && w[0].quantile <= w[1].quantile));
        assert_eq!(rows.last().unwrap().total_count, record.samples);
        assert_eq!(record.samples, 25u64.div_ceil(record.batch));
        assert_eq!(rows.last().unwrap().quantile, 1.0);
        let expected = hdr::rows(&h, 1.0);
        assert_eq!(rows.len(), expected.len());
        for (r, e) in rows.iter().zip(&expected) {
            assert_eq!(
                (r.value * 1000.0).round(),
                e.value,
                "µs values are the ns histogram / 1000"
            );
            assert_eq!(r.total_count, e.total_count);
        }
        // Text form: its footer agrees.
        let hgrm = text(&res.join("histograms").join(format!("{id}.us.hgrm")));
        assert!(
            hgrm.contains(&format!("Total count    = {:>12}]", record.samples)),
            "{hgrm}"
        );
        assert!(
            hgrm.contains(&format!("#[Max     = {:>12.3}", h.max() as f64 / 1000.0)),
            "{hgrm}"
        );
    }

    let env: serde_json::Value = serde_json::from_str(&text(&res.join("env.json"))).unwrap();
    assert!(env["allocators"]["system"]["version"]
        .as_str()
        .unwrap()
        .starts_with("glibc"));
    assert!(env["allocators"]["mimalloc"]["version"]
        .as_str()
        .unwrap()
        .starts_with("mimalloc"));
    assert!(env["thp_enabled"].is_string() && env["commit"].is_string());

    let report = text(&res.join("REPORT.md"));
    assert!(
        report.contains("## Environment")
            && report.contains("## Findings")
            && report.contains("## Summary")
    );
    assert!(report.contains("out-of-place vs in-place: "), "{report}");
    let mut plots = 0;
    for link in report.split("](plots/").skip(1) {
        let name = &link[..link.find(')').unwrap()];
        let svg = text(&res.join("plots").join(name));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        plots += 1;
    }
    assert!(
        plots >= 5,
        "median, throughput, faults, syscalls against size and latency curves: {plots}"
    );
    // No temporary files left behind.
    for sub in ["", "runs", "histograms", "plots"] {
        for e in std::fs::read_dir(res.join(sub)).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            assert!(!name.contains(".tmp."), "left over: {name}");
        }
    }

    // --resume keeps every completed run as it is.
    let before = text(&res.join("runs/scale-in-place-system-n2000-t1.json"));
    let o = run(
        &driver_path(),
        &[
            "run",
            "--no-calibration",
            "--resume",
            "--out",
            out.to_str().unwrap(),
            exp.to_str().unwrap(),
        ],
    );
    assert!(o.status.success());
    assert!(
        unwrapped(&String::from_utf8_lossy(&o.stdout)).contains("8 kept from before"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        text(&res.join("runs/scale-in-place-system-n2000-t1.json")),
        before
    );

    // A report rebuilds everything from plan.json and runs/ alone.
    for gone in ["summary.csv", "REPORT.md", "env.json"] {
        std::fs::remove_file(res.join(gone)).unwrap();
    }
    std::fs::remove_dir_all(res.join("plots")).unwrap();
    std::fs::remove_dir_all(res.join("histograms")).unwrap();
    let o = run(&driver_path(), &["report", res.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(text(&res.join("summary.csv")), summary);
    assert!(res.join("REPORT.md").is_file() && res.join("env.json").is_file());
    assert!(res
        .join("histograms/scale-out-of-place-mimalloc-n4000-t1.us.hgrm")
        .is_file());

    // While another writer holds the folder, a run is refused and changes nothing.
    let held = ResultsDir::open(&res, alloclab::export::folder::Claim::Own).unwrap();
    let o = run(
        &driver_path(),
        &[
            "run",
            "--no-calibration",
            "--out",
            out.to_str().unwrap(),
            exp.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("being written by another alloclab run"));
    drop(held);
    assert_eq!(text(&res.join("summary.csv")), summary);
}

#[test]
fn bad_experiment_files_name_the_line_and_write_nothing() {
    let (dir, exp) =
        setup(&TINY.replace("sizes = [2000, 4000]", "sizes = [2000, 4000]\nsizez = [1]"));
    let out = dir.path().join("res");
    let o = run(
        &driver_path(),
        &[
            "run",
            "--no-calibration",
            "--out",
            out.to_str().unwrap(),
            exp.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("tiny.toml:7:1") && err.contains("sizez"),
        "{err}"
    );
    assert!(!out.exists(), "nothing may be written for a bad experiment");

    let (dir, exp) = setup(&TINY.replace(r#""mimalloc"]"#, r#""hoard"]"#));
    let o = run(
        &driver_path(),
        &[
            "run",
            "--no-calibration",
            "--out",
            dir.path().join("r").to_str().unwrap(),
            exp.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("tiny.toml:5:") && err.contains("hoard") && err.contains("jemalloc"),
        "{err}"
    );

    // A file name that would name a folder outside --out, a hidden one or the index page
    // is refused, and nothing beside --out is touched (`...toml`'s stem is `..`).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("REPORT.md"), "mine").unwrap();
    for name in [
        "...toml",
        ".hidden.toml",
        "index.html.toml",
        "folder.json.toml",
        "é.toml",
    ] {
        let exp = dir.path().join(name);
        std::fs::write(&exp, TINY).unwrap();
        let out = dir.path().join("out");
        let o = run(
            &driver_path(),
            &[
                "run",
                "--no-calibration",
                "--out",
                out.to_str().unwrap(),
                exp.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("the file name must start with an ASCII letter or digit"),
            "{err}"
        );
        assert!(!out.exists(), "{name}: nothing is written");
    }
    assert_eq!(text(&dir.path().join("REPORT.md")), "mine");
    // Two files of one name in two folders: both named.
    for sub in ["a", "b"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        std::fs::write(dir.path().join(sub).join("same.toml"), TINY).unwrap();
    }
    let (a, b) = (
        dir.path().join("a/same.toml"),
        dir.path().join("b/same.toml"),
    );
    let o = run(
        &driver_path(),
        &[
            "run",
            "--no-calibration",
            "--out",
            dir.path().join("o2").to_str().unwrap(),
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(a.to_str().unwrap())
            && err.contains(b.to_str().unwrap())
            && err.contains("'same'"),
        "{err}"
    );
}

/// An experiment whose idle phase alone takes the whole --timeout is refused before
/// anything runs, naming both and what to change (issue 71: every worker was killed, and
/// the time-out's hint said nothing of the idle phase); a worker killed at the timeout of
/// an experiment with an idle phase is told of it.
#[test]
fn an_idle_time_of_the_whole_timeout_is_refused_and_a_time_out_names_it() {
    let idle = |text: &str, secs: &str| {
        text.replace(
            "warmup_iters = 1",
            &format!("warmup_iters = 1\nidle_time = {secs}"),
        )
    };
    let (dir, exp) = setup(&idle(TINY, "5"));
    let out = dir.path().join("res");
    for timeout in ["5", "2"] {
        let o = run(
            &driver_path(),
            &[
                "run",
                "--no-calibration",
                "--timeout",
                timeout,
                "--out",
                out.to_str().unwrap(),
                exp.to_str().unwrap(),
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "tiny.toml: budget.idle_time is 5 s, and --timeout {timeout} s would kill every worker"
            )) && err.contains("e.g. --timeout 305")
                && err.contains(&format!("lower budget.idle_time well below {timeout} s")),
            "{err}"
        );
        assert!(
            !out.exists(),
            "--timeout {timeout}: a results folder was made"
        );
    }
    // Below the timeout it runs; a worker killed at the timeout is told of the idle phase.
    let lab = lab_with_mimalloc_script("exec sleep 30");
    let one = TINY
        .replace(r#"["in-place", "out-of-place"]"#, r#"["in-place"]"#)
        .replace(r#"["system", "mimalloc"]"#, r#"["mimalloc"]"#)
        .replace("[2000, 4000]", "[2000]");
    let (dir, exp) = setup(&idle(&one, "0.5"));
    let out = dir.path().join("res");
    let o = run(
        &lab.path().join("alloclab"),
        &[
            "run",
            "--no-calibration",
            "--timeout",
            "1",
            "--out",
            out.to_str().unwrap(),
            exp.to_str().unwrap(),
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let failed = text(&out.join("tiny/runs/scale-in-place-mimalloc-n2000-t1.failed.json"));
    assert!(
        failed.contains("timed out after 1 s and was killed (raise --timeout: each worker also idles 0.5 s after its measured phase (budget.idle_time of ")
            && failed.contains("lower the experiment file's budget.idle_time"),
        "{failed}"
    );
}

/// A copy of the driver beside the real system worker and a scripted mimalloc worker.
fn lab_with_mimalloc_script(script: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(driver_path(), dir.path().join("alloclab")).unwrap();
    std::fs::copy(
        worker_path(Allocator::System),
        dir.path().join("alloclab-system"),
    )
    .unwrap();
    let fake = dir.path().join("alloclab-mimalloc");
    std::fs::write(&fake, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[test]
fn a_failing_worker_loses_no_completed_run() {
    let lab = lab_with_mimalloc_script("kill -9 $$");
    let (dir, exp) = setup(TINY);
    let out = dir.path().join("res");
    let o = run(
        &lab.path().join("alloclab"),
        &[
            "run",
            "--no-calibration",
            "--out",
            out.to_str().unwrap(),
            exp.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let res = out.join("tiny");
    assert!(res
        .join("runs/scale-out-of-place-system-n4000-t1.json")
        .is_file());
    assert!(res
        .join("runs/scale-out-of-place-mimalloc-n4000-t1.failed.json")
        .is_file());
    let report = text(&res.join("REPORT.md"));
    assert!(report.contains("killed by signal 9 (SIGKILL)"), "{report}");
    let summary = text(&res.join("summary.csv"));
    assert_eq!(
        summary.lines().filter(|l| l.contains(",failed,")).count(),
        4,
        "{summary}"
    );
}

#[test]
fn an_interrupted_run_keeps_what_it_finished() {
    // The mimalloc "worker" hangs until Ctrl-C reaches the process group.
    let lab = lab_with_mimalloc_script("exec sleep 30");
    // Seed 7 orders the runs system, system, system, mimalloc, … (the order is shuffled
    // from the experiment's seed).
    let (dir, exp) = setup(&format!("seed = 7\n{TINY}"));
    let out = dir.path().join("res");
    let child = Command::new(lab.path().join("alloclab"))
        .args([
            "run",
            "--no-calibration",
            "--out",
            out.to_str().unwrap(),
            exp.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    // Wait until the driver has started the hanging worker (a `sleep` whose parent is the
    // driver; workers run in process groups of their own), then press Ctrl-C for the
    // driver's group, as a terminal does: the driver kills the worker's group.
    let in_group_sleeping = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid …
            let Some((_, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            stat.contains("(sleep)")
                && rest.split_whitespace().nth(1) == Some(&child.id().to_string())
        })
    };
    let waiting = std::time::Instant::now();
    while !in_group_sleeping() {
        assert!(
            waiting.elapsed().as_secs() < 60,
            "the hanging worker never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: kill has no memory-safety preconditions; the group is the child's own.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The runs before the first mimalloc one (in the experiment's shuffled order) are
    // kept, each a whole record; the interrupted one is not a failure.
    let res = out.join("tiny");
    let kept: Vec<PathBuf> = std::fs::read_dir(res.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 3, "seed 7 puts three system runs first");
    for p in &kept {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            !name.ends_with(".failed.json"),
            "an interrupted run is not a failure: {name}"
        );
        assert!(name.contains("-system-"), "{name}");
        assert!(RunRecord::from_json(&text(p)).is_ok(), "{name}");
    }
    let report = text(&res.join("REPORT.md"));
    assert!(
        report.contains(&format!(
            "INCOMPLETE:** this run did not finish ({} of 8 planned worker processes have results",
            kept.len()
        )),
        "{} kept: {report}",
        kept.len()
    );
    // The console line (on stdout, with the answer) and folder.json say so too.
    let said = unwrapped(&String::from_utf8_lossy(&o.stdout));
    assert!(
        said.contains("INCOMPLETE: 3 of 8 planned processes ran; missing: 5 of the 8 planned worker processes"),
        "{said}"
    );
    let status: serde_json::Value = serde_json::from_str(&text(&res.join("folder.json"))).unwrap();
    assert_eq!(status["complete"], false);
    assert_eq!(
        status["missing"][0], "5 of the 8 planned worker processes (5 cells have none)",
        "{status}"
    );
    // A damaged plan.json is bad input for report (2), not a failed run.
    std::fs::write(res.join("plan.json"), "{ not json").unwrap();
    let o = run(&driver_path(), &["report", res.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("plan.json"));
}

#[test]
fn a_sweep_with_find_cliffs_reports_exact_sizes() {
    let (dir, exp) = setup(
        r#"
description = "cliff"
workloads = ["scale"]
variants = ["out-of-place"]
allocators = ["system"]
sizes = [2000, 40000]
find_cliffs = true

[budget]
min_time = 0
min_iters = 10
max_iters = 10
warmup_time = 0
warmup_iters = 3
"#,
    );
    let out = dir.path().join("res");
    let o = run(
        &driver_path(),
        &[
            "run",
            "--no-calibration",
            "--out",
            out.to_str().unwrap(),
            exp.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let res = out.join("tiny");
    let cliffs: Vec<alloclab::analysis::cliff::FoundCliff> =
        serde_json::from_str(&text(&res.join("cliffs.json"))).unwrap();
    assert!(
        !cliffs.is_empty(),
        "glibc's out-of-place fault storm starts between 2,000 and 40,000 elements"
    );
    for c in &cliffs {
        assert_eq!(c.above_size, c.below_size + 1, "{c:?}");
        assert!(c.below_size >= 2000 && c.above_size <= 40000);
    }
    let report = text(&res.join("REPORT.md"));
    assert!(report.contains("**Exact cliffs**"), "{report}");
    // Every change the sweep shows is accounted for in cliffs.json, bisected (with the
    // sweep's jump as its evidence) or with the reason it could not be — and said once:
    // a jump that became a cliff is not listed apart.
    let changes = report
        .lines()
        .filter(|l| {
            l.starts_with("- ")
                && (l.contains(" (the sweep: ") || l.contains(" in the sweep — not bisected"))
        })
        .count();
    assert!(changes > 0, "{report}");
    assert_eq!(cliffs.len(), changes, "{report}");
    assert!(
        !report.contains(" per iteration jump from "),
        "a bisected jump is said with its cliff only: {report}"
    );
    assert!(cliffs
        .iter()
        .all(|c| c.unresolved.is_none() || c.probes == 0));
}

/// Runs the experiment `toml` with `run --confirm` and returns its cliffs and REPORT.md.
fn run_confirmed(toml: &str) -> (Vec<alloclab::analysis::cliff::FoundCliff>, String) {
    let (dir, exp) = setup(toml);
    let out = dir.path().join("res");
    let o = run(
        &driver_path(),
        &[
            "run",
            "--no-calibration",
            "--confirm",
            "--out",
            out.to_str().unwrap(),
            exp.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cliffs = serde_json::from_str(&text(&out.join("tiny").join("cliffs.json"))).unwrap();
    (cliffs, text(&out.join("tiny").join("REPORT.md")))
}

/// `run --confirm`: jemalloc's purge cliff is bisected, matched to its oversize_threshold
/// (8 MiB: a request whose size class with its page of padding reaches it), and moving
/// the threshold to 16 MiB moves the cliff to where the same rule puts it.
#[test]
fn a_confirmed_cliff_moves_where_its_threshold_rule_puts_it() {
    let (cliffs, report) = run_confirmed(
        r#"
description = "jemalloc's purge cliff"
workloads = ["scale"]
variants = ["in-place"]
allocators = ["jemalloc"]
sizes = [524288, 1048576]
find_cliffs = true

[budget]
min_time = 0.01
min_iters = 5
warmup_time = 0.005
warmup_iters = 2
"#,
    );
    let faults = cliffs
        .iter()
        .find(|c| c.metric == "minor faults")
        .expect("a fault cliff");
    // The rule: 7 MiB - 4 KiB + 1 bytes of request is the first in the 8 MiB class.
    let predicted = (7u64 * 1024 * 1024 - 4096 + 1).div_ceil(8);
    assert!(
        faults.below_size < predicted && predicted <= faults.above_size,
        "{faults:?}"
    );
    let c = faults.confirmation.as_ref().expect("a confirmation");
    assert_eq!(c.spec, "jemalloc:oversize_threshold=16M");
    assert_eq!(c.predicted, (14u64 * 1024 * 1024 - 4096 + 1).div_ceil(8));
    let (b, a) = (c.below.unwrap(), c.above.unwrap());
    assert!(b < c.predicted && c.predicted <= a, "{c:?}");
    assert_eq!(c.verdict, "confirmed");
    assert!(
        report.contains("at jemalloc's oversize_threshold (8.0 MiB)"),
        "{report}"
    );
    assert!(report.contains(": confirmed"), "{report}");
}

/// glibc's out-of-place storm starts inside M_TOP_PAD's window (two buffers no longer fit
/// in the top the last trim left: 8,192 to 8,448 elements), and with the pad doubled
/// (its trim threshold at the pad, the buffers kept on the heap) inside the doubled
/// window: the lab names the rule and moves it.
#[test]
fn the_storms_onset_moves_with_m_top_pad() {
    let (cliffs, report) = run_confirmed(
        r#"
description = "glibc's out-of-place storm"
workloads = ["scale"]
variants = ["out-of-place"]
allocators = ["system"]
sizes = [6000, 12000]
find_cliffs = true

[budget]
min_time = 0.01
min_iters = 5
warmup_time = 0.005
warmup_iters = 2
"#,
    );
    let calls = cliffs
        .iter()
        .find(|c| c.metric == "memory syscalls")
        .expect("a syscall cliff");
    assert!((8_192..=8_448).contains(&calls.above_size), "{calls:?}");
    let c = calls.confirmation.as_ref().expect("a confirmation");
    assert_eq!(
        c.spec,
        "system:mmap_threshold=1M,top_pad=256K,trim_threshold=256K"
    );
    assert_eq!(
        (c.predicted, c.predicted_to),
        (16_384, Some(16_640)),
        "{c:?}"
    );
    assert!((16_384..=16_640).contains(&c.above.unwrap()), "{c:?}");
    assert_eq!(c.verdict, "confirmed");
    assert!(
        report.contains(
            "at glibc's M_TOP_PAD (128.0 KiB default), predicted from 8,192 to 8,448 elements"
        ),
        "{report}"
    );
}

/// `processes = 3`: every cell in three worker processes, one file per process; the
/// summary row is the median over them with an interval, the histogram files hold the
/// merged samples (the sum of the parts), REPORT.md's findings carry intervals, resume
/// keeps every process and `report` rebuilds the same summary.
#[test]
fn replicated_processes_merge_into_cells_with_intervals() {
    let exp_text = TINY
        .replace("sizes = [2000, 4000]", "sizes = [4000]")
        .replace("warmup_iters = 1", "warmup_iters = 1\nprocesses = 3");
    let (dir, exp) = setup(&exp_text);
    let out = dir.path().join("res");
    let args = [
        "run",
        "--no-calibration",
        "--out",
        out.to_str().unwrap(),
        exp.to_str().unwrap(),
    ];
    let o = run(&driver_path(), &args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // The result and the answer on stdout (`run … > out.txt` keeps them), not stderr.
    let stdout = unwrapped(&String::from_utf8_lossy(&o.stdout));
    assert!(
        stdout.contains("4 of 4 cells ok (3 processes each)"),
        "{stdout}"
    );
    assert!(!stderr.contains("cells ok"), "{stderr}");
    let md = text(&out.join("tiny").join("REPORT.md"));
    let answer: Vec<&str> = md
        .split("## Answer\n\n")
        .nth(1)
        .map(|a| a.lines().take_while(|l| l.starts_with("- ")).collect())
        .unwrap_or_default();
    for a in &answer {
        assert!(stdout.contains(&a[2..]), "{a} not on stdout: {stdout}");
        // No noise called a finding: a ratio without a verdict is an answer item only
        // where the exact counts differ.
        assert!(
            !(a.contains("no verdict") && a.contains("the counts do not explain")),
            "{a}"
        );
    }
    let res = out.join("tiny");
    let summary = text(&res.join("summary.csv"));
    let mut reader = csv::Reader::from_reader(summary.as_bytes());
    let rows: Vec<std::collections::HashMap<String, String>> =
        reader.deserialize().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 4);
    for row in &rows {
        let id = &row["run_id"];
        let records: Vec<RunRecord> = (1..=3)
            .map(|k| {
                RunRecord::from_json(&text(&res.join("runs").join(format!("{id}.p{k}.json"))))
                    .unwrap()
            })
            .collect();
        assert!(!res.join("runs").join(format!("{id}.json")).exists());
        assert_eq!(row["processes"], "3");
        // The row's p50 is the median of the processes' p50s, inside its interval.
        let mut p50s: Vec<u64> = records.iter().map(|r| r.p50_ns).collect();
        p50s.sort_unstable();
        let p50: u64 = row["p50_ns"].parse().unwrap();
        assert_eq!(p50, p50s[1], "{row:?}");
        let (lo, hi): (u64, u64) = (
            row["p50_ci_low_ns"].parse().unwrap(),
            row["p50_ci_high_ns"].parse().unwrap(),
        );
        assert!(lo <= p50 && p50 <= hi, "{row:?}");
        // The histogram files hold every process's samples: the sum of the parts.
        let mut sum = records[0].histogram.decode().unwrap();
        for r in &records[1..] {
            sum.add(r.histogram.decode().unwrap()).unwrap();
        }
        let file =
            hdr::parse_csv(&text(&res.join("histograms").join(format!("{id}.us.csv")))).unwrap();
        let samples: u64 = records.iter().map(|r| r.samples).sum();
        assert_eq!(file.last().unwrap().total_count, samples);
        let expected = hdr::rows(&sum, 1.0);
        assert_eq!(file.len(), expected.len());
        for (r, e) in file.iter().zip(&expected) {
            assert_eq!(
                ((r.value * 1000.0).round(), r.total_count),
                (e.value, e.total_count)
            );
        }
    }
    let report = text(&res.join("REPORT.md"));
    assert!(
        report.contains("each cell in 3 worker processes"),
        "{report}"
    );
    assert!(report.contains("out-of-place vs in-place: "), "{report}");

    // Resume keeps all twelve processes; report rebuilds the same summary.
    let o = run(&driver_path(), &[&args[..], &["--resume"]].concat());
    let stdout = unwrapped(&String::from_utf8_lossy(&o.stdout));
    assert!(stdout.contains("12 kept from before"), "{stdout}");
    assert_eq!(text(&res.join("summary.csv")), summary);
    let o = run(&driver_path(), &["report", res.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(text(&res.join("summary.csv")), summary);
}

#[test]
fn a_folder_holds_one_measurement_and_says_whether_it_finished() {
    let (dir, exp) = setup(TINY);
    let out = dir.path().join("res");
    let go = |exp: &Path| {
        run(
            &driver_path(),
            &[
                "run",
                "--no-calibration",
                "--out",
                out.to_str().unwrap(),
                exp.to_str().unwrap(),
            ],
        )
    };
    let o = go(&exp);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let res = out.join("tiny");
    let status = |res: &Path| {
        serde_json::from_str::<serde_json::Value>(&text(&res.join("folder.json"))).unwrap()
    };
    assert_eq!(status(&res)["complete"], true);
    assert_eq!(status(&res)["kind"], "run");

    // The same experiment with another budget and fewer sizes, run again without
    // --resume: the folder then holds the new measurement alone.
    std::fs::write(
        &exp,
        TINY.replace("sizes = [2000, 4000]", "sizes = [2000]")
            .replace("max_iters = 25", "max_iters = 30")
            .replace("min_iters = 25", "min_iters = 30"),
    )
    .unwrap();
    let o = go(&exp);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let records: Vec<PathBuf> = std::fs::read_dir(res.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(records.len(), 4, "{records:?}");
    for p in &records {
        assert_eq!(RunRecord::from_json(&text(p)).unwrap().iterations, 30);
    }
    assert_eq!(text(&res.join("summary.csv")).lines().count(), 1 + 4);
    assert!(!res
        .join("histograms/scale-in-place-system-n4000-t1.us.csv")
        .exists());

    // A record edited by hand to another spec is refused by report (exit 2, naming the
    // file), never shown under the planned cell.
    let victim = res.join("runs/scale-in-place-system-n2000-t1.json");
    let edited = text(&victim).replace("\"size\": 2000", "\"size\": 3000");
    assert_ne!(edited, text(&victim));
    std::fs::write(&victim, edited).unwrap();
    let o = run(&driver_path(), &["report", res.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("scale-in-place-system-n2000-t1.json") && err.contains("not the plan's"),
        "{err}"
    );
}

/// Ctrl-C while `run --confirm` moves a threshold: the cliff found stays, but no
/// confirmation is made of a bisection cut short; folder.json, REPORT.md and
/// report.html all say the run is INCOMPLETE and name the confirmation as missing, and
/// `report` later keeps it so (it runs nothing that could complete it).
#[test]
fn an_interrupted_confirmation_is_said_everywhere_and_never_judged() {
    let (dir, exp) = setup(
        r#"
description = "glibc's out-of-place storm"
workloads = ["scale"]
variants = ["out-of-place"]
allocators = ["system"]
sizes = [6000, 12000]
find_cliffs = true

[budget]
min_time = 0.01
min_iters = 5
warmup_time = 0.005
warmup_iters = 2
"#,
    );
    let out = dir.path().join("res");
    let mut child = Command::new(driver_path())
        .args([
            "run",
            "--no-calibration",
            "--confirm",
            "--out",
            out.to_str().unwrap(),
            exp.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    // Read stderr until the confirmation starts, then press Ctrl-C for the group.
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    loop {
        let mut line = Vec::new();
        let n = std::io::BufRead::read_until(&mut err, b'\n', &mut line).unwrap();
        assert!(n > 0, "the run ended before confirming: {said}");
        said.push_str(&String::from_utf8_lossy(&line));
        if said.contains("confirming:") {
            break;
        }
    }
    // SAFETY: kill has no memory-safety preconditions; the group is the child's own.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{said}{rest}");
    let res = out.join("tiny");
    let folder: serde_json::Value = serde_json::from_str(&text(&res.join("folder.json"))).unwrap();
    assert_eq!(folder["complete"], false, "{folder}");
    assert!(
        folder["missing"][0]
            .as_str()
            .unwrap()
            .starts_with("the confirmation of 2 cliffs (interrupted"),
        "{folder}"
    );
    let cliffs: Vec<alloclab::analysis::cliff::FoundCliff> =
        serde_json::from_str(&text(&res.join("cliffs.json"))).unwrap();
    assert!(!cliffs.is_empty());
    assert!(
        cliffs.iter().all(|c| c.confirmation.is_none()),
        "a cut bisection is judged: {cliffs:?}"
    );
    let check = |report: &str, page: &str| {
        assert!(report.contains("> **INCOMPLETE:**"), "{report}");
        assert!(report.contains("the confirmation of 2 cliffs"), "{report}");
        assert!(
            report.contains("moving it: not measured (INCOMPLETE"),
            "{report}"
        );
        assert!(!report.contains(": confirmed"), "{report}");
        assert!(page.contains("<title>INCOMPLETE"), "{page}");
        assert!(page.contains("class=\"warn incomplete\""), "{page}");
    };
    check(
        &text(&res.join("REPORT.md")),
        &text(&res.join("report.html")),
    );
    // report runs nothing: the folder stays incomplete, and says so the same way.
    let o = run(&driver_path(), &["report", res.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let folder: serde_json::Value = serde_json::from_str(&text(&res.join("folder.json"))).unwrap();
    assert_eq!(folder["complete"], false, "{folder}");
    check(
        &text(&res.join("REPORT.md")),
        &text(&res.join("report.html")),
    );
}

/// A folder keeps the confidence level it was measured at: `report` rebuilds it at that
/// level (findings.json says which), unless --confidence asks for another.
#[test]
fn report_rebuilds_a_folder_at_the_level_it_was_measured_at() {
    let (dir, exp) = setup(&TINY.replace(r#"["system", "mimalloc"]"#, r#"["system"]"#));
    let out = dir.path().join("res");
    let o = run(
        &driver_path(),
        &[
            "--confidence",
            "99",
            "run",
            "--no-calibration",
            "--out",
            out.to_str().unwrap(),
            exp.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let res = out.join("tiny");
    let level = |res: &Path| {
        let f: serde_json::Value = serde_json::from_str(&text(&res.join("findings.json"))).unwrap();
        f["confidence"].as_f64().unwrap()
    };
    assert_eq!(level(&res), 0.99);
    let plan: serde_json::Value = serde_json::from_str(&text(&res.join("plan.json"))).unwrap();
    assert_eq!(plan["confidence"], 0.99);
    let summary = text(&res.join("summary.csv"));
    let o = run(&driver_path(), &["report", res.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(level(&res), 0.99, "rebuilt at the level it was measured at");
    assert_eq!(text(&res.join("summary.csv")), summary);
    let o = run(
        &driver_path(),
        &["report", "--confidence", "90", res.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(level(&res), 0.9, "the level asked for");
}
