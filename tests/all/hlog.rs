//! The HdrHistogram interval logs (`histograms/<stem>.ns.hlog`) that `run`, `exec` and
//! `sweep` write beside the `.us.csv` and `.us.hgrm` files, read back by HdrHistogram
//! readers that are not the lab's: the hdrhistogram crate's interval-log iterator and V2
//! deserializer here, and the Python package hdrhistogram's HistogramLogReader in an
//! ignored test (.ci/run installs the package and runs it with --ignored).
//!
//! Every log must hold one interval per worker process (or run), in time order, at the
//! time its record says it began and as long as it lasted, whose histogram is that
//! process's own; the intervals added up must be the cell's `.us.hgrm`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use alloclab::export::hdr;
use alloclab::model::command::ExecRecord;
use alloclab::model::record::RunRecord;
use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// A cell of three processes per allocator (and a second experiment of one process).
const EXPERIMENT: &str = r#"
description = "hlog"
workloads = ["scale"]
variants = ["out-of-place"]
allocators = ["system", "mimalloc"]
sizes = [3000]

[budget]
processes = 3
min_time = 0
min_iters = 40
max_iters = 40
warmup_time = 0
warmup_iters = 1
"#;

/// Half a millisecond, the rounding of the log's timestamps, and a little for the
/// float formatting of seconds since the epoch.
const TIMESTAMP_SLACK_NS: u64 = 500_000 + 1_000;

fn text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// One interval as the crate's reader gives it.
struct Read {
    start: Duration,
    length: Duration,
    max: f64,
    histogram: Histogram<u64>,
}

/// A whole `.hlog`, read with the hdrhistogram crate: its BaseTime and StartTime (each
/// exactly once) and its intervals in file order.
struct Log {
    base: Duration,
    start: Duration,
    intervals: Vec<Read>,
}

fn read_log(path: &Path) -> Log {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut base, mut start, mut intervals) = (Vec::new(), Vec::new(), Vec::new());
    for entry in IntervalLogIterator::new(&bytes) {
        match entry.unwrap_or_else(|e| panic!("{}: {e:?}", path.display())) {
            LogEntry::BaseTime(t) => base.push(t),
            LogEntry::StartTime(t) => start.push(t),
            LogEntry::Interval(i) => {
                assert!(
                    i.tag().is_none(),
                    "untagged, as HistogramLogProcessor merges by default"
                );
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .unwrap();
                let histogram: Histogram<u64> = Deserializer::new()
                    .deserialize(&mut raw.as_slice())
                    .unwrap();
                intervals.push(Read {
                    start: i.start_timestamp(),
                    length: i.duration(),
                    max: i.max(),
                    histogram,
                });
            }
        }
    }
    assert_eq!((base.len(), start.len()), (1, 1), "{}", path.display());
    Log {
        base: base[0],
        start: start[0],
        intervals,
    }
}

