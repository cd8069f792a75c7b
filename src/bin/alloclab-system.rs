//! Worker under the C library's malloc (glibc on Linux).
use alloclab::{envinfo::AllocatorInfo, spec::Allocator, CountingAlloc};

#[global_allocator]
static GLOBAL: CountingAlloc<std::alloc::System> = CountingAlloc(std::alloc::System);

fn main() -> std::process::ExitCode {
    let info = AllocatorInfo {
        version: format!("glibc {}", alloclab::envinfo::glibc_version()),
        crates: String::new(),
        read_knob: alloclab::envinfo::glibc_tunable,
        stats: alloclab::envinfo::glibc_stats,
    };
    alloclab::worker::main(Allocator::System, info)
}
