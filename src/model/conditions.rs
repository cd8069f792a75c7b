//! What could move one worker process's time against another's, read around its
//! measured phase: the CPU it ran on and how often it moved, how long it waited for a
//! CPU while runnable, the machine's stolen time and CPU pressure, and how much of its
//! anonymous memory sat in huge pages. `alloclab calibrate --noise` relates these to the
//! processes' times ([`crate::analysis::causes`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One process's conditions over its measured phase; None where a source could not be
/// read (`unavailable` says why), never a stand-in 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Conditions {
    /// The CPU the run was asked to stay on (`--cpu`); None where the kernel placed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<u32>,
    /// The CPU the main thread was on when the measured phase began (sched_getcpu).
    pub cpu_start: Option<u32>,
    /// The CPU the main thread was on when it ended.
    pub cpu_end: Option<u32>,
    /// Times the main thread moved to another CPU during the phase
    /// (/proc/thread-self/sched `se.nr_migrations`; kernels with CONFIG_SCHED_DEBUG).
    pub migrations: Option<u64>,
    /// Time the main thread waited on a run queue while runnable, in ns
    /// (/proc/thread-self/schedstat, second field): another task had its CPU.
    pub run_delay_ns: Option<u64>,
    /// Time the hypervisor gave this machine's CPUs to others, every CPU together, in ns
    /// (/proc/stat `steal`, in steps of one clock tick: 10 ms at USER_HZ 100).
    pub steal_ns: Option<u64>,
    /// Time some runnable task on the machine waited for a CPU, in µs (/proc/pressure/cpu
    /// `some total`): the machine's CPU pressure during the phase.
    pub cpu_pressure_us: Option<u64>,
    /// Anonymous memory of the process at the end of the phase, in bytes
    /// (/proc/self/smaps_rollup `Anonymous`).
    pub anon_bytes: Option<u64>,
    /// The part of it in transparent huge pages, in bytes (`AnonHugePages`).
    pub anon_huge_bytes: Option<u64>,
    /// Figure → why it has no value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable: BTreeMap<String, String>,
}

impl Conditions {
    /// Whether the main thread ended on the CPU it began on, with no migration between.
    pub fn stayed(&self) -> Option<bool> {
        Some(self.cpu_start? == self.cpu_end? && self.migrations? == 0)
    }

    /// AnonHugePages over the anonymous memory (0 to 1).
    pub fn huge_page_coverage(&self) -> Option<f64> {
        let (anon, huge) = (self.anon_bytes?, self.anon_huge_bytes?);
        (anon > 0).then(|| huge as f64 / anon as f64)
    }
}
