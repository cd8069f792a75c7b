//! `alloclab serve`: a RESP server of the lab's own (examples/resp_kv.rs) and, where it is
//! installed, redis-server, started under each allocator and driven open loop.

use crate::common::{example, lab, stderr, stdout, unwrapped};
use std::path::Path;

fn read_record(dir: &Path) -> alloclab::model::serve::ServeRecord {
    let text = std::fs::read_to_string(dir.join("serve.json")).unwrap();
    alloclab::model::serve::ServeRecord::from_json(&text).unwrap()
}

fn quantile(h: &alloclab::model::record::EncodedHistogram, q: f64) -> u64 {
    h.decode().unwrap().value_at_quantile(q)
}

/// A server that holds every request for 40 ms once in 500: the open-loop load does not
/// hide it. At 5,000 requests/s the store is stalled 40 % of the time, so more than 1 %
/// of the requests arrive during a stall and wait in it: the p99 from the intended start
/// is above 20 ms, while the median request, arriving between stalls, is answered within
/// a few ms. Every figure parses back from the folder, percentiles are monotonic, the
/// server was stopped by SHUTDOWN and its memory was read.
#[test]
fn a_stall_of_the_server_is_in_the_tail_from_the_intended_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s");
    let server = example("resp_kv");
    let o = lab(&[
        "serve",
        "--allocators",
        "system,mimalloc",
        "--rates",
        "5k",
        "--seconds",
        "2",
        "--processes",
        "1",
        "--out",
        out.to_str().unwrap(),
        "--",
        server.to_str().unwrap(),
        "--port",
        "{port}",
        "--stall-every",
        "500",
        "--stall-ms",
        "40",
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let record = read_record(&out);
    assert!(record.complete);
    for a in &record.allocators {
        assert!(a.failure.is_none(), "{a:?}");
        let run = &a.runs[0];
        assert!(
            run.clean_stop,
            "{}: stopped by SHUTDOWN NOSAVE: {}",
            a.allocator, run.ended
        );
        assert!(run.filled_keys > 10_000, "{}", run.filled_keys);
        let p = &run.phases[0];
        assert_eq!(p.sent, 10_000, "{}: 2 s at 5,000/s", a.allocator);
        assert_eq!(p.answered, p.sent);
        let q: Vec<u64> = [0.5, 0.99, 0.999, 1.0]
            .iter()
            .map(|&x| quantile(&p.from_intended, x))
            .collect();
        assert!(q.windows(2).all(|w| w[0] <= w[1]), "{q:?}");
        assert!(q[1] > 20_000_000, "{}: p99 {} ns", a.allocator, q[1]);
        assert!(q[0] < 20_000_000, "{}: median {} ns", a.allocator, q[0]);
        // From the intended start is never shorter than from the write.
        for x in [0.5, 0.99, 1.0] {
            assert!(quantile(&p.from_intended, x) >= quantile(&p.from_sent, x));
        }
        // The server's own count of what it holds, and its resident set, were read.
        let used = p.end.used_memory.expect("resp_kv answers INFO memory");
        assert!(
            used > 1 << 20 && p.end.rss_bytes > used,
            "{used} {}",
            p.end.rss_bytes
        );
        assert!(p.end.minflt >= p.start.minflt);
        assert!(!run.memory.is_empty(), "{:?}", run.memory_unavailable);
    }
    let screen = unwrapped(&stdout(&o));
    assert!(
        screen.starts_with("at 5,000 requests/s, p99 from the intended start"),
        "the answer first: {screen}"
    );
    assert!(screen.contains("resident bytes per byte the server says it holds"));
    // findings.json holds the answer word for word as the screen prints it.
    let findings = crate::common::json(&std::fs::read(out.join("findings.json")).unwrap());
    let first = findings["answer"][0]["text"].as_str().unwrap();
    assert!(screen.starts_with(first), "{first}");
    for f in [
        "summary.csv",
        "REPORT.md",
        "report.html",
        "histograms/system.5000-per-s.us.hgrm",
        "histograms/mimalloc.5000-per-s.from-sent.us.hgrm",
        "memory/system.csv",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let csv = crate::common::csv_rows(&out.join("summary.csv"));
    assert_eq!(csv.len(), 2);
    assert!(csv[0]["p99_ns"].parse::<f64>().unwrap() > 20e6);
}

/// Bad input is refused before anything starts, saying what would be right, and leaves
/// no folder; a server that ends before it is ready fails its row with its exit status.
#[test]
fn a_server_without_a_port_or_one_that_exits_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    let server = example("resp_kv");
    let o = lab(&[
        "serve",
        "--out",
        out.to_str().unwrap(),
        "--",
        server.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("put {port} where it takes its port"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "nothing written for bad input");
    let o = lab(&["serve", "--rates", "fast", "--", "true", "{port}"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("write 10k,50k"), "{}", stderr(&o));
    // `false` takes the port and exits 1 at once.
    let o = lab(&[
        "serve",
        "--allocators",
        "system",
        "--processes",
        "1",
        "--seconds",
        "0.5",
        "--out",
        out.to_str().unwrap(),
        "--",
        "false",
        "{port}",
    ]);
    assert!(!o.status.success());
    let text = unwrapped(&stdout(&o));
    assert!(
        text.contains("system failed: the server ended before it answered PING")
            && text.contains("exited with status 1"),
        "{text}{}",
        stderr(&o)
    );
    let record = read_record(&out);
    assert!(record.allocators[0].failure.is_some());
}

/// Ctrl-C during the second server process: the first one's figures are kept, the
/// folder says it is incomplete, and no server is left running.
#[test]
fn an_interrupted_session_keeps_the_finished_processes_and_stops_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("i");
    let server = example("resp_kv");
    let o = crate::common::interrupted_after_runs(
        &[
            "serve",
            "--allocators",
            "system",
            "--rates",
            "2k",
            "--seconds",
            "1",
            "--processes",
            "3",
            "--out",
            out.to_str().unwrap(),
            "--",
            server.to_str().unwrap(),
            "--port",
            "{port}",
            // Unused by the server: marks this test's servers apart from the others'.
            "--stall-ms",
            "7",
        ],
        2,
    );
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let record = read_record(&out);
    assert!(!record.complete);
    assert_eq!(
        record.allocators[0].runs.len(),
        1,
        "the first process is kept"
    );
    let status = std::fs::read_to_string(out.join("folder.json")).unwrap();
    assert!(status.contains("\"complete\": false"), "{status}");
    assert!(std::fs::read_to_string(out.join("REPORT.md"))
        .unwrap()
        .contains("Incomplete"));
    let ports: Vec<u16> = record.allocators[0].runs.iter().map(|r| r.port).collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left = std::process::Command::new("pgrep")
        .args(["-f", "resp_kv --port [0-9]+ --stall-ms 7"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&left.stdout).trim().is_empty(),
        "a server was left running ({ports:?})"
    );
}

/// redis-server (Debian's package): ready, filled, driven and stopped under glibc's
/// malloc (the shim: it links libjemalloc itself) and mimalloc, its used_memory read.
#[test]
#[ignore = "needs redis-server (apt-get install redis-server); .ci/run installs it and runs the ignored tests"]
fn redis_server_runs_under_each_allocator() {
    let path = alloclab::engine::spawn::resolve_program(
        std::ffi::OsStr::new("redis-server"),
        std::env::var_os("PATH").as_deref(),
    )
    .expect("redis-server is installed (apt-get install redis-server)");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = lab(&[
        "serve",
        "--allocators",
        "system,mimalloc",
        "--rates",
        "5k",
        "--seconds",
        "1",
        "--processes",
        "1",
        "--out",
        out.to_str().unwrap(),
        "--",
        path.to_str().unwrap(),
        "--port",
        "{port}",
        "--save",
        "",
        "--appendonly",
        "no",
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let record = read_record(&out);
    // Debian's redis-server links libjemalloc: under system it runs glibc's malloc
    // through the shim, and the record names the library it links.
    let ldd = std::process::Command::new("ldd")
        .arg(&path)
        .output()
        .unwrap();
    let links_jemalloc = String::from_utf8_lossy(&ldd.stdout).contains("libjemalloc.so.2");
    assert_eq!(
        record.allocators[0].own_allocator.as_deref() == Some("libjemalloc.so.2"),
        links_jemalloc,
        "{:?}",
        record.allocators[0]
    );
    for a in &record.allocators {
        let run = &a.runs[0];
        assert!(run.clean_stop, "{}", run.ended);
        let p = &run.phases[0];
        assert_eq!(p.answered, p.sent);
        assert!(p.end.used_memory.is_some_and(|u| u > 1 << 20), "{p:?}");
    }
}

/// Sessions that cannot measure anything say why, briefly: a fixed --port that something
/// else already answers on is refused before a server starts (the load would drive the
/// other program), without taking the server's own `--port N` for a misplaced option of
/// alloclab's; a phase too short for a p99 is refused; a server that answers PING with
/// something other than RESP is named as such, its empty stderr not quoted, and the
/// folder's serve.json parses.
#[test]
fn a_taken_port_a_phase_too_short_and_a_server_not_speaking_resp_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let server = example("resp_kv");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = dir.path().join("p");
    let o = lab(&[
        "serve",
        "--allocators",
        "system",
        "--processes",
        "1",
        "--seconds",
        "0.5",
        "--port",
        &port,
        "--out",
        out.to_str().unwrap(),
        "--",
        server.to_str().unwrap(),
        "--port",
        &port,
    ]);
    assert!(!o.status.success());
    let err = unwrapped(&stderr(&o));
    assert!(
        err.contains(&format!("something already listens on 127.0.0.1:{port}")),
        "{err}"
    );
    assert!(!err.contains("warning: --port"), "{err}");
    drop(taken);

    let o = lab(&[
        "serve",
        "--rates",
        "1k",
        "--seconds",
        "0.001",
        "--",
        "true",
        "{port}",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a p99 needs at least 100"),
        "{}",
        stderr(&o)
    );

    // A server that answers every line with a line that is not RESP.
    let script = dir.path().join("garbage.py");
    std::fs::write(
        &script,
        "import socket,sys,threading\n\
         s=socket.socket();s.bind(('127.0.0.1',int(sys.argv[1])));s.listen(8)\n\
         def h(c):\n\
         \x20   while c.recv(4096): c.sendall(b'%%garbage\\r\\n')\n\
         while True:\n\
         \x20   c,_=s.accept();threading.Thread(target=h,args=(c,),daemon=True).start()\n",
    )
    .unwrap();
    if std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_err()
    {
        eprintln!("skipped the RESP part: no python3");
        return;
    }
    let out = dir.path().join("g");
    let o = lab(&[
        "serve",
        "--allocators",
        "system",
        "--processes",
        "1",
        "--seconds",
        "0.5",
        "--ready-timeout",
        "2",
        "--out",
        out.to_str().unwrap(),
        "--",
        "python3",
        script.to_str().unwrap(),
        "{port}",
    ]);
    assert!(!o.status.success());
    let text = unwrapped(&stdout(&o));
    assert!(
        text.contains("did not answer PING with +PONG")
            && text.contains("not a RESP reply")
            && !text.contains("its stderr ended with:")
            && !text.contains("the server's: ;"),
        "{text}"
    );
    let record = read_record(&out);
    assert!(record.complete && record.allocators[0].failure.is_some());
}

/// alloclab killed outright (SIGKILL) while its first server is still starting: the
/// folder already holds a serve.json that parses and says it is incomplete, and the
/// server dies with it.
#[test]
fn a_session_killed_before_its_first_server_ends_leaves_a_readable_incomplete_record() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k");
    let mut child = std::process::Command::new(crate::common::driver_path())
        .args([
            "serve",
            "--allocators",
            "system",
            "--processes",
            "1",
            "--seconds",
            "0.5",
            "--ready-timeout",
            "30",
            "--out",
            out.to_str().unwrap(),
            "--",
            "sleep",
            "41.25",
            "{port}",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let begun = std::time::Instant::now();
    while !out.join("serve.json").is_file() && begun.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let record = read_record(&out);
    assert!(!record.complete);
    assert!(record.allocators[0].runs.is_empty());
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = std::process::Command::new("pgrep")
        .args(["-f", "^sleep 41.25 "])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&left.stdout).trim().is_empty(),
        "the server was left running"
    );
}
