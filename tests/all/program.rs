//! Your program, all the way: `tune -- CMD`, `sweep -- CMD {size}` and `cliff -- CMD
//! {size}` on `examples/temporaries` (the founding case's out-of-place pattern through
//! libc's malloc): tune finds glibc's fix, the sweep finds the fault cliff and its
//! bisection agrees with the built-in cliff finder, failing sizes fail their rows only,
//! and placeholders are checked before anything runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::path::Path;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn placeholders_are_checked_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let t = temporaries();
    let t = t.to_str().unwrap();
    let o_ = out.to_str().unwrap();
    // No {size}: sweep and cliff cannot vary anything.
    let o = lab(&[
        "sweep",
        "--sizes",
        "1e4..1e5",
        "--out",
        o_,
        "--",
        t,
        "--elements",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no {size}"), "{}", stderr(&o));
    let o = lab(&[
        "cliff",
        "--allocator",
        "system",
        "--from",
        "1000",
        "--to",
        "2000",
        "--",
        t,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no {size}"), "{}", stderr(&o));
    // {calls} without --calls.
    let o = lab(&[
        "sweep",
        "--sizes",
        "1e4..1e5",
        "--out",
        o_,
        "--",
        t,
        "--elements",
        "{size}",
        "--iterations",
        "{calls}",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--calls"), "{}", stderr(&o));
    // A range that goes down, a single size, a command that is not there.
    for (sizes, cmd) in [
        ("1e5..1e4", t),
        ("1e4", t),
        ("1e4..1e5", "/no/such/program"),
    ] {
        let o = lab(&["sweep", "--sizes", sizes, "--out", o_, "--", cmd, "{size}"]);
        assert_eq!(o.status.code(), Some(2), "{sizes} {cmd}: {}", stderr(&o));
    }
    assert!(!out.exists(), "nothing is written for bad input");
}

#[test]
fn tune_finds_glibcs_fix_for_the_founding_case_program() {
    let t = temporaries();
    let o = lab(&[
        "tune",
        "--allocators",
        "system",
        "--format",
        "json",
        "--",
        t.to_str().unwrap(),
        "--iterations",
        "20",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o.stdout);
    let sets = v["sets"].as_array().unwrap();
    assert_eq!(
        sets.len(),
        4,
        "glibc's four curated sets against its defaults"
    );
    let top_pad = sets
        .iter()
        .find(|s| s["set"] == "system:top_pad=64M")
        .unwrap();
    assert_eq!(top_pad["against"], "system");
    let (f, base) = (
        top_pad["minflt"].as_f64().unwrap(),
        top_pad["minflt_defaults"].as_f64().unwrap(),
    );
    // 20 iterations of two 8 MB buffers: glibc's defaults re-fault ~3,900 pages each time.
    assert!(base > 20.0 * 3000.0 && f < base / 10.0, "{f} vs {base}");
    // A timing verdict depends on the machine's load: only the opposite one would be
    // wrong (the fault counts above say what changed).
    assert_ne!(top_pad["verdict"], "slower", "{top_pad}");
    let advice = v["recommendation"].as_str().unwrap();
    assert!(
        advice.starts_with("recommended: system:") && advice.contains("peak RSS"),
        "{advice}"
    );
    // The table screen: the command, the recommendation, each set's verdict, then the
    // table of sets, every line within the reader's width.
    let o = std::process::Command::new(driver_path())
        .env("COLUMNS", "100")
        .args(["tune", "--allocators", "system", "--processes", "1", "--"])
        .arg(&t)
        .args(["--iterations", "20"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for l in text.lines() {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("command: "), "{text}");
    assert!(lines[1].starts_with("recommended: "), "{text}");
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle}:\n{text}"))
    };
    assert!(at("\nsystem:top_pad=64M: ") < at("\nset "), "{text}");
    assert!(at("\nset ") < at("\n  top_pad=64M "), "{text}");
}

/// glibc with fixed thresholds: buffers of 128 KiB and more are mmap'd (and fault on
/// every use), smaller ones stay in a heap that is never trimmed — so the cliff is where
/// a buffer reaches 128 KiB, whatever else the program's heap holds. (With glibc's
/// defaults the trim cliff depends on the heap's history: 8,214 elements for this
/// program, 8,338 for the lab's worker, 25,050 for NumPy's func2.)
const FIXED: &str = "system:mmap_threshold=128K,trim_threshold=1G";

/// The built-in cliff finder's exact out-of-place fault cliff under [`FIXED`].
fn builtin_cliff(from: u64, to: u64) -> u64 {
    let o = lab(&[
        "cliff",
        "--allocator",
        FIXED,
        "--variant",
        "out-of-place",
        "--from",
        &from.to_string(),
        "--to",
        &to.to_string(),
        "--processes",
        "1",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    json(&o.stdout)["above"]["size"].as_u64().unwrap()
}

#[test]
fn the_sweep_finds_the_fault_cliff_where_the_builtin_cliff_finder_does() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let t = temporaries();
    let o = lab(&[
        "sweep",
        "--allocators",
        FIXED,
        "--sizes",
        "8000..32000",
        "--runs",
        "2",
        "--calls",
        "10",
        "--out",
        out.to_str().unwrap(),
        "--",
        t.to_str().unwrap(),
        "--elements",
        "{size}",
        "--iterations",
        "{calls}",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Sizes 8,000, 11,314, 16,000, 22,627 and 32,000: no faults per call below the
    // cliff, every buffer faulted in above it.
    let sweep = json(read(&out.join("sweep.json")).as_bytes());
    let rows = sweep["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    let faults = |i: usize| rows[i]["minflt"].as_f64().unwrap();
    assert!(faults(2) < 1.0 && faults(3) > 40.0, "{rows:?}");
    let cliffs = json(read(&out.join("cliffs.json")).as_bytes());
    let c = cliffs
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == "minor faults")
        .unwrap_or_else(|| panic!("{cliffs}"));
    let (below, above) = (
        c["below_size"].as_u64().unwrap(),
        c["above_size"].as_u64().unwrap(),
    );
    assert_eq!(above, below + 1, "bisected to neighbouring sizes");
    let builtin = builtin_cliff(8000, 32000);
    assert!(
        above.abs_diff(builtin) <= 8,
        "the program's cliff {above} vs the built-in workload's {builtin}"
    );
    // Every file parses back, and the folder says what each file and column is.
    assert_guided(&out);
    let csv = read(&out.join("summary.csv"));
    assert_eq!(csv.lines().count(), 1 + 5);
    let report = read(&out.join("REPORT.md"));
    assert!(report.contains(&group(above)), "{report}");
    // The answer leads the console, and is the same in REPORT.md and findings.json: each
    // bisected cliff, with the cliff as cliffs.json keeps it.
    let findings = json(read(&out.join("findings.json")).as_bytes());
    let items = findings["answer"].as_array().unwrap();
    let console = unwrapped(&stdout(&o));
    assert!(
        console.starts_with("where faults or memory syscalls per call change:"),
        "{console}"
    );
    let as_kept = |i: &serde_json::Value| {
        let mut f = i["figures"].clone();
        assert_eq!(f["kind"], "sweep-cliff", "{i}");
        f.as_object_mut().unwrap().remove("kind");
        f
    };
    assert!(items.iter().any(|i| as_kept(i) == *c), "{findings}");
    for i in items {
        let text = i["text"].as_str().unwrap();
        assert!(report.contains(&format!("* {text}\n")), "{report}");
        assert!(console.contains(text), "{console}");
        assert!(i["figures"]["below_size"].is_u64(), "{i}");
    }
    for plot in [
        "faults-per-call",
        "memory-syscalls-per-call",
        "time-per-call",
        "peak-rss",
    ] {
        assert!(read(&out.join(format!("plots/{plot}.svg"))).starts_with("<svg"));
    }
    let h = read(&out.join(format!(
        "histograms/{}-n32000.us.csv",
        alloclab::model::spec::file_stem(FIXED)
    )));
    let hist = alloclab::export::hdr::parse_csv(&h).unwrap();
    assert_eq!(
        hist.last().unwrap().total_count,
        2,
        "one sample per measured run"
    );
    // The direct cliff command agrees with the sweep's bisection.
    let o = lab(&[
        "cliff",
        "--allocator",
        FIXED,
        "--from",
        &below.saturating_sub(500).to_string(),
        "--to",
        &(above + 500).to_string(),
        "--calls",
        "10",
        "--format",
        "json",
        "--",
        t.to_str().unwrap(),
        "--elements",
        "{size}",
        "--iterations",
        "{calls}",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let direct = json(&o.stdout)["above"]["size"].as_u64().unwrap();
    assert!(direct.abs_diff(above) <= 2, "{direct} vs {above}");
}

/// Memory syscalls are calls, as many at any size where behaviour holds: a move of one
/// call per call is a change even where the rate per element hardly moves. glibc with two
/// f64 buffers makes 2 memory syscalls per call at 12,000 elements and 3 at 20,000
/// (past its mmap threshold); the sweep once saw no change there, reading the calls as
/// growing with the size.
#[test]
fn the_sweep_bisects_a_change_of_memory_syscalls_that_the_size_does_not_explain() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let t = temporaries();
    let o = lab(&[
        "sweep",
        "--allocators",
        "system",
        "--sizes",
        "12000,20000",
        "--runs",
        "2",
        "--resolution",
        "100",
        "--calls",
        "10",
        "--out",
        out.to_str().unwrap(),
        "--",
        t.to_str().unwrap(),
        "--elements",
        "{size}",
        "--iterations",
        "{calls}",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let sweep = json(read(&out.join("sweep.json")).as_bytes());
    let calls: Vec<f64> = sweep["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["memory_syscalls"].as_f64().unwrap())
        .collect();
    assert!(calls[1] - calls[0] >= 0.5, "{calls:?}");
    let cliffs = json(read(&out.join("cliffs.json")).as_bytes());
    let c = cliffs
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == "memory syscalls")
        .unwrap_or_else(|| panic!("no memory-syscall cliff: {cliffs}"));
    let (below, above) = (
        c["below_size"].as_u64().unwrap(),
        c["above_size"].as_u64().unwrap(),
    );
    assert!(12_000 <= below && below < above && above <= 20_000, "{c}");
    assert!(above - below <= 100, "bisected to the resolution: {c}");
    let step = c["above_value"].as_f64().unwrap() - c["below_value"].as_f64().unwrap();
    assert!(step.abs() >= 0.5, "{c}");
}

/// With the buffers' size per element, the sweep names the threshold behind each cliff of
/// a program it did not write, and with --confirm moves it: glibc's out-of-place storm
/// starts inside M_TOP_PAD's window (8,192 to 8,448 elements for two f64 buffers) and,
/// with the pad doubled, inside the doubled window.
#[test]
fn the_sweep_names_the_storms_threshold_and_confirms_it_by_moving_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let t = temporaries();
    let t = t.to_str().unwrap();
    let o_ = out.to_str().unwrap();
    // --confirm needs the buffers' bytes per element.
    let o = lab(&[
        "sweep",
        "--sizes",
        "6000..12000",
        "--confirm",
        "--out",
        o_,
        "--",
        t,
        "--elements",
        "{size}",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--bytes-per-element"), "{}", stderr(&o));
    assert!(!out.exists(), "a refused sweep writes nothing");
    let o = lab(&[
        "sweep",
        "--allocators",
        "system",
        "--sizes",
        "6000..12000",
        "--runs",
        "2",
        "--calls",
        "10",
        "--bytes-per-element",
        "8",
        "--buffers",
        "2",
        "--confirm",
        "--out",
        o_,
        "--",
        t,
        "--elements",
        "{size}",
        "--iterations",
        "{calls}",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cliffs = json(read(&out.join("cliffs.json")).as_bytes());
    let c = cliffs
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == "memory syscalls")
        .unwrap_or_else(|| panic!("{cliffs}"));
    let above = c["above_size"].as_u64().unwrap();
    assert!((8_192..=8_448).contains(&above), "{c}");
    assert!(
        c["behind_it"]
            .as_str()
            .unwrap()
            .starts_with("glibc's M_TOP_PAD (128.0 KiB default)"),
        "{c}"
    );
    let conf = &c["confirmation"];
    assert_eq!(
        conf["spec"], "system:mmap_threshold=1M,top_pad=256K,trim_threshold=256K",
        "{c}"
    );
    assert_eq!(
        (conf["predicted"].as_u64(), conf["predicted_to"].as_u64()),
        (Some(16_384), Some(16_640)),
        "{c}"
    );
    let moved = conf["above"].as_u64().unwrap();
    assert!((16_384..=16_640).contains(&moved), "{c}");
    assert_eq!(conf["verdict"], "confirmed", "{c}");
    let report = read(&out.join("REPORT.md"));
    assert!(
        report.contains("moved: under system:mmap_threshold=1M,top_pad=256K,trim_threshold=256K"),
        "{report}"
    );
    // The cliff command names it too, from the same buffers.
    let o = lab(&[
        "cliff",
        "--allocator",
        "system",
        "--from",
        "6000",
        "--to",
        "12000",
        "--calls",
        "10",
        "--metric",
        "syscalls",
        "--bytes-per-element",
        "8",
        "--buffers",
        "2",
        "--format",
        "json",
        "--",
        t,
        "--elements",
        "{size}",
        "--iterations",
        "{calls}",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o.stdout);
    assert!(
        v["behind_it"]
            .as_str()
            .unwrap()
            .starts_with("glibc's M_TOP_PAD (128.0 KiB default)"),
        "{v}"
    );
    // The built-in workload's buffers are known: the option is refused there.
    let o = lab(&[
        "cliff",
        "--allocator",
        "system",
        "--variant",
        "out-of-place",
        "--from",
        "6000",
        "--to",
        "12000",
        "--bytes-per-element",
        "8",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("for your command after"),
        "{}",
        stderr(&o)
    );
}

fn group(n: u64) -> String {
    alloclab::fmt::group_thousands(n as i64)
}

#[test]
fn a_size_where_the_command_fails_fails_its_row_and_the_others_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let t = temporaries();
    // The command refuses sizes of 30,000 and more.
    let script = r#"test "$1" -lt 30000 || { echo "too big: $1" >&2; exit 3; }; exec "$0" --elements "$1" --iterations "$2""#;
    let o = lab(&[
        "sweep",
        "--allocators",
        "system",
        "--sizes",
        "16000..40000",
        "--runs",
        "1",
        "--calls",
        "4",
        "--no-cliffs",
        "--out",
        out.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
        t.to_str().unwrap(),
        "{size}",
        "{calls}",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let sweep = json(read(&out.join("sweep.json")).as_bytes());
    let rows = sweep["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["status"], "ok");
    assert_eq!(rows[1]["status"], "ok");
    assert_eq!(rows[2]["status"], "failed");
    let e = rows[2]["error"].as_str().unwrap();
    assert!(
        e.contains("status 3") && e.contains("too big: 32000"),
        "{e}"
    );
    assert!(read(&out.join("REPORT.md")).contains("too big: 32000"));
}

#[test]
fn a_sweep_killed_half_way_says_it_is_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    // The largest size hangs: the sweep is killed (SIGKILL, no chance to tidy up) while
    // it measures it.
    let mut child = std::process::Command::new(driver_path())
        .args([
            "sweep",
            "--allocators",
            "system",
            "--sizes",
            "1000..4000",
            "--per-octave",
            "1",
            "--runs",
            "2",
            "--no-cliffs",
            "--out",
            out.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "if [ {size} -ge 4000 ]; then sleep 5; fi",
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let rows = || {
        std::fs::read_to_string(out.join("sweep.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["rows"].as_array().map(Vec::len))
            .unwrap_or(0)
    };
    let waiting = std::time::Instant::now();
    while rows() < 2 {
        assert!(
            waiting.elapsed().as_secs() < 60,
            "the sweep never got going"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let sweep = json(read(&out.join("sweep.json")).as_bytes());
    assert_eq!(sweep["complete"], false, "{sweep}");
    assert_eq!(
        json(read(&out.join("folder.json")).as_bytes())["complete"],
        false
    );
    // REPORT.md is written after sweep.json: it may be the one of the first size.
    let report = read(&out.join("REPORT.md"));
    assert!(
        report.contains("**Incomplete:** ") && report.contains(" of 3 sizes measured"),
        "{report}"
    );
}

/// --max-time bounds a sweep: the first size always runs, each later one only when it
/// fits at the last size's cost; what was left is named on the screen, in REPORT.md and
/// in sweep.json, the folder is incomplete, and the sweep exits 0 (a bound, not a failure).
#[test]
fn max_time_bounds_a_sweep_and_names_the_sizes_left() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let o = lab(&[
        "sweep",
        "--allocators",
        "system",
        "--sizes",
        "1000,2000,3000",
        "--runs",
        "1",
        "--max-time",
        "0.01",
        "--out",
        out.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "sleep 0.05; : {size}",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let screen = unwrapped(&String::from_utf8_lossy(&o.stdout));
    let said = "INCOMPLETE: --max-time 0.01 s left no room for size 2,000 and after: 1 of the 3 sizes measured, no change bisected";
    assert!(screen.contains(said), "{screen}");
    let sweep = json(read(&out.join("sweep.json")).as_bytes());
    assert_eq!(sweep["complete"], false);
    assert!(sweep["max_time_cut"]
        .as_str()
        .unwrap()
        .starts_with("--max-time 0.01 s left no room for size 2,000"));
    assert_eq!(sweep["rows"].as_array().unwrap().len(), 1);
    assert_eq!(
        json(read(&out.join("folder.json")).as_bytes())["complete"],
        false
    );
    assert!(read(&out.join("REPORT.md"))
        .contains("> **Incomplete:** --max-time 0.01 s left no room for size 2,000"));
}
