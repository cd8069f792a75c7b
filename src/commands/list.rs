//! `alloclab list`: the allocators (built in, with their versions and knobs, and the
//! allocator libraries installed here, as ready-to-paste specs), workloads and variants.

use crate::engine::preflight;
use crate::error::Result;
use crate::model::knobs::{defs, is_lab_knob, no_knobs_reason, KnobDef};
use crate::model::library;
use crate::model::spec::{valid_names, Allocator, Choice, Variant, Workload};
use std::fmt::Write as _;

/// What the worker binary says about its allocator (`--describe`), or why it cannot.
fn describe(a: Allocator) -> std::result::Result<String, String> {
    let dir = preflight::workers_dir().map_err(|e| e.to_string())?;
    let bin = dir.join(a.worker_binary());
    if !bin.is_file() {
        return Err(format!("{} not built (make build)", a.worker_binary()));
    }
    let out = std::process::Command::new(&bin)
        .arg("--describe")
        .output()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} --describe failed: {}",
            a.worker_binary(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{} --describe printed no JSON: {e}", a.worker_binary()))?;
    let version = v["version"].as_str().unwrap_or("?");
    Ok(match v["crates"].as_str().filter(|c| !c.is_empty()) {
        Some(c) => format!("{version} ({c})"),
        None => version.to_string(),
    })
}

pub fn run() -> Result<()> {
    let mut t = String::from("allocators (built in):\n");
    for &a in Allocator::ALL {
        let version = describe(a).unwrap_or_else(|why| format!("version unknown: {why}"));
        let _ = writeln!(t, "  {:<9} {version}", a.name());
        let (lab, own): (Vec<&KnobDef>, Vec<&KnobDef>) =
            defs(a).iter().partition(|d| is_lab_knob(d.name));
        let knobs: Vec<&str> = own.iter().map(|d| d.name).collect();
        let _ = match (knobs.is_empty(), no_knobs_reason(a)) {
            (false, _) => writeln!(t, "  {:<9} knobs: {}", "", knobs.join(", ")),
            (true, Some(why)) => writeln!(t, "  {:<9} no knobs: {why}", ""),
            (true, None) => writeln!(t, "  {:<9} no knobs", ""),
        };
        if !lab.is_empty() {
            let names: Vec<&str> = lab.iter().map(|d| d.name).collect();
            let _ = writeln!(
                t,
                "  {:<9} the lab's own: {} (acts of the worker, not settings of the allocator)",
                "",
                names.join(", ")
            );
        }
    }
    let installed = library::installed();
    if installed.is_empty() {
        let _ = writeln!(
            t,
            "\ninstalled allocator libraries: none found in {}\n  (e.g. `apt-get install libtcmalloc-minimal4` brings gperftools' tcmalloc; any library works as name=/path/to/lib.so)",
            library::search_dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    } else {
        let _ = writeln!(
            t,
            "\ninstalled allocator libraries (specs for --allocators, run by the system worker with the library preloaded; no knobs):"
        );
        for l in &installed {
            let real = std::fs::canonicalize(&l.path)
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let _ = writeln!(t, "  {l}    ({real})");
        }
    }
    let _ = write!(
        t,
        "\nworkloads:  {}\nvariants:   {}\n",
        valid_names::<Workload>(),
        valid_names::<Variant>()
    );
    super::print_out(&t)
}
