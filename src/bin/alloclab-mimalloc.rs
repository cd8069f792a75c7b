//! Worker under mimalloc (the mimalloc crate, which bundles mimalloc's C sources).
use alloclab::{counters::envinfo::AllocatorInfo, model::spec::Allocator, CountingAlloc};

#[global_allocator]
static GLOBAL: CountingAlloc<mimalloc::MiMalloc> = CountingAlloc(mimalloc::MiMalloc);

extern "C" {
    /// mimalloc's version as major*10000 + minor*100 + patch (mimalloc.h).
    fn mi_version() -> std::os::raw::c_int;
    /// An option's current value (mimalloc.h).
    fn mi_option_get(option: std::os::raw::c_int) -> std::os::raw::c_long;
    /// Process information as mimalloc sees it (mimalloc.h).
    fn mi_process_info(
        elapsed_msecs: *mut usize,
        user_msecs: *mut usize,
        system_msecs: *mut usize,
        current_rss: *mut usize,
        peak_rss: *mut usize,
        current_commit: *mut usize,
        peak_commit: *mut usize,
        page_faults: *mut usize,
    );
    /// Frees what it can of the thread's and the abandoned heaps' memory; with `force`,
    /// purges every free page at once (mimalloc.h).
    fn mi_collect(force: bool);
}

/// `mi_collect(true)` on the main thread (the burst's thread: the helpers are gone).
fn release() -> Result<String, String> {
    // SAFETY: mi_collect takes a bool and may be called from any thread.
    unsafe { mi_collect(true) };
    Ok("mi_collect(true) on the main thread".into())
}

/// mimalloc's process information: current and peak RSS and commit, in bytes.
fn stats() -> alloclab::counters::envinfo::AllocatorStats {
    let mut v = [0usize; 8];
    let [a, b, c, d, e, f, g, h] = &mut v;
    // SAFETY: every pointer is to a distinct, writable usize.
    unsafe { mi_process_info(a, b, c, d, e, f, g, h) };
    Ok(vec![
        ("current_rss", v[3] as u64),
        ("peak_rss", v[4] as u64),
        ("current_commit", v[5] as u64),
        ("peak_commit", v[6] as u64),
    ])
}

/// A knob's effective value from mi_option_get.
fn read_knob(name: &str) -> Result<String, alloclab::counters::Unavailable> {
    alloclab::counters::readback::mimalloc_option(mi_option_get, name)
}

fn main() -> std::process::ExitCode {
    // SAFETY: mi_version takes nothing and returns a constant.
    let v = unsafe { mi_version() };
    let info = AllocatorInfo {
        version: alloclab::counters::readback::mimalloc_version(v),
        crates: format!(
            "mimalloc {}, libmimalloc-sys {}",
            env!("ALLOCLAB_MIMALLOC_CRATE_VERSION"),
            env!("ALLOCLAB_LIBMIMALLOC_SYS_VERSION")
        ),
        read_knob,
        stats,
        release,
    };
    alloclab::worker::main(Allocator::Mimalloc, info)
}
