//! The integration tests, in one binary: linked once, and its tests share the machine's
//! cores instead of running binary after binary. Each module drives the real binaries
//! (and the library where a property is read from its types); `no_alloc` is a binary of
//! its own, because it installs a counting global allocator.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod ci_formats;
mod cli;
mod counting;
mod diff;
mod docs;
mod engine;
mod evidence;
mod exec;
mod faults;
mod headers;
mod hlog;
mod html;
mod knobs;
mod layers;
mod layout;
mod libraries;
mod memory;
mod noise;
mod outputs;
mod perf_crosscheck;
mod program;
mod run;
mod serve;
mod service;
mod trace;
mod workers;
