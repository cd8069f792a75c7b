//! Records, for every result, what the binaries were built from and for: the codegen
//! target (triple, CPU, enabled target features), the git commit, and the versions of the
//! allocator crates from Cargo.lock.

use std::process::Command;

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let flags: Vec<&str> = flags.split('\x1f').collect();
    let mut cpu = String::from("default");
    for (i, f) in flags.iter().enumerate() {
        if let Some(v) = f.strip_prefix("target-cpu=") {
            cpu = v.to_string();
        } else if let Some(v) = f.strip_prefix("-Ctarget-cpu=") {
            cpu = v.to_string();
        } else if *f == "-C" {
            if let Some(v) = flags.get(i + 1).and_then(|n| n.strip_prefix("target-cpu=")) {
                cpu = v.to_string();
            }
        }
    }
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    println!("cargo:rustc-env=ALLOCLAB_TARGET={target}");
    println!("cargo:rustc-env=ALLOCLAB_TARGET_CPU={cpu}");
    println!("cargo:rustc-env=ALLOCLAB_TARGET_FEATURES={features}");

    // --no-optional-locks: `git status` must not refresh and rewrite .git/index (as it
    // does on a fresh clone), or the index it watches below would change under it and
    // the next build would run this script, and rebuild the crate, again.
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("--no-optional-locks")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = match git(&["rev-parse", "HEAD"]) {
        Some(head) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{head}-dirty")
            } else {
                head
            }
        }
        None => "unknown".to_string(),
    };
    println!("cargo:rustc-env=ALLOCLAB_COMMIT={commit}");
    for p in [".git/HEAD", ".git/index", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={p}");
    }
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");

    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    for (krate, var) in [
        ("tikv-jemallocator", "ALLOCLAB_JEMALLOCATOR_VERSION"),
        ("tikv-jemalloc-sys", "ALLOCLAB_JEMALLOC_SYS_VERSION"),
        ("mimalloc", "ALLOCLAB_MIMALLOC_CRATE_VERSION"),
        ("libmimalloc-sys", "ALLOCLAB_LIBMIMALLOC_SYS_VERSION"),
        ("tcmalloc-better", "ALLOCLAB_TCMALLOC_BETTER_VERSION"),
        ("libtcmalloc-sys", "ALLOCLAB_LIBTCMALLOC_SYS_VERSION"),
        ("snmalloc-rs", "ALLOCLAB_SNMALLOC_RS_VERSION"),
        ("snmalloc-sys", "ALLOCLAB_SNMALLOC_SYS_VERSION"),
        ("rpmalloc", "ALLOCLAB_RPMALLOC_CRATE_VERSION"),
        ("rpmalloc-sys", "ALLOCLAB_RPMALLOC_SYS_VERSION"),
    ] {
        println!(
            "cargo:rustc-env={var}={}",
            lock_version(&lock, krate).unwrap_or("unknown")
        );
    }
}

fn lock_version<'a>(lock: &'a str, krate: &str) -> Option<&'a str> {
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == format!("name = \"{krate}\"") {
            let v = lines.next()?;
            return v.strip_prefix("version = \"")?.strip_suffix('"');
        }
    }
    None
}
