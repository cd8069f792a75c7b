//! The tests that read a count of the whole machine — the kernel's huge-page faults, which
//! it keeps per machine, not per process — and so must not share it with other tests'
//! workers (a mimalloc worker beside them faults huge pages into their count: measured,
//! 4–7 % more bytes "faulted in" in four attempts out of four under `make test`). A
//! binary of its own, which `cargo test` runs after the others, never beside them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../all/common.rs"]
mod common;

mod hugepages;
