//! `LD_PRELOAD` library for `alloclab exec`: the whole malloc family over the jemalloc
//! that tikv-jemalloc-sys builds (with its `_rjem_` prefix, so it reads its options from
//! `_RJEM_MALLOC_CONF`, exactly as the in-process `alloclab-jemalloc` worker does).

#[macro_use]
#[path = "family.rs"]
mod family;

use std::ffi::{c_char, c_int, c_void};
use tikv_jemalloc_sys as je;

struct Jemalloc;

// SAFETY: every method forwards to jemalloc's function of the same C contract.
unsafe impl family::Backend for Jemalloc {
    unsafe fn malloc(size: usize) -> *mut c_void {
        // SAFETY: C malloc contract.
        unsafe { je::malloc(size) }
    }
    unsafe fn calloc(n: usize, size: usize) -> *mut c_void {
        // SAFETY: C calloc contract.
        unsafe { je::calloc(n, size) }
    }
    unsafe fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: C realloc contract.
        unsafe { je::realloc(p, size) }
    }
    unsafe fn free(p: *mut c_void) {
        // SAFETY: C free contract.
        unsafe { je::free(p) }
    }
    unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
        // SAFETY: C posix_memalign contract.
        unsafe { je::posix_memalign(out, align, size) }
    }
    unsafe fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
        // SAFETY: C aligned_alloc contract.
        unsafe { je::aligned_alloc(align, size) }
    }
    unsafe fn memalign(align: usize, size: usize) -> *mut c_void {
        // SAFETY: C memalign contract.
        unsafe { _rjem_memalign(align, size) }
    }
    unsafe fn valloc(size: usize) -> *mut c_void {
        // SAFETY: C valloc contract.
        unsafe { _rjem_valloc(size) }
    }
    unsafe fn pvalloc(size: usize) -> *mut c_void {
        // SAFETY: C pvalloc contract.
        unsafe { _rjem_pvalloc(size) }
    }
    unsafe fn usable_size(p: *mut c_void) -> usize {
        // SAFETY: C malloc_usable_size contract.
        unsafe { je::malloc_usable_size(p) }
    }
}

extern "C" {
    // In jemalloc's C library (it overrides these on glibc) but not declared by
    // tikv-jemalloc-sys.
    fn _rjem_memalign(align: usize, size: usize) -> *mut c_void;
    fn _rjem_valloc(size: usize) -> *mut c_void;
    fn _rjem_pvalloc(size: usize) -> *mut c_void;
}

export_malloc_family!(Jemalloc);

/// Which allocator this preload library carries (read by `alloclab exec`'s probe).
#[no_mangle]
pub extern "C" fn alloclab_preload_allocator() -> *const c_char {
    c"jemalloc".as_ptr()
}

/// jemalloc's `mallctl`, for `alloclab exec` to read the version and `opt.*` back from the
/// very library a program runs with.
///
/// # Safety
/// As jemalloc's `mallctl`.
#[no_mangle]
pub unsafe extern "C" fn alloclab_preload_mallctl(
    name: *const c_char,
    oldp: *mut c_void,
    oldlenp: *mut usize,
    newp: *mut c_void,
    newlen: usize,
) -> c_int {
    // SAFETY: forwarded with the caller's contract.
    unsafe { je::mallctl(name, oldp, oldlenp, newp, newlen) }
}
