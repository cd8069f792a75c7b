//! Faults that mapped a transparent huge page, counted for this process alone: the
//! perf tracepoint `kmem:mm_page_alloc` filtered on the PMD huge page's order (9 with
//! 4 KiB pages) and on a page having been found (`pfn` is -1 where the allocation
//! failed and the fault fell back to base pages). The tracepoint fires in the context of
//! the task that allocates, so a neighbour's huge-page faults are not counted; the
//! counter is inherited, so threads started after it was opened count too. It is
//! enabled only around the measured phase.
//!
//! Only PMD-size huge pages are counted (the size every allocator here is advised for,
//! and the only one THP maps unless an mTHP size is enabled by hand).
//!
//! Where THP is off for the process (`--thp never`: PR_SET_THP_DISABLE), none of its
//! faults can map a huge page: its count is 0 exactly, with nothing opened. Where the
//! tracepoint cannot be opened (no tracefs, not root, perf_event_paranoid), the count is
//! unavailable with the reason: the kernel's machine-wide counts are never used as the
//! process's.
//!
//! The counter is opened (that allocates) before the measured phase; enabling,
//! disabling and reading it allocate nothing.

use crate::model::counts::HugeFaults;
use perf_event::events::Tracepoint;
use perf_event::{Builder, Counter};
use std::os::fd::AsRawFd;

const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// `PERF_EVENT_IOC_SET_FILTER`: `_IOW('$', 6, char *)` on the 64-bit architectures
/// the lab builds for (x86_64, aarch64, riscv64 share the encoding).
const PERF_EVENT_IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;

