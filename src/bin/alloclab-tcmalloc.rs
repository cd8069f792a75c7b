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

/// TCMalloc's own account: bytes in use by the program, the heap it holds, and its parts
/// free: in its page heap, its per-CPU, thread, transfer and central caches; besides the
/// heap, what it has already returned to the OS and its own metadata.
///
/// `generic.heap_size` is its page heap's system bytes less those returned to the OS
/// (global_stats.cc `HeapSizeBytes`), and `generic.current_allocated_bytes` that heap
/// less every free part below (`InUseByApp`): heap_size = current_allocated_bytes +
/// the caches + pageheap_free_bytes, read at one moment. `pageheap_unmapped_bytes` is
/// outside heap_size already.
fn stats() -> alloclab::counters::envinfo::AllocatorStats {
    const PROPERTIES: [(&str, &str); 10] = [
        ("current_allocated_bytes", "generic.current_allocated_bytes"),
        ("heap_size", "generic.heap_size"),
        ("pageheap_free_bytes", "tcmalloc.pageheap_free_bytes"),
        ("cpu_free", "tcmalloc.cpu_free"),
        ("thread_cache_free", "tcmalloc.thread_cache_free"),
        ("transfer_cache_free", "tcmalloc.transfer_cache_free"),
        (
            "sharded_transfer_cache_free",
            "tcmalloc.sharded_transfer_cache_free",
        ),
        ("central_cache_free", "tcmalloc.central_cache_free"),
        (
            "pageheap_unmapped_bytes",
            "tcmalloc.pageheap_unmapped_bytes",
        ),
        ("metadata_bytes", "tcmalloc.metadata_bytes"),
    ];
    // Room for every figure first: nothing is allocated between two reads.
    let mut out = Vec::with_capacity(PROPERTIES.len());
    for (key, name) in PROPERTIES {
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
