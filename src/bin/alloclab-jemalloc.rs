//! Worker under jemalloc (tikv-jemallocator).
use alloclab::{envinfo::AllocatorInfo, spec::Allocator, CountingAlloc};

#[global_allocator]
static GLOBAL: CountingAlloc<tikv_jemallocator::Jemalloc> =
    CountingAlloc(tikv_jemallocator::Jemalloc);

fn main() -> std::process::ExitCode {
    let version = tikv_jemalloc_ctl::version::read()
        .map(|v| {
            format!(
                "jemalloc {}",
                v.trim_matches(|c: char| c == '\0' || c.is_whitespace())
            )
        })
        .unwrap_or_else(|e| format!("jemalloc (version unreadable: {e})"));
    let info = AllocatorInfo {
        version,
        crates: format!(
            "tikv-jemallocator {}, tikv-jemalloc-sys {}",
            env!("ALLOCLAB_JEMALLOCATOR_VERSION"),
            env!("ALLOCLAB_JEMALLOC_SYS_VERSION")
        ),
    };
    alloclab::worker::main(Allocator::Jemalloc, info)
}
