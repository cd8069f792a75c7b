//! Worker under Google's TCMalloc (tcmalloc-better, which bundles TCMalloc's and Abseil's
//! C++ sources).
use alloclab::{counters::envinfo::AllocatorInfo, model::spec::Allocator, CountingAlloc};
use std::ffi::c_char;

#[global_allocator]
static GLOBAL: CountingAlloc<tcmalloc_better::TCMalloc> = CountingAlloc(tcmalloc_better::TCMalloc);

extern "C" {
    // TCMalloc's C entry point behind `tcmalloc::MallocExtension::GetNumericProperty`
    // (malloc_extension.h).
    fn MallocExtension_Internal_GetNumericProperty(
        name: *const c_char,
        name_len: usize,
        value: *mut usize,
    ) -> bool;
    // TCMalloc's C entry point behind `tcmalloc::MallocExtension::ReleaseMemoryToSystem`:
    // releases up to that many bytes of free memory, returns how many it released.
    fn MallocExtension_Internal_ReleaseMemoryToSystem(num_bytes: usize) -> usize;
}

/// `ReleaseMemoryToSystem` with no limit: every free page of its page heap.
fn release() -> Result<String, String> {
    // SAFETY: takes a byte count, returns one.
    let released = unsafe { MallocExtension_Internal_ReleaseMemoryToSystem(usize::MAX) };
    Ok(format!("ReleaseMemoryToSystem released {released} bytes"))
}

fn property(name: &str) -> Option<u64> {
    let mut v = 0usize;
    // SAFETY: `name` is valid for `name.len()` bytes; `v` is a writable usize.
    let ok = unsafe {
        MallocExtension_Internal_GetNumericProperty(name.as_ptr().cast(), name.len(), &mut v)
    };
    ok.then_some(v as u64)
}

/// TCMalloc's own account: bytes in use by the program, the heap it holds, and of that
/// what is free in its page heap and what it has already returned to the OS.
fn stats() -> alloclab::counters::envinfo::AllocatorStats {
    let mut out = Vec::new();
    for (key, name) in [
        ("current_allocated_bytes", "generic.current_allocated_bytes"),
        ("heap_size", "generic.heap_size"),
        ("pageheap_free_bytes", "tcmalloc.pageheap_free_bytes"),
        (
            "pageheap_unmapped_bytes",
            "tcmalloc.pageheap_unmapped_bytes",
        ),
    ] {
        match property(name) {
            Some(v) => out.push((key, v)),
            None => return Err(format!("TCMalloc does not report {name}")),
        }
    }
    Ok(out)
}

fn main() -> std::process::ExitCode {
    let info = AllocatorInfo {
        version: alloclab::counters::readback::bundled_version(Allocator::Tcmalloc)
            .unwrap_or_default(),
        crates: format!(
            "tcmalloc-better {}, libtcmalloc-sys {}",
            env!("ALLOCLAB_TCMALLOC_BETTER_VERSION"),
            env!("ALLOCLAB_LIBTCMALLOC_SYS_VERSION")
        ),
        read_knob: |_| Err("TCMalloc has no knobs here".into()),
        stats,
        release,
    };
    alloclab::worker::main(Allocator::Tcmalloc, info)
}
