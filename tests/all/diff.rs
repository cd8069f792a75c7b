//! `alloclab diff` on hand-made results: improvement, regression, no change, cells on
//! one side only, a changed environment, compare's JSON, and bad input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A summary row as `alloclab diff` reads it: p50 with a ±1 % interval of 99 %
/// coverage (two such give Bonferroni's 98 %, enough for a verdict).
fn diff_row(alloc: &str, variant: &str, p50: f64, minflt: f64) -> String {
    format!(
        "scale,{variant},{alloc},1000000,1,ok,{p50},{},{},0.99,{minflt},3,5000000,glibc 2.36",
        p50 * 0.99,
        p50 * 1.01
    )
}

const DIFF_HEADER: &str = "workload,variant,allocator_spec,size,threads,status,p50_ns,p50_ci_low_ns,p50_ci_high_ns,ci_coverage,minflt_per_iter,memory_syscalls_per_iter,rss_end_bytes,allocator_version";

fn results_folder(dir: &Path, name: &str, rows: &[String], kernel: &str) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("summary.csv"),
        format!("{DIFF_HEADER}\n{}\n", rows.join("\n")),
    )
    .unwrap();
    std::fs::write(
        folder.join("env.json"),
        format!(r#"{{"kernel": "{kernel}", "cpu_model": "AMD EPYC", "command_line": ["{name}"]}}"#),
    )
    .unwrap();
    folder
}

