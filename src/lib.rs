//! alloclab: identical temporary-array workloads under different allocators, measured
//! with HDR latency histograms, page-fault and syscall counts.
//!
//! Workers (`src/bin/alloclab-<allocator>.rs`) set the global allocator and call
//! [`worker::main`]; the driver (`src/main.rs`) spawns them, one process per run.

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod counters;
#[warn(missing_docs)]
pub mod engine;
pub mod error;
pub mod export;
pub mod files;
pub mod fmt;
#[warn(missing_docs)]
pub mod model;
pub mod ui;
pub mod worker;

pub use worker::alloc_count::CountingAlloc;
