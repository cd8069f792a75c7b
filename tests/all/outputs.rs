//! What the lab may write and remove, tried as a hostile user would (issue 33): a folder
//! of the user's own files as --out, devices and symbolic links as targets, two specs
//! that would share a file, a folder re-used for another measurement. Every refusal
//! happens before anything runs (exit 2, nothing on stdout) and changes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// `mkdir d; echo mine > d/notes.txt; mkdir d/plots; echo keep > d/plots/my.svg;
/// echo '# my notes' > d/REPORT.md`
fn users_folder(d: &Path) {
    fs::create_dir_all(d.join("plots")).unwrap();
    fs::write(d.join("notes.txt"), "mine\n").unwrap();
    fs::write(d.join("plots/my.svg"), "keep\n").unwrap();
    fs::write(d.join("REPORT.md"), "# my notes\n").unwrap();
}

fn assert_users_folder_untouched(d: &Path) {
    let names: BTreeSet<String> = fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["REPORT.md", "notes.txt", "plots"]
            .map(String::from)
            .into_iter()
            .collect(),
        "only the user's files"
    );
    assert_eq!(
        fs::read_to_string(d.join("REPORT.md")).unwrap(),
        "# my notes\n"
    );
    assert_eq!(
        fs::read_to_string(d.join("plots/my.svg")).unwrap(),
        "keep\n"
    );
}

fn assert_refused(o: &std::process::Output, says: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    assert!(stderr(o).contains(says), "{}", stderr(o));
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

fn trace_args<'a>(out: &'a str, allocators: &'a str) -> Vec<&'a str> {
    vec![
        "trace",
        "--iterations",
        "3",
        "--processes",
        "0",
        "--size",
        "100000",
        "--allocators",
        allocators,
        "--out",
        out,
    ]
}

#[test]
fn a_folder_of_the_users_own_files_is_refused_by_every_command_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d");
    users_folder(&d);
    let ds = d.to_str().unwrap();
    let t = temporaries();
    let tries: Vec<Vec<&str>> = vec![
        trace_args(ds, "system"),
        vec![
            "exec",
            "--runs",
            "1",
            "--out",
            ds,
            "--",
            t.to_str().unwrap(),
            "--iterations",
            "2",
        ],
        vec![
            "sweep",
            "--sizes",
            "1000,2000",
            "--out",
            ds,
            "--",
            t.to_str().unwrap(),
            "--size",
            "{size}",
        ],
        vec!["generate", "man", "--out", ds],
    ];
    for args in &tries {
        let o = lab(args);
        assert_refused(&o, "--force-out");
        assert!(stderr(&o).contains("did not write"), "{}", stderr(&o));
        assert_users_folder_untouched(&d);
    }
    // run --out PARENT writes PARENT/<experiment>: that folder is the one checked.
    let parent = dir.path().join("results");
    let d = parent.join("numpy-temporaries");
    users_folder(&d);
    let o = lab(&[
        "run",
        "--no-calibration",
        "--quick",
        "--out",
        parent.to_str().unwrap(),
        &experiment_file("numpy-temporaries.toml"),
    ]);
    assert_refused(&o, "--force-out");
    assert_users_folder_untouched(&d);
}

