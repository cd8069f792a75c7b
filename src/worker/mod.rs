//! Everything that runs inside a worker process: the entry point, the workloads, the
//! measured loop and the allocation counter.

pub mod alloc_count;
pub mod buffers;
pub mod entry;
pub mod kernel;
pub mod measure;
pub mod record;
pub mod service;
pub mod workload;

pub use entry::{main, run, WorkerArgs};
