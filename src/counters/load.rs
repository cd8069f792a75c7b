//! How busy the machine is: the load average, the processes running now and the CPU
//! frequency governor, read before and after a run set so that a noisy machine is said
//! to be noisy.

use serde::Serialize;

/// One look at the machine; None where a figure cannot be read here.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Load {
    /// 1-minute load average (/proc/loadavg).
    pub loadavg_1m: Option<f64>,
    /// Runnable processes other than this one (/proc/stat procs_running − 1).
    pub others_running: Option<u64>,
    /// cpu0's frequency governor, where cpufreq is exposed (not in most VMs).
    pub governor: Option<String>,
}

impl Load {
    pub fn now() -> Load {
        let loadavg_1m = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse().ok());
        let others_running = std::fs::read_to_string("/proc/stat").ok().and_then(|t| {
            let n: u64 = t
                .lines()
                .find_map(|l| l.strip_prefix("procs_running "))?
                .trim()
                .parse()
                .ok()?;
            Some(n.saturating_sub(1))
        });
        let governor =
            std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
                .ok()
                .map(|g| g.trim().to_string());
        Load {
            loadavg_1m,
            others_running,
            governor,
        }
    }
}
