//! `LD_PRELOAD` library for `alloclab exec` and library runs: the whole malloc family over
//! the Google TCMalloc that libtcmalloc-sys builds (the same C++ sources as the
//! `alloclab-tcmalloc` worker), through TCMalloc's own C entry points.

#[macro_use]
#[path = "family.rs"]
mod family;

use libtcmalloc_sys as _;
use std::ffi::{c_char, c_int, c_void};

struct Tcmalloc;

// SAFETY: every method forwards to TCMalloc's function of the same C contract
// (tcmalloc.cc defines them as the bodies of its libc overrides).
unsafe impl family::Backend for Tcmalloc {
    unsafe fn malloc(size: usize) -> *mut c_void {
        // SAFETY: C malloc contract.
        unsafe { TCMallocInternalMalloc(size) }
    }
    unsafe fn calloc(n: usize, size: usize) -> *mut c_void {
        // SAFETY: C calloc contract.
        unsafe { TCMallocInternalCalloc(n, size) }
    }
    unsafe fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: C realloc contract.
        unsafe { TCMallocInternalRealloc(p, size) }
    }
    unsafe fn free(p: *mut c_void) {
        // SAFETY: C free contract.
        unsafe { TCMallocInternalFree(p) }
    }
    unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
        // SAFETY: C posix_memalign contract.
        unsafe { TCMallocInternalPosixMemalign(out, align, size) }
    }
    unsafe fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
        // SAFETY: C aligned_alloc contract.
        unsafe { TCMallocInternalAlignedAlloc(align, size) }
    }
    unsafe fn memalign(align: usize, size: usize) -> *mut c_void {
        // SAFETY: C memalign contract.
        unsafe { TCMallocInternalMemalign(align, size) }
    }
    unsafe fn valloc(size: usize) -> *mut c_void {
        // SAFETY: C valloc contract.
        unsafe { TCMallocInternalValloc(size) }
    }
    unsafe fn pvalloc(size: usize) -> *mut c_void {
        // SAFETY: C pvalloc contract.
        unsafe { TCMallocInternalPvalloc(size) }
    }
    unsafe fn usable_size(p: *mut c_void) -> usize {
        // SAFETY: C malloc_usable_size contract.
        unsafe { TCMallocInternalMallocSize(p) }
    }
}

extern "C" {
    // tcmalloc/tcmalloc.cc, compiled into libtcmalloc-sys's static library.
    fn TCMallocInternalMalloc(size: usize) -> *mut c_void;
    fn TCMallocInternalCalloc(n: usize, size: usize) -> *mut c_void;
    fn TCMallocInternalRealloc(p: *mut c_void, size: usize) -> *mut c_void;
    fn TCMallocInternalFree(p: *mut c_void);
    fn TCMallocInternalPosixMemalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int;
    fn TCMallocInternalAlignedAlloc(align: usize, size: usize) -> *mut c_void;
    fn TCMallocInternalMemalign(align: usize, size: usize) -> *mut c_void;
    fn TCMallocInternalValloc(size: usize) -> *mut c_void;
    fn TCMallocInternalPvalloc(size: usize) -> *mut c_void;
    fn TCMallocInternalMallocSize(p: *mut c_void) -> usize;
}

export_malloc_family!(Tcmalloc);

/// Which allocator this preload library carries (read by the preload probe).
#[no_mangle]
pub extern "C" fn alloclab_preload_allocator() -> *const c_char {
    c"tcmalloc".as_ptr()
}