#[test]
fn diff_finds_regressions_improvements_and_what_changed_around_them() {
    let dir = tempfile::tempdir().unwrap();
    let base = results_folder(
        dir.path(),
        "base",
        &[
            diff_row("system", "in-place", 570_000.0, 0.0),
            diff_row("system", "out-of-place", 9_000_000.0, 3874.0),
            diff_row("jemalloc", "in-place", 4_200_000.0, 1954.0),
        ],
        "6.1",
    );
    let improved = results_folder(
        dir.path(),
        "improved",
        &[
            diff_row("system", "in-place", 572_000.0, 0.0),
            diff_row("system", "out-of-place", 600_000.0, 0.0),
            diff_row("mimalloc", "in-place", 570_000.0, 0.0),
        ],
        "6.18",
    );
    let diff = |a: &Path, b: &Path, format: &str| {
        Command::new(driver_path())
            .args(["diff", "--verbose", "--format", format])
            .arg(a)
            .arg(b)
            .output()
            .unwrap()
    };
    // The first screen, in 100 columns: the answer (how many cells changed, and each one
    // called changed with its interval), then the table that fits, then the environment.
    let o = Command::new(driver_path())
        .env("COLUMNS", "100")
        .arg("diff")
        .arg(&base)
        .arg(&improved)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for l in out.lines() {
        assert!(
            l.chars().count() <= 100,
            "wider than 100 columns: {l}\n{out}"
        );
    }
    assert!(
        out.starts_with("2 cells compared: 0 slower, 1 faster"),
        "{out}"
    );
    let lines: Vec<&str> = out.lines().collect();
    let called = lines
        .iter()
        .position(|l| l.starts_with("  scale system out-of-place size=1000000: 15.00x faster ["))
        .unwrap_or_else(|| panic!("{out}"));
    let table = lines
        .iter()
        .position(|l| l.starts_with("cell "))
        .unwrap_or_else(|| panic!("{out}"));
    let kernel = lines
        .iter()
        .position(|l| *l == "environment: kernel: 6.1 → 6.18")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(called < table && table < kernel, "{out}");
    // The words every compared cell shares are said once; the rows keep the rest.
    assert!(
        out.contains("\nevery cell: scale system size=1000000\n"),
        "{out}"
    );
    assert!(out.contains("\nout-of-place   9.00 ms "), "{out}");

    // Improvement, no change, unmatched cells both ways, the kernel that changed: exit 0;
    // the full screen (--verbose) says the environment first.
    let o = diff(&base, &improved, "table");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with("environment: kernel: 6.1 → 6.18\n"),
        "{out}"
    );
    assert!(!out.contains("command_line"), "{out}");
    let line = |cell: &str| {
        out.lines()
            .find(|l| l.starts_with(cell))
            .unwrap_or_else(|| panic!("{cell}: {out}"))
            .to_string()
    };
    assert!(
        line("scale system out-of-place").contains("15.00x faster"),
        "{out}"
    );
    assert!(
        line("scale system out-of-place").contains("-3,874"),
        "{out}"
    );
    assert!(
        line("scale system in-place").contains("no significant difference"),
        "{out}"
    );
    assert!(
        out.contains("only in BASE: scale jemalloc in-place size=1000000"),
        "{out}"
    );
    assert!(
        out.contains("only in NEW: scale mimalloc in-place size=1000000"),
        "{out}"
    );

    // The other way round it is a regression: exit 1, and the Markdown says so.
    let o = diff(&improved, &base, "markdown");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("| scale system out-of-place size=1000000 |"),
        "{out}"
    );
    assert!(out.contains("15.00x slower"), "{out}");
    // A side against itself calls nothing, and asks nothing to be confirmed.
    let same = diff(&base, &base, "table");
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    assert!(!String::from_utf8_lossy(&same.stdout).contains("CONFIRM"));
    // Two cells are too few to see the drift between runs: said, nothing widened.
    assert!(
        out.contains("between runs: drift not estimated (2 cell(s) with an interval; the between-run spread needs at least 8)"),
        "{out}"
    );
    // A change between two separate runs is to be confirmed in one session.
    assert!(
        out.contains("CONFIRM: 1 cell(s) called changed between two separate runs"),
        "{out}"
    );
    assert!(
        stderr(&o).contains("1 cell(s) significantly slower"),
        "{}",
        stderr(&o)
    );

    // The same regression at --confidence 90: the 98 % interval decides; at 99 %, it
    // does not (two 99 % sides give Bonferroni's 98 %), and the output says the level.
    let at = |level: &str| {
        Command::new(driver_path())
            .args(["--confidence", level, "diff"])
            .arg(&improved)
            .arg(&base)
            .output()
            .unwrap()
    };
    let o = at("90");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = at("99");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .find(|l| l.starts_with("out-of-place "))
            .is_some_and(|l| l.contains("15.00x [14.70x, 15.30x] undecided")),
        "{out}"
    );
    assert!(out.contains("undecided (interval below 99 %)"), "{out}");
    for bad in ["100", "40", "high"] {
        let o = at(bad);
        assert_eq!(o.status.code(), Some(2), "--confidence {bad}");
        assert!(
            stderr(&o).contains("a percentage"),
            "--confidence {bad}: {}",
            stderr(&o)
        );
        assert!(o.stdout.is_empty());
    }

    // Rows of six-process cells (96.9 % intervals each) give at least 93.75 %: below
    // the 95 % a verdict needs, so the cell is undecided and no regression, however far
    // apart the medians.
    let six = |folder: &Path| {
        let p = folder.join("summary.csv");
        let t = std::fs::read_to_string(&p)
            .unwrap()
            .replace(",0.99,", ",0.96875,");
        std::fs::write(&p, t).unwrap();
    };
    six(&base);
    six(&improved);
    let o = diff(&improved, &base, "table");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .find(|l| l.starts_with("scale system out-of-place"))
            .is_some_and(|l| l.contains("15.00x slower (no verdict: [")
                && l.contains("only a 93.8 % interval")),
        "{out}"
    );

    // compare's JSON reads the same way; nothing in common is bad input.
    let json = dir.path().join("other.json");
    std::fs::write(
        &json,
        r#"[{"workload":"chain","variant":"in-place","allocator_spec":"system","size":5,"threads":1,"status":"ok","p50_ns":1.0,"minflt_per_iter":0.0,"memory_syscalls_per_iter":null,"rss_end_bytes":null,"allocator_version":null}]"#,
    )
    .unwrap();
    let o = diff(&base, &json, "table");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no cell is in both"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--pair"), "{}", stderr(&o));

    // --pair matches differently named allocators: BASE's jemalloc against NEW's
    // mimalloc, in-place at the same size.
    let o = Command::new(driver_path())
        .args(["diff", "--verbose", "--pair", "jemalloc=mimalloc"])
        .arg(&base)
        .arg(&improved)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines().any(
            |l| l.starts_with("scale jemalloc → mimalloc in-place size=1000000")
                && l.contains("7.37x faster")
        ),
        "{out}"
    );
    let o = Command::new(driver_path())
        .args(["diff", "--pair", "jemalloc=tcmalloc"])
        .arg(&base)
        .arg(&improved)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("has no cell of tcmalloc"),
        "{}",
        stderr(&o)
    );
    let o = diff(&base, &dir.path().join("missing"), "table");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Two `alloclab exec --out` folders of the same command: one real, one whose mimalloc
