//! The environment a result was produced in: enough to reproduce it and to know when two
//! results are not comparable.

use crate::counters::Unavailable;
use std::ffi::CStr;

pub use crate::model::environment::{Codegen, Environment};

/// Which allocator a worker links, as recorded in its results, and how to read its
/// knobs back.
pub struct AllocatorInfo {
    /// The allocator library's own version (glibc's, jemalloc's or mimalloc's).
    pub version: String,
    /// The Rust crates that bring it in, with their versions (empty for system).
    pub crates: String,
    /// A knob's effective value as the allocator reports it, in the canonical form of
    /// [`crate::model::knobs`] (bytes, true/false), or why it cannot be read.
    pub read_knob: fn(&str) -> Result<String, Unavailable>,
    /// The allocator's own statistics (name → bytes), or why there are none.
    pub stats: fn() -> AllocatorStats,
    /// Asks the allocator to give its free memory back (the lab's `release_at_idle`):
    /// what was called and what it answered, or why there is no such call.
    pub release: fn() -> Result<String, String>,
}

/// glibc's `malloc_trim(0)`: every free page of every arena, not only the heap's top.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn glibc_release() -> Result<String, String> {
    // SAFETY: malloc_trim takes a pad and returns whether memory was released.
    let released = unsafe { libc::malloc_trim(0) };
    Ok(format!(
        "malloc_trim(0) returned {released} ({})",
        if released == 1 {
            "memory was given back"
        } else {
            "nothing to give back"
        }
    ))
}

/// No release call (an allocator without one, or glibc's absent).
pub fn no_release() -> Result<String, String> {
    Err("this allocator has no call that gives its free memory back".into())
}

/// Named byte counts from the allocator, or why it has none.
pub type AllocatorStats = Result<Vec<(&'static str, u64)>, String>;

/// glibc's `mallinfo2`: the main arena and mmap'd totals, in bytes.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn glibc_stats() -> AllocatorStats {
    // SAFETY: mallinfo2 takes nothing and returns a plain struct.
    let m = unsafe { libc::mallinfo2() };
    Ok(vec![
        ("arena", m.arena as u64),
        ("hblkhd", m.hblkhd as u64),
        ("uordblks", m.uordblks as u64),
        ("fordblks", m.fordblks as u64),
        ("keepcost", m.keepcost as u64),
    ])
}

/// Without glibc there is no `mallinfo2`.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn glibc_stats() -> AllocatorStats {
    Err("unsupported on this platform: mallinfo2 is glibc's".into())
}

/// This process's arguments as text (bytes that are not UTF-8 shown as U+FFFD: an
/// argument need not be UTF-8 on Linux).
pub fn command_line() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// A glibc malloc tunable as this glibc parsed it from the same `GLIBC_TUNABLES`: glibc
/// has no call that reads tunables back, so this asks the dynamic loader of this process
/// (`ld.so --list-tunables`, glibc 2.33 and later) in a child with the same environment.
pub fn glibc_tunable(name: &str) -> Result<String, Unavailable> {
    let maps = crate::files::read_to_string("/proc/self/maps")
        .map_err(|e| format!("/proc/self/maps: {e}"))?;
    let ld = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/ld-linux") || p.contains("/ld64.so"))
        .ok_or("no dynamic loader is mapped in this process")?;
    let out = std::process::Command::new(ld)
        .arg("--list-tunables")
        .output()
        .map_err(|e| format!("{ld} --list-tunables: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let key = format!("glibc.malloc.{name}:");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&key))
        .ok_or_else(|| format!("{ld} --list-tunables does not list glibc.malloc.{name}"))?;
    let value = line.trim_start()[key.len()..]
        .split_whitespace()
        .next()
        .unwrap_or("");
    let parsed = match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => value.parse().ok(),
    };
    parsed.map(|v| v.to_string()).ok_or_else(|| {
        Unavailable(format!(
            "unreadable value '{value}' for glibc.malloc.{name}"
        ))
    })
}

/// glibc's version, or why it is not known.
pub fn glibc_version() -> String {
    // SAFETY: gnu_get_libc_version returns a pointer to a static NUL-terminated string.
    let p = unsafe { libc::gnu_get_libc_version() };
    if p.is_null() {
        return "unknown".into();
    }
    // SAFETY: non-null, static, NUL-terminated (see above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn kernel() -> String {
    // SAFETY: all-zero is a valid utsname; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is valid and writable.
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let field = |f: &[libc::c_char]| {
        // SAFETY: uname NUL-terminates each field inside its array.
        unsafe { CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    )
}

fn cpu_model() -> String {
    crate::files::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The bracketed choice of a sysfs mode file, e.g. "always [madvise] never" → "madvise".
pub fn selected_mode(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(text[start + 1..end].to_string())
}

fn thp(file: &str) -> String {
    let path = format!("/sys/kernel/mm/transparent_hugepage/{file}");
    match crate::files::read_to_string(&path) {
        Ok(t) => selected_mode(&t).unwrap_or_else(|| t.trim().to_string()),
        Err(e) => format!("unavailable: {path}: {e}"),
    }
}

impl Environment {
    /// Reads the environment of this process.
    pub fn capture(allocator: &AllocatorInfo) -> Self {
        Environment {
            allocator_version: allocator.version.clone(),
            allocator_crates: allocator.crates.clone(),
            glibc_version: glibc_version(),
            kernel: kernel(),
            cpu_model: cpu_model(),
            cpus_online: std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u64),
            thp_enabled: thp("enabled"),
            thp_defrag: thp("defrag"),
            page_size: crate::counters::memory::page_size().ok(),
            codegen: Codegen::of_this_build(),
            commit: env!("ALLOCLAB_COMMIT").to_string(),
            command_line: command_line(),
        }
    }

    /// The machine as the driver sees it, where no worker recorded it (every run
    /// failed): the driver measures nothing, so it names no allocator.
    pub fn of_driver() -> Self {
        Environment::capture(&AllocatorInfo {
            version: "none: the driver runs no workload".into(),
            crates: String::new(),
            read_knob: |_| Err("not in this process".into()),
            stats: || Err("not in this process".into()),
            release: no_release,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_tunables_read_back_from_the_loader() {
        // Without GLIBC_TUNABLES the loader lists unset tunables as 0.
        if std::env::var_os("GLIBC_TUNABLES").is_none() {
            assert_eq!(glibc_tunable("top_pad").as_deref(), Ok("0"));
        }
        assert!(glibc_tunable("no_such_tunable").is_err());
    }

    #[test]
    fn selected_mode_reads_the_bracketed_choice() {
        assert_eq!(
            selected_mode("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            selected_mode("[always] madvise never").as_deref(),
            Some("always")
        );
        assert_eq!(selected_mode("never"), None);
    }

    #[test]
    fn environment_names_real_things() {
        let env = Environment::capture(&AllocatorInfo {
            version: "x".into(),
            crates: String::new(),
            read_knob: glibc_tunable,
            stats: glibc_stats,
            release: no_release,
        });
        assert!(env.glibc_version.starts_with('2'), "{}", env.glibc_version);
        assert!(env.kernel.starts_with("Linux"), "{}", env.kernel);
        assert!(!env.codegen.target.is_empty());
        assert!(env.page_size.unwrap() >= 4096);
    }
}
