//! Reads [`Conditions`] around a measured phase: a [`Snapshot`] before and after, from
//! /proc files read into stack buffers and sched_getcpu, so that reading allocates
//! nothing and leaves the allocator's heap as the workload left it.

use crate::model::conditions::Conditions;
use std::io::Read;

/// The cumulative figures at one moment; each a value or why it has none.
#[derive(Clone, Debug)]
pub struct Snapshot {
    cpu: Result<u32, String>,
    migrations: Result<u64, String>,
    run_delay_ns: Result<u64, String>,
    steal_ticks: Result<u64, String>,
    pressure_us: Result<u64, String>,
}

/// Reads up to `buf.len()` bytes of `path` as text.
fn read_into<'a>(path: &str, buf: &'a mut [u8]) -> Result<&'a str, String> {
    let mut f = crate::files::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(format!("{path}: {e}")),
        }
    }
    std::str::from_utf8(&buf[..n]).map_err(|e| format!("{path}: {e}"))
}

/// `se.nr_migrations` of /proc/thread-self/sched.
fn parse_migrations(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.trim_start().starts_with("se.nr_migrations"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
}

/// The run delay of /proc/thread-self/schedstat ("run_ns delay_ns slices"). A thread
/// that is reading it has run, so a run time of 0 means the kernel keeps no scheduler
/// statistics (it then prints zeros): unread, not 0.
fn parse_schedstat(text: &str) -> Result<u64, String> {
    let mut f = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    match (f.next().flatten(), f.next().flatten()) {
        (Some(0), _) => {
            Err("reads a run time of 0: this kernel keeps no scheduler statistics".into())
        }
        (Some(_), Some(delay)) => Ok(delay),
        _ => Err("has no run delay".into()),
    }
}

/// The steal field (8th number) of /proc/stat's `cpu ` line.
fn parse_steal(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    line.split_whitespace().nth(8)?.parse().ok()
}

/// `some ... total=N` of /proc/pressure/cpu.
fn parse_pressure(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// A field of /proc/self/smaps_rollup, in bytes.
fn parse_rollup(text: &str, field: &str) -> Option<u64> {
    let line = text
        .lines()
        .find(|l| l.split(':').next().is_some_and(|name| name.trim() == field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

impl Snapshot {
    /// Reads every figure now.
    pub fn now() -> Self {
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() };
        let mut buf = [0u8; 8192];
        let migrations = read_into("/proc/thread-self/sched", &mut buf).and_then(|t| {
            parse_migrations(t).ok_or_else(|| {
                "/proc/thread-self/sched has no se.nr_migrations (a kernel without CONFIG_SCHED_DEBUG)".to_string()
            })
        });
        let run_delay_ns = read_into("/proc/thread-self/schedstat", &mut buf).and_then(|t| {
            parse_schedstat(t).map_err(|e| format!("/proc/thread-self/schedstat {e}"))
        });
        let steal_ticks = read_into("/proc/stat", &mut buf[..1024]).and_then(|t| {
            parse_steal(t).ok_or_else(|| "/proc/stat's cpu line has no steal field".to_string())
        });
        let pressure_us = read_into("/proc/pressure/cpu", &mut buf).and_then(|t| {
            parse_pressure(t)
                .ok_or_else(|| "/proc/pressure/cpu has no 'some total' (no PSI)".to_string())
        });
        Snapshot {
            cpu: if cpu >= 0 {
                Ok(cpu as u32)
            } else {
                Err(format!("sched_getcpu: {}", std::io::Error::last_os_error()))
            },
            migrations,
            run_delay_ns,
            steal_ticks,
            pressure_us,
        }
    }

    /// The conditions from this snapshot to `after`, with the process's anonymous and
    /// huge-page memory read now.
    pub fn until(&self, after: &Snapshot) -> Conditions {
        let mut c = Conditions::default();
        let mut why = |name: &str, e: &String| {
            c.unavailable.insert(name.to_string(), e.clone());
        };
        fn diff(a: &Result<u64, String>, b: &Result<u64, String>) -> Result<u64, String> {
            Ok(b.as_ref()
                .map_err(Clone::clone)?
                .saturating_sub(*a.as_ref().map_err(Clone::clone)?))
        }
        let cpu_start = self.cpu.clone().map_err(|e| why("cpu", &e)).ok();
        let cpu_end = after.cpu.clone().map_err(|e| why("cpu", &e)).ok();
        let migrations = diff(&self.migrations, &after.migrations)
            .map_err(|e| why("migrations", &e))
            .ok();
        let run_delay_ns = diff(&self.run_delay_ns, &after.run_delay_ns)
            .map_err(|e| why("run_delay_ns", &e))
            .ok();
        // SAFETY: sysconf has no memory-safety preconditions.
        let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let steal_ns = diff(&self.steal_ticks, &after.steal_ticks)
            .and_then(|t| {
                if tick > 0 {
                    Ok(t * (1_000_000_000 / tick as u64))
                } else {
                    Err("sysconf(_SC_CLK_TCK) gave no clock tick".to_string())
                }
            })
            .map_err(|e| why("steal_ns", &e))
            .ok();
        let cpu_pressure_us = diff(&self.pressure_us, &after.pressure_us)
            .map_err(|e| why("cpu_pressure_us", &e))
            .ok();
        let mut buf = [0u8; 4096];
        let rollup = read_into("/proc/self/smaps_rollup", &mut buf);
        let field = |name: &str| match &rollup {
            Ok(t) => parse_rollup(t, name)
                .ok_or_else(|| format!("/proc/self/smaps_rollup has no {name} line")),
            Err(e) => Err(e.clone()),
        };
        let anon_bytes = field("Anonymous").map_err(|e| why("anon_bytes", &e)).ok();
        let anon_huge_bytes = field("AnonHugePages")
            .map_err(|e| why("anon_huge_bytes", &e))
            .ok();
        Conditions {
            pinned: None,
            cpu_start,
            cpu_end,
            migrations,
            run_delay_ns,
            steal_ns,
            cpu_pressure_us,
            anon_bytes,
            anon_huge_bytes,
            unavailable: c.unavailable,
        }
    }
}

/// The CPUs this thread may run on (sched_getaffinity), in order.
pub fn allowed_cpus() -> std::io::Result<Vec<u32>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sched_getaffinity writes at most the size it is given into `set`.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as u32)
        // SAFETY: the index is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) })
        .collect())
}

/// The CPUs as a person writes them: "0-3,6".
pub fn cpu_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Whether `cpu` is one this process may run on; Err names the ones it may.
pub fn check_cpu(cpu: u32) -> Result<(), String> {
    let allowed = allowed_cpus().map_err(|e| format!("sched_getaffinity: {e}"))?;
    if allowed.contains(&cpu) {
        Ok(())
    } else {
        Err(format!(
            "CPU {cpu} is not one this process may run on; give one of {}",
            cpu_list(&allowed)
        ))
    }
}

/// Keeps every thread of this process on `cpu` — the calling one and those already
/// running (an allocator's own, started before main: jemalloc's background thread) — and
/// so the threads they start.
pub fn pin_to(cpu: u32) -> Result<(), String> {
    check_cpu(cpu)?;
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the index is below CPU_SETSIZE (check_cpu found it in the allowed set).
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    let pin = |tid: libc::pid_t| {
        // SAFETY: sched_setaffinity reads the size it is given from `set`.
        let r =
            unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        (r == 0)
            .then_some(())
            .ok_or_else(std::io::Error::last_os_error)
    };
    pin(0).map_err(|e| format!("sched_setaffinity: {e}"))?;
    let tasks =
        std::fs::read_dir("/proc/self/task").map_err(|e| format!("/proc/self/task: {e}"))?;
    for tid in tasks.filter_map(|t| t.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok()) {
        match pin(tid) {
            // A thread that has ended since the listing has nothing left to pin.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(e) => return Err(format!("sched_setaffinity of thread {tid}: {e}")),
            Ok(()) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_file_is_parsed_as_the_kernel_writes_it() {
        let sched = "bash (1, #threads: 1)\n---------\nse.exec_start    :  52286299.193897\nse.nr_migrations                             :                    7\nnr_switches : 3\n";
        assert_eq!(parse_migrations(sched), Some(7));
        assert_eq!(parse_schedstat("173813 5739 2\n"), Ok(5739));
        assert!(parse_schedstat("0 0 0\n")
            .unwrap_err()
            .contains("no scheduler statistics"));
        let stat =
            "cpu  4747119 211 1316686 4325129 23416 0 6072 2149 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(parse_steal(stat), Some(2149));
        let psi = "some avg10=0.00 avg60=0.24 avg300=3.56 total=2805845226\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_pressure(psi), Some(2_805_845_226));
        let rollup = "Rss:                1728 kB\nAnonymous:           112 kB\nAnonHugePages:      2048 kB\n";
        assert_eq!(parse_rollup(rollup, "Anonymous"), Some(112 * 1024));
        assert_eq!(parse_rollup(rollup, "AnonHugePages"), Some(2048 * 1024));
        assert_eq!(parse_rollup(rollup, "Anon"), None);
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
    }

    /// The figures agree with an independent reading: a thread that sleeps moves its
    /// run delay by nothing it did not wait for, and the migrations it reads equal the
    /// kernel's own file read after.
    #[test]
    fn a_snapshot_reads_this_thread_and_the_difference_is_never_negative() {
        let before = Snapshot::now();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        let after = Snapshot::now();
        let c = before.until(&after);
        // SAFETY: sysconf has no memory-safety preconditions.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) } as u32;
        for cpu in [c.cpu_start, c.cpu_end] {
            assert!(cpu.expect("sched_getcpu works on Linux") < cpus, "{c:?}");
        }
        // Every figure is a value or has a reason, never both nor neither.
        for (name, has) in [
            ("migrations", c.migrations.is_some()),
            ("run_delay_ns", c.run_delay_ns.is_some()),
            ("steal_ns", c.steal_ns.is_some()),
            ("cpu_pressure_us", c.cpu_pressure_us.is_some()),
            ("anon_bytes", c.anon_bytes.is_some()),
        ] {
            assert_ne!(has, c.unavailable.contains_key(name), "{name}: {c:?}");
        }
        if let Some(anon) = c.anon_bytes {
            assert!(anon > 0, "a running test has anonymous memory");
            assert!(c.anon_huge_bytes.unwrap_or(0) <= anon);
        }
        if let (Ok(m), Some(d)) = (&after.migrations, c.migrations) {
            let mut buf = [0u8; 8192];
            let now = parse_migrations(read_into("/proc/thread-self/sched", &mut buf).unwrap());
            assert!(now.unwrap() >= *m && d <= *m);
        }
    }
}