/// runs are made ten times slower by hand. diff matches the allocators, calls the
/// slower one a significant regression (exit 1) and the unchanged one no change.
#[test]
fn diff_compares_exec_folders_allocator_by_allocator() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let program = driver_path()
        .parent()
        .unwrap()
        .join("examples")
        .join("temporaries");
    let out = Command::new(driver_path())
        .args([
            "exec",
            "--runs=6",
            "--no-adaptive",
            "--warmup=0",
            "--allocators=system,mimalloc",
        ])
        .arg("--out")
        .arg(&base)
        .arg("--")
        .arg(&program)
        .args(["--iterations", "10"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(base.join("exec.json")).unwrap()).unwrap();
    for a in record["allocators"].as_array_mut().unwrap() {
        if a["allocator"] == "mimalloc" {
            for r in a["runs"].as_array_mut().unwrap() {
                let w = r["wall_ns"].as_u64().unwrap();
                r["wall_ns"] = (w * 10).into();
            }
        }
    }
    let new = dir.path().join("new");
    std::fs::create_dir_all(&new).unwrap();
    std::fs::write(new.join("exec.json"), record.to_string()).unwrap();

    let out = Command::new(driver_path())
        .args(["diff", "--verbose"])
        .args([&base, &new])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a regression: {text}{}",
        stderr(&out)
    );
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} (whole command, per run)")))
            .unwrap_or_else(|| panic!("no {name} row: {text}"))
            .to_string()
    };
    assert!(line("mimalloc").contains("10.00x slower"), "{text}");
    assert!(
        line("system").contains("no significant difference (1.00x"),
        "{text}"
    );

    // exec's JSON rows of two different commands: the change is said first.
    let json_of = |name: &str, cmd: &[&str]| {
        let out = Command::new(driver_path())
            .args([
                "exec",
                "--runs=2",
                "--warmup=0",
                "--allocators=system",
                "--format=json",
                "--",
            ])
            .args(cmd)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let p = dir.path().join(name);
        std::fs::write(&p, &out.stdout).unwrap();
        p
    };
    let (a, b) = (
        json_of("ls.json", &["ls", "/"]),
        json_of("true.json", &["true"]),
    );
    let out = Command::new(driver_path())
        .arg("diff")
        .args([&a, &b])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("COMMAND CHANGED: ls / → true\n"),
        "{text}{}",
        stderr(&out)
    );
}

