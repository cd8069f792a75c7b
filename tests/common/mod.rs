//! Helpers shared by the integration tests: run the real binaries, parse what they print.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use alloclab::record::RunRecord;
use alloclab::spec::Allocator;
use std::path::PathBuf;
use std::process::{Command, Output};

pub fn worker_path(a: Allocator) -> PathBuf {
    PathBuf::from(match a {
        Allocator::System => env!("CARGO_BIN_EXE_alloclab-system"),
        Allocator::Jemalloc => env!("CARGO_BIN_EXE_alloclab-jemalloc"),
        Allocator::Mimalloc => env!("CARGO_BIN_EXE_alloclab-mimalloc"),
    })
}

pub fn driver_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_alloclab"))
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
