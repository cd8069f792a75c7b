//! alloclab: identical temporary-array workloads under different allocators, measured
//! with HDR latency histograms, page-fault and syscall counts.
//!
//! Workers (`src/bin/alloclab-<allocator>.rs`) set the global allocator and call
//! [`worker::main`]; the driver (`src/main.rs`) spawns them, one process per run.

pub mod alloc_count;
pub mod calibrate;
pub mod cli;
pub mod cliff;
pub mod counters;
pub mod driver;
pub mod envinfo;
pub mod exec;
pub mod experiment;
pub mod export;
pub mod knobs;
pub mod measure;
pub mod readback;
pub mod record;
pub mod report;
pub mod runner;
pub mod spec;
pub mod tune;
pub mod worker;
pub mod workload;

pub use alloc_count::CountingAlloc;
