//! Installed allocator libraries (`name=/path/lib.so`) in compare, run and the system
//! worker: a missing file is refused before anything runs, a library that does not take
//! over malloc fails its row, and gperftools' tcmalloc — the founding answer's fix —
//! removes glibc's out-of-place brk storm, with the same pattern through compare as
//! through exec.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use alloclab::model::spec::Allocator;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

/// Debian's gperftools tcmalloc (`apt-get install libtcmalloc-minimal4`).
const GPERFTOOLS: &str = "libtcmalloc_minimal.so.4";

fn alloclab(args: &[&str]) -> Output {
    Command::new(driver_path())
        .args(args)
        .output()
        .expect("alloclab starts")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Where gperftools' library is, or a panic saying how to install it.
fn gperftools() -> PathBuf {
    let l = alloclab::model::library::Library {
        name: "gperftools".into(),
        path: GPERFTOOLS.into(),
    };
    l.resolve().unwrap_or_else(|e| {
        panic!("{e}: this test needs gperftools' tcmalloc (apt-get install libtcmalloc-minimal4)")
    })
}

fn json_rows(out: &Output) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}): {}\nstderr: {}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    v.as_array().unwrap().clone()
}

fn row<'a>(rows: &'a [Value], spec: &str, field: &str) -> &'a Value {
    let r = rows
        .iter()
        .find(|r| r["allocator_spec"] == spec || r["allocator"] == spec)
        .unwrap_or_else(|| panic!("no row {spec} in {rows:?}"));
    &r[field]
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn a_missing_library_is_refused_before_anything_runs() {
    let out = alloclab(&[
        "compare",
        "--size=1000",
        "--allocators=system,tc=/nonexistent/libtcmalloc.so.4",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = text(&out.stderr);
    assert!(
        err.contains("tc: cannot read /nonexistent/libtcmalloc.so.4"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing ran: {}", text(&out.stdout));

    let out = alloclab(&[
        "compare",
        "--size=1000",
        "--allocators=libno_such_malloc.so.7",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = text(&out.stderr);
    assert!(
        err.contains("no file libno_such_malloc.so.7 in") && err.contains("/usr/lib"),
        "{err}"
    );

    // The same in an experiment file: refused, and no results folder is written.
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("lib.toml");
    std::fs::write(
        &exp,
        "description = \"x\"\nworkloads = [\"scale\"]\nthreads = [1]\nallocators = [\"system\", \"tc=/nonexistent/libtcmalloc.so.4\"]\nsizes = [1000]\nvariants = [\"in-place\"]\n",
    )
    .unwrap();
    let results = dir.path().join("results");
    let out = alloclab(&[
        "run",
        "--no-calibration",
        exp.to_str().unwrap(),
        "--out",
        results.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("cannot read /nonexistent/libtcmalloc.so.4"));
    assert!(!results.join("lib").exists(), "nothing written");
}

#[test]
fn a_library_that_does_not_take_over_malloc_fails_its_row() {
    // libm is a real shared library but defines no malloc.
    let out = alloclab(&[
        "compare",
        "--size=1000",
        "--variants=in-place",
        "--processes=1",
        "--min-time=0",
        "--allocators=system,m=libm.so.6",
        "--format=json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed row fails the command: {out:?}"
    );
    let rows = json_rows(&out);
    assert_eq!(row(&rows, "system", "status"), "ok");
    assert_eq!(row(&rows, "m", "status"), "failed");
    let why = row(&rows, "m", "error").as_str().unwrap();
    assert!(
        why.contains("m did not take over malloc") && why.contains("libc.so"),
        "{why}"
    );

    // The worker itself refuses to measure under a library that is not in charge.
    let out = worker_cmd(Allocator::System, "in-place", 1000, 1)
        .arg("--library=m=libm.so.6")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("did not take over malloc"));
    // Only the system worker runs libraries.
    let out = worker_cmd(Allocator::Jemalloc, "in-place", 1000, 1)
        .arg("--library=m=libm.so.6")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("--library is for the system worker"));
}

#[test]
fn list_shows_versions_and_ready_specs_for_installed_libraries() {
    let out = alloclab(&["list"]);
    assert!(out.status.success(), "{out:?}");
    let t = text(&out.stdout);
    assert!(t.contains("glibc 2."), "{t}");
    assert!(t.contains("jemalloc 5."), "{t}");
    for l in alloclab::model::library::installed() {
        assert!(t.contains(&l.to_string()), "{l} listed: {t}");
    }
}

#[test]
#[ignore = "needs gperftools' libtcmalloc_minimal.so.4 (apt-get install libtcmalloc-minimal4); .ci/run installs it and runs this with --ignored"]
fn gperftools_removes_glibcs_out_of_place_brk_storm_in_compare_and_exec() {
    let lib = gperftools();
    let spec = format!("gperftools={}", lib.display());
    let out = alloclab(&[
        "compare",
        "--size=1000000",
        "--variants=out-of-place",
        "--processes=1",
        "--min-time=0.1",
        &format!("--allocators=system,{spec}"),
        "--format=json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let rows = json_rows(&out);
    let faults = |s| num(row(&rows, s, "minflt_per_iter"));
    // glibc trims the heap after the two frees and faults 16 MB back in every iteration.
    assert!(
        faults("system") > 3000.0,
        "glibc faults {}",
        faults("system")
    );
    assert!(
        faults("gperftools") < 100.0,
        "gperftools keeps its pages: {}",
        faults("gperftools")
    );
    if row(&rows, "system", "syscall_counter") != "unavailable" {
        let brk = |s| num(row(&rows, s, "brk_per_iter"));
        assert!(brk("system") >= 2.0, "glibc brk {}", brk("system"));
        assert!(
            brk("gperftools") < 0.05,
            "gperftools brk {}",
            brk("gperftools")
        );
        assert!(num(row(&rows, "gperftools", "memory_syscalls_per_iter")) < 0.1);
    }
    assert_eq!(
        row(&rows, "system", "checksum"),
        row(&rows, "gperftools", "checksum"),
        "the same work"
    );
    let version = row(&rows, "gperftools", "allocator_version")
        .as_str()
        .unwrap();
    assert!(version.starts_with("gperftools 2."), "{version}");

    // The same library through exec on a program with the same pattern: faults per
    // iteration from two iteration counts (the difference removes start-up).
    let program = driver_path()
        .parent()
        .unwrap()
        .join("examples")
        .join("temporaries");
    let per_iter = |iters: u32| -> Vec<Value> {
        let out = alloclab(&[
            "exec",
            "--runs=1",
            "--warmup=0",
            "--format=json",
            &format!("--allocators=system,{spec}"),
            "--",
            program.to_str().unwrap(),
            "--iterations",
            &iters.to_string(),
        ]);
        assert!(out.status.success(), "{out:?}");
        json_rows(&out)
    };
    let (few, many) = (per_iter(10), per_iter(50));
    let exec_faults = |s| (num(row(&many, s, "minflt")) - num(row(&few, s, "minflt"))) / 40.0;
    let (es, eg) = (exec_faults("system"), exec_faults("gperftools"));
    assert!(
        (es / faults("system") - 1.0).abs() < 0.1,
        "glibc faults per iteration: exec {es}, compare {}",
        faults("system")
    );
    assert!(
        eg < 100.0,
        "gperftools under exec: {eg} faults per iteration"
    );
    let v = row(&many, "gperftools", "allocator_version")
        .as_str()
        .unwrap();
    assert!(v.starts_with("gperftools 2."), "{v}");
}
