//! Worker under jemalloc (tikv-jemallocator).
use alloclab::{counters::envinfo::AllocatorInfo, model::spec::Allocator, CountingAlloc};

#[global_allocator]
static GLOBAL: CountingAlloc<tikv_jemallocator::Jemalloc> =
    CountingAlloc(tikv_jemallocator::Jemalloc);

fn main() -> std::process::ExitCode {
    let version = alloclab::counters::readback::jemalloc_version(tikv_jemalloc_sys::mallctl)
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
        release,
    };
    alloclab::worker::main(Allocator::Jemalloc, info)
}

/// A knob's effective value from jemalloc's `opt.*` mallctls.
fn read_knob(name: &str) -> Result<String, alloclab::counters::Unavailable> {
    alloclab::counters::readback::jemalloc_opt(tikv_jemalloc_sys::mallctl, name)
}

/// jemalloc's `arena.<MALLCTL_ARENAS_ALL>.purge`: every arena's dirty and muzzy pages
/// purged at once (what decay would do in time).
fn release() -> Result<String, String> {
    // SAFETY: the name is NUL-terminated; arena.<i>.purge takes and gives no value.
    let rc = unsafe {
        tikv_jemalloc_sys::mallctl(
            c"arena.4096.purge".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    if rc == 0 {
        Ok("mallctl(\"arena.4096.purge\") (every arena) succeeded".into())
    } else {
        Err(format!(
            "mallctl(\"arena.4096.purge\") failed with error {rc}"
        ))
    }
}

/// jemalloc's `stats.*` after advancing its epoch, in bytes — where jemalloc was built
/// with statistics.
fn stats() -> alloclab::counters::envinfo::AllocatorStats {
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