/// `started` of a results folder's folder.json, in ns since the epoch.
fn folder_started_ns(dir: &Path) -> u64 {
    let status: serde_json::Value = serde_json::from_str(&text(&dir.join("folder.json"))).unwrap();
    let t = humantime::parse_rfc3339(status["started"].as_str().unwrap()).unwrap();
    t.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

fn ns(d: Duration) -> u64 {
    d.as_nanos() as u64
}

/// Checks the parts every log shares: BaseTime is the measurement's start
/// (folder.json), StartTime the same, intervals in time order, each at `starts[k]`
/// lasting `lengths[k]`; returns the intervals' histograms added up.
fn check_times(path: &Path, log: &Log, started_ns: u64, spans: &[(u64, u64)]) -> Histogram<u64> {
    let what = path.display();
    assert_eq!(
        ns(log.base),
        started_ns,
        "{what}: BaseTime is folder.json's started"
    );
    assert_eq!(log.start, log.base, "{what}");
    assert_eq!(
        log.intervals.len(),
        spans.len(),
        "{what}: one interval each"
    );
    assert!(
        log.intervals.windows(2).all(|w| w[0].start <= w[1].start),
        "{what}: in time order"
    );
    let mut merged: Option<Histogram<u64>> = None;
    for (i, (start_ns, length_ns)) in log.intervals.iter().zip(spans) {
        let at = ns(log.base + i.start);
        assert!(
            at.abs_diff(*start_ns) <= TIMESTAMP_SLACK_NS,
            "{what}: interval at {at} ns, its record says {start_ns}"
        );
        assert!(
            ns(i.length).abs_diff(*length_ns) <= TIMESTAMP_SLACK_NS,
            "{what}: interval of {:?}, its record says {length_ns} ns",
            i.length
        );
        assert_eq!(
            i.max,
            i.histogram.max() as f64,
            "{what}: Interval_Max in ns"
        );
        match &mut merged {
            None => merged = Some(i.histogram.clone()),
            Some(m) => m.add(&i.histogram).unwrap(),
        }
    }
    merged.unwrap()
}

/// The merged histogram is the one the `.us.csv` and `.us.hgrm` of `stem` show.
fn check_merged(dir: &Path, stem: &str, merged: &Histogram<u64>) {
    let h = dir.join("histograms");
    let rows = hdr::parse_csv(&text(&h.join(format!("{stem}.us.csv")))).unwrap();
    let expected = hdr::rows(merged, 1.0);
    assert_eq!(rows.len(), expected.len(), "{stem}");
    for (r, e) in rows.iter().zip(&expected) {
        assert_eq!(
            (r.value * 1000.0).round(),
            e.value,
            "{stem}: {r:?} vs {e:?}"
        );
        assert_eq!(r.total_count, e.total_count, "{stem}");
    }
    let hgrm = text(&h.join(format!("{stem}.us.hgrm")));
    assert!(
        hgrm.contains(&format!("Total count    = {:>12}]", merged.len())),
        "{stem}: {hgrm}"
    );
    assert!(
        hgrm.contains(&format!(
            "#[Max     = {:>12.3}",
            merged.max() as f64 / 1000.0
        )),
        "{stem}: {hgrm}"
    );
}

/// Runs the experiment (with `processes` per cell) into a temporary folder; returns it
/// and the results folder.
fn run_experiment(processes: u32) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("hlog.toml");
    std::fs::write(
        &exp,
        EXPERIMENT.replace("processes = 3", &format!("processes = {processes}")),
    )
    .unwrap();
    let out = dir.path().join("res");
    let o = lab(&[
        "run",
        "--no-calibration",
        "--out",
        out.to_str().unwrap(),
        exp.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    (dir, out.join("hlog"))
}

/// Each cell's records in round order, from runs/ (`<id>.json`, or `<id>.pN.json`).
fn cells(res: &Path) -> BTreeMap<String, Vec<RunRecord>> {
    let mut cells: BTreeMap<String, Vec<(u32, RunRecord)>> = BTreeMap::new();
    for e in std::fs::read_dir(res.join("runs")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let stem = name.strip_suffix(".json").unwrap();
        let (id, round) = match stem.rsplit_once(".p") {
            Some((id, n)) => (id.to_string(), n.parse().unwrap()),
            None => (stem.to_string(), 1),
        };
        let r = RunRecord::from_json(&text(&res.join("runs").join(&name))).unwrap();
        cells.entry(id).or_default().push((round, r));
    }
    cells
        .into_iter()
        .map(|(id, mut v)| {
            v.sort_by_key(|(round, _)| *round);
            (id, v.into_iter().map(|(_, r)| r).collect())
        })
        .collect()
}

fn check_run_folder(res: &Path, processes: usize) {
    let started = folder_started_ns(res);
    let cells = cells(res);
    assert_eq!(cells.len(), 2, "{cells:?}", cells = cells.keys());
    for (id, records) in &cells {
        assert_eq!(records.len(), processes, "{id}");
        let path = res.join("histograms").join(format!("{id}.ns.hlog"));
        let log = read_log(&path);
        let spans: Vec<(u64, u64)> = records
            .iter()
            .map(|r| {
                (
                    r.measured_start_unix_ns
                        .expect("a new record keeps its start"),
                    r.measured_wall_ns,
                )
            })
            .collect();
        let merged = check_times(&path, &log, started, &spans);
        for (k, (i, r)) in log.intervals.iter().zip(records).enumerate() {
            let own = r.histogram.decode().unwrap();
            let h = &i.histogram;
            assert!(
                *h == own,
                "{id} process {}: the record's own histogram",
                k + 1
            );
            // And by the record's own figures, which the worker computed before encoding.
            assert_eq!(h.len(), r.samples, "{id} p{}", k + 1);
            assert_eq!(h.min(), r.min_ns, "{id} p{}", k + 1);
            assert_eq!(h.max(), r.max_ns, "{id} p{}", k + 1);
            for (q, v) in [
                (0.5, r.p50_ns),
                (0.9, r.p90_ns),
                (0.99, r.p99_ns),
                (0.999, r.p999_ns),
            ] {
                assert_eq!(h.value_at_quantile(q), v, "{id} p{} at {q}", k + 1);
            }
            // Intervals do not overlap: processes run one at a time.
            if k > 0 {
                let prev = &log.intervals[k - 1];
                assert!(prev.start + prev.length <= i.start + Duration::from_millis(1));
            }
        }
        assert_eq!(merged.len(), records.iter().map(|r| r.samples).sum::<u64>());
        check_merged(res, id, &merged);
        // The lab's file name scheme: the log sits beside the other two.
        assert!(text(&path).contains("#[Values in nanoseconds"));
    }
}

#[test]
fn run_logs_hold_one_interval_per_process_each_its_own_histogram() {
    let (_dir, res) = run_experiment(3);
    check_run_folder(&res, 3);
    // `report` writes them again from runs/ alone, byte for byte.
    let files = || -> BTreeMap<String, String> {
        std::fs::read_dir(res.join("histograms"))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name().into_string().unwrap(), text(&e.path()))
            })
            .collect()
    };
    let before = files();
    assert_eq!(
        before.len(),
        2 * 3,
        "csv, hgrm and hlog per cell: {:?}",
        before.keys()
    );
    std::fs::remove_dir_all(res.join("histograms")).unwrap();
    let o = lab(&["report", res.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(files(), before);
}

#[test]
fn a_cell_of_one_process_has_a_log_of_one_interval() {
    let (_dir, res) = run_experiment(1);
    check_run_folder(&res, 1);
}

/// One allocator's runs of an exec or sweep record against its log: one interval per
/// run, holding that run's wall time.
fn check_exec_allocator(dir: &Path, stem: &str, a: &alloclab::model::command::AllocatorRuns) {
    let path = dir.join("histograms").join(format!("{stem}.ns.hlog"));
    let log = read_log(&path);
    let spans: Vec<(u64, u64)> = a
        .runs
        .iter()
        .map(|r| {
            (
                r.start_unix_ns.expect("a new run keeps its start"),
                r.wall_ns,
            )
        })
        .collect();
    let merged = check_times(&path, &log, folder_started_ns(dir), &spans);
    for (i, r) in log.intervals.iter().zip(&a.runs) {
        assert_eq!(i.histogram.len(), 1, "{stem} round {}", r.round);
        assert!(
            i.histogram.equivalent(i.histogram.max(), r.wall_ns),
            "{stem} round {}: {} vs {}",
            r.round,
            i.histogram.max(),
            r.wall_ns
        );
    }
    assert_eq!(merged.len(), a.runs.len() as u64);
    check_merged(dir, stem, &merged);
}

#[test]
fn exec_and_sweep_logs_hold_one_interval_per_run() {
    let dir = tempfile::tempdir().unwrap();
    let t = temporaries();
    let t = t.to_str().unwrap();
    let ex = dir.path().join("exec");
    let o = lab(&[
        "exec",
        "--allocators",
        "system,jemalloc",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--out",
        ex.to_str().unwrap(),
        "--",
        t,
        "--iterations",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let record: ExecRecord = serde_json::from_str(&text(&ex.join("exec.json"))).unwrap();
    assert_eq!(record.allocators.len(), 2);
    for a in &record.allocators {
        assert_eq!(a.runs.len(), 3, "{}", a.allocator);
        check_exec_allocator(&ex, &alloclab::model::spec::file_stem(&a.allocator), a);
    }

    let sw = dir.path().join("sweep");
    let o = lab(&[
        "sweep",
        "--allocators",
        "system",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--sizes",
        "1000,2000",
        "--out",
        sw.to_str().unwrap(),
        "--",
        t,
        "--elements",
        "{size}",
        "--iterations",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for size in [1000, 2000] {
        let point: ExecRecord =
            serde_json::from_str(&text(&sw.join(format!("points/n{size}.json")))).unwrap();
        let a = &point.allocators[0];
        assert_eq!(a.runs.len(), 2);
        check_exec_allocator(&sw, &format!("system-n{size}"), a);
    }
}

/// Reads every `.hlog` under `dir` with Python's hdrh.log.HistogramLogReader and prints,
/// per file, each interval's count, percentiles, max and absolute start and end (ms).
const PYTHON_READER: &str = r#"
import glob, json, os, sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
out = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "histograms", "*.hlog"))):
    reader = HistogramLogReader(path, HdrHistogram(1, 3600 * 10**9, 3))
    rows = []
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        rows.append({
            "count": h.get_total_count(),
            "p50": h.get_value_at_percentile(50.0),
            "p90": h.get_value_at_percentile(90.0),
            "p99": h.get_value_at_percentile(99.0),
            "max": h.get_max_value(),
            "start_ms": h.get_start_time_stamp(),
            "end_ms": h.get_end_time_stamp(),
        })
    out[os.path.basename(path)] = rows
print(json.dumps(out))
"#;

#[test]
#[ignore = "needs Python's hdrhistogram package (pip install hdrhistogram); .ci/run installs it and runs it with --ignored"]
fn python_hdrhistogram_reads_every_interval_back() {
    let probe = std::process::Command::new("python3")
        .args(["-c", "import hdrh.log"])
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "cannot run here: python3 cannot import hdrh (pip install hdrhistogram): {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!("cannot run here: no python3: {e}"),
    }
    let (_dir, res) = run_experiment(3);
    let o = std::process::Command::new("python3")
        .args(["-c", PYTHON_READER])
        .arg(&res)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let read = json(&o.stdout);
    let cells = cells(&res);
    assert_eq!(read.as_object().unwrap().len(), cells.len(), "{read}");
    for (id, records) in &cells {
        let rows = read[format!("{id}.ns.hlog")].as_array().unwrap();
        assert_eq!(rows.len(), records.len(), "{id}: one interval per process");
        for (row, r) in rows.iter().zip(records) {
            let u = |k: &str| row[k].as_u64().unwrap_or_else(|| panic!("{k} in {row}"));
            assert_eq!(u("count"), r.samples, "{id}");
            // Python's percentiles and the worker's (the Rust crate's) are both the
            // highest value equivalent to the sample at that rank.
            for (k, v) in [("p50", r.p50_ns), ("p90", r.p90_ns), ("p99", r.p99_ns)] {
                assert_eq!(u(k), v, "{id} {k}");
            }
            assert_eq!(u("max"), r.max_ns, "{id} max");
            let start_ns = r.measured_start_unix_ns.unwrap();
            let ms = |k: &str| row[k].as_f64().unwrap();
            assert!(
                (ms("start_ms") * 1e6 - start_ns as f64).abs() <= TIMESTAMP_SLACK_NS as f64,
                "{id}: Python places it at {} ms, the record at {start_ns} ns",
                ms("start_ms")
            );
            assert!(
                ((ms("end_ms") - ms("start_ms")) * 1e6 - r.measured_wall_ns as f64).abs()
                    <= 2.0 * TIMESTAMP_SLACK_NS as f64,
                "{id}: length"
            );
        }
    }
}

/// HdrHistogram's own jar: `ALLOCLAB_HDRHISTOGRAM_JAR`, else Debian's
/// (libhdrhistogram-java).
fn hdrhistogram_jar() -> std::path::PathBuf {
    std::env::var_os("ALLOCLAB_HDRHISTOGRAM_JAR")
        .map(Into::into)
        .unwrap_or_else(|| "/usr/share/java/hdrhistogram.jar".into())
}

#[test]
#[ignore = "needs java and HdrHistogram's jar (Debian: libhdrhistogram-java); .ci/run installs them and runs it with --ignored"]
fn hdrhistograms_log_processor_merges_each_cell_into_its_hgrm() {
    let jar = hdrhistogram_jar();
    assert!(
        jar.is_file(),
        "cannot run here: no {} (apt-get install libhdrhistogram-java, or set ALLOCLAB_HDRHISTOGRAM_JAR)",
        jar.display()
    );
    let (dir, res) = run_experiment(3);
    let started = folder_started_ns(&res);
    for (id, records) in &cells(&res) {
        let out = dir.path().join(format!("{id}.processed"));
        let o = std::process::Command::new("java")
            .arg("-cp")
            .arg(&jar)
            .args(["org.HdrHistogram.HistogramLogProcessor", "-csv", "-i"])
            .arg(res.join("histograms").join(format!("{id}.ns.hlog")))
            .args(["-outputValueUnitRatio", "1000", "-o"])
            .arg(&out)
            .output()
            .unwrap_or_else(|e| panic!("cannot run here: no java: {e}"));
        assert!(o.status.success(), "{}", stderr(&o));
        // Its interval log: one row per process, in round order.
        let intervals = text(&out);
        let rows: Vec<Vec<f64>> = intervals
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('"'))
            .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
            .collect();
        assert_eq!(rows.len(), records.len(), "{id}: {intervals}");
        let mut total = 0;
        for (row, r) in rows.iter().zip(records) {
            // Timestamp (the interval's end, since StartTime), Int_Count, Int_50%,
            // Int_90%, Int_Max (µs), Total_Count, ...
            let end_ns = r.measured_start_unix_ns.unwrap() + r.measured_wall_ns - started;
            assert!(
                (row[0] * 1e9 - end_ns as f64).abs() <= 2.0 * TIMESTAMP_SLACK_NS as f64,
                "{id}: ends at {} s, its record at {end_ns} ns",
                row[0]
            );
            assert_eq!(row[1] as u64, r.samples, "{id}");
            assert_eq!(row[2], r.p50_ns as f64 / 1000.0, "{id} p50");
            assert_eq!(row[3], r.p90_ns as f64 / 1000.0, "{id} p90");
            assert_eq!(row[4], r.max_ns as f64 / 1000.0, "{id} max");
            total += r.samples;
            assert_eq!(row[5] as u64, total, "{id}");
        }
    }
    // Its percentile distribution of each whole log: the lab's .us.hgrm and .us.csv,
    // every row and the footer, for cells of 3 processes and of 1, and exec's runs.
    let checked = same_as_java(&jar, dir.path(), &res.join("histograms"));
    assert_eq!(checked, cells(&res).len());
    let (one_dir, one) = run_experiment(1);
    assert_eq!(
        same_as_java(&jar, one_dir.path(), &one.join("histograms")),
        cells(&one).len()
    );
    let ex = dir.path().join("exec");
    let o = lab(&[
        "exec",
        "--allocators",
        "system,jemalloc",
        "--runs",
        "4",
        "--warmup",
        "0",
        "--out",
        ex.to_str().unwrap(),
        "--",
        temporaries().to_str().unwrap(),
        "--iterations",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(same_as_java(&jar, dir.path(), &ex.join("histograms")), 2);
}

/// Every `.ns.hlog` in `histograms` processed by HdrHistogram's HistogramLogProcessor
/// (µs), in its text and CSV forms, equals the lab's `.us.hgrm` and `.us.csv` of the
/// same stem line for line (Java's two lines of comment before the text form aside):
/// the number of files checked.
fn same_as_java(jar: &Path, scratch: &Path, histograms: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(histograms).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let Some(stem) = name.strip_suffix(".ns.hlog") else {
            continue;
        };
        for (csv, ours) in [(false, ".us.hgrm"), (true, ".us.csv")] {
            let out = scratch.join(format!("{stem}.java{}", if csv { "-csv" } else { "" }));
            let mut java = std::process::Command::new("java");
            java.arg("-cp")
                .arg(jar)
                .arg("org.HdrHistogram.HistogramLogProcessor");
            if csv {
                java.arg("-csv");
            }
            let o = java
                .arg("-i")
                .arg(histograms.join(&name))
                .args(["-outputValueUnitRatio", "1000", "-o"])
                .arg(&out)
                .output()
                .unwrap_or_else(|e| panic!("cannot run here: no java: {e}"));
            assert!(o.status.success(), "{}", stderr(&o));
            let theirs: Vec<String> = text(&out.with_extension(format!(
                "{}.hgrm",
                out.extension().map_or(String::new(), |x| x.to_string_lossy().into_owned())
            )))
            .lines()
            .filter(|l| !l.starts_with("#[Overall") && !l.starts_with("#[StartTime"))
            .map(str::to_string)
            .collect();
            let lab: Vec<String> = text(&histograms.join(format!("{stem}{ours}")))
                .lines()
                .map(str::to_string)
                .collect();
            assert_eq!(lab.len(), theirs.len(), "{stem}{ours}");
            for (k, (l, j)) in lab.iter().zip(&theirs).enumerate() {
                assert_eq!(l, j, "{stem}{ours} line {}", k + 1);
            }
        }
        n += 1;
    }
    n
}
