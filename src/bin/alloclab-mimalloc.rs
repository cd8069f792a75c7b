//! Worker under mimalloc (the mimalloc crate, which bundles mimalloc's C sources).
use alloclab::{envinfo::AllocatorInfo, spec::Allocator, CountingAlloc};

#[global_allocator]
static GLOBAL: CountingAlloc<mimalloc::MiMalloc> = CountingAlloc(mimalloc::MiMalloc);

extern "C" {
    /// mimalloc's version as major*10000 + minor*100 + patch (mimalloc.h).
    fn mi_version() -> std::os::raw::c_int;
    /// An option's current value (mimalloc.h).
    fn mi_option_get(option: std::os::raw::c_int) -> std::os::raw::c_long;
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
    };
    alloclab::worker::main(Allocator::Mimalloc, info)
}
