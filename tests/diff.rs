//! `alloclab diff` on hand-made results: improvement, regression, no change, cells on
//! one side only, a changed environment, compare's JSON, and bad input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
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
            .args(["diff", "--format", format])
            .arg(a)
            .arg(b)
            .output()
            .unwrap()
    };
    // Improvement, no change, unmatched cells both ways, the kernel that changed: exit 0.
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
            .find(|l| l.starts_with("scale system out-of-place"))
            .is_some_and(|l| l.contains("undecided (15.00x")),
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
            .is_some_and(
                |l| l.contains("undecided (15.00x") && l.contains("only a 93.8 % interval")
            ),
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
        .args(["diff", "--pair", "jemalloc=mimalloc"])
        .arg(&base)
        .arg(&improved)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines().any(
            |l| l.starts_with("scale jemalloc → mimalloc in-place size=1000000")
                && l.contains("0.14x")
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
        .arg("diff")
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
}
