//! getrusage snapshots (the process, or one thread) and their differences.

pub use crate::model::counts::Rusage;

/// Reads getrusage(RUSAGE_SELF). Does not allocate.
pub fn read_self() -> std::io::Result<Rusage> {
    // SAFETY: all-zero bytes are a valid `rusage` (plain integers and timevals).
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage for the kernel to fill.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Rusage::from_libc(&ru))
}

/// Reads getrusage(RUSAGE_THREAD): the calling thread only (Linux). Does not allocate.
#[cfg(target_os = "linux")]
pub fn read_thread() -> std::io::Result<Rusage> {
    // SAFETY: all-zero bytes are a valid `rusage` (plain integers and timevals).
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage for the kernel to fill.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Rusage::from_libc(&ru))
}

impl Rusage {
    /// From the kernel's struct (getrusage, wait4).
    pub fn from_libc(ru: &libc::rusage) -> Self {
        let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
        Rusage {
            minflt: ru.ru_minflt as u64,
            majflt: ru.ru_majflt as u64,
            nvcsw: ru.ru_nvcsw as u64,
            nivcsw: ru.ru_nivcsw as u64,
            utime_ns: ns(ru.ru_utime),
            stime_ns: ns(ru.ru_stime),
            maxrss_bytes: ru.ru_maxrss as u64 * 1024,
        }
    }

    /// What happened between `earlier` and `self` (maxrss is taken from `self`).
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            minflt: self.minflt.saturating_sub(earlier.minflt),
            majflt: self.majflt.saturating_sub(earlier.majflt),
            nvcsw: self.nvcsw.saturating_sub(earlier.nvcsw),
            nivcsw: self.nivcsw.saturating_sub(earlier.nivcsw),
            utime_ns: self.utime_ns.saturating_sub(earlier.utime_ns),
            stime_ns: self.stime_ns.saturating_sub(earlier.stime_ns),
            maxrss_bytes: self.maxrss_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_fresh_pages_shows_as_minor_faults() {
        let pages = 512;
        let page = crate::counters::memory::page_size().unwrap() as usize;
        // This thread's faults only: the harness runs other tests on other threads.
        let before = read_thread().unwrap();
        // SAFETY: anonymous private mapping, checked below, unmapped at the end.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        for i in 0..pages {
            // SAFETY: inside the mapping just made.
            unsafe { (p as *mut u8).add(i * page).write_volatile(1) };
        }
        let after = read_thread().unwrap();
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(p, pages * page) };
        let d = after.since(&before);
        // Huge pages could serve the range with fewer faults; never with more than one
        // per page (plus a few for this thread's own stack and code).
        assert!(d.minflt >= 1, "{d:?}");
        assert!(d.minflt <= pages as u64 + 16, "{d:?}");
        let whole = read_self().unwrap();
        assert!(
            whole.minflt >= after.minflt,
            "the process counts at least this thread"
        );
    }
}
