//! Worker under mimalloc (the mimalloc crate, which bundles mimalloc's C sources).
use alloclab::{envinfo::AllocatorInfo, spec::Allocator, CountingAlloc};

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
}

/// mimalloc's process information: current and peak RSS and commit, in bytes.
fn stats() -> alloclab::envinfo::AllocatorStats {
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

/// A knob's effective value from mi_option_get. The indices are those of `mi_option_t`
/// in the mimalloc 3.3 bundled with the pinned libmimalloc-sys; a test checks them by
/// setting each option through its environment variable and reading it back.
fn read_knob(name: &str) -> Result<String, String> {
    let (index, boolean) = match name {
        "arena_eager_commit" => (4, false),
        "purge_decommits" => (5, true),
        "allow_large_os_pages" => (6, true),
        "purge_delay" => (15, false),
        "allow_thp" => (43, true),
        _ => return Err(format!("no read-back for mimalloc knob {name}")),
    };
    // SAFETY: mi_option_get takes an option index in range and returns its value.
    let v = unsafe { mi_option_get(index) };
    Ok(if boolean {
        (v != 0).to_string()
    } else {
        v.to_string()
    })
}

fn main() -> std::process::ExitCode {
    // SAFETY: mi_version takes nothing and returns a constant.
    let v = unsafe { mi_version() };
    let info = AllocatorInfo {
        version: format!("mimalloc {}.{}.{}", v / 10000, v / 100 % 100, v % 100),
        crates: format!(
            "mimalloc {}, libmimalloc-sys {}",
            env!("ALLOCLAB_MIMALLOC_CRATE_VERSION"),
            env!("ALLOCLAB_LIBMIMALLOC_SYS_VERSION")
        ),
        read_knob,
        stats,
    };
    alloclab::worker::main(Allocator::Mimalloc, info)
}