/// Damaged or hand-made inputs are refused with what is wrong and where (exit 2), never
/// compared: a negative or zero p50, a missing p50 column, a cell given twice, a file
/// that is not the lab's.
#[test]
fn diff_refuses_inputs_it_cannot_compare() {
    let dir = tempfile::tempdir().unwrap();
    let good = results_folder(
        dir.path(),
        "good",
        &[diff_row("system", "in-place", 570_000.0, 0.0)],
        "6.1",
    );
    let bad = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let o = Command::new(driver_path())
            .arg("diff")
            .arg(&good)
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{name}");
        assert!(stderr(&o).contains(name), "{name}: {}", stderr(&o));
        stderr(&o)
    };
    let row = diff_row("system", "in-place", 570_000.0, 0.0);
    let negative = row.replacen(",570000,", ",-3,", 1);
    assert_ne!(negative, row);
    assert!(bad("negative.csv", &format!("{DIFF_HEADER}\n{negative}\n")).contains("p50_ns -3"));
    let zero = row.replacen(",570000,", ",0,", 1);
    assert!(bad("zero.csv", &format!("{DIFF_HEADER}\n{zero}\n")).contains("p50_ns 0"));
    let no_p50 = r#"[{"workload":"scale","variant":"in-place","allocator_spec":"system","size":1000000,"threads":1,"status":"ok","minflt_per_iter":0.0,"memory_syscalls_per_iter":null,"rss_end_bytes":null,"allocator_version":null}]"#;
    assert!(bad("no-p50.json", no_p50).contains("has no p50_ns"));
    assert!(bad("twice.csv", &format!("{DIFF_HEADER}\n{row}\n{row}\n")).contains("twice"));
    assert!(bad("notes.txt", "hello world\n").contains("no rows"));
    // Counts below zero (issue 71: read as "Δ minflt −3,879"): the file, the row's cell
    // and the column named, with what would be right.
    let fewer = diff_row("system", "in-place", 570_000.0, -5.0);
    let e = bad("negative-count.csv", &format!("{DIFF_HEADER}\n{fewer}\n"));
    assert!(
        e.contains("row 1 (scale system in-place size=1000000): column minflt_per_iter is -5")
            && e.contains("0 or more"),
        "{e}"
    );
    let brk = r#"[{"workload":"scale","variant":"in-place","allocator_spec":"system","size":1000000,"threads":1,"status":"ok","p50_ns":570000.0,"minflt_per_iter":0.0,"brk_per_iter":-3,"rss_end_bytes":null,"allocator_version":null}]"#;
    let e = bad("negative-brk.json", brk);
    assert!(e.contains("column brk_per_iter is -3"), "{e}");
}

/// A file an editor saved with a UTF-8 byte order mark (EF BB BF) reads as the same file
/// without one: compare's JSON (refused as "not a summary CSV" before issue 71) as much
/// as a summary CSV.
#[test]
fn diff_reads_files_that_begin_with_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    let good = results_folder(
        dir.path(),
        "good",
        &[diff_row("system", "in-place", 570_000.0, 0.0)],
        "6.1",
    );
    let json = r#"[{"workload":"scale","variant":"in-place","allocator_spec":"system","size":1000000,"threads":1,"status":"ok","p50_ns":570000.0,"p50_ci_low_ns":564300.0,"p50_ci_high_ns":575700.0,"ci_coverage":0.99,"minflt_per_iter":0.0,"memory_syscalls_per_iter":3,"rss_end_bytes":5000000,"allocator_version":"glibc 2.36"}]"#;
    let csv = format!(
        "{DIFF_HEADER}\n{}\n",
        diff_row("system", "in-place", 570_000.0, 0.0)
    );
    let mut outputs = Vec::new();
    for (name, text) in [("bom.json", json.to_string()), ("bom.csv", csv)] {
        let p = dir.path().join(name);
        std::fs::write(&p, [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat()).unwrap();
        let o = diff_of(&good, &p, &[]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            out.starts_with("1 cells compared: 0 slower, 0 faster"),
            "{name}: {out}"
        );
        outputs.push(out);
    }
    assert_eq!(outputs[0], outputs[1]);
}

fn diff_of(a: &Path, b: &Path, extra: &[&str]) -> Output {
    Command::new(driver_path())
        .arg("diff")
        .args(extra)
        .arg(a)
        .arg(b)
        .output()
        .unwrap()
}

#[track_caller]
fn refused(o: &Output, needles: &[&str]) -> String {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(o.stdout.is_empty(), "{e}");
    for n in needles {
        assert!(e.contains(n), "expected {n:?} in: {e}");
    }
    e
}

