//! What observing costs: the harness's overhead recorded with every run, and each
//! observer's cost as `alloclab calibrate` measures it.

/// The cost of the observer, measured on this machine at start-up.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Overhead {
    /// Median of back-to-back clock-read pairs: the floor of every recorded latency.
    pub timer_overhead_ns: f64,
    /// Smallest back-to-back clock-read pair seen (the clock's resolution in practice).
    pub timer_min_ns: u64,
    /// Mean cost per sample of the whole harness around an empty iteration: two clock
    /// reads, the histogram record and the stop check.
    pub harness_overhead_ns_per_sample: f64,
}

/// What each part of the observer costs, measured in this process.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ObserverCosts {
    /// Median of back-to-back `Instant::now()` pairs.
    pub clock_pair_ns: f64,
    /// One histogram record, averaged over a million records of spread-out values.
    pub record_ns: f64,
    /// The whole measured loop around an empty iteration, per sample.
    pub harness_ns_per_sample: f64,
    /// Enabling and then disabling the perf counter group once (null if perf is unusable).
    pub perf_enable_disable_ns: Option<f64>,
    /// Reading all perf counters once.
    pub perf_read_ns: Option<f64>,
    /// One phase-marker syscall of the ptrace method, untraced.
    pub ptrace_marker_ns: f64,
    /// Why perf costs are null.
    pub perf_unavailable: Option<String>,
}
