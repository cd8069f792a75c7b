//! Linux-only counting: perf_event_open tracepoint counters and the ptrace + seccomp
//! tracer of memory syscalls, and the recorder of every page fault's address.

pub mod faults;
pub mod perf;
pub mod ptrace;