/// An interrupted compare's JSON or CSV (rows saying "complete": false), a results
/// folder whose folder.json says "complete": false and an unfinished exec record are
/// refused, naming the file and what ran of the plan; --allow-incomplete compares them
/// and says which side is incomplete.
#[test]
fn diff_refuses_an_incomplete_side_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let good = results_folder(
        dir.path(),
        "good",
        &[
            diff_row("system", "in-place", 570_000.0, 0.0),
            diff_row("system", "out-of-place", 9_000_000.0, 3874.0),
        ],
        "6.1",
    );
    let row = |variant: &str, processes: u32| {
        format!(
            r#"{{"workload":"scale","variant":"{variant}","allocator_spec":"system","size":1000000,"threads":1,"status":"ok","p50_ns":570000.0,"minflt_per_iter":0.0,"memory_syscalls_per_iter":0.0,"rss_end_bytes":null,"allocator_version":null,"processes":{processes},"complete":false,"stopped_by":"SIGINT","processes_planned":1000}}"#
        )
    };
    let interrupted = dir.path().join("interrupted.json");
    std::fs::write(
        &interrupted,
        format!("[{},{}]", row("in-place", 2), row("out-of-place", 1)),
    )
    .unwrap();
    let o = diff_of(&good, &interrupted, &[]);
    refused(
        &o,
        &[
            "interrupted.json is incomplete",
            "interrupted by SIGINT",
            "1–2 of the 1000 planned processes",
            "--allow-incomplete",
        ],
    );
    // The same as CSV, on the BASE side.
    let csv = dir.path().join("interrupted.csv");
    std::fs::write(
        &csv,
        format!(
            "{DIFF_HEADER},processes,complete,stopped_by,processes_planned\n{},3,false,max-time,6\n",
            diff_row("system", "in-place", 570_000.0, 0.0)
        ),
    )
    .unwrap();
    refused(
        &diff_of(&csv, &good, &[]),
        &[
            "interrupted.csv is incomplete",
            "--max-time stopped its planned rounds",
            "3 of the 6 planned processes",
        ],
    );
    // Asked for: compared, and said first.
    let o = diff_of(&good, &interrupted, &["--allow-incomplete"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("INCOMPLETE NEW: "), "{out}");
    assert!(
        out.contains("scale system out-of-place size=1000000"),
        "{out}"
    );
    let o = diff_of(
        &good,
        &interrupted,
        &["--allow-incomplete", "--format", "json"],
    );
    let v = json(&o.stdout);
    assert_eq!(v["base_complete"], true);
    assert_eq!(v["new_complete"], false);
    assert!(v["incomplete"]["new"].as_str().unwrap().contains("SIGINT"));

    // A results folder of an interrupted run: folder.json says so; plan.json has the plan.
    let cut = results_folder(
        dir.path(),
        "cut",
        &[diff_row("system", "in-place", 570_000.0, 0.0)],
        "6.1",
    );
    std::fs::write(
        cut.join("folder.json"),
        r#"{"schema":"alloclab.folder/1","kind":"run","complete":false,"started":"2026-11-23T09:12:01Z","finished":null,"command_line":[]}"#,
    )
    .unwrap();
    std::fs::write(
        cut.join("plan.json"),
        r#"{"experiment":{},"runs":[{"id":"a"},{"id":"b"},{"id":"c"}],"command_line":[],"started_unix":0}"#,
    )
    .unwrap();
    refused(
        &diff_of(&good, &cut, &[]),
        &[
            "cut is incomplete",
            "folder.json says \"complete\": false",
            "summary.csv holds 1 of the plan's 3 runs",
        ],
    );
}

