//! Faults that mapped a transparent huge page, counted by the kernel. It keeps no count
//! per process, only the machine's: each huge-page size's `anon_fault_alloc`
//! (/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/stats, Linux 6.8 on) or,
//! on older kernels, `thp_fault_alloc` of /proc/vmstat (the PMD size). Read around one
//! process's measured phase, the difference is that process's huge-page faults plus any
//! other process's in the same span; [`HugeFaultCounter::since`] refuses a difference
//! larger than the process's own faults, which cannot all be its own.
//!
//! Where THP is off for the process (`--thp never`: PR_SET_THP_DISABLE), none of its
//! faults can map a huge page: its count is 0 exactly, with nothing read.
//!
//! The files are found when the counter is opened (that allocates); each reading then
//! reads them into stack buffers and allocates nothing.

use crate::model::counts::HugeFaults;
use std::io::Read;

const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// Room for the huge-page sizes a kernel lists (8 KiB to 1 GiB on arm64 with 64K pages).
const MAX_SIZES: usize = 24;

/// The files to read and the page size each counts.
pub struct HugeFaultCounter {
    /// (bytes a fault of this kind maps, file, field of the file: None for a bare number)
    sources: Vec<(u64, std::ffi::CString, Option<&'static str>)>,
    /// The base page size.
    page_bytes: u64,
    /// THP is off for this process (PR_SET_THP_DISABLE): none of its faults can map a
    /// huge page, so its count is 0 exactly and the machine's is not read.
    disabled: bool,
}

/// One reading: the cumulative count of each source, in its order.
#[derive(Clone, Copy, Debug)]
pub struct Reading {
    counts: [u64; MAX_SIZES],
}

/// The size in bytes of a `hugepages-<n>kB` directory.
fn dir_size(name: &str) -> Option<u64> {
    let kb: u64 = name
        .strip_prefix("hugepages-")?
        .strip_suffix("kB")?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// A named field's value of /proc/vmstat text.
fn vmstat_field(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// Reads `path` into `buf` (up to its length) without allocating.
fn read_into<'a>(path: &std::ffi::CStr, buf: &'a mut [u8]) -> Result<&'a str, String> {
    let name = || path.to_string_lossy().into_owned();
    // SAFETY: `path` is NUL-terminated; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(format!("{}: {}", name(), std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` is open and owned here alone.
    let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(format!("{}: {e}", name())),
        }
    }
    std::str::from_utf8(&buf[..n]).map_err(|e| format!("{}: {e}", name()))
}

impl HugeFaultCounter {
    /// Finds the kernel's huge-page fault counts, or says why there are none.
    pub fn open() -> Result<Self, String> {
        // SAFETY: sysconf has no memory-safety preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page <= 0 {
            return Err("sysconf(_SC_PAGESIZE) gave no page size".into());
        }
        // SAFETY: prctl PR_GET_THP_DISABLE takes no pointers. 1 is THP off entirely (a
        // newer kernel's "except where advised" reads otherwise).
        if unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) } == 1 {
            return Ok(HugeFaultCounter {
                sources: Vec::new(),
                page_bytes: page as u64,
                disabled: true,
            });
        }
        let mut sources = Vec::new();
        if let Ok(dir) = std::fs::read_dir(THP_DIR) {
            for entry in dir.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(bytes) = dir_size(&name) else {
                    continue;
                };
                let path = entry.path().join("stats/anon_fault_alloc");
                if path.exists() {
                    let c = std::ffi::CString::new(path.into_os_string().into_encoded_bytes())
                        .map_err(|e| e.to_string())?;
                    sources.push((bytes, c, None));
                }
            }
        }
        if sources.is_empty() {
            // Before per-size statistics: the PMD size's count in /proc/vmstat.
            let pmd =
                crate::files::read_to_string(format!("{THP_DIR}/hpage_pmd_size")).map_err(|e| {
                    format!(
                        "{THP_DIR}/hpage_pmd_size: {e} (a kernel without transparent huge pages)"
                    )
                })?;
            let bytes: u64 = pmd
                .trim()
                .parse()
                .map_err(|e| format!("{THP_DIR}/hpage_pmd_size reads '{}': {e}", pmd.trim()))?;
            let vmstat = crate::files::read_to_string("/proc/vmstat")
                .map_err(|e| format!("/proc/vmstat: {e}"))?;
            if vmstat_field(&vmstat, "thp_fault_alloc").is_none() {
                return Err("/proc/vmstat has no thp_fault_alloc".into());
            }
            sources.push((bytes, c"/proc/vmstat".to_owned(), Some("thp_fault_alloc")));
        }
        sources.sort_by_key(|s| s.0);
        sources.truncate(MAX_SIZES);
        Ok(HugeFaultCounter {
            sources,
            page_bytes: page as u64,
            disabled: false,
        })
    }

    /// Whether THP is off for this process (its count is then 0 exactly).
    pub fn disabled(&self) -> bool {
        self.disabled
    }

    /// The cumulative counts now (none read where THP is off for the process).
    pub fn read(&self) -> Result<Reading, String> {
        let mut counts = [0u64; MAX_SIZES];
        let mut buf = [0u8; 8192];
        for (i, (_, path, field)) in self.sources.iter().enumerate() {
            let text = read_into(path, &mut buf)?;
            let v = match field {
                Some(f) => vmstat_field(text, f),
                None => text.trim().parse().ok(),
            };
            counts[i] =
                v.ok_or_else(|| format!("{} has no count to read", path.to_string_lossy()))?;
        }
        Ok(Reading { counts })
    }

    /// The huge-page faults from `before` to `after`, and the bytes they mapped;
    /// refused where they outnumber the process's own minor faults over the same span,
    /// `own_faults` (every huge-page fault is also a minor fault of the process that
    /// took it).
    pub fn since(
        &self,
        before: &Reading,
        after: &Reading,
        own_faults: u64,
    ) -> Result<HugeFaults, String> {
        let mut h = HugeFaults {
            page_bytes: self.page_bytes,
            ..HugeFaults::default()
        };
        for (i, (bytes, _, _)) in self.sources.iter().enumerate() {
            let n = after.counts[i].saturating_sub(before.counts[i]);
            h.faults += n;
            h.bytes += n * bytes;
        }
        if h.faults > own_faults {
            return Err(format!(
                "the machine's count of huge-page faults rose by {} during the phase, more than this process's {own_faults} minor faults: other processes' huge-page faults were counted",
                h.faults
            ));
        }
        Ok(h)
    }
}

