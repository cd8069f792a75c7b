//! The machine and software a run happened on, as plain data (captured by
//! [`crate::counters::envinfo`]).

use serde::{Deserialize, Serialize};

/// How the binaries were compiled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Codegen {
    pub target: String,
    pub target_cpu: String,
    pub target_features: String,
    pub profile: String,
}

impl Codegen {
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
    pub allocator_version: String,
    pub allocator_crates: String,
    pub glibc_version: String,
    pub kernel: String,
    pub cpu_model: String,
    /// None where the count cannot be read.
    pub cpus_online: Option<u64>,
    /// /sys/kernel/mm/transparent_hugepage/enabled, the selected mode.
    pub thp_enabled: String,
    /// /sys/kernel/mm/transparent_hugepage/defrag, the selected mode.
    pub thp_defrag: String,
    /// None where the page size cannot be read.
    pub page_size: Option<u64>,
    pub codegen: Codegen,
    pub commit: String,
    pub command_line: Vec<String>,
}

/// How busy the machine is (read by [`crate::counters::load`]): the load average, the
/// processes running now and the CPU frequency governor.
/// One look at the machine; None where a figure cannot be read here.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Load {
    /// 1-minute load average (/proc/loadavg).
    pub loadavg_1m: Option<f64>,
    /// Runnable processes other than this one (/proc/stat procs_running − 1).
    pub others_running: Option<u64>,
    /// cpu0's frequency governor, where cpufreq is exposed (not in most VMs).
    pub governor: Option<String>,
}