/// Every input is a regular file of bounded size or a results folder; anything else —
/// a device, a FIFO, another command's output — is named, not read as "not a summary
/// CSV … record 1"; exec.json works as its folder does; a spec in two --pairs is said
/// to be given twice.
#[test]
fn diff_names_what_it_got_and_reads_bounded_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let good = results_folder(
        dir.path(),
        "good",
        &[diff_row("system", "in-place", 570_000.0, 0.0)],
        "6.1",
    );
    // /dev/zero used to be read until memory ran out.
    refused(
        &diff_of(Path::new("/dev/zero"), &good, &[]),
        &[
            "/dev/zero: a character device, not a regular file",
            "diff compares",
        ],
    );
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    refused(&diff_of(&good, &fifo, &[]), &["pipe: a FIFO (named pipe)"]);
    // A file over the limit (sparse: no disk used).
    let big = dir.path().join("big.csv");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(300 * 1024 * 1024)
        .unwrap();
    refused(
        &diff_of(&good, &big, &[]),
        &["big.csv: 300 MiB, more than the 256 MiB alloclab reads"],
    );
    // Other outputs of the lab, named.
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let trace = file(
        "trace.json",
        r#"{"schema":"alloclab.trace/1","complete":true,"allocators":[]}"#,
    );
    refused(
        &diff_of(&good, &trace, &[]),
        &[
            "this is the trace.json of `alloclab trace`",
            "diff compares results folders",
        ],
    );
    let sweep = dir.path().join("sweep");
    std::fs::create_dir_all(&sweep).unwrap();
    std::fs::write(
        sweep.join("folder.json"),
        r#"{"schema":"alloclab.folder/1","kind":"sweep","complete":true}"#,
    )
    .unwrap();
    std::fs::write(
        sweep.join("summary.csv"),
        "size,allocator,status,error,runs,per,time_ns\n",
    )
    .unwrap();
    refused(
        &diff_of(&sweep, &good, &[]),
        &["this is a results folder of `alloclab sweep`"],
    );
    refused(
        &diff_of(&good, &sweep.join("summary.csv"), &[]),
        &["this is the summary.csv of `alloclab sweep`"],
    );
    refused(
        &diff_of(&good, &sweep.join("folder.json"), &[]),
        &["the folder.json of a results folder; give the folder itself"],
    );
    refused(
        &diff_of(&good, &dir.path().join("missing.json"), &[]),
        &["missing.json: cannot read it"],
    );

    // --pair with one BASE spec twice: the flag is wrong, not the file.
    refused(
        &diff_of(
            &good,
            &good,
            &["--pair", "system=jemalloc", "--pair", "system=mimalloc"],
        ),
        &["--pair: system is given twice as a BASE spec"],
    );
}

/// An exec.json given as a file reads as its folder does (it used to be refused as
/// "not a summary CSV").
#[test]
fn diff_reads_an_exec_json_file_as_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    let out = Command::new(driver_path())
        .args(["exec", "--runs=3", "--warmup=0", "--allocators=system"])
        .arg("--out")
        .arg(&base)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let by_folder = diff_of(&base, &base, &[]);
    assert_eq!(by_folder.status.code(), Some(0), "{}", stderr(&by_folder));
    let by_file = diff_of(&base.join("exec.json"), &base.join("exec.json"), &[]);
    assert_eq!(by_file.status.code(), Some(0), "{}", stderr(&by_file));
    assert_eq!(by_file.stdout, by_folder.stdout);
    // An unfinished exec record is refused like any incomplete side.
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(base.join("exec.json")).unwrap()).unwrap();
    record["complete"] = false.into();
    let cut = dir.path().join("cut-exec.json");
    std::fs::write(&cut, record.to_string()).unwrap();
    refused(
        &diff_of(&base, &cut, &[]),
        &[
            "cut-exec.json is incomplete",
            "runs of the 3 requested per allocator: system 3",
        ],
    );
}

/// A run folder without summary.csv yet is said for what it is: a run still going (with
/// the pid writing it) or one stopped before its report, never "not a results folder".
#[test]
fn diff_names_a_run_folder_still_being_written() {
    use alloclab::export::folder::{Claim, Folder, Kind};
    let dir = tempfile::tempdir().unwrap();
    let other = results_folder(
        dir.path(),
        "base",
        &[diff_row("system", "in-place", 1000.0, 1.0)],
        "k",
    );
    let running = dir.path().join("running");
    let mut f = Folder::open(&running, Kind::Run, Claim::Own).unwrap();
    f.start(true).unwrap();
    let o = diff_of(&other, &running, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!(
            "its run is still going (alloclab pid {} is writing it)",
            std::process::id()
        )),
        "{}",
        stderr(&o)
    );
    drop(f);
    // The lock goes with the last descriptor of it: a child that another test thread has
    // just forked shares it until it execs (a busy host can pause it there), so wait
    // for that to pass before asking (the property is the message, not the timing).
    let since = std::time::Instant::now();
    while alloclab::export::folder::writer_of(&running).is_some()
        && since.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let o = diff_of(&other, &running, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("its run stopped before writing its report"),
        "{}",
        stderr(&o)
    );
}