#[test]
fn with_force_out_the_users_files_stay_and_the_next_measurement_removes_only_the_labs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d");
    users_folder(&d);
    let ds = d.to_str().unwrap();
    let mut args = trace_args(ds, "system,jemalloc");
    args.push("--force-out");
    let o = lab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        fs::read_to_string(d.join("plots/my.svg")).unwrap(),
        "keep\n"
    );
    assert_eq!(fs::read_to_string(d.join("notes.txt")).unwrap(), "mine\n");
    // Its REPORT.md replaced the user's: said in --force-out's help.
    // A second trace of one allocator, now without the flag (the folder is the lab's):
    // nothing of the first (jemalloc's files) is left, and the user's files stay.
    let o = lab(&trace_args(ds, "system"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        fs::read_to_string(d.join("plots/my.svg")).unwrap(),
        "keep\n"
    );
    assert!(d.join("notes.txt").exists());
    let status: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.join("folder.json")).unwrap()).unwrap();
    let listed: BTreeSet<String> = status["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert!(listed.iter().all(|f| !f.contains("jemalloc")), "{listed:?}");
    // Exactly the files on disk besides the user's and the bookkeeping are listed.
    let mut on_disk = BTreeSet::new();
    let mut stack = vec![d.clone()];
    while let Some(p) = stack.pop() {
        for e in fs::read_dir(&p).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                let rel = e
                    .path()
                    .strip_prefix(&d)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                on_disk.insert(rel);
            }
        }
    }
    for own in [
        "notes.txt",
        "plots/my.svg",
        "folder.json",
        ".lock",
        ".alloclab-files",
    ] {
        on_disk.remove(own);
    }
    assert_eq!(on_disk, listed);
    assert!(
        on_disk.iter().all(|f| !f.contains("jemalloc")),
        "{on_disk:?}"
    );
}

#[test]
fn devices_symlinks_and_other_commands_folders_are_refused_as_html_targets() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("real.html"), "mine").unwrap();
    std::os::unix::fs::symlink(d.join("real.html"), d.join("link.html")).unwrap();
    let results = d.join("exec");
    let o = lab(&[
        "exec",
        "--runs",
        "1",
        "--allocators",
        "system",
        "--out",
        results.to_str().unwrap(),
        "--",
        temporaries().to_str().unwrap(),
        "--iterations",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let inside = results.join("report.html");
    let before = fs::read_to_string(&inside).unwrap();
    for (target, says) in [
        (Path::new("/dev/null").to_path_buf(), "character device"),
        (d.join("link.html"), "symbolic link"),
        (d.to_path_buf(), "is a folder"),
        (inside.clone(), "results folder of `alloclab exec`"),
        (
            Path::new("/proc/alloclab.html").to_path_buf(),
            "cannot write into /proc",
        ),
    ] {
        let o = lab(&["compare", "--html", target.to_str().unwrap()]);
        assert_refused(&o, says);
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    assert!(fs::symlink_metadata(d.join("link.html"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read_to_string(d.join("real.html")).unwrap(), "mine");
    assert_eq!(fs::read_to_string(&inside).unwrap(), before);
}

#[test]
fn a_file_or_device_as_out_is_refused_naming_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("file");
    fs::write(&f, "x").unwrap();
    let o = lab(&["generate", "man", "--out", f.to_str().unwrap()]);
    assert_refused(&o, "is a regular file, not a folder");
    let o = lab(&trace_args("/dev/null", "system"));
    assert_refused(&o, "is a character device, not a folder");
    assert_eq!(fs::read_to_string(&f).unwrap(), "x");
}

#[test]
fn two_specs_that_would_share_a_file_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t");
    // Two installed libraries by their file names (neither needs to exist: refused first).
    let o = lab(&trace_args(out.to_str().unwrap(), "lib+a.so,lib_a.so"));
    assert_refused(&o, "would both be written as 'lib_a'");
    assert!(!out.exists());
}

/// The JSON rows of a run interrupted by SIGINT, each checked to say so (exit 130, the
/// signal named on stderr, `complete: false` and `stopped_by` on every row).
fn interrupted_rows(o: &std::process::Output) -> Vec<serde_json::Value> {
    assert_eq!(o.status.code(), Some(130), "{}", stderr(o));
    assert!(stderr(o).contains("interrupted by SIGINT"), "{}", stderr(o));
    let rows = json(&o.stdout).as_array().unwrap().clone();
    for r in &rows {
        assert_eq!(r["complete"], false, "{r}");
        assert_eq!(r["stopped_by"], "SIGINT", "{r}");
    }
    rows
}

/// exec's JSON and CSV rows say what ran after Ctrl-C (complete, stopped_by,
/// runs_planned), Markdown says it first, and diff refuses such a side.
#[test]
fn an_interrupted_exec_says_so_in_every_format_and_diff_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = temporaries();
    // Interrupted after the two warm-ups and two runs (about 0.1 s each at 20 iterations)
    // of the 400 planned.
    let run = |format: &str| {
        interrupted_after_runs(
            &[
                "exec",
                "--runs",
                "200",
                "--allocators",
                "system,jemalloc",
                "--format",
                format,
                "--",
                t.to_str().unwrap(),
                "--iterations",
                "20",
            ],
            4,
        )
    };
    let o = run("json");
    let rows = interrupted_rows(&o);
    for r in &rows {
        assert_eq!(r["runs_planned"], 200, "{r}");
        assert!(r["runs"].as_u64().unwrap() < 200, "{r}");
    }
    // The two runs that ended before Ctrl-C are kept.
    let ran: u64 = rows.iter().map(|r| r["runs"].as_u64().unwrap()).sum();
    assert!(ran >= 2, "{rows:?}");
    let file = dir.path().join("exec.out.json");
    fs::write(&file, &o.stdout).unwrap();
    let d = lab(&["diff", file.to_str().unwrap(), file.to_str().unwrap()]);
    assert_refused(&d, "incomplete");
    let o = run("csv");
    let csv = String::from_utf8(o.stdout).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "complete").unwrap();
    assert!(
        csv.lines()
            .skip(1)
            .all(|l| l.split(',').nth(at) == Some("false")),
        "{csv}"
    );
    let o = run("markdown");
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .starts_with("> **Incomplete:**"));
    // Its page's title says so first, as an interrupted run's, sweep's and compare's do.
    let out = dir.path().join("ex");
    interrupted_after_runs(
        &[
            "exec",
            "--runs",
            "200",
            "--allocators",
            "system,jemalloc",
            "--out",
            out.to_str().unwrap(),
            "--",
            t.to_str().unwrap(),
            "--iterations",
            "20",
        ],
        4,
    );
    let page = fs::read_to_string(out.join("report.html")).unwrap();
    let title = &page[page.find("<title>").unwrap()..page.find("</title>").unwrap()];
    assert!(
        title.starts_with("<title>INCOMPLETE (")
            && title.contains(" of 400 runs): alloclab exec: "),
        "{title}"
    );
}

