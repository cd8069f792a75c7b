//! `LD_PRELOAD` library for `alloclab exec` and library runs: the whole malloc family over
//! the snmalloc that snmalloc-sys builds (the same C++ sources as the `alloclab-snmalloc`
//! worker), through its `sn_` C entry points and its aligned allocation.

#[macro_use]
#[path = "family.rs"]
mod family;

use snmalloc_sys as sn;
use std::ffi::{c_char, c_int, c_void};

struct Snmalloc;

/// EINVAL for an alignment that is not a power of two.
fn bad_alignment(align: usize) -> bool {
    !align.is_power_of_two()
}

// SAFETY: malloc/calloc/realloc/free/usable_size forward to snmalloc's functions of the
// same C contract; the aligned forms check the alignment as C requires, then allocate
// with snmalloc's aligned allocation, whose blocks `sn_free` frees like any other.
unsafe impl family::Backend for Snmalloc {
    unsafe fn malloc(size: usize) -> *mut c_void {
        // SAFETY: C malloc contract.
        unsafe { sn::sn_malloc(size) }
    }
    unsafe fn calloc(n: usize, size: usize) -> *mut c_void {
        // SAFETY: C calloc contract.
        unsafe { sn::sn_calloc(n, size) }
    }
    unsafe fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: C realloc contract.
        unsafe { sn::sn_realloc(p, size) }
    }
    unsafe fn free(p: *mut c_void) {
        // SAFETY: C free contract.
        unsafe { sn::sn_free(p) }
    }
    unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
        if bad_alignment(align) || align < std::mem::size_of::<*mut c_void>() {
            return libc::EINVAL;
        }
        // SAFETY: a power-of-two alignment and a non-zero size.
        let p = unsafe { sn::sn_rust_alloc(align, size.max(1)) };
        if p.is_null() {
            return libc::ENOMEM;
        }
        // SAFETY: `out` is writable (the caller's contract).
        unsafe { *out = p };
        0
    }
    unsafe fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
        if bad_alignment(align) {
            // SAFETY: __errno_location returns this thread's errno.
            unsafe { *libc::__errno_location() = libc::EINVAL };
            return std::ptr::null_mut();
        }
        // SAFETY: a power-of-two alignment and a non-zero size.
        unsafe { sn::sn_rust_alloc(align, size.max(1)) }
    }
    unsafe fn usable_size(p: *mut c_void) -> usize {
        // SAFETY: C malloc_usable_size contract.
        unsafe { sn::sn_malloc_usable_size(p) }
    }
}

export_malloc_family!(Snmalloc);

/// Which allocator this preload library carries (read by the preload probe).
#[no_mangle]
pub extern "C" fn alloclab_preload_allocator() -> *const c_char {
    c"snmalloc".as_ptr()
}
