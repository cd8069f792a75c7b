//! Linux-only counting: perf_event_open tracepoint counters and the ptrace + seccomp
//! tracer of memory syscalls.

pub mod perf;
pub mod ptrace;
