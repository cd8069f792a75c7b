//! `LD_PRELOAD` library for `alloclab exec` and library runs: the whole malloc family over
//! the rpmalloc that rpmalloc-sys builds (the same C sources, with per-thread set-up on
//! first use, as the `alloclab-rpmalloc` worker).

#[macro_use]
#[path = "family.rs"]
mod family;

use rpmalloc_sys as rp;
use std::ffi::{c_char, c_int, c_void};

struct Rpmalloc;

// SAFETY: every method forwards to rpmalloc's function of the same C contract, the aligned
// forms after the alignment check C requires; memalign, valloc and pvalloc are the family's
// defaults over its aligned allocation.
unsafe impl family::Backend for Rpmalloc {
    unsafe fn malloc(size: usize) -> *mut c_void {
        // SAFETY: C malloc contract.
        unsafe { rp::rpmalloc(size) }
    }
    unsafe fn calloc(n: usize, size: usize) -> *mut c_void {
        // SAFETY: C calloc contract.
        unsafe { rp::rpcalloc(n, size) }
    }
    unsafe fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: C realloc contract.
        unsafe { rp::rprealloc(p, size) }
    }
    unsafe fn free(p: *mut c_void) {
        // SAFETY: C free contract.
        unsafe { rp::rpfree(p) }
    }
    unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
        // rpmalloc does not check the alignment; C requires EINVAL.
        if !align.is_power_of_two() || align < std::mem::size_of::<*mut c_void>() {
            return libc::EINVAL;
        }
        // SAFETY: C posix_memalign contract, alignment checked.
        unsafe { rp::rpposix_memalign(out, align, size) }
    }
    unsafe fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
        if !align.is_power_of_two() {
            // SAFETY: __errno_location returns this thread's errno.
            unsafe { *libc::__errno_location() = libc::EINVAL };
            return std::ptr::null_mut();
        }
        // SAFETY: C aligned_alloc contract, alignment checked.
        unsafe { rp::rpaligned_alloc(align, size) }
    }
    unsafe fn usable_size(p: *mut c_void) -> usize {
        // SAFETY: C malloc_usable_size contract.
        unsafe { rp::rpmalloc_usable_size(p) }
    }
}

export_malloc_family!(Rpmalloc);

/// Which allocator this preload library carries (read by the preload probe).
#[no_mangle]
pub extern "C" fn alloclab_preload_allocator() -> *const c_char {
    c"rpmalloc".as_ptr()
}