/// Slack for what a measured phase faults in beyond its allocations: code and the
/// harness's own pages.
const FAULT_SLACK_BYTES: u64 = 4 << 20;

/// The second check of a machine-wide count: the memory the phase's faults mapped in
/// (`own_faults` minor faults, `h` of them huge) cannot exceed what the process
/// allocated in the phase (`allocs` calls, `bytes` bytes), each allocation rounded up by
/// at most one huge page, and a few MiB of the program's own; where it does, other
/// processes' huge-page faults were counted. It catches a neighbour that faults huge
/// pages much faster than the process itself does (3.7x to 8.6x the true figure here);
/// a small one goes unseen, so the figure stays an upper bound on a busy machine.
pub fn within_allocated(
    h: HugeFaults,
    own_faults: u64,
    allocs: u64,
    bytes: u64,
) -> Result<HugeFaults, String> {
    let huge_size = h.bytes.checked_div(h.faults).unwrap_or(0).max(2 << 20);
    let faulted = own_faults.saturating_sub(h.faults) * h.page_bytes + h.bytes;
    let bound = bytes + allocs * huge_size + FAULT_SLACK_BYTES;
    if faulted > bound {
        return Err(format!(
            "the machine's count of huge-page faults ({} in the phase) would have this process fault in {} MiB, more than the {} MiB it allocated: other processes' huge-page faults were counted",
            h.faults,
            faulted >> 20,
            bound >> 20
        ));
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_fields_parse() {
        assert_eq!(dir_size("hugepages-2048kB"), Some(2 << 20));
        assert_eq!(dir_size("hugepages-64kB"), Some(64 << 10));
        assert_eq!(dir_size("khugepaged"), None);
        let text = "thp_fault_alloc 12\nthp_fault_alloc_x 3\nthp_fault_fallback 5\n";
        assert_eq!(vmstat_field(text, "thp_fault_alloc"), Some(12));
        assert_eq!(vmstat_field(text, "thp_fault_fallback"), Some(5));
        assert_eq!(vmstat_field(text, "nope"), None);
    }

    #[test]
    fn a_difference_beyond_the_process_faults_is_refused() {
        let c = HugeFaultCounter {
            sources: vec![
                (64 << 10, c"/x".to_owned(), None),
                (2 << 20, c"/y".to_owned(), None),
            ],
            page_bytes: 4096,
            disabled: false,
        };
        let mut before = Reading {
            counts: [0; MAX_SIZES],
        };
        before.counts[..2].copy_from_slice(&[10, 100]);
        let mut after = before;
        after.counts[..2].copy_from_slice(&[12, 103]);
        let h = c.since(&before, &after, 5).unwrap();
        assert_eq!((h.faults, h.bytes), (5, 2 * (64 << 10) + 3 * (2 << 20)));
        assert!(c
            .since(&before, &after, 4)
            .unwrap_err()
            .contains("other processes"));
    }

    #[test]
    fn more_memory_faulted_in_than_allocated_is_refused() {
        let mib = 1u64 << 20;
        // glibc's out-of-place case, advised, over 100 iterations: 808 faults each, 6 of
        // them huge, 16 MB allocated in 2 calls.
        let own = HugeFaults {
            faults: 600,
            bytes: 600 * 2 * mib,
            page_bytes: 4096,
        };
        assert!(within_allocated(own, 80_800, 200, 1_600_000_000).is_ok());
        // A neighbour's 2,000 huge faults counted as its own: 4 GiB more than it
        // allocated.
        let counted = HugeFaults {
            faults: 2600,
            bytes: 2600 * 2 * mib,
            page_bytes: 4096,
        };
        let e = within_allocated(counted, 80_800, 200, 1_600_000_000).unwrap_err();
        assert!(e.contains("other processes"), "{e}");
        // A phase that allocates nothing may still fault a few pages of its own.
        let none = HugeFaults {
            faults: 0,
            bytes: 0,
            page_bytes: 4096,
        };
        assert!(within_allocated(none, 10, 0, 0).is_ok());
        let one = HugeFaults {
            faults: 3,
            bytes: 6 * mib,
            page_bytes: 4096,
        };
        assert!(within_allocated(one, 10, 0, 0).is_err());
    }

    #[test]
    fn this_machine_counts_or_says_why() {
        match HugeFaultCounter::open() {
            Ok(c) => {
                let a = c.read().unwrap();
                let b = c.read().unwrap();
                assert!(a.counts.iter().zip(b.counts).all(|(x, y)| *x <= y));
            }
            Err(why) => assert!(!why.is_empty()),
        }
    }
}
