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
    let mut f = std::fs::File::open("/proc/self/statm")?;
    let n = f.read(&mut buf)?;
    let text = std::str::from_utf8(&buf[..n]).map_err(std::io::Error::other)?;
    let resident: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("unexpected /proc/self/statm format"))?;
    Ok(resident * page_size()?)
}

/// MemAvailable from /proc/meminfo, in bytes.
pub fn available_bytes() -> std::io::Result<u64> {
    let text = std::fs::read_to_string("/proc/meminfo")?;
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
    fn meminfo_parses() {
        let text = "MemTotal: 100 kB\nMemFree: 10 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(parse_mem_available(text), Some(2048 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
        assert!(available_bytes().unwrap() > 0);
    }
}
