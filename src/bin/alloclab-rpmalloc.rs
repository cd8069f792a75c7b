//! Worker under rpmalloc (the rpmalloc crate, which bundles rpmalloc's C sources).
use alloclab::{counters::envinfo::AllocatorInfo, model::spec::Allocator, CountingAlloc};

#[global_allocator]
static GLOBAL: CountingAlloc<rpmalloc::RpMalloc> = CountingAlloc(rpmalloc::RpMalloc);

fn main() -> std::process::ExitCode {
    let info = AllocatorInfo {
        version: alloclab::counters::readback::bundled_version(Allocator::Rpmalloc)
            .unwrap_or_default(),
        crates: format!(
            "rpmalloc {}, rpmalloc-sys {}",
            env!("ALLOCLAB_RPMALLOC_CRATE_VERSION"),
            env!("ALLOCLAB_RPMALLOC_SYS_VERSION")
        ),
        read_knob: |_| {
            Err("rpmalloc has no run-time settings (its configuration must be given before the first allocation, which the Rust runtime makes before main)".into())
        },
        stats: || {
            Err("rpmalloc keeps statistics only when built with ENABLE_STATISTICS, which would slow the allocator measured".into())
        },
        release: alloclab::counters::envinfo::no_release,
    };
    alloclab::worker::main(Allocator::Rpmalloc, info)
}
