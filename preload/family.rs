//! The malloc family that an `LD_PRELOAD` replacement for glibc's malloc must export
//! (glibc manual, "Replacing malloc": malloc, free, calloc, realloc, plus aligned_alloc,
//! malloc_usable_size, memalign, posix_memalign, pvalloc, valloc; and reallocarray),
//! forwarded to one allocator. Shared by the preload crates with `#[path]`.
//!
//! Nothing here allocates, locks or uses Rust thread-locals: every function forwards to
//! the allocator's own C entry point, which brings its own thread and fork safety
//! (jemalloc registers pthread_atfork handlers; mimalloc's heaps are thread-local).

/// One allocator's C entry points with their C semantics (errno on failure included).
///
/// # Safety
/// Implementations must forward to functions that behave as their C namesakes.
pub unsafe trait Backend {
    unsafe fn malloc(size: usize) -> *mut libc::c_void;
    unsafe fn calloc(n: usize, size: usize) -> *mut libc::c_void;
    unsafe fn realloc(p: *mut libc::c_void, size: usize) -> *mut libc::c_void;
    unsafe fn free(p: *mut libc::c_void);
    unsafe fn posix_memalign(out: *mut *mut libc::c_void, align: usize, size: usize)
        -> libc::c_int;
    unsafe fn aligned_alloc(align: usize, size: usize) -> *mut libc::c_void;
    unsafe fn usable_size(p: *mut libc::c_void) -> usize;

    /// By default `aligned_alloc` (glibc's memalign takes the same arguments).
    unsafe fn memalign(align: usize, size: usize) -> *mut libc::c_void {
        // SAFETY: as aligned_alloc.
        unsafe { Self::aligned_alloc(align, size) }
    }
    /// By default page-aligned `aligned_alloc`.
    unsafe fn valloc(size: usize) -> *mut libc::c_void {
        // SAFETY: the page size is a power of two.
        unsafe { Self::aligned_alloc(PAGE, size) }
    }
    /// By default the size rounded up to whole pages (ENOMEM if that overflows), page
    /// aligned.
    unsafe fn pvalloc(size: usize) -> *mut libc::c_void {
        let Some(rounded) = size.max(1).checked_next_multiple_of(PAGE) else {
            // SAFETY: __errno_location returns this thread's errno.
            unsafe { *libc::__errno_location() = libc::ENOMEM };
            return std::ptr::null_mut();
        };
        // SAFETY: the page size is a power of two.
        unsafe { Self::aligned_alloc(PAGE, rounded) }
    }
}

/// The page size valloc and pvalloc align to (x86_64 Linux).
pub const PAGE: usize = 4096;

/// Exports the malloc family (unmangled, C ABI) over a [`Backend`].
macro_rules! export_malloc_family {
    ($b:ty) => {
        /// # Safety
        /// C `malloc`.
        #[no_mangle]
        pub unsafe extern "C" fn malloc(size: usize) -> *mut libc::c_void {
            // SAFETY: forwarded with the caller's C contract.
            unsafe { <$b as family::Backend>::malloc(size) }
        }

        /// # Safety
        /// C `calloc`.
        #[no_mangle]
        pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut libc::c_void {
            // SAFETY: forwarded with the caller's C contract.
            unsafe { <$b as family::Backend>::calloc(n, size) }
        }

        /// # Safety
        /// C `realloc`: `p` is null or a live block from this allocator.
        #[no_mangle]
        pub unsafe extern "C" fn realloc(p: *mut libc::c_void, size: usize) -> *mut libc::c_void {
            // SAFETY: forwarded with the caller's C contract.
            unsafe { <$b as family::Backend>::realloc(p, size) }
        }

        /// # Safety
        /// C `reallocarray`: `realloc(p, n * size)` with an overflow check (ENOMEM).
        #[no_mangle]
        pub unsafe extern "C" fn reallocarray(
            p: *mut libc::c_void,
            n: usize,
            size: usize,
        ) -> *mut libc::c_void {
            match n.checked_mul(size) {
                // SAFETY: forwarded with the caller's C contract.
                Some(total) => unsafe { <$b as family::Backend>::realloc(p, total) },
                None => {
                    // SAFETY: __errno_location returns this thread's errno.
                    unsafe { *libc::__errno_location() = libc::ENOMEM };
                    std::ptr::null_mut()
                }
            }
        }

        /// # Safety
        /// C `free`: `p` is null or a live block from this allocator. errno is preserved,
        /// as glibc's free does (the allocator may madvise or munmap inside).
        #[no_mangle]
        pub unsafe extern "C" fn free(p: *mut libc::c_void) {
            // SAFETY: __errno_location returns this thread's errno; `p` as the caller's.
            unsafe {
                let errno = *libc::__errno_location();
                <$b as family::Backend>::free(p);
                *libc::__errno_location() = errno;
            }
        }

        /// # Safety
        /// C `posix_memalign`: `out` is writable.
        #[no_mangle]
        pub unsafe extern "C" fn posix_memalign(
            out: *mut *mut libc::c_void,
            align: usize,
            size: usize,
        ) -> libc::c_int {
            // SAFETY: forwarded with the caller's C contract.
            unsafe { <$b as family::Backend>::posix_memalign(out, align, size) }
        }

        /// # Safety
        /// C `aligned_alloc`.
        #[no_mangle]
        pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut libc::c_void {
            // SAFETY: forwarded with the caller's C contract.
            unsafe { <$b as family::Backend>::aligned_alloc(align, size) }
        }

        /// # Safety
        /// C `memalign`.
        #[no_mangle]
        pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut libc::c_void {
            // SAFETY: forwarded with the caller's C contract.
            unsafe { <$b as family::Backend>::memalign(align, size) }
        }

        /// # Safety
        /// C `valloc`.
        #[no_mangle]
        pub unsafe extern "C" fn valloc(size: usize) -> *mut libc::c_void {
            // SAFETY: forwarded with the caller's C contract.
            unsafe { <$b as family::Backend>::valloc(size) }
        }

        /// # Safety
        /// C `pvalloc`.
        #[no_mangle]
        pub unsafe extern "C" fn pvalloc(size: usize) -> *mut libc::c_void {
            // SAFETY: forwarded with the caller's C contract.
            unsafe { <$b as family::Backend>::pvalloc(size) }
        }

        /// # Safety
        /// C `malloc_usable_size`: `p` is null or a live block from this allocator.
        #[no_mangle]
        pub unsafe extern "C" fn malloc_usable_size(p: *mut libc::c_void) -> usize {
            // SAFETY: forwarded with the caller's C contract.
            unsafe { <$b as family::Backend>::usable_size(p) }
        }
    };
}
