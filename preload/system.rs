//! `LD_PRELOAD` library for `alloclab exec`: the whole malloc family over glibc's own
//! malloc, for a program that links an allocator library itself (Debian's redis-server
//! needs libjemalloc.so.2). Without a preload its `malloc` would be that library's; this
//! shim comes first in the search order and forwards to glibc's `__libc_*` entry points, so
//! that the `system` row really measures glibc's malloc.
//!
//! `malloc_usable_size` is glibc's too: looked up in libc.so.6 itself (dlopen with
//! RTLD_NOLOAD, then dlsym on that handle), because the next definition in the search
//! order may be the program's own allocator's.

#[macro_use]
#[path = "family.rs"]
mod family;

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Glibc;

/// glibc's `malloc_usable_size`, once looked up (0: not yet).
static USABLE_SIZE: AtomicUsize = AtomicUsize::new(0);

/// The signature of `malloc_usable_size`.
type UsableSize = unsafe extern "C" fn(*mut c_void) -> usize;

/// glibc's own `malloc_usable_size`, from libc.so.6 (already loaded: this library links it).
/// Two threads may both look it up; both find the same function. Aborts if libc.so.6 does not
/// define it, which no glibc does: answering with another allocator's would be wrong.
fn glibc_usable_size() -> UsableSize {
    let cached = USABLE_SIZE.load(Ordering::Acquire);
    let f = if cached != 0 {
        cached
    } else {
        // SAFETY: dlopen with RTLD_NOLOAD only returns a handle to an object already loaded,
        // and dlsym reads that object's symbols; both strings are NUL-terminated. Any malloc
        // they make comes back to this library's malloc, which needs no lookup.
        let found = unsafe {
            let handle = libc::dlopen(c"libc.so.6".as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY);
            if handle.is_null() {
                std::ptr::null_mut()
            } else {
                libc::dlsym(handle, c"malloc_usable_size".as_ptr())
            }
        };
        if found.is_null() {
            // SAFETY: abort has no preconditions.
            unsafe { libc::abort() };
        }
        USABLE_SIZE.store(found as usize, Ordering::Release);
        found as usize
    };
    // SAFETY: `f` is the address of glibc's malloc_usable_size, of this signature.
    unsafe { std::mem::transmute::<usize, UsableSize>(f) }
}

// SAFETY: every method forwards to glibc's function of the same C contract, or does what
// glibc's own wrapper does before calling it (posix_memalign, aligned_alloc).
unsafe impl family::Backend for Glibc {
    unsafe fn malloc(size: usize) -> *mut c_void {
        // SAFETY: C malloc contract.
        unsafe { __libc_malloc(size) }
    }
    unsafe fn calloc(n: usize, size: usize) -> *mut c_void {
        // SAFETY: C calloc contract.
        unsafe { __libc_calloc(n, size) }
    }
    unsafe fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
        // SAFETY: C realloc contract.
        unsafe { __libc_realloc(p, size) }
    }
    unsafe fn free(p: *mut c_void) {
        // SAFETY: C free contract.
        unsafe { __libc_free(p) }
    }
    /// As glibc's: EINVAL unless the alignment is a power-of-two multiple of the pointer
    /// size; ENOMEM when no memory; `*out` is written only on success.
    unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
        let word = std::mem::size_of::<*mut c_void>();
        if align == 0 || !align.is_multiple_of(word) || !(align / word).is_power_of_two() {
            return libc::EINVAL;
        }
        // SAFETY: C memalign contract with a valid alignment.
        let p = unsafe { __libc_memalign(align, size) };
        if p.is_null() {
            return libc::ENOMEM;
        }
        // SAFETY: the caller gives a writable `out`.
        unsafe { *out = p };
        0
    }
    /// As glibc's (2.38 and later, and C17): NULL with errno EINVAL unless the alignment
    /// is a power of two.
    unsafe fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
        if !align.is_power_of_two() {
            // SAFETY: __errno_location returns this thread's errno.
            unsafe { *libc::__errno_location() = libc::EINVAL };
            return std::ptr::null_mut();
        }
        // SAFETY: C memalign contract.
        unsafe { __libc_memalign(align, size) }
    }
    unsafe fn memalign(align: usize, size: usize) -> *mut c_void {
        // SAFETY: C memalign contract (glibc rounds an alignment up to a power of two).
        unsafe { __libc_memalign(align, size) }
    }
    unsafe fn valloc(size: usize) -> *mut c_void {
        // SAFETY: C valloc contract.
        unsafe { __libc_valloc(size) }
    }
    unsafe fn pvalloc(size: usize) -> *mut c_void {
        // SAFETY: C pvalloc contract.
        unsafe { __libc_pvalloc(size) }
    }
    unsafe fn usable_size(p: *mut c_void) -> usize {
        // SAFETY: C malloc_usable_size contract; `p` is null or from glibc's malloc.
        unsafe { glibc_usable_size()(p) }
    }
}

extern "C" {
    // glibc's malloc itself, exported by libc.so.6 under these names (GLIBC_2.2.5) beside
    // the public ones that this library overrides.
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_free(p: *mut c_void);
    fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
    fn __libc_valloc(size: usize) -> *mut c_void;
    fn __libc_pvalloc(size: usize) -> *mut c_void;
}

export_malloc_family!(Glibc);

/// Which allocator this preload library carries (read by `alloclab exec`'s probe).
#[no_mangle]
pub extern "C" fn alloclab_preload_allocator() -> *const c_char {
    c"system".as_ptr()
}
