//! Huge pages as a dimension: `--thp advise` makes the workload ask for huge pages as
//! NumPy does, the kernel's huge-page fault count splits the minor faults by the size
//! they mapped, and the bytes faulted in come out the same whichever size mapped them
//! (getrusage's faults and the kernel's huge-page count are independent readers).

use crate::common::{csv_rows as rows, lab, run_experiment, stderr};

/// The mode the machine gives THP (`always`, `madvise` or `never`).
fn system_mode() -> Option<String> {
    let text = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let start = text.find('[')? + 1;
    let end = text[start..].find(']')? + start;
    Some(text[start..end].to_string())
}

#[test]
fn advised_buffers_fault_in_huge_pages_and_the_bytes_faulted_in_do_not_change() {
    let dir = tempfile::tempdir().unwrap();
    let experiment = "description = \"huge pages\"\nworkloads = [\"scale\"]\nvariants = [\"out-of-place\", \"reuse\"]\nallocators = [\"system\"]\nthp = [\"never\", \"advise\"]\nsizes = [\"1e6\"]\n[budget]\nmin_time = 0.4\nmin_iters = 10\nwarmup_time = 0.02\nwarmup_iters = 2\nprocesses = 1\n";
    let f = |r: &std::collections::BTreeMap<String, String>, k: &str| -> f64 {
        r[k].parse()
            .unwrap_or_else(|_| panic!("{k} is '{}' in {r:?}", r[k]))
    };
    // The advised side's huge pages depend on the kernel finding free 2 MiB blocks, and
    // its bytes faulted in on every fault being counted; so the advised figures are
    // taken from the first of up to four runs whose bytes agree with the THP-off
    // side's; the THP-off side is exact every time.
    let mut seen = Vec::new();
    for attempt in 0..4 {
        let here = dir.path().join(format!("attempt{attempt}"));
        std::fs::create_dir_all(&here).unwrap();
        let folder = run_experiment(&here, "thp", experiment);
        let summary = rows(&folder.join("summary.csv"));
        let row = |variant: &str, thp: &str| {
            summary
                .iter()
                .find(|r| r["variant"] == variant && r["run_id"].ends_with(&format!("-thp{thp}")))
                .unwrap_or_else(|| panic!("no {variant} thp={thp} row in {summary:?}"))
                .clone()
        };
        let (never, advised) = (row("out-of-place", "never"), row("out-of-place", "advise"));
        // With THP off for the worker no fault maps a huge page (0 exactly: nothing is
        // read for it), and every fault a base page.
        assert_eq!(f(&never, "huge_faults_per_iter"), 0.0, "{never:?}");
        let (a, faults) = (
            f(&never, "faulted_bytes_per_iter"),
            f(&never, "minflt_per_iter"),
        );
        assert!((a - faults * 4096.0).abs() <= 1e-6 * a, "{never:?}");
        assert_eq!(f(&never, "huge_coverage_pct"), 0.0, "{never:?}");
        assert!(
            a > 8e6,
            "the out-of-place case faults its buffers in: {never:?}"
        );
        // The advice itself: one madvise per new buffer of 4 MiB or more (two a
        // iteration).
        assert!(f(&advised, "madvise_per_iter") >= 2.0, "{advised:?}");
        // glibc trims the heap after the two frees and faults both 8 MB buffers in
        // again every iteration: the same bytes whichever page size maps them.
        let b = advised["faulted_bytes_per_iter"].parse::<f64>().ok();
        seen.push((a, b));
        if !b.is_some_and(|b| (b - a).abs() <= 0.02 * a) {
            continue;
        }
        if system_mode().is_some_and(|m| m != "never") {
            // Huge pages map most of it, so the same bytes take far fewer faults.
            assert!(f(&advised, "huge_faults_per_iter") >= 2.0, "{advised:?}");
            assert!(
                f(&advised, "minflt_per_iter") < 0.5 * f(&never, "minflt_per_iter"),
                "{advised:?} against {never:?}"
            );
            // The reuse variant's one buffer stays resident: the sampled
            // AnonHugePages (smaps_rollup, another reader) shows it in huge pages. (The
            // worker lives 0.4 s or more so that several of its 100 ms smaps samples
            // fall after the warm-up.)
            let reuse = row("reuse", "advise");
            assert!(f(&reuse, "huge_mean_bytes") >= 2.0 * 1048576.0, "{reuse:?}");
            assert!(f(&reuse, "huge_coverage_pct") > 0.0, "{reuse:?}");
        }
        return;
    }
    panic!("bytes faulted in (without huge pages, advised) never agreed within 2 %: {seen:?}");
}

#[test]
fn advice_is_for_the_lab_workload_not_a_users_command() {
    let o = lab(&["exec", "--thp", "advise", "--runs", "1", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--thp advise"), "{}", stderr(&o));
}
