//! Before a command runs under a preload, a probe checks that the preload really takes
//! over malloc and reads the allocator's version and knobs back from the library itself.
//!
//! The probe is this executable started with exactly the environment the command will get
//! (`LD_PRELOAD`, knob variables): it asks the dynamic linker where `malloc` now resolves
//! (`dlsym` + `dladdr`) and calls the preload library's read-back entry points. The
//! dynamic loader only *warns* when an `LD_PRELOAD` library cannot be loaded and runs the
//! program under glibc anyway, so without this check such a run would be silently wrong.

use crate::counters::readback::{defining_object, symbol};
use crate::counters::Unavailable;
pub use crate::model::library::same_file;
use serde::{Deserialize, Serialize};
use std::ffi::{c_char, c_int, CStr};
use std::path::{Path, PathBuf};

/// What the probe found, as it prints it (JSON) for the driver.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// The file that defines the `malloc` the process uses.
    pub malloc_from: Option<String>,
    /// What an alloclab preload library says it carries ("jemalloc", "mimalloc").
    pub preload_allocator: Option<String>,
    /// The allocator's own version, where it can be read.
    pub version: Option<String>,
    /// Each requested knob: its effective value, or why it cannot be read.
    pub knobs: Vec<(String, Result<String, Unavailable>)>,
}

/// Reads one knob back: its value, or why it cannot be read.
type ReadKnob = dyn Fn(&str) -> Result<String, Unavailable>;

/// Runs inside the probe process: `kind` is system, jemalloc, mimalloc or custom.
pub fn probe_here(kind: &str, knob_names: &[String]) -> ProbeReport {
    let mut report = ProbeReport {
        malloc_from: symbol("malloc").and_then(defining_object),
        ..Default::default()
    };
    if let Some(f) = symbol("alloclab_preload_allocator") {
        // SAFETY: the preload libraries export this as `extern "C" fn() -> *const c_char`
        // returning a static string.
        let f: extern "C" fn() -> *const c_char = unsafe { std::mem::transmute(f) };
        // SAFETY: a static NUL-terminated string.
        report.preload_allocator = Some(unsafe { CStr::from_ptr(f()) }.to_string_lossy().into());
    }
    let read: Box<ReadKnob> = match kind {
        "system" => {
            report.version = Some(format!(
                "glibc {}",
                crate::counters::envinfo::glibc_version()
            ));
            Box::new(crate::counters::envinfo::glibc_tunable)
        }
        "jemalloc" => match symbol("alloclab_preload_mallctl") {
            Some(p) => {
                // SAFETY: the jemalloc preload exports this with mallctl's signature.
                let mallctl: crate::counters::readback::Mallctl = unsafe { std::mem::transmute(p) };
                report.version = crate::counters::readback::jemalloc_version(mallctl).ok();
                Box::new(move |n| crate::counters::readback::jemalloc_opt(mallctl, n))
            }
            None => Box::new(|_| Err("the jemalloc preload library is not loaded".into())),
        },
        "mimalloc" => match (
            symbol("alloclab_preload_mi_option_get"),
            symbol("alloclab_preload_mi_version"),
        ) {
            (Some(get), Some(version)) => {
                // SAFETY: the mimalloc preload exports these with these signatures.
                let get: crate::counters::readback::MiOptionGet =
                    unsafe { std::mem::transmute(get) };
                // SAFETY: as above.
                let version: extern "C" fn() -> c_int = unsafe { std::mem::transmute(version) };
                report.version = Some(crate::counters::readback::mimalloc_version(version()));
                Box::new(move |n| crate::counters::readback::mimalloc_option(get, n))
            }
            _ => Box::new(|_| Err("the mimalloc preload library is not loaded".into())),
        },
        other => {
            report.version = match other.parse::<crate::model::spec::Allocator>() {
                Ok(a) => crate::counters::readback::bundled_version(a),
                // An installed library: its own version call, if it has a known one.
                Err(_) => report.malloc_from.as_deref().and_then(|f| {
                    crate::counters::readback::library_version(std::path::Path::new(f))
                }),
            };
            Box::new(|_| Err("knobs are only read back for system, jemalloc and mimalloc".into()))
        }
    };
    report.knobs = knob_names.iter().map(|n| (n.clone(), read(n))).collect();
    report
}

/// Runs the probe (this executable's hidden `probe-preload` command) with `env` as its
/// whole environment; returns its report, or its failure with what it printed.
pub fn run_probe(
    kind: &str,
    knob_names: &[String],
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Result<(ProbeReport, String), String> {
    let exe = std::env::current_exe().map_err(|e| format!("locating alloclab itself: {e}"))?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.arg("probe-preload").arg("--kind").arg(kind);
    for k in knob_names {
        cmd.arg("--knob").arg(k);
    }
    cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    let out = cmd
        .output()
        .map_err(|e| format!("starting the preload probe {}: {e}", exe.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if !out.status.success() {
        return Err(format!(
            "the preload probe failed ({}){}",
            out.status,
            if stderr.is_empty() {
                String::new()
            } else {
                format!(": {stderr}")
            }
        ));
    }
    let report: ProbeReport = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the preload probe's report does not parse: {e}"))?;
    Ok((report, stderr))
}

/// A path made absolute (the child may run in another directory).
pub fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}
