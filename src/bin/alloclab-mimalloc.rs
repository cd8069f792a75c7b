//! Worker under mimalloc (the mimalloc crate, which bundles mimalloc's C sources).
use alloclab::{envinfo::AllocatorInfo, spec::Allocator, CountingAlloc};

#[global_allocator]
static GLOBAL: CountingAlloc<mimalloc::MiMalloc> = CountingAlloc(mimalloc::MiMalloc);

extern "C" {
    /// mimalloc's version as major*10000 + minor*100 + patch (mimalloc.h).
    fn mi_version() -> std::os::raw::c_int;
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
    };
    alloclab::worker::main(Allocator::Mimalloc, info)
}
