//! Resident memory of this process and memory available on the machine.

use std::io::Read;

/// The system page size in bytes.
pub fn page_size() -> std::io::Result<u64> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        Ok(v as u64)
    } else {
        Err(std::io::Error::other(
            "sysconf(_SC_PAGESIZE) gave no page size",
        ))
    }
}

/// Current resident set size from /proc/self/statm, in bytes. Reads into a stack buffer:
/// it does not allocate.
pub fn rss_bytes() -> std::io::Result<u64> {
    let mut buf = [0u8; 128];
    let mut f = crate::files::open("/proc/self/statm")?;
    let n = f.read(&mut buf)?;
    let text = std::str::from_utf8(&buf[..n]).map_err(std::io::Error::other)?;
    let resident: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("unexpected /proc/self/statm format"))?;
    Ok(resident * page_size()?)
}

/// The kernel's high-water mark of this process's resident set (VmHWM in
/// /proc/self/status), in bytes: the highest Rss of its image since its execve, kept by
/// the kernel at every change (so the peak between two samples from outside too). Reads
/// into a stack buffer.
pub fn vm_hwm_bytes() -> Result<u64, String> {
    let mut buf = [0u8; 4096];
    let mut f = std::fs::File::open("/proc/self/status")
        .map_err(|e| format!("reading /proc/self/status: {e}"))?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(format!("reading /proc/self/status: {e}")),
        }
    }
    std::str::from_utf8(&buf[..n])
        .ok()
        .and_then(crate::model::memory::parse_vm_hwm)
        .ok_or_else(|| "/proc/self/status has no VmHWM line".to_string())
}

