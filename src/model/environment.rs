//! The machine and software a run happened on, as plain data (captured by
//! [`crate::counters::envinfo`]).

use serde::{Deserialize, Serialize};

/// How the binaries were compiled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Codegen {
    /// The target triple the binaries were built for (e.g. `x86_64-unknown-linux-gnu`).
    pub target: String,
    /// The `-C target-cpu` they were built with, or "default".
    pub target_cpu: String,
    /// The target features enabled at build time, comma-separated (`sse2,sse4.2,avx2,…`).
    pub target_features: String,
    /// "release" or "debug" (whether debug assertions were on).
    pub profile: String,
}

impl Codegen {
    /// How this binary was compiled, from what the build script recorded.
    pub fn of_this_build() -> Self {
        Codegen {
            target: env!("ALLOCLAB_TARGET").to_string(),
            target_cpu: env!("ALLOCLAB_TARGET_CPU").to_string(),
            target_features: env!("ALLOCLAB_TARGET_FEATURES").to_string(),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .to_string(),
        }
    }

    /// The SIMD features that matter for the kernels, for one-line summaries.
    pub fn simd_summary(&self) -> String {
        let wanted = ["sse4.2", "avx", "avx2", "fma", "avx512f", "neon", "sve"];
        let have: Vec<&str> = self
            .target_features
            .split(',')
            .filter(|f| wanted.contains(f))
            .collect();
        if have.is_empty() {
            "baseline".into()
        } else {
            have.join("+")
        }
    }
}

/// The machine and software a run happened on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// The allocator library's own version (glibc's, jemalloc's, …); a note instead where the
    /// driver captured the environment (it runs no workload of its own).
    pub allocator_version: String,
    /// The Rust crates that bring the allocator in, with their versions (empty for system).
    pub allocator_crates: String,
    /// The version of the glibc the process runs with, or "unknown".
    pub glibc_version: String,
    /// The kernel, from uname: system, release and machine ("Linux 6.1.0-18-amd64 x86_64").
    pub kernel: String,
    /// The CPU's model name from /proc/cpuinfo, or "unknown".
    pub cpu_model: String,
    /// None where the count cannot be read.
    pub cpus_online: Option<u64>,
    /// /sys/kernel/mm/transparent_hugepage/enabled, the selected mode.
    pub thp_enabled: String,
    /// /sys/kernel/mm/transparent_hugepage/defrag, the selected mode.
    pub thp_defrag: String,
    /// None where the page size cannot be read.
    pub page_size: Option<u64>,
    /// How the binaries were compiled.
    pub codegen: Codegen,
    /// The git commit the binaries were built from ("-dirty" appended when the work tree had
    /// uncommitted changes; "unknown" outside git).
    pub commit: String,
    /// The process's command line, argv[0] first (bytes that are not UTF-8 shown as U+FFFD).
    pub command_line: Vec<String>,
}

/// How busy the machine is (read by [`crate::counters::load`]): the load average, the
/// processes running now and the CPU frequency governor, in one look at the machine;
/// None where a figure cannot be read here.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Load {
    /// 1-minute load average (/proc/loadavg).
    pub loadavg_1m: Option<f64>,
    /// Runnable processes other than this one (/proc/stat procs_running − 1).
    pub others_running: Option<u64>,
    /// cpu0's frequency governor, where cpufreq is exposed (not in most VMs).
    pub governor: Option<String>,
}
