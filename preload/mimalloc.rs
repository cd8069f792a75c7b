//! `LD_PRELOAD` library for `alloclab exec`: the whole malloc family over the mimalloc
//! that libmimalloc-sys builds (the same C sources and options as the in-process
//! `alloclab-mimalloc` worker; mimalloc reads its `MIMALLOC_*` variables itself).

#[macro_use]
#[path = "family.rs"]
mod family;

use libmimalloc_sys as mi;
use std::ffi::{c_char, c_int, c_long, c_void};

struct Mimalloc;

// SAFETY: every method forwards to mimalloc's function of the same C contract
// (mimalloc's alloc-posix.c gives the posix_memalign/memalign/valloc/pvalloc semantics).
unsafe impl family::Backend for Mimalloc {
    unsafe fn malloc(size: usize) -> *mut c_void {
        // SAFETY: C malloc contract.
        unsafe { mi::mi_malloc(size) }
    }
    unsafe fn calloc(n: usize, size: usize) -> *mut c_void {
        // SAFETY: C calloc contract.
        unsafe { mi_calloc(n, size) }
    }
    unsafe fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: C realloc contract.
        unsafe { mi::mi_realloc(p, size) }
    }
    unsafe fn free(p: *mut c_void) {
        // SAFETY: C free contract.
        unsafe { mi::mi_free(p) }
    }
    unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
        // SAFETY: C posix_memalign contract.
        unsafe { mi_posix_memalign(out, align, size) }
    }
    unsafe fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
        // SAFETY: C aligned_alloc contract.
        unsafe { mi_aligned_alloc(align, size) }
    }
    unsafe fn memalign(align: usize, size: usize) -> *mut c_void {
        // SAFETY: C memalign contract.
        unsafe { mi_memalign(align, size) }
    }
    unsafe fn valloc(size: usize) -> *mut c_void {
        // SAFETY: C valloc contract.
        unsafe { mi_valloc(size) }
    }
    unsafe fn pvalloc(size: usize) -> *mut c_void {
        // SAFETY: C pvalloc contract.
        unsafe { mi_pvalloc(size) }
    }
    unsafe fn usable_size(p: *mut c_void) -> usize {
        // SAFETY: C malloc_usable_size contract.
        unsafe { mi_malloc_usable_size(p) }
    }
}

extern "C" {
    // mimalloc's POSIX entry points (alloc-posix.c), compiled into libmimalloc-sys's
    // library but declared there only with its `extended` feature.
    fn mi_calloc(n: usize, size: usize) -> *mut c_void;
    fn mi_posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int;
    fn mi_aligned_alloc(align: usize, size: usize) -> *mut c_void;
    fn mi_memalign(align: usize, size: usize) -> *mut c_void;
    fn mi_valloc(size: usize) -> *mut c_void;
    fn mi_pvalloc(size: usize) -> *mut c_void;
    fn mi_malloc_usable_size(p: *const c_void) -> usize;
    fn mi_version() -> c_int;
    fn mi_option_get(option: c_int) -> c_long;
}

export_malloc_family!(Mimalloc);

/// Which allocator this preload library carries (read by `alloclab exec`'s probe).
#[no_mangle]
pub extern "C" fn alloclab_preload_allocator() -> *const c_char {
    c"mimalloc".as_ptr()
}

/// mimalloc's version (major*10000 + minor*100 + patch), from this very library.
#[no_mangle]
pub extern "C" fn alloclab_preload_mi_version() -> c_int {
    // SAFETY: mi_version takes nothing and returns a constant.
    unsafe { mi_version() }
}

/// An option's current value, from this very library (as mimalloc's `mi_option_get`).
///
/// # Safety
/// `option` is a valid `mi_option_t` index.
#[no_mangle]
pub unsafe extern "C" fn alloclab_preload_mi_option_get(option: c_int) -> c_long {
    // SAFETY: forwarded with the caller's contract.
    unsafe { mi_option_get(option) }
}
