//! Worker under the C library's malloc (glibc on Linux).
use alloclab::{counters::envinfo::AllocatorInfo, model::spec::Allocator, CountingAlloc};

#[global_allocator]
static GLOBAL: CountingAlloc<std::alloc::System> = CountingAlloc(std::alloc::System);

fn main() -> std::process::ExitCode {
    let info = AllocatorInfo {
        version: format!("glibc {}", alloclab::counters::envinfo::glibc_version()),
        crates: String::new(),
        read_knob: alloclab::counters::envinfo::glibc_tunable,
        stats: alloclab::counters::envinfo::glibc_stats,
        release: alloclab::counters::envinfo::glibc_release,
    };
    alloclab::worker::main(Allocator::System, info)
}
