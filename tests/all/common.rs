//! Helpers shared by the integration tests: run the real binaries, parse what they print.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use alloclab::model::record::RunRecord;
use alloclab::model::spec::Allocator;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The release build's folder (`target/release`): this test binary is in its `deps/`.
/// The lab's binaries and examples there are built by `cargo test --release` at the
/// top of the workspace (the lab's package has a test of its own, so cargo builds them).
pub fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary is in target/<profile>/deps")
        .to_path_buf()
}

/// One of the lab's binaries, which must be built.
fn built(name: &str) -> PathBuf {
    let p = build_dir().join(name);
    assert!(
        p.is_file(),
        "{} is not built: run `cargo test --release` (or `make test`) at the top of the repository",
        p.display()
    );
    p
}

/// The repository's top folder (its `src/`, `tests/data/`, README.md).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the repository")
        .to_path_buf()
}

/// `experiments/<file>` of the repository, as an argument.
pub fn experiment_file(file: &str) -> String {
    repo_root()
        .join("experiments")
        .join(file)
        .display()
        .to_string()
}

pub fn worker_path(a: Allocator) -> PathBuf {
    built(a.worker_binary())
}

pub fn driver_path() -> PathBuf {
    built("alloclab")
}

/// `examples/temporaries` (built by `cargo test`): the founding case's out-of-place
/// pattern through libc's malloc.
pub fn temporaries() -> PathBuf {
    example("temporaries")
}

/// `examples/<name>`, built by `cargo test`.
pub fn example(name: &str) -> PathBuf {
    let p = driver_path().parent().unwrap().join("examples").join(name);
    assert!(p.is_file(), "{} is built by cargo test", p.display());
    p
}

/// A worker command with a short, fixed budget: exactly `iters` measured iterations.
pub fn worker_cmd(a: Allocator, variant: &str, size: u64, iters: u64) -> Command {
    let mut c = Command::new(worker_path(a));
    c.args([
        "--workload=scale",
        &format!("--variant={variant}"),
        &format!("--size={size}"),
        "--min-time=0",
        &format!("--min-iters={iters}"),
        &format!("--max-iters={iters}"),
        "--warmup-time=0",
        "--warmup-iters=3",
    ]);
    c
}

pub fn parse_record(out: &Output) -> RunRecord {
    assert!(
        out.status.success(),
        "worker failed: {:?}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8");
    RunRecord::from_json(text.trim()).unwrap_or_else(|e| panic!("bad record: {e}\n{text}"))
}

pub fn run_worker(a: Allocator, variant: &str, size: u64, iters: u64) -> RunRecord {
    parse_record(
        &worker_cmd(a, variant, size, iters)
            .output()
            .expect("worker starts"),
    )
}

/// The events the perf cross-checks compare.
pub const PERF_EVENTS: [&str; 6] = [
    "page-faults",
    "syscalls:sys_enter_brk",
    "syscalls:sys_enter_mmap",
    "syscalls:sys_enter_munmap",
    "syscalls:sys_enter_madvise",
    "syscalls:sys_enter_mremap",
];

/// Whether `perf stat` can count [`PERF_EVENTS`] here, or why not.
pub fn perf_usable() -> Result<(), String> {
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", &PERF_EVENTS.join(","), "--", "true"])
        .output()
        .map_err(|e| format!("perf not runnable: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || err.contains("<not supported>") || err.contains("<not counted>") {
        return Err(format!(
            "perf stat cannot count {PERF_EVENTS:?} here: {}",
            err.trim()
        ));
    }
    Ok(())
}

/// `perf stat` of `cmd` (its program, arguments and environment): perf's count per event
/// and the command's output.
pub fn perf_stat(cmd: &Command) -> (BTreeMap<String, u64>, Output) {
    let dir = tempfile::tempdir().unwrap();
    let perf_out = dir.path().join("perf.csv");
    let mut perf = Command::new("perf");
    perf.args(["stat", "-x,", "-o"])
        .arg(&perf_out)
        .args(["-e", &PERF_EVENTS.join(","), "--"])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => perf.env(k, v),
            None => perf.env_remove(k),
        };
    }
    let out = perf.output().expect("perf starts");
    let text = std::fs::read_to_string(&perf_out).unwrap();
    let mut counts = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let cells: Vec<&str> = line.split(',').collect();
        if cells.len() >= 3 {
            if let Ok(v) = cells[0].parse::<u64>() {
                counts.insert(cells[2].to_string(), v);
            }
        }
    }
    assert_eq!(counts.len(), PERF_EVENTS.len(), "perf output: {text}");
    (counts, out)
}