/// One sample of process `pid`'s memory at `t_ms`: with `full`, from
/// /proc/<pid>/smaps_rollup (Rss, Pss, huge pages, LazyFree; it walks the process's page
/// tables: about 0.3–0.5 ms for 30 MiB here), else, or on a kernel without it (before
/// 4.14), from /proc/<pid>/statm (Rss only, from the kernel's counters: about 8 µs).
/// `Ok(None)`: the process has exited (its files read empty); `Err`: neither could be
/// read, and why. Reads into `buf`.
pub fn sample_of(
    pid: i32,
    t_ms: f64,
    buf: &mut [u8],
    full: bool,
) -> Result<Option<crate::model::memory::MemorySample>, String> {
    use crate::model::memory::{parse_rollup, parse_statm};
    let read = |path: &str, buf: &mut [u8]| -> std::io::Result<usize> {
        let mut f = crate::files::open(path)?;
        let mut n = 0;
        while n < buf.len() {
            match f.read(&mut buf[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    };
    // A process that exits while its file is read: ESRCH (or gone altogether).
    let ended = |e: &std::io::Error| {
        e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH)
    };
    let mut path = [0u8; 40];
    let rollup = fmt_path(&mut path, pid, if full { "smaps_rollup" } else { "statm" });
    if !full {
        return match read(rollup, buf) {
            Ok(n) => {
                let page = page_size().map_err(|e| e.to_string())?;
                Ok(std::str::from_utf8(&buf[..n])
                    .ok()
                    .and_then(|t| parse_statm(t, page, t_ms)))
            }
            Err(e) if ended(&e) => Ok(None),
            Err(e) => Err(format!("reading /proc/{pid}/statm: {e}")),
        };
    }
    match read(rollup, buf) {
        Ok(n) => Ok(std::str::from_utf8(&buf[..n])
            .ok()
            .and_then(|t| parse_rollup(t, t_ms))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && pid_alive(pid) => {
            let mut path = [0u8; 40];
            let statm = fmt_path(&mut path, pid, "statm");
            let n = read(statm, buf).map_err(|e| format!("reading /proc/{pid}/statm: {e}"))?;
            let page = page_size().map_err(|e| e.to_string())?;
            Ok(std::str::from_utf8(&buf[..n])
                .ok()
                .and_then(|t| parse_statm(t, page, t_ms)))
        }
        Err(e) if ended(&e) => Ok(None),
        Err(e) => Err(format!("reading /proc/{pid}/smaps_rollup: {e}")),
    }
}

/// Whether /proc/<pid> exists.
fn pid_alive(pid: i32) -> bool {
    let mut path = [0u8; 40];
    std::path::Path::new(fmt_path(&mut path, pid, "")).exists()
}

/// `/proc/<pid>/<file>` written into `buf`, without allocating.
fn fmt_path<'a>(buf: &'a mut [u8; 40], pid: i32, file: &str) -> &'a str {
    use std::io::Write;
    let mut c = std::io::Cursor::new(&mut buf[..]);
    let _ = write!(c, "/proc/{pid}/{file}");
    let n = c.position() as usize;
    std::str::from_utf8(&buf[..n]).unwrap_or("/proc/self/")
}

/// MemAvailable from /proc/meminfo, in bytes.
pub fn available_bytes() -> std::io::Result<u64> {
    let text = crate::files::read_to_string("/proc/meminfo")?;
    parse_mem_available(&text)
        .ok_or_else(|| std::io::Error::other("no MemAvailable line in /proc/meminfo"))
}

fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_grows_when_pages_are_touched() {
        let before = rss_bytes().unwrap();
        let mut v: Vec<u8> = Vec::with_capacity(64 << 20);
        v.resize(64 << 20, 1);
        let after = rss_bytes().unwrap();
        std::hint::black_box(&v);
        assert!(
            after >= before + (32 << 20),
            "before {before}, after {after}"
        );
    }

    #[test]
    fn the_high_water_mark_holds_a_peak_given_back_since() {
        // Each read after the figure it is held against (other tests' threads allocate
        // meanwhile, which can only raise the mark). The kernel keeps each thread's
        // resident count apart for a while (its split counters) and folds it in later:
        // two reads of the same moment may differ by that, 144 KiB seen under the whole
        // suite, so each comparison allows 1 MiB.
        const SLACK: u64 = 1 << 20;
        let rss = rss_bytes().unwrap();
        let before = vm_hwm_bytes().unwrap();
        assert!(
            before + SLACK >= rss,
            "VmHWM {before} below a resident set read earlier, {rss}"
        );
        let mut v: Vec<u8> = Vec::with_capacity(96 << 20);
        v.resize(96 << 20, 1);
        std::hint::black_box(&v);
        let peak = rss_bytes().unwrap();
        // Given back (a block that large is mmap'd and unmapped at the free), and the
        // mark still holds it.
        drop(v);
        let hwm = vm_hwm_bytes().unwrap();
        assert!(
            hwm + SLACK >= peak,
            "VmHWM {hwm} below a resident set read earlier, {peak}"
        );
        assert!(hwm >= before);
    }

    #[test]
    fn a_sample_of_this_process_agrees_with_its_own_statm() {
        let pid = std::process::id() as i32;
        let mut buf = [0u8; 4096];
        let x = sample_of(pid, 1.0, &mut buf, true).unwrap().unwrap();
        let y = sample_of(pid, 2.0, &mut buf, false).unwrap().unwrap();
        let own = rss_bytes().unwrap();
        // Three readers of the same memory a moment apart: within 8 MiB (other tests'
        // threads allocate meanwhile).
        for r in [x.rss_bytes, y.rss_bytes] {
            assert!(r.abs_diff(own) < 8 << 20, "{r} vs {own}");
        }
        assert!(x.anon_huge_bytes.is_some() && x.pss_bytes.is_some());
        assert_eq!((y.anon_huge_bytes, y.t_ms), (None, 2.0));
        // No such process: it reads as gone, not as an error.
        assert_eq!(sample_of(i32::MAX, 0.0, &mut buf, true), Ok(None));
        assert_eq!(sample_of(i32::MAX, 0.0, &mut buf, false), Ok(None));
    }

    #[test]
    fn meminfo_parses() {
        let text = "MemTotal: 100 kB\nMemFree: 10 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(parse_mem_available(text), Some(2048 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
        assert!(available_bytes().unwrap() > 0);
    }
}
