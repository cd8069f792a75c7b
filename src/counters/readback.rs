//! Reading an allocator's version and effective options back from the allocator itself,
//! through its own C entry points. Shared by the in-process workers (which link the
//! allocator) and by `alloclab exec`'s preload probe (which finds the same entry points in
//! the preloaded library with `dlsym`), so both read knobs the same way.

use crate::counters::Unavailable;
use std::ffi::{c_char, c_int, c_long, c_void, CStr, CString};

/// jemalloc's `mallctl`.
pub type Mallctl = unsafe extern "C" fn(
    name: *const c_char,
    oldp: *mut c_void,
    oldlenp: *mut usize,
    newp: *mut c_void,
    newlen: usize,
) -> c_int;

/// mimalloc's `mi_option_get`.
pub type MiOptionGet = unsafe extern "C" fn(option: c_int) -> c_long;

/// Reads one mallctl value of C type `T` (a plain integer, bool or pointer).
fn mallctl_read<T: Copy + Default>(mallctl: Mallctl, key: &str) -> Result<T, Unavailable> {
    let name = std::ffi::CString::new(key).map_err(|_| format!("bad mallctl name {key:?}"))?;
    let mut value = T::default();
    let mut len = std::mem::size_of::<T>();
    // SAFETY: `value` is a writable T of `len` bytes; jemalloc writes at most `len` bytes
    // and reports a size mismatch as EINVAL instead of writing.
    let rc = unsafe {
        mallctl(
            name.as_ptr(),
            (&mut value as *mut T).cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return Err(Unavailable(format!(
            "mallctl {key}: {}",
            std::io::Error::from_raw_os_error(rc)
        )));
    }
    Ok(value)
}

fn mallctl_read_str(mallctl: Mallctl, key: &str) -> Result<String, Unavailable> {
    let p: usize = mallctl_read::<usize>(mallctl, key)?;
    if p == 0 {
        return Err(Unavailable(format!("mallctl {key}: null string")));
    }
    // SAFETY: jemalloc returns a pointer to a static NUL-terminated string for
    // string-valued mallctls.
    let s = unsafe { CStr::from_ptr(p as *const c_char) };
    Ok(s.to_string_lossy().trim().to_string())
}

/// The arena that holds `ptr` (an allocation of jemalloc's), from `arenas.lookup`: the
/// thread's own arena, or the huge arena (its index is `opt.narenas`, the number of
/// automatic arenas) for requests at `oversize_threshold` and above.
pub fn jemalloc_arena_of(mallctl: Mallctl, ptr: *const c_void) -> Result<u32, Unavailable> {
    let mut arena: u32 = 0;
    let mut len = std::mem::size_of::<u32>();
    let mut p = ptr;
    // SAFETY: `arena` is a writable u32 of `len` bytes, `p` a pointer-sized value of
    // `size_of::<*const c_void>()` bytes that jemalloc only reads; a pointer it did not
    // allocate is refused with EINVAL or ENOENT.
    let rc = unsafe {
        mallctl(
            c"arenas.lookup".as_ptr(),
            (&mut arena as *mut u32).cast(),
            &mut len,
            (&mut p as *mut *const c_void).cast(),
            std::mem::size_of::<*const c_void>(),
        )
    };
    if rc != 0 {
        return Err(Unavailable(format!(
            "mallctl arenas.lookup: {}",
            std::io::Error::from_raw_os_error(rc)
        )));
    }
    Ok(arena)
}

/// "jemalloc 5.3.1-0-g…", from the `version` mallctl.
pub fn jemalloc_version(mallctl: Mallctl) -> Result<String, Unavailable> {
    mallctl_read_str(mallctl, "version").map(|v| format!("jemalloc {v}"))
}

/// A jemalloc knob's effective value from `opt.<name>`, in [`crate::model::knobs`]' canonical
/// form, read with the C type jemalloc declares for it.
pub fn jemalloc_opt(mallctl: Mallctl, name: &str) -> Result<String, Unavailable> {
    let key = format!("opt.{name}");
    match name {
        "dirty_decay_ms" | "muzzy_decay_ms" => {
            mallctl_read::<isize>(mallctl, &key).map(|v| v.to_string())
        }
        "oversize_threshold" => mallctl_read::<usize>(mallctl, &key).map(|v| v.to_string()),
        "narenas" => mallctl_read::<u32>(mallctl, &key).map(|v| v.to_string()),
        "background_thread" | "retain" => {
            mallctl_read::<bool>(mallctl, &key).map(|v| v.to_string())
        }
        "thp" => mallctl_read_str(mallctl, &key),
        _ => Err(Unavailable(format!(
            "no read-back for jemalloc knob {name}"
        ))),
    }
}

/// "mimalloc 3.3.2" from `mi_version()`'s major*10000 + minor*100 + patch.
pub fn mimalloc_version(v: c_int) -> String {
    format!("mimalloc {}.{}.{}", v / 10000, v / 100 % 100, v % 100)
}

/// The version of an allocator bundled at build time that has none at run time
/// (TCMalloc, snmalloc, rpmalloc): what the crate that bundles it says.
pub fn bundled_version(a: crate::model::spec::Allocator) -> Option<String> {
    use crate::model::spec::Allocator;
    match a {
        Allocator::Tcmalloc => Some(format!(
            "TCMalloc as bundled by libtcmalloc-sys {} (it has no version at run time)",
            env!("ALLOCLAB_LIBTCMALLOC_SYS_VERSION")
        )),
        Allocator::Snmalloc => Some(format!(
            "snmalloc as bundled by snmalloc-sys {} (it has no version at run time)",
            env!("ALLOCLAB_SNMALLOC_SYS_VERSION")
        )),
        Allocator::Rpmalloc => Some(rpmalloc_version(env!("ALLOCLAB_RPMALLOC_SYS_VERSION"))),
        _ => None,
    }
}

/// rpmalloc has no version at run time; rpmalloc-sys's version carries the upstream
/// commit it bundles as build metadata ("0.2.3+b097fd0").
pub fn rpmalloc_version(sys_crate_version: &str) -> String {
    match sys_crate_version.split_once('+') {
        Some((_, commit)) => {
            format!("rpmalloc at upstream commit {commit} (no version at run time)")
        }
        None => "rpmalloc (no version at run time)".to_string(),
    }
}

/// A mimalloc knob's effective value from `mi_option_get`. The indices are those of
/// `mi_option_t` in the mimalloc 3.3 bundled with the pinned libmimalloc-sys; a test checks
/// them by setting each option through its environment variable and reading it back.
pub fn mimalloc_option(option_get: MiOptionGet, name: &str) -> Result<String, Unavailable> {
    let (index, boolean) = match name {
        "arena_eager_commit" => (4, false),
        "purge_decommits" => (5, true),
        "allow_large_os_pages" => (6, true),
        "purge_delay" => (15, false),
        "allow_thp" => (43, true),
        _ => {
            return Err(Unavailable(format!(
                "no read-back for mimalloc knob {name}"
            )))
        }
    };
    // SAFETY: `index` is a valid mi_option_t of the bundled mimalloc.
    let v = unsafe { option_get(index) };
    Ok(if boolean {
        (v != 0).to_string()
    } else {
        v.to_string()
    })
}

/// The version an installed allocator library reports through its own entry point, when
/// it has one this knows and the entry point is the library's own: gperftools'
/// `tc_version`, jemalloc's `mallctl("version")`, mimalloc's `mi_version`.
pub fn library_version(library: &std::path::Path) -> Option<String> {
    let own = |name: &str| {
        symbol(name).filter(|&p| {
            defining_object(p).is_some_and(|f| {
                crate::model::library::same_file(std::path::Path::new(&f), library)
            })
        })
    };
    if let Some(p) = own("tc_version") {
        type TcVersion =
            unsafe extern "C" fn(*mut c_int, *mut c_int, *mut *const c_char) -> *const c_char;
        // SAFETY: gperftools declares `const char* tc_version(int*, int*, const char**)`.
        let f: TcVersion = unsafe { std::mem::transmute(p) };
        let (mut major, mut minor, mut patch) = (0, 0, std::ptr::null());
        // SAFETY: three writable out-parameters; the result is a static string.
        let s = unsafe { f(&mut major, &mut minor, &mut patch) };
        if !s.is_null() {
            // SAFETY: a static NUL-terminated string.
            return Some(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned());
        }
    }
    if let Some(p) = own("mallctl") {
        // SAFETY: jemalloc's unprefixed `mallctl` has this signature.
        let m: Mallctl = unsafe { std::mem::transmute(p) };
        if let Ok(v) = jemalloc_version(m) {
            return Some(v);
        }
    }
    if let Some(p) = own("mi_version") {
        // SAFETY: mimalloc declares `int mi_version(void)`.
        let f: unsafe extern "C" fn() -> c_int = unsafe { std::mem::transmute(p) };
        // SAFETY: no arguments.
        return Some(mimalloc_version(unsafe { f() }));
    }
    None
}

/// The address of `name` in the process's global scope (what a call to it reaches).
pub fn symbol(name: &str) -> Option<*mut libc::c_void> {
    let c = CString::new(name).ok()?;
    // SAFETY: RTLD_DEFAULT searches the global scope for a NUL-terminated name.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// The object file that defines the address `p`, canonical where it can be.
// dladdr only looks the address up among the loaded objects; it never dereferences it.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn defining_object(p: *mut libc::c_void) -> Option<String> {
    // SAFETY: all-zero is a valid Dl_info; dladdr fills it for a mapped address.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is writable; `p` is an address from dlsym.
    if unsafe { libc::dladdr(p, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returned a NUL-terminated file name owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    Some(
        std::fs::canonicalize(&*name)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| name.into_owned()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is behind jemalloc's oversize cliff, asked of jemalloc itself: a request of
    /// 916,993 f64 (the cliff's first size, 7 MiB − 4 KiB + 8 bytes) stays in the
    /// thread's arena; only a request at the threshold (8 MiB) goes to the huge arena.
    /// The cliff's purge is the thread's arena purging a freed extent that, merged with
    /// the free extents beside it, reached the threshold — not the huge arena's.
    #[test]
    fn a_request_below_oversize_threshold_stays_in_its_threads_arena() {
        let mallctl: Mallctl = tikv_jemalloc_sys::mallctl;
        let narenas: u32 = mallctl_read(mallctl, "opt.narenas").unwrap();
        let threshold: usize = mallctl_read(mallctl, "opt.oversize_threshold").unwrap();
        assert_eq!(threshold, 8 << 20);
        let at = |bytes: usize| {
            // SAFETY: jemalloc's own malloc and free, on a block of its own.
            unsafe {
                let p = tikv_jemalloc_sys::malloc(bytes);
                assert!(!p.is_null());
                let arena = jemalloc_arena_of(mallctl, p.cast_const());
                tikv_jemalloc_sys::free(p);
                arena.unwrap()
            }
        };
        let below = at(916_993 * 8);
        assert!(below < narenas, "arena {below} of {narenas} automatic ones");
        assert_eq!(
            at(8 << 20),
            narenas,
            "the huge arena comes after the automatic ones"
        );
        assert!(jemalloc_arena_of(mallctl, std::ptr::null()).is_err());
    }
}
