//! How long a run measures: the budget (one default for full runs, one for short
//! probes), its worker arguments, and the command-line flags that set it.

/// How long to measure.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Budget {
    /// Warm-up runs at least this long…
    pub warmup_time_ns: u64,
    /// …and at least this many iterations.
    pub warmup_iters: u64,
    /// The measured phase runs until both this time…
    pub min_time_ns: u64,
    /// …and this many iterations are reached,
    pub min_iters: u64,
    /// or this many iterations, whichever comes first.
    pub max_iters: u64,
    /// After the measured phase, the worker frees its buffers (the other threads end, the
    /// main thread sleeps) and idles this long, its memory sampled meanwhile: what the
    /// allocator gives back after the burst, and when. 0 (the default): it exits at once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub idle_ns: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Seconds one element costs per iteration, as a rough guide for progress estimates only
/// (the founding case at 1e6 elements: 0.4–0.6 ms in place, 5–13 ms when it faults; the
/// size sweep at 2^27 elements: ≈ 4 ns per element, measured with `make run-all` when the
/// sweep went that far).
const GUIDE_S_PER_ELEMENT: f64 = 4e-9;
/// Seconds a run costs besides its phases: the worker's start, calibration, input set-up
/// and exit, and the driver saving its record and histogram files (fsync'd). Measured:
/// `make run-all`'s 1,140 processes (before the sweep ended at 2^24) took ≈ 0.25 s each beyond their budgets here.
const GUIDE_PROCESS_S: f64 = 0.25;

impl Budget {
    /// A rough expectation of one run's wall time, for weighting progress estimates (never
    /// reported as a measurement): process overhead, warm-up and measured phase, each at
    /// least its time budget and at least its iterations at a guessed cost per element;
    /// threads beyond `cpus` share them.
    pub fn expected_seconds(&self, size: u64, threads: u32, cpus: usize) -> f64 {
        let share = (f64::from(threads) / cpus.max(1) as f64).max(1.0);
        let iter = size as f64 * GUIDE_S_PER_ELEMENT * share;
        let warm = (self.warmup_time_ns as f64 / 1e9).max(self.warmup_iters as f64 * iter);
        let measured = (self.min_time_ns as f64 / 1e9)
            .max(self.min_iters as f64 * iter)
            .min((self.max_iters as f64 * iter).max(self.min_time_ns as f64 / 1e9));
        GUIDE_PROCESS_S + iter + warm + measured
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            warmup_time_ns: 100_000_000,
            warmup_iters: 3,
            min_time_ns: 1_000_000_000,
            min_iters: 10,
            max_iters: 10_000_000,
            idle_ns: 0,
        }
    }
}

/// compare's per-process budget by default (its `--min-time` and `--warmup-time`).
pub const COMPARE_MIN_TIME_S: f64 = 0.02;
/// compare's per-process warm-up by default, in seconds (its `--warmup-time`).
pub const COMPARE_WARMUP_TIME_S: f64 = 0.01;

impl Budget {
    /// compare's default budget: what its processes measure unless told otherwise.
    pub fn compare() -> Self {
        Budget {
            warmup_time_ns: secs_to_ns(COMPARE_WARMUP_TIME_S),
            ..Budget::short(COMPARE_MIN_TIME_S)
        }
    }

    /// A short budget for commands that run many small probes (cliff, tune): at least
    /// `min_time_s` measured after 20 ms of warm-up.
    pub fn short(min_time_s: f64) -> Self {
        Budget {
            min_time_ns: secs_to_ns(min_time_s),
            warmup_time_ns: 20_000_000,
            ..Budget::default()
        }
    }

    /// Exactly `iters` measured iterations after `warmup_iters`, whatever they take (a
    /// traced run, whose every iteration is kept).
    pub fn exactly(warmup_iters: u64, iters: u64) -> Self {
        Budget {
            warmup_time_ns: 0,
            warmup_iters,
            min_time_ns: 0,
            min_iters: iters,
            max_iters: iters,
            idle_ns: 0,
        }
    }

