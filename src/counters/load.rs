//! How busy the machine is: the load average, the processes running now and the CPU
//! frequency governor, read before and after a run set so that a noisy machine is said
//! to be noisy.

pub use crate::model::environment::Load;

impl Load {
    pub fn now() -> Load {
        let loadavg_1m = crate::files::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse().ok());
        let others_running = crate::files::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| {
                let n: u64 = t
                    .lines()
                    .find_map(|l| l.strip_prefix("procs_running "))?
                    .trim()
                    .parse()
                    .ok()?;
                Some(n.saturating_sub(1))
            });
        let governor =
            crate::files::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
                .ok()
                .map(|g| g.trim().to_string());
        Load {
            loadavg_1m,
            others_running,
            governor,
        }
    }
}