/// Makes `cmd` run as user and group `nobody` (65534), without supplementary groups.
pub fn drop_to_nobody(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setgroups/setgid/setuid between fork and exec, async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(65534) != 0
                || libc::setuid(65534) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Writes `text` as the experiment `<name>.toml` in `dir`, runs it into `dir/out`
/// (`alloclab run --no-calibration`), fails the test unless it succeeded, and returns the
/// experiment's results folder.
pub fn run_experiment(dir: &Path, name: &str, text: &str) -> PathBuf {
    let exp = dir.join(format!("{name}.toml"));
    std::fs::write(&exp, text).unwrap();
    let out = dir.join("out");
    let o = lab(&[
        "run",
        "--no-calibration",
        "--out",
        out.to_str().unwrap(),
        exp.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    out.join(name)
}

/// Runs the driver with `args` and waits for it.
pub fn lab(args: &[&str]) -> Output {
    Command::new(driver_path()).args(args).output().unwrap()
}

/// What a finished command wrote to stdout.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What a finished command wrote to stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Parses JSON, showing the text when it does not parse.
pub fn json(text: &[u8]) -> serde_json::Value {
    serde_json::from_slice(text)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(text)))
}

/// The console's text with its wrapped lines joined again: a line that starts with two
/// spaces continues the one before it.
pub fn unwrapped(text: &str) -> String {
    let mut out = String::new();
    for l in text.lines() {
        if l.starts_with("  ") && !out.is_empty() {
            out.pop();
            out.push(' ');
            out.push_str(l.trim_start());
        } else {
            out.push_str(l);
        }
        out.push('\n');
    }
    out
}

/// The rows of a console table: lines that start with one of `allocators` and then a
/// variant (not the answer's lines, whose third word is "vs", nor a wrapped note's
/// continuation, which starts with spaces).
pub fn table_rows<'a>(text: &'a str, allocators: &[&str]) -> Vec<&'a str> {
    text.lines()
        .filter(|l| {
            // A row starts at the line's start; a wrapped note's continuation does not.
            let w: Vec<&str> = l.split_whitespace().take(3).collect();
            !l.starts_with(' ')
                && w.len() == 3
                && allocators.contains(&w[0])
                && ["in-place", "out-of-place", "reuse", "fused"].contains(&w[1])
                && w[2] != "vs"
        })
        .collect()
}

/// The texts of a findings.json's answer items, in order.
pub fn answer_texts(findings: &serde_json::Value) -> Vec<&str> {
    findings["answer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["text"].as_str().unwrap())
        .collect()
}

/// A results folder reads without the lab's manual: its README.md (the lab's guide)
/// describes every file of its manifest and names every column of every CSV file it
/// holds (histograms/*.us.csv by HdrHistogram's own names), and no CSV cell holds JSON.
pub fn assert_guided(folder: &std::path::Path) {
    let guide = std::fs::read_to_string(folder.join("README.md"))
        .unwrap_or_else(|e| panic!("{}: no README.md: {e}", folder.display()));
    assert!(guide.starts_with("# What this folder holds"), "{guide}");
    assert!(!guide.contains("not described here"), "{guide}");
    let status = json(&std::fs::read(folder.join("folder.json")).unwrap());
    let files: Vec<&str> = status["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(files.contains(&"README.md"), "{files:?}");
    for f in &files {
        // Each file's family: its folder (runs/, histograms/, …) or its own name.
        let family = match f.split_once('/') {
            Some((dir, _)) => format!("`{dir}/"),
            None => format!("`{f}`"),
        };
        assert!(
            guide.contains(&family),
            "{f} ({family}) not in the guide:\n{guide}"
        );
        if !f.ends_with(".csv") {
            continue;
        }
        let text = std::fs::read_to_string(folder.join(f)).unwrap();
        let mut r = csv::Reader::from_reader(text.as_bytes());
        for column in r.headers().unwrap().iter() {
            assert!(
                guide.contains(&format!("`{column}`")),
                "{f}'s column {column} not in the guide:\n{guide}"
            );
        }
        for row in r.records() {
            for cell in row.unwrap().iter() {
                assert!(
                    !cell.starts_with('[') && !cell.starts_with('{'),
                    "{f}: JSON in a cell: {cell}"
                );
            }
        }
    }
}

/// The driver with `args`, interrupted (SIGINT to its process group, as Ctrl-C) once
/// `runs` progress lines are on its stderr (a line per run: ALLOCLAB_PROGRESS=runs), so
/// that the interrupt comes after runs ended and before the planned ones did; its output.
pub fn interrupted_after_runs(args: &[&str], runs: usize) -> Output {
    use std::io::{BufRead, Read};
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(driver_path())
        .args(args)
        .env("ALLOCLAB_PROGRESS", "runs")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        stdout.read_to_end(&mut v).unwrap();
        v
    });
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut text = String::new();
    let mut progress = 0;
    while progress < runs {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "ended early: {text}");
        progress += usize::from(line.starts_with('['));
        text.push_str(&line);
    }
    // SAFETY: kill takes plain integers; the group is the driver's own.
    assert_eq!(unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) }, 0);
    err.read_to_string(&mut text).unwrap();
    let status = child.wait().unwrap();
    Output {
        status,
        stdout: reader.join().unwrap(),
        stderr: text.into_bytes(),
    }
}

/// The CSV's rows as maps of its header's names to the cells.
pub fn csv_rows(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            assert_eq!(rec.len(), header.len(), "{}", path.display());
            header
                .iter()
                .cloned()
                .zip(rec.iter().map(String::from))
                .collect()
        })
        .collect()
}