/// An interrupted tune is an interrupt (130, the signal named), not a failure, and its
/// rows say what ran.
#[test]
fn an_interrupted_tune_says_so() {
    // After three of its processes.
    let o = interrupted_after_runs(&["tune", "--format", "json"], 3);
    assert!(!interrupted_rows(&o).is_empty());
}

/// Runs the driver with `args`, killing it (and failing) if it has not ended in two
/// minutes: a read that blocks would otherwise hang the suite.
fn lab_unless_blocked(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let mut child = std::process::Command::new(driver_path())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..1200 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    panic!("alloclab {args:?} blocked (killed after 120 s)");
}

fn make_fifo(p: &Path) {
    fs::remove_file(p).unwrap();
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_fifo_in_a_results_folder_is_refused_for_what_it_is_and_never_waited_on() {
    // No writer ever opens these FIFOs: a plain open of one waits for ever.
    let dir = tempfile::tempdir().unwrap();
    let folder = run_experiment(
        dir.path(),
        "tiny",
        "description = \"tiny\"\nworkloads = [\"scale\"]\nvariants = [\"out-of-place\"]\nallocators = [\"system\"]\nsizes = [\"1e5\"]\n[budget]\nmin_time = 0.02\nmin_iters = 3\nwarmup_time = 0.01\nwarmup_iters = 1\nprocesses = 2\n",
    );
    let record = fs::read_dir(folder.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    make_fifo(&record);
    let o = lab_unless_blocked(&["report".as_ref(), folder.as_os_str()]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("is a FIFO (named pipe), not a regular file"),
        "{}",
        stderr(&o)
    );
    // The parent's index names the folder it could not read and is written.
    let o = lab_unless_blocked(&["report".as_ref(), dir.path().join("out").as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("FIFO"), "{}", stderr(&o));
    // A FIFO at plan.json is what it is, not a run stopped before its plan.
    make_fifo(&folder.join("plan.json"));
    let o = lab_unless_blocked(&["report".as_ref(), folder.as_os_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("plan.json: is a FIFO") && !stderr(&o).contains("stopped before"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn every_finding_resting_on_a_short_cell_says_so_in_every_surface() {
    // A run whose one cell lost a process (its record removed, as a kill between the two
    // leaves it): every finding on that cell — a difference, after the burst, the price
    // of speed, an alignment — carries its completeness, and no other does.
    let dir = tempfile::tempdir().unwrap();
    let folder = run_experiment(
        dir.path(),
        "short",
        "description = \"short\"\nworkloads = [\"scale\"]\nvariants = [\"in-place\", \"out-of-place\"]\nallocators = [\"system\", \"jemalloc\"]\nsizes = [\"1e6\"]\n[budget]\nmin_time = 0.05\nmin_iters = 5\nwarmup_time = 0.01\nwarmup_iters = 1\nidle_time = 0.2\nprocesses = 2\n",
    );
    fs::remove_file(folder.join("runs/scale-out-of-place-system-n1000000-t1.p2.json")).unwrap();
    let o = lab(&["report", folder.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let findings = json(&fs::read(folder.join("findings.json")).unwrap());
    let report = fs::read_to_string(folder.join("REPORT.md")).unwrap();
    let mut kinds = BTreeSet::new();
    for list in ["answer", "price_of_speed", "comparisons", "alignment"] {
        for item in findings[list].as_array().unwrap() {
            let f = &item["figures"];
            let on =
                |allocator: &str, variant: &str| allocator == "system" && variant == "out-of-place";
            let s = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
            let short = on(&s(&f["allocator"]), &s(&f["variant"]))
                || on(&s(&f["against_allocator"]), &s(&f["against_variant"]))
                || (f["kind"] == "price" && on(&s(&f["against_allocator"]), &s(&f["variant"])));
            let text = item["text"].as_str().unwrap();
            if short {
                kinds.insert(s(&f["kind"]));
                assert!(item["incomplete"]["planned"] == 2, "{item}");
                assert!(
                    item["incomplete"]["processes"]
                        .as_array()
                        .unwrap()
                        .contains(&serde_json::json!(1)),
                    "{item}"
                );
                assert!(text.contains("(INCOMPLETE: "), "{text}");
                // REPORT.md never lists the item without its completeness.
                let bare = &text[..text.find(" (INCOMPLETE: ").unwrap()];
                assert!(!report.contains(bare) || report.contains(text), "{text}");
            } else {
                assert!(item.get("incomplete").is_none(), "{item}");
                assert!(!text.contains("INCOMPLETE"), "{text}");
            }
        }
    }
    // A difference, the cell after its burst and its alignment, at least.
    for kind in ["difference", "after-burst", "alignment"] {
        assert!(kinds.contains(kind), "{kind} not among {kinds:?}");
    }
    assert!(
        report.contains("(INCOMPLETE: 1 of 2 processes)"),
        "{report}"
    );
    // The parent's index lists the folder's parts with the note that they are short.
    let o = lab(&["report", dir.path().join("out").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let index = fs::read_to_string(dir.path().join("out/index.html")).unwrap();
    assert!(
        index.contains("INCOMPLETE: folder short&#39;s run did not finish")
            || index.contains("INCOMPLETE: folder short's run did not finish"),
        "{index}"
    );
}