/// Compare's JSON of five allocators in which only the faulting cells (three allocators,
/// two cells each, 1,000 faults an iteration) took `fault_ns` more per fault: read against
/// the other allocators' faulting cells by default (the `faults:` line, exit 0), as
/// measured with --no-fault-reference or --no-host-reference (slower, exit 1).
#[test]
fn diff_reads_faulting_cells_against_the_other_allocators_cost_of_a_fault() {
    let dir = tempfile::tempdir().unwrap();
    let side = |name: &str, fault_ns: f64| -> PathBuf {
        let mut rows = Vec::new();
        for alloc in ["system", "jemalloc", "rpmalloc", "mimalloc", "tcmalloc"] {
            let faulting = ["system", "jemalloc", "rpmalloc"].contains(&alloc);
            for variant in ["reuse", "in-place", "out-of-place", "fused"] {
                let faults = if faulting && matches!(variant, "out-of-place" | "fused") {
                    1000.0
                } else {
                    0.0
                };
                let allocs = if variant == "reuse" { 0.0 } else { 1.0 };
                let p50 = 1e6 + faults * fault_ns;
                let processes: Vec<f64> =
                    (0..6).map(|i| p50 * (0.995 + 0.002 * i as f64)).collect();
                rows.push(serde_json::json!({
                    "workload": "scale", "variant": variant, "allocator_spec": alloc,
                    "size": 1000000, "threads": 1, "status": "ok", "p50_ns": p50,
                    "p50_ci_low_ns": p50 * 0.995, "p50_ci_high_ns": p50 * 1.005,
                    "ci_coverage": 0.97, "minflt_per_iter": faults, "allocs_per_iter": allocs,
                    "process_p50_ns": processes, "rss_end_bytes": 5000000.0,
                    "allocator_version": "1", "complete": true,
                }));
            }
        }
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_string(&rows).unwrap()).unwrap();
        path
    };
    let (base, new) = (side("base.json", 0.0), side("new.json", 200.0));
    // The words of the output, its lines folded to the terminal's width joined again.
    let words = |o: &Output| -> String {
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let o = diff_of(&base, &new, &[]);
    let out = words(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("0 slower"), "{out}");
    assert!(
        out.contains("faults: the 3 allocators whose 6 cells fault as often in both runs moved alike, by +200 ns a fault")
            && out.contains("6 faulting cell(s) above are each read against the other allocators' change"),
        "{out}"
    );
    for flag in ["--no-fault-reference", "--no-host-reference"] {
        let o = diff_of(&base, &new, &[flag]);
        let out = words(&o);
        assert_eq!(o.status.code(), Some(1), "{flag}: {out}");
        assert!(
            out.contains("6 slower") && out.contains("faulting cells are left as measured"),
            "{flag}: {out}"
        );
    }
    let o = diff_of(&base, &new, &["--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &v["diff"]["faults"];
    assert_eq!(
        (f["applied"].as_bool(), f["read"].as_u64()),
        (Some(true), Some(6)),
        "{f}"
    );
    assert!(
        (f["ns_per_fault"].as_f64().unwrap() - 200.0).abs() < 1.0,
        "{f}"
    );
    let cells = v["diff"]["cells"].as_array().unwrap();
    let read = cells
        .iter()
        .filter(|c| c["fault_reference_ns"].is_number())
        .count();
    assert_eq!(read, 6, "{cells:?}");
}