    /// The budget of one bisection probe after an experiment's runs: each probe only has
    /// to tell which side of a threshold it is on. Two warm-up iterations at least: under
    /// glibc the first free of a large buffer slides its thresholds and the second
    /// iteration is the first to run under them (growing the heap once, for good).
    pub fn probe(max_iters: u64) -> Self {
        Budget {
            warmup_time_ns: 10_000_000,
            warmup_iters: 2,
            min_time_ns: 50_000_000,
            min_iters: 3,
            max_iters,
            idle_ns: 0,
        }
    }

    /// True when a loop that has run `iters` iterations over `elapsed_ns` may stop.
    #[inline(always)]
    pub fn measured_done(&self, iters: u64, elapsed_ns: u64) -> bool {
        iters >= self.max_iters || (iters >= self.min_iters && elapsed_ns >= self.min_time_ns)
    }

    /// True when a warm-up that has run `iters` iterations over `elapsed_ns` may stop: at least
    /// `warmup_iters` (one at least, `max_iters` at most) and `warmup_time_ns`, or `max_iters`.
    #[inline(always)]
    pub fn warmup_done(&self, iters: u64, elapsed_ns: u64) -> bool {
        iters >= self.max_iters.min(self.warmup_iters.max(1)) && elapsed_ns >= self.warmup_time_ns
            || iters >= self.max_iters
    }
}

/// A duration in seconds as a whole number of ns, rounded.
pub fn secs_to_ns(secs: f64) -> u64 {
    (secs.max(0.0) * 1e9).round() as u64
}

/// The measurement budget, shared by the worker and the driver's commands.
#[derive(Debug, Clone, clap::Args)]
pub struct BudgetArgs {
    /// Measure at least this many seconds per process…
    #[arg(long, default_value_t = COMPARE_MIN_TIME_S, value_parser = parse_seconds, allow_negative_numbers = true)]
    pub min_time: f64,
    /// …and at least this many iterations…
    #[arg(long, default_value_t = 10)]
    pub min_iters: u64,
    /// …but stop at this many iterations.
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_iters: u64,
    /// Warm up for at least this many seconds…
    #[arg(long, default_value_t = COMPARE_WARMUP_TIME_S, value_parser = parse_seconds, allow_negative_numbers = true)]
    pub warmup_time: f64,
    /// …and at least this many iterations.
    #[arg(long, default_value_t = 3)]
    pub warmup_iters: u64,
}

impl BudgetArgs {
    /// The budget these flags ask for (their seconds as whole ns).
    pub fn budget(&self) -> Budget {
        Budget {
            warmup_time_ns: secs_to_ns(self.warmup_time),
            warmup_iters: self.warmup_iters,
            min_time_ns: secs_to_ns(self.min_time),
            min_iters: self.min_iters,
            max_iters: self.max_iters,
            idle_ns: 0,
        }
    }
}

/// A timeout in seconds: more than 0 (a zero timeout would kill every run at once), at
/// most a day.
pub fn parse_timeout(s: &str) -> Result<f64, String> {
    match parse_seconds(s) {
        Ok(v) if v > 0.0 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a timeout: expected seconds above 0 and at most 86400, e.g. 300"
        )),
    }
}

/// Parses a duration in seconds: finite, not negative, at most a day (86,400 s).
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a duration in seconds: expected a number from 0 to 86400, e.g. 0.5"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_run_time_covers_the_budget_and_grows_with_size_and_threads() {
        let b = Budget::short(0.1);
        let small = b.expected_seconds(32, 1, 2);
        // A small run costs its budgets plus the process overhead.
        let floor = (b.warmup_time_ns + b.min_time_ns) as f64 / 1e9;
        let overhead = small - floor;
        assert!(overhead > 0.0 && overhead < 0.3, "{small}");
        // A run whose min_iters take longer than its time budget is weighted by them.
        let big = b.expected_seconds(1 << 27, 1, 2);
        assert!(big > 5.0 * small, "{big} vs {small}");
        assert!(b.expected_seconds(1 << 27, 4, 2) > big);
        assert_eq!(b.expected_seconds(1 << 27, 2, 2), big);
    }
}
