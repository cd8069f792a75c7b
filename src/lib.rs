//! alloclab: identical temporary-array workloads under different allocators, measured
//! with HDR latency histograms, page-fault and syscall counts.
//!
//! Workers (`src/bin/alloclab-<allocator>.rs`) set the global allocator and call
//! [`worker::main`]; the driver (`src/main.rs`) spawns them, one process per run.

/// A line on stderr (as `eprintln!` takes it) that a closed stderr does not turn into a
/// panic: `alloclab compare … 2>&1 | head -3` drops what nobody reads, as `ls | head`
/// does, and the run goes on to its end and its exit status.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod counters;
#[warn(missing_docs)]
pub mod engine;
pub mod error;
pub mod export;
pub mod fmt;
#[warn(missing_docs)]
pub mod model;
pub mod ui;
pub mod worker;

pub use worker::alloc_count::CountingAlloc;
