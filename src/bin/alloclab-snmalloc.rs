//! Worker under snmalloc (snmalloc-rs, which bundles snmalloc's C++ sources).
use alloclab::{counters::envinfo::AllocatorInfo, model::spec::Allocator, CountingAlloc};

#[global_allocator]
static GLOBAL: CountingAlloc<snmalloc_rs::SnMalloc> = CountingAlloc(snmalloc_rs::SnMalloc);

/// snmalloc's own account of the memory it holds from the OS: current and peak.
fn stats() -> alloclab::counters::envinfo::AllocatorStats {
    let (mut current, mut peak) = (0usize, 0usize);
    // SAFETY: both pointers are to distinct, writable usizes.
    unsafe { snmalloc_sys::sn_rust_statistics(&mut current, &mut peak) };
    Ok(vec![
        ("current_memory_usage", current as u64),
        ("peak_memory_usage", peak as u64),
    ])
}

fn main() -> std::process::ExitCode {
    let info = AllocatorInfo {
        version: alloclab::counters::readback::bundled_version(Allocator::Snmalloc)
            .unwrap_or_default(),
        crates: format!(
            "snmalloc-rs {}, snmalloc-sys {}",
            env!("ALLOCLAB_SNMALLOC_RS_VERSION"),
            env!("ALLOCLAB_SNMALLOC_SYS_VERSION")
        ),
        read_knob: |_| Err("snmalloc has no run-time settings".into()),
        stats,
        release: alloclab::counters::envinfo::no_release,
    };
    alloclab::worker::main(Allocator::Snmalloc, info)
}
