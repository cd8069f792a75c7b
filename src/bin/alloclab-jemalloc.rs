//! Worker under jemalloc (tikv-jemallocator).
use alloclab::{envinfo::AllocatorInfo, spec::Allocator, CountingAlloc};

#[global_allocator]
static GLOBAL: CountingAlloc<tikv_jemallocator::Jemalloc> =
    CountingAlloc(tikv_jemallocator::Jemalloc);

fn main() -> std::process::ExitCode {
    let version = tikv_jemalloc_ctl::version::read()
        .map(|v| {
            format!(
                "jemalloc {}",
                v.trim_matches(|c: char| c == '\0' || c.is_whitespace())
            )
        })
        .unwrap_or_else(|e| format!("jemalloc (version unreadable: {e})"));
    let info = AllocatorInfo {
        version,
        crates: format!(
            "tikv-jemallocator {}, tikv-jemalloc-sys {}",
            env!("ALLOCLAB_JEMALLOCATOR_VERSION"),
            env!("ALLOCLAB_JEMALLOC_SYS_VERSION")
        ),
        read_knob,
        stats,
    };
    alloclab::worker::main(Allocator::Jemalloc, info)
}

/// A knob's effective value from jemalloc's `opt.*` mallctls.
fn read_knob(name: &str) -> Result<String, String> {
    use tikv_jemalloc_ctl::raw;
    let key = format!("opt.{name}\0");
    let key = key.as_bytes();
    // SAFETY: each `opt.*` is read with the C type jemalloc declares for it
    // (ssize_t, size_t, unsigned, bool, const char *).
    let value = unsafe {
        match name {
            "dirty_decay_ms" | "muzzy_decay_ms" => raw::read::<isize>(key).map(|v| v.to_string()),
            "oversize_threshold" => raw::read::<usize>(key).map(|v| v.to_string()),
            "narenas" => raw::read::<u32>(key).map(|v| v.to_string()),
            "background_thread" | "retain" => raw::read::<bool>(key).map(|v| v.to_string()),
            "thp" => raw::read_str(key).map(|v| {
                String::from_utf8_lossy(v)
                    .trim_end_matches('\0')
                    .to_string()
            }),
            _ => return Err(format!("no read-back for jemalloc knob {name}")),
        }
    };
    value.map_err(|e| format!("mallctl opt.{name}: {e}"))
}

/// jemalloc's `stats.*` after advancing its epoch, in bytes — where jemalloc was built
/// with statistics.
fn stats() -> alloclab::envinfo::AllocatorStats {
    use tikv_jemalloc_ctl::raw;
    // SAFETY: config.stats is a bool, epoch a u64, stats.* are size_t.
    unsafe {
        if !raw::read::<bool>(b"config.stats\0").map_err(|e| e.to_string())? {
            return Err("this jemalloc (tikv-jemalloc-sys without its `stats` feature) was built without statistics".into());
        }
        raw::update(b"epoch\0", 1u64).map_err(|e| format!("epoch: {e}"))?;
        let mut out = Vec::new();
        for (name, key) in [
            ("allocated", &b"stats.allocated\0"[..]),
            ("active", b"stats.active\0"),
            ("resident", b"stats.resident\0"),
            ("mapped", b"stats.mapped\0"),
            ("retained", b"stats.retained\0"),
        ] {
            out.push((
                name,
                raw::read::<usize>(key).map_err(|e| format!("{name}: {e}"))? as u64,
            ));
        }
        Ok(out)
    }
}