/// Sets a tracepoint counter's filter (`behavior == 4`): it then counts only the events
/// whose fields match.
pub fn set_filter(counter: &Counter, text: &str) -> Result<(), String> {
    let c = std::ffi::CString::new(text).map_err(|e| e.to_string())?;
    // SAFETY: the descriptor is the counter's, open; the filter is NUL-terminated and
    // outlives the call, which copies it.
    let rc = unsafe {
        libc::ioctl(
            counter.as_raw_fd(),
            PERF_EVENT_IOC_SET_FILTER as _,
            c.as_ptr(),
        )
    };
    if rc != 0 {
        return Err(format!(
            "setting the filter '{text}' failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// The tracepoint's filter for huge pages of `order` that were found.
fn filter(order: u32) -> String {
    format!("order == {order} && pfn != {}", u64::MAX)
}

/// The order of a huge page of `huge_bytes` over base pages of `page_bytes`.
fn order_of(huge_bytes: u64, page_bytes: u64) -> Option<u32> {
    let pages = huge_bytes.checked_div(page_bytes)?;
    (pages > 1 && pages.is_power_of_two()).then(|| pages.trailing_zeros())
}

/// This process's huge-page fault counter, disabled until [`HugeFaultCounter::enable`].
pub struct HugeFaultCounter {
    /// None where THP is off for the process.
    counter: Option<Counter>,
    /// The bytes a huge page maps.
    huge_bytes: u64,
    /// The base page size.
    page_bytes: u64,
}

impl HugeFaultCounter {
    /// Opens the counter on this process (and the threads it starts later), or says why
    /// its huge-page faults cannot be counted.
    pub fn open() -> Result<Self, String> {
        Self::open_on(0)
    }

    /// As [`Self::open`], on process `pid` (0: this one).
    pub fn open_on(pid: libc::pid_t) -> Result<Self, String> {
        // SAFETY: sysconf has no memory-safety preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page <= 0 {
            return Err("sysconf(_SC_PAGESIZE) gave no page size".into());
        }
        let page_bytes = page as u64;
        // SAFETY: prctl PR_GET_THP_DISABLE takes no pointers. 1 is THP off entirely (a
        // newer kernel's "except where advised" reads otherwise).
        if pid == 0 && unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) } == 1 {
            return Ok(HugeFaultCounter {
                counter: None,
                huge_bytes: 0,
                page_bytes,
            });
        }
        let pmd =
            crate::files::read_to_string(format!("{THP_DIR}/hpage_pmd_size")).map_err(|e| {
                format!("{THP_DIR}/hpage_pmd_size: {e} (a kernel without transparent huge pages)")
            })?;
        let huge_bytes: u64 = pmd
            .trim()
            .parse()
            .map_err(|e| format!("{THP_DIR}/hpage_pmd_size reads '{}': {e}", pmd.trim()))?;
        let order = order_of(huge_bytes, page_bytes).ok_or_else(|| {
            format!("a huge page of {huge_bytes} bytes is no power-of-two multiple of the {page_bytes}-byte page")
        })?;
        let why = |what: String| {
            format!(
                "huge-page faults per process need the perf tracepoint kmem:mm_page_alloc: {what}"
            )
        };
        let root = crate::counters::perf::tracefs_root().map_err(|e| why(e.0))?;
        let id_path = root.join("events/kmem/mm_page_alloc/id");
        let id: u64 = crate::files::read_to_string(&id_path)
            .map_err(|e| why(format!("{}: {e}", id_path.display())))?
            .trim()
            .parse()
            .map_err(|_| why(format!("{} does not hold a number", id_path.display())))?;
        let mut builder = Builder::new(Tracepoint::with_id(id));
        // The tracepoint fires in the kernel: excluding the kernel would hide it.
        builder
            .exclude_kernel(false)
            .exclude_hv(false)
            .inherit(true)
            .any_cpu();
        if pid != 0 {
            builder.observe_pid(pid);
        }
        let counter = builder.build().map_err(|e| {
            why(format!(
                "perf_event_open failed: {e} (kernel.perf_event_paranoid = {}; tracepoint counters need root or CAP_PERFMON)",
                crate::files::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                    .map(|s| s.trim().to_string())
                    .unwrap_or_else(|_| "unknown".into())
            ))
        })?;
        set_filter(&counter, &filter(order)).map_err(why)?;
        Ok(HugeFaultCounter {
            counter: Some(counter),
            huge_bytes,
            page_bytes,
        })
    }

    /// Whether THP is off for this process (its count is then 0 exactly).
    pub fn disabled(&self) -> bool {
        self.counter.is_none()
    }

    /// Zeroes and starts the count. Does not allocate.
    pub fn enable(&mut self) {
        if let Some(c) = &mut self.counter {
            // An ioctl on an open perf fd fails only for a bad request; the read says so.
            let _ = c.reset();
            let _ = c.enable();
        }
    }

    /// Stops the count. Does not allocate.
    pub fn disable(&mut self) {
        if let Some(c) = &mut self.counter {
            let _ = c.disable();
        }
    }

    /// The huge-page faults of the last enabled window, and the bytes they mapped. Read
    /// it after the threads that were counted have exited: an inherited counter's
    /// counts are folded in as each exits.
    pub fn read(&mut self) -> Result<HugeFaults, String> {
        let faults = match &mut self.counter {
            None => 0,
            Some(c) => c
                .read()
                .map_err(|e| format!("reading the kmem:mm_page_alloc counter failed: {e}"))?,
        };
        Ok(HugeFaults {
            faults,
            bytes: faults * self.huge_bytes,
            page_bytes: self.page_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_and_filters() {
        assert_eq!(order_of(2 << 20, 4096), Some(9));
        assert_eq!(order_of(512 << 20, 64 << 10), Some(13));
        assert_eq!(order_of(4096, 4096), None);
        assert_eq!(order_of(3 << 20, 4096), None);
        assert_eq!(filter(9), "order == 9 && pfn != 18446744073709551615");
    }

    /// AnonHugePages of the mapping that starts at `start`, in bytes, from
    /// /proc/self/smaps (the kernel's page tables: a reader independent of perf).
    fn smaps_huge_bytes(start: usize) -> u64 {
        let text = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{start:x}-");
        let mut lines = text.lines().skip_while(|l| !l.starts_with(&head));
        assert!(lines.next().is_some(), "no mapping at {head} in smaps");
        let kb: u64 = lines
            .find_map(|l| l.strip_prefix("AnonHugePages:"))
            .unwrap()
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .unwrap();
        kb * 1024
    }

    /// The count equals the huge pages the kernel's page tables show for an advised
    /// mapping this thread touched (16 of them where THP maps it, 0 where THP is off
    /// or the huge pages could not be had: the two readers agree either way), and a
    /// host where the tracepoint cannot be opened gets a reason, not a 0.
    #[test]
    fn counts_the_huge_pages_smaps_shows_for_this_thread() {
        let mut c = match HugeFaultCounter::open() {
            Ok(c) => c,
            Err(why) => {
                assert!(why.contains("kmem:mm_page_alloc"), "{why}");
                return;
            }
        };
        assert!(!c.disabled(), "THP is not off for the test process");
        let huge = c.huge_bytes as usize;
        let len = 16 * huge;
        // SAFETY: a fresh anonymous mapping, touched inside its bounds (the aligned
        // start lies within its first huge page) and unmapped below.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                len + huge,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            let start = (p as usize).next_multiple_of(huge);
            // The advised range becomes a mapping of its own in smaps.
            assert_eq!(
                libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE),
                0
            );
            c.enable();
            for off in (0..len).step_by(4096) {
                std::ptr::write_volatile((start + off) as *mut u8, 1);
            }
            c.disable();
            let counted = c.read().unwrap();
            let seen = smaps_huge_bytes(start);
            libc::munmap(p, len + huge);
            assert_eq!(counted.bytes, seen, "{counted:?}");
            assert!(counted.faults <= 16, "{counted:?}");
        }
    }
}
